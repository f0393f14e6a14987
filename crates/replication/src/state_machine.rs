//! The node group's state machine: the node's engines.
//!
//! Applying a committed entry installs its record into the engine of its
//! stream (opening a partition the first time its stream appears) through
//! the engine's replica path — unless the entry is this node's own proposal
//! still waiting in its engine, which is then only told that it committed
//! (`commit_log`). The engines live in memory and the Raft log is their
//! durability: a restarted node replays the log into empty engines, up to
//! the commit index it saved, before it serves or votes.

use std::io;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use openraft::storage::{EntryResponder, RaftStateMachine};
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder};
use parking_lot::Mutex;
use tessera_engine::{Engine, Node, SYSTEM_STREAM};

use crate::commit_log::Proposals;
use crate::types::{C, Command, LogId, Snapshot, SnapshotData, SnapshotMeta, StoredMembership};

#[derive(Default)]
struct Applied {
    last: Option<LogId>,
    membership: StoredMembership,
}

/// Cheap to clone; clones share the node and the applied position.
#[derive(Clone)]
pub struct StateMachine {
    node: Arc<Node>,
    proposals: Arc<Proposals>,
    applied: Arc<Mutex<Applied>>,
}

impl StateMachine {
    pub fn new(node: Arc<Node>, proposals: Arc<Proposals>) -> StateMachine {
        StateMachine { node, proposals, applied: Arc::default() }
    }

    pub fn last_applied(&self) -> Option<u64> {
        self.applied.lock().last.as_ref().map(|l| l.index)
    }

    fn engine(&self, stream: u32) -> tessera_engine::Result<Arc<Engine>> {
        if stream == SYSTEM_STREAM {
            return Ok(self.node.system().clone());
        }
        match self.node.partition(stream) {
            Some(e) => Ok(e),
            None => self.node.open_partition(stream, true),
        }
    }

    fn apply_command(&self, cmd: &Command) -> io::Result<()> {
        if cmd.origin == self.proposals.me
            && cmd.incarnation == self.proposals.incarnation
            && self.proposals.tickets.claim_applied(cmd.ticket)
        {
            return Ok(());
        }
        let engine = self.engine(cmd.stream).map_err(io::Error::other)?;
        let started = std::time::Instant::now();
        // The engine may wait for a demoted primary's sessions to unwind.
        tokio::task::block_in_place(|| engine.apply_committed(&cmd.record)).map_err(io::Error::other)?;
        if started.elapsed() > std::time::Duration::from_millis(200) {
            tracing::info!(
                stream = cmd.stream,
                bytes = cmd.record.len(),
                ms = started.elapsed().as_millis() as u64,
                "applied a large commit"
            );
        }
        Ok(())
    }
}

impl RaftSnapshotBuilder<C> for StateMachine {
    type SnapshotData = SnapshotData;

    async fn build_snapshot(&mut self) -> Result<Snapshot, io::Error> {
        // The log is never purged yet (snapshot policy: never), so no
        // replica ever needs a snapshot; they come with checkpoints.
        Err(io::Error::other("snapshots are not supported yet: replicas catch up from the log"))
    }
}

impl RaftStateMachine<C> for StateMachine {
    type SnapshotData = SnapshotData;
    type SnapshotBuilder = Self;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), io::Error> {
        let a = self.applied.lock();
        Ok((a.last, a.membership.clone()))
    }

    async fn apply<S>(&mut self, mut entries: S) -> Result<(), io::Error>
    where
        S: Stream<Item = Result<EntryResponder<C>, io::Error>> + Unpin + OptionalSend,
    {
        while let Some(item) = entries.next().await {
            let (entry, responder) = item?;
            let index = entry.log_id.index;
            match &entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(cmd) => self.apply_command(cmd)?,
                EntryPayload::Membership(m) => {
                    self.applied.lock().membership = StoredMembership::new(Some(entry.log_id), m.clone());
                }
            }
            self.applied.lock().last = Some(entry.log_id);
            if let Some(r) = responder {
                r.send(index);
            }
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn install_snapshot(&mut self, _meta: &SnapshotMeta, _snapshot: SnapshotData) -> Result<(), io::Error> {
        Err(io::Error::other("snapshots are not supported yet: replicas catch up from the log"))
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, io::Error> {
        Ok(None)
    }
}
