//! Quiet groups, with three nodes in one process: an idle data group stops
//! Raft's heartbeats on every replica and its primary keeps serving on its
//! voters' confirmations; a write wakes it and reaches every replica; a
//! secondary that restarts wakes it without costing it its primary; and
//! when the quiet primary's node stops, the others elect a new primary.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use openraft::Instant as _;
use openraft::async_runtime::WatchReceiver;
use tessera_engine::{IndexKind, TableSpec};
use tessera_replication::{NodeInfo, ReplicaRole, Role};

/// How long ago the primary of group `group` on `node` last heard from
/// each of its secondaries (heartbeat or replication answer).
fn last_heard(node: &TestNode, group: u32) -> Vec<Duration> {
    let m = node.group().raft_of(group).unwrap().metrics().borrow_watched().clone();
    let me = node.id;
    m.heartbeat
        .as_ref()
        .map(|hb| hb.iter().filter(|(id, _)| **id != me).filter_map(|(_, t)| t.as_ref().map(|t| t.elapsed())).collect())
        .unwrap_or_default()
}

fn all_quiet(nodes: &[TestNode], group: u32) -> bool {
    nodes.iter().filter(|n| n.group.is_some()).all(|n| n.group().is_quiet(group))
}

#[test]
fn an_idle_group_goes_quiet_keeps_its_primary_wakes_to_write_and_fails_over() {
    init_tracing();
    let root = tempfile::tempdir().unwrap();
    let (mut nodes, join) = cluster(root.path());
    primary(&nodes);
    for n in &nodes {
        n.group().host(1, &[5]).unwrap();
    }
    let voters: BTreeMap<u64, NodeInfo> = nodes
        .iter()
        .map(|n| (n.id, NodeInfo { rpc_addr: n.addr.clone(), pg_addr: String::new(), ..Default::default() }))
        .collect();
    nodes[0].group().form(1, voters).unwrap();
    let p = primary_of(&nodes, 1);
    let part = nodes[p].group().node().open_partition(5, true).unwrap();
    part.create_table(TableSpec::new("u", vec![0], IndexKind::Ordered)).unwrap();
    insert_in(&nodes[p], 5, 1..=10);

    // Idle for a while: every replica stops Raft's timers.
    wait_for("group 1 to go quiet on every node", Duration::from_secs(20), || all_quiet(&nodes, 1).then_some(()));
    assert!(!nodes[p].group().is_quiet(0), "the first group never goes quiet");
    // No heartbeat goes out, and yet the primary keeps its role (its lease
    // rests on the secondaries' confirmations): for three seconds, several
    // times Raft's own lease.
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        assert_eq!(nodes[p].group().role_of(1).unwrap().borrow().clone(), Role::Primary);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        last_heard(&nodes[p], 1).iter().all(|t| *t >= Duration::from_secs(2)),
        "the quiet primary still heard from its secondaries by Raft: {:?}",
        last_heard(&nodes[p], 1)
    );
    // The manager still counts the quiet secondaries alive.
    let replicas = nodes[p].group().groups().replicas_of(1).unwrap();
    assert!(replicas.iter().all(|r| matches!(r.role, ReplicaRole::Primary | ReplicaRole::Secondary)), "{replicas:?}");

    // A write wakes the group and reaches every replica.
    let started = Instant::now();
    insert_in(&nodes[p], 5, 11..=20);
    assert!(started.elapsed() < Duration::from_secs(2), "a write to a quiet group took {:?}", started.elapsed());
    for n in &nodes {
        wait_for("the rows written after quiet", Duration::from_secs(10), || {
            (ids_in(n, 5) == (1..=20).collect::<Vec<_>>()).then_some(())
        });
    }
    wait_for("group 1 to go quiet again", Duration::from_secs(20), || all_quiet(&nodes, 1).then_some(()));

    // A secondary restarts: it does not confirm, so the group wakes, and
    // it keeps its primary.
    let s = (p + 1) % 3;
    nodes[s].stop();
    wait_for("the group to wake without its secondary", Duration::from_secs(10), || {
        (!nodes[p].group().is_quiet(1)).then_some(())
    });
    nodes[s].start(&join);
    nodes[s].group().host(1, &[5]).unwrap();
    insert_in(&nodes[p], 5, 21..=30);
    wait_for("the restarted secondary's rows", Duration::from_secs(20), || {
        (ids_in(&nodes[s], 5) == (1..=30).collect::<Vec<_>>()).then_some(())
    });
    wait_for("group 1 to go quiet once more", Duration::from_secs(20), || all_quiet(&nodes, 1).then_some(()));
    assert_eq!(primary_of(&nodes, 1), p, "a secondary's restart moved the primary");

    // The quiet primary's node stops: the others stop hearing it, wake the
    // group and elect a new primary, which writes.
    nodes[p].stop();
    let started = Instant::now();
    let q = primary_of(&nodes, 1);
    let took = started.elapsed();
    assert_ne!(q, p);
    assert!(took < Duration::from_secs(10), "the quiet group took {took:?} to elect a new primary");
    insert_in(&nodes[q], 5, 31..=40);
    for n in nodes.iter().filter(|n| n.group.is_some()) {
        wait_for("the new primary's rows", Duration::from_secs(10), || {
            (ids_in(n, 5) == (1..=40).collect::<Vec<_>>()).then_some(())
        });
    }

    // The lease statements check: held by the new primary, lapsed within
    // a second once it is alone.
    assert!(nodes[q].group().groups().holds_lease(1));
    let other = (0..3).find(|&i| i != p && i != q).unwrap();
    nodes[other].stop();
    wait_for("the lone primary's lease to lapse", Duration::from_secs(10), || {
        (!nodes[q].group().groups().holds_lease(1)).then_some(())
    });
    for n in nodes.iter_mut().filter(|n| n.group.is_some()) {
        n.stop();
    }
}
