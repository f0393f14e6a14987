//! Writers at snapshot isolation, repeatable read and serializable wait for
//! a row's holder, as PostgreSQL's do: the waiter fails with a conflict only
//! if the holder commits, and goes on if it aborts. (Failing at once would
//! let writers of one hot row abort each other over and over, none of them
//! committing: pgbench's TPC-B at scale 1 and SERIALIZABLE did just that.)
//!
//! Each test runs the waiter on a thread of its own and checks that it is
//! still waiting before the holder ends.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use tessera_engine::tuple::{Tuple, decode_i64, encode_i64, encode_key, encode_tuple};
use tessera_engine::*;

const SNAPSHOT_LEVELS: [Isolation; 3] = [Isolation::Snapshot, Isolation::RepeatableRead, Isolation::Serializable];

fn row(id: i64, v: i64) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(&encode_i64(v))])
}

fn key(id: i64) -> Vec<u8> {
    encode_key(&[Some(&encode_i64(id))])
}

fn value(e: &Engine, t: &Arc<Table>, id: i64) -> Option<i64> {
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    let r = tx.get(t, &key(id)).unwrap();
    tx.commit().unwrap();
    r.map(|r| decode_i64(Tuple::parse(&r).unwrap().field(1).unwrap()).unwrap())
}

fn setup() -> (Engine, Arc<Table>) {
    let e = Engine::open(EngineConfig::in_memory()).unwrap();
    let t = e.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap();
    let mut tx = e.begin(Isolation::Serializable).unwrap();
    tx.insert(&t, row(1, 100)).unwrap();
    tx.insert(&t, row(2, 200)).unwrap();
    tx.commit().unwrap();
    (e, t)
}

/// A waiter begins, then a holder that does `hold`; the waiter's `write`
/// runs on another thread while the holder holds the row. Checks the waiter
/// is blocked, ends the holder with `end`, and returns what the waiter's
/// write came to (the waiter committed if it succeeded).
fn race(
    e: &Engine,
    t: &Arc<Table>,
    level: Isolation,
    hold: impl FnOnce(&mut Transaction, &Arc<Table>) -> Result<(), EngineError>,
    write: impl FnOnce(&mut Transaction, &Arc<Table>) -> Result<(), EngineError> + Send,
    end: impl FnOnce(Transaction),
) -> Result<(), EngineError> {
    let mut waiter = e.begin(level).unwrap();
    let mut holder = e.begin(level).unwrap();
    hold(&mut holder, t).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(move || {
            let r = write(&mut waiter, t).and_then(|()| waiter.commit().map(drop));
            tx.send(r).unwrap();
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(150)).is_err(),
            "the second writer went on while the first held the row"
        );
        // The holder is untouched by the wait.
        holder.get(t, &key(2)).unwrap();
        end(holder);
        rx.recv_timeout(Duration::from_secs(10)).expect("the waiter never finished")
    })
}

fn commit(txn: Transaction) {
    txn.commit().unwrap();
}

#[test]
fn an_update_waits_and_fails_when_the_holder_commits() {
    for level in SNAPSHOT_LEVELS {
        let (e, t) = setup();
        let r = race(
            &e,
            &t,
            level,
            |h, t| h.update(t, row(1, 111)).map(drop),
            |w, t| w.update(t, row(1, 122)).map(drop),
            commit,
        );
        assert!(matches!(r, Err(EngineError::Conflict { reason: ConflictReason::WriteWrite })), "{level:?}: {r:?}");
        assert_eq!(value(&e, &t, 1), Some(111), "{level:?}");
    }
}

#[test]
fn an_update_waits_and_goes_on_when_the_holder_aborts() {
    for level in SNAPSHOT_LEVELS {
        let (e, t) = setup();
        let r = race(
            &e,
            &t,
            level,
            |h, t| h.update(t, row(1, 111)).map(drop),
            |w, t| w.update_with(t, &key(1), |_| Some(row(1, 122))).map(drop),
            Transaction::abort,
        );
        assert!(r.is_ok(), "{level:?}: {r:?}");
        assert_eq!(value(&e, &t, 1), Some(122), "{level:?}");
    }
}

#[test]
fn a_delete_waits_for_an_update_that_aborts() {
    for level in SNAPSHOT_LEVELS {
        let (e, t) = setup();
        let r = race(
            &e,
            &t,
            level,
            |h, t| h.update(t, row(2, 222)).map(drop),
            |w, t| w.delete(t, &key(2)).map(drop),
            Transaction::abort,
        );
        assert!(r.is_ok(), "{level:?}: {r:?}");
        assert_eq!(value(&e, &t, 2), None, "{level:?}");
    }
}

#[test]
fn an_insert_of_a_key_being_inserted_waits_for_the_first_inserter() {
    for level in SNAPSHOT_LEVELS {
        // The first inserter aborts: the key is free.
        let (e, t) = setup();
        let r = race(&e, &t, level, |h, t| h.insert(t, row(3, 1)), |w, t| w.insert(t, row(3, 2)), Transaction::abort);
        assert!(r.is_ok(), "{level:?}: {r:?}");
        assert_eq!(value(&e, &t, 3), Some(2), "{level:?}");
        // The first inserter commits after the waiter's snapshot: a
        // serialization failure, not a unique violation.
        let r = race(&e, &t, level, |h, t| h.insert(t, row(4, 1)), |w, t| w.insert(t, row(4, 2)), commit);
        assert!(matches!(r, Err(EngineError::Conflict { .. })), "{level:?}: {r:?}");
        assert_eq!(value(&e, &t, 4), Some(1), "{level:?}");
    }
}

/// Two writers waiting for each other: one of them (the one with the
/// larger transaction id) gives up with a retryable deadlock, and the
/// other goes on once it has rolled back.
#[test]
fn crossed_waits_end_in_a_deadlock_for_one_of_them() {
    for level in SNAPSHOT_LEVELS {
        let (e, t) = setup();
        let mut a = e.begin(level).unwrap();
        let mut b = e.begin(level).unwrap();
        a.update(&t, row(1, 11)).unwrap();
        b.update(&t, row(2, 22)).unwrap();
        // Each crosses over to the other's row and commits, or rolls back.
        let cross = |mut txn: Transaction, id: i64, v: i64| match txn.update(&t, row(id, v)) {
            Ok(_) => txn.commit().map(drop),
            Err(e) => {
                txn.abort();
                Err(e)
            }
        };
        let (tx, rx) = mpsc::channel();
        let (ra, rb) = std::thread::scope(|s| {
            s.spawn(|| tx.send(cross(a, 2, 12)).unwrap());
            assert!(rx.recv_timeout(Duration::from_millis(150)).is_err(), "{level:?}: the first did not wait");
            let rb = cross(b, 1, 21);
            (rx.recv_timeout(Duration::from_secs(10)).expect("the first never finished"), rb)
        });
        let expected = match (&ra, &rb) {
            (Ok(()), Err(EngineError::Deadlock)) => (11, 12),
            (Err(EngineError::Deadlock), Ok(())) => (21, 22),
            _ => panic!("{level:?}: expected one deadlock and one commit, got {ra:?} and {rb:?}"),
        };
        assert_eq!(EngineError::Deadlock.class(), ErrorClass::Retryable);
        assert_eq!((value(&e, &t, 1), value(&e, &t, 2)), (Some(expected.0), Some(expected.1)), "{level:?}");
    }
}
