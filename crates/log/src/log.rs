//! The running log: appends, group-commit waits, truncation, statistics.
//!
//! All coordination goes through one mutex-protected [`AppendState`]:
//! appenders copy their frame into `buffer` under it, waiters record how far
//! they need the log to be durable and sleep on `durable_changed`, and the
//! flusher thread (see `flusher.rs`) takes the whole buffer under it, then
//! writes and fsyncs *without* holding it, so appends are never delayed by I/O.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::LogError;
use crate::failure::Failure;
use crate::fault::FaultInjector;
use crate::frame::{self, frame_len};
use crate::reader::LogReader;
use crate::recovery::{self, RecoveryReport};
use crate::segment::{DiskIo, SegmentMeta};
use crate::{Lsn, MAX_RECORD_BYTES};

/// Where the log lives and how it behaves.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// Directory holding the segment files; created if missing.
    pub dir: PathBuf,
    /// A record that would push the current segment past this size goes to a
    /// new segment instead (a segment always takes at least one record, so a
    /// single huge record can exceed it). Default 64 MiB.
    pub segment_bytes: u64,
    /// Upper bound on how long an appended record may stay un-fsynced when
    /// nobody waits for it ("lazy" durability). Default 10 ms.
    pub lazy_flush_interval: Duration,
    /// Test hook: make segment writes and fsyncs fail.
    pub faults: Option<Arc<FaultInjector>>,
}

impl LogConfig {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        LogConfig {
            dir: dir.into(),
            segment_bytes: 64 << 20,
            lazy_flush_interval: Duration::from_millis(10),
            faults: None,
        }
    }
}

/// Counters describing the log since it was opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogStats {
    /// fdatasync calls on segment data. Under group commit this is far below `records`.
    pub fsyncs: u64,
    /// Records appended through this `Log` since open.
    pub records: u64,
    /// Log bytes (frames, headers included) appended since open.
    pub bytes: u64,
    /// Segment files currently held.
    pub segments: usize,
    /// Batches the flusher handed to `write_all`.
    pub write_batches: u64,
    pub start_lsn: Lsn,
    pub durable_lsn: Lsn,
    pub end_lsn: Lsn,
}

/// A record read back from the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// Where the record's frame starts.
    pub lsn: Lsn,
    /// One past the record's last byte: the LSN of the next record.
    pub end: Lsn,
    pub stream: u32,
    pub payload: Vec<u8>,
}

/// Buffers larger than this are freed after a flush instead of being reused,
/// so one huge record does not pin its memory for the life of the log.
const MAX_RECYCLED_BUFFER: usize = 4 << 20;

/// Everything appenders, waiters and the flusher coordinate on.
pub(crate) struct AppendState {
    /// Frames appended but not yet taken by the flusher.
    pub buffer: Vec<u8>,
    /// LSN of `buffer[0]`; everything below it has been taken by the flusher.
    pub buffer_start: Lsn,
    /// One past the last appended byte.
    pub end: Lsn,
    /// LSNs (record boundaries inside the buffer) where a new segment must begin.
    pub roll_points: Vec<Lsn>,
    /// Start of the segment the next appended record would land in.
    pub appending_segment_start: Lsn,
    /// When the oldest record in `buffer` was appended; drives lazy flushing.
    pub oldest_pending: Option<Instant>,
    /// The highest LSN any waiter has asked to be made durable.
    pub requested: Lsn,
    /// The flusher is asleep with nothing buffered and must be woken by the
    /// next append (otherwise appends skip the notify).
    pub flusher_idle: bool,
    /// `close()` was called: no more appends; the flusher drains and exits.
    pub closing: bool,
    /// The flusher thread has exited.
    pub flusher_gone: bool,
    /// Set once by the flusher on the first I/O error; never cleared.
    pub failure: Option<Failure>,
    /// An empty buffer kept from the previous flush to avoid reallocating.
    pub recycled: Vec<u8>,
    pub records: u64,
    pub bytes: u64,
    /// Tasks and callbacks waiting (without a thread) for an LSN to become
    /// durable, in the order they asked.
    pub wakers: Vec<(Lsn, Waiting)>,
}

impl AppendState {
    /// Returns a flushed buffer for reuse.
    pub(crate) fn recycle(&mut self, mut buffer: Vec<u8>) {
        buffer.clear();
        if buffer.capacity() <= MAX_RECYCLED_BUFFER && buffer.capacity() > self.recycled.capacity() {
            self.recycled = buffer;
        }
    }
}

/// State shared between the `Log` handle and its flusher thread.
pub(crate) struct Shared {
    pub dir: PathBuf,
    pub segment_bytes: u64,
    /// How long the flusher lets lazily appended data sit before writing it:
    /// half the configured bound, leaving the other half for the write+fsync.
    pub lazy_flush_after: Duration,
    pub disk: DiskIo,
    pub state: Mutex<AppendState>,
    /// Wakes the flusher: new data after idling, a waiter, or close.
    pub flusher_wakeup: Condvar,
    /// Wakes waiters: durable LSN advanced, the log failed, or the flusher exited.
    pub durable_changed: Condvar,
    /// Mirrors of state fields for lock-free reads; written under the lock.
    pub durable: AtomicU64,
    pub end: AtomicU64,
    /// Segment files, oldest first; the last one is the flusher's active segment.
    pub segments: Mutex<Vec<SegmentMeta>>,
    pub fsyncs: AtomicU64,
    pub write_batches: AtomicU64,
}

impl Shared {
    /// Publishes a new durable LSN and returns the waiters it satisfies,
    /// for the caller to wake once it has released the lock (a waker may do
    /// real work, such as finishing a commit). Takes the locked state as
    /// proof the lock is held: waiters check the durable LSN under the lock,
    /// so a store outside it could slip between a waiter's check and its
    /// sleep and leave it asleep forever.
    #[must_use = "the returned waiters must be woken"]
    pub(crate) fn advance_durable(&self, locked: &mut AppendState, lsn: Lsn) -> Vec<Ready> {
        self.durable.store(lsn, Ordering::Release);
        self.durable_changed.notify_all();
        let mut ready = Vec::new();
        if !locked.wakers.is_empty() {
            let mut kept = Vec::with_capacity(locked.wakers.len());
            for (want, waiting) in locked.wakers.drain(..) {
                if want <= lsn {
                    ready.push(Ready::from(waiting, Ok(())));
                } else {
                    kept.push((want, waiting));
                }
            }
            locked.wakers = kept;
        }
        ready
    }

    /// Returns every waiter (the log failed or closed: a task finds out why
    /// when it polls again, a callback is told), to be woken after unlocking.
    #[must_use = "the returned waiters must be woken"]
    pub(crate) fn wake_all(&self, locked: &mut AppendState) -> Vec<Ready> {
        self.durable_changed.notify_all();
        let failure = locked.failure.clone();
        locked
            .wakers
            .drain(..)
            .map(|(_, waiting)| {
                let outcome = match &failure {
                    Some(f) => Err(f.to_io_error()),
                    None => Err(LogError::Closed),
                };
                Ready::from(waiting, outcome)
            })
            .collect()
    }
}

/// Called once, on the log's flusher thread (or at once by
/// [`Log::on_durable`] itself), when an LSN is durable or cannot become so.
/// It must be quick: the flusher's next round waits for it.
pub type DurableCallback = Box<dyn FnOnce(Result<(), LogError>) + Send>;

/// Something waiting for an LSN to become durable without a thread.
pub(crate) enum Waiting {
    Task(std::task::Waker),
    Call(DurableCallback),
}

/// A satisfied (or failed) waiter, to be woken without the state lock.
pub(crate) enum Ready {
    Task(std::task::Waker),
    Call(DurableCallback, Result<(), LogError>),
}

impl Ready {
    fn from(waiting: Waiting, outcome: Result<(), LogError>) -> Ready {
        match waiting {
            Waiting::Task(w) => Ready::Task(w),
            Waiting::Call(f) => Ready::Call(f, outcome),
        }
    }
}

/// Wakes tasks and runs callbacks (call without the state lock).
pub(crate) fn wake(ready: Vec<Ready>) {
    for r in ready {
        match r {
            Ready::Task(w) => w.wake(),
            Ready::Call(f, outcome) => f(outcome),
        }
    }
}

/// The node's redo log. `Send + Sync`: share it by `Arc` among committing threads.
pub struct Log {
    shared: Arc<Shared>,
    flusher: Mutex<Option<JoinHandle<()>>>,
}

impl Log {
    /// Opens (recovering) or creates the log in `config.dir`; see the crate
    /// documentation for what recovery accepts, repairs and rejects.
    pub fn open(config: LogConfig) -> Result<(Log, RecoveryReport), LogError> {
        let disk = DiskIo { faults: config.faults.clone() };
        let recovered = recovery::recover(&config.dir, &disk)?;
        let end = recovered.end;
        let active = recovered.segments.last().expect("recovery yields a segment").clone();
        let state = AppendState {
            buffer: Vec::new(),
            buffer_start: end,
            end,
            roll_points: Vec::new(),
            appending_segment_start: active.start,
            oldest_pending: None,
            requested: end,
            flusher_idle: false,
            closing: false,
            flusher_gone: false,
            failure: None,
            recycled: Vec::new(),
            records: 0,
            bytes: 0,
            wakers: Vec::new(),
        };
        let shared = Arc::new(Shared {
            dir: config.dir.clone(),
            segment_bytes: config.segment_bytes,
            lazy_flush_after: config.lazy_flush_interval / 2,
            disk,
            state: Mutex::new(state),
            flusher_wakeup: Condvar::new(),
            durable_changed: Condvar::new(),
            durable: AtomicU64::new(end),
            end: AtomicU64::new(end),
            segments: Mutex::new(recovered.segments),
            fsyncs: AtomicU64::new(0),
            write_batches: AtomicU64::new(0),
        });
        let flusher = crate::flusher::spawn(shared.clone(), recovered.active_file, active)?;
        let log = Log { shared, flusher: Mutex::new(Some(flusher)) };
        Ok((log, recovered.report))
    }

    /// Copies one record into the group-commit buffer and returns its end LSN
    /// (the LSN to pass to [`wait_durable`](Self::wait_durable)). Never waits for I/O.
    pub fn append(&self, stream: u32, payload: &[u8]) -> Result<Lsn, LogError> {
        if payload.len() > MAX_RECORD_BYTES {
            return Err(LogError::RecordTooLarge { size: payload.len(), limit: MAX_RECORD_BYTES });
        }
        // The payload checksum does not depend on the LSN, so it is computed
        // before taking the lock; only the cheap combine happens inside.
        let payload_hasher = frame::payload_hasher(payload);
        let len = frame_len(payload.len());

        let shared = &*self.shared;
        let mut state = shared.state.lock();
        if let Some(failure) = &state.failure {
            return Err(failure.to_failed());
        }
        if state.closing {
            return Err(LogError::Closed);
        }
        let in_segment = state.end - state.appending_segment_start;
        if in_segment > 0 && in_segment + len > shared.segment_bytes {
            let boundary = state.end;
            state.roll_points.push(boundary);
            state.appending_segment_start = boundary;
        }
        let lsn = state.end;
        let was_empty = state.buffer.is_empty();
        frame::encode_frame(&mut state.buffer, lsn, stream, payload, &payload_hasher);
        state.end = lsn + len;
        state.records += 1;
        state.bytes += len;
        shared.end.store(state.end, Ordering::Release);
        if was_empty {
            state.oldest_pending = Some(Instant::now());
            if state.flusher_idle {
                shared.flusher_wakeup.notify_one();
            }
        }
        Ok(state.end)
    }

    /// Blocks until everything below `lsn` is written and fsynced.
    ///
    /// Concurrent waiters share one fsync: the flusher writes everything
    /// buffered when it starts a round, and a waiter arriving mid-round is
    /// served by the next one. Records that were already durable are reported
    /// `Ok` even after the log has failed (they are on disk); anything else
    /// after a failure is an error.
    pub fn wait_durable(&self, lsn: Lsn) -> Result<(), LogError> {
        let shared = &*self.shared;
        if shared.durable.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        let mut state = shared.state.lock();
        if shared.durable.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        if let Some(failure) = &state.failure {
            return Err(failure.to_failed());
        }
        if lsn > state.end {
            return Err(LogError::OutOfRange { lsn, start: self.start_lsn(), end: state.end });
        }
        if state.flusher_gone {
            return Err(LogError::Closed);
        }
        if lsn > state.requested {
            state.requested = lsn;
            shared.flusher_wakeup.notify_one();
        }
        loop {
            shared.durable_changed.wait(&mut state);
            if shared.durable.load(Ordering::Acquire) >= lsn {
                return Ok(());
            }
            // This waiter's records were in flight when the I/O failed: give
            // it the original error, which says what went wrong.
            if let Some(failure) = &state.failure {
                return Err(failure.to_io_error());
            }
            if state.flusher_gone {
                return Err(LogError::Closed);
            }
        }
    }

    /// The asynchronous form of [`Log::wait_durable`]: ready once everything
    /// below `lsn` is durable (or the log has failed or closed); otherwise
    /// the task's waker is woken by the flusher when it is. A task on an
    /// event loop can so wait for its group commit without a thread.
    pub fn poll_durable(&self, lsn: Lsn, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), LogError>> {
        use std::task::Poll;
        let shared = &*self.shared;
        if shared.durable.load(Ordering::Acquire) >= lsn {
            return Poll::Ready(Ok(()));
        }
        let mut state = shared.state.lock();
        if shared.durable.load(Ordering::Acquire) >= lsn {
            return Poll::Ready(Ok(()));
        }
        if let Some(failure) = &state.failure {
            return Poll::Ready(Err(failure.to_io_error()));
        }
        if lsn > state.end {
            return Poll::Ready(Err(LogError::OutOfRange { lsn, start: self.start_lsn(), end: state.end }));
        }
        if state.flusher_gone {
            return Poll::Ready(Err(LogError::Closed));
        }
        if lsn > state.requested {
            state.requested = lsn;
            shared.flusher_wakeup.notify_one();
        }
        if !state.wakers.iter().any(|(l, w)| *l == lsn && matches!(w, Waiting::Task(w) if w.will_wake(cx.waker()))) {
            state.wakers.push((lsn, Waiting::Task(cx.waker().clone())));
        }
        Poll::Pending
    }

    /// Calls `callback` once everything below `lsn` is durable — on the
    /// flusher's thread right after its fsync, or at once when it already
    /// is — or with the error when it cannot become so (the log failed or
    /// closed). Unlike [`Log::wait_durable`] nothing blocks, and unlike
    /// [`Log::poll_durable`] no task is woken to learn the outcome: for a
    /// caller that only passes it on. Callbacks for different LSNs may run
    /// in any order.
    pub fn on_durable(&self, lsn: Lsn, callback: DurableCallback) {
        let shared = &*self.shared;
        if shared.durable.load(Ordering::Acquire) >= lsn {
            return callback(Ok(()));
        }
        let mut state = shared.state.lock();
        let outcome = if shared.durable.load(Ordering::Acquire) >= lsn {
            Ok(())
        } else if let Some(failure) = &state.failure {
            Err(failure.to_io_error())
        } else if lsn > state.end {
            Err(LogError::OutOfRange { lsn, start: self.start_lsn(), end: state.end })
        } else if state.flusher_gone {
            Err(LogError::Closed)
        } else {
            if lsn > state.requested {
                state.requested = lsn;
                shared.flusher_wakeup.notify_one();
            }
            state.wakers.push((lsn, Waiting::Call(callback)));
            return;
        };
        drop(state);
        callback(outcome);
    }

    /// Makes everything appended so far durable; returns the durable end LSN.
    pub fn flush(&self) -> Result<Lsn, LogError> {
        self.wait_durable(self.end_lsn())?;
        Ok(self.durable_lsn())
    }

    /// Everything below this LSN is on disk and fsynced.
    pub fn durable_lsn(&self) -> Lsn {
        self.shared.durable.load(Ordering::Acquire)
    }

    /// One past the last appended byte (durable or not).
    pub fn end_lsn(&self) -> Lsn {
        self.shared.end.load(Ordering::Acquire)
    }

    /// The first LSN still held in the files (after truncation).
    pub fn start_lsn(&self) -> Lsn {
        self.shared.segments.lock()[0].start
    }

    /// Reads the records from `from` (a record boundary) up to the durable end
    /// as of this call, verifying every checksum. Safe to use while appends
    /// continue. A segment deleted by a concurrent `truncate_before` before the
    /// reader reaches it shows up as an I/O error from the iterator.
    pub fn read_from(&self, from: Lsn) -> Result<LogReader, LogError> {
        // Durable first, then the segment list: a segment is listed before
        // the durable LSN moves into it, so the snapshot covers `..end`.
        let end = self.durable_lsn();
        let segments = self.shared.segments.lock().clone();
        let start = segments[0].start;
        if from < start || from > end {
            return Err(LogError::OutOfRange { lsn: from, start, end });
        }
        Ok(LogReader::new(segments, from, end))
    }

    /// Deletes whole segment files whose records all lie below `lsn`. The
    /// active (last) segment is never deleted, so the log always has a file
    /// to append to and `start_lsn()` stays meaningful.
    pub fn truncate_before(&self, lsn: Lsn) -> Result<(), LogError> {
        let shared = &*self.shared;
        let mut segments = shared.segments.lock();
        let mut removed = 0;
        // Oldest first, so that if a removal fails the files left on disk
        // are still a contiguous run of segments.
        while segments.len() >= 2 && segments[1].start <= lsn {
            let path = segments[0].path.clone();
            std::fs::remove_file(&path)
                .map_err(|e| LogError::io(format!("deleting log segment {}", path.display()), e))?;
            segments.remove(0);
            removed += 1;
        }
        if removed > 0 {
            tracing::debug!(removed, start_lsn = segments[0].start, "truncated log");
            shared
                .disk
                .sync_dir(&shared.dir)
                .map_err(|e| LogError::io(format!("syncing log directory {}", shared.dir.display()), e))?;
        }
        Ok(())
    }

    pub fn stats(&self) -> LogStats {
        let shared = &*self.shared;
        let (records, bytes) = {
            let state = shared.state.lock();
            (state.records, state.bytes)
        };
        let (segments, start_lsn) = {
            let segments = shared.segments.lock();
            (segments.len(), segments[0].start)
        };
        LogStats {
            fsyncs: shared.fsyncs.load(Ordering::Relaxed),
            records,
            bytes,
            segments,
            write_batches: shared.write_batches.load(Ordering::Relaxed),
            start_lsn,
            durable_lsn: self.durable_lsn(),
            end_lsn: self.end_lsn(),
        }
    }

    /// If the log has failed, the I/O error that caused it (as `LogError::Io`,
    /// so [`LogError::is_disk_full`] can be asked).
    pub fn failure_cause(&self) -> Option<LogError> {
        let state = self.shared.state.lock();
        state.failure.as_ref().map(Failure::to_io_error)
    }

    /// Makes everything appended durable and stops the flusher thread. Later
    /// appends return [`LogError::Closed`]. Called by `Drop` too; calling it
    /// again is harmless.
    pub fn close(&self) -> Result<(), LogError> {
        let handle = self.flusher.lock().take();
        {
            let mut state = self.shared.state.lock();
            state.closing = true;
            self.shared.flusher_wakeup.notify_one();
        }
        if let Some(handle) = handle
            && handle.join().is_err()
        {
            return Err(LogError::Failed("the log flusher thread panicked".into()));
        }
        let state = self.shared.state.lock();
        match &state.failure {
            Some(failure) => Err(failure.to_failed()),
            None => Ok(()),
        }
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        if let Err(error) = self.close() {
            tracing::warn!(%error, "closing the log on drop");
        }
    }
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log")
            .field("dir", &self.shared.dir)
            .field("durable_lsn", &self.durable_lsn())
            .field("end_lsn", &self.end_lsn())
            .finish_non_exhaustive()
    }
}
