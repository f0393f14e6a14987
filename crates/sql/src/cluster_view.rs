//! What the SQL layer can show of the cluster it runs in: the views
//! `tessera.nodes` and `tessera.replicas` read it. The replication layer
//! provides it (the binary wires the two together); a single node has none
//! and shows itself as the primary of everything.

/// One node of the cluster as the primary sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRow {
    pub id: u64,
    pub rpc_addr: String,
    pub pg_addr: String,
    pub failure_domain: String,
    pub upgrade_domain: String,
    /// `primary`, `secondary`, or `unreachable` (no answer lately).
    pub role: String,
    /// The primary's epoch (Raft term).
    pub epoch: u64,
    /// The last log index known to be on the node (None: unknown).
    pub applied: Option<u64>,
    /// How many log entries the node is behind the primary (None: unknown).
    pub behind: Option<u64>,
}

pub trait ClusterView: Send + Sync {
    fn nodes(&self) -> Vec<NodeRow>;
}
