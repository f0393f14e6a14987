//! Transactions on a partition whose primary is another node: three nodes
//! in one process, a data group for one partition led by a node other than
//! the one whose transaction works on it. Reads, scans, writes, savepoints
//! and the commit travel to the partition's primary; the commit is
//! replicated there; a conflict is the engine's; an abort leaves nothing;
//! and when the partition's primary changes, the transaction it held is
//! rolled back there and the caller is told nothing was committed.

mod common;

use std::time::Duration;

use common::*;
use tessera_engine::row_filter::{Cmp, FieldTest};
use tessera_engine::tuple::{Tuple, decode_i64, encode_i64, encode_tuple};
use tessera_engine::{EngineError, IndexKind, Isolation, KeyRange, LogError, PutCondition, PutOutcome, TableSpec};
use tessera_replication::NodeInfo;
use tessera_replication::parts::{Begin, PartCalls};

const GROUP: u32 = 1;
const STREAM: u32 = 5;

fn snapshot() -> Begin {
    Begin { isolation: Isolation::Snapshot, durability: None, deadline_ms: Some(10_000) }
}

fn begin(node: &TestNode) -> PartCalls {
    node.group()
        .groups()
        .begin_remote(GROUP, STREAM, snapshot())
        .expect("the partition's primary is known")
        .expect("the partition's primary is another node")
}

fn key(id: i64) -> Vec<u8> {
    tessera_engine::tuple::encode_key(&[Some(&encode_i64(id))])
}

fn id_of(row: &[u8]) -> i64 {
    decode_i64(Tuple::parse(row).unwrap().field(0).unwrap()).unwrap()
}

fn value_of(row: &[u8]) -> i64 {
    decode_i64(Tuple::parse(row).unwrap().field(1).unwrap()).unwrap()
}

fn row_with(id: i64, value: i64) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(&encode_i64(value))])
}

fn not_committed(e: &EngineError) -> bool {
    matches!(e, EngineError::CommitFailed(LogError::NotReplicated(_)))
}

#[test]
fn a_transaction_works_on_a_partition_whose_primary_is_another_node() {
    init_tracing();
    let root = tempfile::tempdir().unwrap();
    let (nodes, _join) = cluster(root.path());
    let p = primary(&nodes);
    for n in &nodes {
        n.group().host(GROUP, &[STREAM]).unwrap();
    }
    // The partition's group is led by a node other than the caller `p`.
    let q = (p + 1) % 3;
    let voters: std::collections::BTreeMap<u64, NodeInfo> = nodes
        .iter()
        .map(|n| (n.id, NodeInfo { rpc_addr: n.addr.clone(), pg_addr: String::new(), ..Default::default() }))
        .collect();
    nodes[q].group().form(GROUP, voters).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut leader = primary_of(&nodes, GROUP);
    if leader == p {
        rt.block_on(nodes[p].group().raft_of(GROUP).unwrap().trigger().transfer_leader(nodes[q].id)).unwrap();
        wait_for("the partition's primary to move", Duration::from_secs(10), || {
            (primary_of(&nodes, GROUP) == q).then_some(())
        });
        leader = q;
    }
    let part = nodes[leader].group().node().open_partition(STREAM, true).unwrap();
    part.create_table(TableSpec::new("u", vec![0], IndexKind::Ordered)).unwrap();
    insert_in(&nodes[leader], STREAM, 1..=3);
    wait_for("the partition's rows on the caller", Duration::from_secs(30), || {
        (ids_in(&nodes[p], STREAM) == vec![1, 2, 3]).then_some(())
    });
    // The caller's own node leads no such group: it goes to the primary.
    assert!(nodes[leader].group().groups().begin_remote(GROUP, STREAM, snapshot()).unwrap().is_none());

    rt.block_on(async {
        reads_scans_and_writes(&nodes, p, leader).await;
        versioned_reads_conditional_writes_and_savepoints(&nodes, p, leader).await;
        first_writer_wins_across_nodes(&nodes, p, leader).await;
        a_claim_waits_for_the_holder(&nodes, p, leader).await;
        a_statement_deadline_goes_with_its_calls(&nodes, p, leader).await;
        scans_come_in_pages(&nodes, p).await;
        an_abort_leaves_nothing(&nodes, p, leader).await;
    });

    // The partition's primary moves while a transaction is open on it:
    // the old primary rolls it back, and the commit is refused with
    // nothing written.
    let lost = rt.block_on(async {
        let mut t = begin(&nodes[p]);
        t.insert("u", row(40)).await.unwrap();
        t
    });
    let other = (0..3).find(|&i| i != leader && i != p).unwrap();
    rt.block_on(nodes[leader].group().raft_of(GROUP).unwrap().trigger().transfer_leader(nodes[other].id)).unwrap();
    wait_for("the partition's primary to move", Duration::from_secs(10), || {
        (primary_of(&nodes, GROUP) == other).then_some(())
    });
    wait_for("the old primary to roll back what it held", Duration::from_secs(5), || {
        (nodes[leader].group().groups().remote_transactions_here() == 0).then_some(())
    });
    let e = rt.block_on(lost.commit()).unwrap_err();
    assert!(not_committed(&e), "{e:?}");
    // A new transaction finds the new primary.
    rt.block_on(async {
        let mut t = begin(&nodes[p]);
        t.insert("u", row(50)).await.unwrap();
        t.commit().await.unwrap();
    });
    for n in &nodes {
        wait_for("the new primary's commit everywhere", Duration::from_secs(30), || {
            (ids_in(n, STREAM) == vec![1, 2, 10, 20, 50]).then_some(())
        });
    }
    // Where the caller leads the partition itself, its transactions are local.
    rt.block_on(nodes[other].group().raft_of(GROUP).unwrap().trigger().transfer_leader(nodes[p].id)).unwrap();
    wait_for("the partition's primary to move to the caller", Duration::from_secs(10), || {
        nodes[p].group().groups().begin_remote(GROUP, STREAM, snapshot()).ok().filter(|t| t.is_none())
    });
}

/// Reads, a scan and writes, committed on the primary's quorum.
async fn reads_scans_and_writes(nodes: &[TestNode], p: usize, leader: usize) {
    // Reads, a scan and writes, committed on the primary's quorum.
    let mut t = begin(&nodes[p]);
    assert_eq!(t.get("u", &key(2)).await.unwrap().map(|r| id_of(&r)), Some(2));
    assert_eq!(t.get("u", &key(9)).await.unwrap(), None);
    t.insert("u", row(10)).await.unwrap();
    assert!(t.update("u", row_with(1, 111)).await.unwrap());
    assert!(t.delete("u", &key(3)).await.unwrap());
    let seen: Vec<i64> = t.scan("u", None, &KeyRange::all()).await.unwrap().iter().map(|r| id_of(r)).collect();
    assert_eq!(seen, vec![1, 2, 10], "the transaction sees its own writes");
    assert!(!t.is_read_only());
    t.commit().await.unwrap();
    assert_eq!(nodes[leader].group().groups().remote_transactions_here(), 0);
    for n in nodes {
        wait_for("the committed rows everywhere", Duration::from_secs(30), || {
            (ids_in(n, STREAM) == vec![1, 2, 10]).then_some(())
        });
    }
}

/// Versioned reads, conditional writes, and a savepoint that undoes what followed it.
async fn versioned_reads_conditional_writes_and_savepoints(nodes: &[TestNode], p: usize, leader: usize) {
    // Versioned reads and conditional writes.
    let mut t = begin(&nodes[p]);
    let (data, version) = t.get_versioned("u", &key(1)).await.unwrap().unwrap();
    assert_eq!(value_of(&data), 111);
    let stale = tessera_engine::RowVersion(version.0.wrapping_sub(1));
    assert_eq!(
        t.put("u", row_with(1, 5), PutCondition::VersionIs(stale)).await.unwrap(),
        PutOutcome::Rejected { current: Some(version) }
    );
    assert_eq!(t.put("u", row_with(1, 112), PutCondition::VersionIs(version)).await.unwrap(), PutOutcome::Written);
    assert!(matches!(
        t.delete_if("u", &key(77), PutCondition::Present).await.unwrap(),
        PutOutcome::Rejected { current: None }
    ));
    // A savepoint undoes what followed it.
    t.insert("u", row(20)).await.unwrap();
    let sp = t.savepoint();
    t.insert("u", row(21)).await.unwrap();
    t.rollback_to(sp).await.unwrap();
    t.commit().await.unwrap();
    wait_for("the savepoint's outcome on the primary", Duration::from_secs(10), || {
        (ids_in(&nodes[leader], STREAM) == vec![1, 2, 10, 20]).then_some(())
    });
}

/// First writer wins across nodes.
async fn first_writer_wins_across_nodes(nodes: &[TestNode], p: usize, leader: usize) {
    // First writer wins across nodes: a local commit on the primary
    // after the remote snapshot makes the remote write conflict.
    let mut t = begin(&nodes[p]);
    assert!(t.get("u", &key(2)).await.unwrap().is_some());
    {
        let engine = nodes[leader].group().node().partition(STREAM).unwrap();
        let mut local = engine.begin(Isolation::Snapshot).unwrap();
        local.update(&engine.table("u").unwrap(), row_with(2, 222)).unwrap();
        local.commit().unwrap();
    }
    let e = t.update("u", row_with(2, 333)).await.unwrap_err();
    assert!(matches!(e, EngineError::Conflict { .. }), "{e:?}");
    t.abort().await;
}

/// A claim waits for the row's holder and takes the version it committed.
async fn a_claim_waits_for_the_holder(nodes: &[TestNode], p: usize, leader: usize) {
    // A claim (the first half of an update) waits for the row's
    // holder and, at read committed, takes the version it committed.
    let engine = nodes[leader].group().node().partition(STREAM).unwrap();
    let mut holder = engine.begin(Isolation::Snapshot).unwrap();
    holder.update(&engine.table("u").unwrap(), row_with(2, 444)).unwrap();
    let read_committed = Begin { isolation: Isolation::ReadCommitted, durability: None, deadline_ms: Some(10_000) };
    let mut t = nodes[p].group().groups().begin_remote(GROUP, STREAM, read_committed).unwrap().unwrap();
    let claim = tokio::spawn(async move {
        let got = t.claim("u", &key(2)).await;
        (t, got)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!claim.is_finished(), "the claim waits for the row's holder");
    holder.commit().unwrap();
    let (mut t, got) = claim.await.unwrap();
    assert_eq!(got.unwrap().map(|r| value_of(&r)), Some(444));
    assert!(t.update("u", row_with(2, 555)).await.unwrap());
    t.commit().await.unwrap();
    wait_for("the claimed row's update", Duration::from_secs(10), || {
        let engine = nodes[leader].group().node().partition(STREAM).unwrap();
        let mut r = engine.begin(Isolation::Snapshot).unwrap();
        let v = r.get(&engine.table("u").unwrap(), &key(2)).unwrap().map(|r| value_of(&r));
        (v == Some(555)).then_some(())
    });
}

/// A later statement's deadline goes with its calls.
async fn a_statement_deadline_goes_with_its_calls(nodes: &[TestNode], p: usize, leader: usize) {
    let engine = nodes[leader].group().node().partition(STREAM).unwrap();
    // A later statement's deadline goes with its calls: a transaction
    // begun without one stops waiting for a holder when the statement
    // making the claim reaches its own.
    let mut holder = engine.begin(Isolation::Snapshot).unwrap();
    holder.update(&engine.table("u").unwrap(), row_with(2, 666)).unwrap();
    let no_deadline = Begin { isolation: Isolation::ReadCommitted, durability: None, deadline_ms: None };
    let mut t = nodes[p].group().groups().begin_remote(GROUP, STREAM, no_deadline).unwrap().unwrap();
    t.get("u", &key(1)).await.unwrap(); // (the first statement, with no deadline)
    let started = std::time::Instant::now();
    t.set_wait_deadline(Some(started + Duration::from_millis(400)));
    let e = t.claim("u", &key(2)).await.unwrap_err();
    assert!(matches!(e, EngineError::DeadlinePassed), "{e:?}");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(350) && waited < Duration::from_secs(5), "{waited:?}");
    t.abort().await;
    holder.abort();
}

/// Scans larger than one answer come in pages, with only the asked-for fields and the rows that pass.
async fn scans_come_in_pages(nodes: &[TestNode], p: usize) {
    // A scan larger than one answer comes in several (6 MB of rows).
    let mut t = begin(&nodes[p]);
    let big = vec![7u8; 100_000];
    for id in 1000..1060 {
        t.insert("u", encode_tuple(&[Some(&encode_i64(id)), Some(&big)])).await.unwrap();
    }
    let range = KeyRange { lower: std::ops::Bound::Included(key(1000)), upper: std::ops::Bound::Unbounded };
    let seen: Vec<i64> = t.scan("u", None, &range).await.unwrap().iter().map(|r| id_of(r)).collect();
    assert_eq!(seen, (1000..1060).collect::<Vec<_>>());
    // Asked for the key field only, the rows come without the rest
    // (all in one answer).
    let (keys, more) = t.scan_first("u", None, &range, Some(&[0]), &[]).await.unwrap();
    let keys = keys.to_rows();
    assert!(!more && keys.len() == 60, "{} rows, more: {more}", keys.len());
    assert!(keys.iter().all(|r| Tuple::parse(r).unwrap().field(1).is_none()), "only the key field travels");
    assert_eq!(keys.iter().map(|r| id_of(r)).collect::<Vec<_>>(), seen);
    // With tests, only the rows that pass travel (the primary tests
    // them: nothing here does): the last ten, whole.
    let from = FieldTest { field: 0, cmp: Cmp::GtEq, value: encode_i64(1050).to_vec() };
    let (page, mut more) = t.scan_first("u", None, &range, None, std::slice::from_ref(&from)).await.unwrap();
    let mut last = page.to_rows();
    while more {
        let (page, m) = t.scan_more().await.unwrap();
        last.extend(page.to_rows());
        more = m;
    }
    assert_eq!(last.iter().map(|r| id_of(r)).collect::<Vec<_>>(), (1050..1060).collect::<Vec<_>>());
    assert!(last.iter().all(|r| Tuple::parse(r).unwrap().field(1) == Some(&big[..])));
    // The primary walks the index as pages are asked for: a scan left
    // after its first page ends with the next call, and the
    // transaction goes on (its own write seen by its next scan).
    let (first, more) = t.scan_first("u", None, &range, None, &[]).await.unwrap();
    let first = first.to_rows();
    // The first answer is small (32 KB and the row that passes it), so
    // a caller stopping early does not wait for megabytes.
    assert!(more && first.len() == 1, "{} rows, more: {more}", first.len());
    assert_eq!(id_of(&first[0]), 1000);
    t.insert("u", encode_tuple(&[Some(&encode_i64(2000)), Some(&big)])).await.unwrap();
    let (again, _) = t.scan_first("u", None, &range, None, &[]).await.unwrap();
    let again = again.to_rows();
    assert_eq!(id_of(&again[0]), 1000, "a new scan starts afresh");
    let seen: Vec<i64> = t.scan("u", None, &range).await.unwrap().iter().map(|r| id_of(r)).collect();
    assert_eq!(seen, (1000..1060).chain([2000]).collect::<Vec<_>>());
    t.abort().await;
}

/// An abort leaves nothing, there or here.
async fn an_abort_leaves_nothing(nodes: &[TestNode], p: usize, leader: usize) {
    // An abort leaves nothing, there or here.
    let mut t = begin(&nodes[p]);
    t.insert("u", row(30)).await.unwrap();
    assert_eq!(nodes[leader].group().groups().remote_transactions_here(), 1);
    t.abort().await;
    assert_eq!(nodes[leader].group().groups().remote_transactions_here(), 0);
}
