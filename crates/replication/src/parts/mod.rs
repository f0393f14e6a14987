//! Transactions on a partition whose primary is another node. This layer
//! imports `raft`, `wire`, `types` and `error`; it knows nothing of
//! `manager` or `node`.
//!
//! A keyed database's partitions are Raft groups of their own, and their
//! primaries need not be where the database's sessions run (its home's
//! primary). A session's transaction then works on such a partition
//! through a [`RemoteTxn`] (`client`): each engine call — a read, a scan, a write, a
//! savepoint, the commit — travels as one [`PartCall`](messages::PartCall) to the partition's
//! primary, which keeps the engine transaction open between calls
//! (`server`) and answers with the engine's result. The versioned
//! key-value interface is the same as the engine's, so the SQL layer's
//! transaction treats a local partition and a remote one alike.
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
//! - `messages`: the calls ([`messages::PartMessage`]), their answers, and
//!   the engine's values (rows, tables, indexes, errors) as they travel.
//! - `client`: the caller's side; `server`: the primary's, which checks its
//!   lease on every call and aborts what it holds once it stops leading,
//!   or once the caller's node has closed its last connection
//!   (`wire::Presence`: a node that dies frees the rows its sessions held
//!   at once); schema changes made there too.

pub mod client;
pub mod messages;
pub mod server;

pub use client::{RemoteTxn, RemoteTxnIds, change_schema};
pub use messages::{Begin, SchemaChange, WireIndex, WireTable, durability_code, isolation_code};
