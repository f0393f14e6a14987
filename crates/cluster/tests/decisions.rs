//! The partition manager's decisions, played as stories on a cluster map:
//! no clocks, no sockets, every step checked.

use tessera_cluster::*;

/// Nodes 1..=n, node i in failure domain "rack<i>" and upgrade domain "ud<i % 2>".
fn cluster(n: u64) -> ClusterMap {
    let mut m = ClusterMap::default();
    for i in 1..=n {
        m.add_node(i, &format!("rack{i}"), &format!("ud{}", i % 2));
    }
    m
}

fn roles(m: &ClusterMap, p: PartitionId) -> Vec<(NodeId, Role)> {
    let mut v: Vec<(NodeId, Role)> = m.partitions[&p].replicas.iter().map(|r| (r.node, r.role)).collect();
    v.sort();
    v
}

fn fail(m: &mut ClusterMap, node: NodeId) -> Vec<Action> {
    m.nodes.get_mut(&node).unwrap().live = false;
    let actions = react_to_failure(m, node);
    for a in &actions {
        m.apply(a);
    }
    actions
}

#[test]
fn replicas_go_to_distinct_failure_domains_and_primaries_spread() {
    let mut m = ClusterMap::default();
    // Two racks with two nodes each, and a fifth node alone in a third rack.
    for (id, rack) in [(1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "c")] {
        m.add_node(id, rack, "ud");
    }
    let nodes = place(&m, 3, &[]).unwrap();
    let racks: std::collections::BTreeSet<&str> = nodes.iter().map(|n| m.nodes[n].failure_domain.as_str()).collect();
    assert_eq!(racks.len(), 3, "{nodes:?}");
    // With more replicas than racks, nodes stay distinct.
    let five = place(&m, 5, &[]).unwrap();
    assert_eq!(five.iter().collect::<std::collections::BTreeSet<_>>().len(), 5);
    assert_eq!(place(&m, 6, &[]), Err(PlacementError::NotEnoughNodes { wanted: 6, usable: 5 }));

    // Six partitions of three replicas on three nodes, all primaries on node 1:
    // balancing leaves two primaries per node.
    let mut m = cluster(3);
    for p in 1..=6 {
        m.add_partition(p, &[1, 2, 3]);
    }
    let moves = balance_primaries(&m);
    for a in &moves {
        m.apply(a);
    }
    let primaries: Vec<usize> = (1..=3).map(|n| m.load(n).1).collect();
    assert_eq!(primaries, vec![2, 2, 2], "{moves:?}");
    assert!(balance_primaries(&m).is_empty(), "balanced stays balanced");

    // Primaries whose moves end client sessions (databases' homes) move
    // only when moving the others does not even the counts out.
    let mut m = cluster(3);
    for p in 1..=6 {
        m.add_partition(p, &[1, 2, 3]);
        m.partitions.get_mut(&p).unwrap().serves_sessions = p <= 2;
    }
    let moves = balance_primaries(&m);
    let moved: Vec<PartitionId> = moves
        .iter()
        .map(|a| match a {
            Action::TransferLeadership { partition, .. } => *partition,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(moved.len(), 4, "{moves:?}");
    assert!(moved.iter().all(|p| *p > 2), "homes stay while partitions can move: {moves:?}");
    let mut m = cluster(3);
    for p in 1..=3 {
        m.add_partition(p, &[1, 2, 3]);
        m.partitions.get_mut(&p).unwrap().serves_sessions = true;
    }
    assert_eq!(balance_primaries(&m).len(), 2, "homes move when nothing else evens the counts");
}

#[test]
fn losing_a_primary_promotes_the_most_up_to_date_secondary_and_rebuilds_elsewhere() {
    let mut m = cluster(4);
    m.add_partition(7, &[1, 2, 3]);
    {
        let p = m.partitions.get_mut(&7).unwrap();
        p.replicas[0].applied = 100;
        p.replicas[1].applied = 90;
        p.replicas[2].applied = 99;
    }
    let actions = fail(&mut m, 1);
    assert_eq!(
        actions,
        vec![
            Action::Promote { partition: 7, node: 3, epoch: 2 },
            Action::Downshift { partition: 7, node: 1 },
            Action::Build { partition: 7, node: 4 },
        ]
    );
    assert_eq!(roles(&m, 7), vec![(1, Role::Removed), (2, Role::Secondary), (3, Role::Primary), (4, Role::Building)]);
    assert_eq!(m.partitions[&7].epoch, 2);
    m.caught_up(7, 4);
    assert_eq!(m.partitions[&7].voters().count(), 3);

    // Node 1 returns: its place was taken, so its copy is dropped.
    m.nodes.get_mut(&1).unwrap().live = true;
    assert_eq!(react_to_return(&m, 1), vec![Action::Drop { partition: 7, node: 1 }]);
}

#[test]
fn losing_a_secondary_downshifts_and_waits_for_a_node_when_none_is_free() {
    let mut m = cluster(3);
    m.add_partition(1, &[1, 2, 3]);
    let actions = fail(&mut m, 3);
    // No fourth node: the partition runs on two replicas (still a quorum of three's configuration).
    assert_eq!(actions, vec![Action::Downshift { partition: 1, node: 3 }]);
    assert_eq!(m.partitions[&1].quorum(), 2);
    assert!(!m.partitions[&1].unavailable);
}

#[test]
fn a_returning_replica_catches_up_from_the_log_or_is_rebuilt() {
    let mut m = cluster(3);
    m.add_partition(1, &[1, 2, 3]);
    m.add_partition(2, &[2, 3, 1]);
    fail(&mut m, 3);
    // While node 3 was away, partition 2's primary kept its log from index 50;
    // partition 1's primary truncated its log up to 500.
    for (p, applied, log_start) in [(1, 400, 500), (2, 60, 50)] {
        let p = m.partitions.get_mut(&p).unwrap();
        p.log_start = log_start;
        p.replicas.iter_mut().find(|r| r.node == 3).unwrap().applied = applied;
    }
    m.nodes.get_mut(&3).unwrap().live = true;
    let actions = react_to_return(&m, 3);
    assert_eq!(actions, vec![Action::Rebuild { partition: 1, node: 3 }, Action::CatchUp { partition: 2, node: 3 }]);
    for a in &actions {
        m.apply(a);
    }
    assert_eq!(m.partitions[&1].replica_on(3).unwrap().role, Role::Building);
    assert_eq!(m.partitions[&2].replica_on(3).unwrap().role, Role::CatchingUp);
}

#[test]
fn a_partition_without_a_quorum_refuses_writes_and_never_gets_a_second_primary() {
    let mut m = cluster(3);
    m.add_partition(1, &[1, 2, 3]);
    fail(&mut m, 2);
    assert_eq!(m.partitions[&1].voters().count(), 2, "downshifted to 2");
    // The second loss leaves 1 of 2: no quorum.
    let actions = fail(&mut m, 1);
    assert_eq!(actions, vec![Action::Unavailable { partition: 1 }]);
    assert!(m.partitions[&1].unavailable);
    assert!(!actions.iter().any(|a| matches!(a, Action::Promote { .. })));
    // Node 1 (the old primary, with the most applied) returns: a quorum of
    // the configuration is live again and a primary is elected.
    m.nodes.get_mut(&1).unwrap().live = true;
    let back = react_to_return(&m, 1);
    assert_eq!(back, vec![Action::Promote { partition: 1, node: 1, epoch: 2 }]);
    m.apply(&back[0]);
    assert!(!m.partitions[&1].unavailable);
}

#[test]
fn draining_moves_primaries_away_and_refuses_to_break_a_quorum() {
    let mut m = cluster(3);
    m.add_partition(1, &[1, 2, 3]);
    m.add_partition(2, &[2, 1, 3]);
    // Node 2 already leads partition 2, so partition 1's primary goes to node 3.
    let plan = plan_drain(&m, 1).unwrap();
    assert_eq!(plan, vec![Action::TransferLeadership { partition: 1, from: 1, to: 3 }]);

    // With node 3 already down, draining node 1 would leave one of three.
    m.nodes.get_mut(&3).unwrap().live = false;
    let refused = plan_drain(&m, 1).unwrap_err();
    assert_eq!(refused.partition, 1);
    assert_eq!((refused.live, refused.voters, refused.quorum), (2, 3, 2));
    assert!(refused.to_string().contains("would cost partition 1 its quorum"), "{refused}");
}

/// A drained node stays drained: balancing moves no primary to it, even
/// when it leads the fewest, and moves off it any primary it gets back
/// (by an election), to a usable node.
#[test]
fn balancing_keeps_primaries_off_a_draining_node() {
    let mut m = cluster(3);
    for p in 1..=4 {
        m.add_partition(p, &[1, 2, 3]);
    }
    // Node 3 was drained: nodes 1 and 2 lead two each, node 3 none.
    m.apply(&Action::TransferLeadership { partition: 3, from: 1, to: 2 });
    m.apply(&Action::TransferLeadership { partition: 4, from: 1, to: 2 });
    m.nodes.get_mut(&3).unwrap().draining = true;
    assert_eq!(balance_primaries(&m), vec![], "nothing moves to the draining node");
    // Without the drain, node 3 would get one.
    m.nodes.get_mut(&3).unwrap().draining = false;
    assert_eq!(balance_primaries(&m).len(), 1);

    // Node 3 wins an election for partition 1 while it drains: the
    // primary moves to the usable node with the fewest primaries.
    m.nodes.get_mut(&3).unwrap().draining = true;
    m.apply(&Action::TransferLeadership { partition: 1, from: 1, to: 3 });
    let moves = balance_primaries(&m);
    assert_eq!(moves, vec![Action::TransferLeadership { partition: 1, from: 3, to: 1 }]);
    // A secondary behind the primary does not take it over.
    m.partitions.get_mut(&1).unwrap().replicas.iter_mut().find(|r| r.node == 1).unwrap().applied = 0;
    m.partitions.get_mut(&1).unwrap().replicas.iter_mut().find(|r| r.node == 3).unwrap().applied = 5;
    m.partitions.get_mut(&1).unwrap().replicas.iter_mut().find(|r| r.node == 2).unwrap().applied = 5;
    let moves = balance_primaries(&m);
    assert_eq!(moves.first(), Some(&Action::TransferLeadership { partition: 1, from: 3, to: 2 }), "{moves:?}");
    // Draining another node prefers a successor that is not draining.
    let mut m = cluster(3);
    m.add_partition(1, &[1, 2, 3]);
    m.nodes.get_mut(&2).unwrap().draining = true;
    assert_eq!(plan_drain(&m, 1).unwrap(), vec![Action::TransferLeadership { partition: 1, from: 1, to: 3 }]);
}

fn repair(m: &mut ClusterMap, overdue: &[NodeId]) -> Vec<Action> {
    let actions = plan_repair(m, overdue);
    for a in &actions {
        m.apply(a);
    }
    actions
}

/// Load figures break ties: of otherwise equal nodes, the least busy CPU
/// gets the new replica, and small differences do not count.
#[test]
fn placement_prefers_the_less_busy_of_equal_nodes() {
    let mut m = cluster(4);
    m.add_partition(1, &[1]);
    for (node, cpu) in [(2, Some(180)), (3, Some(20)), (4, None)] {
        m.nodes.get_mut(&node).unwrap().cpu_percent = cpu;
    }
    // Node 3 (20%) and node 4 (not reported: idle) tie in the same quarter
    // of a core; the lower id wins. Busy node 2 comes last.
    assert_eq!(place(&m, 2, &[1]).unwrap(), vec![3, 4]);
    assert_eq!(place(&m, 3, &[1]).unwrap(), vec![3, 4, 2]);
    m.nodes.get_mut(&3).unwrap().cpu_percent = Some(90);
    assert_eq!(place(&m, 2, &[1]).unwrap(), vec![4, 3]);
    // Replica counts still come first: a busy node with fewer replicas wins.
    m.add_partition(2, &[3, 4]);
    assert_eq!(place(&m, 1, &[1]).unwrap(), vec![2]);
}

#[test]
fn repair_replaces_an_overdue_voter_only_where_a_node_can_take_its_place() {
    // Three voters on nodes 1..3 of four; node 4 holds nothing.
    let mut m = cluster(4);
    m.add_partition(1, &[1, 2, 3]);
    assert!(repair(&mut m, &[]).is_empty(), "a healthy partition at its target needs nothing");

    // Node 3 stops answering, but not for long yet: nothing happens.
    m.nodes.get_mut(&3).unwrap().live = false;
    assert!(repair(&mut m, &[]).is_empty(), "within the grace period a lost voter is kept");
    // Overdue: downshifted and replaced on node 4.
    let actions = repair(&mut m, &[3]);
    assert_eq!(actions, vec![Action::Downshift { partition: 1, node: 3 }, Action::Build { partition: 1, node: 4 }]);
    assert_eq!(roles(&m, 1), vec![(1, Role::Primary), (2, Role::Secondary), (3, Role::Removed), (4, Role::Building)]);
    // While node 4 builds, the next look carries the build on (the runtime
    // resumes it) and adds nothing else.
    assert_eq!(repair(&mut m, &[3]), vec![Action::Build { partition: 1, node: 4 }]);
    m.caught_up(1, 4);
    assert!(repair(&mut m, &[3]).is_empty(), "back at three voters");

    // Node 3 returns: the partition has its voters, so it stays a spare.
    m.nodes.get_mut(&3).unwrap().live = true;
    assert!(repair(&mut m, &[]).is_empty());
    // Node 2 is lost for good: node 3 (a spare again) takes its place.
    m.nodes.get_mut(&2).unwrap().live = false;
    let actions = repair(&mut m, &[2]);
    assert_eq!(actions, vec![Action::Downshift { partition: 1, node: 2 }, Action::Build { partition: 1, node: 3 }]);
}

#[test]
fn repair_keeps_a_lost_voter_when_no_node_can_replace_it() {
    // Three nodes, three voters: nowhere to build, so node 3 stays in the
    // configuration and its return (catch-up) restores the quorum of three.
    let mut m = cluster(3);
    m.add_partition(1, &[1, 2, 3]);
    m.nodes.get_mut(&3).unwrap().live = false;
    assert!(repair(&mut m, &[3]).is_empty());
    // Two lost: no quorum to change the configuration with; nothing is done.
    m.nodes.get_mut(&2).unwrap().live = false;
    let mut five = cluster(5);
    five.add_partition(1, &[1, 2, 3]);
    for n in [2, 3] {
        five.nodes.get_mut(&n).unwrap().live = false;
    }
    assert!(repair(&mut five, &[2, 3]).is_empty(), "one live voter of three cannot change the configuration");
}

#[test]
fn repair_fills_a_short_partition_across_failure_domains_and_drops_dead_builds() {
    // Nodes 1..3 in racks a, a, b; a partition downshifted to two voters.
    let mut m = ClusterMap::default();
    for (id, rack) in [(1, "a"), (2, "b"), (3, "a"), (4, "c"), (5, "c")] {
        m.add_node(id, rack, "ud");
    }
    m.add_partition(1, &[1, 2, 3]);
    m.partitions.get_mut(&1).unwrap().target = 3;
    m.apply(&Action::Downshift { partition: 1, node: 3 });
    // Short by one: the new replica goes to a rack the partition is not in.
    let actions = repair(&mut m, &[]);
    assert_eq!(actions, vec![Action::Build { partition: 1, node: 4 }]);
    // The node being built dies: the build is dropped and another started.
    m.nodes.get_mut(&4).unwrap().live = false;
    let actions = repair(&mut m, &[]);
    assert_eq!(actions, vec![Action::Drop { partition: 1, node: 4 }, Action::Build { partition: 1, node: 5 }]);
    m.caught_up(1, 5);
    // A build left over once the partition has its voters is dropped.
    m.nodes.get_mut(&4).unwrap().live = true;
    m.apply(&Action::Build { partition: 1, node: 4 });
    assert_eq!(repair(&mut m, &[]), vec![Action::Drop { partition: 1, node: 4 }]);
}

#[test]
fn a_lowered_replica_count_sheds_voters_but_never_the_primary_or_a_quorum() {
    // Five voters, racks a a b c d; the count goes down to three.
    let mut m = ClusterMap::default();
    for (id, rack) in [(1, "a"), (2, "a"), (3, "b"), (4, "c"), (5, "d")] {
        m.add_node(id, rack, "ud");
    }
    m.add_partition(1, &[1, 2, 3, 4, 5]);
    for (node, applied) in [(1, 100), (2, 90), (3, 100), (4, 80), (5, 100)] {
        m.partitions.get_mut(&1).unwrap().replicas.iter_mut().find(|r| r.node == node).unwrap().applied = applied;
    }
    m.partitions.get_mut(&1).unwrap().target = 3;
    // An unreachable voter goes first; then node 2, which shares rack a
    // with the primary (the primary itself stays).
    m.nodes.get_mut(&5).unwrap().live = false;
    let actions = repair(&mut m, &[]);
    assert_eq!(actions, vec![Action::Downshift { partition: 1, node: 5 }, Action::Downshift { partition: 1, node: 2 }]);
    assert!(repair(&mut m, &[]).is_empty(), "at its target");
    // Down to one: of equal nodes, the one furthest behind goes first.
    m.partitions.get_mut(&1).unwrap().target = 1;
    let actions = repair(&mut m, &[]);
    assert_eq!(actions, vec![Action::Downshift { partition: 1, node: 4 }, Action::Downshift { partition: 1, node: 3 }]);
    assert_eq!(m.partitions[&1].voters().map(|r| r.node).collect::<Vec<_>>(), vec![1]);

    // Without a quorum of live voters nothing is shed (the change could
    // not commit).
    let mut m = cluster(3);
    m.add_partition(1, &[1, 2, 3]);
    m.partitions.get_mut(&1).unwrap().target = 1;
    for n in [2, 3] {
        m.nodes.get_mut(&n).unwrap().live = false;
    }
    assert!(repair(&mut m, &[]).is_empty());
}

/// Plays one replica move to its end the way the manager does: the move is
/// recorded on the partition, repair steps are carried out (a build becomes
/// a voter once "caught up"), and the move ends when the old replica has
/// left. Returns the steps.
fn play_move(m: &mut ClusterMap, p: PartitionId, mv: Move) -> Vec<Action> {
    m.partitions.get_mut(&p).unwrap().moving = Some(mv);
    let mut steps = Vec::new();
    for _ in 0..4 {
        let actions = plan_repair(m, &[]);
        for a in &actions {
            m.apply(a);
            if let Action::Build { partition, node } = a {
                m.caught_up(*partition, *node);
            }
        }
        steps.extend(actions);
        if m.partitions[&p].replica_on(mv.from).is_none() {
            break;
        }
    }
    m.partitions.get_mut(&p).unwrap().moving = None;
    steps
}

#[test]
fn a_node_that_joins_gets_replicas_moved_to_it_built_before_removed() {
    // Fifteen partitions of three replicas on three nodes; node 4 joins.
    let mut m = cluster(3);
    for p in 1..=15 {
        m.add_partition(p, &[(p % 3) + 1, ((p + 1) % 3) + 1, ((p + 2) % 3) + 1]);
    }
    assert_eq!(balance_replicas(&m), None, "three nodes of fifteen each are balanced");
    m.add_node(4, "rack4", "ud0");

    let mut moves = 0;
    while let Some((p, mv)) = balance_replicas(&m) {
        assert_eq!(mv.to, 4, "the empty node takes the replicas");
        assert_eq!(m.partitions[&p].replica_on(mv.from).map(|r| r.role), Some(Role::Secondary));
        let steps = play_move(&mut m, p, mv);
        // Built (and, caught up, promoted) first, then the old replica
        // leaves: never fewer than three voters.
        assert_eq!(
            steps,
            vec![Action::Build { partition: p, node: 4 }, Action::Downshift { partition: p, node: mv.from }],
            "partition {p}"
        );
        assert_eq!(m.partitions[&p].voters().count(), 3, "partition {p}");
        moves += 1;
        assert!(moves <= 15, "balancing does not end");
    }
    // 45 replicas over 4 nodes: 11 or 12 each, and the primaries follow.
    let counts: Vec<usize> = (1..=4).map(|n| m.load(n).0).collect();
    assert!(counts.iter().all(|c| (11..=12).contains(c)), "{counts:?}");
    assert_eq!(moves, 11, "{counts:?}");
    for a in balance_primaries(&m) {
        m.apply(&a);
    }
    assert!(
        m.load(4).1 >= 3,
        "node 4 leads its share of primaries: {:?}",
        (1..=4).map(|n| m.load(n)).collect::<Vec<_>>()
    );
}

#[test]
fn a_move_keeps_failure_domains_apart_and_waits_for_a_settled_partition() {
    // Nodes 1-3 in racks a, b, c; node 4 joins rack a.
    let mut m = ClusterMap::default();
    for (id, rack) in [(1, "a"), (2, "b"), (3, "c"), (4, "a")] {
        m.add_node(id, rack, "ud");
    }
    for p in 1..=6 {
        m.add_partition(p, &[1, 2, 3]);
    }
    // Only the replica in rack a (node 1's) may go to node 4, and node 1
    // leads every partition: its replicas are primaries, not secondaries.
    assert_eq!(balance_replicas(&m), None);
    for a in balance_primaries(&m) {
        m.apply(&a);
    }
    let (p, mv) = balance_replicas(&m).expect("a secondary in rack a moves to node 4");
    assert_eq!(mv, Move { from: 1, to: 4 });
    // A partition with a build under way, or short of its target, is not moved.
    m.apply(&Action::Build { partition: p, node: 4 });
    assert_ne!(balance_replicas(&m).map(|(q, _)| q), Some(p));

    // The new node dies during the move: repair drops the build and the
    // partition keeps its three replicas.
    let mut m2 = cluster(4);
    m2.add_partition(1, &[1, 2, 3]);
    m2.partitions.get_mut(&1).unwrap().moving = Some(Move { from: 2, to: 4 });
    m2.apply(&Action::Build { partition: 1, node: 4 });
    m2.nodes.get_mut(&4).unwrap().live = false;
    let steps = plan_repair(&m2, &[]);
    assert_eq!(steps, vec![Action::Drop { partition: 1, node: 4 }]);
}
