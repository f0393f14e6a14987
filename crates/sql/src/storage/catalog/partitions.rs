//! The catalog's keyed-database parts: opening partitions, the engines
//! holding a database's tables, new partitions' streams from the
//! cluster-wide counter, and the writer gates.

use std::sync::Arc;

use tessera_engine::Engine;

use super::{Catalog, DatabaseDef, Entry};
use crate::error::{Result, SqlError, code};
use crate::storage::partition::{PartitionDef, PartitionGate};
use crate::storage::remote::PartEngine;

impl Catalog {
    /// Opens (recovering) every keyed database's partitions; only then may
    /// the node truncate its shared log.
    pub(super) fn open_partitions(&self, maintains: &dyn Fn(u32) -> bool) -> Result<()> {
        let streams: Vec<u32> =
            self.schema().databases().flat_map(|d| d.partitions.iter().map(|p| p.stream).chain(d.home)).collect();
        for &stream in &streams {
            self.node.open_partition(stream, false)?;
        }
        // Partitions whose creation was cut short before their database
        // entry was written belong to no one.
        // (On a cluster, only in this node's group: another group's
        // partitions are its primary's business.)
        for stray in self.node.partitions_on_disk()?.into_iter().filter(|s| !streams.contains(s) && maintains(*s)) {
            tracing::warn!(
                stream = stray,
                "removing a partition no database owns (interrupted CREATE DATABASE or split)"
            );
            self.node.drop_partition(stray)?;
        }
        self.node.all_partitions_open()?;
        Ok(())
    }

    /// The engines holding database `db`'s tables, for schema changes:
    /// its partitions' in key order (each changed on its primary, which
    /// may be another node), or its home for a keyless database.
    pub fn engines_of(&self, db: &DatabaseDef) -> Result<Vec<PartEngine>> {
        let routes = self.groups().and_then(|g| g.routes());
        if db.partitions.is_empty() {
            let home = self.local_engines_of(db)?;
            let stream = db.home.unwrap_or(tessera_engine::SYSTEM_STREAM);
            return Ok(home.into_iter().map(|engine| PartEngine { stream, engine, routes: None }).collect());
        }
        let engines = self.local_engines_of(db)?;
        Ok(db
            .partitions
            .iter()
            .zip(engines)
            .map(|(p, engine)| PartEngine { stream: p.stream, engine, routes: routes.clone() })
            .collect())
    }

    /// The engines on this node holding database `db`'s tables: its
    /// partitions' in key order, or its home for a keyless database.
    pub fn local_engines_of(&self, db: &DatabaseDef) -> Result<Vec<Arc<Engine>>> {
        if db.partitions.is_empty() {
            if db.partition_key.is_some() {
                // A keyed database whose home, with its layout, has not
                // reached this replica yet.
                return Err(SqlError::new(
                    code::CANNOT_CONNECT_NOW,
                    format!("the partitions of database \"{}\" have not reached this node yet", db.name),
                ));
            }
            return Ok(vec![self.home_of(&db.name)?.engine]);
        }
        db.partitions.iter().map(|p| self.partition_engine(db, p.stream)).collect()
    }

    /// The engines holding the tables of the database named `db`.
    pub fn engines_of_name(&self, db: &str) -> Result<Vec<PartEngine>> {
        let def = self
            .database(db)
            .ok_or_else(|| SqlError::new(code::UNDEFINED_DATABASE, format!("database \"{db}\" does not exist")))?;
        self.engines_of(&def)
    }

    /// Allocates streams for new partitions with these key ranges and opens
    /// them (empty). The caller records them in a database entry; a crash
    /// before that leaves only empty directories behind.
    pub fn create_partitions(&self, ranges: Vec<(Vec<u8>, Option<Vec<u8>>)>) -> Result<Vec<PartitionDef>> {
        let first = {
            let mut s = self.counters.lock();
            let first = s.next_stream;
            if first + ranges.len() as u32 >= super::layout::FIRST_BLOCK_STREAM {
                return Err(SqlError::new(
                    code::PROGRAM_LIMIT,
                    format!("this server cannot make more partitions: their streams are used up ({first})"),
                ));
            }
            s.next_stream += ranges.len() as u32;
            first
        };
        let next = first + ranges.len() as u32;
        self.write_entries(&[Entry::Streams { next }])?;
        let mut defs = Vec::with_capacity(ranges.len());
        for (i, (low, high)) in ranges.into_iter().enumerate() {
            let stream = first + i as u32;
            self.node.open_partition(stream, true)?;
            defs.push(PartitionDef { stream, low, high, schema_version: 0, dirty: false });
        }
        Ok(defs)
    }

    /// The writer gate of partition `stream`.
    pub fn gate(&self, stream: u32) -> Arc<PartitionGate> {
        if let Some(g) = self.gates.read().get(&stream) {
            return g.clone();
        }
        self.gates.write().entry(stream).or_default().clone()
    }

    /// Deletes partitions for good (their database is gone).
    pub fn drop_partitions(&self, parts: &[PartitionDef]) -> Result<()> {
        for p in parts {
            self.node.drop_partition(p.stream)?;
        }
        Ok(())
    }
}
