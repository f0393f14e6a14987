//! What the partition manager sees of a group: a [`GroupView`] from its
//! leader, the replicas it shows ([`GroupReplica`]), the manager group's
//! members ([`ManagerGroup`]).

use openraft::ServerState;
use openraft::async_runtime::WatchReceiver;
use openraft::storage::RaftStateMachine;
use serde::{Deserialize, Serialize};

use super::roles::{ManagerRole, ReplicaRole};
use crate::error::{ReplicationError, Result};
use crate::raft::metrics::{answered, matched};
use crate::raft::type_config::C;
use crate::types::{NodeId, NodeInfo};

/// A learner this close to the primary's last log index becomes a voter.
pub(crate) const CAUGHT_UP: u64 = 64;

/// A group as its leader sees it: what the manager's decisions need of
/// it. A data group's primary answers it over RPC (`ManagerMessage::GroupView`);
/// the manager group's own comes from the manager's leader itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupView {
    /// The leader's epoch (Raft term).
    pub term: u64,
    pub leader: NodeId,
    pub members: Vec<MemberView>,
    pub last_index: u64,
    /// The first index still in the leader's log.
    pub log_start: u64,
    /// The configuration is joint: a change was cut short between its two
    /// steps (its leader moved). Until it is settled, a quorum needs a
    /// majority of both the old and the new voters.
    pub joint: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemberView {
    pub id: NodeId,
    pub info: NodeInfo,
    pub voter: bool,
    /// Answered the leader within `ALIVE` (the leader: always).
    pub answered: bool,
    /// The last index known to be on it.
    pub matched: Option<u64>,
}

impl GroupView {
    /// The group as `raft` sees it, when this node (`me`) leads it.
    /// `quiet_answered`: whether a voter confirmed the group as quiet
    /// lately (a quiet group's secondaries answer no heartbeats).
    pub(crate) fn of_leader<SM: RaftStateMachine<C>>(
        raft: &openraft::Raft<C, SM>,
        me: NodeId,
        quiet_answered: &dyn Fn(NodeId) -> bool,
    ) -> Result<GroupView> {
        let m = raft.metrics().borrow_watched().clone();
        if m.state != ServerState::Leader || m.current_leader != Some(me) {
            return Err(ReplicationError::Refused(format!("node {me} does not lead the group")));
        }
        let membership = m.membership_config.membership();
        let voters: Vec<NodeId> = membership.voter_ids().collect();
        let members = membership
            .nodes()
            .map(|(id, info)| {
                let own = *id == me;
                MemberView {
                    id: *id,
                    info: info.clone(),
                    voter: voters.contains(id),
                    answered: own || answered(&m, id) || quiet_answered(*id),
                    matched: if own { m.last_log_index } else { matched(&m, id) },
                }
            })
            .collect();
        Ok(GroupView {
            term: m.current_term,
            leader: me,
            members,
            last_index: m.last_log_index.unwrap_or(0),
            log_start: m.purged.as_ref().map_or(0, |l| l.index + 1),
            joint: membership.get_joint_config().len() > 1,
        })
    }

    pub(crate) fn member(&self, id: NodeId) -> Option<&MemberView> {
        self.members.iter().find(|m| m.id == id)
    }
}

/// One replica of a group, as this node knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupReplica {
    pub node: NodeId,
    /// Primary, secondary, building (a learner being built) or
    /// unreachable (a voter that did not answer the primary lately).
    pub role: ReplicaRole,
    pub epoch: u64,
    /// Entries it lacks compared with the primary's log (known on the primary).
    pub behind: Option<u64>,
}

/// A group's replicas as its primary sees them (`view`).
pub(crate) fn replicas_seen(view: &GroupView) -> Vec<GroupReplica> {
    view.members
        .iter()
        .map(|m| GroupReplica {
            node: m.id,
            role: if m.id == view.leader {
                ReplicaRole::Primary
            } else if !m.voter {
                ReplicaRole::Building
            } else if m.answered {
                ReplicaRole::Secondary
            } else {
                ReplicaRole::Unreachable
            },
            epoch: view.term,
            behind: m.matched.map(|i| view.last_index.saturating_sub(i)),
        })
        .collect()
}

/// A group's replicas as node `me` knows them from its `raft`: every
/// detail on the group's primary; the configuration and the primary
/// elsewhere; None where `me` is not in the group.
/// `quiet_answered`: see [`GroupView::of_leader`].
pub(crate) fn replicas_in<SM: RaftStateMachine<C>>(
    raft: &openraft::Raft<C, SM>,
    me: NodeId,
    quiet_answered: &dyn Fn(NodeId) -> bool,
) -> Option<Vec<GroupReplica>> {
    if let Ok(view) = GroupView::of_leader(raft, me, quiet_answered) {
        return Some(replicas_seen(&view));
    }
    let m = raft.metrics().borrow_watched().clone();
    let membership = m.membership_config.membership();
    membership.get_node(&me)?;
    let voters: Vec<NodeId> = membership.voter_ids().collect();
    Some(
        membership
            .nodes()
            .map(|(id, _)| GroupReplica {
                node: *id,
                role: if m.current_leader == Some(*id) {
                    ReplicaRole::Primary
                } else if voters.contains(id) {
                    ReplicaRole::Secondary
                } else {
                    ReplicaRole::Building
                },
                epoch: m.current_term,
                behind: None,
            })
            .collect(),
    )
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
    pub fn role_of(&self, id: NodeId) -> Option<ManagerRole> {
        if self.leader == Some(id) {
            Some(ManagerRole::Leader)
        } else if self.voters.contains(&id) {
            Some(ManagerRole::Voter)
        } else if self.learners.contains(&id) {
            Some(ManagerRole::Learner)
        } else {
            None
        }
    }
}
