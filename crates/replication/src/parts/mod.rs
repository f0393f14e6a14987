//! Transactions on a partition whose primary is another node. This layer
//! imports `raft`, `wire`, `types` and `error`; it knows nothing of
//! `manager` or `node`.
//!
//! A keyed database's partitions are Raft groups of their own, and their
//! primaries need not be where the database's sessions run (its home's
//! primary). A session's transaction then works on such a partition
//! through a [`RemoteTxn`], this layer's implementation of the engine's
//! `tessera_engine::remote::RemotePart`: each engine call — a read, a
//! scan, a write, a savepoint, the commit — travels as one
//! [`PartCall`](messages::PartCall) to the partition's primary, which
//! keeps the engine transaction open between calls (`server`) and answers
//! with the engine's result. The interface is the engine's, so the SQL
//! layer's transaction treats a local partition and a remote one alike,
//! and neither that layer nor the binary adapts one to the other (the
//! node's `Groups` is the engine's `PartitionRoutes`).
//!
//! What can go wrong, and what the caller sees (as engine errors, so the
//! SQL layer maps them to SQLSTATEs as it maps a local partition's):
//! - the partition's primary moved, or lost its lease, before the commit:
//!   its open transactions are aborted there, and every later call fails
//!   as a commit that was never replicated would (40001, nothing written);
//! - the commit's answer was lost (the connection broke, the primary
//!   changed while the commit waited for its quorum): the outcome is
//!   unknown (40003), as for a local commit in the same situation.
//!
//! - `messages`: the calls ([`messages::PartMessage`]) and their answers;
//!   the engine's values travel as they are (its `serde` feature), its
//!   errors as [`messages::WireError`].
//! - `client`: the caller's side, [`PartCalls`], asynchronous, one call at
//!   a time; `remote_txn`: [`RemoteTxn`], those calls made from a
//!   session's thread and waited for.
//! - `server`: the primary's side, which checks its
//!   lease on every call and aborts what it holds once it stops leading,
//!   or once the caller's node has closed its last connection
//!   (`wire::Presence`: a node that dies frees the rows its sessions held
//!   at once); schema changes made there too.

pub mod client;
pub mod messages;
pub mod remote_txn;
pub mod server;

pub use client::{PartCalls, RemoteTxnIds, change_schema};
pub use messages::Begin;
pub use remote_txn::RemoteTxn;
