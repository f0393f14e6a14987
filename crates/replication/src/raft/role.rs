//! This node's role in a data group, as the SQL front end needs to know
//! it (`role_watch` follows Raft and sets it).

use crate::types::{NodeId, NodeInfo};

/// How this node takes part in a data group: whether to serve clients
/// here, forward them to the primary, or refuse them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Not yet part of a working group (bootstrapping, or replaying its log).
    Starting,
    /// The primary: leader, caught up, with a quorum. Serve clients here.
    Primary,
    /// A secondary that knows the primary: forward clients there.
    Secondary { primary: NodeId, info: NodeInfo },
    /// No primary this node can name (an election is running, or the
    /// group lost its quorum): refuse clients, with this reason.
    Unavailable(String),
}
