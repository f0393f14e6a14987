//! Checkpoints built from records of a log kept elsewhere (a replicated
//! log's snapshots): `extend_checkpoint` over ranges of the records, then
//! `restore_checkpoint` into another engine, must give the same rows, also
//! when a range holds timestamps below the previous range's newest one
//! (log order differs from timestamp order when commits overlap).

use std::sync::Arc;

use parking_lot::Mutex;
use tessera_engine::checkpoint::extend_checkpoint;
use tessera_engine::tuple::{Tuple, decode_i64, encode_i64, encode_key, encode_tuple};
use tessera_engine::{
    CommitLog, CommitLogSource, Engine, EngineConfig, IndexKind, Isolation, KeyRange, LogError, PRIMARY, TableSpec,
};

/// A commit log that keeps every record it is handed, durable at once.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<Vec<u8>>>>);

impl CommitLog for Captured {
    fn append(&self, record: &[u8]) -> Result<u64, LogError> {
        let mut r = self.0.lock();
        r.push(record.to_vec());
        Ok(r.len() as u64)
    }
    fn wait_durable(&self, _ticket: u64) -> Result<(), LogError> {
        Ok(())
    }
    fn poll_durable(&self, _ticket: u64, _cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), LogError>> {
        std::task::Poll::Ready(Ok(()))
    }
}

fn engine(log: &Captured) -> Engine {
    let log = log.clone();
    let source = CommitLogSource(Arc::new(move |_| Box::new(log.clone()) as Box<dyn CommitLog>));
    Engine::open(EngineConfig { commit_log: Some(source), ..EngineConfig::in_memory() }).unwrap()
}

fn row(id: i64, v: i64) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(&encode_i64(v))])
}

fn contents(e: &Engine) -> Vec<(i64, i64)> {
    let Some(t) = e.table("t") else { return Vec::new() };
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    let mut out: Vec<(i64, i64)> = tx
        .scan_collect(&t, PRIMARY, &KeyRange::all())
        .unwrap()
        .iter()
        .map(|r| {
            let t = Tuple::parse(r).unwrap();
            (decode_i64(t.field(0).unwrap()).unwrap(), decode_i64(t.field(1).unwrap()).unwrap())
        })
        .collect();
    out.sort();
    out
}

fn write(e: &Engine, f: impl FnOnce(&mut tessera_engine::Transaction, &Arc<tessera_engine::Table>)) {
    let t = e.table("t").unwrap();
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    f(&mut tx, &t);
    tx.commit().unwrap();
}

#[test]
fn ranges_in_log_order_rebuild_the_same_rows() {
    let log = Captured::default();
    let primary = engine(&log);
    primary.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap();
    for id in 1..=10 {
        write(&primary, |tx, t| tx.insert(t, row(id, id)).unwrap());
    }
    write(&primary, |tx, t| assert!(tx.update(t, row(3, 33)).unwrap()));
    write(&primary, |tx, t| assert!(tx.delete(t, &encode_key(&[Some(&encode_i64(4))])).unwrap()));
    // A: insert 20; B: insert 21; C: delete 20 — then the log order is
    // changed to B, A, C, as overlapping commits could append them.
    write(&primary, |tx, t| tx.insert(t, row(20, 20)).unwrap());
    write(&primary, |tx, t| tx.insert(t, row(21, 21)).unwrap());
    write(&primary, |tx, t| assert!(tx.delete(t, &encode_key(&[Some(&encode_i64(20))])).unwrap()));
    write(&primary, |tx, t| assert!(tx.update(t, row(5, 55)).unwrap()));

    let mut records = log.0.lock().clone();
    let n = records.len();
    // [.., A, B, C, update 5] → [.., B] | [A, C, update 5]
    records.swap(n - 4, n - 3);
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("stream");
    extend_checkpoint(&ckpt, records[..n - 3].to_vec(), 8).unwrap();
    let stats = extend_checkpoint(&ckpt, records[n - 3..].to_vec(), 8).unwrap();
    assert_eq!(stats.records_read, 3);

    let replica = engine(&Captured::default());
    let loaded = replica.restore_checkpoint(&ckpt).unwrap();
    assert_eq!(contents(&replica), contents(&primary));
    assert_eq!(loaded, contents(&primary).len());
    assert!(!contents(&replica).iter().any(|(id, _)| *id == 20 || *id == 4));

    // Restoring again replaces what is there (a replica installing a newer
    // snapshot), and the replica's clock is above every restored version:
    // its next commit is newer than all of them.
    let replica_log = Captured::default();
    let replica = engine(&replica_log);
    replica.create_table(TableSpec::new("other", vec![0], IndexKind::Ordered)).unwrap();
    replica.restore_checkpoint(&ckpt).unwrap();
    assert!(replica.table("other").is_none());
    write(&replica, |tx, t| assert!(tx.update(t, row(5, 555)).unwrap()));
    assert!(contents(&replica).contains(&(5, 555)));
}
