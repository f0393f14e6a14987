//! Time: the commit sequencer and the table of active transactions.
//!
//! One atomic counter hands out commit timestamps: it is the engine's single
//! serialization point. Timestamps are handed out before validation, but a
//! transaction's effects only become readable once the *visible watermark*
//! passes its timestamp, and the watermark passes `t` only after every
//! transaction with a timestamp `<= t` has finished (stamped its versions and,
//! for synchronous durability, reached the disk). New transactions read at the
//! watermark. Two consequences carry the whole design:
//!
//! * readers never block and never need Hekaton's commit dependencies: any
//!   marker a reader meets belongs to a change in its future;
//! * readers never see data that is not yet durable under synchronous commit.
//!
//! Writers are another matter: with an ordered log a read-committed writer
//! builds on a commit that is logged but not yet durable (the slot's
//! `logged` flag, see `Transaction::claim`) — a commit dependency that needs
//! no tracking, because the log's order makes the dependent durable only
//! after, and fail together with, the commit it built on.
//!
//! Finished timestamps are recorded in a ring; whoever finishes advances the
//! watermark over the contiguous finished prefix with compare-and-swap.
//!
//! The transaction table has a fixed number of cache-line-padded slots. A slot
//! holds the transaction's id (its low bits are the slot number, so a marker
//! leads straight to its owner), its read time (for the GC horizon) and its
//! commit timestamp (for validation against in-flight writers).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::*};

use crate::error::{EngineError, Result};
use crate::mvcc::{Timestamp, TxnId};
use crate::waiters::Waiters;

const RING: usize = 1 << 16;

pub struct Sequencer {
    clock: AtomicU64,
    visible: AtomicU64,
    done: Box<[AtomicU64]>,
    /// Tasks waiting for the watermark ([`Sequencer::poll_visible`]).
    waiters: Waiters,
}

impl Sequencer {
    pub fn new(start: Timestamp) -> Self {
        let done: Box<[AtomicU64]> = (0..RING).map(|_| AtomicU64::new(0)).collect();
        Sequencer { clock: AtomicU64::new(start), visible: AtomicU64::new(start), done, waiters: Waiters::default() }
    }

    /// Restarts the clock after recovery (no transaction may be running).
    pub fn reset(&self, ts: Timestamp) {
        self.clock.store(ts, SeqCst);
        self.visible.store(ts, SeqCst);
    }

    /// The read time for a new snapshot.
    #[inline]
    pub fn visible(&self) -> Timestamp {
        self.visible.load(SeqCst)
    }

    /// The last timestamp handed out.
    pub fn last_assigned(&self) -> Timestamp {
        self.clock.load(SeqCst)
    }

    pub fn assign(&self) -> Timestamp {
        let ts = self.clock.fetch_add(1, SeqCst) + 1;
        // The ring must not lap the watermark; in practice it never comes close.
        while ts - self.visible.load(Acquire) >= RING as u64 {
            std::thread::yield_now();
        }
        ts
    }

    /// Marks `ts` finished (committed and stamped, or aborted) and advances
    /// the watermark as far as the finished prefix allows.
    pub fn finish(&self, ts: Timestamp) {
        self.done[ts as usize % RING].store(ts, SeqCst);
        let reached = loop {
            let v = self.visible.load(SeqCst);
            let next = v + 1;
            if self.done[next as usize % RING].load(SeqCst) != next {
                break v;
            }
            let _ = self.visible.compare_exchange(v, next, SeqCst, SeqCst);
        };
        self.waiters.reached(reached);
    }

    /// Whether `ts` is readable by new transactions; if not, `cx`'s waker is
    /// woken when it is (by whoever moves the watermark past it).
    pub fn poll_visible(&self, ts: Timestamp, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.visible.load(SeqCst) >= ts {
            return std::task::Poll::Ready(());
        }
        self.waiters.register(ts, cx.waker());
        if self.visible.load(SeqCst) >= ts { std::task::Poll::Ready(()) } else { std::task::Poll::Pending }
    }

    /// Waits until `ts` is readable by new transactions (so that a client
    /// that is told "committed" sees its write in its next transaction).
    pub fn wait_visible(&self, ts: Timestamp) {
        let mut backoff = Backoff::default();
        while self.visible.load(Acquire) < ts {
            backoff.snooze();
        }
    }
}

/// Waiting that starts cheap and gets polite: spin briefly (the wait is
/// usually a few hundred nanoseconds), then yield, then sleep.
#[derive(Default)]
pub struct Backoff {
    spins: u32,
}

impl Backoff {
    pub fn snooze(&mut self) {
        self.spins = self.spins.saturating_add(1);
        if self.spins < 64 {
            std::hint::spin_loop();
        } else if self.spins < 256 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }
}

/// Slot states for `commit_ts`.
pub const NOT_COMMITTING: u64 = 0;
/// Between announcing the commit and receiving the timestamp (a few instructions).
pub const ASSIGNING: u64 = u64::MAX;
const NO_READER: u64 = u64::MAX;

#[repr(align(64))]
struct Slot {
    id: AtomicU64,
    /// How many transactions have used this slot: makes ids unique without
    /// a shared counter that every core would fight over.
    generation: AtomicU64,
    read_ts: AtomicU64,
    commit_ts: AtomicU64,
    /// The transaction this one is waiting for (read committed writers wait
    /// for a row's holder), or 0.
    waiting_for: AtomicU64,
    /// The slot's transaction id once its commit record is in an ordered
    /// log (its outcome can no longer be an abort of its own), else 0.
    logged: AtomicU64,
}

pub const SLOT_BITS: u32 = 10;
pub const MAX_ACTIVE_TXNS: usize = 1 << SLOT_BITS;

pub struct TxnTable {
    slots: Box<[Slot]>,
    /// No snapshot older than this may be registered (see `register_reader`).
    gc_horizon: AtomicU64,
    /// One past the highest slot ever claimed: scans stop here.
    high_water: std::sync::atomic::AtomicUsize,
    /// Tasks waiting for a transaction to end ([`TxnTable::poll_ended`]).
    end_waiters: Waiters,
}

thread_local! {
    static SLOT_HINT: Cell<usize> = const { Cell::new(usize::MAX) };
}

impl Default for TxnTable {
    fn default() -> Self {
        Self::new()
    }
}

impl TxnTable {
    pub fn new() -> Self {
        let slots = (0..MAX_ACTIVE_TXNS)
            .map(|_| Slot {
                id: AtomicU64::new(0),
                generation: AtomicU64::new(0),
                read_ts: AtomicU64::new(NO_READER),
                commit_ts: AtomicU64::new(0),
                waiting_for: AtomicU64::new(0),
                logged: AtomicU64::new(0),
            })
            .collect();
        TxnTable {
            slots,
            gc_horizon: AtomicU64::new(0),
            high_water: std::sync::atomic::AtomicUsize::new(0),
            end_waiters: Waiters::default(),
        }
    }

    /// Claims a slot and registers a reader at the sequencer's watermark.
    /// Returns (slot, txn id, read time).
    pub fn begin(&self, seq: &Sequencer) -> Result<(usize, TxnId, Timestamp)> {
        let start = SLOT_HINT.with(|h| {
            // Start at the bottom so that used slots stay dense and the GC
            // horizon scan stays short; after the first claim each thread
            // keeps returning to its own slot.
            if h.get() == usize::MAX {
                h.set(0);
            }
            h.get()
        });
        for probe in 0..MAX_ACTIVE_TXNS {
            let i = (start + probe) % MAX_ACTIVE_TXNS;
            let slot = &self.slots[i];
            if slot.id.load(Relaxed) != 0 {
                continue;
            }
            // Claim with a placeholder, then publish the real id.
            if slot.id.compare_exchange(0, u64::MAX, Acquire, Relaxed).is_ok() {
                if self.high_water.load(Relaxed) <= i {
                    self.high_water.fetch_max(i + 1, SeqCst);
                }
                let generation = slot.generation.fetch_add(1, Relaxed) + 1;
                let id = ((generation << SLOT_BITS) | i as u64) & !crate::mvcc::MARKER_BIT;
                slot.id.store(id, SeqCst);
                if probe != 0 {
                    SLOT_HINT.with(|h| h.set(i));
                }
                slot.commit_ts.store(NOT_COMMITTING, SeqCst);
                let read_ts = self.register_reader(i, seq);
                return Ok((i, id, read_ts));
            }
        }
        Err(EngineError::TooManyTransactions(MAX_ACTIVE_TXNS))
    }

    /// Publishes a snapshot for slot `i` so GC keeps what it needs. The
    /// store/load pair with `horizon` is a Dekker handshake: either GC sees
    /// our read time, or we see GC's newer horizon and take a newer snapshot.
    fn register_reader(&self, i: usize, seq: &Sequencer) -> Timestamp {
        loop {
            let ts = seq.visible();
            self.slots[i].read_ts.store(ts, SeqCst);
            if ts >= self.gc_horizon.load(SeqCst) {
                return ts;
            }
        }
    }

    /// A newer snapshot for a read-committed statement.
    pub fn refresh_reader(&self, i: usize, seq: &Sequencer) -> Timestamp {
        self.register_reader(i, seq)
    }

    pub fn end(&self, i: usize) {
        let slot = &self.slots[i];
        slot.read_ts.store(NO_READER, SeqCst);
        slot.commit_ts.store(NOT_COMMITTING, SeqCst);
        slot.waiting_for.store(0, SeqCst);
        slot.logged.store(0, SeqCst);
        let id = slot.id.swap(0, SeqCst);
        self.end_waiters.wake_where(|waited| waited == id);
    }

    /// Whether transaction `id` has ended; if not, `cx`'s waker is woken
    /// when it does.
    pub fn poll_ended(&self, id: TxnId, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if !self.is_active(id) {
            return std::task::Poll::Ready(());
        }
        self.end_waiters.register(id, cx.waker());
        if self.is_active(id) {
            return std::task::Poll::Pending;
        }
        // Ended meanwhile: its wake-up may have missed our entry, which
        // would then never be removed.
        self.end_waiters.deregister(id, cx.waker());
        std::task::Poll::Ready(())
    }

    /// Takes back the registration a waiter that gave up (or was woken)
    /// made with [`Self::poll_ended`], so that it does not stay until the
    /// holder ends.
    pub fn forget_end_waiter(&self, id: TxnId, waker: &std::task::Waker) {
        self.end_waiters.deregister(id, waker);
    }

    /// Announces that slot `i` is about to take a commit timestamp; validators
    /// that meet this transaction's markers wait for the timestamp instead of
    /// guessing.
    pub fn announce_commit(&self, i: usize) {
        self.slots[i].commit_ts.store(ASSIGNING, SeqCst);
    }

    pub fn set_commit_ts(&self, i: usize, ts: Timestamp) {
        self.slots[i].commit_ts.store(ts, SeqCst);
    }

    /// The commit timestamp of transaction `id`, if it is still registered:
    /// `Some(NOT_COMMITTING)` while it is running, `Some(ts)` once it has one,
    /// `None` when it has finished (its markers are gone or about to be).
    pub fn commit_ts_of(&self, id: TxnId) -> Option<Timestamp> {
        let slot = &self.slots[(id as usize) & (MAX_ACTIVE_TXNS - 1)];
        loop {
            if slot.id.load(SeqCst) != id {
                return None;
            }
            let c = slot.commit_ts.load(SeqCst);
            if c == ASSIGNING {
                std::hint::spin_loop();
                continue;
            }
            if slot.id.load(SeqCst) != id {
                return None;
            }
            return Some(c);
        }
    }

    /// Records that slot `i`'s transaction `id` has validated and put its
    /// commit record in an ordered log: it will commit unless the log fails,
    /// and then every later record fails with it. Writers may build on its
    /// versions (see `Transaction::claim`).
    pub fn set_logged(&self, i: usize, id: TxnId) {
        self.slots[i].logged.store(id, SeqCst);
    }

    /// Whether transaction `id` is logged and not yet finished (ids are
    /// never reused, so a reused slot cannot answer for it).
    pub fn is_logged(&self, id: TxnId) -> bool {
        self.slot_of(id).logged.load(SeqCst) == id
    }

    fn slot_of(&self, id: TxnId) -> &Slot {
        &self.slots[(id as usize) & (MAX_ACTIVE_TXNS - 1)]
    }

    /// Is transaction `id` still running (or finishing its commit)?
    pub fn is_active(&self, id: TxnId) -> bool {
        self.slot_of(id).id.load(SeqCst) == id
    }

    pub fn set_waiting_for(&self, slot: usize, other: TxnId) {
        self.slots[slot].waiting_for.store(other, SeqCst);
    }

    /// Follows the waits-for chain from `other`. Returns the members of a
    /// cycle through `me`, if there is one.
    pub fn wait_cycle(&self, me: TxnId, other: TxnId) -> Option<Vec<TxnId>> {
        let mut members = vec![me];
        let mut cur = other;
        for _ in 0..MAX_ACTIVE_TXNS {
            if cur == me {
                return Some(members);
            }
            if cur == 0 || !self.is_active(cur) {
                return None;
            }
            members.push(cur);
            cur = self.slot_of(cur).waiting_for.load(SeqCst);
        }
        None
    }

    /// The oldest read time any transaction may still use. Versions that
    /// ended at or before it are garbage.
    pub fn horizon(&self, seq: &Sequencer) -> Timestamp {
        let visible = seq.visible();
        let first = self.min_reader().min(visible);
        self.gc_horizon.fetch_max(first, SeqCst);
        first.min(self.min_reader())
    }

    fn min_reader(&self) -> Timestamp {
        let used = self.high_water.load(SeqCst);
        self.slots[..used].iter().map(|s| s.read_ts.load(SeqCst)).min().unwrap_or(NO_READER)
    }

    pub fn active(&self) -> usize {
        self.slots[..self.high_water.load(Relaxed)].iter().filter(|s| s.id.load(Relaxed) != 0).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watermark_waits_for_the_finished_prefix() {
        let s = Sequencer::new(0);
        let a = s.assign();
        let b = s.assign();
        let c = s.assign();
        s.finish(b);
        assert_eq!(s.visible(), 0);
        s.finish(a);
        assert_eq!(s.visible(), b);
        s.finish(c);
        assert_eq!(s.visible(), c);
    }

    #[test]
    fn horizon_tracks_the_oldest_reader() {
        let s = Sequencer::new(10);
        let t = TxnTable::new();
        let (slot, id, read) = t.begin(&s).unwrap();
        assert_eq!(read, 10);
        let ts = s.assign();
        s.finish(ts);
        assert_eq!(t.horizon(&s), 10);
        assert_eq!(t.commit_ts_of(id), Some(NOT_COMMITTING));
        t.end(slot);
        assert_eq!(t.commit_ts_of(id), None);
        assert_eq!(t.horizon(&s), 11);
    }
}

/// A counter that many threads bump without sharing a cache line: each
/// transaction slot group has its own cell; reads sum them.
pub struct StripedCounter {
    cells: Box<[PaddedI64]>,
}

#[repr(align(64))]
#[derive(Default)]
struct PaddedI64(std::sync::atomic::AtomicI64);

const STRIPES: usize = 16;

static NEXT_STRIPE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

thread_local! {
    static STRIPE: usize = NEXT_STRIPE.fetch_add(1, Relaxed) % STRIPES;
}

impl Default for StripedCounter {
    fn default() -> Self {
        StripedCounter { cells: (0..STRIPES).map(|_| PaddedI64::default()).collect() }
    }
}

impl StripedCounter {
    fn cell(&self) -> &std::sync::atomic::AtomicI64 {
        let i = STRIPE.with(|s| *s);
        &self.cells[i % STRIPES].0
    }
    pub fn add(&self, n: i64) {
        self.cell().fetch_add(n, Relaxed);
    }
    pub fn sub(&self, n: i64) {
        self.cell().fetch_sub(n, Relaxed);
    }
    pub fn get(&self) -> i64 {
        self.cells.iter().map(|c| c.0.load(Relaxed)).sum()
    }
}
