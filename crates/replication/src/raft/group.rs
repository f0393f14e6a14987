//! One data group on this node: a [`RaftGroup`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tokio::sync::watch;

use super::append_stream::AppendSessions;
use super::commit_log::Proposals;
use super::freshness::Freshness;
use super::role::Role;
use super::snapshot::SnapshotStore;
use super::state_machine::{Adopt, Raft};
use crate::types::GroupId;

/// A data group as this node takes part in it: its Raft (over its part of
/// the shared log, its state machine over the streams it replicates), the
/// node's commits to it, and this node's role in it.
pub struct RaftGroup {
    pub id: GroupId,
    pub raft: Raft,
    /// This node's commits to the group.
    pub proposals: Arc<Proposals>,
    pub role: watch::Receiver<Role>,
    /// How far behind the primary this node's replica is.
    pub freshness: Arc<Freshness>,
    pub snapshots: SnapshotStore,
    /// Pipelined replication sessions from the group's primary.
    pub appends: Arc<AppendSessions>,
    /// Its log held nothing when the node started (a new node).
    pub fresh: bool,
    /// The streams it claimed (none for the system group, which has the
    /// rest); it adopts more as they appear in its log.
    pub streams: Streams,
    /// Makes a stream the group's (None for the system group).
    pub adopt: Option<Adopt>,
}

/// A set of streams, shared.
pub type Streams = Arc<parking_lot::RwLock<HashSet<u32>>>;

/// The data groups a node hosts, by id: the system group always, and the
/// databases' groups hosted here.
pub type Hosts = Arc<parking_lot::RwLock<HashMap<GroupId, Arc<RaftGroup>>>>;
