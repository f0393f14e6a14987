//! Crash durability: a writer process is killed with SIGKILL at a random
//! moment and the engine recovered from its files must hold every
//! acknowledged commit, nothing that was never attempted, and no partial
//! transaction.
//!
//! The test re-executes its own binary: the child runs `crash_child_writer`
//! with `TESSERA_CRASH_CHILD_DIR` set, opens a durable engine there and lets
//! several threads commit synchronously while background and explicit
//! checkpoints (with merges and log truncation, thanks to tiny segments and a
//! small checkpoint threshold) run. Each thread owns a disjoint set of keys
//! and announces every transaction on stdout before starting it (`INTENT`)
//! and after its commit returned (`ACK`). So after the kill each thread has at
//! most one transaction in flight, and every key must hold exactly the value
//! of its last acknowledged write, except the keys of an in-flight
//! transaction, which may show all of its writes or none of them.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::Rng;
use tessera_engine::tuple::{Tuple, decode_i64, encode_i64, encode_key, encode_tuple};
use tessera_engine::*;

/// Set in the child: the data directory to write to.
const CHILD_ENV: &str = "TESSERA_CRASH_CHILD_DIR";
/// Set in the child: the round number, which makes written values unique.
const ROUND_ENV: &str = "TESSERA_CRASH_ROUND";
/// The name of the test the child runs.
const CHILD_TEST: &str = "crash_child_writer";
/// Prefix of every protocol line (the test harness may print before it on the same line).
const MARK: &str = "@@crash ";

const THREADS: i64 = 4;
const KEYS_PER_THREAD: i64 = 32;
const ROUNDS: i64 = 5;
/// The child gives up on its own after this long, in case the parent vanished.
const CHILD_LIFETIME: Duration = Duration::from_secs(60);
/// Upper bound for the child to open the engine and report ready.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

fn config(dir: &Path) -> EngineConfig {
    let mut config = EngineConfig::durable(dir);
    config.durability = Durability::Synchronous;
    config.segment_bytes = 16 << 10;
    config.checkpoint_log_bytes = 256 << 10;
    config.checkpoint_merge_files = 2;
    config
}

fn table_spec() -> TableSpec {
    TableSpec::new("t", vec![0], IndexKind::Ordered).with_index(IndexSpec::new(
        "t_owner",
        IndexKind::Hash,
        false,
        vec![1],
    ))
}

fn owner_of(key: i64) -> i64 {
    key / KEYS_PER_THREAD
}

/// Filler derived from the value, so rows vary in size and damage is visible.
fn padding(val: i64) -> Vec<u8> {
    let len = (val.rem_euclid(97) * 3) as usize;
    (0..len).map(|i| (val as usize).wrapping_add(i) as u8).collect()
}

fn make_row(key: i64, val: i64) -> Vec<u8> {
    encode_tuple(&[
        Some(&encode_i64(key)),
        Some(&encode_i64(owner_of(key))),
        Some(&encode_i64(val)),
        Some(&padding(val)),
    ])
}

fn pk(key: i64) -> Vec<u8> {
    encode_key(&[Some(&encode_i64(key))])
}

/// Decodes a row and checks that its fields are consistent with each other.
fn parse_row(bytes: &[u8]) -> (i64, i64) {
    let t = Tuple::parse(bytes).expect("recovered row is well formed");
    let field = |i: usize| decode_i64(t.field(i).expect("non-null field")).expect("i64 field");
    let (key, owner, val) = (field(0), field(1), field(2));
    assert_eq!(owner, owner_of(key), "row {key} has the wrong owner");
    assert_eq!(t.field(3), Some(&padding(val)[..]), "row {key} = {val} has damaged padding");
    (key, val)
}

// ----- the child -----

fn emit(line: &str) {
    let mut out = std::io::stdout().lock();
    out.write_all(format!("{MARK}{line}\n").as_bytes()).expect("writing to the parent");
    out.flush().expect("flushing stdout");
}

/// The writer process. Does nothing unless started by the parent test.
#[test]
fn crash_child_writer() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else { return };
    let round: i64 = std::env::var(ROUND_ENV).expect("round").parse().expect("round number");
    let stop_at = Instant::now() + CHILD_LIFETIME;
    let engine = Engine::open(config(Path::new(&dir))).expect("child: opening the engine");
    let table = match engine.table("t") {
        Some(t) => t,
        None => engine.create_table(table_spec()).expect("child: creating the table"),
    };
    emit("READY");
    std::thread::scope(|s| {
        for thread in 0..THREADS {
            let (engine, table) = (&engine, &table);
            s.spawn(move || writer(engine, table, round, thread, stop_at));
        }
        s.spawn(|| {
            let mut rng = rand::rng();
            while Instant::now() < stop_at {
                std::thread::sleep(Duration::from_millis(rng.random_range(10..60)));
                engine.checkpoint().expect("child: checkpoint");
            }
        });
    });
}

fn writer(engine: &Engine, table: &Arc<Table>, round: i64, thread: i64, stop_at: Instant) {
    let mut rng = rand::rng();
    let keys: Vec<i64> = (0..KEYS_PER_THREAD).map(|i| thread * KEYS_PER_THREAD + i).collect();
    let mut present: HashMap<i64, bool> = HashMap::new();
    {
        let mut tx = engine.begin(Isolation::Snapshot).expect("child: begin");
        for &k in &keys {
            present.insert(k, tx.get(table, &pk(k)).expect("child: get").is_some());
        }
        tx.commit().expect("child: read-only commit");
    }
    let mut counter = 0i64;
    let mut n = 0u64;
    while Instant::now() < stop_at {
        n += 1;
        let count = rng.random_range(1..=3);
        let picked = rand::seq::index::sample(&mut rng, keys.len(), count);
        let mut ops: Vec<(i64, Option<i64>)> = Vec::new();
        for i in picked.iter() {
            let k = keys[i];
            let op = if present[&k] && rng.random_bool(0.3) {
                None
            } else {
                counter += 1;
                Some(round * 1_000_000_000 + thread * 10_000_000 + counter)
            };
            ops.push((k, op));
        }
        let described: Vec<String> = ops
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("P:{k}:{v}"),
                None => format!("D:{k}"),
            })
            .collect();
        emit(&format!("INTENT {thread} {n} {}", described.join(" ")));
        let mut tx = engine.begin(Isolation::Snapshot).expect("child: begin");
        for &(k, v) in &ops {
            match (v, present[&k]) {
                (None, _) => assert!(tx.delete(table, &pk(k)).expect("child: delete"), "key {k} vanished"),
                (Some(v), true) => {
                    assert!(tx.update(table, make_row(k, v)).expect("child: update"), "key {k} vanished")
                }
                (Some(v), false) => tx.insert(table, make_row(k, v)).expect("child: insert"),
            }
        }
        tx.commit().expect("child: commit");
        for &(k, v) in &ops {
            present.insert(k, v.is_some());
        }
        emit(&format!("ACK {thread} {n}"));
    }
}

// ----- the parent -----

/// Collects a pipe into a string on a thread.
fn collect(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = pipe.read_to_string(&mut s);
        s
    })
}

struct Killed {
    /// Protocol lines (marker stripped), in the order the child wrote them.
    lines: Vec<String>,
}

fn fail_child(child: &mut Child, stderr: &Arc<Mutex<Option<JoinHandle<String>>>>, what: &str) -> ! {
    let _ = child.kill();
    let status = child.wait();
    let err = stderr.lock().unwrap().take().map(|h| h.join().unwrap_or_default()).unwrap_or_default();
    panic!("{what}; child status {status:?}; child stderr:\n{err}");
}

/// Runs the child writer on `dir`, kills it with SIGKILL `delay` after it
/// reported ready, and returns everything it printed.
fn run_and_kill(dir: &Path, round: i64, delay: Duration) -> Killed {
    let mut child = Command::new(std::env::current_exe().expect("test binary path"))
        .args(["--exact", CHILD_TEST, "--nocapture", "--include-ignored"])
        .env(CHILD_ENV, dir)
        .env(ROUND_ENV, round.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning the child writer");
    let stderr = Arc::new(Mutex::new(Some(collect(child.stderr.take().expect("stderr")))));
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut input = BufReader::new(stdout);
        loop {
            let mut line = String::new();
            match input.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                // A line cut short by the kill has no newline: it was never fully written.
                Ok(_) if line.ends_with('\n') => {
                    if let Some(at) = line.find(MARK) {
                        let _ = tx.send(line[at + MARK.len()..].trim_end().to_string());
                    }
                }
                Ok(_) => {}
            }
        }
    });

    let mut lines = Vec::new();
    let ready_deadline = Instant::now() + READY_TIMEOUT;
    loop {
        match rx.recv_timeout(ready_deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                let ready = line == "READY";
                lines.push(line);
                if ready {
                    break;
                }
            }
            Err(RecvTimeoutError::Timeout) => fail_child(&mut child, &stderr, "the child never became ready"),
            Err(RecvTimeoutError::Disconnected) => fail_child(&mut child, &stderr, "the child exited before ready"),
        }
    }
    let kill_at = Instant::now() + delay;
    loop {
        let left = kill_at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match rx.recv_timeout(left) {
            Ok(line) => lines.push(line),
            Err(RecvTimeoutError::Timeout) => break,
            Err(RecvTimeoutError::Disconnected) => {
                fail_child(&mut child, &stderr, "the child writer stopped before it was killed")
            }
        }
    }
    child.kill().expect("SIGKILL to the child");
    let status = child.wait().expect("waiting for the child");
    lines.extend(rx.iter());
    reader.join().expect("stdout reader");
    let err = stderr.lock().unwrap().take().map(|h| h.join().unwrap_or_default()).unwrap_or_default();
    assert_eq!(status.signal(), Some(9), "the child should have died from SIGKILL: {status:?}; stderr:\n{err}");
    Killed { lines }
}

/// One transaction as announced by the child: (key, new value or None for a delete).
struct Intent {
    n: u64,
    ops: Vec<(i64, Option<i64>)>,
}

fn parse_op(s: &str) -> (i64, Option<i64>) {
    let parts: Vec<&str> = s.split(':').collect();
    match parts.as_slice() {
        ["P", k, v] => (k.parse().unwrap(), Some(v.parse().unwrap())),
        ["D", k] => (k.parse().unwrap(), None),
        _ => panic!("bad op {s:?}"),
    }
}

/// Per thread: the announced transactions and how many were acknowledged.
fn parse_protocol(lines: &[String]) -> (BTreeMap<i64, Vec<Intent>>, BTreeMap<i64, u64>) {
    let mut intents: BTreeMap<i64, Vec<Intent>> = BTreeMap::new();
    let mut acked: BTreeMap<i64, u64> = BTreeMap::new();
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["READY"] => {}
            ["INTENT", thread, n, ops @ ..] => {
                let (thread, n): (i64, u64) = (thread.parse().unwrap(), n.parse().unwrap());
                let list = intents.entry(thread).or_default();
                assert_eq!(n, list.len() as u64 + 1, "intent numbers of thread {thread} are sequential");
                assert_eq!(acked.get(&thread).copied().unwrap_or(0), n - 1, "thread {thread} has one txn in flight");
                list.push(Intent { n, ops: ops.iter().map(|s| parse_op(s)).collect() });
            }
            ["ACK", thread, n] => {
                let (thread, n): (i64, u64) = (thread.parse().unwrap(), n.parse().unwrap());
                let last = intents.get(&thread).and_then(|l| l.last()).map(|i| i.n);
                assert_eq!(last, Some(n), "ack of thread {thread} matches its last intent");
                acked.insert(thread, n);
            }
            _ => panic!("unexpected protocol line {line:?}"),
        }
    }
    (intents, acked)
}

fn apply(state: &mut BTreeMap<i64, i64>, ops: &[(i64, Option<i64>)]) {
    for &(k, v) in ops {
        match v {
            Some(v) => state.insert(k, v),
            None => state.remove(&k),
        };
    }
}

/// Everything the table holds, checked against its secondary index.
fn read_state(engine: &Engine) -> BTreeMap<i64, i64> {
    let table = engine.table("t").expect("the table survives recovery");
    let mut tx = engine.begin(Isolation::Snapshot).unwrap();
    let rows = tx.scan_collect(&table, PRIMARY, &KeyRange::all()).unwrap();
    let mut state = BTreeMap::new();
    for row in &rows {
        let (k, v) = parse_row(row);
        assert!((0..THREADS * KEYS_PER_THREAD).contains(&k), "key {k} was never written");
        assert!(state.insert(k, v).is_none(), "key {k} returned twice by a scan");
        assert_eq!(tx.get(&table, &pk(k)).unwrap().as_deref(), Some(&row[..]), "point read of key {k}");
    }
    for thread in 0..THREADS {
        let by_owner = tx.scan_collect(&table, 1, &KeyRange::point(encode_key(&[Some(&encode_i64(thread))]))).unwrap();
        let mut found: Vec<(i64, i64)> = by_owner.iter().map(|r| parse_row(r)).collect();
        found.sort_unstable();
        let expected: Vec<(i64, i64)> =
            state.iter().filter(|(k, _)| owner_of(**k) == thread).map(|(k, v)| (*k, *v)).collect();
        assert_eq!(found, expected, "secondary index of owner {thread} disagrees with the primary");
    }
    tx.commit().unwrap();
    state
}

/// Checks the recovered state against the previous state plus this round's
/// acknowledged transactions (plus, all or nothing, each in-flight one) and
/// returns it.
fn verify_round(engine: &Engine, before: &BTreeMap<i64, i64>, killed: &Killed, round: i64) -> BTreeMap<i64, i64> {
    let (intents, acked) = parse_protocol(&killed.lines);
    let mut expected = before.clone();
    let mut in_flight: Vec<(i64, &Intent)> = Vec::new();
    for (&thread, list) in &intents {
        let done = acked.get(&thread).copied().unwrap_or(0);
        for intent in list {
            if intent.n <= done {
                apply(&mut expected, &intent.ops);
            } else {
                in_flight.push((thread, intent));
            }
        }
    }
    let recovered = read_state(engine);
    let mut applied = 0;
    for (thread, intent) in in_flight {
        let none = intent.ops.iter().all(|(k, _)| recovered.get(k) == expected.get(k));
        let all = intent.ops.iter().all(|(k, v)| recovered.get(k) == v.as_ref());
        let shown: Vec<_> = intent.ops.iter().map(|(k, _)| (k, recovered.get(k), expected.get(k))).collect();
        assert!(
            none || all,
            "round {round}: in-flight txn {} of thread {thread} ({:?}) recovered partially: \
             (key, recovered, last acknowledged) = {shown:?}",
            intent.n,
            intent.ops
        );
        if all {
            apply(&mut expected, &intent.ops);
            applied += 1;
        }
    }
    if recovered != expected {
        let diff: Vec<_> = expected
            .keys()
            .chain(recovered.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .filter(|k| recovered.get(k) != expected.get(k))
            .map(|k| (k, expected.get(k), recovered.get(k)))
            .collect();
        panic!("round {round}: recovered state differs: (key, expected, recovered) = {diff:?}");
    }
    let total_acked: u64 = acked.values().sum();
    eprintln!(
        "round {round}: {total_acked} acknowledged txns, {applied} in-flight txns recovered, {} rows",
        recovered.len()
    );
    recovered
}

fn describe_files(dir: &Path) -> String {
    let list = |sub: &str| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir.join(sub))
            .map(|it| it.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        names.sort();
        names
    };
    let log = list("log");
    format!("log segments {} (first {:?}), checkpoint files {:?}", log.len(), log.first(), list("checkpoint"))
}

#[test]
fn acknowledged_commits_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rng();
    let mut state = BTreeMap::new();
    for round in 1..=ROUNDS {
        let delay = Duration::from_millis(rng.random_range(100..600));
        let killed = run_and_kill(dir.path(), round, delay);
        let engine = Engine::open(config(dir.path())).unwrap_or_else(|e| panic!("round {round}: recovery: {e}"));
        state = verify_round(&engine, &state, &killed, round);
        drop(engine);
        eprintln!("round {round}: killed after {delay:?}; {}", describe_files(dir.path()));
    }

    // Recovery is repeatable, and a checkpoint of the recovered state
    // recovers to the same state after a clean shutdown.
    let engine = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_state(&engine), state);
    engine.checkpoint().unwrap();
    engine.close().unwrap();
    drop(engine);
    let engine = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_state(&engine), state);
}
