//! Read committed writers wait for a row's holder and then work on the newest
//! committed version (PostgreSQL's behaviour), with deadlock detection and a
//! lock timeout; the snapshot-based levels keep failing fast with conflicts.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use tessera_engine::tuple::{Tuple, decode_i64, encode_i64, encode_key, encode_tuple};
use tessera_engine::*;

fn row(id: i64, v: i64) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(&encode_i64(v))])
}
fn key(id: i64) -> Vec<u8> {
    encode_key(&[Some(&encode_i64(id))])
}
fn value(r: &[u8]) -> i64 {
    decode_i64(Tuple::parse(r).unwrap().field(1).unwrap()).unwrap()
}
fn incremented(r: &[u8]) -> Option<Vec<u8>> {
    let t = Tuple::parse(r).unwrap();
    let id = decode_i64(t.field(0).unwrap()).unwrap();
    Some(row(id, value(r) + 1))
}

fn engine(lock_timeout: Duration) -> (Arc<Engine>, Arc<Table>) {
    let mut config = EngineConfig::in_memory();
    config.lock_timeout = lock_timeout;
    let e = Arc::new(Engine::open(config).unwrap());
    let t = e.create_table(TableSpec::new("t", vec![0], IndexKind::Hash)).unwrap();
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    for id in 0..2 {
        tx.insert(&t, row(id, 0)).unwrap();
    }
    tx.commit().unwrap();
    (e, t)
}

fn read(e: &Engine, t: &Arc<Table>, id: i64) -> Option<i64> {
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    tx.get(t, &key(id)).unwrap().map(|r| value(&r))
}

#[test]
fn concurrent_increments_never_conflict_and_never_get_lost() {
    let (e, t) = engine(Duration::from_secs(30));
    let threads = 4;
    let per_thread = 300;
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (e, t) = (e.clone(), t.clone());
            std::thread::spawn(move || {
                for _ in 0..per_thread {
                    let mut tx = e.begin(Isolation::ReadCommitted).unwrap();
                    tx.refresh_snapshot();
                    assert!(tx.update_with(&t, &key(0), incremented).expect("read committed never conflicts"));
                    tx.commit().expect("commit");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(read(&e, &t, 0), Some(threads * per_thread));
}

#[test]
fn snapshot_update_with_still_conflicts_on_a_newer_version() {
    let (e, t) = engine(Duration::from_secs(30));
    let mut old = e.begin(Isolation::Snapshot).unwrap();
    let mut w = e.begin(Isolation::Snapshot).unwrap();
    w.update_with(&t, &key(0), incremented).unwrap();
    w.commit().unwrap();
    let err = old.update_with(&t, &key(0), incremented).unwrap_err();
    assert!(matches!(err, EngineError::Conflict { .. }), "{err}");
}

#[test]
fn a_waiting_writer_sees_the_holders_commit_or_abort() {
    let (e, t) = engine(Duration::from_secs(30));
    for commit in [true, false] {
        let before = read(&e, &t, 1).unwrap();
        let mut holder = e.begin(Isolation::ReadCommitted).unwrap();
        holder.update_with(&t, &key(1), |_| Some(row(1, 100))).unwrap();
        let waiter = {
            let (e, t) = (e.clone(), t.clone());
            std::thread::spawn(move || {
                let mut tx = e.begin(Isolation::ReadCommitted).unwrap();
                tx.refresh_snapshot();
                let seen = std::cell::Cell::new(0);
                tx.update_with(&t, &key(1), |r| {
                    seen.set(value(r));
                    incremented(r)
                })
                .unwrap();
                tx.commit().unwrap();
                seen.get()
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        if commit {
            holder.commit().unwrap();
        } else {
            holder.abort();
        }
        let seen = waiter.join().unwrap();
        let expect = if commit { 100 } else { before };
        assert_eq!(seen, expect, "the waiter works on the newest committed version");
        assert_eq!(read(&e, &t, 1), Some(expect + 1));
    }
}

#[test]
fn deadlocks_are_detected_and_one_side_survives() {
    let (e, t) = engine(Duration::from_secs(30));
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = [(0i64, 1i64), (1, 0)]
        .into_iter()
        .map(|(first, second)| {
            let (e, t, barrier) = (e.clone(), t.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut tx = e.begin(Isolation::ReadCommitted).unwrap();
                tx.update_with(&t, &key(first), incremented).unwrap();
                barrier.wait();
                match tx.update_with(&t, &key(second), incremented) {
                    Ok(_) => {
                        tx.commit().unwrap();
                        true
                    }
                    Err(err) => {
                        assert!(matches!(err, EngineError::Deadlock), "{err}");
                        assert!(err.is_retryable());
                        false
                    }
                }
            })
        })
        .collect();
    let outcomes: Vec<bool> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(outcomes.iter().filter(|ok| **ok).count(), 1, "exactly one side survives: {outcomes:?}");
    assert_eq!(read(&e, &t, 0), Some(1));
    assert_eq!(read(&e, &t, 1), Some(1));
}

#[test]
fn waiting_gives_up_after_the_lock_timeout() {
    let (e, t) = engine(Duration::from_millis(100));
    let mut holder = e.begin(Isolation::ReadCommitted).unwrap();
    holder.update_with(&t, &key(0), incremented).unwrap();
    let mut waiter = e.begin(Isolation::ReadCommitted).unwrap();
    let err = waiter.update_with(&t, &key(0), incremented).unwrap_err();
    assert!(matches!(err, EngineError::LockTimeout(_)), "{err}");
    let err = waiter.delete(&t, &key(0)).unwrap_err();
    assert!(matches!(err, EngineError::LockTimeout(_)), "{err}");
    drop(waiter);
    holder.commit().unwrap();
    assert_eq!(read(&e, &t, 0), Some(1));
}

#[test]
fn read_committed_insert_waits_for_an_uncommitted_insert_of_the_same_key() {
    let (e, t) = engine(Duration::from_secs(30));
    for commit in [false, true] {
        let mut holder = e.begin(Isolation::ReadCommitted).unwrap();
        holder.insert(&t, row(50, 1)).unwrap();
        let waiter = {
            let (e, t) = (e.clone(), t.clone());
            std::thread::spawn(move || {
                let mut tx = e.begin(Isolation::ReadCommitted).unwrap();
                let r = tx.insert(&t, row(50, 2));
                if r.is_ok() {
                    tx.commit().unwrap();
                }
                r
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        if commit {
            holder.commit().unwrap();
            let err = waiter.join().unwrap().unwrap_err();
            assert!(matches!(err, EngineError::UniqueViolation { .. }), "{err}");
            assert_eq!(read(&e, &t, 50), Some(1));
        } else {
            holder.abort();
            waiter.join().unwrap().unwrap();
            assert_eq!(read(&e, &t, 50), Some(2));
            let mut tx = e.begin(Isolation::Snapshot).unwrap();
            tx.delete(&t, &key(50)).unwrap();
            tx.commit().unwrap();
        }
    }
}
