//! Transactions: reads, writes and the bookkeeping validation needs.
//!
//! A transaction reads at its snapshot (`read_ts`) without taking any lock.
//! A write claims the row's newest version by compare-and-swapping its own
//! marker into that version's `end` (first writer wins: a second writer that
//! sees the marker waits for the holder, and one that sees a commit newer
//! than its snapshot gets a retryable conflict, except under read
//! committed), then links a new version carrying its marker in `begin`.
//! Everything a transaction did is kept in `ops`, which serves as undo log
//! (abort, rollback to savepoint) and write set (commit, see `commit.rs`).
//! Repeatable read and serializable also keep the versions they read, and
//! serializable keeps the ranges it scanned, for validation at commit.

use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::Ordering::*;

use crossbeam_epoch::{self as epoch, Guard, Pointer, Shared};

use crate::engine::EngineInner;
use crate::error::{ConflictReason, EngineError, Result};
use crate::mvcc::{INFINITY, Row, Timestamp, TxnId, Version, is_marker, marker, marker_txn};
use crate::schema::{IndexId, PRIMARY};
use crate::table::{Table, index_key};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Isolation {
    /// Each statement reads the newest committed state (call
    /// [`Transaction::refresh_snapshot`] at statement start); no validation.
    ReadCommitted,
    /// One snapshot for the whole transaction; write-write conflicts only.
    Snapshot,
    /// Snapshot plus read stability: rows read must be unchanged at commit.
    RepeatableRead,
    /// Read stability plus phantom avoidance: scans are repeated at commit.
    Serializable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Durability {
    /// Acknowledged after the log record is on disk (group commit).
    Synchronous,
    /// Acknowledged at once; the log is flushed within a bounded interval.
    Lazy,
}

/// A condition on a conditional write (cf. RAMCloud's reject rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum PutCondition {
    Always,
    /// Fail if a row with this key is visible.
    Absent,
    /// Fail unless a row with this key is visible.
    Present,
    /// Fail unless the visible version is exactly this one.
    VersionIs(RowVersion),
}

/// The identity of a committed version: its begin timestamp. A version
/// written by the current transaction reports [`RowVersion::OWN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RowVersion(pub u64);

impl RowVersion {
    pub const OWN: RowVersion = RowVersion(u64::MAX);
}

/// Outcome of a conditional write whose condition failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum PutOutcome {
    Written,
    Rejected { current: Option<RowVersion> },
}

/// A key range over an index, in encoded key form (see `tuple.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct KeyRange {
    pub lower: Bound<Vec<u8>>,
    pub upper: Bound<Vec<u8>>,
}

impl KeyRange {
    pub fn all() -> Self {
        KeyRange { lower: Bound::Unbounded, upper: Bound::Unbounded }
    }
    pub fn point(key: Vec<u8>) -> Self {
        KeyRange { lower: Bound::Included(key.clone()), upper: Bound::Included(key) }
    }
    pub fn prefix(prefix: Vec<u8>) -> Self {
        let upper = match crate::tuple::prefix_end(&prefix) {
            Some(e) => Bound::Excluded(e),
            None => Bound::Unbounded,
        };
        KeyRange { lower: Bound::Included(prefix), upper }
    }
    pub(crate) fn bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (self.lower.as_ref().map(|v| v.as_slice()), self.upper.as_ref().map(|v| v.as_slice()))
    }
}

/// One write, as needed to undo it and to build the commit record.
pub(crate) struct WriteOp {
    pub table: Arc<Table>,
    pub row: Arc<Row>,
    /// The version this write created (0 for a delete). Addresses are
    /// `Version::addr` / `Shared::into_usize` values.
    pub new: usize,
    /// The version whose `end` this write claimed (null for an insert).
    pub claimed: usize,
    /// The row's head before this write.
    pub prev_head: usize,
}

pub(crate) struct ReadOp {
    /// Keeps the row (and so the version's chain) alive until validation.
    pub _row: Arc<Row>,
    pub version: usize,
}

pub(crate) struct ScanOp {
    pub table: Arc<Table>,
    pub index: IndexId,
    pub range: KeyRange,
}

/// A savepoint: undoing to it removes every later write.
#[derive(Debug, Clone, Copy)]
pub struct Savepoint(usize);

pub struct Transaction {
    pub(crate) engine: Arc<EngineInner>,
    pub(crate) slot: usize,
    pub(crate) id: TxnId,
    pub(crate) me: u64,
    pub(crate) isolation: Isolation,
    pub(crate) read_ts: Timestamp,
    pub(crate) durability: Durability,
    /// Whether a read-committed writer may wait for a row's holder (else
    /// [`EngineError::WouldBlock`]).
    pub(crate) may_wait: bool,
    /// A waiting writer gives up at this instant (the caller's statement
    /// timeout), if it comes before the engine's lock timeout.
    pub(crate) wait_deadline: Option<std::time::Instant>,
    pub(crate) ops: Vec<WriteOp>,
    pub(crate) reads: Vec<ReadOp>,
    pub(crate) scans: Vec<ScanOp>,
    pub(crate) ended: bool,
    /// Counted in the engine's writers (it has attempted a write).
    pub(crate) writer: bool,
}

// A transaction moves between threads (an event loop runs a session's
// statements where it pleases), and it is `Send` without help: the version
// addresses in `ops` and `reads` are plain `usize`s. They stay valid wherever
// it runs: each sits beside an `Arc` of its row, GC never frees a version
// visible to a registered snapshot nor one carrying a live transaction's
// marker, and no epoch guard is kept inside a transaction.
const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Transaction>();
};

impl Transaction {
    pub(crate) fn new(engine: Arc<EngineInner>, isolation: Isolation) -> Result<Self> {
        let (slot, id, read_ts) = engine.txns.begin(&engine.seq)?;
        let durability = engine.config.durability;
        Ok(Transaction {
            engine,
            slot,
            id,
            me: marker(id),
            isolation,
            read_ts,
            durability,
            may_wait: true,
            wait_deadline: None,
            ops: Vec::new(),
            reads: Vec::new(),
            scans: Vec::new(),
            ended: false,
            writer: false,
        })
    }

    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    pub fn read_ts(&self) -> Timestamp {
        self.read_ts
    }

    pub fn id(&self) -> TxnId {
        self.id
    }

    pub fn is_read_only(&self) -> bool {
        self.ops.is_empty()
    }

    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Forbids (or allows again) waiting for a row's holder: a caller on an
    /// event loop tries without waiting first and moves to a thread that may
    /// block only when a wait is needed.
    pub fn set_wait(&mut self, allowed: bool) {
        self.may_wait = allowed;
    }

    /// Bounds the waits for a row's holder (see [`EngineError::DeadlinePassed`]);
    /// None: only the engine's lock timeout bounds them.
    pub fn set_wait_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.wait_deadline = deadline;
    }

    pub fn set_durability(&mut self, d: Durability) {
        self.durability = d;
    }

    /// Moves a read-committed transaction to a fresh snapshot (call at the
    /// start of each statement). A no-op for the other levels.
    pub fn refresh_snapshot(&mut self) {
        if self.isolation == Isolation::ReadCommitted {
            self.read_ts = self.engine.txns.refresh_reader(self.slot, &self.engine.seq);
        }
    }

    fn check_active(&self) -> Result<()> {
        if self.ended { Err(EngineError::TransactionEnded) } else { Ok(()) }
    }

    /// Called before every write: the transaction counts as a writer from
    /// now on (a replica's apply waits for writers, not for readers).
    fn check_writable(&mut self) -> Result<()> {
        self.check_active()?;
        self.engine.check_writable()?;
        if !self.writer {
            self.writer = true;
            self.engine.writers.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(())
    }

    fn tracks_reads(&self) -> bool {
        matches!(self.isolation, Isolation::RepeatableRead | Isolation::Serializable)
    }

    fn record_scan(&mut self, table: &Arc<Table>, index: IndexId, range: KeyRange) {
        if self.isolation == Isolation::Serializable {
            self.scans.push(ScanOp { table: table.clone(), index, range });
        }
    }

    // ----- reads -----

    /// Reads the row with primary key `key` and hands its bytes to `f`.
    pub fn get_with<R>(&mut self, table: &Arc<Table>, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.check_active()?;
        let guard = epoch::pin();
        let (read_ts, me, track) = (self.read_ts, self.me, self.tracks_reads());
        let reads = &mut self.reads;
        let found = table.rows.peek_with(key, |_, row| {
            let v = row.visible(read_ts, me, &guard)?;
            if track && v.begin.load(Relaxed) != me {
                reads.push(ReadOp { _row: row.clone(), version: v.addr() });
            }
            Some(f(&v.data))
        });
        match found.flatten() {
            Some(r) => Ok(Some(r)),
            None => {
                self.record_scan(table, PRIMARY, KeyRange::point(key.to_vec()));
                Ok(None)
            }
        }
    }

    pub fn get(&mut self, table: &Arc<Table>, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(table, key, |d| d.to_vec())
    }

    /// Reads a row and the version that identifies it (for conditional writes).
    pub fn get_versioned(&mut self, table: &Arc<Table>, key: &[u8]) -> Result<Option<(Vec<u8>, RowVersion)>> {
        let me = self.me;
        self.get_with(table, key, |d| d.to_vec()).map(|r| {
            r.map(|d| {
                let guard = epoch::pin();
                let v = table
                    .lookup(key)
                    .and_then(|row| row.visible(self.read_ts, me, &guard).map(|v| v.begin.load(Acquire)))
                    .unwrap_or(0);
                (d, if is_marker(v) { RowVersion::OWN } else { RowVersion(v) })
            })
        })
    }

    /// Visits the visible rows whose key in `index` lies in `range`, in key
    /// order for ordered indexes. `f` returns false to stop early.
    pub fn scan(
        &mut self,
        table: &Arc<Table>,
        index: IndexId,
        range: &KeyRange,
        mut f: impl FnMut(&[u8]) -> bool,
    ) -> Result<()> {
        self.check_active()?;
        let spec = table
            .index_spec(index)
            .ok_or_else(|| EngineError::NoSuchIndex(format!("{} (id {index})", table.name())))?;
        let guard = epoch::pin();
        let (read_ts, me) = (self.read_ts, self.me);
        let (lower, upper) = range.bounds();
        let mut seen: Vec<(Arc<Row>, usize)> = Vec::new();
        let track = self.tracks_reads();
        table.for_each_candidate(index, lower, upper, |entry_key, row| {
            let Some(v) = row.visible(read_ts, me, &guard) else { return true };
            if index != PRIMARY {
                // The entry may be stale: check the visible version's key.
                match index_key(&spec.columns, &v.data) {
                    Ok((k, _)) if k == entry_key => {}
                    _ => return true,
                }
            }
            if track && v.begin.load(Relaxed) != me {
                seen.push((row.clone(), v.addr()));
            }
            f(&v.data)
        })?;
        for (row, v) in seen {
            self.reads.push(ReadOp { _row: row, version: v });
        }
        self.record_scan(table, index, range.clone());
        Ok(())
    }

    /// Collects a scan into a vector.
    pub fn scan_collect(&mut self, table: &Arc<Table>, index: IndexId, range: &KeyRange) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        self.scan(table, index, range, |r| {
            out.push(r.to_vec());
            true
        })?;
        Ok(out)
    }

    // ----- writes -----

    fn new_version(&self, data: &[u8]) -> crossbeam_epoch::Owned<Version> {
        self.engine.versions.add(1);
        Version::new(self.me, data)
    }

    /// Inserts a row; fails with a unique violation if its primary key is
    /// taken in the transaction's view or by a committed row.
    pub fn insert(&mut self, table: &Arc<Table>, data: Vec<u8>) -> Result<()> {
        self.check_writable()?;
        let key = table.primary_key(&data)?;
        let _ddl = table.ddl.read();
        let guard = epoch::pin();
        let mut new = self.new_version(&data);
        loop {
            let row = table.row_for_insert(&key, &guard);
            let head = row.load_head(&guard);
            if head.is_removed() {
                continue;
            }
            if let Some(h) = head.newest() {
                let begin = h.begin.load(Acquire);
                let end = h.end.load(Acquire);
                if begin == INFINITY {
                    // An aborting writer is unlinking this version; look again.
                    std::hint::spin_loop();
                    continue;
                }
                let rc = self.isolation == Isolation::ReadCommitted;
                if begin != self.me && (is_marker(begin) || (is_marker(end) && end != self.me)) {
                    // Wait for the holder, then look again: read committed
                    // whatever the holder's state, the other levels as
                    // `await_holder` says.
                    let marker = if is_marker(begin) { begin } else { end };
                    let waited = if rc { self.wait_for(marker_txn(marker)) } else { self.await_holder(marker) };
                    if let Err(e) = waited {
                        self.free_unpublished(new);
                        return Err(e);
                    }
                    continue;
                }
                let dead_to_me = if begin == self.me {
                    end == self.me
                } else if is_marker(begin) {
                    self.free_unpublished(new);
                    return Err(EngineError::conflict(ConflictReason::WriteWrite));
                } else if end == self.me {
                    true
                } else if end == INFINITY {
                    false
                } else if rc && !is_marker(end) {
                    true // deleted by a committed transaction: free for us
                } else if is_marker(end) || end > self.read_ts {
                    self.free_unpublished(new);
                    return Err(EngineError::conflict(ConflictReason::WriteWrite));
                } else {
                    true
                };
                if !dead_to_me {
                    self.free_unpublished(new);
                    if !is_marker(begin) && begin > self.read_ts && self.isolation != Isolation::ReadCommitted {
                        // The key was taken after our snapshot: like PostgreSQL
                        // at these levels, report a serialization failure.
                        return Err(EngineError::conflict(ConflictReason::WriteWrite));
                    }
                    return Err(EngineError::UniqueViolation {
                        table: table.name(),
                        index: table.spec().primary.name.clone(),
                    });
                }
            }
            new.next.store(head.ptr(), Relaxed);
            match row.head.compare_exchange(head.ptr(), new, AcqRel, Acquire, &guard) {
                Ok(published) => {
                    self.ops.push(WriteOp {
                        table: table.clone(),
                        row: row.clone(),
                        new: published.into_usize(),
                        claimed: 0,
                        prev_head: head.ptr().into_usize(),
                    });
                    // The version holds a copy of these bytes.
                    return table.index_new_version(&row, &data, self.me, &guard);
                }
                Err(e) => new = e.new,
            }
        }
    }

    fn free_unpublished(&self, v: crossbeam_epoch::Owned<Version>) {
        self.engine.versions.sub(1);
        drop(v);
    }

    /// Claims the newest version of `row` for an update or delete, and
    /// returns it with the head pointer it was loaded from. Returns None
    /// when the row has nothing to change (no version, or deleted).
    ///
    /// `latest == false` (snapshot semantics): the version must be the one
    /// our snapshot sees; anything newer is a write-write conflict, and a
    /// row held by another writer is waited for first (`await_holder`).
    /// `latest == true` (read committed): wait for a
    /// writer that holds the row, then claim the newest committed version
    /// even if it is newer than the statement's snapshot, as PostgreSQL does
    /// before it re-evaluates an UPDATE.
    fn claim<'g>(
        &self,
        row: &'g Row,
        latest: bool,
        guard: &'g Guard,
    ) -> Result<Option<(Shared<'g, Version>, &'g Version)>> {
        let conflict = || Err(EngineError::conflict(ConflictReason::WriteWrite));
        loop {
            let head = row.load_head(guard);
            if head.is_removed() {
                return Ok(None);
            }
            let Some(h) = head.newest() else { return Ok(None) };
            let begin = h.begin.load(Acquire);
            let end = h.end.load(Acquire);
            if begin == INFINITY {
                std::hint::spin_loop();
                continue;
            }
            if is_marker(begin) && begin != self.me {
                if !latest {
                    self.await_holder(begin)?;
                    continue;
                }
                if !self.may_build_on(begin) {
                    self.wait_for(marker_txn(begin))?;
                    // A failed log leaves a logged commit's markers in place.
                    self.engine.check_writable()?;
                    continue;
                }
                // Created by a commit on its way to disk: the newest
                // committed version, as far as a writer is concerned.
            }
            if !latest && !is_marker(begin) && begin > self.read_ts {
                return conflict();
            }
            if end == self.me {
                return Ok(None); // deleted by this transaction
            }
            if end != INFINITY {
                if is_marker(end) {
                    if !latest {
                        self.await_holder(end)?;
                        continue;
                    }
                    if !self.may_build_on(end) {
                        self.wait_for(marker_txn(end))?;
                        // A failed log leaves a logged commit's markers in place.
                        self.engine.check_writable()?;
                        continue;
                    }
                    // Replaced or deleted by a commit on its way to disk:
                    // as below for a committed one.
                } else if !latest {
                    // Deleted before our snapshot, or (a conflict) after it.
                    return if end > self.read_ts { conflict() } else { Ok(None) };
                }
                if row.load_head(guard).ptr() != head.ptr() {
                    // Not deleted but superseded: a writer replaced the
                    // version we loaded and committed meanwhile.
                    continue;
                }
                return Ok(None); // deleted by a committed transaction
            }
            if h.end.compare_exchange(INFINITY, self.me, AcqRel, Acquire).is_ok() {
                return Ok(Some((head.ptr(), h)));
            }
        }
    }

    /// Snapshot semantics meeting another writer's marker on the row to be
    /// written: like PostgreSQL at repeatable read and serializable, wait for
    /// a holder still at work and let the caller look again, so the writer
    /// fails only if the holder commits (its version is then newer than the
    /// snapshot) and goes on if it aborts. Failing at once instead lets
    /// writers of a hot row abort each other over and over while none of
    /// them commits. A holder whose commit is logged will commit: that is a
    /// conflict now.
    fn await_holder(&self, marker: u64) -> Result<()> {
        let holder = marker_txn(marker);
        if self.engine.txns.is_logged(holder) {
            return Err(EngineError::conflict(ConflictReason::WriteWrite));
        }
        self.wait_for(holder)?;
        // A failed log leaves a logged commit's markers in place.
        self.engine.check_writable()
    }

    /// Whether a read-committed writer that meets `holder`'s marker may go
    /// on without waiting: the holder's commit record is in an ordered log,
    /// so it commits unless the log fails, and then our later record fails
    /// with it. This is Hekaton's commit dependency, made free by the log's
    /// order: the writer reads the holder's version as the row's newest
    /// committed one (what it would read after waiting, as PostgreSQL's
    /// read committed does), and its own commit, being later in the log,
    /// becomes durable and visible only after the holder's. Without it,
    /// writers of a hot row would queue one log flush each.
    fn may_build_on(&self, holder: u64) -> bool {
        self.engine.builds_on_logged && self.engine.txns.is_logged(marker_txn(holder))
    }

    /// Links `data` as the new head of `row` over the version `head` we
    /// claimed, records the write and maintains the secondary indexes.
    fn install_update(
        &mut self,
        table: &Arc<Table>,
        row: &Arc<Row>,
        head: Shared<'_, Version>,
        data: Vec<u8>,
        guard: &Guard,
    ) -> Result<()> {
        let new = self.new_version(&data);
        new.next.store(head, Relaxed);
        // We hold the claim on the head, so nobody else can move it.
        let published = new.into_shared(guard);
        row.head.store(published, Release);
        // Record the write first: if a unique index rejects it below, the
        // statement's rollback must find the version to unlink.
        self.ops.push(WriteOp {
            table: table.clone(),
            row: row.clone(),
            new: published.into_usize(),
            claimed: head.into_usize(),
            prev_head: head.into_usize(),
        });
        // The version holds a copy of these bytes.
        table.index_new_version(row, &data, self.me, guard)?;
        Ok(())
    }

    /// Waits until transaction `other` has finished, detecting deadlocks
    /// (the youngest member of a waits-for cycle gives up) and giving up
    /// after the engine's lock timeout or the caller's deadline.
    ///
    /// The thread sleeps until the holder ends (its end wakes the thread
    /// through the transaction table's end waiters, as it wakes a
    /// [`RowWait`]'s task), waking every `WAIT_CHECK` meanwhile to look for a
    /// cycle and at its clocks: a waiter costs no CPU while it waits, however
    /// long the holder takes.
    fn wait_for(&self, other: TxnId) -> Result<()> {
        const WAIT_CHECK: std::time::Duration = std::time::Duration::from_millis(10);
        let txns = &self.engine.txns;
        if !self.may_wait {
            return if txns.is_active(other) { Err(EngineError::WouldBlock { holder: other }) } else { Ok(()) };
        }
        txns.set_waiting_for(self.slot, other);
        let started = std::time::Instant::now();
        let timeout = self.engine.config.lock_timeout;
        let waker = std::task::Waker::from(std::sync::Arc::new(ThreadWaker(std::thread::current())));
        let mut cx = std::task::Context::from_waker(&waker);
        let outcome = loop {
            if txns.poll_ended(other, &mut cx).is_ready() {
                break Ok(());
            }
            // The youngest member of a cycle gives up; the others keep waiting.
            if let Some(cycle) = txns.wait_cycle(self.id, other)
                && cycle.iter().max() == Some(&self.id)
            {
                break Err(EngineError::Deadlock);
            }
            let now = std::time::Instant::now();
            if now.duration_since(started) >= timeout {
                break Err(EngineError::LockTimeout(timeout));
            }
            if self.wait_deadline.is_some_and(|d| now >= d) {
                break Err(EngineError::DeadlinePassed);
            }
            std::thread::park_timeout(WAIT_CHECK);
        };
        txns.forget_end_waiter(other, &waker);
        txns.set_waiting_for(self.slot, 0);
        outcome
    }

    /// A future that waits, without a thread, for `holder` (from
    /// [`EngineError::WouldBlock`]) to end, with the same deadlock detection,
    /// lock timeout and deadline as a blocking wait. Poll it again now and
    /// then (say every 100 ms) while it is pending: deadlocks and timeouts
    /// are noticed when it is polled.
    pub fn row_wait(&self, holder: TxnId) -> RowWait {
        RowWait {
            engine: self.engine.clone(),
            slot: self.slot,
            me: self.id,
            holder,
            started: std::time::Instant::now(),
            deadline: self.wait_deadline,
        }
    }

    /// Updates the row with primary key `key` to what `f` makes of its
    /// current bytes; `f` returns None to leave the row alone (its predicate
    /// no longer holds). Under read committed, `f` sees the newest committed
    /// version, after waiting for a concurrent writer, so increments are
    /// never lost and never fail with a conflict; at the other levels it sees
    /// the snapshot's version and a newer one is a conflict.
    /// Returns whether a row was written.
    pub fn update_with(
        &mut self,
        table: &Arc<Table>,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> Option<Vec<u8>>,
    ) -> Result<bool> {
        self.check_writable()?;
        let _ddl = table.ddl.read();
        let guard = epoch::pin();
        let Some(row) = table.lookup(key) else { return Ok(false) };
        let claimed = self.claim(&row, self.isolation == Isolation::ReadCommitted, &guard)?;
        let Some((head, current)) = claimed else { return Ok(false) };
        let Some(data) = f(&current.data) else {
            // Release the claim: nothing was written.
            current.end.store(INFINITY, Release);
            return Ok(false);
        };
        if table.primary_key(&data)? != key {
            current.end.store(INFINITY, Release);
            return Err(EngineError::InvalidSchema("an update may not change the primary key".into()));
        }
        self.install_update(table, &row, head, data, &guard)?;
        Ok(true)
    }

    /// Replaces the row with the same primary key as `data`. Returns false
    /// when no such row is visible.
    pub fn update(&mut self, table: &Arc<Table>, data: Vec<u8>) -> Result<bool> {
        self.check_writable()?;
        let key = table.primary_key(&data)?;
        let _ddl = table.ddl.read();
        let guard = epoch::pin();
        let Some(row) = table.lookup(&key) else { return Ok(false) };
        let Some((head, _)) = self.claim(&row, false, &guard)? else { return Ok(false) };
        self.install_update(table, &row, head, data, &guard)?;
        Ok(true)
    }

    /// Deletes the row with primary key `key`. Returns false when no such
    /// row is visible.
    pub fn delete(&mut self, table: &Arc<Table>, key: &[u8]) -> Result<bool> {
        self.check_writable()?;
        let guard = epoch::pin();
        let Some(row) = table.lookup(key) else { return Ok(false) };
        let claimed = self.claim(&row, self.isolation == Isolation::ReadCommitted, &guard)?;
        let Some((head, _)) = claimed else { return Ok(false) };
        let head = head.into_usize();
        self.push_delete(table, row, head);
        Ok(true)
    }

    /// Records the deletion of a claimed row (`head`: its newest version).
    fn push_delete(&mut self, table: &Arc<Table>, row: Arc<Row>, head: usize) {
        self.ops.push(WriteOp { table: table.clone(), row, new: 0, claimed: head, prev_head: head });
    }

    /// Writes `data` if `cond` holds for the row with the same primary key:
    /// the versioned key-value write the SQL layer builds on.
    pub fn put(&mut self, table: &Arc<Table>, data: Vec<u8>, cond: PutCondition) -> Result<PutOutcome> {
        self.check_writable()?;
        let key = table.primary_key(&data)?;
        let current = self.get_versioned(table, &key)?.map(|(_, v)| v);
        let ok = match cond {
            PutCondition::Always => true,
            PutCondition::Absent => current.is_none(),
            PutCondition::Present => current.is_some(),
            PutCondition::VersionIs(v) => current == Some(v),
        };
        if !ok {
            return Ok(PutOutcome::Rejected { current });
        }
        match current {
            Some(_) => {
                self.update(table, data)?;
            }
            None => self.insert(table, data)?,
        }
        Ok(PutOutcome::Written)
    }

    /// Deletes the row with primary key `key` if `cond` holds for it in the
    /// transaction's view (`Always` and `Present`: the row exists;
    /// `VersionIs(v)`: it is at version `v`; `Absent` never deletes). A row
    /// changed by a concurrent transaction since the view was taken is a
    /// conflict, at every isolation level: the condition was checked
    /// against the view.
    pub fn delete_if(&mut self, table: &Arc<Table>, key: &[u8], cond: PutCondition) -> Result<PutOutcome> {
        self.check_writable()?;
        let current = self.get_versioned(table, key)?.map(|(_, v)| v);
        let ok = match cond {
            PutCondition::Always | PutCondition::Present => current.is_some(),
            PutCondition::Absent => false,
            PutCondition::VersionIs(v) => current == Some(v),
        };
        if !ok {
            return Ok(PutOutcome::Rejected { current });
        }
        let guard = epoch::pin();
        let rejected = Ok(PutOutcome::Rejected { current: None });
        let Some(row) = table.lookup(key) else { return rejected };
        let Some((head, _)) = self.claim(&row, false, &guard)? else { return rejected };
        let head = head.into_usize();
        self.push_delete(table, row, head);
        Ok(PutOutcome::Written)
    }

    // ----- savepoints and abort -----

    pub fn savepoint(&self) -> Savepoint {
        Savepoint(self.ops.len())
    }

    /// Undoes every write made after `sp`.
    pub fn rollback_to(&mut self, sp: Savepoint) -> Result<()> {
        self.check_active()?;
        self.undo_from(sp.0);
        Ok(())
    }

    pub(crate) fn undo_from(&mut self, start: usize) {
        let guard = epoch::pin();
        let undone = self.ops.len().saturating_sub(start);
        while self.ops.len() > start {
            let op = self.ops.pop().expect("op");
            if op.new != 0 {
                // SAFETY: `op.new` and `op.prev_head` are `into_usize` values
                // of the version this write linked and of the head it was
                // linked over (null for none). Ours is still allocated and
                // still the row's head: it is uncommitted, so GC does not
                // cut it; nobody links above it unless our commit is logged,
                // and a logged commit is not undone; our later writes to
                // the row were undone first (newest first); and `op.row`
                // keeps the row's drop away. `prev` is still linked under
                // ours (GC keeps the version under an uncommitted one), so
                // putting it back as the head publishes a live version.
                let (new, prev) =
                    unsafe { (Shared::<Version>::from_usize(op.new), Shared::<Version>::from_usize(op.prev_head)) };
                // SAFETY: `new` is allocated (see above) and `guard` is held.
                let v = unsafe { new.deref() };
                v.begin.store(INFINITY, Release);
                op.row.head.store(prev, Release);
                op.table.unindex(&op.row, &[v], &guard);
                self.engine.versions.sub(1);
                // SAFETY: `new` is now unreachable from the row (the head
                // skips it) and freed only here: only its writer frees an
                // uncommitted version, and this op is gone. Readers that
                // reached it hold guards the epoch collector waits for.
                unsafe { guard.defer_destroy(new) };
                if prev.is_null() {
                    // A row we created and now leave empty: let GC remove it.
                    self.engine
                        .gc
                        .push(self.slot, crate::gc::GcItem { table: op.table.clone(), row: op.row.clone(), ts: 0 });
                }
            }
            if op.claimed != 0 {
                // SAFETY: `op.claimed` is the address of the version whose
                // `end` this write set to our marker, and it is allocated:
                // `op.row` keeps the row's drop away, and GC never cuts it
                // while it carries our marker (GC cuts below X, the newest
                // committed version at or under its horizon, or X itself
                // once X's end is committed; only our uncommitted versions
                // lie above the claimed one, so X is it or older).
                unsafe { Version::at(op.claimed) }.end.store(INFINITY, Release);
            }
        }
        if undone > 64 {
            // Hand the unlinked versions to the global queue now, so that
            // any thread's next pin can free them: a large rollback's
            // memory must not wait in this thread's bag.
            guard.flush();
        }
        // Reads of versions we just unlinked are meaningless now.
        let me = self.me;
        self.reads.retain(|r| {
            // SAFETY: as in validation (`commit.rs`): `r` holds the row, and
            // the version, committed and visible to our still registered
            // snapshot, is one GC keeps.
            unsafe { Version::at(r.version) }.begin.load(Relaxed) != me
        });
    }

    /// Abandons the transaction, undoing its writes. Also done on drop.
    pub fn abort(mut self) {
        self.finish_abort();
    }

    pub(crate) fn finish_abort(&mut self) {
        if self.ended {
            return;
        }
        self.undo_from(0);
        self.end();
    }

    pub(crate) fn end(&mut self) {
        if self.writer {
            self.writer = false;
            self.engine.writers.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
        self.ended = true;
        self.reads.clear();
        self.scans.clear();
        self.engine.txns.end(self.slot);
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        self.finish_abort();
    }
}

/// See [`Transaction::row_wait`]. While it exists, the waiting transaction
/// is recorded as waiting for the holder, so that a cycle of waiters (some
/// waiting on threads, some as futures) is found by whichever member looks.
pub struct RowWait {
    engine: Arc<EngineInner>,
    slot: usize,
    me: TxnId,
    holder: TxnId,
    started: std::time::Instant,
    deadline: Option<std::time::Instant>,
}

impl RowWait {
    fn set_waiting(&self, other: TxnId) {
        // Only while the waiting transaction still owns its slot.
        if self.engine.txns.is_active(self.me) {
            self.engine.txns.set_waiting_for(self.slot, other);
        }
    }
}

impl std::future::Future for RowWait {
    type Output = Result<()>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<()>> {
        use std::task::Poll;
        let txns = &self.engine.txns;
        self.set_waiting(self.holder);
        let outcome = if txns.poll_ended(self.holder, cx).is_ready() {
            Ok(())
        } else if let Some(cycle) = txns.wait_cycle(self.me, self.holder)
            && cycle.iter().max() == Some(&self.me)
        {
            Err(EngineError::Deadlock)
        } else if self.started.elapsed() >= self.engine.config.lock_timeout {
            Err(EngineError::LockTimeout(self.engine.config.lock_timeout))
        } else if self.deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            Err(EngineError::DeadlinePassed)
        } else {
            return Poll::Pending;
        };
        self.set_waiting(0);
        Poll::Ready(outcome)
    }
}

impl Drop for RowWait {
    fn drop(&mut self) {
        self.set_waiting(0);
    }
}

/// Wakes a thread parked in a blocking wait for a row's holder.
struct ThreadWaker(std::thread::Thread);

impl std::task::Wake for ThreadWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.unpark();
    }
}

/// Does `v` (a version this transaction read) still stand at commit time
/// `ts`? Used by repeatable-read and serializable validation.
pub(crate) fn read_still_valid(engine: &EngineInner, v: &Version, me: u64, ts: Timestamp) -> bool {
    loop {
        let end = v.end.load(Acquire);
        if end == INFINITY || end == me {
            return true;
        }
        if !is_marker(end) {
            return end > ts;
        }
        match engine.txns.commit_ts_of(crate::mvcc::marker_txn(end)) {
            Some(c) => return c == crate::clock::NOT_COMMITTING || c > ts,
            None => continue, // the owner just finished: read its final stamp
        }
    }
}

/// Did any version of `row` change between `read_ts` and `ts` (by another
/// transaction)? Used by serializable phantom validation.
pub(crate) fn changed_since(
    engine: &EngineInner,
    row: &Row,
    me: u64,
    read_ts: Timestamp,
    ts: Timestamp,
    guard: &Guard,
) -> bool {
    let in_window = |stamp: u64| -> bool {
        if stamp == INFINITY || stamp == me {
            return false;
        }
        if is_marker(stamp) {
            return match engine.txns.commit_ts_of(crate::mvcc::marker_txn(stamp)) {
                Some(c) => c != crate::clock::NOT_COMMITTING && c < ts,
                // Finished meanwhile: be safe.
                None => true,
            };
        }
        stamp > read_ts && stamp < ts
    };
    // A removed row has no versions.
    for v in row.versions(guard) {
        let begin = v.begin.load(Acquire);
        if in_window(begin) || in_window(v.end.load(Acquire)) {
            return true;
        }
        if !is_marker(begin) && begin <= read_ts {
            return false;
        }
    }
    false
}
