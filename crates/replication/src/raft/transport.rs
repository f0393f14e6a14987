//! A data group's Raft messages between nodes, the client's side
//! (`RaftNetworkFactory` / `RaftNetworkV2`): each message tagged with the
//! group, over the node's RPC clients. The server's side is `service`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{BoxStream, Stream, StreamExt};
use openraft::errors::{RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, StreamAppendResult, TransferLeaderRequest,
    TransferLeaderResponse, VoteRequest, VoteResponse,
};
use openraft::{OptionalSend, RaftNetworkFactory, RaftNetworkV2};

use super::append_stream::{fit, pipeline};
use super::messages::{RaftMessage, RaftReply};
use super::snapshot::{self, Snapshot, SnapshotFiles};
use super::type_config::{C, Vote};
use crate::error::{ReplicationError, Result as ReplicationResult};
use crate::types::{GroupId, NodeId, NodeInfo};
use crate::wire::service::{self, Answer, Refusal};
use crate::wire::{Peers, RpcClient};

/// Asks the node at `addr` who it is, and whether its system group is formed.
pub async fn hello(peers: &Peers, addr: &str) -> ReplicationResult<(NodeId, NodeInfo, bool)> {
    match service::call(&peers.client(addr), &RaftMessage::Hello, Duration::from_secs(2)).await? {
        Ok(RaftReply::Hello { id, info, formed }) => Ok((id, info, formed)),
        Err(Refusal(e)) => Err(ReplicationError::Raft(e)),
        Ok(_) => Err(ReplicationError::Codec("unexpected reply to hello".into())),
    }
}

/// A data group's network: its messages, tagged with its id, over the
/// node's RPC clients.
#[derive(Clone)]
pub struct GroupNetwork {
    pub peers: Peers,
    pub group: GroupId,
}

impl RaftNetworkFactory<C> for GroupNetwork {
    type Network = PeerLink;

    async fn new_client(&mut self, target: NodeId, node: &NodeInfo) -> PeerLink {
        PeerLink { target, group: self.group, client: self.peers.client(&node.rpc_addr), heartbeat: false }
    }

    /// Heartbeats get a connection of their own, so that they are never
    /// stuck behind a large batch of entries on the replication stream (a
    /// late heartbeat looks like a lost quorum).
    async fn new_heartbeat_client(&mut self, target: NodeId, node: &NodeInfo) -> PeerLink {
        let client = self.peers.dedicated_client(&node.rpc_addr);
        PeerLink { target, group: self.group, client, heartbeat: true }
    }
}

/// Raft's view of one peer.
pub struct PeerLink {
    target: NodeId,
    group: GroupId,
    client: Arc<RpcClient>,
    /// The link heartbeats go over. openraft sends a heartbeat as a stream
    /// of one request; here it travels as a plain AppendEntries call, never
    /// as a replication session: a session of its own would replace the
    /// replication session on the secondary (one per primary node), and a
    /// request of the replaced session could then overtake an earlier one
    /// still on its way into Raft, which the primary would take for a
    /// secondary losing entries it had acknowledged.
    heartbeat: bool,
}

impl PeerLink {
    async fn call(&self, request: RaftMessage, option: &RPCOption) -> Result<RaftReply, Unreachable<C>> {
        self.call_within(request, option.hard_ttl()).await
    }

    async fn call_within(&self, request: RaftMessage, ttl: Duration) -> Result<RaftReply, Unreachable<C>> {
        let unreachable =
            |e: String| Unreachable::from_string(format!("node {} ({}): {e}", self.target, self.client.addr()));
        let reply = self.client.call(service::request(&request), ttl).await.map_err(|e| unreachable(e.to_string()))?;
        match postcard::from_bytes::<Answer<RaftReply>>(&reply) {
            Ok(Err(Refusal(e))) => Err(unreachable(e)),
            Ok(Ok(reply)) => Ok(reply),
            Err(e) => Err(unreachable(format!("malformed reply: {e}"))),
        }
    }
}

fn unexpected(what: &str) -> Unreachable<C> {
    Unreachable::from_string(format!("unexpected reply to {what}"))
}

impl RaftNetworkV2<C> for PeerLink {
    type SnapshotData = SnapshotFiles;

    /// Sends at most `APPEND_BYTES` of entries per call (at least one
    /// entry), answering a partial success for the rest (heartbeats, and
    /// a probe of where a replica's log matches, come this way).
    async fn append_entries(
        &mut self,
        mut rpc: AppendEntriesRequest<C>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<C>, RPCError<C>> {
        let (cut, ttl) = fit(&mut rpc, option.hard_ttl());
        match self.call_within(RaftMessage::AppendEntries { group: self.group, rpc }, ttl).await? {
            RaftReply::AppendEntries(AppendEntriesResponse::Success) if cut.is_some() => {
                Ok(AppendEntriesResponse::PartialSuccess(cut.flatten()))
            }
            RaftReply::AppendEntries(r) => Ok(r),
            _ => Err(unexpected("append entries").into()),
        }
    }

    /// Replication proper: several requests in flight (`append_stream`).
    fn stream_append<'s, S>(
        &'s mut self,
        input: S,
        option: RPCOption,
    ) -> BoxFuture<'s, Result<BoxStream<'s, Result<StreamAppendResult<C>, RPCError<C>>>, RPCError<C>>>
    where
        S: Stream<Item = AppendEntriesRequest<C>> + OptionalSend + Unpin + 'static,
    {
        if self.heartbeat {
            return openraft::network::stream_append_sequential(self, input, option);
        }
        let answers = pipeline(self.client.clone(), self.target, self.group, input, &option);
        Box::pin(async move { Ok(answers.boxed()) })
    }

    async fn vote(&mut self, rpc: VoteRequest<C>, option: RPCOption) -> Result<VoteResponse<C>, RPCError<C>> {
        match self.call(RaftMessage::Vote { group: self.group, rpc }, &option).await? {
            RaftReply::Vote(r) => Ok(r),
            _ => Err(unexpected("vote").into()),
        }
    }

    async fn pre_vote(&mut self, rpc: VoteRequest<C>, option: RPCOption) -> Result<VoteResponse<C>, RPCError<C>> {
        match self.call(RaftMessage::PreVote { group: self.group, rpc }, &option).await? {
            RaftReply::Vote(r) => Ok(r),
            _ => Err(unexpected("pre-vote").into()),
        }
    }

    /// Sends the snapshot's files piece by piece, then asks the replica to
    /// install it. Checkpoint files carry checksums, so damage on the way
    /// is found when the replica loads them.
    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot,
        cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<C>, StreamingError<C>> {
        let index = snapshot.meta.last_log_id.as_ref().map_or(0, |l| l.index);
        let dir = snapshot.snapshot.dir.clone();
        let files = snapshot::files(&dir).map_err(|e| Unreachable::from_string(e.to_string()))?;
        let mut cancel = std::pin::pin!(cancel);
        let piece = RPCOption::new(Duration::from_secs(30));
        for path in files {
            let file = dir.join(&path);
            let mut offset = 0u64;
            loop {
                let (at, name) = (offset, file.clone());
                let data = tokio::task::spawn_blocking(move || snapshot::read_piece(&name, at))
                    .await
                    .map_err(|e| Unreachable::from_string(e.to_string()))?
                    .map_err(|e| Unreachable::from_string(format!("reading {}: {e}", file.display())))?;
                let n = data.len();
                let request = RaftMessage::SnapshotChunk { group: self.group, index, path: path.clone(), offset, data };
                tokio::select! {
                    closed = &mut cancel => return Err(closed.into()),
                    reply = self.call(request, &piece) => match reply? {
                        RaftReply::Chunk => {}
                        _ => return Err(unexpected("snapshot piece").into()),
                    },
                }
                offset += n as u64;
                if n < snapshot::SNAPSHOT_CHUNK {
                    break;
                }
            }
        }
        // Loading a large snapshot takes a while on the replica (about a
        // second per million rows): do not give up and send it all again.
        let install = RPCOption::new(Duration::from_secs(600));
        let request = RaftMessage::InstallSnapshot { group: self.group, vote, meta: snapshot.meta };
        match self.call(request, &install).await? {
            RaftReply::Installed(r) => Ok(r),
            _ => Err(unexpected("install snapshot").into()),
        }
    }

    async fn transfer_leader(
        &mut self,
        req: TransferLeaderRequest<C>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<C>, RPCError<C>> {
        match self.call(RaftMessage::TransferLeader { group: self.group, rpc: req }, &option).await? {
            RaftReply::TransferLeader(r) => Ok(r),
            _ => Err(unexpected("transfer leader").into()),
        }
    }
}
