//! The server's side of the data groups' Raft messages: hands each to the
//! group's Raft on this node.

use std::sync::Arc;

use futures::future::BoxFuture;
use openraft::async_runtime::WatchReceiver;
use openraft::raft::AppendEntriesResponse;
use openraft::vote::RaftLeaderId;

use super::group::RaftGroup;
use super::groups::RaftGroups;
use super::messages::{RaftMessage, RaftReply};
use super::snapshot::{Snapshot, SnapshotFiles, receive_chunk};
use crate::error::ReplicationError;
use crate::types::{NodeId, SYSTEM_GROUP};
use crate::wire::{Answer, Refusal, Service};

/// Answers [`RaftMessage`]s with the node's data groups.
pub struct RaftService {
    pub groups: Arc<RaftGroups>,
}

/// A Raft error as the peer's refusal.
fn refused(e: impl std::fmt::Display) -> Refusal {
    Refusal(e.to_string())
}

impl Service for RaftService {
    type Message = RaftMessage;

    fn serve(self: &Arc<Self>, from: NodeId, message: RaftMessage) -> BoxFuture<'static, Answer<RaftReply>> {
        let target = match self.groups.hosted(message.group().unwrap_or(SYSTEM_GROUP)) {
            Ok(target) => target,
            Err(e) => return Box::pin(std::future::ready(Err(e.into()))),
        };
        let quiet = self.groups.quiet.clone();
        match message {
            // A pipelined session's requests are queued now, in arrival order.
            RaftMessage::AppendStream { group, session, rpc } => {
                let leader = rpc.vote.leader_id();
                let was_quiet = quiet.before_append(group, *leader.node_id(), leader.term(), &target.raft);
                let answer = target.appends.enqueue(&target.raft, &target.freshness, from, session, rpc);
                Box::pin(async move {
                    let reply = answer.await.unwrap_or_else(|_| Err(Refusal("the append session ended".into())));
                    if was_quiet && matches!(reply, Ok(RaftReply::StreamAppended(Ok(_)))) {
                        quiet.after_append(group, &target.raft);
                    }
                    reply
                })
            }
            message => {
                let this = self.clone();
                Box::pin(async move { this.answer(target, message).await })
            }
        }
    }
}

impl RaftService {
    /// Answers a message other than a pipelined append, for group `target`.
    async fn answer(&self, target: Arc<RaftGroup>, message: RaftMessage) -> Answer<RaftReply> {
        let quiet = &self.groups.quiet;
        match message {
            RaftMessage::Hello => {
                let settings = &self.groups.settings;
                let formed =
                    target.raft.metrics().borrow_watched().membership_config.membership().voter_ids().count() > 0;
                Ok(RaftReply::Hello { id: settings.id, info: settings.info.clone(), formed })
            }
            RaftMessage::AppendEntries { group, rpc } => {
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
                reply.map(RaftReply::AppendEntries).map_err(refused)
            }
            RaftMessage::AppendStream { .. } => unreachable!("queued as it arrives"),
            RaftMessage::Vote { group, rpc } => match quiet.vote_gate(group, rpc.leadership_transfer).await {
                (_gate, Some(refusal)) => Err(Refusal(refusal)),
                (_gate, None) => {
                    if rpc.leadership_transfer {
                        // The primary hands over: whatever this node
                        // confirmed of it no longer holds.
                        quiet.leave(group, &target.raft);
                    }
                    target.raft.vote(rpc).await.map(RaftReply::Vote).map_err(refused)
                }
            },
            RaftMessage::PreVote { group, rpc } => match quiet.vote_gate(group, rpc.leadership_transfer).await {
                (_gate, Some(refusal)) => Err(Refusal(refusal)),
                (_gate, None) => target.raft.pre_vote(rpc).await.map(RaftReply::Vote).map_err(refused),
            },
            RaftMessage::TransferLeader { group, rpc } => {
                quiet.leave(group, &target.raft);
                target.raft.handle_transfer_leader(rpc).await.map(RaftReply::TransferLeader).map_err(refused)
            }
            RaftMessage::SnapshotChunk { index, path, offset, data, .. } => {
                let dir = target.snapshots.receive_dir(index);
                tokio::task::spawn_blocking(move || receive_chunk(&dir, &path, offset, &data))
                    .await
                    .map_err(|e| ReplicationError::Internal(e.to_string()))
                    .and_then(|r| r)
                    .map(|()| RaftReply::Chunk)
                    .map_err(Refusal::from)
            }
            RaftMessage::InstallSnapshot { vote, meta, .. } => {
                let index = meta.last_log_id.as_ref().map_or(0, |l| l.index);
                let dir = target.snapshots.receive_dir(index);
                let snapshot = Snapshot { meta, snapshot: SnapshotFiles { dir } };
                target.raft.install_full_snapshot(vote, snapshot).await.map(RaftReply::Installed).map_err(refused)
            }
        }
    }
}
