//! Where replicas and primaries go.

use crate::decide::Action;
use crate::map::{ClusterMap, Move, NodeId, PartitionId, PartitionInfo, Role};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error("{wanted} replicas need {wanted} live nodes; {usable} can take one")]
    NotEnoughNodes { wanted: usize, usable: usize },
}

/// Picks `count` nodes for new replicas, none of them in `exclude` (the
/// nodes that already hold one): live, not draining, distinct, in failure
/// domains not used yet (by `exclude` or earlier picks) while there are
/// such, and the least loaded first: fewest replicas, then fewest
/// primaries, then the least busy CPU (in steps of a quarter core, so that
/// noise does not decide; a node that has not reported counts as idle),
/// then the lowest id, so the choice is deterministic.
pub fn place(map: &ClusterMap, count: usize, exclude: &[NodeId]) -> Result<Vec<NodeId>, PlacementError> {
    let mut used_domains: Vec<&str> =
        exclude.iter().filter_map(|n| map.nodes.get(n)).map(|n| n.failure_domain.as_str()).collect();
    let mut candidates: Vec<_> = map.usable_nodes().filter(|n| !exclude.contains(&n.id)).collect();
    if candidates.len() < count {
        return Err(PlacementError::NotEnoughNodes { wanted: count, usable: candidates.len() });
    }
    candidates.sort_by_key(|n| {
        let (replicas, primaries) = map.load(n.id);
        (replicas, primaries, n.cpu_percent.unwrap_or(0) / 25, n.id)
    });
    let mut picked = Vec::with_capacity(count);
    while picked.len() < count {
        // The least loaded node of a new failure domain, else of any.
        let i = candidates.iter().position(|n| !used_domains.contains(&n.failure_domain.as_str())).unwrap_or(0);
        let node = candidates.remove(i);
        used_domains.push(node.failure_domain.as_str());
        picked.push(node.id);
    }
    Ok(picked)
}

/// Leadership transfers that even out the primaries over the live nodes
/// (each node ends within one primary of every other, where the replicas
/// allow it), moving each primary to a secondary of the partition: of the
/// busiest node's primaries, one that serves no sessions first, then to
/// the least loaded node.
///
/// A draining node takes no primary, and the primaries it holds (one it
/// won in an election after its drain, say) move first, each to the
/// up-to-date secondary on a usable node with the fewest primaries.
pub fn balance_primaries(map: &ClusterMap) -> Vec<Action> {
    let mut map = map.clone();
    let mut actions = Vec::new();
    let usable = |map: &ClusterMap, node: NodeId| map.nodes.get(&node).is_some_and(|n| n.live && !n.draining);
    let draining = |map: &ClusterMap, node: NodeId| map.nodes.get(&node).is_some_and(|n| n.draining);
    let off: Vec<(u64, NodeId)> = (map.partitions.values())
        .filter_map(|p| p.primary().filter(|r| draining(&map, r.node)).map(|r| (p.id, r.node)))
        .collect();
    for (partition, from) in off {
        let p = &map.partitions[&partition];
        let last = p.primary().map_or(0, |r| r.applied);
        let to = (p.replicas.iter())
            .filter(|r| r.role == Role::Secondary && r.applied >= last && usable(&map, r.node))
            .min_by_key(|r| (map.load(r.node).1, r.node));
        if let Some(to) = to.map(|r| r.node) {
            let action = Action::TransferLeadership { partition, from, to };
            map.apply(&action);
            actions.push(action);
        }
    }
    loop {
        let counts: Vec<(usize, NodeId)> = map.usable_nodes().map(|n| (map.load(n.id).1, n.id)).collect::<Vec<_>>();
        let Some(&(most, busy)) = counts.iter().max_by_key(|(c, id)| (*c, std::cmp::Reverse(*id))) else {
            break;
        };
        // A partition whose primary is on the busiest node and which has an
        // up-to-date secondary on a node with at least two primaries fewer.
        let mut best: Option<(bool, usize, NodeId, u64)> = None;
        for p in map.partitions.values().filter(|p| p.primary().is_some_and(|r| r.node == busy)) {
            let last = p.primary().map_or(0, |r| r.applied);
            for r in p.replicas.iter().filter(|r| r.role == Role::Secondary && r.applied >= last) {
                let Some(&(c, _)) = counts.iter().find(|(_, id)| *id == r.node) else { continue };
                let key = (p.serves_sessions, c, r.node);
                if c + 2 <= most && best.is_none_or(|(bs, bc, bn, _)| key < (bs, bc, bn)) {
                    best = Some((p.serves_sessions, c, r.node, p.id));
                }
            }
        }
        let Some((_, _, to, partition)) = best else { break };
        let action = Action::TransferLeadership { partition, from: busy, to };
        map.apply(&action);
        actions.push(action);
    }
    actions
}

/// The replica move that evens out the replicas over the usable nodes, if
/// one is due: when some usable node holds at least two replicas more than
/// another (a node that joined holds none), a partition with a secondary on
/// the fuller node and no replica on the emptier one moves that replica
/// there. Of the pairs of nodes, the fullest and the emptiest first; of the
/// partitions, the lowest id.
///
/// Moves wait for a settled cluster: while any partition has a build or
/// catch-up under way, is short of (or over) its target, or moving, none
/// is proposed (the counts are about to change, and a partition being
/// formed or repaired must not race a move). The moved partition must
/// also have a quorum and not be unavailable. The move keeps the partition's failure domains as distinct as they
/// were: the new node's domain is not one its other replicas use, unless
/// the replica it replaces shared one already.
///
/// Counts are of the partitions in `map`: the caller puts there the ones
/// that may move (a cluster's databases, not its catalog).
pub fn balance_replicas(map: &ClusterMap) -> Option<(PartitionId, Move)> {
    if !map.partitions.values().all(settled) {
        return None;
    }
    let mut nodes: Vec<(usize, NodeId)> = map.usable_nodes().map(|n| (map.load(n.id).0, n.id)).collect();
    nodes.sort();
    for &(most, from) in nodes.iter().rev() {
        for &(least, to) in &nodes {
            if least + 2 > most {
                break;
            }
            if let Some(p) = map.partitions.values().find(|p| may_move(map, p, from, to)) {
                return Some((p.id, Move { from, to }));
            }
        }
    }
    None
}

/// Whether `p`'s secondary on `from` may move to `to` (see `balance_replicas`).
fn may_move(map: &ClusterMap, p: &PartitionInfo, from: NodeId, to: NodeId) -> bool {
    let healthy = !p.unavailable && p.voters().filter(|r| map.is_live(r.node)).count() >= p.quorum();
    if !healthy || p.replica_on(to).is_some() || p.replica_on(from).is_none_or(|r| r.role != Role::Secondary) {
        return false;
    }
    let domain = |n: NodeId| map.nodes.get(&n).map_or("", |i| i.failure_domain.as_str());
    let others: Vec<&str> = p.voters().filter(|r| r.node != from).map(|r| domain(r.node)).collect();
    !others.contains(&domain(to)) || others.contains(&domain(from))
}

/// Whether a partition has its target count of voters and nothing under
/// way: no build, no catch-up, no move.
fn settled(p: &PartitionInfo) -> bool {
    p.moving.is_none()
        && p.replicas.iter().all(|r| r.role.votes() || r.role == Role::Removed)
        && p.voters().count() == p.target
}
