//! The group as this node's Raft sees it: for `tessera status` and the
//! `tessera.nodes` / `tessera.replicas` views. Complete on the primary
//! (it tracks every secondary's progress); elsewhere it names the members
//! and the primary only.

use std::sync::Arc;

use openraft::async_runtime::WatchReceiver;
use serde::{Deserialize, Serialize};

use super::directory::DirectoryRaft;
use super::roles::{ManagerRole, ReplicaRole};
use super::roster::Roster;
use super::view::{CAUGHT_UP, ManagerGroup};
use crate::raft::metrics::{answered, matched};
use crate::raft::state_machine::Raft;
use crate::types::{Load, NodeId, NodeInfo};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStatus {
    pub id: NodeId,
    pub info: NodeInfo,
    /// Primary, secondary, building, spare or unreachable.
    pub role: ReplicaRole,
    /// The primary's epoch (Raft term).
    pub epoch: u64,
    /// The last log index known to be on the node.
    pub matched: Option<u64>,
    /// Entries the node lacks compared with the primary's log.
    pub behind: Option<u64>,
    /// Its load figures (known on the primary for every node that
    /// reported lately; elsewhere only the node's own).
    pub load: Option<Load>,
    /// Its part in the manager group (None: not a member, or not known here).
    pub manager: Option<ManagerRole>,
    /// Being drained (`tessera node drain`), until it restarts.
    pub draining: bool,
}

/// A cheap handle that reads the group's status.
#[derive(Clone)]
pub struct StatusSource {
    pub(crate) raft: Raft,
    pub(crate) roster: Arc<Roster>,
    pub(crate) directory: DirectoryRaft,
}

impl StatusSource {
    /// The manager group: as this node's own manager Raft knows it when
    /// it knows a leader, else as the leader last told this node.
    pub fn manager_group(&self) -> Option<ManagerGroup> {
        let m = self.directory.metrics().borrow_watched().clone();
        if m.current_leader.is_some() {
            return Some(ManagerGroup::of(&m));
        }
        self.roster.manager_group()
    }

    pub fn nodes(&self) -> Vec<NodeStatus> {
        let group = self.manager_group().unwrap_or_default();
        let m = self.raft.metrics().borrow_watched().clone();
        let last = m.last_log_index;
        let membership = m.membership_config.membership().clone();
        let draining = self.roster.draining_nodes(m.id);
        let mut rows: Vec<NodeStatus> = membership
            .nodes()
            .map(|(id, info)| {
                let is_primary = m.current_leader == Some(*id);
                // Off the primary, a node knows only its own progress.
                let (matched, up) = match &m.replication {
                    Some(_) => (matched(&m, id), answered(&m, id)),
                    None if *id == m.id => (m.last_applied.as_ref().map(|l| l.index), true),
                    None => (None, false),
                };
                let votes = membership.voter_ids().any(|v| v == *id);
                // A learner that has caught up is a spare reading the
                // catalog (see `manager`); one still behind is being built.
                let caught_up = matched.zip(last).is_some_and(|(m, l)| m + CAUGHT_UP >= l);
                let role = match (is_primary, up, votes) {
                    (true, _, _) => ReplicaRole::Primary,
                    (false, true, false) if caught_up => ReplicaRole::Spare,
                    (false, true, false) => ReplicaRole::Building,
                    (false, true, true) => ReplicaRole::Secondary,
                    (false, false, true) => ReplicaRole::Unreachable,
                    (false, false, false) => ReplicaRole::UnreachableSpare,
                };
                NodeStatus {
                    id: *id,
                    info: info.clone(),
                    role,
                    epoch: m.current_term,
                    matched,
                    behind: if is_primary { Some(0) } else { matched.zip(last).map(|(m, l)| l.saturating_sub(m)) },
                    load: self.roster.load_of(*id, m.id),
                    manager: group.role_of(*id),
                    draining: draining.contains(id),
                }
            })
            .collect();
        // Spares: nodes outside the configuration that registered with the
        // primary (known on the primary only). They hold no replica.
        for (id, info, alive) in self.roster.spares() {
            if !rows.iter().any(|r| r.id == id) {
                rows.push(NodeStatus {
                    id,
                    info,
                    role: if alive { ReplicaRole::Spare } else { ReplicaRole::UnreachableSpare },
                    epoch: m.current_term,
                    matched: None,
                    behind: None,
                    load: if alive { self.roster.load_of(id, m.id) } else { None },
                    manager: group.role_of(id),
                    draining: draining.contains(&id),
                });
            }
        }
        rows.sort_by_key(|r| r.id);
        rows
    }
}
