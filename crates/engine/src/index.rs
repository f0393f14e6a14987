//! Secondary indexes: maps from an index key to the rows whose versions carry it.
//!
//! An index entry points at a [`Row`] (a primary-key history), not at a
//! version. A row whose versions carry several keys (because an update changed
//! an indexed column) has an entry for each; readers re-check the key of the
//! version they see, so a stale entry costs a lookup, never a wrong answer.
//! Entries are added before a version is published and removed by GC (or by
//! abort) once no version of the row carries the key any more.
//!
//! * Ordered indexes are a lock-free skip list keyed by `index key ‖ primary
//!   key`, which makes every entry distinct and keeps a range scan in key order.
//! * Hash indexes are `scc::HashIndex` maps from the index key to the set of
//!   rows: reads are lock-free; writers lock one bucket.

use std::ops::Bound;
use std::sync::Arc;

use crossbeam_skiplist::SkipMap;
use scc::HashIndex;

/// Keys are short byte strings; foldhash is several times faster than SipHash
/// on them and still seeded per process.
pub(crate) type KeyHasher = foldhash::fast::RandomState;

use crate::key::InlineKey;
use crate::mvcc::Row;
use crate::schema::{IndexKind, IndexSpec};
use crate::tuple::prefix_end;

/// The rows sharing one key in a hash index (copied on write).
type RowSet = Arc<[Arc<Row>]>;

pub(crate) enum IndexStore {
    Hash(HashIndex<InlineKey, RowSet, KeyHasher>),
    Ordered(Box<SkipMap<Box<[u8]>, Arc<Row>>>),
}

pub struct Index {
    pub spec: IndexSpec,
    pub(crate) store: IndexStore,
}

impl Index {
    pub fn new(spec: IndexSpec) -> Self {
        let store = match spec.kind {
            IndexKind::Hash => IndexStore::Hash(HashIndex::with_hasher(KeyHasher::default())),
            IndexKind::Ordered => IndexStore::Ordered(Box::new(SkipMap::new())),
        };
        Index { spec, store }
    }

    fn entry_key(key: &[u8], row: &Row) -> Box<[u8]> {
        let mut k = Vec::with_capacity(key.len() + row.key.len());
        k.extend_from_slice(key);
        k.extend_from_slice(&row.key);
        k.into_boxed_slice()
    }

    /// Adds an entry; adding an existing entry is a no-op.
    pub fn add(&self, key: &[u8], row: &Arc<Row>) {
        match &self.store {
            IndexStore::Ordered(map) => {
                map.get_or_insert(Self::entry_key(key, row), row.clone());
            }
            IndexStore::Hash(map) => match map.entry_sync(key.into()) {
                scc::hash_index::Entry::Occupied(mut e) => {
                    if !e.get().iter().any(|r| Arc::ptr_eq(r, row)) {
                        let mut rows: Vec<Arc<Row>> = e.get().to_vec();
                        rows.push(row.clone());
                        e.update(rows.into());
                    }
                }
                scc::hash_index::Entry::Vacant(e) => {
                    e.insert_entry(Arc::from(vec![row.clone()]));
                }
            },
        }
    }

    pub fn remove(&self, key: &[u8], row: &Arc<Row>) {
        match &self.store {
            IndexStore::Ordered(map) => {
                if let Some(e) = map.get(&*Self::entry_key(key, row))
                    && Arc::ptr_eq(e.value(), row)
                {
                    e.remove();
                }
            }
            IndexStore::Hash(map) => {
                if let scc::hash_index::Entry::Occupied(mut e) = map.entry_sync(key.into()) {
                    if !e.get().iter().any(|r| Arc::ptr_eq(r, row)) {
                        return;
                    }
                    let rows: Vec<Arc<Row>> = e.get().iter().filter(|r| !Arc::ptr_eq(r, row)).cloned().collect();
                    if rows.is_empty() {
                        e.remove_entry();
                    } else {
                        e.update(rows.into());
                    }
                }
            }
        }
    }

    /// Calls `f(entry key, row)` for candidate rows whose entry key lies in
    /// the range, stopping when `f` returns false. For hash indexes only a
    /// single-key range is answered by lookup; other ranges visit every entry.
    pub fn for_each(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>, mut f: impl FnMut(&[u8], &Arc<Row>) -> bool) {
        match &self.store {
            IndexStore::Ordered(map) => {
                // Entry keys are `key ‖ pk`: translate bounds on the key.
                let lo: Bound<Vec<u8>> = match lower {
                    Bound::Included(k) => Bound::Included(k.to_vec()),
                    Bound::Excluded(k) => match prefix_end(k) {
                        Some(e) => Bound::Included(e),
                        None => return,
                    },
                    Bound::Unbounded => Bound::Unbounded,
                };
                let hi: Bound<Vec<u8>> = match upper {
                    Bound::Included(k) => match prefix_end(k) {
                        Some(e) => Bound::Excluded(e),
                        None => Bound::Unbounded,
                    },
                    Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
                    Bound::Unbounded => Bound::Unbounded,
                };
                let range = (lo.as_ref().map(|v| v.as_slice()), hi.as_ref().map(|v| v.as_slice()));
                for e in map.range::<[u8], _>(range) {
                    let row = e.value();
                    let key = &e.key()[..e.key().len() - row.key.len()];
                    if !f(key, row) {
                        return;
                    }
                }
            }
            IndexStore::Hash(map) => {
                if let (Bound::Included(a), Bound::Included(b)) = (lower, upper)
                    && a == b
                {
                    let rows = map.peek_with(a, |_, v| v.clone());
                    for row in rows.iter().flat_map(|r| r.iter()) {
                        if !f(a, row) {
                            return;
                        }
                    }
                    return;
                }
                let guard = scc::Guard::new();
                for (k, rows) in map.iter(&guard) {
                    if !in_range(k, lower, upper) {
                        continue;
                    }
                    for row in rows.iter() {
                        if !f(k, row) {
                            return;
                        }
                    }
                }
            }
        }
    }

    pub fn entries(&self) -> usize {
        match &self.store {
            IndexStore::Ordered(m) => m.len(),
            IndexStore::Hash(m) => {
                let guard = scc::Guard::new();
                m.iter(&guard).map(|(_, v)| v.len()).sum()
            }
        }
    }
}

pub fn in_range(k: &[u8], lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> bool {
    (match lower {
        Bound::Included(l) => k >= l,
        Bound::Excluded(l) => k > l,
        Bound::Unbounded => true,
    }) && (match upper {
        Bound::Included(u) => k <= u,
        Bound::Excluded(u) => k < u,
        Bound::Unbounded => true,
    })
}
