//! Several partitions (engines) writing into one node log: shared group
//! commit, independent checkpoints, truncation only below every partition's
//! needs, and recovery of each partition from its own stream.

use std::path::Path;
use std::sync::Arc;

use tessera_engine::tuple::Tuple;
use tessera_engine::tuple::{decode_i64, encode_i64, encode_tuple};
use tessera_engine::*;

fn row(id: i64, v: i64) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(&encode_i64(v))])
}

fn partition(node: &Path, log: &Arc<SharedLog>, stream: u32) -> Engine {
    let mut c = EngineConfig::durable(node.join(format!("p{stream}")));
    c.shared_log = Some(log.clone());
    c.stream = stream;
    c.checkpoint_log_bytes = 0;
    Engine::open(c).unwrap()
}

fn upsert(e: &Engine, t: &Arc<Table>, id: i64, v: i64) {
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    if !tx.update(t, row(id, v)).unwrap() {
        tx.insert(t, row(id, v)).unwrap();
    }
    tx.commit().unwrap();
}

fn contents(e: &Engine) -> Vec<(i64, i64)> {
    let t = e.table("t").unwrap();
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

#[test]
fn partitions_share_one_log_and_recover_their_own_streams() {
    let node = tempfile::tempdir().unwrap();
    let mut log_config = tessera_log::LogConfig::new(node.path().join("log"));
    log_config.segment_bytes = 4 << 10;
    {
        let log = SharedLog::open(log_config.clone()).unwrap();
        let a = partition(node.path(), &log, 1);
        let b = partition(node.path(), &log, 2);
        log.allow_truncation().unwrap();
        let ta = a.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap();
        let tb = b.create_table(TableSpec::new("t", vec![0], IndexKind::Hash)).unwrap();
        for round in 0..5 {
            for id in 0..40 {
                upsert(&a, &ta, id, round);
                upsert(&b, &tb, id, 100 + round);
            }
            // Only partition a checkpoints: b still needs the old segments.
            a.checkpoint().unwrap();
        }
        assert_eq!(log.log().start_lsn(), 0, "b has not checkpointed, so nothing may be truncated");
        b.checkpoint().unwrap();
        upsert(&a, &ta, 1000, 7);
        upsert(&b, &tb, 2000, 8);
        assert!(log.log().start_lsn() > 0, "both checkpointed: old segments go");
        assert!(log.log().stats().fsyncs > 0);
    }
    let log = SharedLog::open(log_config).unwrap();
    let a = partition(node.path(), &log, 1);
    let b = partition(node.path(), &log, 2);
    let mut expect_a: Vec<_> = (0..40).map(|id| (id, 4)).collect();
    expect_a.push((1000, 7));
    let mut expect_b: Vec<_> = (0..40).map(|id| (id, 104)).collect();
    expect_b.push((2000, 8));
    assert_eq!(contents(&a), expect_a);
    assert_eq!(contents(&b), expect_b);
    // A stream can be opened only once.
    let mut c = EngineConfig::durable(node.path().join("p1-again"));
    c.shared_log = Some(log.clone());
    c.stream = 1;
    assert!(Engine::open(c).is_err());
}

#[test]
fn a_node_reopens_its_partitions_and_a_fresh_partition_skips_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let spec = || TableSpec::new("t", vec![0], IndexKind::Ordered);
    {
        let node = Node::open(EngineConfig::durable(dir.path())).unwrap();
        let sys = node.system().clone();
        let t = sys.create_table(spec()).unwrap();
        for i in 0..100 {
            upsert(&sys, &t, i, i);
        }
        let p = node.open_partition(7, true).unwrap();
        assert_eq!(p.stats().tables, 0, "a fresh partition replays nothing");
        let pt = p.create_table(spec()).unwrap();
        upsert(&p, &pt, 1, 10);
        node.all_partitions_open().unwrap();
        node.close().unwrap();
    }
    let node = Node::open(EngineConfig::durable(dir.path())).unwrap();
    let p = node.open_partition(7, false).unwrap();
    assert_eq!(contents(&p), vec![(1, 10)]);
    assert_eq!(contents(node.system()).len(), 100);
    node.drop_partition(7).unwrap();
    assert!(node.partition(7).is_none());
    assert!(!dir.path().join("partitions/7").exists());
}
