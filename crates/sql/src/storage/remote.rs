//! Schema changes of a partition, made where its primary is.
//!
//! The interface to partitions led by other nodes
//! ([`PartitionRoutes`], `RemotePart`) is the engine's
//! (`tessera_engine::remote`); the replication layer implements it and the
//! binary hands it to the catalog. This module is the SQL layer's use of
//! it for DDL: [`PartEngine`] makes a change on the local engine or sends
//! it to the partition's primary.

use tessera_engine::remote::{PartSchema, PartitionRoutes};
use tessera_engine::{IndexSpec, Result as EResult, TableSpec};

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
