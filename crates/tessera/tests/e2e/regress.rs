//! PostgreSQL 15's own regression files, statement by statement, against PostgreSQL's answers.
//!
//! ```text
//! cargo test -p tessera --test e2e regress -- --nocapture
//! ```
//!
//! `tests/regress/sql/*.sql` are files of PostgreSQL's `src/test/regress/sql` (`tests/regress/README.md` says
//! which and how they were adapted). They run in the order of `tests/regress/schedule` on one fresh database,
//! each file on a session of its own, as pg_regress runs them. A file is split into statements as psql splits
//! it (quotes, dollar quoting, comments, parentheses, `\;`, `COPY … FROM stdin` followed by its data); psql's
//! meta-commands (`\d`, `\pset`, …) are skipped and counted, but `\set` variables are interpolated as psql
//! does. Each statement goes over the simple query protocol, so values arrive in PostgreSQL's text format,
//! and its outcome is compared with the one PostgreSQL gave (`tests/regress/expected/<file>.out`):
//! - a statement that succeeds: its command tag, its number of columns and its rows as text, in order when the
//!   statement has an ORDER BY at top level and as a multiset otherwise;
//! - a statement that fails: its SQLSTATE only (the messages' wording differs);
//! - a statement still running after 10 s disagrees; it is cancelled, and its session replaced if it does not
//!   come back.
//!
//! It prints `regress <file>: <agree>/<total> statements agree (<pct>%)` per file, then the total (without the
//! files the schedule marks `setup`, which only make what later files read). The
//! statements known to disagree are listed in `tests/regress/differences.txt`: the test fails when any other
//! statement disagrees (a regression) or the server crashes, and names the listed statements that now agree.
//!
//! Environment:
//! - `TESSERA_REGRESS_BLESS=1` takes the listed statements that now agree off `differences.txt` (so the list
//!   only shrinks), except those marked `(unstable)`: their answer on Tessera changes from run to run.
//!   `TESSERA_REGRESS_BLESS=add` adds the statements that disagree now, `all` makes the list exactly those
//!   (after recording again, or to accept a known loss deliberately; look at what it adds).
//! - `TESSERA_REGRESS_FILTER=join,with` runs only those files and the `setup` ones. A file whose statements
//!   read what an earlier file made can then disagree more.
//! - `TESSERA_REGRESS_SERVER='host=… port=… user=… dbname=…'` runs against a server already running instead
//!   of starting one (`bench/compat.sh` runs a release build so). A database is created there for the run and
//!   dropped afterwards. Against PostgreSQL 15 itself every statement agrees: a check of the harness.
//! - `TESSERA_REGRESS_REPORT=<path>` writes every disagreeing statement there, with both outcomes.
//! - `TESSERA_REGRESS_TIMEOUT=<seconds>` changes the per-statement timeout.
//! - `TESSERA_REGRESS_RECORD='host=127.0.0.1 port=5432 user=postgres dbname=postgres'` records PostgreSQL
//!   15's outcomes into `tests/regress/expected/` instead of testing (the user must be able to create and drop
//!   databases; trust authentication). Record again after changing a file in `sql/` or how statements are
//!   split or compared here.
//!
//! Both servers run with PostgreSQL's defaults for the session (`DateStyle` ISO, `TimeZone` UTC), not
//! pg_regress's `Postgres, MDY` and `PST8PDT`: Tessera has only those. The statements of the files that set
//! them still run, and count.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use std::{env, fs};

use crate::harness::Server;

mod split;
mod wire;

use split::*;
use wire::*;

/// Far beyond what any statement of these files needs on PostgreSQL, or on a debug build of Tessera.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a cancelled statement has to come back before its session is given up for another.
const CANCEL_GRACE: Duration = Duration::from_secs(5);
/// Recording is not the place to find PostgreSQL slow: only a hang should stop it.
const RECORD_TIMEOUT: Duration = Duration::from_secs(120);
/// A result whose rows take more text than this is kept in the expected files as a hash of its rows, which
/// keeps the files small (a few statements return all of `tenk1`).
const INLINE_LIMIT: usize = 8 * 1024;
/// The file the others need first.
const SETUP: &str = "test_setup";
/// How `differences.txt` marks a statement whose answer on Tessera changes from run to run (a sum of floats in
/// another order, ties of a window's ORDER BY): it stays listed when it happens to agree.
const UNSTABLE: &str = "(unstable)";

fn regress_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regress")
}

#[test]
fn postgres_regression_files() {
    let dir = regress_dir();
    let (schedule, setup) = read_schedule(&dir);
    if let Ok(conn) = env::var("TESSERA_REGRESS_RECORD") {
        record(&dir, &schedule, &Target::parse(&conn));
        return;
    }
    let files: Vec<String> = match env::var("TESSERA_REGRESS_FILTER") {
        Ok(filter) => {
            let wanted: Vec<&str> = filter.split(',').map(str::trim).filter(|f| !f.is_empty()).collect();
            for w in &wanted {
                assert!(schedule.iter().any(|f| f == w), "TESSERA_REGRESS_FILTER: no file {w} in the schedule");
            }
            schedule.iter().filter(|f| setup.contains(*f) || wanted.contains(&f.as_str())).cloned().collect()
        }
        Err(_) => schedule.clone(),
    };
    let timeout = env::var("TESSERA_REGRESS_TIMEOUT")
        .ok()
        .map(|s| Duration::from_secs_f64(s.parse().expect("TESSERA_REGRESS_TIMEOUT: seconds")))
        .unwrap_or(STATEMENT_TIMEOUT);

    let (mut server, target) = match env::var("TESSERA_REGRESS_SERVER") {
        Ok(conn) => (None, Target::parse(&conn)),
        Err(_) => {
            let server = Server::start();
            let target = Target::parse(&server.conn_str());
            (Some(server), target)
        }
    };
    let mut check_server = || {
        if let Some(server) = server.as_mut() {
            server.assert_running();
        }
    };

    let started = Instant::now();
    let mut run = Run::begin(&target, timeout);
    let mut disagreeing: BTreeSet<(String, usize)> = BTreeSet::new();
    let mut report = String::new();
    let mut texts: HashMap<(String, usize), String> = HashMap::new();
    let (mut agree_total, mut count_total, mut skipped_total) = (0, 0, 0);
    for file in &files {
        let file_started = Instant::now();
        let items = split(&fs::read_to_string(dir.join(format!("sql/{file}.sql"))).expect("reading an sql file"));
        let expected_path = dir.join(format!("expected/{file}.out"));
        let expected = read_expected(&expected_path);
        let outcome = run.file(&items, &mut check_server);
        let mut agree = 0;
        for (stmt, got) in &outcome.statements {
            let want = expected.get(&stmt.index).unwrap_or_else(|| {
                panic!("{} has no outcome for statement {}: record again", expected_path.display(), stmt.index)
            });
            assert_eq!(
                want.hash,
                stmt.hash(),
                "{}: statement {} (line {}) is not the statement recorded: record again",
                expected_path.display(),
                stmt.index,
                stmt.line
            );
            if same_outcome(&want.blocks, got) {
                agree += 1;
            } else {
                disagreeing.insert((file.clone(), stmt.index));
                texts.insert((file.clone(), stmt.index), stmt.text.clone());
                describe_difference(&mut report, file, stmt, &want.blocks, got);
            }
        }
        let total = outcome.statements.len();
        let is_setup = setup.contains(file);
        println!(
            "regress {file}: {agree}/{total} statements agree ({}); {} psql meta-commands skipped; {:.1} s{}",
            percent(agree, total),
            outcome.skipped,
            file_started.elapsed().as_secs_f64(),
            if is_setup { " (setup: not in the total)" } else { "" }
        );
        if !is_setup {
            agree_total += agree;
            count_total += total;
            skipped_total += outcome.skipped;
        }
        check_server();
    }
    run.end();
    println!(
        "regress total: {agree_total}/{count_total} statements agree ({}); {skipped_total} psql meta-commands \
         skipped; {:.1} s",
        percent(agree_total, count_total),
        started.elapsed().as_secs_f64()
    );
    if let Ok(path) = env::var("TESSERA_REGRESS_REPORT") {
        fs::write(&path, &report).expect("writing TESSERA_REGRESS_REPORT");
        println!("regress: the disagreeing statements are described in {path}");
    }

    // The baseline, restricted to the files that ran.
    let baseline_path = dir.join("differences.txt");
    let baseline = read_baseline(&baseline_path);
    let ran: BTreeSet<&String> = files.iter().collect();
    let listed: BTreeSet<(String, usize)> = baseline.keys().filter(|(f, _)| ran.contains(f)).cloned().collect();
    // An unstable statement (one whose answer on Tessera changes from run to run) agreeing once says nothing.
    let fixed: Vec<&(String, usize)> =
        listed.difference(&disagreeing).filter(|key| !baseline[*key].starts_with(UNSTABLE)).collect();
    let new: Vec<&(String, usize)> = disagreeing.difference(&listed).collect();
    if !fixed.is_empty() {
        println!("regress: {} statements listed in differences.txt now agree:", fixed.len());
        for (file, index) in &fixed {
            println!("  {file} {index}: {}", baseline[&(file.clone(), *index)]);
        }
    }
    let note = |key: &(String, usize)| one_line(&texts[key], 100);
    let bless = env::var("TESSERA_REGRESS_BLESS").unwrap_or_default();
    let mut lines = baseline.clone();
    match bless.as_str() {
        "" => {}
        "1" => lines.retain(|key, _| !fixed.contains(&key)),
        "add" => {
            for key in &new {
                lines.insert((*key).clone(), note(key));
            }
        }
        "all" => {
            lines.retain(|key @ (f, _), _| !ran.contains(f) || disagreeing.contains(key));
            for key in &new {
                lines.insert((*key).clone(), note(key));
            }
        }
        other => panic!("TESSERA_REGRESS_BLESS={other}: 1, add or all"),
    }
    if lines != baseline {
        write_baseline(&baseline_path, &schedule, &lines);
        println!("regress: differences.txt rewritten: {} statements listed (were {})", lines.len(), baseline.len());
    }
    if !new.is_empty() && !matches!(bless.as_str(), "add" | "all") {
        let mut message =
            format!("{} statements disagree with PostgreSQL that are not listed in differences.txt:\n", new.len());
        for key in new.iter().take(50) {
            let _ = writeln!(message, "  {} {}: {}", key.0, key.1, note(key));
        }
        message.push_str("(TESSERA_REGRESS_REPORT=<path> writes both outcomes of each)");
        panic!("{message}");
    }
}

fn percent(part: usize, total: usize) -> String {
    if total == 0 { "n/a".to_string() } else { format!("{:.1}%", 100.0 * part as f64 / total as f64) }
}

/// The files in order, and which of them are `setup` files.
fn read_schedule(dir: &Path) -> (Vec<String>, BTreeSet<String>) {
    let text = fs::read_to_string(dir.join("schedule")).expect("reading tests/regress/schedule");
    let (mut files, mut setup) = (Vec::new(), BTreeSet::new());
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let mut words = line.split_whitespace();
        let file = words.next().unwrap().to_string();
        match words.next() {
            None => {}
            Some("setup") => {
                setup.insert(file.clone());
            }
            Some(other) => panic!("tests/regress/schedule: unknown mark {other:?} of {file}"),
        }
        files.push(file);
    }
    assert_eq!(files.first().map(String::as_str), Some(SETUP), "the schedule must begin with {SETUP}");
    (files, setup)
}

/// Runs every file against PostgreSQL and writes what it answered as the expected outcomes.
fn record(dir: &Path, schedule: &[String], target: &Target) {
    let mut run = Run::begin(target, RECORD_TIMEOUT);
    let version = run.server_version.clone();
    for file in schedule {
        let items = split(&fs::read_to_string(dir.join(format!("sql/{file}.sql"))).expect("reading an sql file"));
        let outcome = run.file(&items, &mut || {});
        let mut out =
            format!("# What PostgreSQL {version} answered to each statement of sql/{file}.sql (see regress.rs).\n");
        for (stmt, blocks) in &outcome.statements {
            for block in blocks {
                block.write(&mut out, stmt);
            }
        }
        let path = dir.join(format!("expected/{file}.out"));
        fs::create_dir_all(path.parent().unwrap()).expect("creating tests/regress/expected");
        fs::write(&path, out).expect("writing an expected file");
        println!("regress record {file}: {} statements", outcome.statements.len());
    }
    run.end();
}

// ---------------------------------------------------------------------------------------------------------------
// Outcomes.

/// One result of a statement (a query joined with `\;` has several).
#[derive(Clone, Debug)]
enum Block {
    Rows {
        cols: usize,
        tag: String,
        body: Body,
    },
    Command {
        tag: String,
    },
    /// Compared by SQLSTATE only; the message is kept for the reader.
    Error {
        state: String,
        message: String,
    },
    /// Still running after the timeout.
    Timeout,
    /// The connection broke.
    Lost {
        reason: String,
    },
}

/// Rows, one line each (values tab-separated as in COPY's text format): in order, or sorted for a statement
/// without ORDER BY; or, for many rows, the hash of those lines.
#[derive(Clone, Debug)]
enum Body {
    Lines(Vec<String>),
    Hash(u64),
}

impl Body {
    fn new(rows: &[Vec<Option<String>>], ordered: bool) -> Body {
        let mut lines: Vec<String> = rows.iter().map(|row| encode_row(row)).collect();
        if !ordered {
            lines.sort();
        }
        if lines.iter().map(|l| l.len() + 1).sum::<usize>() > INLINE_LIMIT {
            Body::Hash(hash_lines(&lines))
        } else {
            Body::Lines(lines)
        }
    }

    fn hash(&self) -> u64 {
        match self {
            Body::Lines(lines) => hash_lines(lines),
            Body::Hash(h) => *h,
        }
    }
}

fn hash_lines(lines: &[String]) -> u64 {
    let mut text = String::new();
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    fnv(text.as_bytes())
}

/// FNV-1a: a stable hash that needs no dependency.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

fn encode_row(row: &[Option<String>]) -> String {
    let mut line = String::new();
    for (i, value) in row.iter().enumerate() {
        if i > 0 {
            line.push('\t');
        }
        match value {
            None => line.push_str("\\N"),
            Some(v) => {
                for c in v.chars() {
                    match c {
                        '\\' => line.push_str("\\\\"),
                        '\t' => line.push_str("\\t"),
                        '\n' => line.push_str("\\n"),
                        '\r' => line.push_str("\\r"),
                        _ => line.push(c),
                    }
                }
            }
        }
    }
    line
}

impl Block {
    fn same(&self, other: &Block) -> bool {
        match (self, other) {
            (Block::Rows { cols: c1, tag: t1, body: b1 }, Block::Rows { cols: c2, tag: t2, body: b2 }) => {
                c1 == c2 && t1 == t2 && b1.hash() == b2.hash()
            }
            (Block::Command { tag: t1 }, Block::Command { tag: t2 }) => t1 == t2,
            (Block::Error { state: s1, .. }, Block::Error { state: s2, .. }) => s1 == s2,
            _ => false,
        }
    }

    /// The block in the expected files' format (see `read_expected`).
    fn write(&self, out: &mut String, stmt: &Statement) {
        let _ = write!(out, "@{}:{:08x} ", stmt.index, stmt.hash());
        match self {
            Block::Rows { cols, tag, body: Body::Lines(lines) } => {
                let _ = writeln!(out, "rows {cols} {tag}");
                for line in lines {
                    let _ = writeln!(out, " {line}");
                }
            }
            Block::Rows { cols, tag, body: Body::Hash(hash) } => {
                let _ = writeln!(out, "rowhash {cols} {hash:016x} {tag}");
            }
            Block::Command { tag } => {
                let _ = writeln!(out, "ok {tag}");
            }
            Block::Error { state, message } => {
                let _ = writeln!(out, "error {state} {}", one_line(message, 200));
            }
            Block::Timeout => out.push_str("timeout\n"),
            Block::Lost { reason } => {
                let _ = writeln!(out, "lost {}", one_line(reason, 200));
            }
        }
    }

    /// A few lines for a person: the report of a disagreement.
    fn describe(&self) -> String {
        match self {
            Block::Rows { cols, tag, body: Body::Lines(lines) } => {
                let mut s = format!("{tag} ({cols} columns)");
                for line in lines.iter().take(8) {
                    let _ = write!(s, "\n      | {}", one_line(line, 160));
                }
                if lines.len() > 8 {
                    let _ = write!(s, "\n      | … {} more", lines.len() - 8);
                }
                s
            }
            Block::Rows { cols, tag, body: Body::Hash(hash) } => format!("{tag} ({cols} columns, rows {hash:016x})"),
            Block::Command { tag } => tag.clone(),
            Block::Error { state, message } => format!("ERROR {state} {}", one_line(message, 200)),
            Block::Timeout => "timed out".to_string(),
            Block::Lost { reason } => format!("connection lost: {reason}"),
        }
    }
}

fn same_outcome(want: &[Block], got: &[Block]) -> bool {
    want.len() == got.len() && want.iter().zip(got).all(|(w, g)| w.same(g))
}

fn describe_difference(report: &mut String, file: &str, stmt: &Statement, want: &[Block], got: &[Block]) {
    let _ = writeln!(report, "== {file} {} (line {}): {}", stmt.index, stmt.line, one_line(&stmt.text, 400));
    if let ([Block::Rows { body: Body::Lines(w), .. }], [Block::Rows { body: Body::Lines(g), .. }]) = (want, got) {
        let (mut w, mut g) = (w.clone(), g.clone());
        w.sort();
        g.sort();
        if w == g {
            let _ = writeln!(report, "   (the same rows in another order)");
        }
    }
    for (who, blocks) in [("postgres", want), ("tessera ", got)] {
        let described: Vec<String> = blocks.iter().map(Block::describe).collect();
        let _ = writeln!(report, "   {who}: {}", described.join("\n             then "));
    }
}

fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max { format!("{}…", flat.chars().take(max).collect::<String>()) } else { flat }
}

/// What an expected file says of one statement.
struct Expected {
    hash: u32,
    blocks: Vec<Block>,
}

/// Reads an expected file: for each result of each statement a header line
/// `@<index>:<hash of the statement's text> <kind> …`, where the kind is
/// - `rows <columns> <command tag>`, followed by the rows, each a line starting with a space;
/// - `rowhash <columns> <hash of the rows' lines> <command tag>`;
/// - `ok <command tag>`, `error <SQLSTATE> <message>`, `timeout` or `lost <reason>`.
fn read_expected(path: &Path) -> BTreeMap<usize, Expected> {
    let text = fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("reading {}: {e} (TESSERA_REGRESS_RECORD records it)", path.display()));
    let mut out: BTreeMap<usize, Expected> = BTreeMap::new();
    let mut current: Option<usize> = None;
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        if let Some(row) = line.strip_prefix(' ') {
            let index = current.expect("a row before any statement");
            match out.get_mut(&index).and_then(|e| e.blocks.last_mut()) {
                Some(Block::Rows { body: Body::Lines(lines), .. }) => lines.push(row.to_string()),
                _ => panic!("{}: a row outside a result: {line}", path.display()),
            }
            continue;
        }
        let header = line.strip_prefix('@').unwrap_or_else(|| unreadable(path, line));
        let (id, rest) = header.split_once(' ').unwrap_or_else(|| unreadable(path, line));
        let (index, hash) = id.split_once(':').unwrap_or_else(|| unreadable(path, line));
        let index: usize = index.parse().unwrap_or_else(|_| unreadable(path, line));
        let hash = u32::from_str_radix(hash, 16).unwrap_or_else(|_| unreadable(path, line));
        let (kind, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let block = match kind {
            "rows" => {
                let (cols, tag) = rest.split_once(' ').unwrap_or_else(|| unreadable(path, line));
                Block::Rows {
                    cols: cols.parse().unwrap_or_else(|_| unreadable(path, line)),
                    tag: tag.to_string(),
                    body: Body::Lines(Vec::new()),
                }
            }
            "rowhash" => {
                let mut parts = rest.splitn(3, ' ');
                let cols = parts.next().and_then(|c| c.parse().ok()).unwrap_or_else(|| unreadable(path, line));
                let hash = parts
                    .next()
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
                    .unwrap_or_else(|| unreadable(path, line));
                Block::Rows { cols, tag: parts.next().unwrap_or("").to_string(), body: Body::Hash(hash) }
            }
            "ok" => Block::Command { tag: rest.to_string() },
            "error" => {
                let (state, message) = rest.split_once(' ').unwrap_or((rest, ""));
                Block::Error { state: state.to_string(), message: message.to_string() }
            }
            "timeout" => Block::Timeout,
            "lost" => Block::Lost { reason: rest.to_string() },
            _ => unreadable(path, line),
        };
        out.entry(index).or_insert(Expected { hash, blocks: Vec::new() }).blocks.push(block);
        current = Some(index);
    }
    out
}

fn unreadable<T>(path: &Path, line: &str) -> T {
    panic!("{}: cannot read the line {line:?}", path.display())
}

/// `differences.txt`: `<file> <statement index>  <the statement, abridged>` per line, `#` comments.
fn read_baseline(path: &Path) -> BTreeMap<(String, usize), String> {
    let Ok(text) = fs::read_to_string(path) else { return BTreeMap::new() };
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = line.splitn(3, ' ');
        let (Some(file), Some(index)) = (parts.next(), parts.next().and_then(|i| i.parse().ok())) else {
            panic!("{}: cannot read the line {line:?}", path.display());
        };
        out.insert((file.to_string(), index), parts.next().unwrap_or("").trim().to_string());
    }
    out
}

fn write_baseline(path: &Path, schedule: &[String], lines: &BTreeMap<(String, usize), String>) {
    let mut out = String::from(
        "# The statements of the PostgreSQL regression files (sql/) whose outcome on Tessera differs from\n\
         # PostgreSQL's (expected/): `<file> <statement index>  <the statement, abridged>`. The test fails when a\n\
         # statement not listed here disagrees; TESSERA_REGRESS_BLESS=1 takes off those that agree again, except\n\
         # those marked (unstable), whose answer on Tessera changes from run to run.\n",
    );
    for file in schedule {
        for ((f, index), text) in lines.range((file.clone(), 0)..=(file.clone(), usize::MAX)) {
            debug_assert_eq!(f, file);
            let _ = writeln!(out, "{file} {index}  {text}");
        }
    }
    fs::write(path, out).expect("writing differences.txt");
}

// ---------------------------------------------------------------------------------------------------------------
// Running the files.

/// Where to connect: the fields of a libpq connection string this harness uses.
#[derive(Clone, Debug)]
struct Target {
    host: String,
    port: u16,
    user: String,
    dbname: String,
}

impl Target {
    fn parse(conn: &str) -> Target {
        let mut target =
            Target { host: "127.0.0.1".into(), port: 5432, user: "postgres".into(), dbname: String::new() };
        for pair in conn.split_whitespace() {
            let (key, value) = pair.split_once('=').unwrap_or_else(|| panic!("{conn:?}: expected key=value"));
            let value = value.trim_matches('\'').to_string();
            match key {
                "host" => target.host = value,
                "port" => target.port = value.parse().expect("port"),
                "user" => target.user = value,
                "dbname" => target.dbname = value,
                _ => panic!("{conn:?}: {key} is not supported here"),
            }
        }
        if target.dbname.is_empty() {
            target.dbname = target.user.clone();
        }
        target
    }
}

/// One run over the files: a database of its own on the target.
struct Run {
    target: Target,
    database: String,
    timeout: Duration,
    server_version: String,
}

/// What a file gave: each statement's outcome.
struct FileOutcome {
    statements: Vec<(Statement, Vec<Block>)>,
    skipped: usize,
}

impl Run {
    fn begin(target: &Target, timeout: Duration) -> Run {
        let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let database = format!("regress_{}_{secs}", std::process::id());
        let mut admin =
            Conn::connect(target, &target.dbname).unwrap_or_else(|e| panic!("connecting to {target:?}: {e}"));
        // pg_regress's database: template0, UTF8 and the C locale (its sort order is Tessera's), and C for the
        // locale-dependent formats. Tessera takes neither clause: a plain CREATE DATABASE there.
        let created = admin.simple(&format!(
            "CREATE DATABASE {database} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'"
        ));
        if created.is_err() {
            admin.simple(&format!("CREATE DATABASE {database}")).unwrap_or_else(|e| panic!("CREATE DATABASE: {e}"));
        }
        for setting in ["lc_messages", "lc_monetary", "lc_numeric", "lc_time"] {
            // Tessera has no such settings; its formats are C's already.
            let _ = admin.simple(&format!("ALTER DATABASE {database} SET {setting} TO 'C'"));
        }
        let server_version = admin.parameters.get("server_version").cloned().unwrap_or_default();
        Run { target: target.clone(), database, timeout, server_version }
    }

    fn end(self) {
        let mut admin = Conn::connect(&self.target, &self.target.dbname).expect("connecting to drop the database");
        if let Err(e) = admin.simple(&format!("DROP DATABASE {}", self.database)) {
            eprintln!("regress: dropping the database {}: {e}", self.database);
        }
    }

    fn connect(&self) -> Conn {
        Conn::connect(&self.target, &self.database).unwrap_or_else(|e| panic!("connecting to {}: {e}", self.database))
    }

    /// Runs a file's statements on a new session. `check_server` is called when a connection breaks, and panics
    /// if the server is gone.
    fn file(&mut self, items: &[Item], check_server: &mut dyn FnMut()) -> FileOutcome {
        let mut conn = self.connect();
        let mut vars = HashMap::new();
        let mut outcome = FileOutcome { statements: Vec::new(), skipped: 0 };
        for item in items {
            let stmt = match item {
                Item::Meta { text } => {
                    if let Some(args) = text.strip_prefix("\\set ") {
                        psql_set(args, &mut vars);
                    }
                    outcome.skipped += 1;
                    continue;
                }
                Item::Statement(stmt) => stmt,
            };
            let sql = interpolate(&stmt.text, &vars, stmt.standard_strings);
            let ordered = is_ordered(&sql, stmt.standard_strings);
            let blocks = match conn.query(&sql, stmt.copy.as_deref(), self.timeout) {
                Ok(results) => results.into_iter().map(|r| r.into_block(ordered)).collect(),
                Err(failure) => {
                    // The session is unusable (or the server is gone): a new one for what follows.
                    check_server();
                    conn = self.connect();
                    vec![match failure {
                        Failure::Stuck => Block::Timeout,
                        Failure::Lost(reason) => Block::Lost { reason },
                    }]
                }
            };
            outcome.statements.push((stmt.clone(), blocks));
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statements(text: &str) -> Vec<String> {
        split(text)
            .into_iter()
            .map(|item| match item {
                Item::Statement(s) => s.text,
                Item::Meta { text } => format!("META {text}"),
            })
            .collect()
    }

    #[test]
    fn splits_as_psql() {
        let text = "-- a comment; not a statement\nSELECT 'a;b', $$x;y$$, $f$ $$ ; $f$;\n\
                    \\pset null '(null)'\nSELECT E'it\\'s;' ; select 1\\; select (2;3);\n\
                    CREATE RULE r AS ON INSERT TO t DO (a; b);\nselect 1 /* ; /* nested ; */ */ ;\n\
                    COPY t FROM stdin;\n1\t2\n\\.\nSELECT \"a;\"\"b\" \\g\nselect 2";
        assert_eq!(
            statements(text),
            vec![
                "SELECT 'a;b', $$x;y$$, $f$ $$ ; $f$",
                "META \\pset null '(null)'",
                "SELECT E'it\\'s;'",
                "select 1; select (2;3)",
                "CREATE RULE r AS ON INSERT TO t DO (a; b)",
                "select 1",
                "COPY t FROM stdin",
                "SELECT \"a;\"\"b\"",
                "select 2",
            ]
        );
        let Item::Statement(copy) = &split(text)[6] else { panic!() };
        assert_eq!(copy.copy.as_deref(), Some("1\t2\n"));
    }

    #[test]
    fn finds_top_level_order_by() {
        assert!(is_ordered("SELECT a FROM t ORDER BY a", true));
        assert!(!is_ordered("SELECT row_number() OVER (ORDER BY a) FROM t", true));
        assert!(!is_ordered("SELECT 'order by' FROM t -- order by", true));
        assert!(is_ordered("(SELECT 1) UNION (SELECT 2) order\n by 1", true));
    }

    #[test]
    fn interpolates_psql_variables() {
        let mut vars = HashMap::new();
        psql_set("show_data 'select ''x'' from t' :nope", &mut vars);
        psql_set("d 'select'", &mut vars);
        assert_eq!(vars["show_data"], "select 'x' from t:nope");
        assert_eq!(interpolate(":d 1;", &vars, true), "select 1;");
        assert_eq!(
            interpolate("select 1::int, ':show_data', :'show_data'", &vars, true),
            "select 1::int, ':show_data', 'select ''x'' from t:nope'"
        );
    }
}
