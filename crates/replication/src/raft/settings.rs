//! What the data groups need to know of the node: [`RaftSettings`].

use std::path::PathBuf;

use crate::types::{NodeId, NodeInfo};

/// What the node's data groups need to know of the node.
#[derive(Debug, Clone)]
pub struct RaftSettings {
    pub id: NodeId,
    pub info: NodeInfo,
    /// Raft timing, in milliseconds.
    pub heartbeat_ms: u64,
    pub election_timeout_ms: (u64, u64),
    /// Bytes of a group's recent log entries kept in memory.
    pub log_cache_bytes: usize,
    /// Where the system group's snapshots live (a database group's are
    /// beside it, `snapshots-<id>`).
    pub snapshot_dir: PathBuf,
}
