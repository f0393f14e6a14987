//! What a node as a whole answers ([`NodeMessage`]): the SQL sessions its
//! primaries serve, which only the server above knows.

use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use openraft::async_runtime::WatchReceiver;
use serde::{Deserialize, Serialize};

use crate::error::ReplicationError;
use crate::raft::groups::RaftGroups;
use crate::types::{GroupId, NodeId};
use crate::wire::{Answer, Message, Service, Subsystem};

/// Counts the SQL sessions this node serves as a group's primary (the
/// server sets it: the replication layer knows no sessions).
pub type SessionCounter = Arc<OnceLock<Arc<dyn Fn(GroupId) -> usize + Send + Sync>>>;

/// A question for a node as a whole.
#[derive(Serialize, Deserialize)]
pub enum NodeMessage {
    /// How many SQL sessions the group's primary serves (asked of it).
    Sessions(GroupId),
}

impl Message for NodeMessage {
    const SUBSYSTEM: Subsystem = Subsystem::Node;
    type Reply = usize;
}

/// Answers [`NodeMessage`]s.
pub struct NodeService {
    pub groups: Arc<RaftGroups>,
    pub sessions: SessionCounter,
}

impl Service for NodeService {
    type Message = NodeMessage;

    fn serve(self: &Arc<Self>, _from: NodeId, message: NodeMessage) -> BoxFuture<'static, Answer<usize>> {
        let NodeMessage::Sessions(group) = message;
        let me = self.groups.settings.id;
        let answer = self.groups.hosted(group).and_then(|target| {
            if target.raft.metrics().borrow_watched().current_leader == Some(me) {
                Ok(self.sessions.get().map_or(0, |count| count(group)))
            } else {
                Err(ReplicationError::Refused(format!("node {me} is not group {group}'s primary")))
            }
        });
        Box::pin(std::future::ready(answer.map_err(Into::into)))
    }
}
