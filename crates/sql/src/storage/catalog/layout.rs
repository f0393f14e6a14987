//! A keyed database's *layout* — its partitions (streams and key ranges),
//! its schema version and the next stream it may give a partition — kept
//! in the database's home, not in the system engine.
//!
//! A keyed database made by CREATE DATABASE has a home (its catalog
//! entries, sequences and schema-change jobs) and partitions, all
//! replicated by the database's own group on a cluster. What changes as
//! the database is used — a split adds a partition, a schema change raises
//! the versions — must then be written where the group's primary is,
//! which need not hold the cluster's catalog. So the database's entry in
//! the system engine keeps only what does not change (name, owner, key,
//! home), and the rest is a `layout:<oid>` entry in the home.
//!
//! Its partitions take their streams from the home's own block, `home <<
//! STREAM_BLOCK_BITS` onwards, counted in the layout: a split allocates a
//! stream without the cluster-wide counter, which only the first group's
//! primary writes. The counter is written before the stream is used, so
//! a stream is never given twice (its predecessor's records would replay
//! into it).
//!
//! In memory the catalog keeps one `DatabaseDef` with everything; the
//! split into two entries happens only when it is written (`durable`) and
//! is undone when it is read (`merge_layouts`). Databases without a home
//! (those from older data directories) keep their partitions in their
//! system entry, as before.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tessera_engine::Engine;

use super::{Catalog, DatabaseDef, Entry, SchemaSnapshot};
use crate::error::{Result, SqlError, code};
use crate::storage::partition::PartitionDef;

/// The bits of a partition's stream below its home's number.
const STREAM_BLOCK_BITS: u32 = 20;
/// The cluster-wide stream counter (homes, and the partitions of databases
/// without a home) stays below the first home's block.
pub(super) const FIRST_BLOCK_STREAM: u32 = 1 << STREAM_BLOCK_BITS;

/// Stream `i` (from 1) of home `home`'s block.
pub(super) fn block_stream(home: u32, i: u32) -> Result<u32> {
    if i == 0 || i >= FIRST_BLOCK_STREAM {
        return Err(SqlError::new(code::PROGRAM_LIMIT, "the database has used up its partitions' streams"));
    }
    u64::from(home)
        .checked_shl(STREAM_BLOCK_BITS)
        .map(|s| s | u64::from(i))
        .and_then(|s| u32::try_from(s).ok())
        .filter(|s| *s < u32::MAX)
        .ok_or_else(|| SqlError::new(code::PROGRAM_LIMIT, "the database's home has no block of streams"))
}

/// The home whose block holds `stream`: `Some` for a partition of a keyed
/// database with a home (on a cluster, the stream also names the
/// partition's replication group), `None` for a home or any other stream
/// of the cluster-wide counter.
pub fn block_home(stream: u32) -> Option<u32> {
    (stream >= FIRST_BLOCK_STREAM).then_some(stream >> STREAM_BLOCK_BITS)
}

/// The part of a keyed database's definition kept in its home.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Layout {
    /// The database's oid (its entry in the system engine).
    pub db: u32,
    /// Its home's stream (where this is kept).
    pub home: u32,
    pub partitions: Vec<PartitionDef>,
    pub schema_version: u64,
    /// The next stream of the home's block for a partition.
    pub next_stream: u32,
}

/// Whether `d` keeps its layout in its home.
fn has_layout(d: &DatabaseDef) -> bool {
    d.home.is_some() && d.partition_key.is_some()
}

/// What of `d` the system engine keeps when its layout is in its home.
fn system_part(d: &DatabaseDef) -> DatabaseDef {
    DatabaseDef { partitions: Vec::new(), schema_version: 0, next_stream: 0, ..d.clone() }
}

/// Whether two system parts say the same.
fn same_system_part(a: &DatabaseDef, b: &DatabaseDef) -> bool {
    a.oid == b.oid && a.name == b.name && a.owner == b.owner && a.partition_key == b.partition_key && a.home == b.home
}

impl Catalog {
    /// The entries to write for `entries`: a keyed database with a home
    /// becomes its layout (in the home, first) and its system part — the
    /// latter only when it differs from what is stored, so that a split
    /// or a schema change on a database's own primary writes only there.
    pub(super) fn durable(&self, entries: &[Entry]) -> Vec<Entry> {
        let state = self.schema();
        let mut out = Vec::with_capacity(entries.len() + 1);
        for e in entries {
            match e {
                Entry::Database(d) if has_layout(d) => {
                    out.push(Entry::Layout(Layout {
                        db: d.oid,
                        home: d.home.expect("has a home"),
                        partitions: d.partitions.clone(),
                        schema_version: d.schema_version,
                        next_stream: d.next_stream,
                    }));
                    let stored = state.databases.values().find(|x| x.oid == d.oid);
                    if stored.is_none_or(|x| !same_system_part(x, d)) {
                        out.push(Entry::Database(system_part(d)));
                    }
                }
                other => out.push(other.clone()),
            }
        }
        out
    }

    /// Makes a new partition's stream for keyed database `def` (which
    /// has a home) and records the counter before it is used. On a
    /// cluster the stream is replicated before anything is written to it:
    /// by a group of its own, formed here with the replica count of the
    /// group of the partition it splits from (`parent`), when the
    /// database's partitions have groups of their own; by the database's
    /// group otherwise (databases made before partitions had groups). The
    /// caller adds the partition to the layout once it is made.
    pub(super) fn next_partition_stream(&self, def: &mut DatabaseDef, parent: u32) -> Result<u32> {
        let home = def.home.ok_or_else(|| SqlError::internal("a database without a home has no block of streams"))?;
        let stream = block_stream(home, def.next_stream.max(1))?;
        def.next_stream = def.next_stream.max(1) + 1;
        self.write_entries(&[Entry::Database(def.clone())])?;
        if let Some(groups) = self.groups() {
            let parent_group = groups.group_of(parent);
            tracing::info!(stream, parent, ?parent_group, "a new partition's stream, split from {parent}");
            let made = match parent_group {
                Some(g) if g == home => groups.adopt(home, stream),
                Some(_) => groups.split_off(parent, stream),
                None => Err(crate::storage::cluster_view::GroupsError::Unavailable(format!(
                    "this node does not know the group of partition stream {parent}"
                ))),
            };
            made.map_err(|e| {
                SqlError::new(code::CANNOT_CONNECT_NOW, format!("cannot replicate the new partition: {}", e.reason()))
            })?;
        }
        Ok(stream)
    }

    /// The engine of partition `stream` of database `db`. A replica (on a
    /// cluster, whose engines are rebuilt from the log) opens a partition
    /// its group has not written to yet: the layout in the home says it
    /// exists, and it is empty until the group's log brings rows.
    pub fn partition_engine(&self, db: &DatabaseDef, stream: u32) -> Result<Arc<Engine>> {
        if let Some(engine) = self.node.partition(stream) {
            return Ok(engine);
        }
        if db.home.is_some() && !self.node.is_durable() {
            return Ok(self.node.open_partition(stream, true)?);
        }
        Err(SqlError::internal(format!("partition {stream} of database \"{}\" is not open", db.name)))
    }

    /// Makes a new, empty partition of keyed database `def` with this key
    /// range (a split); the caller puts it into `def.partitions` and writes
    /// `def` once its rows are in.
    pub fn add_partition(
        &self,
        def: &mut DatabaseDef,
        parent: u32,
        low: Vec<u8>,
        high: Option<Vec<u8>>,
    ) -> Result<PartitionDef> {
        if def.home.is_none() {
            return Ok(self.create_partitions(vec![(low, high)])?.remove(0));
        }
        let stream = self.next_partition_stream(def, parent)?;
        self.node.open_partition(stream, true)?;
        Ok(PartitionDef { stream, low, high, schema_version: 0, dirty: false })
    }
}

impl Catalog {
    /// Undoes [`Self::add_partition`] when the split that made the
    /// partition fails before the layout has it. On a cluster it removes its
    /// group, when it has one of its own, and with it the partition's
    /// engine on every node. Best effort: a group that stays is removed by
    /// the primary of the database's home when a session next opens there.
    /// (A stream taken up by the database's group stays, unused, as it
    /// did before partitions had groups.)
    pub fn abandon_partition(&self, part: &PartitionDef) {
        let Some(groups) = self.groups() else {
            // A single node: nothing else has the partition's engine.
            if let Err(e) = self.node.drop_partition(part.stream) {
                tracing::warn!(stream = part.stream, "the engine of a split that failed stays: {e}");
            }
            return;
        };
        if groups.group_of(part.stream) == Some(part.stream)
            && let Err(e) = groups.remove(part.stream)
        {
            tracing::warn!(group = part.stream, "the group of a split that failed stays: {}", e.reason());
        }
    }
}

impl SchemaSnapshot {
    /// Puts each layout read from a home into its database's definition.
    pub(super) fn merge_layouts(&mut self, layouts: Vec<Layout>) {
        for l in layouts {
            if let Some(d) = self.databases.values_mut().find(|d| d.oid == l.db && d.home == Some(l.home)) {
                d.partitions = l.partitions;
                d.schema_version = l.schema_version;
                d.next_stream = l.next_stream;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_home_gives_its_partitions_streams_from_its_own_block() {
        assert_eq!(block_stream(1, 1).unwrap(), (1 << 20) + 1);
        assert_eq!(block_home(block_stream(7, 3).unwrap()), Some(7));
        assert_eq!(block_home(7), None, "a home is in no block");
        assert_eq!(block_stream(7, 3).unwrap(), (7 << 20) | 3);
        assert!(block_stream(7, 0).is_err(), "the block's first stream is none of its partitions'");
        assert!(block_stream(7, FIRST_BLOCK_STREAM).is_err(), "no stream past the block");
        assert!(block_stream(4095, 1).is_ok());
        assert!(block_stream(4096, 1).is_err(), "a home past the last block has none");
        assert!(block_stream(1, 1).unwrap() >= FIRST_BLOCK_STREAM, "above every stream of the cluster's counter");
    }
}
