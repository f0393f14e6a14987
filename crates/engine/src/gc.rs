//! Cooperative garbage collection.
//!
//! Committing transactions hand the rows they changed to a queue, stamped
//! with their commit timestamp, and then collect a small batch themselves
//! (Hekaton's cooperative GC: no dedicated collector thread whose speed
//! could fall behind the workload). A queued row is collected once its
//! timestamp is at or below the *horizon*, the oldest snapshot any
//! transaction may still read: then the version written at that timestamp is
//! visible to everyone, every older version of the row is garbage, and if the
//! row was deleted, the row itself leaves its indexes.
//!
//! Versions are unlinked with atomic stores and freed through
//! `crossbeam-epoch` once no reader can still be walking them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::*};

use crossbeam_epoch::{self as epoch, Guard, Shared};
use crossbeam_queue::SegQueue;

use crate::chain::Detached;
use crate::engine::EngineInner;
use crate::mvcc::{INFINITY, REMOVED_TAG, Row, Timestamp, Version, is_marker};
use crate::table::Table;

pub(crate) struct GcItem {
    pub table: Arc<Table>,
    pub row: Arc<Row>,
    pub ts: Timestamp,
}

/// One queue per group of transaction slots: a thread (which keeps its slot)
/// mostly collects the rows it wrote itself, while they are still in its cache,
/// and threads do not contend on one queue.
const SHARDS: usize = 16;

#[repr(align(64))]
#[derive(Default)]
struct Shard {
    queue: SegQueue<GcItem>,
    calls_since_refresh: AtomicU64,
}

pub(crate) struct Gc {
    shards: Box<[Shard]>,
    horizon: AtomicU64,
    pub versions_freed: AtomicU64,
    pub rows_removed: AtomicU64,
}

impl Default for Gc {
    fn default() -> Self {
        Gc {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            horizon: AtomicU64::new(0),
            versions_freed: AtomicU64::new(0),
            rows_removed: AtomicU64::new(0),
        }
    }
}

fn is_committed(begin: Timestamp) -> bool {
    !is_marker(begin) && begin != INFINITY
}

/// How many commits may pass before the horizon is recomputed (it scans the
/// transaction table, so it is not done on every commit).
const REFRESH_EVERY: u64 = 64;

impl Gc {
    pub fn push(&self, slot: usize, item: GcItem) {
        self.shards[slot % SHARDS].queue.push(item);
    }

    pub fn pending(&self) -> usize {
        self.shards.iter().map(|s| s.queue.len()).sum()
    }

    /// Collects up to `budget` queued rows whose time has come, from the
    /// caller's shard first, then (if that one is empty) from the next one.
    pub fn work(&self, engine: &EngineInner, slot: usize, budget: usize) {
        let mut horizon = self.horizon.load(Relaxed);
        let mut refreshed = false;
        let guard = epoch::pin();
        let mut left = budget;
        for step in 0..2 {
            let shard = &self.shards[(slot + step) % SHARDS];
            while left > 0 {
                let Some(item) = shard.queue.pop() else { break };
                left -= 1;
                if item.ts > horizon {
                    let due = shard.calls_since_refresh.fetch_add(1, Relaxed) >= REFRESH_EVERY;
                    if !refreshed && due {
                        shard.calls_since_refresh.store(0, Relaxed);
                        horizon = self.refresh(engine);
                        refreshed = true;
                    }
                    if item.ts > horizon {
                        shard.queue.push(item);
                        return;
                    }
                }
                if !self.collect_row(engine, &item, horizon, &guard) {
                    shard.queue.push(item);
                }
            }
            if left == 0 {
                return;
            }
        }
    }

    fn refresh(&self, engine: &EngineInner) -> Timestamp {
        let h = engine.txns.horizon(&engine.seq);
        self.horizon.fetch_max(h, Relaxed);
        h
    }

    /// Collects everything that can be collected now (VACUUM, tests).
    pub fn drain(&self, engine: &EngineInner) {
        let horizon = self.refresh(engine);
        let guard = epoch::pin();
        for shard in self.shards.iter() {
            for _ in 0..shard.queue.len() {
                let Some(item) = shard.queue.pop() else { break };
                if item.ts > horizon || !self.collect_row(engine, &item, horizon, &guard) {
                    shard.queue.push(item);
                }
            }
        }
    }

    /// Cuts the versions of one row that no snapshot at or after `horizon`
    /// can see. Returns false if another collector holds the row.
    fn collect_row(&self, engine: &EngineInner, item: &GcItem, horizon: Timestamp, guard: &Guard) -> bool {
        let row = &item.row;
        if row.gc_busy.swap(true, Acquire) {
            return false;
        }
        let head = row.load_head(guard);
        if head.ptr().is_null() && !head.is_removed() {
            // An empty row (its only insert was rolled back).
            let removed = Shared::null().with_tag(REMOVED_TAG);
            if row.head.compare_exchange(head.ptr(), removed, AcqRel, Acquire, guard).is_ok() {
                item.table.remove_row(row);
                self.rows_removed.fetch_add(1, Relaxed);
            }
        } else if !head.is_removed() {
            // Find X, the newest version that every snapshot >= horizon reaches.
            let mut prev: Option<&Version> = None;
            let mut found = None;
            for v in head.versions() {
                let b = v.begin.load(Acquire);
                if !is_marker(b) && b != INFINITY && b <= horizon {
                    found = Some(v);
                    break;
                }
                prev = Some(v);
            }
            if let Some(x) = found {
                let e = x.end.load(Acquire);
                let x_dead = !is_marker(e) && e != INFINITY && e <= horizon;
                let cut: Shared<'_, Version> = match (x_dead, prev) {
                    (true, None) => {
                        // The whole row is dead: tag it removed so that
                        // inserters start a fresh row, then unlink it.
                        let removed = Shared::null().with_tag(REMOVED_TAG);
                        if row.head.compare_exchange(head.ptr(), removed, AcqRel, Acquire, guard).is_ok() {
                            item.table.remove_row(row);
                            self.rows_removed.fetch_add(1, Relaxed);
                            head.ptr()
                        } else {
                            Shared::null()
                        }
                    }
                    // Versions above X that are still uncommitted may be
                    // rolled back, which makes X the head again: keep it.
                    (true, Some(p)) if is_committed(p.begin.load(Acquire)) => {
                        p.next.swap(Shared::null(), AcqRel, guard)
                    }
                    (true, Some(_)) => Shared::null(),
                    (false, _) => x.next.swap(Shared::null(), AcqRel, guard),
                };
                // SAFETY: `cut` is null or what the compare-and-swap of the
                // head or the swap of the `next` of X or p (committed, so
                // still linked: only GC unlinks committed versions) just
                // returned under `guard`. The chain is ours alone to free:
                // `gc_busy` keeps other collectors off this row, and the
                // only other party that frees versions, an aborting writer,
                // frees just its own version while it is the head with
                // nothing built on it (only a logged commit's version is
                // built on, and that is never rolled back), whereas what is
                // cut here is X, committed, or what lies below X.
                let detached = unsafe { Detached::cut(cut, guard) };
                if !detached.is_empty() {
                    if item.table.has_secondaries() {
                        let dropped: Vec<&Version> = detached.versions().collect();
                        item.table.unindex(row, &dropped, guard);
                    }
                    let n = detached.defer_free();
                    engine.versions.sub(n as i64);
                    self.versions_freed.fetch_add(n as u64, Relaxed);
                }
            }
        }
        row.gc_busy.store(false, Release);
        true
    }
}
