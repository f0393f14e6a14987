//! Three nodes in one process, each with its own Raft log on disk and real
//! RPC over 127.0.0.1: commits on the primary reach the secondaries; when
//! the primary stops, another takes over with every acknowledged commit;
//! a restarted node catches up from the log; without a quorum commits are
//! refused and resume when a node returns. With snapshots on, the log is
//! purged below them, a restarted node loads its own, and a replica too far
//! behind for the primary's log is rebuilt from the primary's.

mod common;

use std::time::Duration;

use common::*;
use tessera_engine::tuple::{Tuple, decode_i64, encode_i64, encode_tuple};
use tessera_engine::{EngineError, IndexKind, Isolation, KeyRange, PRIMARY, TableSpec};
use tessera_log::LogError;
use tessera_replication::{ManagerRole, NodeInfo, Role};

fn insert(node: &TestNode, ids: std::ops::RangeInclusive<i64>) -> Result<(), EngineError> {
    let engine = node.group().node().system().clone();
    let t = engine.table("t").expect("table t");
    for id in ids {
        let mut tx = engine.begin(Isolation::Snapshot)?;
        tx.insert(&t, row(id))?;
        tx.commit()?;
    }
    Ok(())
}

fn ids(node: &TestNode) -> Vec<i64> {
    table_ids(node.group().node().system(), "t")
}

fn wait_rows(node: &TestNode, n: i64) {
    wait_ids(node, &(1..=n).collect::<Vec<_>>());
}

fn wait_ids(node: &TestNode, want: &[i64]) {
    wait_for(&format!("node {} to hold {} rows", node.id, want.len()), Duration::from_secs(30), || {
        (ids(node) == want).then_some(())
    });
}

fn delete(node: &TestNode, ids: std::ops::RangeInclusive<i64>) {
    let engine = node.group().node().system().clone();
    let t = engine.table("t").expect("table t");
    for id in ids {
        let mut tx = engine.begin(Isolation::Snapshot).unwrap();
        assert!(tx.delete(&t, &tessera_engine::tuple::encode_key(&[Some(&encode_i64(id))])).unwrap());
        tx.commit().unwrap();
    }
}

fn update(node: &TestNode, ids: std::ops::RangeInclusive<i64>, value: i64) {
    let engine = node.group().node().system().clone();
    let t = engine.table("t").expect("table t");
    for id in ids {
        let mut tx = engine.begin(Isolation::Snapshot).unwrap();
        assert!(tx.update(&t, encode_tuple(&[Some(&encode_i64(id)), Some(&encode_i64(value))])).unwrap());
        tx.commit().unwrap();
    }
}

/// Sum of column 1 over the table: updates must survive snapshots too.
fn total(node: &TestNode) -> i64 {
    let engine = node.group().node().system().clone();
    let t = engine.table("t").unwrap();
    let mut tx = engine.begin(Isolation::Snapshot).unwrap();
    tx.scan_collect(&t, PRIMARY, &KeyRange::all())
        .unwrap()
        .iter()
        .map(|r| decode_i64(Tuple::parse(r).unwrap().field(1).unwrap()).unwrap())
        .sum()
}

/// (snapshot index, purged index) as this node's Raft reports them.
fn snapshot_state(node: &TestNode) -> (Option<u64>, Option<u64>) {
    use openraft::async_runtime::WatchReceiver;
    let m = node.group().raft().metrics().borrow_watched().clone();
    (m.snapshot.map(|l| l.index), m.purged.map(|l| l.index))
}

#[test]
fn snapshots_purge_the_log_restart_and_rebuild_a_replica() {
    init_tracing();
    let root = tempfile::tempdir().unwrap();
    let (mut nodes, join) = cluster_with(root.path(), 100);
    let p = primary(&nodes);
    let engine = nodes[p].group().node().system().clone();
    engine.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap();
    insert(&nodes[p], 1..=250).unwrap();
    delete(&nodes[p], 1..=20);
    update(&nodes[p], 21..=40, 7);
    let want: Vec<i64> = (21..=250).collect();
    for n in &nodes {
        wait_ids(n, &want);
    }
    // Every node snapshots by itself and purges its log below the snapshot.
    for n in &nodes {
        wait_for(&format!("node {} to snapshot and purge", n.id), Duration::from_secs(30), || {
            let (snap, purged) = snapshot_state(n);
            (snap.is_some_and(|s| s >= 150) && purged.is_some_and(|p| p > 100)).then_some(())
        });
    }

    // A secondary stops; the primary goes on far past what its log keeps.
    let s = (p + 1) % 3;
    let s_last = snapshot_state(&nodes[s]).0.unwrap();
    nodes[s].stop();
    insert(&nodes[p], 251..=500).unwrap();
    delete(&nodes[p], 251..=270);
    update(&nodes[p], 271..=290, 9);
    let want: Vec<i64> = (21..=250).chain(271..=500).collect();
    wait_for("the primary to purge past the stopped replica", Duration::from_secs(30), || {
        snapshot_state(&nodes[p]).1.is_some_and(|purged| purged > s_last + 20).then_some(())
    });

    // It returns: the log it needs is gone, so the primary sends a snapshot.
    nodes[s].start(&join);
    wait_ids(&nodes[s], &want);
    // The ids are right once the deletes are in; the updates after them
    // may still be on their way.
    let primary_total = total(&nodes[p]);
    wait_for("the returning replica to apply every update", Duration::from_secs(30), || {
        (total(&nodes[s]) == primary_total).then_some(())
    });
    let expected_total: i64 = want
        .iter()
        .map(|&i| {
            if (21..=40).contains(&i) {
                7
            } else if (271..=290).contains(&i) {
                9
            } else {
                i * 10
            }
        })
        .sum();
    assert_eq!(total(&nodes[p]), expected_total);

    // Another node restarts from its own snapshot plus its log's tail.
    let r = 3 - p - s;
    nodes[r].stop();
    nodes[r].start(&join);
    wait_ids(&nodes[r], &want);
    wait_for("the restarted replica to apply every update", Duration::from_secs(30), || {
        (total(&nodes[r]) == expected_total).then_some(())
    });
    for n in nodes.iter_mut() {
        n.stop();
    }
}

/// Inserts `ids` in one transaction.
fn insert_one_txn(node: &TestNode, ids: std::ops::RangeInclusive<i64>) {
    let engine = node.group().node().system().clone();
    let t = engine.table("t").expect("table t");
    let mut tx = engine.begin(Isolation::Snapshot).unwrap();
    for id in ids {
        tx.insert(&t, row(id)).unwrap();
    }
    tx.commit().unwrap();
}

fn count(node: &TestNode) -> usize {
    ids(node).len()
}

#[test]
fn large_commits_travel_in_parts_across_snapshots_and_restarts() {
    init_tracing();
    let root = tempfile::tempdir().unwrap();
    let (mut nodes, join) = cluster_with(root.path(), 20);
    let p = primary(&nodes);
    let engine = nodes[p].group().node().system().clone();
    engine.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap();
    insert(&nodes[p], 1..=30).unwrap();
    // About 2.5 MB of commit record: several log entries, several calls.
    insert_one_txn(&nodes[p], 100_000..=159_999);
    insert(&nodes[p], 31..=60).unwrap();
    let want = 60 + 60_000;
    for n in &nodes {
        wait_for(&format!("node {} to hold the large commit", n.id), Duration::from_secs(60), || {
            (count(n) == want).then_some(())
        });
    }
    // Snapshots were taken around it and the log purged below them; a
    // restarted secondary starts from its snapshot and the log after it.
    let s = (p + 1) % 3;
    wait_for("a snapshot past the large commit", Duration::from_secs(30), || {
        snapshot_state(&nodes[s]).0.is_some_and(|i| i > 40).then_some(())
    });
    nodes[s].stop();
    nodes[s].start(&join);
    wait_for("the restarted node's rows", Duration::from_secs(60), || (count(&nodes[s]) == want).then_some(()));

    // A secondary away while another large commit and many small ones go
    // by returns to a purged log: the primary's snapshot, then the tail.
    let r = 3 - p - s;
    let r_last = snapshot_state(&nodes[r]).0.unwrap();
    nodes[r].stop();
    insert_one_txn(&nodes[p], 300_000..=339_999);
    insert(&nodes[p], 61..=120).unwrap();
    wait_for("the primary to purge past the stopped node", Duration::from_secs(30), || {
        snapshot_state(&nodes[p]).1.is_some_and(|purged| purged > r_last + 20).then_some(())
    });
    nodes[r].start(&join);
    let want = 120 + 100_000;
    for n in &nodes {
        wait_for(&format!("node {} to hold both large commits", n.id), Duration::from_secs(60), || {
            (count(n) == want).then_some(())
        });
    }
    for n in nodes.iter_mut() {
        n.stop();
    }
}

/// The group's voters as `node`'s Raft knows them.
fn voters(node: &TestNode) -> Vec<u64> {
    use openraft::async_runtime::WatchReceiver;
    let m = node.group().raft().metrics().borrow_watched().clone();
    m.membership_config.membership().voter_ids().collect()
}

#[test]
fn a_lost_replica_is_replaced_on_a_spare_and_a_returning_node_rebuilt() {
    init_tracing();
    let root = tempfile::tempdir().unwrap();
    // Four nodes, three replicas: one node is a spare (a gateway only).
    let (mut nodes, join) = cluster_of(root.path(), 4, 40, Duration::from_secs(1));
    let p = primary(&nodes);
    let group = voters(&nodes[p]);
    assert_eq!(group.len(), 3, "three voters of four nodes: {group:?}");
    let spare = (0..4).find(|&i| !group.contains(&nodes[i].id)).unwrap();
    let primary_id = nodes[p].id;
    wait_for("the spare to know the primary", Duration::from_secs(10), || {
        matches!(nodes[spare].role(), Role::Secondary { primary, .. } if primary == primary_id).then_some(())
    });
    let engine = nodes[p].group().node().system().clone();
    engine.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap();
    insert(&nodes[p], 1..=100).unwrap();
    // The spare reads the group (a learner that does not vote): it holds
    // the rows, so databases' replicas can be built there.
    wait_rows(&nodes[spare], 100);
    assert_eq!(voters(&nodes[p]).len(), 3, "a reader does not vote");
    // The primary's status lists the spare.
    let status = nodes[p].group().status().nodes();
    assert_eq!(status.iter().find(|r| r.id == nodes[spare].id).map(|r| r.role.as_str()), Some("spare"), "{status:?}");

    // A secondary is lost for good: after the grace period the manager
    // downshifts it and builds a replica on the spare (from the primary's
    // snapshot: the log it would need is purged), which then votes.
    let lost = (0..4).find(|&i| i != p && i != spare).unwrap();
    nodes[lost].stop();
    let (lost_id, spare_id) = (nodes[lost].id, nodes[spare].id);
    wait_for("the spare to become a voter", Duration::from_secs(60), || {
        let v = voters(&nodes[p]);
        (v.len() == 3 && v.contains(&spare_id) && !v.contains(&lost_id)).then_some(())
    });
    wait_rows(&nodes[spare], 100);
    insert(&nodes[p], 101..=150).unwrap();
    wait_rows(&nodes[spare], 150);

    // The manager group replaces the lost node too (a reader is promoted
    // at once; the manager group builds its replacement from scratch).
    wait_for("the manager group to have three voters again", Duration::from_secs(60), || {
        let (_, v) = managers(&nodes[p]);
        (v.len() == 3 && !v.contains(&lost_id)).then_some(())
    });
    // With the replacement voting, the group survives losing another of
    // the original secondaries: the primary and the new replica are a quorum.
    let second = (0..4).find(|&i| i != p && i != spare && i != lost).unwrap();
    nodes[second].stop();
    insert(&nodes[p], 151..=160).unwrap();
    wait_rows(&nodes[spare], 160);

    // The first lost node returns: it is no longer a member, so it serves
    // as a gateway, and the manager rebuilds it in place of the second.
    nodes[lost].start(&join);
    let second_id = nodes[second].id;
    wait_for("the returning node to replace the second loss", Duration::from_secs(60), || {
        let v = voters(&nodes[p]);
        (v.len() == 3 && v.contains(&lost_id) && !v.contains(&second_id)).then_some(())
    });
    wait_rows(&nodes[lost], 160);
    insert(&nodes[p], 161..=170).unwrap();
    for i in [p, spare, lost] {
        wait_rows(&nodes[i], 170);
    }
    for n in nodes.iter_mut().filter(|n| n.group.is_some()) {
        n.stop();
    }
}

#[test]
fn commits_replicate_fail_over_and_catch_up() {
    let root = tempfile::tempdir().unwrap();
    let (mut nodes, join) = cluster(root.path());
    let p = primary(&nodes);
    let engine = nodes[p].group().node().system().clone();
    engine.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap();
    insert(&nodes[p], 1..=50).unwrap();
    for n in &nodes {
        wait_rows(n, 50);
    }

    // Old versions replaced on a secondary are collected there too.
    let t = engine.table("t").unwrap();
    for round in 0..300i64 {
        let mut tx = engine.begin(Isolation::Snapshot).unwrap();
        tx.update(&t, encode_tuple(&[Some(&encode_i64(1)), Some(&encode_i64(round))])).unwrap();
        tx.commit().unwrap();
    }
    for n in &nodes {
        let e = n.group().node().system().clone();
        wait_for(&format!("node {}'s garbage collection", n.id), Duration::from_secs(20), || {
            let t = e.table("t").unwrap();
            let mut tx = e.begin(Isolation::Snapshot).unwrap();
            let row = tx.get(&t, &tessera_engine::tuple::encode_key(&[Some(&encode_i64(1))])).unwrap()?;
            let v = decode_i64(Tuple::parse(&row).unwrap().field(1).unwrap()).unwrap();
            drop(tx);
            (v == 299 && e.stats().versions < 100).then_some(())
        });
    }

    // A secondary refuses commits: nothing was written, and it stays writable.
    let s = (p + 1) % 3;
    let err = insert(&nodes[s], 51..=51).unwrap_err();
    assert!(matches!(err, EngineError::CommitFailed(LogError::NotReplicated(_))), "{err}");
    assert!(!nodes[s].group().node().system().is_read_only());

    // The primary stops; another takes over with all 50 rows and goes on.
    nodes[p].stop();
    let q = primary(&nodes);
    assert_ne!(q, p);
    wait_rows(&nodes[q], 50);
    insert(&nodes[q], 51..=60).unwrap();
    let other = 3 - p - q;
    wait_rows(&nodes[other], 60);

    // The old primary restarts, replays its log and catches up.
    nodes[p].start(&join);
    wait_rows(&nodes[p], 60);

    // Two of three stop: no quorum, so the last one refuses commits ...
    let keep = p;
    for (i, n) in nodes.iter_mut().enumerate() {
        if i != keep {
            n.stop();
        }
    }
    wait_for("the survivor to give up serving", Duration::from_secs(20), || {
        matches!(nodes[keep].role(), Role::Unavailable(_) | Role::Secondary { .. }).then_some(())
    });
    let err = insert(&nodes[keep], 61..=61).unwrap_err();
    assert!(matches!(err, EngineError::CommitFailed(LogError::NotReplicated(_))), "{err}");

    // ... until one returns.
    let back = (keep + 1) % 3;
    nodes[back].start(&join);
    let p2 = primary(&nodes);
    insert(&nodes[p2], 61..=70).unwrap();
    // A lazily durable commit still waits for the quorum in a cluster (else
    // a commit the quorum never got would leave the primary ahead).
    let engine = nodes[p2].group().node().system().clone();
    let mut tx = engine.begin(Isolation::Snapshot).unwrap();
    tx.set_durability(tessera_engine::Durability::Lazy);
    tx.insert(&engine.table("t").unwrap(), row(71)).unwrap();
    tx.commit().unwrap();
    assert_eq!(nodes[p2].group().pending_commits(), 0);
    wait_rows(&nodes[keep], 71);
    wait_rows(&nodes[back], 71);
    for n in nodes.iter_mut().filter(|n| n.group.is_some()) {
        n.stop();
    }
}

/// The manager group as `node`'s own manager Raft knows it: its leader and voters.
fn managers(node: &TestNode) -> (Option<u64>, Vec<u64>) {
    use openraft::async_runtime::WatchReceiver;
    let m = node.group().manager().metrics().borrow_watched().clone();
    (m.current_leader, m.membership_config.membership().voter_ids().collect())
}

#[test]
fn the_manager_is_a_group_of_its_own_and_survives_its_leader() {
    init_tracing();
    let root = tempfile::tempdir().unwrap();
    let (mut nodes, _join) = cluster_of(root.path(), 4, 40, Duration::from_secs(1));
    let p = primary(&nodes);
    let primary_id = nodes[p].id;
    // Three of the four nodes form the manager group, across the same
    // domains as the data group; every node learns who they are.
    let (leader, group) = wait_for("the manager group", Duration::from_secs(20), || {
        let (leader, voters) = managers(&nodes[p]);
        leader.filter(|_| voters.len() == 3).map(|l| (l, voters))
    });
    for n in &nodes {
        wait_for("every node to know the manager group", Duration::from_secs(10), || {
            let g = n.group().status().manager_group()?;
            (g.leader == Some(leader) && g.voters == group).then_some(())
        });
    }
    // Its directory holds every node and the data group's replica count.
    let l = nodes.iter().position(|n| n.id == leader).unwrap();
    wait_for("the directory to list every node", Duration::from_secs(10), || {
        let d = nodes[l].group().directory();
        (d.nodes.len() == 4 && d.targets.get(&0) == Some(&3)).then_some(())
    });
    // The manager's leader is made another node than the data group's
    // primary, so that its decisions travel to the primary over RPC.
    let mut leader = leader;
    if leader == primary_id {
        let to = *group.iter().find(|&&v| v != primary_id).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(nodes[p].group().manager().trigger().transfer_leader(to)).unwrap();
        leader = wait_for("the manager's leader to move", Duration::from_secs(10), || {
            managers(&nodes[p]).0.filter(|&l| l == to)
        });
    }
    let engine = nodes[p].group().node().system().clone();
    engine.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap();
    insert(&nodes[p], 1..=50).unwrap();

    // The manager's leader is lost for good. The other two managers elect
    // a new leader, which replaces the lost node in both groups with the
    // spare: in the data group through the primary, in its own directly.
    let m = nodes.iter().position(|n| n.id == leader).unwrap();
    nodes[m].stop();
    let spare = (0..4).find(|&i| i != m && !group.contains(&nodes[i].id)).unwrap();
    let spare_id = nodes[spare].id;
    wait_for("the spare to replace the lost node in the data group", Duration::from_secs(60), || {
        let v = voters(&nodes[p]);
        (v.len() == 3 && v.contains(&spare_id) && !v.contains(&leader)).then_some(())
    });
    wait_for("the spare to replace the lost node in the manager group", Duration::from_secs(60), || {
        let (l, v) = managers(&nodes[p]);
        (l.is_some_and(|l| l != leader) && v.len() == 3 && v.contains(&spare_id) && !v.contains(&leader)).then_some(())
    });
    assert_eq!(nodes[p].role(), Role::Primary, "the data group kept its primary");
    wait_rows(&nodes[spare], 50);
    insert(&nodes[p], 51..=60).unwrap();
    wait_rows(&nodes[spare], 60);
    // The spare's copy of the directory was built from the manager's log
    // (or its snapshot): it lists the nodes too.
    wait_for("the spare's directory", Duration::from_secs(10), || {
        (nodes[spare].group().directory().nodes.len() == 4).then_some(())
    });
    // The status shows each node's part in the manager group.
    wait_for("the status to show the new manager member", Duration::from_secs(10), || {
        let rows = nodes[p].group().status().nodes();
        let part = |id: u64| rows.iter().find(|r| r.id == id).and_then(|r| r.manager);
        (part(spare_id).is_some() && rows.iter().filter(|r| r.manager == Some(ManagerRole::Leader)).count() == 1)
            .then_some(())
    });
    for n in nodes.iter_mut().filter(|n| n.group.is_some()) {
        n.stop();
    }
}

#[test]
fn two_data_groups_share_the_nodes_with_their_primaries_apart() {
    init_tracing();
    let root = tempfile::tempdir().unwrap();
    // Snapshots every 30 entries: each group snapshots and purges its own.
    let (mut nodes, join) = cluster_with(root.path(), 30);
    let p = primary(&nodes);
    // Every node hosts group 1 for stream 5; a node other than the first
    // group's primary forms it, and leads it.
    for n in &nodes {
        n.group().host(1, &[5]).unwrap();
    }
    let q = (p + 1) % 3;
    let voters: std::collections::BTreeMap<u64, NodeInfo> = nodes
        .iter()
        .map(|n| (n.id, NodeInfo { rpc_addr: n.addr.clone(), pg_addr: String::new(), ..Default::default() }))
        .collect();
    nodes[q].group().form(1, voters).unwrap();
    let mut g1 = primary_of(&nodes, 1);
    if g1 != q {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let to = nodes[q].id;
        rt.block_on(nodes[g1].group().raft_of(1).unwrap().trigger().transfer_leader(to)).unwrap();
        wait_for("group 1's primary to move", Duration::from_secs(10), || (primary_of(&nodes, 1) == q).then_some(()));
        g1 = q;
    }
    assert_ne!(g1, p, "the two groups' primaries are on different nodes");
    let first = nodes[p].id;
    assert!(matches!(nodes[g1].role(), Role::Secondary { primary, .. } if primary == first));

    // Each primary commits to its own group's stream; every node gets both.
    let system = nodes[p].group().node().system().clone();
    system.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap();
    let part = nodes[g1].group().node().open_partition(5, true).unwrap();
    part.create_table(TableSpec::new("u", vec![0], IndexKind::Ordered)).unwrap();
    insert(&nodes[p], 1..=40).unwrap();
    insert_in(&nodes[g1], 5, 1..=40);
    for n in &nodes {
        wait_rows(n, 40);
        wait_for("stream 5's rows", Duration::from_secs(30), || {
            (ids_in(n, 5) == (1..=40).collect::<Vec<_>>()).then_some(())
        });
    }
    // The first group's primary is a secondary of the second: it may not
    // write the second group's stream (nothing is written).
    {
        let engine = nodes[p].group().node().partition(5).unwrap();
        let mut tx = engine.begin(Isolation::Snapshot).unwrap();
        tx.insert(&engine.table("u").unwrap(), row(1000)).unwrap();
        assert!(tx.commit().is_err(), "a secondary of group 1 committed to its stream");
    }

    // Group 1's primary adds stream 6 (a split's new partition) and
    // writes it; every replica takes the stream up from the group's log.
    nodes[g1].group().groups().adopt(1, 6).unwrap();
    let new = nodes[g1].group().node().open_partition(6, true).unwrap();
    new.create_table(TableSpec::new("u", vec![0], IndexKind::Ordered)).unwrap();
    insert_in(&nodes[g1], 6, 1..=20);
    for n in &nodes {
        wait_for("stream 6's rows", Duration::from_secs(30), || {
            (ids_in(n, 6) == (1..=20).collect::<Vec<_>>()).then_some(())
        });
    }
    assert!(!nodes[p].group().groups().in_system_group(6), "the first group's primary counts stream 6 group 1's");

    // Group 1's primary is lost: its group elects another; the first
    // group keeps its primary, and both go on.
    nodes[g1].stop();
    let g1b = primary_of(&nodes, 1);
    assert_ne!(g1b, g1);
    assert_eq!(primary(&nodes), p, "the first group kept its primary");
    insert(&nodes[p], 41..=80).unwrap();
    insert_in(&nodes[g1b], 5, 41..=80);
    // The new primary writes stream 6 through group 1; the first group's
    // primary (a secondary of group 1, or outside it) may not write it.
    insert_in(&nodes[g1b], 6, 21..=40);
    if g1b != p {
        let engine = nodes[p].group().node().partition(6).unwrap();
        let mut tx = engine.begin(Isolation::Snapshot).unwrap();
        tx.insert(&engine.table("u").unwrap(), row(1000)).unwrap();
        assert!(tx.commit().is_err(), "the first group's primary committed to group 1's new stream");
    }

    // The lost node returns: each group catches it up (from the log, or the
    // group's own snapshot), and neither group's snapshot wipes the other's stream.
    nodes[g1].start(&join);
    nodes[g1].group().host(1, &[5]).unwrap();
    wait_rows(&nodes[g1], 80);
    wait_for("the returned node's stream 5", Duration::from_secs(30), || {
        (ids_in(&nodes[g1], 5) == (1..=80).collect::<Vec<_>>()).then_some(())
    });
    wait_for("the returned node's stream 6", Duration::from_secs(30), || {
        (ids_in(&nodes[g1], 6) == (1..=40).collect::<Vec<_>>()).then_some(())
    });
    assert!(snapshot_state(&nodes[p]).0.is_some(), "the first group snapshotted");
    for n in nodes.iter_mut() {
        n.stop();
    }
}

/// Data group `group`'s voters as `node`'s Raft knows them (empty if not hosted).
fn group_voters(node: &TestNode, group: u32) -> Vec<u64> {
    use openraft::async_runtime::WatchReceiver;
    let Some(raft) = node.group().raft_of(group) else { return Vec::new() };
    let m = raft.metrics().borrow_watched().clone();
    m.membership_config.membership().voter_ids().collect()
}

/// For each data group, the node (index) that is its primary, once every
/// group has exactly one among the live nodes.
fn primaries(nodes: &[TestNode], groups: &[u32]) -> Option<Vec<usize>> {
    groups
        .iter()
        .map(|&g| {
            let p: Vec<usize> = (0..nodes.len())
                .filter(|&i| {
                    nodes[i].group.as_ref().and_then(|n| n.role_of(g)).is_some_and(|r| *r.borrow() == Role::Primary)
                })
                .collect();
            (p.len() == 1).then(|| p[0])
        })
        .collect()
}

#[test]
fn the_manager_places_each_groups_replicas_and_spreads_their_primaries() {
    init_tracing();
    let root = tempfile::tempdir().unwrap();
    let (mut nodes, _join) = cluster_of(root.path(), 4, 40, Duration::from_secs(1));
    let p = primary(&nodes);
    wait_for("the manager's directory", Duration::from_secs(20), || {
        (0..4).find_map(|i| (nodes[i].group().directory().nodes.len() == 4).then_some(()))
    });
    // Three groups of three replicas and one of two, all created on the
    // first group's primary: it starts as the primary of all five.
    for g in 1..=3 {
        nodes[p].group().create_group(g, &[g], 3).unwrap();
    }
    nodes[p].group().create_group(4, &[4], 2).unwrap();
    let groups = [0, 1, 2, 3, 4];
    // The manager builds each group's replicas (its own count), and moves
    // primaries until no node leads two more groups than another.
    wait_for("the groups' replicas and spread primaries", Duration::from_secs(60), || {
        let sized = (1..=4).all(|g| {
            let want = if g == 4 { 2 } else { 3 };
            group_voters(&nodes[p], g).len() == want || (0..4).any(|i| group_voters(&nodes[i], g).len() == want)
        });
        let leaders = primaries(&nodes, &groups)?;
        let mut counts = [0usize; 4];
        for &l in &leaders {
            counts[l] += 1;
        }
        (sized && counts.iter().max() <= Some(&2) && counts.iter().filter(|&&c| c > 0).count() >= 3).then_some(leaders)
    });
    // Each group's primary commits to the group's stream; its voters (and
    // only they) hold the rows. (The manager may still move a primary:
    // writes follow it.)
    for &g in &groups[1..] {
        write_group(&nodes, g, |engine| {
            if engine.table("u").is_none() {
                engine.create_table(TableSpec::new("u", vec![0], IndexKind::Ordered))?;
            }
            Ok(())
        });
        for id in 1..=20 {
            write_group(&nodes, g, |engine| upsert(engine, id));
        }
    }
    for &g in &groups[1..] {
        let voters = wait_for("the group's voters", Duration::from_secs(10), || {
            (0..4).map(|i| group_voters(&nodes[i], g)).find(|v| !v.is_empty())
        });
        for n in &nodes {
            let holds = voters.contains(&n.id);
            wait_for(&format!("group {g} rows on node {} (a voter: {holds})", n.id), Duration::from_secs(30), || {
                let rows = ids_in(n, g);
                (if holds { rows == (1..=20).collect::<Vec<_>>() } else { rows.is_empty() }).then_some(())
            });
        }
    }
    // A node leading a group other than the first is lost for good: its
    // groups fail over, and the manager rebuilds their replicas elsewhere.
    let now = primaries(&nodes, &groups).expect("every group has a primary");
    let led_elsewhere = |k: &usize| now[*k] != p;
    let k = (1..4).find(led_elsewhere).or_else(|| (4..5).find(led_elsewhere)).expect("a group led elsewhere");
    let lost = now[k];
    let lost_id = nodes[lost].id;
    // A group of two that loses one has no quorum left: nothing can
    // rebuild it (nor should: its last writes may be on the lost node).
    let stranded =
        (0..4).map(|i| group_voters(&nodes[i], 4)).find(|v| !v.is_empty()).is_some_and(|v| v.contains(&lost_id));
    nodes[lost].stop();
    let alive: Vec<usize> = (0..4).filter(|&i| i != lost).collect();
    for &g in &groups[1..] {
        let want = if g == 4 { 2 } else { 3 };
        if g == 4 && stranded {
            continue;
        }
        wait_for(&format!("group {g} at {want} voters without node {lost_id}"), Duration::from_secs(60), || {
            alive
                .iter()
                .map(|&i| group_voters(&nodes[i], g))
                .find(|v| v.len() == want && !v.contains(&lost_id))
                .map(|_| ())
        });
    }
    let g = groups[k];
    if g == 4 && stranded {
        for i in alive {
            nodes[i].stop();
        }
        return;
    }
    for id in 21..=30 {
        write_group(&nodes, g, |engine| upsert(engine, id));
    }
    let leader = primary_of(&nodes, g);
    assert_eq!(ids_in(&nodes[leader], g), (1..=30).collect::<Vec<_>>());
    for i in alive {
        nodes[i].stop();
    }
}

/// Runs `f` on data group `group`'s stream at its primary, again at the
/// primary of the moment while it fails (a primary that moves refuses).
#[test]
fn a_removed_group_leaves_every_node_also_one_that_was_away() {
    init_tracing();
    let root = tempfile::tempdir().unwrap();
    // Snapshots every 40 entries: the group has some on every node.
    let (mut nodes, join) = cluster_with(root.path(), 40);
    let p = primary(&nodes);
    wait_for("the manager's directory", Duration::from_secs(20), || {
        (0..3).find_map(|i| (nodes[i].group().directory().nodes.len() == 3).then_some(()))
    });
    let first = nodes[p].group().node().system().clone();
    first.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap();
    nodes[p].group().create_group(1, &[1], 3).unwrap();
    write_group(&nodes, 1, |engine| {
        if engine.table("u").is_none() {
            engine.create_table(TableSpec::new("u", vec![0], IndexKind::Ordered))?;
        }
        Ok(())
    });
    for id in 1..=60 {
        write_group(&nodes, 1, |engine| upsert(engine, id));
    }
    let snapshots = |n: &TestNode| n.dir.join("snapshots-1");
    for n in &nodes {
        wait_for(&format!("group 1's rows and a snapshot on node {}", n.id), Duration::from_secs(30), || {
            (ids_in(n, 1) == (1..=60).collect::<Vec<_>>() && snapshots(n).exists()).then_some(())
        });
    }
    // A node is away when the group is removed (the primary of the first
    // group asks; the group's own primary may be anywhere).
    let away = (0..3).find(|&i| i != p).unwrap();
    nodes[away].stop();
    nodes[p].group().remove_group(1).unwrap();
    let gone = |n: &TestNode| {
        let g = n.group();
        (g.raft_of(1).is_none()
            && g.role_of(1).is_none()
            && g.node().partition(1).is_none()
            && !g.log_holds(1)
            && !snapshots(n).exists())
        .then_some(())
    };
    for n in nodes.iter().filter(|n| n.group.is_some()) {
        wait_for(&format!("group 1 gone from node {}", n.id), Duration::from_secs(30), || gone(n));
    }
    // The stream stays with the removed group: a write to it is refused
    // rather than landing in the first group.
    let engine = nodes[p].group().node().open_partition(1, true).unwrap();
    let t = engine.create_table(TableSpec::new("u", vec![0], IndexKind::Ordered));
    assert!(t.is_err(), "a write to a removed group's stream went through");
    nodes[p].group().node().drop_partition(1).unwrap();
    // The node that was away removes its replica when it returns, and
    // still serves the first group.
    nodes[away].start(&join);
    wait_for("group 1 gone from the returning node", Duration::from_secs(30), || gone(&nodes[away]));
    insert(&nodes[primary(&nodes)], 1..=3).unwrap();
    wait_rows(&nodes[away], 3);
    for n in &mut nodes {
        n.stop();
    }
}

fn write_group(nodes: &[TestNode], group: u32, f: impl Fn(&tessera_engine::Engine) -> Result<(), EngineError>) {
    wait_for(&format!("a write to group {group}"), Duration::from_secs(30), || {
        let p = primary_of(nodes, group);
        let engine = nodes[p].group().node().open_partition(group, false).ok()?;
        f(&engine).ok()
    });
}

/// Writes row `id` of table `u` (again, if an earlier try's outcome was unknown).
fn upsert(engine: &tessera_engine::Engine, id: i64) -> Result<(), EngineError> {
    let t = engine.table("u").expect("table u");
    let mut tx = engine.begin(Isolation::Snapshot)?;
    tx.put(&t, row(id), tessera_engine::PutCondition::Always)?;
    tx.commit().map(|_| ())
}
