//! How a node's replication is set up: [`ReplicationConfig`].

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use crate::raft::log_store::CACHE_BYTES;
use crate::raft::quiet::QuietTiming;
use crate::raft::settings::RaftSettings;
use crate::types::{NodeId, NodeInfo};
use crate::wire::ClusterSecret;

/// The settings of a node's replication: who it is, where its log and
/// snapshots live, the cluster it forms or joins, Raft's timing, and the
/// partition manager's replica counts.
#[derive(Debug, Clone)]
pub struct ReplicationConfig {
    pub id: NodeId,
    pub info: NodeInfo,
    /// Where the Raft log lives.
    pub dir: PathBuf,
    /// RPC addresses of the group's founding members (may include this
    /// node's own); empty for a group of one.
    pub join: Vec<String>,
    pub secret: ClusterSecret,
    /// Raft timing, in milliseconds.
    pub heartbeat_ms: u64,
    pub election_timeout_ms: (u64, u64),
    /// Bytes of recent log entries kept in memory (older ones are read
    /// back from disk when a replica needs them).
    pub log_cache_bytes: usize,
    /// Where snapshots live.
    pub snapshot_dir: PathBuf,
    /// A snapshot is built after this many entries since the last one
    /// (0: never; the log then grows without bound).
    pub snapshot_every: u64,
    /// Entries kept in the log below the newest snapshot, so that a
    /// replica slightly behind catches up from the log rather than by a
    /// whole snapshot.
    pub log_kept_below_snapshot: u64,
    /// Dial the second address to reach the node that advertises the
    /// first (a tunnel, another interface; the fault tests put a proxy
    /// between every pair of nodes this way).
    pub routes: Vec<(String, String)>,
    /// Voting replicas the group keeps (the founding nodes beyond this
    /// many are spares; see `manager`).
    pub replicas: usize,
    /// A voter unreachable this long is replaced by a spare, if there is one.
    pub replace_after: Duration,
    /// The node's count of client connections (a load figure).
    pub connections: Arc<AtomicUsize>,
    /// When the databases' groups go quiet, and how their primaries keep
    /// their leases meanwhile (see `quiet`).
    pub quiet: QuietTiming,
}

impl ReplicationConfig {
    pub fn new(id: NodeId, info: NodeInfo, dir: PathBuf, secret: ClusterSecret) -> ReplicationConfig {
        ReplicationConfig {
            id,
            info,
            snapshot_dir: dir.with_file_name("snapshots"),
            dir,
            join: Vec::new(),
            secret,
            // A follower calls an election between 0.9 and 1.2 s after
            // the primary's last heartbeat (lease + timeout).
            heartbeat_ms: 50,
            election_timeout_ms: (300, 600),
            log_cache_bytes: CACHE_BYTES,
            snapshot_every: 20_000,
            log_kept_below_snapshot: 5_000,
            routes: Vec::new(),
            replicas: 3,
            replace_after: Duration::from_secs(30),
            connections: Arc::default(),
            quiet: QuietTiming::for_election_timeout(Duration::from_millis(600)),
        }
    }

    /// What the node's data groups need of these settings.
    pub(crate) fn raft_settings(&self) -> RaftSettings {
        RaftSettings {
            id: self.id,
            info: self.info.clone(),
            heartbeat_ms: self.heartbeat_ms,
            election_timeout_ms: self.election_timeout_ms,
            log_cache_bytes: self.log_cache_bytes,
            snapshot_dir: self.snapshot_dir.clone(),
        }
    }
}
