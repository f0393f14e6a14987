//! The partition manager's own Raft group and what it keeps: the
//! *directory*.
//!
//! The manager is not the system group's primary but a group of its own, on
//! 3 nodes (5 once the cluster has 5 or more), as in the paper: its leader
//! decides (`leader`), and its replicated state survives the loss of any
//! node, the system group's primary included. Every node runs an instance of
//! it; the nodes outside its configuration simply never hear from it.
//!
//! Its state machine is small and lives in memory: every node that joined
//! (address, failure and upgrade domain), each group's target replica
//! count, and the load figures last recorded. Liveness is not replicated:
//! the leader hears every node twice a second (`ManagerMessage::Report`) and a
//! new leader learns it again within a second.
//!
//! The group reuses the data groups' entry type and keeps its log in the
//! node's shared Raft log (`log_store::SharedLog`, its frames tagged
//! `MANAGER_LOG`): a command is a [`Command`] record of stream
//! [`DIRECTORY_STREAM`], postcard-encoded. A snapshot is the whole state,
//! one file written before it is renamed into place; the log is purged
//! below it.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::{Stream, StreamExt};
use openraft::storage::{EntryResponder, RaftSnapshotBuilder, RaftStateMachine};
use openraft::{EntryPayload, OptionalSend};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::raft::type_config::{C, Command, LogId, SnapshotMeta, StoredMembership};
use crate::types::{GroupId, Load, NodeId, NodeInfo};

/// The stream a directory command's [`Command`] names.
pub const DIRECTORY_STREAM: u32 = u32::MAX;

/// The manager group's Raft.
pub type DirectoryRaft = openraft::Raft<C, DirectoryMachine>;
pub type DirectorySnapshot = openraft::type_config::alias::SnapshotOf<C, DirectorySnapshotData>;

/// What the manager group keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Directory {
    /// Every node that joined the cluster: where it is, its domains.
    pub nodes: BTreeMap<NodeId, NodeInfo>,
    /// Replicas each data group keeps (the first: [`crate::types::SYSTEM_GROUP`],
    /// whose count the groups without one of their own keep too).
    pub targets: BTreeMap<GroupId, usize>,
    /// The streams each data group besides the first replicates (the first
    /// replicates the rest); every node hosts every group listed here,
    /// but for those listed without streams: they were removed.
    #[serde(default)]
    pub streams: BTreeMap<GroupId, Vec<u32>>,
    /// Load figures as last recorded (every few seconds, when they moved).
    pub loads: BTreeMap<NodeId, Load>,
}

/// A change of the directory: one log entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DirectoryCommand {
    /// A node joined, or its addresses or domains changed.
    Node { id: NodeId, info: NodeInfo },
    /// A group's replica count.
    Target { group: GroupId, replicas: usize },
    /// A new data group, over these streams, keeping this many replicas.
    Group { group: GroupId, streams: Vec<u32>, replicas: usize },
    /// The nodes' load figures now.
    Loads(BTreeMap<NodeId, Load>),
    /// A data group was removed (its database dropped): it stays listed,
    /// without streams, so that every node, including one that was away,
    /// removes what it holds of it.
    Drop { group: GroupId },
}

impl DirectoryCommand {
    /// The log entry that carries it.
    pub fn to_entry(&self, origin: NodeId) -> Command {
        Command {
            origin,
            incarnation: 0,
            ticket: 0,
            stream: DIRECTORY_STREAM,
            part: None,
            record: bytes::Bytes::from(postcard::to_allocvec(self).expect("directory commands always encode")),
        }
    }
}

impl Directory {
    fn apply(&mut self, command: DirectoryCommand) {
        match command {
            DirectoryCommand::Node { id, info } => {
                self.nodes.insert(id, info);
            }
            DirectoryCommand::Target { group, replicas } => {
                self.targets.insert(group, replicas);
            }
            DirectoryCommand::Loads(loads) => self.loads = loads,
            DirectoryCommand::Drop { group } => {
                if let Some(streams) = self.streams.get_mut(&group) {
                    streams.clear();
                    self.targets.remove(&group);
                }
            }
            DirectoryCommand::Group { group, streams, replicas } => {
                self.streams.insert(group, streams);
                // 0: the group keeps the system group's count, as it changes.
                if replicas > 0 {
                    self.targets.insert(group, replicas);
                }
            }
        }
    }
}

/// A snapshot of the directory: the encoded `Saved`.
#[derive(Debug, Clone)]
pub struct DirectorySnapshotData(pub Vec<u8>);

/// What a snapshot file holds.
#[derive(Serialize, Deserialize)]
struct Saved {
    meta: SnapshotMeta,
    directory: Directory,
}

#[derive(Default)]
struct Applied {
    directory: Directory,
    last: Option<LogId>,
    membership: StoredMembership,
}

/// The manager group's state machine. Cheap to clone; clones share state.
#[derive(Clone)]
pub struct DirectoryMachine {
    applied: Arc<Mutex<Applied>>,
    /// The newest snapshot's file.
    path: PathBuf,
}

impl DirectoryMachine {
    /// Loads the snapshot in `dir`, if there is one; the log replays from
    /// the entry after it.
    pub fn open(dir: &Path) -> crate::error::Result<DirectoryMachine> {
        std::fs::create_dir_all(dir)
            .map_err(|e| crate::error::ReplicationError::Internal(format!("creating {}: {e}", dir.display())))?;
        let sm = DirectoryMachine { applied: Arc::default(), path: dir.join("SNAPSHOT") };
        if let Some(bytes) = sm.read_file().map_err(|e| crate::error::ReplicationError::Internal(e.to_string()))? {
            sm.load(&bytes).map_err(|e| crate::error::ReplicationError::Internal(e.to_string()))?;
        }
        Ok(sm)
    }

    /// The directory as applied here.
    pub fn directory(&self) -> Directory {
        self.applied.lock().directory.clone()
    }

    fn read_file(&self) -> io::Result<Option<Vec<u8>>> {
        match std::fs::read(&self.path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io::Error::other(format!("reading {}: {e}", self.path.display()))),
        }
    }

    fn load(&self, bytes: &[u8]) -> io::Result<SnapshotMeta> {
        let saved: Saved = postcard::from_bytes(bytes)
            .map_err(|e| io::Error::other(format!("the manager's snapshot {} is damaged: {e}", self.path.display())))?;
        let mut a = self.applied.lock();
        a.directory = saved.directory;
        a.last = saved.meta.last_log_id;
        a.membership = saved.meta.last_membership.clone();
        Ok(saved.meta)
    }

    /// Writes a snapshot file durably: a temporary file, synced, renamed.
    fn save(&self, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let tmp = self.path.with_extension("tmp");
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &self.path)?;
        if let Some(dir) = self.path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    }
}

impl RaftSnapshotBuilder<C> for DirectoryMachine {
    type SnapshotData = DirectorySnapshotData;

    async fn build_snapshot(&mut self) -> Result<DirectorySnapshot, io::Error> {
        let bytes = {
            let a = self.applied.lock();
            let meta = SnapshotMeta { last_log_id: a.last, last_membership: a.membership.clone() };
            postcard::to_allocvec(&Saved { meta, directory: a.directory.clone() }).map_err(io::Error::other)?
        };
        let this = self.clone();
        let written = bytes.clone();
        tokio::task::spawn_blocking(move || this.save(&written)).await.map_err(io::Error::other)??;
        let saved: Saved = postcard::from_bytes(&bytes).map_err(io::Error::other)?;
        Ok(DirectorySnapshot { meta: saved.meta, snapshot: DirectorySnapshotData(bytes) })
    }
}

impl RaftStateMachine<C> for DirectoryMachine {
    type SnapshotData = DirectorySnapshotData;
    type SnapshotBuilder = DirectoryMachine;

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
            let mut a = self.applied.lock();
            match &entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(cmd) => match postcard::from_bytes::<DirectoryCommand>(&cmd.record) {
                    Ok(command) => a.directory.apply(command),
                    // An entry this version cannot read (a newer node's
                    // command): skipped, as the state it would change is
                    // advisory, rather than stopping the group.
                    Err(e) => tracing::warn!(index = entry.log_id.index, "skipping a directory entry: {e}"),
                },
                EntryPayload::Membership(m) => {
                    a.membership = StoredMembership::new(Some(entry.log_id), m.clone());
                }
            }
            a.last = Some(entry.log_id);
            drop(a);
            if let Some(r) = responder {
                r.send(entry.log_id.index);
            }
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn install_snapshot(
        &mut self,
        _meta: &SnapshotMeta,
        snapshot: DirectorySnapshotData,
    ) -> Result<(), io::Error> {
        self.load(&snapshot.0)?;
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.save(&snapshot.0)).await.map_err(io::Error::other)?
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<DirectorySnapshot>, io::Error> {
        let this = self.clone();
        let Some(bytes) = tokio::task::spawn_blocking(move || this.read_file()).await.map_err(io::Error::other)??
        else {
            return Ok(None);
        };
        let saved: Saved = postcard::from_bytes(&bytes).map_err(io::Error::other)?;
        Ok(Some(DirectorySnapshot { meta: saved.meta, snapshot: DirectorySnapshotData(bytes) }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::SYSTEM_GROUP;

    #[test]
    fn commands_change_the_directory_and_a_snapshot_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let sm = DirectoryMachine::open(dir.path()).unwrap();
        let info = NodeInfo { rpc_addr: "127.0.0.1:1".into(), failure_domain: "a".into(), ..Default::default() };
        {
            let mut a = sm.applied.lock();
            a.directory.apply(DirectoryCommand::Node { id: 1, info: info.clone() });
            a.directory.apply(DirectoryCommand::Target { group: SYSTEM_GROUP, replicas: 3 });
            a.directory
                .apply(DirectoryCommand::Loads([(1, Load { connections: 2, cpu_percent: 5, rss_mb: 9 })].into()));
        }
        let entry = DirectoryCommand::Target { group: 7, replicas: 5 }.to_entry(1);
        assert_eq!(entry.stream, DIRECTORY_STREAM);
        sm.applied.lock().directory.apply(postcard::from_bytes(&entry.record).unwrap());
        let want = sm.directory();
        assert_eq!(want.targets.get(&7), Some(&5));
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let snap = rt.block_on(sm.clone().build_snapshot()).unwrap();
        let reopened = DirectoryMachine::open(dir.path()).unwrap();
        assert_eq!(reopened.directory(), want);
        assert_eq!(reopened.directory().nodes.get(&1), Some(&info));
        // Installing a snapshot replaces the state.
        let other = tempfile::tempdir().unwrap();
        let mut fresh = DirectoryMachine::open(other.path()).unwrap();
        rt.block_on(fresh.install_snapshot(&snap.meta, snap.snapshot)).unwrap();
        assert_eq!(DirectoryMachine::open(other.path()).unwrap().directory(), want);
    }

    #[test]
    fn a_damaged_snapshot_is_an_error_not_an_empty_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("SNAPSHOT"), b"\xff\xff\xff").unwrap();
        assert!(DirectoryMachine::open(dir.path()).is_err());
    }
}
