//! The group as this node's Raft sees it: for `tessera status` and the
//! `tessera.nodes` / `tessera.replicas` views. Complete on the primary
//! (it tracks every secondary's progress); elsewhere it names the members
//! and the primary only.

use std::time::Duration;

use openraft::Instant as _;
use openraft::async_runtime::WatchReceiver;
use serde::{Deserialize, Serialize};

use crate::raft::type_config::{C, Raft};
use crate::types::{Load, NodeId, NodeInfo};

/// A member that answered the primary, or a spare that registered, within
/// this long counts as alive.
pub(crate) const ALIVE: Duration = Duration::from_secs(2);

/// On the leader: whether member `id` answered a heartbeat or a
/// replication call within [`ALIVE`].
pub(crate) fn answered(m: &openraft::RaftMetrics<C>, id: &NodeId) -> bool {
    m.heartbeat.as_ref().is_some_and(|hb| hb.get(id).and_then(|t| t.as_ref()).is_some_and(|t| t.elapsed() < ALIVE))
}

/// On the leader: the last log index known to be on member `id`.
pub(crate) fn matched(m: &openraft::RaftMetrics<C>, id: &NodeId) -> Option<u64> {
    m.replication.as_ref().and_then(|r| r.get(id).and_then(|l| l.as_ref().map(|l| l.index)))
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStatus {
    pub id: NodeId,
    pub info: NodeInfo,
    /// `primary`, `secondary` or `unreachable`.
    pub role: String,
    /// The primary's epoch (Raft term).
    pub epoch: u64,
    /// The last log index known to be on the node.
    pub matched: Option<u64>,
    /// Entries the node lacks compared with the primary's log.
    pub behind: Option<u64>,
    /// Its load figures (known on the primary for every node that
    /// reported lately; elsewhere only the node's own).
    pub load: Option<Load>,
    /// Its part in the manager group: `leader`, `voter` or `learner`
    /// (None: not a member, or not known here).
    pub manager: Option<String>,
    /// Being drained (`tessera node drain`), until it restarts.
    pub draining: bool,
}

/// The manager group's members, as a member of it (or a node its leader
/// answered) knows them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManagerGroup {
    pub leader: Option<NodeId>,
    pub voters: Vec<NodeId>,
    pub learners: Vec<NodeId>,
}

impl ManagerGroup {
    pub(crate) fn of(m: &openraft::RaftMetrics<C>) -> ManagerGroup {
        let membership = m.membership_config.membership();
        ManagerGroup {
            leader: m.current_leader,
            voters: membership.voter_ids().collect(),
            learners: membership.learner_ids().collect(),
        }
    }

    /// A node's part in the group.
    pub fn role_of(&self, id: NodeId) -> Option<&'static str> {
        if self.leader == Some(id) {
            Some("leader")
        } else if self.voters.contains(&id) {
            Some("voter")
        } else if self.learners.contains(&id) {
            Some("learner")
        } else {
            None
        }
    }
}

/// A cheap handle that reads the group's status.
#[derive(Clone)]
pub struct StatusSource {
    pub(crate) raft: Raft,
    pub(crate) roster: std::sync::Arc<crate::manager::leader::Roster>,
    pub(crate) directory: crate::manager::directory::DirectoryRaft,
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
                let caught_up = matched.zip(last).is_some_and(|(m, l)| m + crate::manager::leader::CAUGHT_UP >= l);
                let role = match (is_primary, up, votes) {
                    (true, _, _) => "primary",
                    (false, true, false) if caught_up => "spare",
                    (false, true, false) => "building",
                    (false, true, true) => "secondary",
                    (false, false, true) => "unreachable",
                    (false, false, false) => "unreachable spare",
                };
                NodeStatus {
                    id: *id,
                    info: info.clone(),
                    role: role.to_string(),
                    epoch: m.current_term,
                    matched,
                    behind: if is_primary { Some(0) } else { matched.zip(last).map(|(m, l)| l.saturating_sub(m)) },
                    load: self.roster.load_of(*id, m.id),
                    manager: group.role_of(*id).map(str::to_string),
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
                    role: if alive { "spare" } else { "unreachable spare" }.to_string(),
                    epoch: m.current_term,
                    matched: None,
                    behind: None,
                    load: if alive { self.roster.load_of(id, m.id) } else { None },
                    manager: group.role_of(id).map(str::to_string),
                    draining: draining.contains(&id),
                });
            }
        }
        rows.sort_by_key(|r| r.id);
        rows
    }
}
