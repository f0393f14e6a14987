//! # tessera-cluster: what the partition manager decides
//!
//! A Tessera cluster keeps every partition on several nodes: one primary and
//! its secondaries, a Raft group whose leader is the primary and whose term
//! is the partition's epoch (the Cloud SQL Server paper's primary-copy
//! replication with quorum commit). The *partition manager* holds the
//! cluster map — nodes with their failure and upgrade domains and liveness,
//! partitions with their replicas, roles, epochs and progress — and decides
//! what to do when something changes.
//!
//! This crate is those decisions and nothing else: no time, no sockets, no
//! threads. A decision is a function of the map ([`ClusterMap`]) returning
//! [`Action`]s, which the node runtime carries out (a Raft membership change,
//! a leadership transfer, a snapshot sent) and which [`ClusterMap::apply`]
//! records, so a test can play a whole failure story step by step:
//!
//! * **Placement** (`placement.rs`): the replicas of a partition go to
//!   distinct live nodes in distinct failure domains when there are enough
//!   of them; primaries are spread so that each node holds about as many
//!   primaries as any other (the paper's Fig. 2: one primary per N-1
//!   secondaries on every node).
//! * **Failure** (`decide.rs`): when a node is lost, each partition that had
//!   a replica there keeps going if a quorum of its replicas is still alive:
//!   the most up-to-date live secondary becomes primary under a new epoch,
//!   the lost replica leaves the configuration (downshift from N to N-1),
//!   and a replacement is built on another node. A partition that lost its
//!   quorum is marked unavailable and refuses writes; nothing is promoted,
//!   so there is never a second primary.
//! * **Return**: a returning node's replica catches up from the primary's
//!   log when the log still holds everything it lacks, and is rebuilt from a
//!   snapshot when it is too far behind; a replica already replaced is
//!   dropped.
//! * **Drain** (planned maintenance, upgrade domains): taking a node down is
//!   refused when it would cost some partition its quorum; otherwise its
//!   primaries move to up-to-date secondaries first.
//! * **Repair** (`plan_repair`, run periodically by the manager): a voter
//!   gone longer than a grace period is downshifted and replaced when some
//!   node can take its place; a partition short of replicas gets one built
//!   when a node comes back or joins; builds on dead nodes are dropped.
//! * **Balance** (`placement.rs`): primaries are spread by leadership
//!   transfers (`balance_primaries`), and replicas by moves
//!   (`balance_replicas`): when one node holds two replicas more than
//!   another (a node that joined holds none), a partition's replica is
//!   built on the emptier node and, once it votes, removed from the fuller
//!   one, one move at a time, so the partition never has fewer replicas
//!   than its target.

mod decide;
mod map;
mod placement;

pub use decide::{Action, DrainRefusal, plan_drain, plan_repair, react_to_failure, react_to_return};
pub use map::{ClusterMap, Move, NodeId, NodeInfo, PartitionId, PartitionInfo, Replica, Role};
pub use placement::{PlacementError, balance_primaries, balance_replicas, place};
