//! A group's membership changes, as the partition manager asks its
//! leader for them: a [`Step`].

use std::collections::BTreeSet;
use std::time::Duration;

use openraft::ChangeMembers;
use openraft::storage::RaftStateMachine;
use serde::{Deserialize, Serialize};

use crate::error::{ReplicationError, Result};
use crate::raft::quiet::Quiet;
use crate::raft::state_machine::Raft;
use crate::raft::type_config::C;
use crate::types::{GroupId, NodeId, NodeInfo};

/// One membership change of a group, carried out by its leader.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Step {
    /// Downshift: a lost voter leaves (N → N-1).
    RemoveVoter(NodeId),
    /// An unfinished replica is dropped.
    RemoveNode(NodeId),
    /// A replica starts being built: a learner gets the snapshot and the log.
    AddLearner(NodeId, NodeInfo),
    /// A learner that caught up votes.
    Promote(NodeId),
    /// A joint configuration becomes the new one alone (the second step of
    /// a change whose leader moved before it).
    Settle,
}

/// Carries out `step` on data group `group`, which `raft` leads here: a
/// quiet group is woken first, and Raft's lease renewed (a leader whose
/// lease has lapsed, as a quiet group's has, refuses membership changes as
/// it refuses writes).
pub(crate) async fn reconfigure_data_group(quiet: &Quiet, group: GroupId, raft: &Raft, step: Step) -> Result<()> {
    let lease = Duration::from_millis(raft.config().election_timeout_max);
    quiet.ready_to_write(group, raft, lease).await;
    reconfigure(raft, step).await
}

/// Carries out `step` on the group `raft` leads.
pub(crate) async fn reconfigure<SM: RaftStateMachine<C>>(raft: &openraft::Raft<C, SM>, step: Step) -> Result<()> {
    let change = |c| async {
        raft.change_membership(c, false).await.map(|_| ()).map_err(|e| ReplicationError::Raft(e.to_string()))
    };
    match step {
        Step::RemoveVoter(n) => change(ChangeMembers::RemoveVoters(BTreeSet::from([n]))).await,
        Step::RemoveNode(n) => change(ChangeMembers::RemoveNodes(BTreeSet::from([n]))).await,
        Step::Promote(n) => change(ChangeMembers::AddVoterIds(BTreeSet::from([n]))).await,
        Step::AddLearner(n, info) => {
            raft.add_learner(n, info, false).await.map(|_| ()).map_err(|e| ReplicationError::Raft(e.to_string()))
        }
        Step::Settle => change(ChangeMembers::AddVoterIds(BTreeSet::new())).await,
    }
}
