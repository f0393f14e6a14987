//! Replica moves: how the partition manager evens out the replicas of the
//! databases' groups over the nodes (a node that joins holds none).
//!
//! The decision is `tessera_cluster::balance_replicas`, on a map of every
//! database group as its primary sees it, over the nodes that hold the
//! catalog (a database's replicas live only there). A move is recorded
//! here, on the manager's leader, and handed to each round of repair as
//! the group's `moving`: repair builds the replica on the new node while
//! the group keeps its count, promotes it once caught up, and then removes
//! the replica on the old node (`plan_repair`'s `carry_on_move`). One move
//! at a time, so that the cluster copies one snapshot at a time and each
//! move shows in the views before the next is chosen.
//!
//! A move that does not finish within `MOVE_LIMIT` (its new node died or
//! the group lost its quorum) is forgotten; repair then treats the group
//! as any other, dropping an unfinished build. A new manager leader starts
//! with no move: an unfinished build is dropped the same way, and the
//! balancing starts again.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tessera_cluster::{ClusterMap, Move, PartitionInfo, Replica, Role};

use super::placement::add_node;
use super::view::GroupView;
use crate::types::{GroupId, NodeId, SYSTEM_GROUP};

/// A move not done within this long is given up.
const MOVE_LIMIT: Duration = Duration::from_secs(300);

/// The replica moves under way (at most one), on the manager's leader.
#[derive(Default)]
pub(crate) struct Moves(Mutex<HashMap<GroupId, (Move, Instant)>>);

impl Moves {
    /// The move of `group` under way, if any.
    pub(crate) fn of(&self, group: GroupId) -> Option<Move> {
        self.0.lock().get(&group).map(|(m, _)| *m)
    }

    /// Forgets the moves that are done (the old node left the group and the
    /// new one votes), whose group is gone, or that took too long; returns
    /// whether a move is still under way.
    pub(crate) fn settle(&self, views: &[(GroupId, GroupView)]) -> bool {
        let mut moves = self.0.lock();
        moves.retain(|group, (m, since)| {
            let Some((_, view)) = views.iter().find(|(g, _)| g == group) else { return false };
            let arrived = view.members.iter().any(|v| v.id == m.to && v.voter);
            let left = view.members.iter().all(|v| v.id != m.from);
            if arrived && left {
                tracing::info!(
                    group,
                    from = m.from,
                    to = m.to,
                    "data group {group}'s replica moved from node {} to node {}",
                    m.from,
                    m.to
                );
                return false;
            }
            if since.elapsed() >= MOVE_LIMIT {
                tracing::warn!(
                    group,
                    from = m.from,
                    to = m.to,
                    "gave up moving data group {group}'s replica to node {}",
                    m.to
                );
                return false;
            }
            true
        });
        !moves.is_empty()
    }

    /// Chooses the next move, if one is due and none is under way, and
    /// records it. `holders`: the nodes that hold the catalog; `live`:
    /// whether a node is heard from.
    pub(crate) fn start_next(&self, views: &[(GroupId, GroupView)], nodes: &NodesNow<'_>) -> Option<(GroupId, Move)> {
        if !self.0.lock().is_empty() {
            return None;
        }
        let map = database_map(views, nodes);
        let (group, m) = tessera_cluster::balance_replicas(&map)?;
        let group = group as GroupId;
        tracing::info!(
            group,
            from = m.from,
            to = m.to,
            "moving data group {group}'s replica from node {} to node {}",
            m.from,
            m.to
        );
        self.0.lock().insert(group, (m, Instant::now()));
        Some((group, m))
    }
}

/// What the manager knows of the nodes at the moment of a decision.
pub(crate) struct NodesNow<'a> {
    /// The nodes holding the catalog: a database's replicas go only there.
    pub holders: &'a HashSet<NodeId>,
    pub draining: &'a [NodeId],
    /// Whether a node is heard from.
    pub live: &'a dyn Fn(NodeId) -> bool,
    /// A group's replica count.
    pub target: &'a dyn Fn(GroupId) -> usize,
}

/// Every database group (not the system group: the catalog is everywhere)
/// as its primary sees it, on the nodes holding the catalog.
fn database_map(views: &[(GroupId, GroupView)], nodes: &NodesNow<'_>) -> ClusterMap {
    let live = nodes.live;
    let mut map = ClusterMap::default();
    for (group, view) in views.iter().filter(|(g, _)| *g != SYSTEM_GROUP) {
        let mut replicas = Vec::new();
        for m in &view.members {
            if !map.nodes.contains_key(&m.id) {
                add_node(&mut map, m.id, &m.info, m.answered && live(m.id));
            }
            let role = if m.id == view.leader {
                Role::Primary
            } else if m.voter {
                Role::Secondary
            } else {
                Role::Building
            };
            replicas.push(Replica { node: m.id, role, applied: m.matched.unwrap_or(0) });
        }
        let target = (nodes.target)(*group);
        map.partitions.insert(
            *group as u64,
            PartitionInfo {
                id: *group as u64,
                epoch: view.term,
                target,
                replicas,
                log_start: view.log_start,
                unavailable: view.joint,
                serves_sessions: false,
                moving: None,
            },
        );
    }
    // Nodes holding no database replica yet (one that joined): those that
    // hold the catalog, from the system group's view.
    if let Some((_, first)) = views.iter().find(|(g, _)| *g == SYSTEM_GROUP) {
        for m in &first.members {
            if !map.nodes.contains_key(&m.id) {
                add_node(&mut map, m.id, &m.info, live(m.id));
            }
        }
    }
    for node in map.nodes.values_mut() {
        // A node without the catalog takes no database replica, and gives
        // none up before it has one to give (as a draining node).
        node.draining = nodes.draining.contains(&node.id) || !nodes.holders.contains(&node.id);
    }
    map
}
