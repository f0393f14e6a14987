//! The asynchronous commit: `commit_start` and `PendingCommit`.

use std::sync::Arc;
use std::sync::mpsc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use tessera_engine::tuple::{encode_i64, encode_key, encode_tuple};
use tessera_engine::*;

fn row(id: i64, v: &str) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(v.as_bytes())])
}
fn key(id: i64) -> Vec<u8> {
    encode_key(&[Some(&encode_i64(id))])
}

struct Unpark(std::thread::Thread);
impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// A minimal executor: polls the future on this thread, parking between wakes.
fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park_timeout(Duration::from_millis(50));
    }
}

fn durable(dir: &std::path::Path) -> (Engine, Arc<Table>) {
    let e = Engine::open(EngineConfig::durable(dir)).unwrap();
    let t = match e.table("t") {
        Some(t) => t,
        None => e.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap(),
    };
    (e, t)
}

fn read(e: &Engine, t: &Arc<Table>, id: i64) -> Option<Vec<u8>> {
    let mut r = e.begin(Isolation::Snapshot).unwrap();
    let v = r.get(t, &key(id)).unwrap();
    r.commit().unwrap();
    v
}

fn start(e: &Engine, t: &Arc<Table>, id: i64, v: &str) -> CommitStart {
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    tx.insert(t, row(id, v)).unwrap();
    tx.commit_start().unwrap()
}

#[test]
fn a_durable_commit_is_pending_until_the_log_has_it_then_visible() {
    let dir = tempfile::tempdir().unwrap();
    let (e, t) = durable(dir.path());
    let CommitStart::Pending(p) = start(&e, &t, 1, "a") else { panic!("a durable write must wait for the log") };
    let info = block_on(p).unwrap();
    assert!(info.wrote);
    assert_eq!(read(&e, &t, 1), Some(row(1, "a")));
}

#[test]
fn read_only_and_lazy_commits_finish_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (e, t) = durable(dir.path());
    let r = e.begin(Isolation::Snapshot).unwrap();
    assert!(matches!(r.commit_start().unwrap(), CommitStart::Done(CommitInfo { wrote: false, .. })));
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    tx.set_durability(Durability::Lazy);
    tx.insert(&t, row(2, "lazy")).unwrap();
    match tx.commit_start().unwrap() {
        CommitStart::Done(info) => assert!(info.wrote),
        CommitStart::Pending(p) => assert!(block_on(p).unwrap().wrote),
    }
    assert_eq!(read(&e, &t, 2), Some(row(2, "lazy")));
}

/// The watermark must not depend on the pending commit's task being polled:
/// a later synchronous commit (as a DDL statement or a blocked thread would
/// make) finishes although nobody ever polls the earlier pending commit.
#[test]
fn the_watermark_moves_on_without_polling_pending_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (e, t) = durable(dir.path());
    let e = Arc::new(e);
    let CommitStart::Pending(unpolled) = start(&e, &t, 1, "first") else { panic!("pending") };
    let (tx, rx) = mpsc::channel();
    let (e2, t2) = (e.clone(), t.clone());
    std::thread::spawn(move || {
        let mut w = e2.begin(Isolation::Snapshot).unwrap();
        w.insert(&t2, row(2, "second")).unwrap();
        tx.send(w.commit().map(|i| i.wrote)).unwrap();
    });
    let second = rx.recv_timeout(Duration::from_secs(20)).expect("a later commit waited for an unpolled one");
    assert!(second.unwrap());
    // Both are visible to a new snapshot, the unpolled one included.
    assert_eq!(read(&e, &t, 1), Some(row(1, "first")));
    assert_eq!(read(&e, &t, 2), Some(row(2, "second")));
    assert!(block_on(unpolled).unwrap().wrote);
}

#[test]
fn dropping_a_pending_commit_still_commits_durably() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (e, t) = durable(dir.path());
        let CommitStart::Pending(p) = start(&e, &t, 7, "kept") else { panic!("pending") };
        drop(p);
        assert_eq!(read(&e, &t, 7), Some(row(7, "kept")));
        e.close().unwrap();
    }
    let (e, t) = durable(dir.path());
    assert_eq!(read(&e, &t, 7), Some(row(7, "kept")));
}

/// Many tasks awaiting their commits share fsyncs, and every row arrives.
#[test]
fn concurrent_pending_commits_share_fsyncs() {
    let dir = tempfile::tempdir().unwrap();
    let (e, t) = durable(dir.path());
    let e = Arc::new(e);
    let before = e.log().unwrap().stats().fsyncs;
    let threads: Vec<_> = (0..8)
        .map(|n| {
            let (e, t) = (e.clone(), t.clone());
            std::thread::spawn(move || {
                for i in 0..100 {
                    let id = n * 1000 + i;
                    match start(&e, &t, id, "x") {
                        CommitStart::Pending(p) => assert!(block_on(p).unwrap().wrote),
                        CommitStart::Done(_) => panic!("a durable write must wait for the log"),
                    }
                    // Read your own write at once.
                    assert_eq!(read(&e, &t, id), Some(row(id, "x")));
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    let fsyncs = e.log().unwrap().stats().fsyncs - before;
    assert!(fsyncs < 800, "{fsyncs} fsyncs for 800 commits from 8 threads: no group commit");
    let mut r = e.begin(Isolation::Snapshot).unwrap();
    assert_eq!(r.scan_collect(&t, PRIMARY, &KeyRange::all()).unwrap().len(), 800);
}

/// Commits rows `ids` with value "0".
fn seed(e: &Engine, t: &Arc<Table>, ids: &[i64]) {
    let mut tx = e.begin(Isolation::ReadCommitted).unwrap();
    for &id in ids {
        tx.insert(t, row(id, "0")).unwrap();
    }
    tx.commit().unwrap();
}

/// A read-committed write of row `id` (the kind that waits for a holder).
fn set(tx: &mut Transaction, t: &Arc<Table>, id: i64, v: &str) -> Result<bool> {
    tx.update_with(t, &key(id), |_| Some(row(id, v)))
}

fn holder_of(r: Result<bool>) -> mvcc::TxnId {
    match r {
        Err(EngineError::WouldBlock { holder }) => holder,
        other => panic!("expected WouldBlock, got {other:?}"),
    }
}

/// Polls a future once with a waker that does nothing.
fn poll_once<F: std::future::Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    std::pin::Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
}

/// A read-committed writer that may not block gets the holder's id, awaits
/// its end without a thread, and then writes on the newest version.
#[test]
fn a_row_wait_ends_when_the_holder_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (e, t) = durable(dir.path());
    let e = Arc::new(e);
    seed(&e, &t, &[1]);

    let mut a = e.begin(Isolation::ReadCommitted).unwrap();
    assert!(set(&mut a, &t, 1, "a").unwrap());
    let mut b = e.begin(Isolation::ReadCommitted).unwrap();
    b.set_wait(false);
    let holder = holder_of(set(&mut b, &t, 1, "b"));
    assert_eq!(holder, a.id());
    let mut wait = b.row_wait(holder);
    assert!(poll_once(&mut wait).is_pending(), "the holder is still running");
    let committer = std::thread::spawn(move || a.commit().unwrap());
    block_on(&mut wait).unwrap();
    committer.join().unwrap();
    drop(wait);
    b.refresh_snapshot();
    assert!(set(&mut b, &t, 1, "b").unwrap());
    b.commit().unwrap();
    assert_eq!(read(&e, &t, 1), Some(row(1, "b")));
}

/// Two transactions waiting for each other, one as a future and one on a
/// thread: exactly one of them is told it is in a deadlock, and the other
/// goes on once the loser has rolled back.
#[test]
fn a_deadlock_between_a_row_wait_and_a_blocking_wait_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let (e, t) = durable(dir.path());
    let e = Arc::new(e);
    seed(&e, &t, &[1, 2]);

    let mut a = e.begin(Isolation::ReadCommitted).unwrap();
    let mut b = e.begin(Isolation::ReadCommitted).unwrap();
    assert!(set(&mut a, &t, 1, "a").unwrap());
    assert!(set(&mut b, &t, 2, "b").unwrap());
    // A blocks on row 2 (held by B) on its own thread.
    let t2 = t.clone();
    let blocking = std::thread::spawn(move || {
        let r = set(&mut a, &t2, 2, "a");
        match r {
            Ok(_) => {
                a.commit().unwrap();
                true
            }
            Err(EngineError::Deadlock) => false,
            Err(e) => panic!("unexpected {e:?}"),
        }
    });
    std::thread::sleep(Duration::from_millis(50));
    // B wants row 1 (held by A) without a thread.
    b.set_wait(false);
    let holder = holder_of(set(&mut b, &t, 1, "b"));
    let mut wait = b.row_wait(holder);
    let b_lost = loop {
        match poll_once(&mut wait) {
            Poll::Ready(Ok(())) => break false,
            Poll::Ready(Err(EngineError::Deadlock)) => break true,
            Poll::Ready(Err(e)) => panic!("unexpected {e:?}"),
            Poll::Pending => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    drop(wait);
    if b_lost {
        b.abort();
        assert!(blocking.join().unwrap(), "A goes on once B gave up");
    } else {
        // A lost (and rolled back): B now writes row 1.
        b.refresh_snapshot();
        assert!(set(&mut b, &t, 1, "b").unwrap());
        b.commit().unwrap();
        assert!(!blocking.join().unwrap());
    }
}

#[test]
fn a_row_wait_gives_up_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let (e, t) = durable(dir.path());
    seed(&e, &t, &[1]);
    let mut a = e.begin(Isolation::ReadCommitted).unwrap();
    assert!(set(&mut a, &t, 1, "a").unwrap());
    let mut b = e.begin(Isolation::ReadCommitted).unwrap();
    b.set_wait(false);
    b.set_wait_deadline(Some(std::time::Instant::now() + Duration::from_millis(100)));
    let holder = holder_of(set(&mut b, &t, 1, "b"));
    let mut wait = b.row_wait(holder);
    assert!(poll_once(&mut wait).is_pending());
    std::thread::sleep(Duration::from_millis(150));
    assert!(matches!(poll_once(&mut wait), Poll::Ready(Err(EngineError::DeadlinePassed))));
    // A blocking wait honours the same deadline.
    drop(wait);
    b.set_wait(true);
    b.set_wait_deadline(Some(std::time::Instant::now() + Duration::from_millis(100)));
    assert!(matches!(set(&mut b, &t, 1, "b"), Err(EngineError::DeadlinePassed)));
    a.commit().unwrap();
}
