//! Tessera's redo log and checksummed checkpoint files.
//!
//! The engine hands [`Log::append`] opaque payloads, each tagged with a
//! `stream` (so many partitions can later share one physical log), and gets
//! back an [`Lsn`]: a byte position in one logical stream that grows across
//! segment files. A record's LSN is where its frame starts; its end LSN is the
//! next record's LSN. Segment headers are not counted, so segment k+1 starts
//! at segment k's start LSN plus its record bytes.
//!
//! **Files** (integers little-endian). The log is a directory of segments
//! named by start LSN in 20 decimal digits (`00000000000000004096.log`).
//! Header, 28 bytes: magic `b"TSSRLOG\0"`, u32 format version (1), u32
//! reserved, u64 start LSN, u32 crc32 of the preceding 24 bytes. Then frames:
//! u32 payload length, u32 crc32 over [lsn u64, stream u32, length u32,
//! payload], u64 lsn, u32 stream, payload. A record never spans segments; a
//! new segment starts when the next record would push the current one past
//! `segment_bytes`. New segments are written as `*.log.tmp`, fsynced and
//! renamed, so a segment name always has a full header. Checkpoint files
//! ([`checked_file`]): header `b"TSSRCKPT"`, u32 version 1, 4-byte kind, u32
//! crc; records as u32 length, u32 crc32(payload), payload; trailer u32
//! 0xFFFFFFFF, u64 record count, u32 crc32 over all record crcs.
//!
//! **Group commit.** `append` only copies the frame into a shared buffer
//! under a short lock. One flusher thread per log takes the whole buffer at
//! once, writes it with one `write_all` and one `fdatasync`, then wakes every
//! waiter it satisfied. Committers arriving during that fsync pile up in the
//! fresh buffer and share the next one, so fsyncs scale with disk latency,
//! not with the commit rate. **Durability modes** live above this crate: a
//! synchronous commit is `append` + [`Log::wait_durable`] (or, without a
//! thread, [`Log::poll_durable`] from a task, or [`Log::on_durable`], a
//! callback the flusher runs after its fsync); a lazy commit only
//! appends, and the flusher guarantees it is fsynced within
//! `lazy_flush_interval` (it flushes when the oldest pending record is half
//! that old), like SQL Server's delayed durability.
//!
//! **Recovery** ([`Log::open`]) checks every header, segment continuity, and
//! every record's checksum and embedded LSN. Because the LSN is inside the
//! checksum, a stray intact frame at the wrong place does not validate. At a
//! bad frame in the *last* segment, recovery searches the rest of the file
//! for any frame that validates at its own position: if none exists, the bad
//! bytes are a torn tail from a crash mid-write (or the zeros the flusher
//! preallocates ahead of its writes); they are truncated (durably),
//! reported in [`RecoveryReport::cut_tail`], and appending resumes there. If
//! one does exist, or the damage is in an earlier segment, or a header is
//! bad, that is damage to data once written in full and open fails with
//! [`LogError::Corrupt`] naming file and offset: skipping it would drop a
//! committed transaction while keeping later ones. (Caveat: a disk that
//! persists pages of an un-fsynced batch out of order can make a crash look
//! like mid-log damage; that needs an operator, never a silent guess.)
//!
//! **After an I/O error** the log poisons itself. Once an fsync has failed the
//! kernel may have dropped the dirty pages, so a retry could "succeed"
//! without the data. The flusher cuts the active segment back to the durable
//! LSN (best effort) so failed commits do not resurface on reopen, wakes the
//! stranded waiters with the original error ([`LogError::is_disk_full`] tells
//! ENOSPC apart), and every later append or wait gets [`LogError::Failed`];
//! the engine turns read-only and recovery starts from the files on disk.

pub mod checked_file;
mod error;
mod failure;
mod fault;
mod flusher;
mod frame;
mod log;
mod reader;
mod recovery;
mod segment;

pub use checked_file::{CheckedFileReader, CheckedFileSummary, CheckedFileWriter};
pub use error::{ENOSPC, LogError};
pub use fault::{FaultInjector, InjectedError};
pub use frame::frame_len;
pub use log::{DurableCallback, Log, LogConfig, LogRecord, LogStats};
pub use reader::LogReader;
pub use recovery::{CutTail, RecoveryReport, ZERO_FILLED};

/// A byte position in the logical log stream (see the crate documentation).
pub type Lsn = u64;

/// Largest payload accepted by [`Log::append`] and by checked files: one
/// transaction's redo record, so it bounds a transaction's size (1 GiB, as
/// PostgreSQL bounds a single value; a COPY of tens of millions of narrow
/// rows fits).
pub const MAX_RECORD_BYTES: usize = (1 << 30) - 1;
