//! Keeping a group at its replica count: one round of the manager's
//! decisions for a group (`tessera_cluster::plan_repair`), carried out as
//! membership steps by the group's leader.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use tessera_cluster::{Action, ClusterMap, PartitionInfo, Replica, plan_repair};

use super::leader::{Manager, Target};
use super::placement::add_node;
use super::reconfigure::Step;
use super::view::{CAUGHT_UP, GroupView};
use crate::error::{ReplicationError, Result};
use crate::types::{NodeId, NodeInfo, SYSTEM_GROUP};

impl Manager {
    /// One round of the manager's decisions for a group.
    pub(super) async fn repair(
        &self,
        target: Target,
        view: &GroupView,
        replicas: usize,
        within: Option<&HashSet<NodeId>>,
        down_since: &mut HashMap<(Target, NodeId), Instant>,
    ) {
        if view.joint {
            tracing::info!("settling the {target}'s joint configuration");
            if let Err(e) = self.step(target, view, Step::Settle).await {
                tracing::warn!("the {target}'s joint configuration was not settled: {e}");
            }
            return;
        }
        let readers = matches!(target, Target::Manager | Target::Data(SYSTEM_GROUP));
        let mut map = self.map(view, replicas, within, readers);
        if let Target::Data(group) = target
            && let Some(p) = map.partitions.get_mut(&0)
        {
            p.moving = self.moves.of(group);
        }
        let voters: Vec<NodeId> = view.members.iter().filter(|m| m.voter).map(|m| m.id).collect();
        for v in &voters {
            if map.is_live(*v) {
                down_since.remove(&(target, *v));
            } else {
                down_since.entry((target, *v)).or_insert_with(Instant::now);
            }
        }
        down_since.retain(|(t, n), _| *t != target || voters.contains(n));
        let overdue: Vec<NodeId> = down_since
            .iter()
            .filter(|((t, _), since)| *t == target && since.elapsed() >= self.replace_after)
            .map(|((_, n), _)| *n)
            .collect();
        for action in plan_repair(&map, &overdue) {
            if let Err(e) = self.carry_out(target, view, &action).await {
                tracing::warn!(?action, "the partition manager's step on the {target} did not complete: {e}");
                break;
            }
        }
    }

    /// The cluster map for one group: its members with their liveness
    /// (a voter: it answers the leader; a replica being built may be busy
    /// installing a snapshot, so reporting to the manager counts too) and
    /// progress, and the other nodes heard from (those `within`, when
    /// given), as candidates. `readers`: the group's learners read it
    /// (the system group's, the catalog) while it has its voters: no build
    /// to carry on or drop, but nodes to build on first when a voter is
    /// lost (they have its data already).
    fn map(&self, view: &GroupView, target: usize, within: Option<&HashSet<NodeId>>, readers: bool) -> ClusterMap {
        let mut map = ClusterMap::default();
        let mut replicas = Vec::new();
        let heard: HashMap<NodeId, (NodeInfo, bool)> =
            self.roster.spares().into_iter().map(|(id, info, alive)| (id, (info, alive))).collect();
        let voters = view.members.iter().filter(|m| m.voter).count();
        for m in &view.members {
            let reports = heard.get(&m.id).is_some_and(|(_, alive)| *alive);
            let live = m.answered || (!m.voter && reports);
            add_node(&mut map, m.id, &m.info, live);
            self.note_load(&mut map, m.id);
            if readers && !m.voter && live && voters >= target {
                continue;
            }
            let role = if m.id == view.leader {
                tessera_cluster::Role::Primary
            } else if m.voter {
                tessera_cluster::Role::Secondary
            } else {
                tessera_cluster::Role::Building
            };
            replicas.push(Replica { node: m.id, role, applied: m.matched.unwrap_or(0) });
        }
        for (id, (info, alive)) in &heard {
            if !map.nodes.contains_key(id) && within.is_none_or(|w| w.contains(id)) {
                add_node(&mut map, *id, info, *alive);
                self.note_load(&mut map, *id);
            }
        }
        map.partitions.insert(
            0,
            PartitionInfo {
                id: 0,
                epoch: view.term,
                target,
                replicas,
                log_start: view.log_start,
                unavailable: false,
                serves_sessions: true,
                moving: None,
            },
        );
        map
    }

    /// Makes one more live node outside a group's configuration a *reader*
    /// of it (a learner that never votes unless a voter is lost), while the
    /// group has its voters and no change under way. Of the system group: it
    /// then holds the catalog, so databases' replicas can be built on it
    /// and its sessions served there. Of both the first and the manager
    /// group: a lost voter is replaced at once by promoting a reader, which
    /// has the data already. One per round.
    pub(super) async fn add_reader(&self, group: Target, view: &GroupView, target: usize) {
        let voters = view.members.iter().filter(|m| m.voter).count();
        if view.joint || voters < target {
            return;
        }
        let outside = self.roster.spares().into_iter().find(|(id, _, alive)| *alive && view.member(*id).is_none());
        let Some((node, info, _)) = outside else { return };
        tracing::info!(node, "node {node} becomes a reader of the {group}");
        if let Err(e) = self.step(group, view, Step::AddLearner(node, info)).await {
            tracing::warn!(node, "node {node} did not become a reader of the {group}: {e}");
        }
    }

    /// Puts a node's latest load figures on the map (placement prefers
    /// the less busy of otherwise equal nodes).
    fn note_load(&self, map: &mut ClusterMap, id: NodeId) {
        if let Some(n) = map.nodes.get_mut(&id) {
            n.cpu_percent = self.roster.load_of(id, self.me).map(|l| l.cpu_percent);
        }
    }

    async fn carry_out(&self, target: Target, view: &GroupView, action: &Action) -> Result<()> {
        match action {
            Action::Downshift { node, .. } => {
                if view.member(*node).is_some_and(|m| m.answered) {
                    tracing::info!(node, "node {node}'s replica leaves the {target} (moved to another node)");
                } else {
                    tracing::warn!(
                        node,
                        "downshifting the {target}: node {node} has been unreachable too long and leaves it"
                    );
                }
                self.step(target, view, Step::RemoveVoter(*node)).await
            }
            Action::Drop { node, .. } => {
                tracing::warn!(node, "dropping node {node}'s unfinished replica of the {target}");
                self.step(target, view, Step::RemoveNode(*node)).await
            }
            Action::Build { node, .. } => match view.member(*node) {
                None => {
                    let info = self
                        .roster
                        .spares()
                        .into_iter()
                        .find(|(id, _, _)| id == node)
                        .map(|(_, info, _)| info)
                        .or_else(|| self.machine.directory().nodes.get(node).cloned())
                        .ok_or_else(|| ReplicationError::Refused(format!("node {node} is not known")))?;
                    tracing::info!(node, addr = %info.rpc_addr, "building a replica of the {target} on node {node}");
                    self.step(target, view, Step::AddLearner(*node, info)).await
                }
                Some(m) if m.matched.is_some_and(|i| i + CAUGHT_UP >= view.last_index) => {
                    self.step(target, view, Step::Promote(*node)).await?;
                    tracing::info!(node, "node {node} now holds a replica of the {target} and votes");
                    Ok(())
                }
                // Still catching up.
                Some(_) => Ok(()),
            },
            // Elections are Raft's; the others do not arise from repair.
            _ => Ok(()),
        }
    }
}
