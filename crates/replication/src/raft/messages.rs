//! What the nodes of a data group say to each other: Raft's messages,
//! tagged with the group, and who a node is.

use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, StreamAppendResult, TransferLeaderRequest,
    TransferLeaderResponse, VoteRequest, VoteResponse,
};
use serde::{Deserialize, Serialize};

use super::type_config::{C, SnapshotMeta, Vote};
use crate::types::{GroupId, NodeId, NodeInfo};
use crate::wire::{Message, Subsystem};

/// A request of the data groups' Raft (answered by `raft::service`).
#[derive(Serialize, Deserialize)]
pub enum RaftMessage {
    /// Who are you? (used to bootstrap a cluster from `--join` addresses,
    /// and to learn where a group's primary is now)
    Hello,
    AppendEntries {
        group: GroupId,
        rpc: AppendEntriesRequest<C>,
    },
    /// One request of a pipelined replication session (`append_stream`).
    AppendStream {
        group: GroupId,
        session: u64,
        rpc: AppendEntriesRequest<C>,
    },
    Vote {
        group: GroupId,
        rpc: VoteRequest<C>,
    },
    /// Would you vote for this candidate? (asked before an election, so a
    /// node that was cut off does not raise the term and depose a primary
    /// the others still hear)
    PreVote {
        group: GroupId,
        rpc: VoteRequest<C>,
    },
    TransferLeader {
        group: GroupId,
        rpc: TransferLeaderRequest<C>,
    },
    /// A piece of a snapshot's file (`path` relative to the snapshot).
    SnapshotChunk {
        group: GroupId,
        index: u64,
        path: String,
        offset: u64,
        data: Vec<u8>,
    },
    /// Every file of the snapshot was sent: install it.
    InstallSnapshot {
        group: GroupId,
        vote: Vote,
        meta: SnapshotMeta,
    },
}

/// The replies to [`RaftMessage`]s.
#[derive(Serialize, Deserialize)]
pub enum RaftReply {
    /// `formed`: the node belongs to a system group that has been formed.
    Hello {
        id: NodeId,
        info: NodeInfo,
        formed: bool,
    },
    AppendEntries(AppendEntriesResponse<C>),
    StreamAppended(StreamAppendResult<C>),
    Vote(VoteResponse<C>),
    TransferLeader(TransferLeaderResponse<C>),
    Chunk,
    Installed(SnapshotResponse<C>),
}

impl Message for RaftMessage {
    const SUBSYSTEM: Subsystem = Subsystem::Raft;
    type Reply = RaftReply;
}

impl RaftMessage {
    /// The group the message is for (None: the node's, `Hello`).
    pub fn group(&self) -> Option<GroupId> {
        match self {
            RaftMessage::Hello => None,
            RaftMessage::AppendEntries { group, .. }
            | RaftMessage::AppendStream { group, .. }
            | RaftMessage::Vote { group, .. }
            | RaftMessage::PreVote { group, .. }
            | RaftMessage::TransferLeader { group, .. }
            | RaftMessage::SnapshotChunk { group, .. }
            | RaftMessage::InstallSnapshot { group, .. } => Some(*group),
        }
    }
}
