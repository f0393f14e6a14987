//! A full disk under the log: the failing commit is rolled back and
//! reported, the engine turns read-only (reads keep working and see only
//! committed data), and a restart recovers exactly the commits that
//! succeeded, after which writes work again.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tessera_engine::tuple::{Tuple, decode_i64, encode_i64, encode_key, encode_tuple};
use tessera_engine::*;
use tessera_log::{ENOSPC, FaultInjector, LogError};

const NO_SPACE: &str = "No space left on device";

fn config(dir: &Path) -> EngineConfig {
    let mut config = EngineConfig::durable(dir);
    config.durability = Durability::Synchronous;
    config.checkpoint_log_bytes = 0;
    config
}

fn faulty_config(dir: &Path) -> (EngineConfig, Arc<FaultInjector>) {
    let faults = Arc::new(FaultInjector::new());
    let mut config = config(dir);
    config.log_faults = Some(faults.clone());
    (config, faults)
}

fn row(id: i64, v: &str) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(v.as_bytes())])
}

fn key(id: i64) -> Vec<u8> {
    encode_key(&[Some(&encode_i64(id))])
}

fn spec(name: &str) -> TableSpec {
    TableSpec::new(name, vec![0], IndexKind::Ordered)
}

fn insert(e: &Engine, t: &Arc<Table>, id: i64, v: &str) {
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    tx.insert(t, row(id, v)).unwrap();
    tx.commit().unwrap();
}

fn contents(e: &Engine) -> Vec<(i64, String)> {
    let t = e.table("t").expect("table t exists");
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    let rows = tx.scan_collect(&t, PRIMARY, &KeyRange::all()).unwrap();
    tx.commit().unwrap();
    rows.iter()
        .map(|r| {
            let t = Tuple::parse(r).unwrap();
            (decode_i64(t.field(0).unwrap()).unwrap(), String::from_utf8(t.field(1).unwrap().to_vec()).unwrap())
        })
        .collect()
}

fn rows(ids: impl IntoIterator<Item = i64>) -> Vec<(i64, String)> {
    ids.into_iter().map(|i| (i, format!("v{i}"))).collect()
}

fn assert_disk_full_commit_error(err: &EngineError) {
    match err {
        EngineError::CommitFailed(cause) => {
            assert!(
                cause.is_disk_full() || matches!(cause, LogError::Failed(_)),
                "the cause should be the full disk: {cause:?}"
            );
        }
        other => panic!("expected CommitFailed, got {other:?}"),
    }
    assert!(err.to_string().contains(NO_SPACE), "the message should say the disk is full: {err}");
    assert_eq!(err.class(), ErrorClass::Unavailable);
}

fn assert_read_only_error<T: std::fmt::Debug>(result: Result<T>) {
    match result {
        Err(err @ EngineError::ReadOnly(_)) => {
            assert!(err.to_string().contains(NO_SPACE), "read-only error should give the cause: {err}");
            assert_eq!(err.class(), ErrorClass::Unavailable);
        }
        other => panic!("expected ReadOnly, got {other:?}"),
    }
}

/// Ten committed rows, then `arm` makes the disk "full"; the next commit
/// (an insert, an update and a delete) must fail and change nothing.
fn single_failure(arm: impl FnOnce(&FaultInjector)) {
    let dir = tempfile::tempdir().unwrap();
    let (cfg, faults) = faulty_config(dir.path());
    let e = Engine::open(cfg).unwrap();
    let t = e.create_table(spec("t")).unwrap();
    for i in 0..10 {
        insert(&e, &t, i, &format!("v{i}"));
    }
    assert!(!e.is_read_only());

    arm(&faults);
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    tx.insert(&t, row(10, "v10")).unwrap();
    assert!(tx.update(&t, row(0, "changed")).unwrap());
    assert!(tx.delete(&t, &key(1)).unwrap());
    let err = tx.commit().unwrap_err();
    assert_disk_full_commit_error(&err);
    assert!(e.is_read_only());

    // Every kind of write is refused, before it touches anything.
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    assert_read_only_error(tx.insert(&t, row(11, "v11")));
    assert_read_only_error(tx.update(&t, row(2, "changed")));
    assert_read_only_error(tx.delete(&t, &key(3)));
    assert_read_only_error(tx.put(&t, row(4, "changed"), PutCondition::Always));
    assert!(!tx.commit().unwrap().wrote);
    assert_read_only_error(e.create_table(spec("u")).map(|t| t.name()));
    assert_read_only_error(e.drop_table("t"));
    assert_read_only_error(e.create_index("t", IndexSpec::new("t_v", IndexKind::Hash, false, vec![1])));
    // Whatever a flush or a checkpoint does now, it must not make the
    // failed commit durable (checked after the restart below).
    let _ = e.flush();
    let _ = e.checkpoint();

    // Reads work and see exactly the committed rows, at every isolation level.
    assert_eq!(contents(&e), rows(0..10));
    for isolation in [Isolation::ReadCommitted, Isolation::Snapshot, Isolation::RepeatableRead, Isolation::Serializable]
    {
        let mut tx = e.begin(isolation).unwrap();
        assert_eq!(tx.get(&t, &key(0)).unwrap(), Some(row(0, "v0")));
        assert_eq!(tx.get(&t, &key(1)).unwrap(), Some(row(1, "v1")));
        assert_eq!(tx.get(&t, &key(10)).unwrap(), None);
        assert_eq!(tx.scan_collect(&t, PRIMARY, &KeyRange::all()).unwrap().len(), 10);
        tx.commit().unwrap();
    }
    assert!(e.is_read_only());
    drop(e);

    // A restart on a healthy disk recovers exactly the committed rows.
    let e = Engine::open(config(dir.path())).unwrap();
    assert!(!e.is_read_only());
    assert_eq!(contents(&e), rows(0..10));
    assert!(e.table("u").is_none());
    let t = e.table("t").unwrap();
    for i in 10..15 {
        insert(&e, &t, i, &format!("v{i}"));
    }
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    assert!(tx.update(&t, row(0, "v0")).unwrap());
    assert!(tx.delete(&t, &key(14)).unwrap());
    tx.commit().unwrap();
    e.checkpoint().unwrap();
    insert(&e, &t, 20, "v20");
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(contents(&e), rows((0..14).chain([20])));
}

#[test]
fn failed_fsync_with_enospc_makes_the_engine_read_only() {
    single_failure(|f| f.fail_syncs(ENOSPC));
}

#[test]
fn failed_write_with_enospc_makes_the_engine_read_only() {
    single_failure(|f| f.fail_writes(ENOSPC));
}

/// The disk fills up during DDL: the table is not created, here or after a restart.
fn ddl_failure(arm: impl FnOnce(&FaultInjector)) {
    let dir = tempfile::tempdir().unwrap();
    let (cfg, faults) = faulty_config(dir.path());
    let e = Engine::open(cfg).unwrap();
    let t = e.create_table(spec("t")).unwrap();
    insert(&e, &t, 0, "v0");
    arm(&faults);
    let err = e.create_table(spec("u")).map(|t| t.name()).unwrap_err();
    assert_disk_full_commit_error(&err);
    assert!(e.is_read_only());
    assert!(e.table("u").is_none());
    assert_eq!(contents(&e), rows([0]));
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert!(e.table("u").is_none());
    assert_eq!(contents(&e), rows([0]));
    e.create_table(spec("u")).unwrap();
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert!(e.table("u").is_some());
}

#[test]
fn disk_full_during_ddl() {
    ddl_failure(|f| f.fail_syncs(ENOSPC));
    ddl_failure(|f| f.fail_writes(ENOSPC));
}

/// Several threads commit while the disk fills up: every commit reported
/// successful survives, every failed one is gone, in memory and on disk.
fn concurrent_failure(segment_bytes: u64, arm: impl FnOnce(&FaultInjector)) {
    const THREADS: i64 = 4;
    const ARM_AFTER: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let (mut cfg, faults) = faulty_config(dir.path());
    cfg.segment_bytes = segment_bytes;
    let e = Engine::open(cfg).unwrap();
    let t = e.create_table(spec("t")).unwrap();
    let committed = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (ok, failed) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|thread| {
                let (e, t, committed, stop) = (&e, &t, &committed, &stop);
                s.spawn(move || {
                    let mut ok = Vec::new();
                    let mut failed = Vec::new();
                    for n in 0.. {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let id = thread * 1_000_000 + n;
                        let mut tx = e.begin(Isolation::Snapshot).unwrap();
                        match tx.insert(t, row(id, &format!("v{id}"))) {
                            Ok(()) => {}
                            Err(err) => {
                                assert_read_only_error::<()>(Err(err));
                                break;
                            }
                        }
                        match tx.commit() {
                            Ok(_) => {
                                ok.push(id);
                                committed.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(err) => {
                                assert_disk_full_commit_error(&err);
                                failed.push(id);
                                break;
                            }
                        }
                    }
                    (ok, failed)
                })
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        while committed.load(Ordering::Relaxed) < ARM_AFTER && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        arm(&faults);
        // Bound the run even if the fault were never hit.
        let deadline = Instant::now() + Duration::from_secs(60);
        while !handles.iter().all(|h| h.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, Ordering::Relaxed);
        let mut ok = BTreeSet::new();
        let mut failed = BTreeSet::new();
        for h in handles {
            let (o, f) = h.join().unwrap();
            ok.extend(o);
            failed.extend(f);
        }
        (ok, failed)
    });
    assert!(ok.len() >= ARM_AFTER, "{} commits succeeded", ok.len());
    assert!(!failed.is_empty(), "at least one commit met the full disk");
    assert!(e.is_read_only());
    let expected: Vec<(i64, String)> = ok.iter().map(|&i| (i, format!("v{i}"))).collect();
    assert_eq!(contents(&e), expected, "in memory: exactly the successful commits");
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(contents(&e), expected, "after restart: exactly the successful commits");
    let t = e.table("t").unwrap();
    insert(&e, &t, -1, "v-1");
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(contents(&e).len(), expected.len() + 1);
}

#[test]
fn concurrent_commits_when_fsync_fails() {
    concurrent_failure(64 << 20, |f| f.fail_syncs(ENOSPC));
}

#[test]
fn concurrent_commits_when_write_fails() {
    concurrent_failure(64 << 20, |f| f.fail_writes(ENOSPC));
}

/// With tiny segments the failure often hits a batch that rolls to a new
/// segment (the fsync sealing the old one, or the new segment's creation).
#[test]
fn concurrent_commits_when_the_disk_fills_during_segment_rolls() {
    concurrent_failure(2 << 10, |f| f.fail_syncs(ENOSPC));
    concurrent_failure(2 << 10, |f| f.fail_writes(ENOSPC));
}
