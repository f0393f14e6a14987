//! The second half of a commit: waiting for durability and visibility
//! without holding a thread.
//!
//! A synchronous commit's record is in the log when
//! [`Transaction::commit_start`] returns a [`PendingCommit`]. What is left is
//! to wait for the log to make it durable, then stamp the transaction's
//! versions and finish its timestamp, then wait until the visible watermark
//! passes it (so that the client sees its own write in its next statement).
//!
//! The stamping must not depend on the committing task being scheduled:
//! other commits wait for the watermark, and a thread blocked on the
//! watermark (a DDL statement, a synchronous commit) must not wait for a
//! task that sits in a run queue behind it. So the waker handed to the log
//! is the commit itself ([`Completion`]): when the log makes the record
//! durable it wakes the completion, which stamps and finishes the
//! transaction on the spot (on the log's flusher thread) and only then wakes
//! the task. The task then does the cheap rest: a share of garbage
//! collection and the visibility wait.
//!
//! Dropping an unfinished `PendingCommit` (its future was cancelled) does not
//! undo anything: the record is in the log and will be durable, so the drop
//! waits for the log and completes the commit as usual.

use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use crossbeam_epoch as epoch;
use parking_lot::Mutex;
use tessera_log::LogError;

use crate::commit::CommitInfo;
use crate::error::{EngineError, Result};
use crate::gc::GcItem;
use crate::mvcc::Timestamp;
use crate::txn::Transaction;

/// What [`Transaction::commit_start`] returns.
pub enum CommitStart {
    /// Committed and visible.
    Done(CommitInfo),
    /// Committed in the log; await it (or [`PendingCommit::wait`]) for the rest.
    Pending(PendingCommit),
}

/// A table's size change from one committed row.
pub(crate) struct SizeChange {
    /// The index of the row's first write in the transaction's ops.
    pub op: usize,
    pub new: Option<usize>,
    pub old: Option<usize>,
}

/// A validated transaction whose record went to the log.
pub(crate) struct CommitWork {
    pub txn: Transaction,
    pub ts: Timestamp,
    /// The index of each touched row's first write.
    pub rows: Vec<usize>,
    pub sizes: Vec<SizeChange>,
}

/// A commit that is stamped and finished; only visibility and a share of
/// garbage collection remain.
pub(crate) struct Stamped {
    /// Ended; kept for its engine and slot.
    txn: Transaction,
    ts: Timestamp,
    rows: usize,
}

impl CommitWork {
    /// The record is durable (or needed no wait): account, stamp, finish the
    /// timestamp and hand the old versions to GC.
    pub(crate) fn complete(mut self) -> Stamped {
        let txn = &mut self.txn;
        for c in &self.sizes {
            txn.ops[c.op].table.account(c.new, c.old);
        }
        let guard = epoch::pin();
        txn.stamp(&self.rows, self.ts, &guard);
        drop(guard);
        txn.engine.seq.finish(self.ts);
        // Hand each row's first op (its table and row references) to GC by
        // moving them: no reference-count traffic.
        let mut first = vec![false; txn.ops.len()];
        for &i in &self.rows {
            first[i] = true;
        }
        let ops = std::mem::take(&mut txn.ops);
        for (op, first) in ops.into_iter().zip(first) {
            if first {
                txn.engine.gc.push(txn.slot, GcItem { table: op.table, row: op.row, ts: self.ts });
            }
        }
        txn.end();
        Stamped { txn: self.txn, ts: self.ts, rows: self.rows.len() }
    }

    /// The log failed: the engine turns read-only (unless a replicated log
    /// reports its replica set failed) and the transaction's writes are
    /// undone. A logged commit's writes stay: later writers may have built
    /// on them (unlinking ours would cut theirs out of the chain), and they
    /// are harmless as they are, since readers pass over the versions of a
    /// transaction that is no longer running and keep seeing the versions it
    /// claimed. An ordered log's failure is final (the engine is read-only
    /// until a restart recovers the durable prefix).
    pub(crate) fn fail(mut self, err: LogError) -> EngineError {
        let engine = self.txn.engine.clone();
        engine.fail(&err);
        if !engine.txns.is_logged(self.txn.id) {
            self.txn.undo_from(0);
        }
        self.txn.ops.clear();
        engine.seq.finish(self.ts);
        self.txn.end();
        EngineError::CommitFailed(err)
    }
}

impl Stamped {
    /// The committing session's share of garbage collection.
    pub(crate) fn collect_garbage(&self) {
        let engine = &self.txn.engine;
        engine.gc.work(engine, self.txn.slot, 2 * self.rows + 8);
    }

    fn info(&self) -> CommitInfo {
        CommitInfo { ts: self.ts, wrote: true }
    }
}

enum Stage {
    /// Waiting for the log; `task` is the awaiting task's waker, if any.
    Durable {
        work: CommitWork,
        ticket: u64,
        task: Option<Waker>,
    },
    /// Stamped; `collected` once the GC share is done.
    Stamped {
        done: Stamped,
        collected: bool,
    },
    Failed(EngineError),
    /// The result was handed out.
    Taken,
}

/// The shared state of a pending commit, and the waker the log calls.
struct Completion {
    stage: Mutex<Stage>,
}

impl Completion {
    /// Asks the log whether the record is durable (registering this
    /// completion as the waker if not) and completes the commit if it is.
    fn poll_log(self: &Arc<Self>) {
        let mut stage = self.stage.lock();
        let Stage::Durable { work, ticket, .. } = &*stage else { return };
        let log = work.txn.engine.log.as_ref().expect("a pending commit has a log");
        let waker = Waker::from(self.clone());
        let ready = match log.poll_durable(*ticket, &mut Context::from_waker(&waker)) {
            Poll::Pending => return,
            Poll::Ready(r) => r,
        };
        let Stage::Durable { work, task, .. } = std::mem::replace(&mut *stage, Stage::Taken) else { unreachable!() };
        *stage = match ready {
            Ok(()) => Stage::Stamped { done: work.complete(), collected: false },
            Err(e) => Stage::Failed(work.fail(e)),
        };
        drop(stage);
        if let Some(task) = task {
            task.wake();
        }
    }
}

impl Wake for Completion {
    fn wake(self: Arc<Self>) {
        self.poll_log();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.poll_log();
    }
}

/// A commit whose record is in the log; a future that resolves once it is
/// durable and visible. See the module documentation.
pub struct PendingCommit {
    inner: Arc<Completion>,
}

impl PendingCommit {
    pub(crate) fn after_log(work: CommitWork, ticket: u64) -> PendingCommit {
        let inner = Arc::new(Completion { stage: Mutex::new(Stage::Durable { work, ticket, task: None }) });
        inner.poll_log();
        PendingCommit { inner }
    }

    pub(crate) fn stamped(done: Stamped) -> PendingCommit {
        PendingCommit { inner: Arc::new(Completion { stage: Mutex::new(Stage::Stamped { done, collected: false }) }) }
    }

    /// Blocks the calling thread until the commit is durable and visible.
    pub fn wait(self) -> Result<CommitInfo> {
        self.wait_durable();
        // Never wait while holding the stage lock: the log may still call a
        // stale copy of this completion's waker, on the thread that finishes
        // the other commits this one waits for.
        let stage = std::mem::replace(&mut *self.inner.stage.lock(), Stage::Taken);
        match stage {
            Stage::Stamped { done, collected } => {
                if !collected {
                    done.collect_garbage();
                }
                done.txn.engine.seq.wait_visible(done.ts);
                Ok(done.info())
            }
            Stage::Failed(e) => Err(e),
            Stage::Durable { .. } | Stage::Taken => Err(EngineError::TransactionEnded),
        }
    }

    /// Blocks until the log has decided the commit's fate (and the
    /// completion has stamped or undone it).
    fn wait_durable(&self) {
        let (engine, ticket) = {
            let stage = self.inner.stage.lock();
            let Stage::Durable { work, ticket, .. } = &*stage else { return };
            (work.txn.engine.clone(), *ticket)
        };
        let log = engine.log.as_ref().expect("a pending commit has a log");
        // Success or failure, the completion reads the outcome from the log.
        let _ = log.wait_durable(ticket);
        self.inner.poll_log();
    }
}

impl std::future::Future for PendingCommit {
    type Output = Result<CommitInfo>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<CommitInfo>> {
        let mut stage = self.inner.stage.lock();
        match &mut *stage {
            Stage::Durable { task, .. } => {
                if !task.as_ref().is_some_and(|t| t.will_wake(cx.waker())) {
                    *task = Some(cx.waker().clone());
                }
                Poll::Pending
            }
            Stage::Stamped { .. } => {
                let Stage::Stamped { done, collected } = std::mem::replace(&mut *stage, Stage::Taken) else {
                    unreachable!()
                };
                drop(stage);
                if !collected {
                    done.collect_garbage();
                }
                // Stamping never waits for a task (see the module notes), and
                // whoever finishes the last earlier timestamp wakes this one.
                if done.txn.engine.seq.poll_visible(done.ts, cx).is_ready() {
                    return Poll::Ready(Ok(done.info()));
                }
                *self.inner.stage.lock() = Stage::Stamped { done, collected: true };
                Poll::Pending
            }
            Stage::Failed(_) => match std::mem::replace(&mut *stage, Stage::Taken) {
                Stage::Failed(e) => Poll::Ready(Err(e)),
                _ => unreachable!(),
            },
            Stage::Taken => Poll::Ready(Err(EngineError::TransactionEnded)),
        }
    }
}

impl Drop for PendingCommit {
    fn drop(&mut self) {
        // A cancelled wait: the record will be durable, so finish the commit
        // rather than leave its markers and timestamp open. A replicated log
        // holds the completion's waker and finishes it whenever it learns
        // the outcome, so nothing needs to block here.
        let abandon_ok = match &*self.inner.stage.lock() {
            Stage::Durable { work, .. } => {
                !work.txn.engine.log.as_ref().expect("a pending commit has a log").wait_when_abandoned()
            }
            _ => true,
        };
        if !abandon_ok {
            self.wait_durable();
        }
    }
}
