//! Failover, downshift, rebuild, catch-up and drain decisions.

use crate::map::{ClusterMap, NodeId, PartitionId, PartitionInfo, Role};
use crate::placement::place;

/// What the node runtime is to do (and [`ClusterMap::apply`] records).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `node`'s replica becomes primary under `epoch` (a Raft election the
    /// manager prefers: the most up-to-date live secondary).
    Promote { partition: PartitionId, node: NodeId, epoch: u64 },
    /// Planned: hand the primary role from `from` to `to`.
    TransferLeadership { partition: PartitionId, from: NodeId, to: NodeId },
    /// Remove `node`'s replica from the configuration (N → N-1).
    Downshift { partition: PartitionId, node: NodeId },
    /// Add a replica on `node`: a snapshot (the primary's checkpoint), then
    /// the log since; it votes once caught up.
    Build { partition: PartitionId, node: NodeId },
    /// A returning replica replays the log it missed.
    CatchUp { partition: PartitionId, node: NodeId },
    /// A returning replica too far behind the log: a fresh snapshot.
    Rebuild { partition: PartitionId, node: NodeId },
    /// A replica no longer wanted (it was replaced while away).
    Drop { partition: PartitionId, node: NodeId },
    /// The partition lost its quorum: it refuses writes until enough of
    /// its replicas return. Nothing is promoted, so there is never a
    /// second primary.
    Unavailable { partition: PartitionId },
}

/// Node `failed` is gone (missed heartbeats, or Raft noticed). The map
/// should already say it is not live.
pub fn react_to_failure(map: &ClusterMap, failed: NodeId) -> Vec<Action> {
    let mut map = map.clone();
    if let Some(n) = map.nodes.get_mut(&failed) {
        n.live = false;
    }
    let mut actions = Vec::new();
    let ids: Vec<PartitionId> =
        map.partitions.values().filter(|p| p.replica_on(failed).is_some()).map(|p| p.id).collect();
    for id in ids {
        let p = &map.partitions[&id];
        let Some(lost) = p.replica_on(failed).cloned() else { continue };
        if !lost.role.votes() {
            // A replica being built or catching up: start it again elsewhere.
            let mut step = vec![Action::Drop { partition: id, node: failed }];
            step.extend(replace(&map, p, &[failed]));
            record(&mut map, &mut actions, step);
            continue;
        }
        let live_voters = p.voters().filter(|r| map.is_live(r.node)).count();
        if live_voters < p.quorum() {
            if !p.unavailable {
                record(&mut map, &mut actions, vec![Action::Unavailable { partition: id }]);
            }
            continue;
        }
        let mut step = Vec::new();
        if lost.role == Role::Primary {
            let Some(next) = successor(&map, p, failed) else {
                record(&mut map, &mut actions, vec![Action::Unavailable { partition: id }]);
                continue;
            };
            step.push(Action::Promote { partition: id, node: next, epoch: p.epoch + 1 });
        }
        step.push(Action::Downshift { partition: id, node: failed });
        step.extend(replace(&map, p, &[failed]));
        record(&mut map, &mut actions, step);
    }
    actions
}

/// Node `node` is back. Each of its replicas that is still wanted catches
/// up from the log if the primary's log still reaches back to what it
/// applied, or is rebuilt from a snapshot; a replica whose place was taken
/// meanwhile is dropped. Partitions that had lost their quorum regain it
/// through the returning voters (Raft elects a primary among them).
pub fn react_to_return(map: &ClusterMap, node: NodeId) -> Vec<Action> {
    let mut actions = Vec::new();
    for p in map.partitions.values() {
        let Some(r) = p.replicas.iter().find(|r| r.node == node) else { continue };
        let wanted = p.replicas.iter().filter(|x| x.role != Role::Removed && x.node != node).count() < p.target;
        match r.role {
            Role::Removed if wanted => actions.push(if r.applied >= p.log_start {
                Action::CatchUp { partition: p.id, node }
            } else {
                Action::Rebuild { partition: p.id, node }
            }),
            Role::Removed => actions.push(Action::Drop { partition: p.id, node }),
            // Still a voter (the partition was unavailable, or the loss was
            // not yet acted on): Raft's own log catch-up brings it along.
            _ if p.unavailable => {
                let returning = p.voters().filter(|v| v.node == node || map.is_live(v.node)).count();
                if returning >= p.quorum()
                    && let Some(next) = p
                        .voters()
                        .filter(|v| v.node == node || map.is_live(v.node))
                        .max_by_key(|v| (v.applied, std::cmp::Reverse(v.node)))
                {
                    actions.push(Action::Promote { partition: p.id, node: next.node, epoch: p.epoch + 1 });
                }
            }
            _ => {}
        }
    }
    actions
}

/// The manager's periodic look at the map. `overdue` are the voters that
/// have missed heartbeats for longer than the grace period (a node that
/// merely restarts should catch up, not be replaced). For each partition:
///
/// * a replica being built on a node that died is dropped;
/// * an overdue voter is downshifted (N → N-1) and a replacement built on
///   another node, but only when placement finds one: with no node to take
///   its place, the lost voter stays in the configuration, so that its
///   return restores the quorum rather than having to be rebuilt first;
/// * a partition below its target (a downshift left it short and a node
///   has since come back or joined) gets a replica built where placement
///   allows;
/// * a live replica being built is carried on while the partition is short
///   of voters (its build was interrupted, say by a change of primary), and
///   dropped when the partition has its voters;
/// * a partition above its target (its replica count was lowered) sheds
///   voters, never the primary, while a quorum of its voters is live: the
///   unreachable ones first, then those sharing a failure domain with
///   another replica, then those on the busiest nodes, then the furthest
///   behind.
///
/// Promotion is not here: electing the primary is Raft's (and
/// [`react_to_failure`] says whom the manager prefers).
pub fn plan_repair(map: &ClusterMap, overdue: &[NodeId]) -> Vec<Action> {
    let mut map = map.clone();
    let mut actions = Vec::new();
    let ids: Vec<PartitionId> = map.partitions.keys().copied().collect();
    for id in ids {
        // Builds that cannot finish.
        let dead_builds: Vec<NodeId> = map.partitions[&id]
            .replicas
            .iter()
            .filter(|r| matches!(r.role, Role::Building | Role::CatchingUp) && !map.is_live(r.node))
            .map(|r| r.node)
            .collect();
        for node in dead_builds {
            record(&mut map, &mut actions, vec![Action::Drop { partition: id, node }]);
        }
        // Replace overdue voters while a quorum remains to change the configuration.
        for &failed in overdue {
            let p = &map.partitions[&id];
            if map.is_live(failed) || !p.voters().any(|r| r.node == failed) {
                continue;
            }
            let live_after = p.voters().filter(|r| r.node != failed && map.is_live(r.node)).count();
            let quorum_after = (p.voters().count() - 1) / 2 + 1;
            if live_after < quorum_after || live_after < p.quorum() {
                continue;
            }
            let builds = replace(&map, p, &[failed]);
            if !builds.is_empty() {
                let mut step = vec![Action::Downshift { partition: id, node: failed }];
                step.extend(builds);
                record(&mut map, &mut actions, step);
            }
        }
        let p = &map.partitions[&id];
        let voters = p.voters().count();
        let building: Vec<NodeId> =
            p.replicas.iter().filter(|r| matches!(r.role, Role::Building | Role::CatchingUp)).map(|r| r.node).collect();
        if let Some(step) = carry_on_move(&map, p) {
            record(&mut map, &mut actions, step);
            continue;
        }
        if voters >= p.target {
            let step = building.iter().map(|&node| Action::Drop { partition: id, node }).collect();
            record(&mut map, &mut actions, step);
            let step =
                surplus(&map, &map.partitions[&id]).into_iter().map(|node| Action::Downshift { partition: id, node });
            record(&mut map, &mut actions, step.collect());
            continue;
        }
        // Short of voters: carry on the builds under way, then add more.
        let already: Vec<NodeId> = actions
            .iter()
            .filter_map(|a| match a {
                Action::Build { partition, node } if *partition == id => Some(*node),
                _ => None,
            })
            .collect();
        let step: Vec<Action> = building
            .iter()
            .filter(|n| !already.contains(n))
            .map(|&node| Action::Build { partition: id, node })
            .collect();
        record(&mut map, &mut actions, step);
        let p = &map.partitions[&id];
        let step = replace(&map, p, &[]);
        record(&mut map, &mut actions, step);
    }
    actions
}

/// The next step of a replica move under way (`p.moving`), or None when
/// there is no move or it cannot go on (its new node is unusable, or the
/// partition is short of voters: repair as usual). The replica on `to` is
/// built while the partition keeps its count (its other builds dropped),
/// promoted once caught up (a `Build` of a member, as in repair), and then
/// the one on `from` leaves; were `from` the primary by then, the surplus
/// rule picks another voter.
fn carry_on_move(map: &ClusterMap, p: &PartitionInfo) -> Option<Vec<Action>> {
    let m = p.moving?;
    let usable = map.nodes.get(&m.to).is_some_and(|n| n.live && !n.draining);
    let voters = p.voters().count();
    if !usable || voters < p.target {
        return None;
    }
    let mut step: Vec<Action> = (p.replicas.iter())
        .filter(|r| matches!(r.role, Role::Building | Role::CatchingUp) && r.node != m.to)
        .map(|r| Action::Drop { partition: p.id, node: r.node })
        .collect();
    let on_to = p.replica_on(m.to);
    if on_to.is_none_or(|r| !r.role.votes()) {
        step.push(Action::Build { partition: p.id, node: m.to });
        return Some(step);
    }
    if voters > p.target {
        // The configuration without `from` must still have a live quorum.
        let live_after = p.voters().filter(|r| r.node != m.from && map.is_live(r.node)).count();
        let from_leaves =
            p.replica_on(m.from).is_some_and(|r| r.role == Role::Secondary) && live_after > (voters - 1) / 2;
        if from_leaves {
            step.push(Action::Downshift { partition: p.id, node: m.from });
        } else {
            step.extend(surplus(map, p).into_iter().map(|node| Action::Downshift { partition: p.id, node }));
        }
    }
    Some(step)
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "draining node {node} would cost partition {partition} its quorum: {live} of its {voters} replicas are up, and {quorum} are needed"
)]
pub struct DrainRefusal {
    pub node: NodeId,
    pub partition: PartitionId,
    pub live: usize,
    pub voters: usize,
    pub quorum: usize,
}

/// Taking `node` down for maintenance: refused if some partition would be
/// left without a quorum of live replicas; otherwise its primaries move to
/// up-to-date secondaries on other nodes first.
pub fn plan_drain(map: &ClusterMap, node: NodeId) -> Result<Vec<Action>, DrainRefusal> {
    let mut actions = Vec::new();
    for p in map.partitions.values() {
        let Some(r) = p.replica_on(node) else { continue };
        if !r.role.votes() {
            continue;
        }
        let live = p.voters().filter(|v| v.node != node && map.is_live(v.node)).count();
        if live < p.quorum() {
            return Err(DrainRefusal {
                node,
                partition: p.id,
                live: p.voters().filter(|v| map.is_live(v.node)).count(),
                voters: p.voters().count(),
                quorum: p.quorum(),
            });
        }
        if r.role == Role::Primary {
            let Some(to) = successor(map, p, node) else {
                return Err(DrainRefusal {
                    node,
                    partition: p.id,
                    live,
                    voters: p.voters().count(),
                    quorum: p.quorum(),
                });
            };
            actions.push(Action::TransferLeadership { partition: p.id, from: node, to });
        }
    }
    Ok(actions)
}

/// The secondary to take over from `leaving`: live, on a node not being
/// drained itself where there is one, the most up to date, then on the
/// node with the fewest primaries, then the lowest id.
fn successor(map: &ClusterMap, p: &PartitionInfo, leaving: NodeId) -> Option<NodeId> {
    let draining = |node: NodeId| map.nodes.get(&node).is_some_and(|n| n.draining);
    p.voters()
        .filter(|r| r.node != leaving && r.role == Role::Secondary && map.is_live(r.node))
        .min_by_key(|r| (draining(r.node), std::cmp::Reverse(r.applied), map.load(r.node).1, r.node))
        .map(|r| r.node)
}

/// Builds to bring `p` back to its target, on nodes other than those that
/// hold (or just lost) a replica. None when no node can take one: the
/// partition then runs with fewer replicas until one can.
fn replace(map: &ClusterMap, p: &PartitionInfo, lost: &[NodeId]) -> Vec<Action> {
    let remaining = p.replicas.iter().filter(|r| r.role != Role::Removed && !lost.contains(&r.node)).count();
    let missing = p.target.saturating_sub(remaining);
    if missing == 0 {
        return Vec::new();
    }
    let mut exclude: Vec<NodeId> = p.replicas.iter().filter(|r| r.role != Role::Removed).map(|r| r.node).collect();
    exclude.extend_from_slice(lost);
    let usable = map.usable_nodes().filter(|n| !exclude.contains(&n.id)).count();
    match place(map, missing.min(usable), &exclude) {
        Ok(nodes) => nodes.into_iter().map(|node| Action::Build { partition: p.id, node }).collect(),
        Err(_) => Vec::new(),
    }
}

/// The voters a partition above its target gives up (see [`plan_repair`]);
/// none while fewer than a quorum of its voters is live, as the change
/// could not commit.
fn surplus(map: &ClusterMap, p: &PartitionInfo) -> Vec<NodeId> {
    let voters: Vec<&crate::map::Replica> = p.voters().collect();
    let extra = voters.len().saturating_sub(p.target.max(1));
    let live = voters.iter().filter(|r| map.is_live(r.node)).count();
    if extra == 0 || live < p.quorum() {
        return Vec::new();
    }
    let domain = |n: NodeId| map.nodes.get(&n).map_or("", |i| i.failure_domain.as_str());
    let mut candidates: Vec<&crate::map::Replica> =
        voters.iter().copied().filter(|r| r.role != Role::Primary).collect();
    candidates.sort_by_key(|r| {
        let shares_domain = voters.iter().any(|o| o.node != r.node && domain(o.node) == domain(r.node));
        let (replicas, primaries) = map.load(r.node);
        let cpu = map.nodes.get(&r.node).and_then(|n| n.cpu_percent).unwrap_or(0) / 25;
        (
            map.is_live(r.node),
            !shares_domain,
            std::cmp::Reverse((replicas, primaries, cpu)),
            r.applied,
            std::cmp::Reverse(r.node),
        )
    });
    candidates.into_iter().take(extra).map(|r| r.node).collect()
}

fn record(map: &mut ClusterMap, actions: &mut Vec<Action>, step: Vec<Action>) {
    for a in step {
        map.apply(&a);
        actions.push(a);
    }
}
