//! The background thread that turns buffered appends into durable bytes.
//!
//! One round of group commit: take the *entire* append buffer under the lock
//! (a pointer swap), release the lock, `write_all` the batch, `fdatasync`,
//! then publish the new durable LSN and wake every waiter at once. Appenders
//! and waiters that arrive while the round's I/O is in flight accumulate in
//! the fresh buffer and are served together by the next round, so the number
//! of fsyncs tracks the disk's fsync latency, not the commit rate.
//!
//! The thread sleeps when there is nothing to do. It starts a round
//! immediately when someone waits for durability or the log is closing, and
//! otherwise (lazy commits only) once the oldest buffered record has waited
//! half of `lazy_flush_interval`.

use std::fs::File;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Instant;

use parking_lot::MutexGuard;

use crate::Lsn;
use crate::error::LogError;
use crate::failure::Failure;
use crate::log::{Shared, wake};
use crate::segment::{SEGMENT_HEADER_LEN, SegmentMeta, create_segment, segment_file_name};

pub(crate) fn spawn(shared: Arc<Shared>, file: File, meta: SegmentMeta) -> Result<JoinHandle<()>, LogError> {
    let active = ActiveSegment { file, meta, unsynced: false };
    std::thread::Builder::new()
        .name("tessera-log-flusher".into())
        .spawn(move || run(&shared, active))
        .map_err(|e| LogError::io("starting the log flusher thread", e))
}

fn run(shared: &Shared, mut active: ActiveSegment) {
    // Declared before the state guard so it drops after it: on exit, normal
    // or by panic, it re-locks the state and tells waiters the flusher is gone.
    let _exit_guard = ExitGuard { shared };
    let mut state = shared.state.lock();
    loop {
        if state.failure.is_some() {
            return;
        }
        if state.buffer.is_empty() {
            if state.closing {
                return;
            }
            state.flusher_idle = true;
            shared.flusher_wakeup.wait(&mut state);
            state.flusher_idle = false;
            continue;
        }
        let someone_waits = state.requested > shared.durable.load(Ordering::Acquire);
        if !someone_waits && !state.closing {
            let oldest = state.oldest_pending.expect("a non-empty buffer has a pending time");
            let deadline = oldest + shared.lazy_flush_after;
            if Instant::now() < deadline {
                // A waiter or close() cuts this short via `flusher_wakeup`.
                shared.flusher_wakeup.wait_until(&mut state, deadline);
                continue;
            }
        }

        let batch_start = state.buffer_start;
        let fresh_buffer = std::mem::take(&mut state.recycled);
        let batch = std::mem::replace(&mut state.buffer, fresh_buffer);
        let roll_points = std::mem::take(&mut state.roll_points);
        state.buffer_start = state.end;
        state.oldest_pending = None;
        let batch_end = batch_start + batch.len() as u64;

        let result = MutexGuard::unlocked(&mut state, || active.write_batch(shared, batch_start, &batch, &roll_points));
        match result {
            Ok(()) => {
                let ready = shared.advance_durable(&mut state, batch_end);
                state.recycle(batch);
                if !ready.is_empty() {
                    MutexGuard::unlocked(&mut state, || wake(ready));
                }
            }
            Err(error) => {
                let durable = shared.durable.load(Ordering::Acquire);
                tracing::error!(%error, durable_lsn = durable, "log I/O failed; the log stops accepting work");
                active.discard_undurable_tail(shared, durable);
                state.failure = Some(Failure::from_error(&error));
                let all = shared.wake_all(&mut state);
                MutexGuard::unlocked(&mut state, || wake(all));
                return;
            }
        }
    }
}

/// Marks the flusher as gone when its thread ends, and turns a panic into a
/// log failure so that waiters get an error instead of sleeping forever.
struct ExitGuard<'a> {
    shared: &'a Shared,
}

impl Drop for ExitGuard<'_> {
    fn drop(&mut self) {
        let mut state = self.shared.state.lock();
        if std::thread::panicking() && state.failure.is_none() {
            state.failure = Some(Failure::from_message("log flusher", "the flusher thread panicked"));
        }
        state.flusher_gone = true;
        let all = self.shared.wake_all(&mut state);
        drop(state);
        wake(all);
    }
}

/// The segment file the flusher appends to. Owned by the flusher thread alone.
struct ActiveSegment {
    file: File,
    meta: SegmentMeta,
    /// Bytes have been written since the last fsync.
    unsynced: bool,
}

impl ActiveSegment {
    /// Writes one batch, switching segments at each roll point, and fsyncs it.
    fn write_batch(
        &mut self,
        shared: &Shared,
        batch_start: Lsn,
        batch: &[u8],
        roll_points: &[Lsn],
    ) -> Result<(), LogError> {
        shared.write_batches.fetch_add(1, Ordering::Relaxed);
        let mut chunk_start = batch_start;
        let mut rest = batch;
        for &roll_at in roll_points {
            let (head, tail) = rest.split_at((roll_at - chunk_start) as usize);
            self.write(shared, head)?;
            // Seal the old segment before the next one exists: recovery
            // treats damage in a non-last segment as corruption, so a
            // non-last segment must never have an unsynced tail.
            self.sync(shared)?;
            let ready = shared.advance_durable(&mut shared.state.lock(), roll_at);
            wake(ready);
            self.roll(shared, roll_at)?;
            chunk_start = roll_at;
            rest = tail;
        }
        self.write(shared, rest)?;
        self.sync(shared)
    }

    fn write(&mut self, shared: &Shared, bytes: &[u8]) -> Result<(), LogError> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.unsynced = true;
        shared
            .disk
            .write_all(&mut self.file, bytes)
            .map_err(|e| LogError::io(format!("writing log segment {}", self.meta.path.display()), e))
    }

    fn sync(&mut self, shared: &Shared) -> Result<(), LogError> {
        if !self.unsynced {
            return Ok(());
        }
        shared
            .disk
            .sync_data(&self.file)
            .map_err(|e| LogError::io(format!("syncing log segment {}", self.meta.path.display()), e))?;
        shared.fsyncs.fetch_add(1, Ordering::Relaxed);
        self.unsynced = false;
        Ok(())
    }

    fn roll(&mut self, shared: &Shared, start: Lsn) -> Result<(), LogError> {
        let file = create_segment(&shared.disk, &shared.dir, start)?;
        let meta = SegmentMeta { start, path: shared.dir.join(segment_file_name(start)) };
        tracing::debug!(file = %meta.path.display(), "started new log segment");
        shared.segments.lock().push(meta.clone());
        self.file = file;
        self.meta = meta;
        Ok(())
    }

    /// After a failed write or fsync, cuts the active segment back to the
    /// durable LSN. The records past it were reported as failed to their
    /// committers, so they must not come back to life when the log is
    /// reopened; a half-written batch would otherwise also look like a torn
    /// tail or, worse, like mid-log damage. Best effort: the disk is already
    /// misbehaving, and recovery copes with whatever is left.
    fn discard_undurable_tail(&mut self, shared: &Shared, durable: Lsn) {
        if durable < self.meta.start {
            return;
        }
        let keep = SEGMENT_HEADER_LEN + (durable - self.meta.start);
        let outcome = self.file.set_len(keep).and_then(|()| shared.disk.sync_data(&self.file));
        if let Err(error) = outcome {
            tracing::warn!(
                %error,
                file = %self.meta.path.display(),
                "could not cut the undurable tail after a log failure"
            );
        }
    }
}
