//! Partitions whose primary is another node.
//!
//! On a cluster each partition of a keyed database is a replication group
//! of its own, and its primary may be any node holding a replica of it;
//! the database's sessions run on its home's primary. A transaction that
//! touches a partition led elsewhere works on it through a
//! [`RemotePart`]: the same versioned key-value calls as an engine
//! transaction, each carried to the partition's primary, which holds the
//! engine transaction between calls. A schema change reaches such a
//! partition the same way ([`PartitionRoutes::schema`]). The replication
//! layer provides both (the binary wires them in); on a single node, and
//! for partitions led here, the local engine serves.

use std::time::Instant;

use tessera_engine::row_filter::FieldTest;
use tessera_engine::{Durability, IndexSpec, Isolation, KeyRange, PutCondition, PutOutcome, RowVersion, TableSpec};

pub type EResult<T> = tessera_engine::Result<T>;

/// How a remote transaction begins.
#[derive(Debug, Clone, Copy)]
pub struct RemoteBegin {
    pub isolation: Isolation,
    pub durability: Option<Durability>,
    /// The statement's deadline: waits for a row's holder end there
    /// (later statements' go with their calls: `set_wait_deadline`).
    pub deadline: Option<Instant>,
}

/// A schema change of one partition's engine.
#[derive(Debug, Clone)]
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
    fn begin(&self, stream: u32, how: RemoteBegin) -> EResult<Option<Box<dyn RemotePart>>>;

    /// Applies `change` to partition `stream` on its primary; false when
    /// this node leads the partition (apply it to the local engine).
    fn schema(&self, stream: u32, change: &PartSchema) -> EResult<bool>;

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
    fn get(&mut self, table: &str, key: &[u8]) -> EResult<Option<Vec<u8>>>;
    fn get_versioned(&mut self, table: &str, key: &[u8]) -> EResult<Option<(Vec<u8>, RowVersion)>>;
    /// Claims the row with primary key `key` for this transaction (as an
    /// engine's `update_with` does: waiting for its holder, and under read
    /// committed taking the newest committed version) and returns it; the
    /// caller then updates it, or rolls back to before the claim.
    fn claim(&mut self, table: &str, key: &[u8]) -> EResult<Option<Vec<u8>>>;
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
    ) -> EResult<()>;
    fn insert(&mut self, table: &str, data: Vec<u8>) -> EResult<()>;
    fn update(&mut self, table: &str, data: Vec<u8>) -> EResult<bool>;
    fn delete(&mut self, table: &str, key: &[u8]) -> EResult<bool>;
    fn put(&mut self, table: &str, data: Vec<u8>, cond: PutCondition) -> EResult<PutOutcome>;
    fn delete_if(&mut self, table: &str, key: &[u8], cond: PutCondition) -> EResult<PutOutcome>;
    /// A savepoint's number (0 is the transaction's start). Taken on the
    /// primary with the next call, so it costs no call of its own.
    fn savepoint(&mut self) -> u32;
    fn rollback_to(&mut self, savepoint: u32) -> EResult<()>;
    /// A fresh snapshot from the next call on (read committed).
    fn refresh_snapshot(&mut self);
    /// The deadline of the statement making the calls from now on, sent
    /// with each: a write waiting on the primary for a row's holder stops
    /// there.
    fn set_wait_deadline(&mut self, deadline: Option<Instant>);
    /// Whether the partition's primary can commit the transaction now
    /// (asked of every partition before a commit over several of them).
    fn ready(&mut self) -> EResult<()>;
    /// Commits on the partition's primary, once its quorum has the commit.
    fn commit(self: Box<Self>) -> futures::future::BoxFuture<'static, EResult<()>>;
    /// Aborts there (without waiting).
    fn abort(self: Box<Self>);
}

/// A partition's engine for schema changes: the engine here when this
/// node leads the partition (or the partition is its database's group's,
/// led with it), its primary elsewhere otherwise.
pub struct PartEngine {
    pub stream: u32,
    /// The partition's engine on this node (a replica's, when another
    /// node leads it).
    pub engine: std::sync::Arc<tessera_engine::Engine>,
    pub routes: Option<std::sync::Arc<dyn PartitionRoutes>>,
}

impl PartEngine {
    /// Makes `change` on the partition's primary if that is another node;
    /// false when it is to be made here.
    fn elsewhere(&self, change: impl FnOnce() -> PartSchema) -> EResult<bool> {
        match &self.routes {
            Some(routes) => routes.schema(self.stream, &change()),
            None => Ok(false),
        }
    }

    pub fn create_table(&self, spec: TableSpec) -> EResult<()> {
        if !self.elsewhere(|| PartSchema::CreateTable(spec.clone()))? {
            self.engine.create_table(spec)?;
        }
        Ok(())
    }

    pub fn drop_table(&self, name: &str) -> EResult<()> {
        if !self.elsewhere(|| PartSchema::DropTable(name.to_string()))? {
            self.engine.drop_table(name)?;
        }
        Ok(())
    }

    pub fn create_index(&self, table: &str, index: IndexSpec) -> EResult<()> {
        if !self.elsewhere(|| PartSchema::CreateIndex { table: table.to_string(), index: index.clone() })? {
            self.engine.create_index(table, index)?;
        }
        Ok(())
    }

    pub fn drop_index(&self, table: &str, index: &str) -> EResult<()> {
        if !self.elsewhere(|| PartSchema::DropIndex { table: table.to_string(), index: index.to_string() })? {
            self.engine.drop_index(table, index)?;
        }
        Ok(())
    }

    pub fn truncate_table(&self, name: &str) -> EResult<()> {
        if !self.elsewhere(|| PartSchema::TruncateTable(name.to_string()))? {
            self.engine.truncate_table(name)?;
        }
        Ok(())
    }

    /// Makes the partition's tables exactly `specs` (see
    /// `Engine::match_tables`).
    pub fn match_tables(&self, specs: &[TableSpec]) -> EResult<()> {
        if !self.elsewhere(|| PartSchema::MatchTables(specs.to_vec()))? {
            for change in self.engine.match_tables(specs)? {
                tracing::warn!(stream = self.stream, "a partition behind its database's schema: {change}");
            }
        }
        Ok(())
    }

    /// Makes table `to` a copy of table `from`, where the partition's
    /// rows are: on its primary (see `Engine::copy_table`).
    pub fn copy_table(&self, from: &str, to: TableSpec) -> EResult<()> {
        if !self.elsewhere(|| PartSchema::CopyTable { from: from.to_string(), to: to.clone() })? {
            self.engine.copy_table(from, to)?;
        }
        Ok(())
    }
}
