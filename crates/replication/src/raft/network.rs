//! Raft's messages between the nodes of a group, over the authenticated RPC
//! layer: the client side (`RaftNetworkFactory` / `RaftNetworkV2`) and the
//! server side (`serve_raft`), which hands requests to the local Raft.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{BoxStream, Stream, StreamExt};
use openraft::async_runtime::WatchReceiver;
use openraft::errors::{RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, StreamAppendResult, TransferLeaderRequest,
    TransferLeaderResponse, VoteRequest, VoteResponse,
};
use openraft::vote::RaftLeaderId;
use openraft::{OptionalSend, RaftNetworkFactory, RaftNetworkV2};
use serde::{Deserialize, Serialize};

use crate::error::{ReplicationError, Result};
use crate::raft::snapshot::{SnapshotFiles, SnapshotStore};
use crate::raft::type_config::{C, Raft, Snapshot, SnapshotData, SnapshotMeta, Vote};
use crate::types::{DATA_GROUP, GroupId, Load, NodeId, NodeInfo};
use crate::wire::{Handler, Peers, RpcClient};

/// Bytes of a snapshot file per message.
const SNAPSHOT_CHUNK: usize = 1 << 20;

#[derive(Serialize, Deserialize)]
pub(crate) enum Request {
    /// Who are you? (used to bootstrap a cluster from `--join` addresses)
    Hello,
    /// A node outside the group's configuration (a spare) reports in and
    /// asks who the primary is; the primary records it in its roster.
    Register {
        id: NodeId,
        info: NodeInfo,
        /// The registering node's load figures.
        load: Load,
    },
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
    TransferLeader {
        group: GroupId,
        rpc: TransferLeaderRequest<C>,
    },
    /// The cluster map as this node's Raft sees it.
    Status,
    /// Move primaries off a node before maintenance, if that is safe.
    Drain(NodeId),
    /// You are being drained: take no primary role from the manager until
    /// you restart (asked of the drained node by the node carrying out the
    /// drain; answered once the manager's leader has heard it).
    Draining,
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
    /// A message of the manager group's Raft (`directory_link`).
    Directory(crate::manager::directory_link::DirectoryMessage),
    /// Every node reports to the manager's leader twice a second: where
    /// it is, its load figures (its liveness is that it reports).
    Report {
        id: NodeId,
        info: NodeInfo,
        load: Load,
        /// The node is being drained (`Request::Draining`).
        draining: bool,
    },
    /// A data group as its primary sees it, for the manager's leader.
    GroupView(GroupId),
    /// A membership step of a data group, asked of its primary by the
    /// manager's leader.
    Reconfigure {
        group: GroupId,
        step: crate::manager::leader::Step,
    },
    /// Would you vote for this candidate? (asked before an election, so a
    /// node that was cut off does not raise the term and depose a primary
    /// the others still hear)
    PreVote {
        group: GroupId,
        rpc: VoteRequest<C>,
    },
    /// Keep this many replicas of the data group (an administrator's
    /// request; the manager's leader records it in the directory).
    SetReplicas(usize),
    /// Record a new data group in the directory (asked of the manager's
    /// leader by the node that formed it).
    CreateGroup {
        group: GroupId,
        streams: Vec<u32>,
        replicas: usize,
    },
    /// Hand the group's primary role to node `to` (asked of the group's
    /// primary by the manager's leader, to spread primaries).
    Lead {
        group: GroupId,
        to: NodeId,
    },
    /// Every database group's replicas, as the first group's primary
    /// (a member of them all) knows them.
    Groups,
    /// Remove a data group (its database was dropped): asked of the
    /// manager's leader, which records it in the directory; every node
    /// then removes what it holds of the group.
    DropGroup(GroupId),
    /// How many SQL sessions the group's primary serves (asked of it).
    Sessions(GroupId),
    /// The quiet groups the asking node leads (see `quiet`): confirm them.
    Quiet(Vec<crate::raft::quiet::QuietAsk>),
    /// A call of a transaction on a partition this node leads.
    Part(crate::parts::client::PartCall),
    /// A schema change of a partition this node leads.
    PartSchema {
        group: GroupId,
        stream: u32,
        change: crate::parts::client::SchemaChange,
    },
}

#[derive(Serialize, Deserialize)]
pub(crate) enum Reply {
    /// `formed`: the node belongs to a group that has been formed.
    Hello {
        id: NodeId,
        info: NodeInfo,
        formed: bool,
    },
    /// The primary as the answering node knows it; `member`: whether the
    /// registering node is in the group's configuration; `by_primary`: the
    /// answer comes from the primary itself.
    Registered {
        primary: Option<(NodeId, NodeInfo)>,
        member: bool,
        by_primary: bool,
    },
    AppendEntries(AppendEntriesResponse<C>),
    StreamAppended(StreamAppendResult<C>),
    Vote(VoteResponse<C>),
    TransferLeader(TransferLeaderResponse<C>),
    Status(Vec<crate::manager::status::NodeStatus>),
    Drained(String),
    Chunk,
    Installed(SnapshotResponse<C>),
    Failed(String),
    /// The manager's leader as the answering node knows it; `member`:
    /// whether the reporting node is in the manager group's configuration;
    /// `by_leader`: the answer comes from the leader itself.
    Reported {
        leader: Option<(NodeId, NodeInfo)>,
        member: bool,
        by_leader: bool,
        /// The manager group's members as the answering node knows them.
        group: crate::manager::status::ManagerGroup,
        /// The data groups the directory lists besides the first, with
        /// their streams: every node hosts them.
        groups: Vec<(GroupId, Vec<u32>)>,
        /// Each data group's primary as the manager's leader last saw it.
        primaries: Vec<crate::manager::leader::GroupPrimary>,
        /// The nodes being drained, as the manager's leader knows them.
        draining: Vec<NodeId>,
        /// The database groups whose configuration leaves the reporting
        /// node out: it does not campaign in them.
        outside: Vec<GroupId>,
    },
    GroupView(crate::manager::leader::GroupView),
    Reconfigured,
    /// An administrative request done, and what it did.
    Done(String),
    Groups(Vec<(GroupId, Vec<crate::node::groups::GroupReplica>)>),
    /// A count (of sessions).
    Count(usize),
    /// The quiet groups this node confirms.
    Quiet(Vec<GroupId>),
    Part(crate::parts::client::PartAnswer),
}

pub(crate) fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    postcard::to_allocvec(v).expect("replication messages always encode")
}

/// A data group this node hosts: what its peers' requests reach.
pub(crate) struct Hosted {
    pub raft: Raft,
    pub snapshots: SnapshotStore,
    pub freshness: Arc<crate::raft::freshness::Freshness>,
    /// Pipelined replication sessions from the group's primary.
    pub sessions: Arc<crate::raft::append_stream::Sessions>,
    /// This node's commits to the group.
    pub proposals: Arc<crate::raft::commit_log::Proposals>,
}

impl Hosted {
    /// Hands the group's primary role (held here) to node `to`, gently:
    /// new commits are refused at once (nothing written, so the client may
    /// retry) and those in flight get their answers before the role moves,
    /// so that a planned move costs a client a retry rather than a commit
    /// of unknown outcome. If the role has not moved within 3 s, this node
    /// serves again.
    pub async fn hand_over(
        &self,
        group: GroupId,
        quiet: &crate::raft::quiet::Quiet,
        me: NodeId,
        to: NodeId,
    ) -> std::result::Result<(), String> {
        quiet.hand_over(group, &self.raft);
        let serving = self.proposals.is_serving();
        if serving {
            // Sessions hold their next transaction from now on, and the
            // ones under way get a moment to end, committing here.
            self.proposals.gate.set_handing_over(true);
            let left = self.proposals.gate.settle(SETTLE).await;
            if left > 0 {
                tracing::info!(group, left, "handing the primary role over with transactions still open");
            }
            self.proposals.set_serving(false, "the primary is handing its role to another node");
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
            while self.proposals.tickets.pending() > 0 && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
        }
        let moved = self.raft.trigger().transfer_leader(to).await.map_err(|e| e.to_string());
        if serving {
            let (raft, proposals) = (self.raft.clone(), self.proposals.clone());
            tokio::spawn(async move {
                let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(3);
                loop {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    let m = raft.metrics().borrow_watched().clone();
                    if m.current_leader != Some(me) || m.state != openraft::ServerState::Leader {
                        return; // It moved: the role watch takes it from here.
                    }
                    if tokio::time::Instant::now() >= deadline {
                        tracing::warn!(group, to, "the primary's role did not move; this node serves again");
                        proposals.set_serving(true, "");
                        proposals.gate.set_handing_over(false);
                        return;
                    }
                }
            });
        }
        moved
    }
}

/// How long a hand-over waits for the transactions under way on the
/// primary to end before it refuses their commits.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// The data groups a node hosts, by id (the first, [`DATA_GROUP`], always).
pub(crate) type Hosts = Arc<parking_lot::RwLock<HashMap<GroupId, Arc<Hosted>>>>;

/// Counts the SQL sessions this node serves as a group's primary (the
/// server sets it: the replication layer knows no sessions).
pub(crate) type SessionCounter = Arc<std::sync::OnceLock<Arc<dyn Fn(GroupId) -> usize + Send + Sync>>>;

/// What a node's RPC server answers with.
pub(crate) struct Services {
    pub hosts: Hosts,
    pub id: NodeId,
    pub info: NodeInfo,
    pub peers: Peers,
    pub roster: Arc<crate::manager::leader::Roster>,
    pub directory: crate::manager::directory::DirectoryRaft,
    pub machine: crate::manager::directory::DirectoryMachine,
    pub sessions: SessionCounter,
    pub quiet: Arc<crate::raft::quiet::Quiet>,
    pub parts: Arc<crate::parts::server::PartServer>,
}

/// The group a request is for (requests not of a data group's Raft: the first).
fn group_of(request: &Request) -> GroupId {
    match request {
        Request::AppendEntries { group, .. }
        | Request::AppendStream { group, .. }
        | Request::Vote { group, .. }
        | Request::PreVote { group, .. }
        | Request::TransferLeader { group, .. }
        | Request::SnapshotChunk { group, .. }
        | Request::InstallSnapshot { group, .. }
        | Request::GroupView(group)
        | Request::Reconfigure { group, .. }
        | Request::Lead { group, .. }
        | Request::Sessions(group) => *group,
        Request::Part(call) => call.group,
        Request::PartSchema { group, .. } => *group,
        _ => DATA_GROUP,
    }
}

/// The server side: answers peers' requests with the local Rafts.
pub(crate) fn handler(services: Services) -> Handler {
    let Services { hosts, id, info, peers, roster, directory, machine, sessions, quiet, parts } = services;
    Arc::new(move |from, body| {
        let request = postcard::from_bytes::<Request>(&body);
        let hosted = |group: GroupId| {
            hosts.read().get(&group).cloned().ok_or_else(|| format!("node {id} does not host group {group}"))
        };
        let failed = |e: String| -> std::pin::Pin<Box<dyn Future<Output = Vec<u8>> + Send>> {
            Box::pin(async move { encode(&Reply::Failed(e)) })
        };
        let (first, target) = match (hosted(DATA_GROUP), request.as_ref().map(group_of).unwrap_or(DATA_GROUP)) {
            (Err(e), _) => return failed(e),
            (Ok(first), DATA_GROUP) => (first.clone(), first),
            (Ok(first), group) => match hosted(group) {
                Ok(target) => (first, target),
                Err(e) => return failed(e),
            },
        };
        // A pipelined session's requests are queued now, in arrival order.
        if let Ok(Request::AppendStream { group, session, rpc }) = request {
            let leader = rpc.vote.leader_id();
            let was_quiet = quiet.before_append(group, *leader.node_id(), leader.term(), &target.raft);
            let answer = target.sessions.enqueue(&target.raft, &target.freshness, from, session, rpc);
            let quiet = quiet.clone();
            return Box::pin(async move {
                let reply = answer.await.unwrap_or_else(|_| Reply::Failed("the append session ended".into()));
                if was_quiet && matches!(reply, Reply::StreamAppended(Ok(_))) {
                    quiet.after_append(group, &target.raft);
                }
                encode(&reply)
            });
        }
        let raft = first.raft.clone();
        let roster = roster.clone();
        let info = info.clone();
        let peers = peers.clone();
        let directory = directory.clone();
        let machine = machine.clone();
        let hosts = hosts.clone();
        let sessions = sessions.clone();
        let quiet = quiet.clone();
        let parts = parts.clone();
        Box::pin(async move {
            let reply = match request {
                Err(e) => Reply::Failed(format!("malformed request: {e}")),
                Ok(Request::Hello) => {
                    let formed = raft.metrics().borrow_watched().membership_config.membership().voter_ids().count() > 0;
                    Reply::Hello { id, info, formed }
                }
                Ok(Request::Register { id: from, info: theirs, load }) => {
                    let m = raft.metrics().borrow_watched().clone();
                    let membership = m.membership_config.membership();
                    let member = membership.get_node(&from).is_some();
                    let leads = m.state == openraft::ServerState::Leader && m.current_leader == Some(id);
                    if leads {
                        roster.reported(from, load);
                        if !member {
                            roster.heard(from, theirs);
                        }
                    }
                    let primary = if leads {
                        Some((id, info))
                    } else {
                        m.current_leader.and_then(|l| membership.get_node(&l).map(|i| (l, i.clone())))
                    };
                    Reply::Registered { primary, member, by_primary: leads }
                }
                Ok(Request::AppendEntries { group, rpc }) => {
                    let commit = rpc.leader_commit.as_ref().map(|l| l.index);
                    let leader = rpc.vote.leader_id();
                    let was_quiet = quiet.before_append(group, *leader.node_id(), leader.term(), &target.raft);
                    let reply = target.raft.append_entries(rpc).await;
                    if was_quiet && matches!(reply, Ok(AppendEntriesResponse::Success)) {
                        quiet.after_append(group, &target.raft);
                    }
                    // Only a primary this node accepts speaks for freshness.
                    if let (Ok(AppendEntriesResponse::Success), Some(c)) = (&reply, commit) {
                        target.freshness.heard(c);
                    }
                    reply.map_or_else(|e| Reply::Failed(e.to_string()), Reply::AppendEntries)
                }
                Ok(Request::AppendStream { .. }) => unreachable!("queued above"),
                Ok(Request::Vote { group, rpc }) => match quiet.vote_gate(group, rpc.leadership_transfer).await {
                    (_gate, Some(refused)) => Reply::Failed(refused),
                    (_gate, None) => {
                        if rpc.leadership_transfer {
                            // The primary hands over: whatever this node
                            // confirmed of it no longer holds.
                            quiet.leave(group, &target.raft);
                        }
                        target.raft.vote(rpc).await.map_or_else(|e| Reply::Failed(e.to_string()), Reply::Vote)
                    }
                },
                Ok(Request::TransferLeader { group, rpc }) => {
                    quiet.leave(group, &target.raft);
                    target
                        .raft
                        .handle_transfer_leader(rpc)
                        .await
                        .map_or_else(|e| Reply::Failed(e.to_string()), Reply::TransferLeader)
                }
                Ok(Request::Status) => crate::manager::admin::status(&raft, &roster, &directory, &peers, id)
                    .await
                    .map_or_else(|e| Reply::Failed(e.message()), Reply::Status),
                Ok(Request::Drain(node)) => {
                    crate::manager::admin::drain(&raft, (&hosts, &quiet), (&roster, &directory), &peers, id, node)
                        .await
                        .map_or_else(|e| Reply::Failed(e.message()), Reply::Drained)
                }
                Ok(Request::SnapshotChunk { index, path, offset, data, .. }) => {
                    let dir = target.snapshots.receive_dir(index);
                    tokio::task::spawn_blocking(move || receive_chunk(&dir, &path, offset, &data))
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|r| r)
                        .map_or_else(Reply::Failed, |()| Reply::Chunk)
                }
                Ok(Request::InstallSnapshot { vote, meta, .. }) => {
                    let index = meta.last_log_id.as_ref().map_or(0, |l| l.index);
                    let dir = target.snapshots.receive_dir(index);
                    let snapshot = Snapshot { meta, snapshot: SnapshotFiles { dir } };
                    target
                        .raft
                        .install_full_snapshot(vote, snapshot)
                        .await
                        .map_or_else(|e| Reply::Failed(e.to_string()), Reply::Installed)
                }
                Ok(Request::Directory(message)) => crate::manager::directory_link::handle(&directory, message).await,
                Ok(Request::Draining) => crate::manager::admin::mark_draining(&roster, &directory, id)
                    .await
                    .map_or_else(|e| Reply::Failed(e.message()), Reply::Done),
                Ok(Request::Report { id: from, info: theirs, load, draining }) => {
                    let m = directory.metrics().borrow_watched().clone();
                    let membership = m.membership_config.membership();
                    let leads = m.state == openraft::ServerState::Leader && m.current_leader == Some(id);
                    if leads {
                        roster.reported(from, load);
                        roster.reported_draining(from, draining);
                        roster.heard(from, theirs);
                    }
                    let leader = if leads {
                        Some((id, info))
                    } else {
                        m.current_leader.and_then(|l| membership.get_node(&l).map(|i| (l, i.clone())))
                    };
                    Reply::Reported {
                        leader,
                        member: membership.get_node(&from).is_some(),
                        by_leader: leads,
                        group: crate::manager::status::ManagerGroup::of(&m),
                        groups: machine.directory().streams.into_iter().collect(),
                        primaries: if leads { roster.group_primaries() } else { Vec::new() },
                        draining: if leads { roster.draining_nodes(id) } else { Vec::new() },
                        outside: if leads { roster.outside(from) } else { Vec::new() },
                    }
                }
                Ok(Request::GroupView(group)) => {
                    crate::manager::leader::GroupView::of_leader(&target.raft, id, &|n| quiet.answered(group, n))
                        .map_or_else(Reply::Failed, Reply::GroupView)
                }
                Ok(Request::Reconfigure { group, step }) => {
                    let m = target.raft.metrics().borrow_watched().clone();
                    if m.current_leader != Some(id) {
                        Reply::Failed(format!("node {id} is not group {group}'s primary"))
                    } else {
                        crate::manager::leader::reconfigure_data_group(&quiet, group, &target.raft, step)
                            .await
                            .map_or_else(Reply::Failed, |()| Reply::Reconfigured)
                    }
                }
                Ok(Request::SetReplicas(n)) => {
                    crate::manager::admin::set_replicas(&directory, &machine, &roster, &peers, id, n)
                        .await
                        .map_or_else(|e| Reply::Failed(e.message()), Reply::Done)
                }
                Ok(Request::CreateGroup { group, streams, replicas }) => {
                    crate::manager::admin::create_group(&directory, &roster, &peers, id, group, streams, replicas)
                        .await
                        .map_or_else(|e| Reply::Failed(e.message()), Reply::Done)
                }
                Ok(Request::Sessions(group)) => {
                    let m = target.raft.metrics().borrow_watched().clone();
                    if m.current_leader == Some(id) {
                        Reply::Count(sessions.get().map_or(0, |count| count(group)))
                    } else {
                        Reply::Failed(format!("node {id} is not group {group}'s primary"))
                    }
                }
                Ok(Request::DropGroup(group)) => {
                    crate::manager::admin::drop_group(&directory, &roster, &peers, id, group)
                        .await
                        .map_or_else(|e| Reply::Failed(e.message()), Reply::Done)
                }
                Ok(Request::Groups) => crate::manager::admin::groups(&raft, (&hosts, &quiet), &peers, id)
                    .await
                    .map_or_else(|e| Reply::Failed(e.message()), Reply::Groups),
                Ok(Request::Lead { group, to }) => {
                    let m = target.raft.metrics().borrow_watched().clone();
                    if m.current_leader != Some(id) {
                        Reply::Failed(format!("node {id} is not group {group}'s primary"))
                    } else {
                        match target.hand_over(group, &quiet, id, to).await {
                            Ok(()) => Reply::Done(format!("group {group}'s primary moves to node {to}")),
                            Err(e) => Reply::Failed(e),
                        }
                    }
                }
                Ok(Request::PreVote { group, rpc }) => match quiet.vote_gate(group, rpc.leadership_transfer).await {
                    (_gate, Some(refused)) => Reply::Failed(refused),
                    (_gate, None) => {
                        target.raft.pre_vote(rpc).await.map_or_else(|e| Reply::Failed(e.to_string()), Reply::Vote)
                    }
                },
                Ok(Request::Quiet(asks)) => Reply::Quiet(quiet.confirm(from, asks, &hosts).await),
                Ok(Request::Part(call)) if call.txn.node != from => {
                    Reply::Failed(format!("node {from} called for a transaction of node {}", call.txn.node))
                }
                Ok(Request::Part(call)) => Reply::Part(parts.handle(call).await),
                Ok(Request::PartSchema { group, stream, change }) => {
                    Reply::Part(parts.change_schema(group, stream, change).await)
                }
            };
            encode(&reply)
        })
    })
}

/// Writes one received piece of a snapshot file. Pieces of a file arrive in
/// order; the first piece of the snapshot's `META` (sent first) starts
/// the directory afresh.
fn receive_chunk(dir: &std::path::Path, path: &str, offset: u64, data: &[u8]) -> std::result::Result<(), String> {
    use std::io::Write;
    if !crate::raft::snapshot::valid_relative_path(path) {
        return Err(format!("refusing snapshot file path {path:?}"));
    }
    if path == "META" && offset == 0 {
        let _ = std::fs::remove_dir_all(dir);
    }
    let target = dir.join(path);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
    }
    let len = std::fs::metadata(&target).map(|m| m.len()).unwrap_or(0);
    if len != offset {
        return Err(format!("snapshot file {path}: piece at {offset} but {len} bytes received so far"));
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&target)
        .map_err(|e| format!("opening {}: {e}", target.display()))?;
    f.write_all(data).map_err(|e| format!("writing {}: {e}", target.display()))
}

/// Up to [`SNAPSHOT_CHUNK`] bytes of a file from `offset` on.
fn read_piece(path: &std::path::Path, offset: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(offset))?;
    let mut data = Vec::with_capacity(SNAPSHOT_CHUNK);
    f.take(SNAPSHOT_CHUNK as u64).read_to_end(&mut data)?;
    Ok(data)
}

impl Peers {
    /// Asks the node at `addr` who it is, and whether its group is formed.
    pub async fn hello(&self, addr: &str) -> Result<(NodeId, NodeInfo, bool)> {
        let reply = self.client(addr).call(encode(&Request::Hello), Duration::from_secs(2)).await?;
        match postcard::from_bytes::<Reply>(&reply).map_err(|e| ReplicationError::Codec(e.to_string()))? {
            Reply::Hello { id, info, formed } => Ok((id, info, formed)),
            Reply::Failed(e) => Err(ReplicationError::Raft(e)),
            _ => Err(ReplicationError::Codec("unexpected reply to hello".into())),
        }
    }

    /// Reports this node (a spare, or a member that is not the primary)
    /// and its load figures to the node at `addr`; returns the
    /// primary it names, whether this node is a member, and whether the
    /// answer came from the primary itself.
    pub(crate) async fn register(
        &self,
        addr: &str,
        info: &NodeInfo,
        load: Load,
    ) -> Result<(Option<(NodeId, NodeInfo)>, bool, bool)> {
        let request = Request::Register { id: self.me(), info: info.clone(), load };
        let reply = self.client(addr).call(encode(&request), Duration::from_secs(2)).await?;
        match postcard::from_bytes::<Reply>(&reply).map_err(|e| ReplicationError::Codec(e.to_string()))? {
            Reply::Registered { primary, member, by_primary } => Ok((primary, member, by_primary)),
            Reply::Failed(e) => Err(ReplicationError::Raft(e)),
            _ => Err(ReplicationError::Codec("unexpected reply to register".into())),
        }
    }
}

/// What the manager's leader (or a node naming it) answered a report.
pub(crate) struct Reported {
    pub leader: Option<(NodeId, NodeInfo)>,
    pub member: bool,
    pub by_leader: bool,
    pub group: crate::manager::status::ManagerGroup,
    pub groups: Vec<(GroupId, Vec<u32>)>,
    pub primaries: Vec<crate::manager::leader::GroupPrimary>,
    pub draining: Vec<NodeId>,
    /// The database groups whose configuration leaves the reporting node
    /// out (`Roster::outside`).
    pub outside: Vec<GroupId>,
}

impl Peers {
    /// Reports this node and its load figures to the node at `addr`;
    /// returns the manager's leader it names, whether this node is in the
    /// manager group, whether the answer came from the leader itself, and
    /// the manager group's members.
    pub(crate) async fn report(&self, addr: &str, info: &NodeInfo, load: Load, draining: bool) -> Result<Reported> {
        let request = Request::Report { id: self.me(), info: info.clone(), load, draining };
        let reply = self.client(addr).call(encode(&request), Duration::from_secs(2)).await?;
        match postcard::from_bytes::<Reply>(&reply).map_err(|e| ReplicationError::Codec(e.to_string()))? {
            Reply::Reported { leader, member, by_leader, group, groups, primaries, draining, outside } => {
                Ok(Reported { leader, member, by_leader, group, groups, primaries, draining, outside })
            }
            Reply::Failed(e) => Err(ReplicationError::Raft(e)),
            _ => Err(ReplicationError::Codec("unexpected reply to report".into())),
        }
    }
}

/// A data group's network: its messages, tagged with its id, over the
/// node's RPC clients.
#[derive(Clone)]
pub struct GroupPeers {
    pub peers: Peers,
    pub group: GroupId,
}

impl RaftNetworkFactory<C> for GroupPeers {
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
    async fn call(&self, request: Request, option: &RPCOption) -> Result<Reply, Unreachable<C>> {
        self.call_within(request, option.hard_ttl()).await
    }

    async fn call_within(&self, request: Request, ttl: Duration) -> Result<Reply, Unreachable<C>> {
        let unreachable =
            |e: String| Unreachable::from_string(format!("node {} ({}): {e}", self.target, self.client.addr()));
        let reply = self.client.call(encode(&request), ttl).await.map_err(|e| unreachable(e.to_string()))?;
        match postcard::from_bytes::<Reply>(&reply) {
            Ok(Reply::Failed(e)) => Err(unreachable(e)),
            Ok(reply) => Ok(reply),
            Err(e) => Err(unreachable(format!("malformed reply: {e}"))),
        }
    }
}

fn unexpected(what: &str) -> Unreachable<C> {
    Unreachable::from_string(format!("unexpected reply to {what}"))
}

impl RaftNetworkV2<C> for PeerLink {
    type SnapshotData = SnapshotData;

    /// Sends at most `APPEND_BYTES` of entries per call (at least one
    /// entry), answering a partial success for the rest (heartbeats, and
    /// a probe of where a replica's log matches, come this way).
    async fn append_entries(
        &mut self,
        mut rpc: AppendEntriesRequest<C>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<C>, RPCError<C>> {
        let (cut, ttl) = crate::raft::append_stream::fit(&mut rpc, option.hard_ttl());
        match self.call_within(Request::AppendEntries { group: self.group, rpc }, ttl).await? {
            Reply::AppendEntries(AppendEntriesResponse::Success) if cut.is_some() => {
                Ok(AppendEntriesResponse::PartialSuccess(cut.flatten()))
            }
            Reply::AppendEntries(r) => Ok(r),
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
        let answers =
            crate::raft::append_stream::pipeline(self.client.clone(), self.target, self.group, input, &option);
        Box::pin(async move { Ok(answers.boxed()) })
    }

    async fn vote(&mut self, rpc: VoteRequest<C>, option: RPCOption) -> Result<VoteResponse<C>, RPCError<C>> {
        match self.call(Request::Vote { group: self.group, rpc }, &option).await? {
            Reply::Vote(r) => Ok(r),
            _ => Err(unexpected("vote").into()),
        }
    }

    async fn pre_vote(&mut self, rpc: VoteRequest<C>, option: RPCOption) -> Result<VoteResponse<C>, RPCError<C>> {
        match self.call(Request::PreVote { group: self.group, rpc }, &option).await? {
            Reply::Vote(r) => Ok(r),
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
        let files = crate::raft::snapshot::files(&dir).map_err(|e| Unreachable::from_string(e.to_string()))?;
        let mut cancel = std::pin::pin!(cancel);
        let piece = RPCOption::new(Duration::from_secs(30));
        for path in files {
            let file = dir.join(&path);
            let mut offset = 0u64;
            loop {
                let (at, name) = (offset, file.clone());
                let data = tokio::task::spawn_blocking(move || read_piece(&name, at))
                    .await
                    .map_err(|e| Unreachable::from_string(e.to_string()))?
                    .map_err(|e| Unreachable::from_string(format!("reading {}: {e}", file.display())))?;
                let n = data.len();
                let request = Request::SnapshotChunk { group: self.group, index, path: path.clone(), offset, data };
                tokio::select! {
                    closed = &mut cancel => return Err(closed.into()),
                    reply = self.call(request, &piece) => match reply? {
                        Reply::Chunk => {}
                        _ => return Err(unexpected("snapshot piece").into()),
                    },
                }
                offset += n as u64;
                if n < SNAPSHOT_CHUNK {
                    break;
                }
            }
        }
        // Loading a large snapshot takes a while on the replica (about a
        // second per million rows): do not give up and send it all again.
        let install = RPCOption::new(Duration::from_secs(600));
        let request = Request::InstallSnapshot { group: self.group, vote, meta: snapshot.meta };
        match self.call(request, &install).await? {
            Reply::Installed(r) => Ok(r),
            _ => Err(unexpected("install snapshot").into()),
        }
    }

    async fn transfer_leader(
        &mut self,
        req: TransferLeaderRequest<C>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<C>, RPCError<C>> {
        match self.call(Request::TransferLeader { group: self.group, rpc: req }, &option).await? {
            Reply::TransferLeader(r) => Ok(r),
            _ => Err(unexpected("transfer leader").into()),
        }
    }
}
