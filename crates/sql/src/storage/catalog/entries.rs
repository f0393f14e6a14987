//! The catalog's stored entries: how each definition is kept durably
//! and read back.
//!
//! Every definition is one JSON document in an engine table `__catalog`
//! — the system engine's for what is cluster-wide, a database's home's
//! for its own objects — keyed `kind:oid`, so DDL is logged, checkpointed,
//! replicated and recovered like any data. A change writes its entries
//! durably first (one commit per home they are kept in), then publishes a
//! new [`SchemaSnapshot`] with them (`schema.rs`); loading reads every
//! home's entries back into a fresh snapshot. Callers of the changes hold
//! the DDL mutex (`Catalog::ddl_lock`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tessera_engine::Isolation;
use tessera_engine::tuple::{Tuple, encode_key, encode_tuple};

use super::views::ViewDef;
use super::{
    Catalog, DatabaseDef, Home, RoleDef, SchemaSnapshot, SequenceDef, SequenceState, TableDef, TypeDef, code, layout,
};
use crate::error::{Result, SqlError};
use crate::storage::jobs::JobDef;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub(super) enum Entry {
    Database(DatabaseDef),
    Table(TableDef),
    Sequence(SequenceDef),
    Role(RoleDef),
    /// The next unused log stream (stream ids are never reused).
    Streams {
        next: u32,
    },
    Job(JobDef),
    /// A keyed database's partitions and schema version, in its home
    /// (`catalog/layout.rs`).
    Layout(layout::Layout),
    /// An enum type or a domain (`catalog/types.rs`).
    Type(TypeDef),
    /// A view (`catalog/views.rs`).
    View(ViewDef),
}

impl Entry {
    pub(super) fn key(&self) -> String {
        match self {
            Entry::Database(d) => format!("database:{}", d.oid),
            Entry::Table(t) => format!("table:{}", t.oid),
            Entry::Sequence(s) => format!("sequence:{}", s.oid),
            Entry::Role(r) => format!("role:{}", r.oid),
            Entry::Streams { .. } => "streams:0".into(),
            Entry::Job(j) => format!("job:{}", j.id),
            Entry::Layout(l) => format!("layout:{}", l.db),
            Entry::Type(t) => format!("type:{}", t.oid),
            Entry::View(v) => format!("view:{}", v.oid),
        }
    }
}

impl Catalog {
    pub(super) fn load(&self) -> Result<()> {
        if self.replica && !self.system_home().is_current(&self.node) {
            let system =
                Home::in_engine(tessera_engine::SYSTEM_STREAM, self.engine.clone(), false)?.ok_or_else(|| {
                    SqlError::new(code::CANNOT_CONNECT_NOW, "this replica is loading the catalog from a snapshot")
                })?;
            *self.system.write() = system;
        }
        let system = self.system_home();
        // Counted before the scan: a change during it is seen next time.
        let mut changes = system.changes();
        let (rows, mut seq_rows) = system.scan()?;
        let parse = |rows: Vec<Vec<u8>>| -> Result<Vec<Entry>> {
            rows.iter()
                .map(|row| {
                    let t = Tuple::parse(row).map_err(|e| SqlError::internal(e.to_string()))?;
                    let doc = t.field(1).ok_or_else(|| SqlError::internal("catalog entry without a document"))?;
                    serde_json::from_slice(doc)
                        .map_err(|e| SqlError::new(code::DATA_CORRUPTED, format!("catalog entry is unreadable: {e}")))
                })
                .collect()
        };
        let mut entries = parse(rows)?;
        // Then every database's home (a replica's may not be there yet).
        let homes: Vec<u32> = entries
            .iter()
            .filter_map(|e| match e {
                Entry::Database(d) => d.home,
                _ => None,
            })
            .collect();
        self.homes.write().retain(|s, h| homes.contains(s) && h.is_current(&self.node));
        for stream in homes {
            if let Some(h) = self.attach_home(stream)? {
                changes += h.changes();
                let (rows, seqs) = h.scan()?;
                entries.extend(parse(rows)?);
                seq_rows.extend(seqs);
            }
        }
        self.loaded_changes.store(changes, Ordering::Release);
        // From scratch (a replica reloads into a catalog in use), but for
        // the counters, which never go back.
        let mut schema = SchemaSnapshot::default();
        let mut counters = self.counters.lock();
        let mut layouts = Vec::new();
        for entry in entries {
            let oid = match &entry {
                Entry::Layout(l) => {
                    layouts.push(l.clone());
                    continue;
                }
                Entry::Streams { next } => {
                    counters.next_stream = counters.next_stream.max(*next);
                    continue;
                }
                Entry::Database(d) => d.oid,
                Entry::Table(t) => t.oid,
                Entry::Sequence(s) => s.oid,
                Entry::Role(r) => r.oid,
                Entry::Type(t) => t.oid,
                Entry::View(v) => v.oid,
                Entry::Job(j) => j.id,
            };
            counters.past_oid(oid);
            if let Entry::Table(t) = &entry {
                t.indexes.iter().for_each(|ix| counters.past_oid(ix.oid));
            }
            schema.apply(entry);
        }
        schema.merge_layouts(layouts);
        // Never hand out a stream a database still uses (belt and braces;
        // the streams of homes' blocks are not the counter's).
        let used = schema
            .databases
            .values()
            .flat_map(|d| d.partitions.iter().map(|p| p.stream).chain(d.home))
            .filter(|s| *s < layout::FIRST_BLOCK_STREAM)
            .max();
        if let Some(max) = used {
            counters.next_stream = counters.next_stream.max(max + 1);
        }
        drop(counters);
        let mut reserved = BTreeMap::new();
        for row in seq_rows {
            let t = Tuple::parse(&row).map_err(|e| SqlError::internal(e.to_string()))?;
            let oid = t.field(0).and_then(|b| b.try_into().ok()).map(u32::from_be_bytes);
            let value = t.field(1).and_then(|b| b.try_into().ok()).map(i64::from_be_bytes);
            if let (Some(oid), Some(value)) = (oid, value) {
                reserved.insert(oid, value);
            }
        }
        let mut seqs = self.sequences.write();
        for s in schema.sequences.values() {
            // After a restart continue past everything that may have been handed out.
            let (next, res, called) = match reserved.get(&s.oid) {
                Some(r) => (r + s.increment, *r, true),
                None => (s.start, s.start - s.increment, false),
            };
            seqs.insert(
                s.oid,
                Arc::new(SequenceState {
                    next: AtomicI64::new(next),
                    reserved: Mutex::new(res),
                    called: std::sync::atomic::AtomicBool::new(called),
                }),
            );
        }
        schema.version = self.version();
        *self.schema.write() = Arc::new(schema);
        Ok(())
    }

    /// Writes catalog documents durably, then applies them in memory.
    pub(super) fn write_entries(&self, entries: &[Entry]) -> Result<()> {
        // One durable commit per home the entries are kept in.
        let durable = self.durable(entries);
        for (home, entries) in self.by_home(&durable, |e| self.entry_home(e))? {
            self.check_writable(&home)?;
            let mut txn = home.engine.begin(Isolation::Snapshot)?;
            for e in entries {
                let key = e.key();
                let doc = serde_json::to_vec(e).map_err(|e| SqlError::internal(e.to_string()))?;
                let row = encode_tuple(&[Some(key.as_bytes()), Some(&doc)]);
                txn.put(&home.catalog, row, tessera_engine::PutCondition::Always)?;
            }
            // A durable commit: wait for the fsync off the runtime's thread.
            crate::storage::blocking(|| txn.commit())?;
        }
        for e in entries {
            if let Entry::Streams { next } = e {
                let mut counters = self.counters.lock();
                counters.next_stream = counters.next_stream.max(*next);
            }
        }
        self.change_schema(|schema| entries.iter().cloned().for_each(|e| schema.apply(e)));
        Ok(())
    }

    pub(super) fn delete_entries(&self, keys: &[String]) -> Result<()> {
        for (home, keys) in self.by_home(keys, |k| self.key_home(k))? {
            self.check_writable(&home)?;
            let mut txn = home.engine.begin(Isolation::Snapshot)?;
            for key in keys {
                txn.delete(&home.catalog, &encode_key(&[Some(key.as_bytes())]))?;
            }
            // A durable commit: wait for the fsync off the runtime's thread.
            crate::storage::blocking(|| txn.commit())?;
        }
        self.change_schema(|schema| {
            for key in keys {
                let (kind, oid) = key.split_once(':').expect("catalog key");
                schema.remove(kind, oid.parse().expect("catalog oid"));
            }
        });
        Ok(())
    }

    /// Publishes a new snapshot: the one held, changed by `change`, under
    /// the next version. Callers hold the DDL mutex (or are the loader).
    pub(super) fn change_schema(&self, change: impl FnOnce(&mut SchemaSnapshot)) {
        let mut held = self.schema.write();
        let mut next = SchemaSnapshot::clone(&held);
        change(&mut next);
        next.version = self.version.fetch_add(1, Ordering::AcqRel) + 1;
        *held = Arc::new(next);
    }

    // ----- changes (callers hold `ddl_lock`) -----

    pub fn put_database(&self, d: DatabaseDef) -> Result<()> {
        self.write_entries(&[Entry::Database(d)])
    }

    pub fn put_table(&self, t: TableDef) -> Result<()> {
        self.write_entries(&[Entry::Table(t)])
    }

    pub fn put_role(&self, r: RoleDef) -> Result<()> {
        self.write_entries(&[Entry::Role(r)])
    }

    pub fn drop_role(&self, oid: u32) -> Result<()> {
        self.delete_entries(&[format!("role:{oid}")])
    }

    pub fn drop_database_entry(&self, oid: u32) -> Result<()> {
        self.delete_entries(&[format!("database:{oid}")])
    }

    /// Removes a table's catalog entry and the sequences it owns.
    pub fn drop_table_entry(&self, t: &TableDef) -> Result<()> {
        let mut keys = vec![format!("table:{}", t.oid)];
        for s in self.sequences(&t.db) {
            if s.owned_by.as_ref().map(|o| o.0) == Some(t.oid) {
                keys.push(format!("sequence:{}", s.oid));
            }
        }
        self.delete_entries(&keys)
    }

    pub fn put_sequence(&self, s: SequenceDef) -> Result<()> {
        let oid = s.oid;
        let start = s.start;
        let inc = s.increment;
        let fresh = !self.sequences.read().contains_key(&oid);
        self.write_entries(&[Entry::Sequence(s)])?;
        if fresh {
            self.sequences.write().insert(
                oid,
                Arc::new(SequenceState {
                    next: AtomicI64::new(start),
                    reserved: Mutex::new(start - inc),
                    called: std::sync::atomic::AtomicBool::new(false),
                }),
            );
        }
        Ok(())
    }

    pub fn drop_sequence_entry(&self, oid: u32) -> Result<()> {
        self.delete_entries(&[format!("sequence:{oid}")])?;
        self.sequences.write().remove(&oid);
        Ok(())
    }
}
