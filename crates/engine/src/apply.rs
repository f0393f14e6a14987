//! The apply path: installing committed after-images without executing or
//! validating anything. Recovery replays the log through it; a replica will
//! apply its primary's commit stream through it, in commit order.

use std::sync::Arc;
use std::sync::atomic::Ordering::*;

use crossbeam_epoch::{self as epoch, Guard};

use crate::engine::EngineInner;
use crate::error::Result;
use crate::gc::GcItem;
use crate::mvcc::{INFINITY, Timestamp, Version};
use crate::record::{LogEntry, WriteRecord};
use crate::table::Table;

/// Applies one decoded log entry committed at its timestamp. The caller
/// guarantees that no transaction writes concurrently (recovery, replica).
pub(crate) fn apply_entry(inner: &EngineInner, entry: &LogEntry<'_>) -> Result<()> {
    match entry {
        LogEntry::Ddl { op, .. } => inner.apply_ddl(op),
        LogEntry::Commit { ts, writes } => {
            let guard = epoch::pin();
            for w in writes {
                // Writes to a table dropped later in the log are skipped.
                if let Some(table) = inner.table_by_id(w.table) {
                    apply_write(inner, &table, w, *ts, &guard)?;
                }
            }
            Ok(())
        }
    }
}

pub(crate) fn apply_write(
    inner: &EngineInner,
    table: &Arc<Table>,
    w: &WriteRecord<'_>,
    ts: Timestamp,
    guard: &Guard,
) -> Result<()> {
    let row = match w.row {
        Some(_) => table.row_for_insert(w.key, guard),
        None => match table.lookup(w.key) {
            Some(r) => r,
            None => return Ok(()),
        },
    };
    let head = row.load_head(guard);
    if head.is_removed() {
        return Ok(());
    }
    let mut old_len = None;
    if let Some(h) = head.newest()
        && h.end.load(Acquire) == INFINITY
    {
        h.end.store(ts, Release);
        old_len = Some(h.data.len());
    }
    table.account(w.row.map(|r| r.len()), old_len);
    if let Some(data) = w.row {
        inner.versions.add(1);
        let v = Version::new(ts, data);
        v.next.store(head.ptr(), Relaxed);
        let published = v.into_shared(guard);
        row.head.store(published, Release);
        for ix in table.secondaries().iter() {
            let (key, _) = crate::table::index_key(&ix.spec.columns, data)?;
            ix.add(&key, &row);
        }
    }
    if !head.ptr().is_null() {
        inner.gc.push(0, GcItem { table: table.clone(), row, ts });
    }
    Ok(())
}

/// Installs a row loaded from a checkpoint data file. After the delta files
/// are applied each key has one live version, so the common case is a plain
/// insert of a fresh row (one hash probe instead of two).
pub(crate) fn load_row(
    inner: &EngineInner,
    table: &Arc<Table>,
    key: &[u8],
    ts: Timestamp,
    data: &[u8],
    guard: &Guard,
) -> Result<()> {
    if !table.has_secondaries() && table.pk_ordered.is_none() {
        let row = Arc::new(crate::mvcc::Row::new(crate::key::InlineKey::from(key)));
        row.head.store(Version::new(ts, data), Relaxed);
        if table.rows.insert_sync(row.key.clone(), row).is_ok() {
            inner.versions.add(1);
            table.account(Some(data.len()), None);
            return Ok(());
        }
    }
    apply_write(inner, table, &WriteRecord { table: table.id, key, prev_ts: 0, row: Some(data) }, ts, guard)
}
