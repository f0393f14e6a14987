//! Commit: timestamp, validation, log, stamping, visibility.
//!
//! ```text
//! announce → ts = clock+1 → validate (RR: reads; SER: reads + scans)
//!          → append after-images to the commit log → [wait for durability]
//!          → stamp ts over our markers → finish(ts) → GC batch → wait until visible
//! ```
//! Everything up to the log append happens in [`Transaction::commit_start`];
//! the rest, which waits, lives in [`crate::pending`].
//! A transaction that fails validation, or whose log write fails, undoes
//! its writes and still finishes its timestamp, so that the watermark moves
//! on. Aborted transactions write nothing to the log.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering::*;

use crossbeam_epoch::{self as epoch, Guard};
use tessera_log::LogError;

use crate::codec::Encoder;
use crate::error::{ConflictReason, EngineError, Result};
use crate::mvcc::{Row, Timestamp};
use crate::pending::{CommitStart, CommitWork, PendingCommit, SizeChange};
use crate::record::{WriteRecord, begin_commit, push_write};
use crate::table::Table;
use crate::txn::{Durability, Isolation, Transaction, changed_since, read_still_valid};

/// What a successful commit reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitInfo {
    /// The commit timestamp (the snapshot time for a read-only transaction).
    pub ts: Timestamp,
    /// Whether anything was written.
    pub wrote: bool,
}

/// A row's net effect in one transaction.
struct NetWrite<'g> {
    /// The index of the row's first write in `ops`.
    op: usize,
    table: &'g Arc<Table>,
    row: &'g Arc<Row>,
    /// The final image, or None for a delete.
    image: Option<&'g [u8]>,
    /// Begin ts of the committed version replaced (0: none).
    prev_ts: Timestamp,
    /// Size of the committed version replaced, if any.
    old_len: Option<usize>,
}

impl Transaction {
    /// Commits, blocking the calling thread until the commit is durable (for
    /// synchronous durability) and visible. Code on an event loop uses
    /// [`Transaction::commit_start`] instead.
    pub fn commit(self) -> Result<CommitInfo> {
        match self.commit_start()? {
            CommitStart::Done(info) => Ok(info),
            CommitStart::Pending(pending) => pending.wait(),
        }
    }

    /// Commits without blocking: validates, appends the commit record to the
    /// log, and returns either the finished commit (read-only, lazy or
    /// in-memory, once visible) or a [`PendingCommit`] to await.
    pub fn commit_start(mut self) -> Result<CommitStart> {
        if self.ended {
            return Err(EngineError::TransactionEnded);
        }
        if self.ops.is_empty() {
            let ts = self.read_ts;
            self.end();
            return Ok(CommitStart::Done(CommitInfo { ts, wrote: false }));
        }
        // Keep the engine reachable without touching its shared reference
        // count on every commit (another core is bumping the same counter).
        // SAFETY: `Arc::as_ptr` points at the engine for as long as one
        // `Arc` of it lives, and `self.engine` is one: `self` is moved (into
        // the `CommitWork`, then the `PendingCommit` or `Stamped` it
        // becomes), never dropped, before the last use of `engine` below,
        // and moving an `Arc` does not move the engine. Only shared access
        // is made through it, as through the `Arc`.
        let engine: &crate::engine::EngineInner = unsafe { &*Arc::as_ptr(&self.engine) };
        engine.txns.announce_commit(self.slot);
        let ts = engine.seq.assign();
        engine.txns.set_commit_ts(self.slot, ts);

        if let Err(e) = self.validate(ts) {
            self.undo_from(0);
            engine.seq.finish(ts);
            self.end();
            return Err(e);
        }

        let guard = epoch::pin();
        let rows = self.touched_rows();
        let mut net: Vec<NetWrite<'_>> = Vec::with_capacity(rows.len());
        for &i in &rows {
            match self.net_write(i, &self.ops[i].table, &self.ops[i].row, &guard) {
                Ok(Some(w)) => net.push(w),
                Ok(None) => {}
                Err(err) => {
                    drop(net);
                    drop(guard);
                    return Err(CommitWork { txn: self, ts, rows, sizes: Vec::new() }.fail(err));
                }
            }
        }
        let sizes: Vec<SizeChange> =
            net.iter().map(|w| SizeChange { op: w.op, new: w.image.map(|i| i.len()), old: w.old_len }).collect();

        let mut ticket = None;
        if let Some(log) = &engine.log {
            let mut e = Encoder::with_capacity(
                64 + net.iter().map(|w| w.row.key.len() + w.image.map_or(0, |i| i.len()) + 32).sum::<usize>(),
            );
            begin_commit(&mut e, ts, net.len() as u32);
            for w in &net {
                push_write(
                    &mut e,
                    &WriteRecord { table: w.table.id, key: &w.row.key, prev_ts: w.prev_ts, row: w.image },
                );
            }
            match log.append(&e.buf) {
                Ok(t) => ticket = Some(t),
                Err(err) => {
                    drop(net);
                    drop(guard);
                    return Err(CommitWork { txn: self, ts, rows, sizes }.fail(err));
                }
            }
        }
        drop(net);
        drop(guard);
        let work = CommitWork { txn: self, ts, rows, sizes };
        match ticket {
            Some(ticket)
                if work.txn.durability == Durability::Synchronous
                    || !engine.log.as_ref().is_some_and(|l| l.allows_lazy()) =>
            {
                if engine.builds_on_logged {
                    // From here on the commit can only fail with the log, and
                    // then every later record fails too: writers may build on
                    // our versions while the record travels to disk.
                    engine.txns.set_logged(work.txn.slot, work.txn.id);
                }
                Ok(CommitStart::Pending(PendingCommit::after_log(work, ticket)))
            }
            _ => {
                let done = work.complete();
                if engine.seq.visible() >= ts {
                    done.collect_garbage();
                    Ok(CommitStart::Done(CommitInfo { ts, wrote: true }))
                } else {
                    Ok(CommitStart::Pending(PendingCommit::stamped(done)))
                }
            }
        }
    }

    fn validate(&self, ts: Timestamp) -> Result<()> {
        if !matches!(self.isolation, Isolation::RepeatableRead | Isolation::Serializable) {
            return Ok(());
        }
        for r in &self.reads {
            // SAFETY: `r.version` is the address of a version this
            // transaction read, and it is still allocated: `r` holds its
            // row, so the row's drop has not freed it; it was visible to
            // our snapshot (and committed, since not ours), and GC cuts only
            // versions no registered snapshot can see, while ours stays
            // registered until the transaction ends; aborts free only
            // uncommitted versions.
            let v = unsafe { crate::mvcc::Version::at(r.version) };
            if !read_still_valid(&self.engine, v, self.me, ts) {
                return Err(EngineError::conflict(ConflictReason::ReadValidation));
            }
        }
        if self.isolation == Isolation::Serializable {
            let guard = epoch::pin();
            for scan in &self.scans {
                let (lower, upper) = scan.range.bounds();
                let mut phantom = false;
                scan.table.for_each_candidate(scan.index, lower, upper, |_, row| {
                    phantom = changed_since(&self.engine, row, self.me, self.read_ts, ts, &guard);
                    !phantom
                })?;
                if phantom {
                    return Err(EngineError::conflict(ConflictReason::Phantom));
                }
            }
        }
        Ok(())
    }

    /// The index of each row's first write, once per row, in write order.
    fn touched_rows(&self) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::with_capacity(self.ops.len());
        if self.ops.len() <= 8 {
            for (i, op) in self.ops.iter().enumerate() {
                if !out.iter().any(|&j| Arc::ptr_eq(&self.ops[j].row, &op.row)) {
                    out.push(i);
                }
            }
        } else {
            let mut seen = HashSet::with_capacity(self.ops.len());
            for (i, op) in self.ops.iter().enumerate() {
                if seen.insert(Arc::as_ptr(&op.row) as usize) {
                    out.push(i);
                }
            }
        }
        out
    }

    /// The row's net change: our versions sit on top of its chain.
    fn net_write<'g>(
        &self,
        op: usize,
        table: &'g Arc<Table>,
        row: &'g Arc<Row>,
        guard: &'g Guard,
    ) -> std::result::Result<Option<NetWrite<'g>>, LogError> {
        let mut image = None;
        let mut top = true;
        let mut below = None;
        for v in row.versions(guard) {
            if v.begin.load(Acquire) != self.me {
                below = Some(v);
                break;
            }
            if top && v.end.load(Acquire) != self.me {
                image = Some(&v.data[..]);
            }
            top = false;
        }
        let (prev_ts, old_len) = match below {
            Some(orig) if orig.end.load(Acquire) == self.me => (self.begin_ts_of(orig)?, Some(orig.data.len())),
            _ => (0, None),
        };
        if image.is_none() && prev_ts == 0 {
            return Ok(None); // inserted and deleted again
        }
        Ok(Some(NetWrite { op, table, row, image, prev_ts, old_len }))
    }

    /// The commit timestamp of `v`'s creator. `v` may come from a commit
    /// that is logged but not yet stamped (we built on it), whose begin is
    /// still its marker: its timestamp is in its transaction slot until it
    /// stamps. A creator that ended without stamping failed with the log,
    /// and a commit built on it fails too.
    fn begin_ts_of(&self, v: &crate::mvcc::Version) -> std::result::Result<Timestamp, LogError> {
        loop {
            let begin = v.begin.load(Acquire);
            if !crate::mvcc::is_marker(begin) {
                return Ok(begin);
            }
            match self.engine.txns.commit_ts_of(crate::mvcc::marker_txn(begin)) {
                Some(ts) if ts != crate::clock::NOT_COMMITTING => return Ok(ts),
                Some(_) => std::hint::spin_loop(),
                // Ended: either it stamped meanwhile (seen on the next look)
                // or it failed and its marker stays.
                None if crate::mvcc::is_marker(v.begin.load(Acquire)) => {
                    return Err(LogError::Failed("a commit this transaction built on failed to reach the log".into()));
                }
                None => {}
            }
        }
    }

    /// Replaces our markers by `ts`. Our versions are usually the newest,
    /// but writers that built on them while the record was on its way to
    /// disk may have put theirs on top (stamped or not, or being unlinked):
    /// those are passed over down to ours. Below ours lies the version we
    /// replaced (its `end` is ours) and then older history.
    pub(crate) fn stamp(&self, rows: &[usize], ts: Timestamp, guard: &Guard) {
        for &i in rows {
            let row = &self.ops[i].row;
            let mut reached = false;
            for v in row.versions(guard) {
                let begin = v.begin.load(Acquire);
                let mine = begin == self.me;
                if v.end.load(Acquire) == self.me {
                    v.end.store(ts, Release);
                }
                if mine {
                    v.begin.store(ts, Release);
                    reached = true;
                } else if reached || !(crate::mvcc::is_marker(begin) || begin > ts) {
                    // Past our versions, or at history older than us.
                    break;
                }
            }
        }
    }
}
