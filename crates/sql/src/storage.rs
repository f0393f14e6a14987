//! The SQL layer's side of storage: the catalog, SQL tables over the
//! engines of a database's partitions, and SQL transactions over them. It
//! knows values and the engine's interface; nothing of planning or
//! sessions (a session's name resolution and settings are `scope`'s).
//!
//! - `catalog`: databases, tables, indexes, sequences, roles, types and
//!   views, stored as documents in engine tables and so durable like data.
//!   A database made by CREATE DATABASE keeps its entries and sequences in
//!   an engine of its own, its *home* (`catalog/home.rs`), with its rows
//!   (keyless) or its partitions' layout (keyed, `catalog/layout.rs`).
//! - `keyed`: keyed databases — `CREATE DATABASE … WITH (partition_key =
//!   'column type', partitions = n | split_points = '…')` (the syntax is
//!   `parser::database`'s) and the rule that every table of such a database
//!   carries that column (and, if it has a primary key or unique index,
//!   includes it there).
//! - `partition`, `txn`, `split`: a keyed database's key ranges are
//!   engines of the node; a SQL table is a `StoredTable` (its engine table
//!   in each partition) and a SQL transaction a `Txn` (engine transactions
//!   over the partitions it touches, routed by key). `split` splits a
//!   partition in place behind a per-partition writer gate; `jobs` records
//!   schema changes over partitions so a stopped node finishes them.
//! - `remote` and `cluster_view`: on a cluster each partition is a
//!   replication group of its own, and one led by another node is worked
//!   on there (`remote`: a `Txn`'s remote part and `PartEngine` for schema
//!   changes; `cluster_view`: the cluster's nodes and groups), both
//!   provided by the binary through these traits.
//! - `provider`: `EngineTable`, the DataFusion `TableProvider` that reads
//!   through a session's transaction and picks a point lookup, an index
//!   range or a full scan from the pushed-down filters (`field_tests`
//!   evaluates filters on encoded fields).
//! - `row_waits`: a write never waits on a thread — the engine answers
//!   `WouldBlock` and the session's task awaits the holder's end on the
//!   engine of the part that answered, then writes again.
//! - `temp_names`: the stored names of temporary relations.

pub mod catalog;
pub mod cluster_view;
pub(crate) mod field_tests;
pub(crate) mod jobs;
pub(crate) mod keyed;
pub(crate) mod partition;
pub(crate) mod provider;
pub mod remote;
pub mod row_waits;
pub(crate) mod split;
pub(crate) mod temp_names;
pub(crate) mod txn;

/// Runs `f`, which may block (on a concurrent writer, or on the log's
/// fsync), without stalling the other connections served by this runtime
/// thread: the runtime hands its other work to another thread meanwhile.
pub fn blocking<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}
