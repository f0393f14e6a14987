//! The background thread that turns buffered appends into durable bytes.
//!
//! One round of group commit: take the *entire* append buffer under the lock
//! (a pointer swap), release the lock, `write_all` the batch, `fdatasync`,
//! then publish the new durable LSN and wake every waiter at once. Appenders
//! and waiters that arrive while the round's I/O is in flight accumulate in
//! the fresh buffer and are served together by the next round, so the number
//! of fsyncs tracks the disk's fsync latency, not the commit rate.
//!
//! **Preallocation.** An `fdatasync` that also has to make a new file size
//! durable commits the file system's journal as well as the data, which
//! roughly doubles its latency (measured on ext4: about 270 µs against 145 µs
//! for an 8 KiB write). The flusher therefore keeps the active segment
//! zero-filled [`PREALLOCATE_BYTES`] ahead of its write position: the zeros
//! go out with the fsync of the round that crosses into them, one journal
//! commit per step instead of one per group commit, and every other round
//! only overwrites blocks the file already has (PostgreSQL pre-zeroes its WAL
//! segments for the same reason). Zeros past the last record are trimmed
//! when a segment is sealed or the log closes, and cut at recovery after a
//! crash; a frame of zeros never validates, so they cannot pass for records.
//! A failed zero-fill (a full disk) only turns preallocation off for the
//! segment: the records themselves decide whether the log fails.
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

/// How far ahead of the write position the active segment is zero-filled.
pub(crate) const PREALLOCATE_BYTES: u64 = 1 << 20;

pub(crate) fn spawn(shared: Arc<Shared>, file: File, meta: SegmentMeta) -> Result<JoinHandle<()>, LogError> {
    // Recovery leaves the active segment exactly as long as its records.
    let position =
        file.metadata().map_err(|e| LogError::io(format!("reading size of {}", meta.path.display()), e))?.len();
    let active = ActiveSegment { file, meta, unsynced: false, position, allocated: position, preallocate: true };
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
                MutexGuard::unlocked(&mut state, || active.trim_preallocated(shared));
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
    /// File offset of the cursor: one past the last record written.
    position: u64,
    /// The file's length: records up to `position`, zeros after it.
    allocated: u64,
    /// Cleared for the rest of the segment when a zero-fill fails.
    preallocate: bool,
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
            // non-last segment must never have an unsynced tail, nor a
            // preallocated one.
            self.cut_zeros()?;
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
            .map_err(|e| LogError::io(format!("writing log segment {}", self.meta.path.display()), e))?;
        self.position += bytes.len() as u64;
        self.allocated = self.allocated.max(self.position);
        self.preallocate_ahead(shared);
        Ok(())
    }

    /// Zero-fills the segment up to [`PREALLOCATE_BYTES`] past the write
    /// position once the position has crossed into the last half of the
    /// zeroed space, never past the segment's size limit. Runs before the
    /// round's fsync, which makes the new length durable with the records.
    fn preallocate_ahead(&mut self, shared: &Shared) {
        let limit = SEGMENT_HEADER_LEN + shared.segment_bytes;
        if !self.preallocate || self.allocated >= limit || self.allocated - self.position > PREALLOCATE_BYTES / 2 {
            return;
        }
        let target = (self.position + PREALLOCATE_BYTES).min(limit);
        if target <= self.allocated {
            return;
        }
        match shared.disk.write_zeros_at(&self.file, self.allocated, target - self.allocated) {
            Ok(()) => self.allocated = target,
            Err(error) => {
                // Part of the zeros may be in the file; the length is
                // whatever the file system says, and the trim at sealing
                // cuts it back either way.
                tracing::debug!(%error, file = %self.meta.path.display(), "could not preallocate log space");
                self.preallocate = false;
                self.allocated = self.file.metadata().map_or(self.position, |m| m.len().max(self.position));
            }
        }
    }

    /// Cuts the zeros past the last record (before the sealing fsync).
    fn cut_zeros(&mut self) -> Result<(), LogError> {
        if self.allocated > self.position {
            self.file
                .set_len(self.position)
                .map_err(|e| LogError::io(format!("trimming log segment {}", self.meta.path.display()), e))?;
            self.allocated = self.position;
            self.unsynced = true;
        }
        Ok(())
    }

    /// On close: leaves the segment exactly as long as its records. Best
    /// effort, as recovery would cut the zeros anyway.
    fn trim_preallocated(&mut self, shared: &Shared) {
        if let Err(error) = self.cut_zeros().and_then(|()| self.sync(shared)) {
            tracing::warn!(%error, file = %self.meta.path.display(), "could not trim the log segment on close");
        }
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
        self.position = SEGMENT_HEADER_LEN;
        self.allocated = SEGMENT_HEADER_LEN;
        self.preallocate = true;
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
        self.allocated = keep;
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
