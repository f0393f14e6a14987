//! The manager group's Raft messages between nodes: the same RPC
//! connections as the data groups', each message tagged as the manager's
//! (`Subsystem::Directory`) so the receiving node hands it to its manager
//! Raft. The manager's traffic is a few small entries a minute, so its
//! replication is one request at a time and a snapshot travels whole.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use openraft::errors::{RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, TransferLeaderRequest, TransferLeaderResponse,
    VoteRequest, VoteResponse,
};
use openraft::{OptionalSend, RaftNetworkFactory, RaftNetworkV2};
use serde::{Deserialize, Serialize};

use super::directory::{DirectoryRaft, DirectorySnapshot, DirectorySnapshotData};
use crate::raft::type_config::{C, SnapshotMeta, Vote};
use crate::types::{NodeId, NodeInfo};
use crate::wire::service::{self, Answer, Message, Refusal, Service, Subsystem};
use crate::wire::{Peers, RpcClient};

/// A message of the manager group's Raft.
#[derive(Serialize, Deserialize)]
pub enum DirectoryMessage {
    Append(AppendEntriesRequest<C>),
    Vote(VoteRequest<C>),
    PreVote(VoteRequest<C>),
    TransferLeader(TransferLeaderRequest<C>),
    Snapshot { vote: Vote, meta: SnapshotMeta, data: Vec<u8> },
}

/// The replies to [`DirectoryMessage`]s.
#[derive(Serialize, Deserialize)]
pub enum DirectoryReply {
    Appended(AppendEntriesResponse<C>),
    Voted(VoteResponse<C>),
    Transferred(TransferLeaderResponse<C>),
    Installed(SnapshotResponse<C>),
}

impl Message for DirectoryMessage {
    const SUBSYSTEM: Subsystem = Subsystem::Directory;
    type Reply = DirectoryReply;
}

/// Hands the manager group's messages to this node's manager Raft.
pub struct DirectoryService {
    pub raft: DirectoryRaft,
}

impl Service for DirectoryService {
    type Message = DirectoryMessage;

    fn serve(self: &Arc<Self>, _from: NodeId, message: DirectoryMessage) -> BoxFuture<'static, Answer<DirectoryReply>> {
        let raft = self.raft.clone();
        Box::pin(async move { handle(&raft, message).await })
    }
}

/// Hands a manager message to this node's manager Raft.
async fn handle(raft: &DirectoryRaft, message: DirectoryMessage) -> Answer<DirectoryReply> {
    let failed = |e: &dyn std::fmt::Display| Refusal(e.to_string());
    match message {
        DirectoryMessage::Append(rpc) => {
            raft.append_entries(rpc).await.map(DirectoryReply::Appended).map_err(|e| failed(&e))
        }
        DirectoryMessage::Vote(rpc) => raft.vote(rpc).await.map(DirectoryReply::Voted).map_err(|e| failed(&e)),
        DirectoryMessage::PreVote(rpc) => raft.pre_vote(rpc).await.map(DirectoryReply::Voted).map_err(|e| failed(&e)),
        DirectoryMessage::TransferLeader(rpc) => {
            raft.handle_transfer_leader(rpc).await.map(DirectoryReply::Transferred).map_err(|e| failed(&e))
        }
        DirectoryMessage::Snapshot { vote, meta, data } => {
            let snapshot = DirectorySnapshot { meta, snapshot: DirectorySnapshotData(data) };
            raft.install_full_snapshot(vote, snapshot).await.map(DirectoryReply::Installed).map_err(|e| failed(&e))
        }
    }
}

/// The manager Raft's network: links over the node's RPC clients.
#[derive(Clone)]
pub(crate) struct DirectoryNetwork(pub Peers);

impl RaftNetworkFactory<C> for DirectoryNetwork {
    type Network = DirectoryLink;

    async fn new_client(&mut self, target: NodeId, node: &NodeInfo) -> DirectoryLink {
        DirectoryLink { target, client: self.0.client(&node.rpc_addr) }
    }
}

pub(crate) struct DirectoryLink {
    target: NodeId,
    client: Arc<RpcClient>,
}

impl DirectoryLink {
    async fn call(&self, message: DirectoryMessage, ttl: Duration) -> Result<DirectoryReply, Unreachable<C>> {
        let unreachable =
            |e: String| Unreachable::from_string(format!("node {} ({}): {e}", self.target, self.client.addr()));
        let reply = self.client.call(service::request(&message), ttl).await.map_err(|e| unreachable(e.to_string()))?;
        match postcard::from_bytes::<Answer<DirectoryReply>>(&reply) {
            Ok(Err(Refusal(e))) => Err(unreachable(e)),
            Ok(Ok(reply)) => Ok(reply),
            Err(e) => Err(unreachable(format!("malformed reply: {e}"))),
        }
    }
}

fn unexpected(what: &str) -> Unreachable<C> {
    Unreachable::from_string(format!("unexpected reply to the manager's {what}"))
}

impl RaftNetworkV2<C> for DirectoryLink {
    type SnapshotData = DirectorySnapshotData;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<C>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<C>, RPCError<C>> {
        match self.call(DirectoryMessage::Append(rpc), option.hard_ttl()).await? {
            DirectoryReply::Appended(r) => Ok(r),
            _ => Err(unexpected("append entries").into()),
        }
    }

    async fn vote(&mut self, rpc: VoteRequest<C>, option: RPCOption) -> Result<VoteResponse<C>, RPCError<C>> {
        match self.call(DirectoryMessage::Vote(rpc), option.hard_ttl()).await? {
            DirectoryReply::Voted(r) => Ok(r),
            _ => Err(unexpected("vote").into()),
        }
    }

    async fn pre_vote(&mut self, rpc: VoteRequest<C>, option: RPCOption) -> Result<VoteResponse<C>, RPCError<C>> {
        match self.call(DirectoryMessage::PreVote(rpc), option.hard_ttl()).await? {
            DirectoryReply::Voted(r) => Ok(r),
            _ => Err(unexpected("pre-vote").into()),
        }
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: DirectorySnapshot,
        cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<C>, StreamingError<C>> {
        let message = DirectoryMessage::Snapshot { vote, meta: snapshot.meta, data: snapshot.snapshot.0 };
        tokio::select! {
            closed = cancel => Err(closed.into()),
            reply = self.call(message, Duration::from_secs(30)) => match reply? {
                DirectoryReply::Installed(r) => Ok(r),
                _ => Err(unexpected("snapshot").into()),
            },
        }
    }

    async fn transfer_leader(
        &mut self,
        req: TransferLeaderRequest<C>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<C>, RPCError<C>> {
        match self.call(DirectoryMessage::TransferLeader(req), option.hard_ttl()).await? {
            DirectoryReply::Transferred(r) => Ok(r),
            _ => Err(unexpected("transfer leader").into()),
        }
    }
}
