//! What the partition manager's nodes say to each other
//! ([`ManagerMessage`]), and what administration asks of a node
//! ([`AdminMessage`]); both answered by `manager::service`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::reconfigure::Step;
use super::roster::GroupPrimary;
use super::status::NodeStatus;
use super::view::{GroupReplica, GroupView, ManagerGroup};
use crate::error::{ReplicationError, Result};
use crate::types::{GroupId, Load, NodeId, NodeInfo};
use crate::wire::Peers;
use crate::wire::service::{self, Message, Refusal, Subsystem};

/// The partition manager's traffic between nodes.
#[derive(Serialize, Deserialize)]
pub enum ManagerMessage {
    /// A node outside the system group's configuration (a spare) reports
    /// in and asks who the primary is; the primary records it in its roster.
    Register {
        id: NodeId,
        info: NodeInfo,
        /// The registering node's load figures.
        load: Load,
    },
    /// Every node reports to the manager's leader twice a second: where
    /// it is, its load figures (its liveness is that it reports).
    Report {
        id: NodeId,
        info: NodeInfo,
        load: Load,
        /// The node is being drained (`AdminMessage::Draining`).
        draining: bool,
    },
    /// A data group as its primary sees it, for the manager's leader.
    GroupView(GroupId),
    /// A membership step of a data group, asked of its primary by the
    /// manager's leader.
    Reconfigure { group: GroupId, step: Step },
    /// Hand the group's primary role to node `to` (asked of the group's
    /// primary by the manager's leader, to spread primaries, and by a drain).
    Lead { group: GroupId, to: NodeId },
}

/// The replies to [`ManagerMessage`]s.
#[derive(Serialize, Deserialize)]
pub enum ManagerReply {
    /// The primary as the answering node knows it; `member`: whether the
    /// registering node is in the group's configuration; `by_primary`: the
    /// answer comes from the primary itself.
    Registered {
        primary: Option<(NodeId, NodeInfo)>,
        member: bool,
        by_primary: bool,
    },
    Reported(Reported),
    GroupView(GroupView),
    Reconfigured,
    /// The primary role moves, as this says.
    Done(String),
}

impl Message for ManagerMessage {
    const SUBSYSTEM: Subsystem = Subsystem::Manager;
    type Reply = ManagerReply;
}

/// What the manager's leader (or a node naming it) answered a report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reported {
    /// The manager's leader as the answering node knows it.
    pub leader: Option<(NodeId, NodeInfo)>,
    /// Whether the reporting node is in the manager group's configuration.
    pub member: bool,
    /// The answer comes from the leader itself.
    pub by_leader: bool,
    /// The manager group's members as the answering node knows them.
    pub group: ManagerGroup,
    /// The data groups the directory lists besides the system group, with
    /// their streams: every node hosts them.
    pub groups: Vec<(GroupId, Vec<u32>)>,
    /// Each data group's primary as the manager's leader last saw it.
    pub primaries: Vec<GroupPrimary>,
    /// The nodes being drained, as the manager's leader knows them.
    pub draining: Vec<NodeId>,
    /// The database groups whose configuration leaves the reporting node
    /// out (`Roster::outside`): it does not campaign in them.
    pub outside: Vec<GroupId>,
}

/// Administration: `tessera status` and `tessera node drain`, the
/// replica counts, and the directory's record of the data groups.
#[derive(Serialize, Deserialize)]
pub enum AdminMessage {
    /// The cluster map as this node's Raft sees it.
    Status,
    /// Move primaries off a node before maintenance, if that is safe.
    Drain(NodeId),
    /// You are being drained: take no primary role from the manager until
    /// you restart (asked of the drained node by the node carrying out the
    /// drain; answered once the manager's leader has heard it).
    Draining,
    /// Every database group's replicas, as the system group's primary (a
    /// member of them all) knows them.
    Groups,
    /// Keep this many replicas of the system group (an administrator's
    /// request; the manager's leader records it in the directory).
    SetReplicas(usize),
    /// Record a new data group in the directory (asked of the manager's
    /// leader by the node that formed it).
    CreateGroup { group: GroupId, streams: Vec<u32>, replicas: usize },
    /// Remove a data group (its database was dropped): asked of the
    /// manager's leader, which records it in the directory; every node
    /// then removes what it holds of the group.
    DropGroup(GroupId),
}

/// The replies to [`AdminMessage`]s.
#[derive(Serialize, Deserialize)]
pub enum AdminReply {
    Status(Vec<NodeStatus>),
    /// A request done, and what it did.
    Done(String),
    Groups(Vec<(GroupId, Vec<GroupReplica>)>),
}

impl Message for AdminMessage {
    const SUBSYSTEM: Subsystem = Subsystem::Admin;
    type Reply = AdminReply;
}

/// How long a node's report or registration may take.
const REPORT_TIMEOUT: Duration = Duration::from_secs(2);

/// Reports this node (a spare, or a member that is not the primary) and
/// its load figures to the node at `addr`; returns the primary it names,
/// whether this node is a member, and whether the answer came from the
/// primary itself.
pub(crate) async fn register(
    peers: &Peers,
    addr: &str,
    info: &NodeInfo,
    load: Load,
) -> Result<(Option<(NodeId, NodeInfo)>, bool, bool)> {
    let request = ManagerMessage::Register { id: peers.me(), info: info.clone(), load };
    match service::call(&peers.client(addr), &request, REPORT_TIMEOUT).await? {
        Ok(ManagerReply::Registered { primary, member, by_primary }) => Ok((primary, member, by_primary)),
        Err(Refusal(e)) => Err(ReplicationError::Raft(e)),
        Ok(_) => Err(ReplicationError::Codec("unexpected reply to register".into())),
    }
}

/// Reports this node and its load figures to the node at `addr`; returns
/// what it answered: the manager's leader it names, whether this node is
/// in the manager group, whether the answer came from the leader itself,
/// and what the leader tells every node.
pub(crate) async fn report(peers: &Peers, addr: &str, info: &NodeInfo, load: Load, draining: bool) -> Result<Reported> {
    let request = ManagerMessage::Report { id: peers.me(), info: info.clone(), load, draining };
    match service::call(&peers.client(addr), &request, REPORT_TIMEOUT).await? {
        Ok(ManagerReply::Reported(reported)) => Ok(reported),
        Err(Refusal(e)) => Err(ReplicationError::Raft(e)),
        Ok(_) => Err(ReplicationError::Codec("unexpected reply to report".into())),
    }
}
