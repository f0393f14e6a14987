//! Isolation anomalies, data-driven: one script per anomaly in
//! `tests/anomalies/*.txt`, each run once per isolation level on a fresh
//! engine, asserting per level whether the anomaly is prevented or allowed.
//!
//! # Script format
//!
//! Line oriented. `#` starts a comment (to the end of the line); blank lines
//! are ignored. Every script works on one table `t` with two integer columns,
//! `(id, v)`: `id` is the primary key (ordered, so it supports range scans)
//! and `v` has an ordered, non-unique secondary index.
//!
//! ```text
//! anomaly: write skew (A5B)                                  # title, required
//! verdict: rc=allowed si=allowed rr=prevented ser=prevented  # required, all four levels
//! setup: insert 1 1                    # committed before the script starts
//! t1: begin                            # at the level under test
//! t3: begin ser                        # ... or at an explicit level
//! t1: count v=1          -> 2
//! t1: update 1 0                       # no `->`: expects `ok`
//! t2: commit             -> allowed: ok, prevented: conflict(read)
//! t3: get 1              -> rc: 0, else: 1
//! ```
//!
//! Levels: `rc` (ReadCommitted), `si` (Snapshot), `rr` (RepeatableRead),
//! `ser` (Serializable). The `verdict:` line says, for each level, whether
//! the anomaly is `allowed` or `prevented`, and it is load-bearing: every
//! script must contain at least one step whose expectation distinguishes
//! `allowed:` from `prevented:`, and the runner picks the branch matching the
//! level's verdict. Flipping a verdict therefore flips what is asserted.
//!
//! Steps are `<txn>: <statement> [-> <expectation>]`, where `<txn>` is any
//! name (`t1`, `t2`, ...) and statements are:
//!
//! | statement       | meaning                                           | outcome                      |
//! |-----------------|---------------------------------------------------|------------------------------|
//! | `begin [lvl]`   | start the transaction                             | `ok`                         |
//! | `get K`         | read row `K`                                      | its `v`, or `none`           |
//! | `scan R`        | read the rows in range `R`, in index order        | `[k=v k=v ...]`              |
//! | `count R`       | number of rows in `R`                             | integer                      |
//! | `sum R`         | sum of `v` over `R`                               | integer                      |
//! | `insert K V`    | insert `(K, V)`                                   | `ok`, `unique`, `conflict`   |
//! | `update K V`    | blind write `v = V` to row `K`                    | `ok`, `missing`, `conflict`  |
//! | `add K D`       | `v = v + D` as ONE statement (read + write)       | `ok`, `missing`, `conflict`  |
//! | `delete K`      | delete row `K`                                    | `ok`, `missing`, `conflict`  |
//! | `commit`        | commit                                            | `ok`, `conflict`             |
//! | `abort`         | roll back                                         | `ok`                         |
//!
//! Ranges `R`: `*` (all rows), `A..B` (primary key, inclusive), `v=N` or
//! `v=A..B` (the secondary index on `v`, inclusive).
//!
//! Conflicts render as `conflict(ww)` (first writer wins), `conflict(read)`
//! (read validation) or `conflict(phantom)` (scan validation); an expected
//! bare `conflict` matches any of them. A read-committed insert or delete of
//! a row another transaction holds waits for it (as in PostgreSQL); on the
//! runner's single thread that wait ends in the lock timeout, rendered
//! `wait`, which rolls the transaction back like a conflict.
//!
//! Semantics the runner applies, as the SQL layer above the engine does:
//! * Every statement (not `begin`/`commit`/`abort`) starts with
//!   `Transaction::refresh_snapshot()`, so read committed takes a new snapshot
//!   per statement (a no-op for the other levels).
//! * Statements are atomic: a failed write is rolled back to a savepoint
//!   taken before it. A retryable conflict rolls back the whole transaction
//!   (SQLSTATE 40001); afterwards every step of that transaction has the
//!   outcome `aborted` and is not executed.
//! * A transaction must end (`commit`, `abort` or a conflict) by the end of
//!   the script.
//!
//! Expectations: either one outcome for every level, or a comma-separated
//! list of `key: outcome` with keys `rc`, `si`, `rr`, `ser`, `allowed`,
//! `prevented` and `else`; for a level, its own key wins, then its verdict's
//! key, then `else`. Outcomes are compared after collapsing whitespace.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::Bound;
use std::sync::Arc;

use tessera_engine::tuple::{Tuple, decode_i64, encode_i64, encode_key, encode_tuple};
use tessera_engine::*;

// ----- the table -----

const V_INDEX: IndexId = 1;

fn row(id: i64, v: i64) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(&encode_i64(v))])
}

fn key(n: i64) -> Vec<u8> {
    encode_key(&[Some(&encode_i64(n))])
}

fn decode(r: &[u8]) -> (i64, i64) {
    let t = Tuple::parse(r).expect("row");
    let field = |i| decode_i64(t.field(i).expect("field")).expect("i64");
    (field(0), field(1))
}

fn create_table(e: &Engine) -> Arc<Table> {
    let spec = TableSpec::new("t", vec![0], IndexKind::Ordered).with_index(IndexSpec::new(
        "t_v",
        IndexKind::Ordered,
        false,
        vec![1],
    ));
    e.create_table(spec).expect("create table")
}

// ----- scripts -----

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Level {
    Rc,
    Si,
    Rr,
    Ser,
}

const LEVELS: [Level; 4] = [Level::Rc, Level::Si, Level::Rr, Level::Ser];

impl Level {
    fn parse(s: &str) -> Option<Level> {
        Some(match s {
            "rc" => Level::Rc,
            "si" => Level::Si,
            "rr" => Level::Rr,
            "ser" => Level::Ser,
            _ => return None,
        })
    }
    fn name(self) -> &'static str {
        match self {
            Level::Rc => "rc",
            Level::Si => "si",
            Level::Rr => "rr",
            Level::Ser => "ser",
        }
    }
    fn isolation(self) -> Isolation {
        match self {
            Level::Rc => Isolation::ReadCommitted,
            Level::Si => Isolation::Snapshot,
            Level::Rr => Isolation::RepeatableRead,
            Level::Ser => Isolation::Serializable,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Allowed,
    Prevented,
}

#[derive(Debug, Clone)]
enum Range {
    All,
    Pk(i64, i64),
    V(i64, i64),
}

#[derive(Debug, Clone)]
enum Stmt {
    Begin(Option<Level>),
    Get(i64),
    Scan(Range),
    Count(Range),
    Sum(Range),
    Insert(i64, i64),
    Update(i64, i64),
    Add(i64, i64),
    Delete(i64),
    Commit,
    Abort,
}

/// What a step expects: a list of (key, outcome); key None = every level.
#[derive(Debug, Clone)]
struct Expect(Vec<(Option<String>, String)>);

impl Expect {
    fn for_level(&self, level: Level, verdict: Verdict) -> Option<&str> {
        let verdict_key = match verdict {
            Verdict::Allowed => "allowed",
            Verdict::Prevented => "prevented",
        };
        let find = |k: &str| self.0.iter().find(|(key, _)| key.as_deref() == Some(k)).map(|(_, o)| o.as_str());
        if let [(None, o)] = &self.0[..] {
            return Some(o);
        }
        find(level.name()).or_else(|| find(verdict_key)).or_else(|| find("else"))
    }
    fn distinguishes_verdicts(&self) -> bool {
        let has = |k: &str| self.0.iter().any(|(key, _)| key.as_deref() == Some(k));
        has("allowed") && has("prevented")
    }
}

#[derive(Debug, Clone)]
struct Step {
    line: usize,
    text: String,
    txn: String,
    stmt: Stmt,
    expect: Expect,
}

#[derive(Debug)]
struct Script {
    title: String,
    verdicts: HashMap<Level, Verdict>,
    setup: Vec<(usize, Stmt)>,
    steps: Vec<Step>,
}

fn parse_int(s: &str, line: usize) -> Result<i64, String> {
    s.parse().map_err(|_| format!("line {line}: expected an integer, got {s:?}"))
}

fn parse_range(s: &str, line: usize) -> Result<Range, String> {
    let pair = |s: &str| -> Result<(i64, i64), String> {
        match s.split_once("..") {
            Some((a, b)) => Ok((parse_int(a, line)?, parse_int(b, line)?)),
            None => {
                let n = parse_int(s, line)?;
                Ok((n, n))
            }
        }
    };
    if s == "*" {
        return Ok(Range::All);
    }
    if let Some(rest) = s.strip_prefix("v=") {
        let (a, b) = pair(rest)?;
        return Ok(Range::V(a, b));
    }
    if !s.contains("..") {
        return Err(format!("line {line}: a range is `*`, `A..B`, `v=N` or `v=A..B`, got {s:?}"));
    }
    let (a, b) = pair(s)?;
    Ok(Range::Pk(a, b))
}

fn parse_stmt(s: &str, line: usize) -> Result<Stmt, String> {
    let words: Vec<&str> = s.split_whitespace().collect();
    let arity = |n: usize| {
        if words.len() == n + 1 { Ok(()) } else { Err(format!("line {line}: `{}` takes {n} argument(s)", words[0])) }
    };
    let int = |i: usize| parse_int(words[i], line);
    let Some(&op) = words.first() else { return Err(format!("line {line}: empty statement")) };
    Ok(match op {
        "begin" => match words.len() {
            1 => Stmt::Begin(None),
            2 => Stmt::Begin(Some(
                Level::parse(words[1]).ok_or_else(|| format!("line {line}: unknown level {:?}", words[1]))?,
            )),
            _ => return Err(format!("line {line}: `begin [level]`")),
        },
        "get" => {
            arity(1)?;
            Stmt::Get(int(1)?)
        }
        "scan" | "count" | "sum" => {
            arity(1)?;
            let r = parse_range(words[1], line)?;
            match op {
                "scan" => Stmt::Scan(r),
                "count" => Stmt::Count(r),
                _ => Stmt::Sum(r),
            }
        }
        "insert" | "update" | "add" => {
            arity(2)?;
            let (k, v) = (int(1)?, int(2)?);
            match op {
                "insert" => Stmt::Insert(k, v),
                "update" => Stmt::Update(k, v),
                _ => Stmt::Add(k, v),
            }
        }
        "delete" => {
            arity(1)?;
            Stmt::Delete(int(1)?)
        }
        "commit" => {
            arity(0)?;
            Stmt::Commit
        }
        "abort" => {
            arity(0)?;
            Stmt::Abort
        }
        _ => return Err(format!("line {line}: unknown statement {op:?}")),
    })
}

fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn parse_expect(s: Option<&str>, line: usize) -> Result<Expect, String> {
    let Some(s) = s else { return Ok(Expect(vec![(None, "ok".into())])) };
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let mut out = Vec::new();
    for p in &parts {
        match p.split_once(':') {
            Some((k, o)) => {
                let k = k.trim();
                if Level::parse(k).is_none() && !matches!(k, "allowed" | "prevented" | "else") {
                    return Err(format!("line {line}: unknown expectation key {k:?}"));
                }
                if out.iter().any(|(key, _): &(Option<String>, String)| key.as_deref() == Some(k)) {
                    return Err(format!("line {line}: expectation key {k:?} given twice"));
                }
                out.push((Some(k.to_string()), normalize(o)));
            }
            None if parts.len() == 1 => out.push((None, normalize(p))),
            None => return Err(format!("line {line}: mix of keyed and unkeyed expectations")),
        }
    }
    if out.iter().any(|(_, o)| o.is_empty()) {
        return Err(format!("line {line}: empty expectation"));
    }
    Ok(Expect(out))
}

fn parse_script(text: &str) -> Result<Script, String> {
    let mut title = None;
    let mut verdicts = HashMap::new();
    let mut setup = Vec::new();
    let mut steps = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let (head, rest) =
            content.split_once(':').ok_or_else(|| format!("line {line}: expected `name: ...`, got {content:?}"))?;
        let (head, rest) = (head.trim(), rest.trim());
        match head {
            "anomaly" => title = Some(rest.to_string()),
            "verdict" => {
                for item in rest.split_whitespace() {
                    let (l, v) = item
                        .split_once('=')
                        .ok_or_else(|| format!("line {line}: verdict items are `level=verdict`"))?;
                    let level = Level::parse(l).ok_or_else(|| format!("line {line}: unknown level {l:?}"))?;
                    let verdict = match v {
                        "allowed" => Verdict::Allowed,
                        "prevented" => Verdict::Prevented,
                        _ => return Err(format!("line {line}: a verdict is `allowed` or `prevented`, got {v:?}")),
                    };
                    if verdicts.insert(level, verdict).is_some() {
                        return Err(format!("line {line}: level {l} given twice"));
                    }
                }
            }
            "setup" => {
                let stmt = parse_stmt(rest, line)?;
                if !matches!(stmt, Stmt::Insert(..) | Stmt::Update(..) | Stmt::Delete(..)) {
                    return Err(format!("line {line}: setup only writes (insert, update, delete)"));
                }
                setup.push((line, stmt));
            }
            txn => {
                if !txn.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(format!("line {line}: bad transaction name {txn:?}"));
                }
                let (stmt_text, expect_text) = match rest.split_once("->") {
                    Some((s, e)) => (s.trim(), Some(e.trim())),
                    None => (rest, None),
                };
                steps.push(Step {
                    line,
                    text: normalize(content),
                    txn: txn.to_string(),
                    stmt: parse_stmt(stmt_text, line)?,
                    expect: parse_expect(expect_text, line)?,
                });
            }
        }
    }
    let title = title.ok_or("missing `anomaly:` line")?;
    for level in LEVELS {
        if !verdicts.contains_key(&level) {
            return Err(format!("the verdict does not cover level {}", level.name()));
        }
    }
    if !steps.iter().any(|s| s.expect.distinguishes_verdicts()) {
        return Err("no step distinguishes `allowed:` from `prevented:`, so the verdict would assert nothing".into());
    }
    for s in &steps {
        for level in LEVELS {
            if s.expect.for_level(level, verdicts[&level]).is_none() {
                return Err(format!("line {}: no expectation for level {}", s.line, level.name()));
            }
        }
    }
    Ok(Script { title, verdicts, setup, steps })
}

// ----- running -----

enum TxnState {
    Active(Transaction),
    /// Rolled back after a retryable conflict.
    Aborted,
    Ended,
}

fn render_err(e: &EngineError) -> String {
    match e {
        EngineError::Conflict { reason } => match reason {
            ConflictReason::WriteWrite => "conflict(ww)".into(),
            ConflictReason::ReadValidation => "conflict(read)".into(),
            ConflictReason::Phantom => "conflict(phantom)".into(),
            ConflictReason::PartitionChanged => "conflict(partition)".into(),
        },
        EngineError::UniqueViolation { .. } => "unique".into(),
        // A read-committed writer waits for the row's holder; in a script run
        // on one thread the holder cannot move, so the wait ends in the lock
        // timeout (retryable, like a conflict).
        EngineError::LockTimeout(_) => "wait".into(),
        e => format!("error({e})"),
    }
}

fn key_range(range: &Range) -> (IndexId, KeyRange) {
    let incl = |a: i64, b: i64| KeyRange { lower: Bound::Included(key(a)), upper: Bound::Included(key(b)) };
    match range {
        Range::All => (PRIMARY, KeyRange::all()),
        Range::Pk(a, b) => (PRIMARY, incl(*a, *b)),
        Range::V(a, b) => (V_INDEX, incl(*a, *b)),
    }
}

/// Runs one statement that is not begin/commit/abort. Ok(outcome) or the
/// engine's error.
fn exec(tx: &mut Transaction, t: &Arc<Table>, stmt: &Stmt) -> Result<String, EngineError> {
    let written = |found: bool| if found { "ok".to_string() } else { "missing".to_string() };
    Ok(match stmt {
        Stmt::Get(k) => match tx.get(t, &key(*k))? {
            Some(r) => decode(&r).1.to_string(),
            None => "none".into(),
        },
        Stmt::Scan(r) | Stmt::Count(r) | Stmt::Sum(r) => {
            let (index, range) = key_range(r);
            let rows: Vec<(i64, i64)> = tx.scan_collect(t, index, &range)?.iter().map(|r| decode(r)).collect();
            match stmt {
                Stmt::Scan(_) => {
                    let items: Vec<String> = rows.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    format!("[{}]", items.join(" "))
                }
                Stmt::Count(_) => rows.len().to_string(),
                _ => rows.iter().map(|(_, v)| v).sum::<i64>().to_string(),
            }
        }
        Stmt::Insert(k, v) => {
            tx.insert(t, row(*k, *v))?;
            "ok".into()
        }
        Stmt::Update(k, v) => written(tx.update(t, row(*k, *v))?),
        Stmt::Add(k, d) => match tx.get(t, &key(*k))? {
            Some(r) => written(tx.update(t, row(*k, decode(&r).1 + d))?),
            None => "missing".into(),
        },
        Stmt::Delete(k) => written(tx.delete(t, &key(*k))?),
        Stmt::Begin(_) | Stmt::Commit | Stmt::Abort => unreachable!("handled by the runner"),
    })
}

fn matches_expectation(expected: &str, actual: &str) -> bool {
    expected == actual || (expected == "conflict" && actual.starts_with("conflict("))
}

/// Runs `script` at `level` on a fresh engine; Err describes the first
/// mismatch, with the transcript so far.
fn run_level(script: &Script, level: Level) -> Result<(), String> {
    let verdict = script.verdicts[&level];
    let mut config = EngineConfig::in_memory();
    config.lock_timeout = std::time::Duration::from_millis(20);
    let engine = Engine::open(config).map_err(|e| e.to_string())?;
    let t = create_table(&engine);
    {
        let mut tx = engine.begin(Isolation::Serializable).map_err(|e| e.to_string())?;
        for (line, stmt) in &script.setup {
            let out = exec(&mut tx, &t, stmt).map_err(|e| format!("setup line {line}: {e}"))?;
            if out != "ok" {
                return Err(format!("setup line {line}: {out}"));
            }
        }
        tx.commit().map_err(|e| format!("setup commit: {e}"))?;
    }
    let mut txns: HashMap<String, TxnState> = HashMap::new();
    let mut transcript = String::new();
    for step in &script.steps {
        let expected = step.expect.for_level(level, verdict).expect("checked by the parser");
        let actual: String = match (&step.stmt, txns.remove(&step.txn)) {
            (Stmt::Begin(explicit), None) => {
                let iso = explicit.unwrap_or(level).isolation();
                let tx = engine.begin(iso).map_err(|e| format!("line {}: begin: {e}", step.line))?;
                txns.insert(step.txn.clone(), TxnState::Active(tx));
                "ok".into()
            }
            (Stmt::Begin(_), Some(_)) => return Err(format!("line {}: {} began twice", step.line, step.txn)),
            (_, None) => return Err(format!("line {}: {} has not begun", step.line, step.txn)),
            (_, Some(TxnState::Ended)) => return Err(format!("line {}: {} has already ended", step.line, step.txn)),
            (_, Some(TxnState::Aborted)) => {
                txns.insert(step.txn.clone(), TxnState::Aborted);
                "aborted".into()
            }
            (Stmt::Commit, Some(TxnState::Active(tx))) => {
                txns.insert(step.txn.clone(), TxnState::Ended);
                match tx.commit() {
                    Ok(_) => "ok".into(),
                    Err(e) => render_err(&e),
                }
            }
            (Stmt::Abort, Some(TxnState::Active(tx))) => {
                tx.abort();
                txns.insert(step.txn.clone(), TxnState::Ended);
                "ok".into()
            }
            (stmt, Some(TxnState::Active(mut tx))) => {
                tx.refresh_snapshot();
                let sp = tx.savepoint();
                match exec(&mut tx, &t, stmt) {
                    Ok(out) => {
                        txns.insert(step.txn.clone(), TxnState::Active(tx));
                        out
                    }
                    Err(e) if e.is_retryable() => {
                        tx.abort();
                        txns.insert(step.txn.clone(), TxnState::Aborted);
                        render_err(&e)
                    }
                    Err(e) => {
                        tx.rollback_to(sp).map_err(|e| format!("line {}: rollback_to: {e}", step.line))?;
                        txns.insert(step.txn.clone(), TxnState::Active(tx));
                        render_err(&e)
                    }
                }
            }
        };
        let _ = writeln!(transcript, "  {:>4} | {:<40} => {actual}", step.line, step.text);
        if !matches_expectation(expected, &actual) {
            return Err(format!(
                "line {}: `{}`: expected `{expected}`, got `{actual}`\n  transcript:\n{transcript}",
                step.line, step.text
            ));
        }
    }
    let open: Vec<&String> = txns.iter().filter(|(_, s)| matches!(s, TxnState::Active(_))).map(|(n, _)| n).collect();
    if !open.is_empty() {
        return Err(format!("the script leaves {open:?} open"));
    }
    Ok(())
}

/// Runs a script at all four levels; Err lists every level that failed.
fn check_script(name: &str, text: &str) -> Result<(), String> {
    let script = parse_script(text).map_err(|e| format!("{name}.txt: {e}"))?;
    let mut failures = String::new();
    for level in LEVELS {
        if let Err(e) = run_level(&script, level) {
            let verdict = script.verdicts[&level];
            let _ = writeln!(failures, "[{} — {:?} expected {verdict:?}] {e}", level.name(), level.isolation());
        }
    }
    if failures.is_empty() { Ok(()) } else { Err(format!("{name}.txt ({}):\n{failures}", script.title)) }
}

fn run_script(name: &str, text: &str) {
    if let Err(e) = check_script(name, text) {
        panic!("{e}");
    }
}

macro_rules! anomalies {
    ($($name:ident),* $(,)?) => {
        const SCRIPTS: &[(&str, &str)] =
            &[$((stringify!($name), include_str!(concat!("anomalies/", stringify!($name), ".txt")))),*];
        $(
            #[test]
            fn $name() {
                run_script(stringify!($name), include_str!(concat!("anomalies/", stringify!($name), ".txt")));
            }
        )*
    };
}

anomalies! {
    dirty_write,
    dirty_read_aborted,
    dirty_read_intermediate,
    lost_update,
    lost_update_committed,
    fuzzy_read,
    phantom,
    phantom_write,
    read_skew,
    write_skew,
    g_single,
    read_only_anomaly,
}

/// Every script in the directory has a test (and so cannot be forgotten).
#[test]
fn every_script_is_run() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/anomalies");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/anomalies")
        .map(|e| e.expect("dir entry").file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".txt").map(str::to_string))
        .collect();
    on_disk.sort();
    let mut registered: Vec<String> = SCRIPTS.iter().map(|(n, _)| n.to_string()).collect();
    registered.sort();
    assert_eq!(on_disk, registered, "scripts on disk vs. scripts registered in anomalies!{{}}");
}

/// The verdict is load-bearing: flipping any level's verdict in any script
/// makes that script fail.
#[test]
fn flipped_verdicts_are_caught() {
    for (name, text) in SCRIPTS {
        let script = parse_script(text).expect("parses");
        for level in LEVELS {
            let flipped = match script.verdicts[&level] {
                Verdict::Allowed => "allowed",
                Verdict::Prevented => "prevented",
            };
            let other = if flipped == "allowed" { "prevented" } else { "allowed" };
            let from = format!("{}={flipped}", level.name());
            let to = format!("{}={other}", level.name());
            let mutated: String = text
                .lines()
                .map(|l| if l.trim_start().starts_with("verdict:") { l.replacen(&from, &to, 1) } else { l.to_string() })
                .collect::<Vec<_>>()
                .join("\n");
            assert_ne!(&mutated, text, "{name}: could not flip {from}");
            let script = parse_script(&mutated).expect("parses");
            assert!(
                run_level(&script, level).is_err(),
                "{name}.txt: flipping {from} to {to} still passes at {}: the verdict asserts nothing there",
                level.name()
            );
        }
    }
}

#[test]
fn malformed_scripts_are_rejected() {
    let ok = "anomaly: x\nverdict: rc=allowed si=allowed rr=allowed ser=allowed\nt1: begin\n\
              t1: get 1 -> allowed: none, prevented: 1\nt1: commit\n";
    assert!(parse_script(ok).is_ok());
    for bad in [
        ok.replace("anomaly: x\n", ""),
        ok.replace(" ser=allowed", ""),
        ok.replace("allowed: none, prevented: 1", "none"),
        ok.replace("get 1", "get one"),
        ok.replace("get 1", "frobnicate 1"),
        ok.replace("allowed: none", "sometimes: none"),
    ] {
        assert!(parse_script(&bad).is_err(), "accepted:\n{bad}");
    }
    let unended = ok.replace("t1: commit\n", "");
    let script = parse_script(&unended).unwrap();
    assert!(run_level(&script, Level::Rc).is_err());
}

/// Inserting a key that another transaction committed after our snapshot:
/// at read committed (whose statement snapshot includes the other commit) it
/// is a unique violation, a user error; at the snapshot-based levels the key
/// is invisible to us, so, as PostgreSQL does, the engine reports a retryable
/// serialization failure instead.
#[test]
fn insert_of_a_key_committed_after_the_snapshot() {
    for level in LEVELS {
        let e = Engine::open(EngineConfig::in_memory()).unwrap();
        let t = create_table(&e);
        let mut t1 = e.begin(level.isolation()).unwrap();
        assert_eq!(t1.get(&t, &key(5)).unwrap(), None);
        let mut t2 = e.begin(level.isolation()).unwrap();
        t2.insert(&t, row(5, 2)).unwrap();
        t2.commit().unwrap();
        t1.refresh_snapshot();
        let sp = t1.savepoint();
        let err = t1.insert(&t, row(5, 1)).unwrap_err();
        if level != Level::Rc {
            // Taken after the snapshot: a serialization failure, as in PostgreSQL.
            assert!(err.is_retryable(), "{level:?}: {err}");
            continue;
        }
        assert!(matches!(err, EngineError::UniqueViolation { .. }), "{level:?}: {err}");
        assert!(!err.is_retryable());
        t1.rollback_to(sp).unwrap();
        let expect = if level == Level::Rc { Some(2) } else { None };
        assert_eq!(t1.get(&t, &key(5)).unwrap().map(|r| decode(&r).1), expect, "{level:?}");
        t1.insert(&t, row(6, 1)).unwrap();
        match (level, t1.commit()) {
            (Level::Ser, Err(EngineError::Conflict { reason: ConflictReason::Phantom })) => {}
            (Level::Ser, other) => panic!("serializable: expected a phantom conflict, got {other:?}"),
            (_, other) => assert!(other.is_ok(), "{level:?}: {other:?}"),
        }
    }
}
