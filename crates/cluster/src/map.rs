//! The cluster map: nodes, partitions, replicas.

use std::collections::BTreeMap;

pub type NodeId = u64;
pub type PartitionId = u64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    pub id: NodeId,
    pub addr: String,
    /// Nodes that can fail together (a rack, a power feed).
    pub failure_domain: String,
    /// Nodes that are taken down together for maintenance.
    pub upgrade_domain: String,
    /// Heartbeats arrive (as far as the manager knows).
    pub live: bool,
    /// Being drained: no new replicas or primaries go there.
    pub draining: bool,
    /// The CPU its process used lately (100 = one core), as last reported;
    /// None when it has not reported.
    pub cpu_percent: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Primary,
    Secondary,
    /// Receiving a snapshot, then the log; not yet a voter.
    Building,
    /// A returning replica replaying the log it missed; not yet a voter.
    CatchingUp,
    /// Out of the configuration; its data is to be dropped.
    Removed,
}

impl Role {
    /// Whether the replica is in the partition's Raft configuration.
    pub fn votes(self) -> bool {
        matches!(self, Role::Primary | Role::Secondary)
    }

    pub fn name(self) -> &'static str {
        match self {
            Role::Primary => "primary",
            Role::Secondary => "secondary",
            Role::Building => "being built",
            Role::CatchingUp => "catching up",
            Role::Removed => "removed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replica {
    pub node: NodeId,
    pub role: Role,
    /// The last log index (commit sequence number) the replica has applied.
    pub applied: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    pub id: PartitionId,
    /// The Raft term of the current primary.
    pub epoch: u64,
    /// How many voting replicas the partition should have.
    pub target: usize,
    pub replicas: Vec<Replica>,
    /// The first log index the primary still holds (earlier entries are in
    /// its checkpoints only): a replica that applied less must be rebuilt.
    pub log_start: u64,
    /// Writes are refused: the partition lost its quorum.
    pub unavailable: bool,
    /// Its primary serves client sessions, which a move of the primary
    /// ends (a database's home); moving any other partition's costs a
    /// client at most a retried commit, so balancing moves those first.
    pub serves_sessions: bool,
    /// A replica move under way ([`crate::balance_replicas`]): repair
    /// builds the new replica before it removes the old one.
    pub moving: Option<Move>,
}

/// A replica of a partition on its way from node `from` to node `to`: a
/// replica is built on `to` while the partition keeps its count, and once
/// it votes the one on `from` leaves, so the partition never has fewer
/// replicas than its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    pub from: NodeId,
    pub to: NodeId,
}

impl PartitionInfo {
    pub fn primary(&self) -> Option<&Replica> {
        self.replicas.iter().find(|r| r.role == Role::Primary)
    }

    pub fn replica_on(&self, node: NodeId) -> Option<&Replica> {
        self.replicas.iter().find(|r| r.node == node && r.role != Role::Removed)
    }

    pub fn voters(&self) -> impl Iterator<Item = &Replica> {
        self.replicas.iter().filter(|r| r.role.votes())
    }

    /// Votes needed for a decision: a majority of the configuration.
    pub fn quorum(&self) -> usize {
        self.voters().count() / 2 + 1
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterMap {
    pub nodes: BTreeMap<NodeId, NodeInfo>,
    pub partitions: BTreeMap<PartitionId, PartitionInfo>,
}

impl ClusterMap {
    pub fn add_node(&mut self, id: NodeId, failure_domain: &str, upgrade_domain: &str) {
        self.nodes.insert(
            id,
            NodeInfo {
                id,
                addr: format!("node-{id}"),
                failure_domain: failure_domain.into(),
                upgrade_domain: upgrade_domain.into(),
                live: true,
                draining: false,
                cpu_percent: None,
            },
        );
    }

    pub fn is_live(&self, node: NodeId) -> bool {
        self.nodes.get(&node).is_some_and(|n| n.live)
    }

    /// Nodes that may take new replicas.
    pub fn usable_nodes(&self) -> impl Iterator<Item = &NodeInfo> {
        self.nodes.values().filter(|n| n.live && !n.draining)
    }

    /// Replicas (not removed) and primaries on `node`.
    pub fn load(&self, node: NodeId) -> (usize, usize) {
        let mut replicas = 0;
        let mut primaries = 0;
        for p in self.partitions.values() {
            if let Some(r) = p.replica_on(node) {
                replicas += 1;
                if r.role == Role::Primary {
                    primaries += 1;
                }
            }
        }
        (replicas, primaries)
    }

    /// Adds a partition whose replicas sit on `nodes`, the first as primary.
    pub fn add_partition(&mut self, id: PartitionId, nodes: &[NodeId]) {
        let replicas = nodes
            .iter()
            .enumerate()
            .map(|(i, &node)| Replica { node, role: if i == 0 { Role::Primary } else { Role::Secondary }, applied: 0 })
            .collect();
        self.partitions.insert(
            id,
            PartitionInfo {
                id,
                epoch: 1,
                target: nodes.len(),
                replicas,
                log_start: 0,
                unavailable: false,
                serves_sessions: false,
                moving: None,
            },
        );
    }

    /// Records an action as done.
    pub fn apply(&mut self, action: &crate::Action) {
        use crate::Action::*;
        match action {
            Promote { partition, node, epoch } => {
                let Some(p) = self.partitions.get_mut(partition) else { return };
                for r in &mut p.replicas {
                    if r.role == Role::Primary {
                        r.role = Role::Secondary;
                    }
                    if r.node == *node && r.role != Role::Removed {
                        r.role = Role::Primary;
                    }
                }
                p.epoch = *epoch;
                p.unavailable = false;
            }
            TransferLeadership { partition, to, .. } => {
                let epoch = self.partitions.get(partition).map_or(0, |p| p.epoch + 1);
                self.apply(&Promote { partition: *partition, node: *to, epoch });
            }
            Downshift { partition, node } | Drop { partition, node } => {
                if let Some(p) = self.partitions.get_mut(partition) {
                    for r in p.replicas.iter_mut().filter(|r| r.node == *node) {
                        r.role = Role::Removed;
                    }
                }
            }
            Build { partition, node } => {
                if let Some(p) = self.partitions.get_mut(partition) {
                    p.replicas.retain(|r| r.node != *node);
                    p.replicas.push(Replica { node: *node, role: Role::Building, applied: 0 });
                }
            }
            Rebuild { partition, node } | CatchUp { partition, node } => {
                let role = if matches!(action, Rebuild { .. }) { Role::Building } else { Role::CatchingUp };
                if let Some(p) = self.partitions.get_mut(partition)
                    && let Some(r) = p.replicas.iter_mut().find(|r| r.node == *node)
                {
                    r.role = role;
                    if role == Role::Building {
                        r.applied = 0;
                    }
                }
            }
            Unavailable { partition } => {
                if let Some(p) = self.partitions.get_mut(partition) {
                    p.unavailable = true;
                }
            }
        }
    }

    /// A replica finished building or catching up: it joins the configuration.
    pub fn caught_up(&mut self, partition: PartitionId, node: NodeId) {
        if let Some(p) = self.partitions.get_mut(&partition) {
            let last = p.primary().map_or(0, |r| r.applied);
            if let Some(r) =
                p.replicas.iter_mut().find(|r| r.node == node && !r.role.votes() && r.role != Role::Removed)
            {
                r.role = Role::Secondary;
                r.applied = last;
            }
        }
    }
}
