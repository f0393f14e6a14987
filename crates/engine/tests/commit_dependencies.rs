//! Commit dependencies: with an ordered log, a read-committed writer builds
//! on a commit whose record is appended but not yet durable, instead of
//! waiting for its flush; its own commit becomes durable and visible only
//! after that one, and fails with it.
//!
//! `HeldLog` is an ordered log whose durability the test releases by hand,
//! so every interleaving here is exact.

use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use parking_lot::Mutex;
use tessera_engine::checkpoint::extend_checkpoint;
use tessera_engine::record::{LogEntry, decode};
use tessera_engine::tuple::{Tuple, decode_i64, encode_i64, encode_key, encode_tuple};
use tessera_engine::*;

#[derive(Default)]
struct Held {
    records: Vec<Vec<u8>>,
    /// Tickets up to this one are durable.
    durable: u64,
    failed: bool,
    wakers: Vec<Waker>,
    /// Wake the newest waiter first (a flusher may wake in any order).
    reverse: bool,
    /// Until set, every record is durable at once (the table's DDL).
    holding: bool,
}

/// An ordered log that makes records durable only when the test says so.
#[derive(Clone, Default)]
struct HeldLog(Arc<Mutex<Held>>);

impl HeldLog {
    /// Makes every record up to `ticket` durable and wakes the waiters.
    fn release(&self, ticket: u64) {
        let wakers = {
            let mut h = self.0.lock();
            h.durable = h.durable.max(ticket);
            let mut w = std::mem::take(&mut h.wakers);
            if h.reverse {
                w.reverse();
            }
            w
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    fn fail(&self) {
        let wakers = {
            let mut h = self.0.lock();
            h.failed = true;
            std::mem::take(&mut h.wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    fn appended(&self) -> u64 {
        self.0.lock().records.len() as u64
    }
}

impl CommitLog for HeldLog {
    fn append(&self, record: &[u8]) -> Result<u64, LogError> {
        let mut h = self.0.lock();
        if h.failed {
            return Err(LogError::Failed("held log failed".into()));
        }
        h.records.push(record.to_vec());
        if !h.holding {
            h.durable = h.records.len() as u64;
        }
        Ok(h.records.len() as u64)
    }
    fn wait_durable(&self, ticket: u64) -> Result<(), LogError> {
        loop {
            if let Poll::Ready(r) = self.poll_durable(ticket, &mut Context::from_waker(Waker::noop())) {
                return r;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    fn poll_durable(&self, ticket: u64, cx: &mut Context<'_>) -> Poll<Result<(), LogError>> {
        let mut h = self.0.lock();
        if h.durable >= ticket {
            Poll::Ready(Ok(()))
        } else if h.failed {
            Poll::Ready(Err(LogError::Failed("held log failed".into())))
        } else {
            h.wakers.push(cx.waker().clone());
            Poll::Pending
        }
    }
    fn ordered(&self) -> bool {
        true
    }
}

fn engine(log: &HeldLog) -> (Engine, Arc<Table>) {
    let source = {
        let log = log.clone();
        CommitLogSource(Arc::new(move |_| Box::new(log.clone()) as Box<dyn CommitLog>))
    };
    let e = Engine::open(EngineConfig { commit_log: Some(source), ..EngineConfig::in_memory() }).unwrap();
    let t = e.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap();
    log.0.lock().holding = true;
    (e, t)
}

fn row(id: i64, v: i64) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(&encode_i64(v))])
}
fn key(id: i64) -> Vec<u8> {
    encode_key(&[Some(&encode_i64(id))])
}
fn value(bytes: &[u8]) -> i64 {
    decode_i64(Tuple::parse(bytes).unwrap().field(1).unwrap()).unwrap()
}

/// The value a new snapshot reads.
fn read(e: &Engine, t: &Arc<Table>, id: i64) -> Option<i64> {
    let mut r = e.begin(Isolation::Snapshot).unwrap();
    let v = r.get(t, &key(id)).unwrap().map(|b| value(&b));
    r.commit().unwrap();
    v
}

/// Starts a read-committed transaction that adds `delta` to row `id`
/// without ever waiting for another writer (a wait would be `WouldBlock`).
fn add(e: &Engine, t: &Arc<Table>, id: i64, delta: i64) -> Result<(PendingCommit, i64)> {
    let mut tx = e.begin(Isolation::ReadCommitted).unwrap();
    tx.set_wait(false);
    let mut seen = 0;
    assert!(tx.update_with(t, &key(id), |old| {
        seen = value(old);
        Some(row(id, seen + delta))
    })?);
    match tx.commit_start()? {
        CommitStart::Pending(p) => Ok((p, seen)),
        CommitStart::Done(_) => panic!("a synchronous commit waits for the held log"),
    }
}

struct Unpark(std::thread::Thread);
impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park_timeout(Duration::from_millis(20));
    }
}

/// Polls once: whether the future is finished.
fn ready<F: std::future::Future + Unpin>(fut: &mut F) -> Option<F::Output> {
    match std::pin::Pin::new(fut).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

fn seeded(log: &HeldLog) -> (Engine, Arc<Table>) {
    let (e, t) = engine(log);
    let mut tx = e.begin(Isolation::ReadCommitted).unwrap();
    tx.insert(&t, row(1, 100)).unwrap();
    tx.insert(&t, row(2, 200)).unwrap();
    let CommitStart::Pending(p) = tx.commit_start().unwrap() else { panic!() };
    log.release(log.appended());
    block_on(p).unwrap();
    (e, t)
}

#[test]
fn writers_of_a_hot_row_build_on_logged_commits_and_become_visible_in_order() {
    let log = HeldLog::default();
    let (e, t) = seeded(&log);
    let (mut a, seen_a) = add(&e, &t, 1, 1).unwrap();
    let ticket_a = log.appended();
    // Without the dependency this would be WouldBlock: A holds the row
    // until its record is durable.
    let (mut b, seen_b) = add(&e, &t, 1, 10).unwrap();
    let (mut c, seen_c) = add(&e, &t, 1, 100).unwrap();
    assert_eq!((seen_a, seen_b, seen_c), (100, 101, 111));
    // Nothing is visible before it is durable.
    assert_eq!(read(&e, &t, 1), Some(100));
    assert!(ready(&mut a).is_none() && ready(&mut b).is_none());

    log.release(ticket_a);
    assert!(block_on(&mut a).unwrap().wrote);
    assert_eq!(read(&e, &t, 1), Some(101));
    assert!(ready(&mut b).is_none() && ready(&mut c).is_none());

    // B and C become durable together; C's completion runs first.
    log.0.lock().reverse = true;
    log.release(log.appended());
    block_on(&mut c).unwrap();
    block_on(&mut b).unwrap();
    assert_eq!(read(&e, &t, 1), Some(211));
    // Each record replaced the version its predecessor made, with that
    // commit's timestamp (a checkpoint built from the records needs it).
    let records = log.0.lock().records.clone();
    let mut ts_of_prev = None;
    for r in &records[records.len() - 3..] {
        let LogEntry::Commit { ts, writes } = decode(r, 0).unwrap() else { panic!("a commit record") };
        assert_eq!(writes.len(), 1);
        if let Some(prev) = ts_of_prev {
            assert_eq!(writes[0].prev_ts, prev, "prev_ts names the version built on");
        }
        ts_of_prev = Some(ts);
    }
    let dir = tempfile::tempdir().unwrap();
    extend_checkpoint(&dir.path().join("s"), records, 8).unwrap();
    let replica = Engine::open(EngineConfig::in_memory()).unwrap();
    replica.restore_checkpoint(&dir.path().join("s")).unwrap();
    let rt = replica.table("t").unwrap();
    assert_eq!((read(&replica, &rt, 1), read(&replica, &rt, 2)), (Some(211), Some(200)));
}

#[test]
fn a_dependent_that_rolls_back_leaves_the_logged_commit_whole() {
    let log = HeldLog::default();
    let (e, t) = seeded(&log);
    let (a, _) = add(&e, &t, 1, 1).unwrap();
    let mut b = e.begin(Isolation::ReadCommitted).unwrap();
    b.set_wait(false);
    assert!(b.update_with(&t, &key(1), |old| Some(row(1, value(old) * 2))).unwrap());
    b.abort();
    let (c, seen) = add(&e, &t, 1, 5).unwrap();
    assert_eq!(seen, 101, "C builds on A, not on B's undone write");
    log.release(log.appended());
    block_on(a).unwrap();
    block_on(c).unwrap();
    assert_eq!(read(&e, &t, 1), Some(106));
}

#[test]
fn snapshot_writers_still_conflict_with_a_logged_commit() {
    let log = HeldLog::default();
    let (e, t) = seeded(&log);
    let (a, _) = add(&e, &t, 1, 1).unwrap();
    let mut s = e.begin(Isolation::Snapshot).unwrap();
    let err = s.update(&t, row(1, 7)).unwrap_err();
    assert!(matches!(err, EngineError::Conflict { .. }), "{err:?}");
    drop(s);
    log.release(log.appended());
    block_on(a).unwrap();
}

#[test]
fn when_the_log_fails_the_dependents_fail_with_it_and_nothing_is_lost_or_invented() {
    let log = HeldLog::default();
    let (e, t) = seeded(&log);
    let (a, _) = add(&e, &t, 1, 1).unwrap();
    let (b, _) = add(&e, &t, 1, 10).unwrap();
    // C builds on B but has not committed when the log fails.
    let mut c = e.begin(Isolation::ReadCommitted).unwrap();
    c.set_wait(false);
    assert!(c.update_with(&t, &key(1), |old| Some(row(1, value(old) + 100))).unwrap());
    log.fail();
    assert!(matches!(block_on(b), Err(EngineError::CommitFailed(_))));
    assert!(matches!(block_on(a), Err(EngineError::CommitFailed(_))));
    assert!(matches!(c.commit(), Err(EngineError::CommitFailed(_))));
    assert!(e.is_read_only());
    // Readers see the last durable state, and writers get a clear refusal.
    assert_eq!(read(&e, &t, 1), Some(100));
    assert_eq!(read(&e, &t, 2), Some(200));
    let mut d = e.begin(Isolation::ReadCommitted).unwrap();
    assert!(matches!(d.update_with(&t, &key(1), |_| Some(row(1, 0))), Err(EngineError::ReadOnly(_))));
}

#[test]
fn without_an_ordered_log_writers_wait_for_durability() {
    /// The same log, but not ordered (as a replicated one).
    #[derive(Clone, Default)]
    struct Unordered(HeldLog);
    impl CommitLog for Unordered {
        fn append(&self, record: &[u8]) -> Result<u64, LogError> {
            self.0.append(record)
        }
        fn wait_durable(&self, ticket: u64) -> Result<(), LogError> {
            self.0.wait_durable(ticket)
        }
        fn poll_durable(&self, ticket: u64, cx: &mut Context<'_>) -> Poll<Result<(), LogError>> {
            self.0.poll_durable(ticket, cx)
        }
    }
    let log = Unordered::default();
    let source = {
        let log = log.clone();
        CommitLogSource(Arc::new(move |_| Box::new(log.clone()) as Box<dyn CommitLog>))
    };
    let e = Engine::open(EngineConfig { commit_log: Some(source), ..EngineConfig::in_memory() }).unwrap();
    let t = e.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap();
    log.0.0.lock().holding = true;
    let mut tx = e.begin(Isolation::ReadCommitted).unwrap();
    tx.insert(&t, row(1, 100)).unwrap();
    let CommitStart::Pending(p) = tx.commit_start().unwrap() else { panic!() };
    log.0.release(log.0.appended());
    block_on(p).unwrap();

    let (a, _) = add(&e, &t, 1, 1).unwrap();
    let err = add(&e, &t, 1, 10).err().expect("must wait for A");
    assert!(matches!(err, EngineError::WouldBlock { .. }), "{err:?}");
    log.0.release(log.0.appended());
    block_on(a).unwrap();
    let (b, seen) = add(&e, &t, 1, 10).unwrap();
    assert_eq!(seen, 101);
    log.0.release(log.0.appended());
    block_on(b).unwrap();
}

#[test]
fn concurrent_increments_on_a_durable_engine_are_all_kept_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        let e = Engine::open(EngineConfig::durable(dir.path())).unwrap();
        let t = match e.table("t") {
            Some(t) => t,
            None => e.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap(),
        };
        (e, t)
    };
    let (e, t) = open();
    let mut tx = e.begin(Isolation::ReadCommitted).unwrap();
    tx.insert(&t, row(1, 0)).unwrap();
    tx.commit().unwrap();
    let (threads, each) = (4, 200);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..each {
                    let mut tx = e.begin(Isolation::ReadCommitted).unwrap();
                    assert!(tx.update_with(&t, &key(1), |old| Some(row(1, value(old) + 1))).unwrap());
                    tx.commit().unwrap();
                }
            });
        }
    });
    assert_eq!(read(&e, &t, 1), Some(threads * each));
    e.close().unwrap();
    drop((e, t));
    let (e, t) = open();
    assert_eq!(read(&e, &t, 1), Some(threads * each));
}
