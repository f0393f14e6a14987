//! Partitions whose primary is another node: the interface between the
//! layer that runs transactions (the SQL layer) and the layer that knows
//! where each partition's primary is (replication), defined here, beside
//! the engine transaction it mirrors, so that neither of them owns the
//! other's types.
//!
//! On a cluster each partition of a keyed database is a replication group
//! of its own, and its primary may be any node holding a replica of it;
//! the database's sessions run on its home's primary. A transaction that
//! touches a partition led elsewhere works on it through a
//! [`RemotePart`]: the same versioned key-value calls as a
//! [`Transaction`](crate::Transaction), each carried to the partition's
//! primary, which holds the engine transaction between calls. A schema
//! change reaches such a partition the same way
//! ([`PartitionRoutes::schema`] with a [`PartSchema`]). The replication
//! layer implements both; on a single node, and for partitions led here,
//! the local engine serves.
//!
//! With the `serde` feature the engine's schema and call types
//! (`TableSpec`, `IndexSpec`, `KeyRange`, `FieldTest`, `PutCondition`, …)
//! and [`PartSchema`] serialize, so that they travel between nodes as
//! they are, without copies of them on the wire.

use std::time::Instant;

use std::future::Future;
use std::pin::Pin;

use crate::error::Result;
use crate::row_filter::FieldTest;
use crate::schema::{IndexSpec, TableSpec};
use crate::txn::{Durability, Isolation, KeyRange, PutCondition, PutOutcome, RowVersion};

/// A remote commit under way: it resolves once the partition's quorum has
/// the commit (or it failed).
pub type CommitFuture = Pin<Box<dyn Future<Output = Result<()>> + Send + 'static>>;

/// How a remote transaction begins.
#[derive(Debug, Clone, Copy)]
pub struct RemoteBegin {
    pub isolation: Isolation,
    pub durability: Option<Durability>,
    /// The statement's deadline: waits for a row's holder end there
    /// (later statements' go with their calls: `set_wait_deadline`).
    pub deadline: Option<Instant>,
}

/// A schema change of one partition's engine (sent to its primary as it
/// is, so ids in its specs are the receiving engine's to give, as a local
/// engine's own calls give them).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum PartSchema {
    CreateTable(TableSpec),
    DropTable(String),
    CreateIndex {
        table: String,
        index: IndexSpec,
    },
    DropIndex {
        table: String,
        index: String,
    },
    TruncateTable(String),
    /// Make the engine's tables exactly these (a schema change's job
    /// finishing on a partition it did not reach).
    MatchTables(Vec<TableSpec>),
    /// Make table `to` a copy of table `from` (`Engine::copy_table`).
    CopyTable {
        from: String,
        to: TableSpec,
    },
}

/// Where the partitions' primaries are, for the SQL layer.
pub trait PartitionRoutes: Send + Sync {
    /// A transaction on partition `stream` at its primary, begun with its
    /// first call; None when this node leads the partition (use the local
    /// engine). While this node hands the partition's primary role over,
    /// waits for the move; fails (57P03) when the partition has no primary
    /// for a while.
    fn begin(&self, stream: u32, how: RemoteBegin) -> Result<Option<Box<dyn RemotePart>>>;

    /// Applies `change` to partition `stream` on its primary; false when
    /// this node leads the partition (apply it to the local engine).
    fn schema(&self, stream: u32, change: &PartSchema) -> Result<bool>;

    /// Whether another node leads partition `stream` now.
    fn leader_elsewhere(&self, stream: u32) -> bool;

    /// A token counting a transaction on partition `stream` led here (its
    /// local engine) until dropped, so that a planned move of the
    /// partition's primary lets it commit first (None: nothing counts).
    fn local_work(&self, _stream: u32) -> Option<Box<dyn std::any::Any + Send>> {
        None
    }

    /// Whether this node can commit on partition `stream` (led here) now:
    /// it holds the partition's lease and serves (is not at the last step
    /// of handing its role over).
    fn ready_here(&self, _stream: u32) -> bool {
        true
    }
}

/// A transaction on a partition led by another node. Calls block until
/// the primary answers; errors are the engine's, plus "nothing was
/// committed" (40001) when the primary changed under the transaction and
/// "outcome unknown" (40003) when a commit's answer was lost.
pub trait RemotePart: Send {
    fn is_read_only(&self) -> bool;
    fn get(&mut self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>>;
    fn get_versioned(&mut self, table: &str, key: &[u8]) -> Result<Option<(Vec<u8>, RowVersion)>>;
    /// Claims the row with primary key `key` for this transaction (as an
    /// engine's `update_with` does: waiting for its holder, and under read
    /// committed taking the newest committed version) and returns it; the
    /// caller then updates it, or rolls back to before the claim.
    fn claim(&mut self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Visits the rows of `range` in `index` (None: the primary key) that
    /// pass `tests`, in order, as the primary sends them a page at a time,
    /// until `visit` returns false. With `fields` (in increasing order),
    /// the rows carry those fields only, the others NULL.
    fn scan(
        &mut self,
        table: &str,
        index: Option<&str>,
        range: &KeyRange,
        fields: Option<&[u32]>,
        tests: &[FieldTest],
        visit: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<()>;
    fn insert(&mut self, table: &str, data: Vec<u8>) -> Result<()>;
    fn update(&mut self, table: &str, data: Vec<u8>) -> Result<bool>;
    fn delete(&mut self, table: &str, key: &[u8]) -> Result<bool>;
    fn put(&mut self, table: &str, data: Vec<u8>, cond: PutCondition) -> Result<PutOutcome>;
    fn delete_if(&mut self, table: &str, key: &[u8], cond: PutCondition) -> Result<PutOutcome>;
    /// A savepoint's number (0 is the transaction's start). Taken on the
    /// primary with the next call, so it costs no call of its own.
    fn savepoint(&mut self) -> u32;
    fn rollback_to(&mut self, savepoint: u32) -> Result<()>;
    /// A fresh snapshot from the next call on (read committed).
    fn refresh_snapshot(&mut self);
    /// The deadline of the statement making the calls from now on, sent
    /// with each: a write waiting on the primary for a row's holder stops
    /// there.
    fn set_wait_deadline(&mut self, deadline: Option<Instant>);
    /// Whether the partition's primary can commit the transaction now
    /// (asked of every partition before a commit over several of them).
    fn ready(&mut self) -> Result<()>;
    /// Commits on the partition's primary, once its quorum has the commit.
    fn commit(self: Box<Self>) -> CommitFuture;
    /// Aborts there (without waiting).
    fn abort(self: Box<Self>);
}
