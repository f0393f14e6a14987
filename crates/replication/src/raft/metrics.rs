//! What a group's leader knows of its members, read from Raft's metrics.

use std::time::Duration;

use openraft::Instant as _;

use super::type_config::C;
use crate::types::NodeId;

/// A member that answered the primary, or a spare that registered, within
/// this long counts as alive.
pub const ALIVE: Duration = Duration::from_secs(2);

/// On the leader: whether member `id` answered a heartbeat or a
/// replication call within [`ALIVE`].
pub fn answered(m: &openraft::RaftMetrics<C>, id: &NodeId) -> bool {
    m.heartbeat.as_ref().is_some_and(|hb| hb.get(id).and_then(|t| t.as_ref()).is_some_and(|t| t.elapsed() < ALIVE))
}

/// On the leader: the last log index known to be on member `id`.
pub fn matched(m: &openraft::RaftMetrics<C>, id: &NodeId) -> Option<u64> {
    m.replication.as_ref().and_then(|r| r.get(id).and_then(|l| l.as_ref().map(|l| l.index)))
}
