//! A table: its row directory, its primary ordered index and its secondary
//! indexes, and the index maintenance that writers, abort and GC share.

use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crossbeam_epoch::Guard;
use crossbeam_skiplist::SkipMap;
use parking_lot::RwLock;
use scc::HashIndex;

use crate::index::KeyHasher;
use crate::key::InlineKey;

use crate::error::{ConflictReason, EngineError, Result};
use crate::index::{Index, in_range};
use crate::mvcc::{INFINITY, Row, Version, is_marker};
use crate::schema::{IndexId, IndexKind, IndexSpec, PRIMARY, TableId, TableSpec};
use crate::tuple::{Tuple, push_key_field};

pub struct Table {
    pub id: TableId,
    spec: RwLock<Arc<TableSpec>>,
    /// The row directory: primary key → row. Every row is here.
    pub(crate) rows: HashIndex<InlineKey, Arc<Row>, KeyHasher>,
    /// Present when the primary key is an ordered index.
    pub(crate) pk_ordered: Option<SkipMap<Box<[u8]>, Arc<Row>>>,
    secondary: RwLock<Arc<Vec<Arc<Index>>>>,
    /// Writers hold it shared for the span of one write; index creation
    /// takes it exclusively to register a new index between writes.
    pub(crate) ddl: RwLock<()>,
    secondary_count: std::sync::atomic::AtomicUsize,
    /// Committed live rows and their bytes (for statistics and system views).
    live_rows: crate::clock::StripedCounter,
    live_bytes: crate::clock::StripedCounter,
    /// Committed row changes (a cheap way to notice that a table changed).
    changes: crate::clock::StripedCounter,
}

/// Size of a table's committed contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TableStats {
    pub rows: i64,
    pub bytes: i64,
}

/// Extracts an index key from a row; the flag says whether a key field is NULL.
pub fn index_key(columns: &[u16], row: &[u8]) -> Result<(Vec<u8>, bool)> {
    let t = Tuple::parse(row)?;
    let mut key = Vec::with_capacity(16);
    let mut has_null = false;
    for &c in columns {
        let f = t.field(c as usize);
        has_null |= f.is_none();
        push_key_field(&mut key, f);
    }
    Ok((key, has_null))
}

impl Table {
    pub(crate) fn new(spec: TableSpec) -> Table {
        let pk_ordered = (spec.primary.kind == IndexKind::Ordered).then(SkipMap::new);
        let spec_secondaries = spec.secondary.len();
        let secondary = spec.secondary.iter().cloned().map(|s| Arc::new(Index::new(s))).collect();
        Table {
            id: spec.id,
            spec: RwLock::new(Arc::new(spec)),
            rows: HashIndex::with_hasher(KeyHasher::default()),
            pk_ordered,
            secondary: RwLock::new(Arc::new(secondary)),
            ddl: RwLock::new(()),
            secondary_count: std::sync::atomic::AtomicUsize::new(spec_secondaries),
            live_rows: Default::default(),
            live_bytes: Default::default(),
            changes: Default::default(),
        }
    }

    pub fn spec(&self) -> Arc<TableSpec> {
        self.spec.read().clone()
    }

    pub fn name(&self) -> String {
        self.spec.read().name.clone()
    }

    pub(crate) fn set_spec(&self, spec: TableSpec) {
        *self.spec.write() = Arc::new(spec);
    }

    /// Committed live rows and row bytes.
    pub fn stats(&self) -> TableStats {
        TableStats { rows: self.live_rows.get(), bytes: self.live_bytes.get() }
    }

    /// Records a committed change of one row: its new size (None: deleted)
    /// and the size of the version it replaced (None: it was inserted).
    /// How many row changes have been committed to the table (inserts,
    /// updates, deletes, replicated ones included) since it was opened.
    pub fn changes(&self) -> i64 {
        self.changes.get()
    }

    pub(crate) fn account(&self, new_len: Option<usize>, old_len: Option<usize>) {
        self.changes.add(1);
        let rows = new_len.is_some() as i64 - old_len.is_some() as i64;
        if rows != 0 {
            self.live_rows.add(rows);
        }
        self.live_bytes.add(new_len.unwrap_or(0) as i64 - old_len.unwrap_or(0) as i64);
    }

    pub(crate) fn has_secondaries(&self) -> bool {
        self.secondary_count.load(Ordering::Acquire) > 0
    }

    pub(crate) fn secondaries(&self) -> Arc<Vec<Arc<Index>>> {
        self.secondary.read().clone()
    }

    pub(crate) fn add_secondary(&self, index: Arc<Index>) {
        let mut w = self.secondary.write();
        let mut v: Vec<Arc<Index>> = (**w).clone();
        v.push(index);
        self.secondary_count.store(v.len(), Ordering::Release);
        *w = Arc::new(v);
    }

    pub(crate) fn remove_secondary(&self, id: IndexId) {
        let mut w = self.secondary.write();
        let v: Vec<Arc<Index>> = w.iter().filter(|i| i.spec.id != id).cloned().collect();
        self.secondary_count.store(v.len(), Ordering::Release);
        *w = Arc::new(v);
    }

    pub fn primary_key(&self, row: &[u8]) -> Result<Vec<u8>> {
        let spec = self.spec.read();
        Ok(index_key(&spec.primary.columns, row)?.0)
    }

    /// Number of rows in the directory (including rows whose versions are all
    /// dead but not yet collected).
    pub fn directory_len(&self) -> usize {
        self.rows.len()
    }

    #[inline]
    pub(crate) fn lookup(&self, key: &[u8]) -> Option<Arc<Row>> {
        self.rows.peek_with(key, |_, r| r.clone())
    }

    /// The row for `key`, creating an empty one if there is none (or if the
    /// existing one was removed by GC).
    pub(crate) fn row_for_insert(&self, key: &[u8], guard: &Guard) -> Arc<Row> {
        if let Some(r) = self.lookup(key)
            && !r.is_removed(guard)
        {
            return r;
        }
        let row = match self.rows.entry_sync(key.into()) {
            scc::hash_index::Entry::Occupied(mut e) => {
                if !e.get().is_removed(guard) {
                    return e.get().clone();
                }
                let row = Arc::new(Row::new(InlineKey::from(key)));
                e.update(row.clone());
                row
            }
            scc::hash_index::Entry::Vacant(e) => {
                let row = Arc::new(Row::new(InlineKey::from(key)));
                e.insert_entry(row.clone());
                row
            }
        };
        if let Some(ord) = &self.pk_ordered {
            ord.insert(key.into(), row.clone());
        }
        row
    }

    /// Removes a row that GC has tagged REMOVED from the primary structures.
    pub(crate) fn remove_row(&self, row: &Arc<Row>) {
        self.rows.remove_if_sync(&row.key, |r| Arc::ptr_eq(r, row));
        if let Some(ord) = &self.pk_ordered
            && let Some(e) = ord.get(row.key.as_bytes())
            && Arc::ptr_eq(e.value(), row)
        {
            e.remove();
        }
    }

    /// Adds index entries for a new version and enforces unique secondary
    /// indexes. `me` is the writer's marker.
    pub(crate) fn index_new_version(&self, row: &Arc<Row>, data: &[u8], me: u64, guard: &Guard) -> Result<()> {
        if !self.has_secondaries() {
            return Ok(());
        }
        let secondaries = self.secondaries();
        for ix in secondaries.iter() {
            let (key, has_null) = index_key(&ix.spec.columns, data)?;
            ix.add(&key, row);
            if ix.spec.unique && !has_null {
                self.check_unique(ix, &key, row, me, guard)?;
            }
        }
        Ok(())
    }

    /// Is there another row whose latest state carries `key`? The entry for
    /// our own row was added first, so two concurrent writers of the same key
    /// cannot both miss each other.
    fn check_unique(&self, ix: &Index, key: &[u8], row: &Arc<Row>, me: u64, guard: &Guard) -> Result<()> {
        let mut outcome = Ok(());
        ix.for_each(Bound::Included(key), Bound::Included(key), |_, other| {
            if Arc::ptr_eq(other, row) {
                return true;
            }
            if let Err(e) = self.row_holds_key(ix, key, other, me, guard) {
                outcome = Err(e);
                return false;
            }
            true
        });
        outcome
    }

    fn row_holds_key(&self, ix: &Index, key: &[u8], other: &Row, me: u64, guard: &Guard) -> Result<()> {
        let violation = || EngineError::UniqueViolation { table: self.name(), index: ix.spec.name.clone() };
        // A removed row has no versions, and so holds no key.
        for v in other.versions(guard) {
            let begin = v.begin.load(Ordering::Acquire);
            let end = v.end.load(Ordering::Acquire);
            let has_key = || index_key(&ix.spec.columns, &v.data).map(|(k, _)| k == key).unwrap_or(false);
            if begin == INFINITY {
                // aborted, being unlinked
            } else if begin == me {
                return if end != me && has_key() { Err(violation()) } else { Ok(()) };
            } else if is_marker(begin) {
                if has_key() {
                    return Err(EngineError::conflict(ConflictReason::WriteWrite));
                }
            } else {
                if !has_key() || end == me {
                    return Ok(());
                }
                if end == INFINITY {
                    return Err(violation());
                }
                if is_marker(end) {
                    return Err(EngineError::conflict(ConflictReason::WriteWrite));
                }
                return Ok(());
            }
        }
        Ok(())
    }

    /// Removes index entries that only the `dropped` versions carried, after
    /// they were unlinked from `row`. A writer may re-add the same key
    /// concurrently, so after removing an entry we look again and restore it
    /// if a live version carries the key.
    pub(crate) fn unindex(&self, row: &Arc<Row>, dropped: &[&Version], guard: &Guard) {
        if !self.has_secondaries() {
            return;
        }
        let secondaries = self.secondaries();
        if secondaries.is_empty() || dropped.is_empty() {
            return;
        }
        for ix in secondaries.iter() {
            for v in dropped {
                let Ok((key, _)) = index_key(&ix.spec.columns, &v.data) else { continue };
                if self.chain_has_key(ix, row, &key, guard) {
                    continue;
                }
                ix.remove(&key, row);
                if self.chain_has_key(ix, row, &key, guard) {
                    ix.add(&key, row);
                }
            }
        }
    }

    fn chain_has_key(&self, ix: &Index, row: &Row, key: &[u8], guard: &Guard) -> bool {
        row.versions(guard).any(|v| {
            v.begin.load(Ordering::Acquire) != INFINITY
                && index_key(&ix.spec.columns, &v.data).map(|(k, _)| k == key).unwrap_or(false)
        })
    }

    /// Visits candidate rows of index `index` in the key range: `f(entry key,
    /// row)`. For the primary index the entry key is the primary key.
    pub(crate) fn for_each_candidate(
        &self,
        index: IndexId,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        mut f: impl FnMut(&[u8], &Arc<Row>) -> bool,
    ) -> Result<()> {
        if index == PRIMARY {
            if let (Bound::Included(a), Bound::Included(b)) = (lower, upper)
                && a == b
            {
                if let Some(row) = self.lookup(a) {
                    f(a, &row);
                }
                return Ok(());
            }
            if let Some(ord) = &self.pk_ordered {
                for e in ord.range::<[u8], _>((lower, upper)) {
                    if !f(e.key(), e.value()) {
                        break;
                    }
                }
            } else {
                let guard = scc::Guard::new();
                for (k, row) in self.rows.iter(&guard) {
                    if in_range(k, lower, upper) && !f(k, row) {
                        break;
                    }
                }
            }
            return Ok(());
        }
        let secondaries = self.secondaries();
        let ix = secondaries
            .iter()
            .find(|i| i.spec.id == index)
            .ok_or_else(|| EngineError::NoSuchIndex(format!("{} (id {index})", self.name())))?;
        ix.for_each(lower, upper, f);
        Ok(())
    }

    pub(crate) fn index_spec(&self, index: IndexId) -> Option<IndexSpec> {
        self.spec.read().index(index).cloned()
    }
}
