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
