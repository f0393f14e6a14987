//! What every layer of the crate names: nodes, groups, where a node is
//! and how busy.

use serde::{Deserialize, Serialize};

pub type NodeId = u64;

/// A data group's id: its Raft's tag on the wire and in the node's shared
/// log. Every node hosts [`SYSTEM_GROUP`]; more are hosted for the streams
/// they claim (`ReplicationNode::host`).
pub type GroupId = u32;
pub const SYSTEM_GROUP: GroupId = 0;

/// What the cluster knows of a node: where to reach it, and the fault and
/// maintenance domains placement spreads replicas across.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NodeInfo {
    /// Host:port of its RPC listener (other nodes).
    pub rpc_addr: String,
    /// Host:port of its PostgreSQL listener (clients, and gateways forwarding them).
    pub pg_addr: String,
    pub failure_domain: String,
    pub upgrade_domain: String,
}

/// What a node reports of its load, with its registration twice a second
/// (the primary samples its own): the partition manager's load figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Load {
    /// Client connections it serves or relays.
    pub connections: u32,
    /// CPU its process used over the last interval (100 = one core).
    pub cpu_percent: u32,
    /// Resident memory of its process, in MiB.
    pub rss_mb: u32,
}
