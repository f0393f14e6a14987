//! `ALTER DATABASE name SPLIT AT (value)`: splitting a partition in place.
//!
//! The partition `P = [low, high)` holding `value` becomes `[low, value)`,
//! and a new partition `Q = [value, high)` takes the rows at or above the
//! value:
//!
//! 1. P's writer gate is frozen: new writers of P are refused with a
//!    retryable serialization failure, and the split waits (up to a bound)
//!    for the transactions already writing P to end. (On a cluster P's
//!    writers are the sessions of the node running the split: a database's
//!    sessions run where its home is led, wherever P is.)
//! 2. Q is created empty on a new log stream, with every table of the
//!    database, and the rows at or above the value are copied into it in one
//!    transaction. On a cluster Q is a replication group of its own, formed
//!    on this node before P's writers are held up, with the replica count
//!    of P's group, and P's rows are read where P is led (here, or through
//!    a transaction at its primary); once the split is done Q's primary is
//!    placed like any other partition's.
//! 3. The catalog switches over in one write: P's range shrinks, Q appears,
//!    P is marked as holding rows outside its range.
//! 4. The gate thaws with a new epoch (statements planned against the old
//!    range are refused when they write, and retry), and the rows that moved
//!    are deleted from P. Until then scans skip them, since every scan
//!    filters rows by its partition's range; a crash before the clean-up is
//!    finished is repaired when the node opens.
//!
//! Unlike the Cloud SQL Server paper, the rows are copied into the new
//! partition's log stream rather than adopted: partitions are in-memory
//! engines whose checkpoint files hold only their own stream, so adopting
//! files would mean sharing them between two partitions' recoveries. The
//! copy happens under the gate only for the partition being split; every
//! other partition keeps serving reads and writes, and reads of P go on.

use std::time::Duration;

use tessera_engine::tuple::Tuple;
use tessera_engine::{Isolation, KeyRange, PRIMARY};

use crate::error::{Result, SqlError, code};
use crate::storage::catalog::{Catalog, DatabaseDef};
use tessera_engine::remote::RemoteBegin;

/// How long a split waits for the transactions writing the partition.
const SPLIT_WAIT: Duration = Duration::from_secs(10);

/// Splits the partition of keyed database `db` that holds `value` (text).
/// The caller holds the catalog's DDL lock.
pub fn split(catalog: &Catalog, db: &str, value: &str) -> Result<()> {
    let mut def = catalog
        .database(db)
        .ok_or_else(|| SqlError::new(code::UNDEFINED_DATABASE, format!("database \"{db}\" does not exist")))?;
    let Some(key) = def.partition_key.clone() else {
        return Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            format!("database \"{db}\" is keyless: it has one partition and cannot be split"),
        ));
    };
    let at = crate::storage::partition::encode_key_value(key.ty, value).map_err(|e| {
        SqlError::new(code::INVALID_PARAMETER_VALUE, format!("invalid split point for {key}: {}", e.message))
    })?;
    let k = def.partitions.iter().position(|p| p.contains(&at)).ok_or_else(|| {
        SqlError::internal(format!("no partition of \"{db}\" holds {value}: the ranges do not cover the key space"))
    })?;
    let old = def.partitions[k].clone();
    if old.low == at {
        return Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("partition {} of \"{db}\" already starts at {key} = {value}", k + 1),
        ));
    }
    // P's rows are read where P is led: from its engine here, or through
    // a transaction at its primary on another node. Its writers are this
    // node's sessions either way (a database's sessions run where its home
    // is led), which the gate holds up.
    let routes = catalog.groups().and_then(|g| g.routes());
    // Q's stream (and on a cluster its group, formed here) is made before
    // P's writers are held up: forming a group takes a moment.
    let mut new = catalog.add_partition(&mut def, old.stream, at.clone(), old.high.clone())?;
    let gate = catalog.gate(old.stream);
    if !gate.freeze(SPLIT_WAIT) {
        catalog.abandon_partition(&new);
        return Err(SqlError::new(
            code::LOCK_NOT_AVAILABLE,
            format!(
                "could not split partition {} of \"{db}\": transactions kept writing it for {} s",
                k + 1,
                SPLIT_WAIT.as_secs()
            ),
        ));
    }
    let moved = (|| -> Result<()> {
        let q_engine = catalog.node().partition(new.stream).ok_or_else(|| SqlError::internal("new partition"))?;
        // (Begun with its first scan, after the freeze.)
        let how = RemoteBegin { isolation: Isolation::Snapshot, durability: None, deadline: None };
        let mut remote = match &routes {
            Some(routes) => routes.begin(old.stream, how)?,
            None => None,
        };
        let local = match remote {
            Some(_) => None,
            None => Some(catalog.partition_engine(&def, old.stream)?),
        };
        let mut read = local.as_ref().map(|e| e.begin(Isolation::Snapshot)).transpose()?;
        let mut write = q_engine.begin(Isolation::Snapshot)?;
        for t in catalog.tables(db) {
            let q_table = q_engine.create_table(crate::storage::catalog::engine_spec(&t, &t.engine_name)?)?;
            let field = t
                .column(&key.column)
                .map(|c| c.field as usize)
                .ok_or_else(|| SqlError::internal(format!("table \"{}\" lacks the partition key column", t.name)))?;
            let in_q = |r: &[u8]| Tuple::parse(r).ok().and_then(|t| t.field(field)).is_some_and(|k| new.contains(k));
            // The rows go into the new partition as they are read.
            let mut failed = None;
            let mut copy = |r: &[u8]| match in_q(r).then(|| write.insert(&q_table, r.to_vec())) {
                Some(Err(e)) => {
                    failed = Some(e);
                    false
                }
                _ => true,
            };
            match (&mut remote, &mut read, &local) {
                (Some(txn), _, _) => match txn.scan(&t.engine_name, None, &KeyRange::all(), None, &[], &mut copy) {
                    Ok(()) | Err(tessera_engine::EngineError::NoSuchTable(_)) => {}
                    Err(e) => return Err(e.into()),
                },
                (None, Some(read), Some(p_engine)) => {
                    if let Some(p_table) = p_engine.table(&t.engine_name) {
                        read.scan(&p_table, PRIMARY, &KeyRange::all(), copy)?;
                    }
                }
                _ => return Err(SqlError::internal("the split has no way to read the partition")),
            }
            if let Some(e) = failed {
                return Err(e.into());
            }
        }
        if let Some(txn) = remote {
            txn.abort();
        }
        if let Some(read) = read {
            read.abort();
        }
        crate::storage::blocking(|| write.commit())?;
        Ok(())
    })();
    if let Err(e) = moved {
        gate.thaw(false);
        catalog.abandon_partition(&new);
        return Err(e);
    }
    catalog.crash_point("split-before-switch");
    new.schema_version = old.schema_version;
    def.partitions[k].high = Some(at);
    def.partitions[k].dirty = true;
    let q = new.stream;
    def.partitions.insert(k + 1, new);
    let switched = catalog.put_database(def.clone());
    gate.thaw(switched.is_ok());
    switched?;
    catalog.crash_point("split-after-switch");
    clean(catalog, &def, k)?;
    // Q's group was formed here: its primary goes where the cluster
    // would move it anyway (as a new database's partitions' do).
    if let Some(groups) = catalog.groups()
        && groups.group_of(q) == Some(q)
    {
        groups.place(q);
    }
    Ok(())
}

/// Deletes the rows of partition `k` that lie outside its range (left by a
/// split) and clears its mark.
pub fn clean(catalog: &Catalog, def: &DatabaseDef, k: usize) -> Result<()> {
    let Some(key) = &def.partition_key else { return Ok(()) };
    let part = &def.partitions[k];
    // On a cluster whose partitions are groups of their own, the partition
    // may be led by another node: the clean-up is a transaction there.
    let how = RemoteBegin { isolation: Isolation::Snapshot, durability: None, deadline: None };
    let remote = match catalog.groups().and_then(|g| g.routes()) {
        Some(routes) => routes.begin(part.stream, how)?,
        None => None,
    };
    if let Some(mut txn) = remote {
        let mut removed = 0usize;
        for t in catalog.tables(&def.name) {
            let Some(field) = t.column(&key.column).map(|c| c.field as usize) else { continue };
            // Only the keys of the rows to delete are kept.
            let mut keys = Vec::new();
            let scanned = txn.scan(&t.engine_name, None, &KeyRange::all(), None, &[], &mut |r| {
                if Tuple::parse(r).ok().and_then(|t| t.field(field)).is_some_and(|v| !part.contains(v)) {
                    keys.push(t.key_of(r));
                }
                true
            });
            match scanned {
                Ok(()) => {}
                Err(tessera_engine::EngineError::NoSuchTable(_)) => continue,
                Err(e) => return Err(e.into()),
            }
            for k in keys {
                txn.delete(&t.engine_name, &k?)?;
                removed += 1;
            }
        }
        futures::executor::block_on(txn.commit())?;
        return mark_clean(catalog, def, part.stream, removed);
    }
    let engine = catalog.partition_engine(def, part.stream)?;
    let mut txn = engine.begin(Isolation::Snapshot)?;
    let mut removed = 0usize;
    for t in catalog.tables(&def.name) {
        let Some(table) = engine.table(&t.engine_name) else { continue };
        let Some(field) = t.column(&key.column).map(|c| c.field as usize) else { continue };
        let mut keys = Vec::new();
        txn.scan(&table, PRIMARY, &KeyRange::all(), |r| {
            if Tuple::parse(r).ok().and_then(|t| t.field(field)).is_some_and(|v| !part.contains(v)) {
                keys.push(t.key_of(r));
            }
            true
        })?;
        for k in keys {
            txn.delete(&table, &k?)?;
            removed += 1;
        }
    }
    crate::storage::blocking(|| txn.commit())?;
    mark_clean(catalog, def, part.stream, removed)
}

/// Records that partition `stream` holds only its own range again.
fn mark_clean(catalog: &Catalog, def: &DatabaseDef, stream: u32, removed: usize) -> Result<()> {
    let mut def = catalog.database(&def.name).unwrap_or_else(|| def.clone());
    if let Some(p) = def.partitions.iter_mut().find(|p| p.stream == stream) {
        p.dirty = false;
    }
    catalog.put_database(def)?;
    tracing::info!(stream, removed, "cleaned rows outside a partition's range");
    Ok(())
}
