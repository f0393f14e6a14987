//! The one error type of this crate.
//!
//! Messages are written for the person reading a server log, so they name the
//! file and the offset and say what was wrong, e.g.
//! `log segment /data/log/00000000000000000000.log is corrupt at offset 4096: checksum mismatch`.

use std::io;
use std::path::{Path, PathBuf};

use crate::Lsn;

/// Every error returned by the log and by the checksummed record files.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// An operating-system I/O call failed. `context` says what the log was doing.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },

    /// A file's contents failed validation (checksum, magic, version, framing, LSN).
    #[error("{} is corrupt at offset {offset}: {reason}", describe_file(file))]
    Corrupt { file: PathBuf, offset: u64, reason: String },

    /// A record payload exceeds the per-record size limit.
    #[error("record of {size} bytes exceeds the limit of {limit} bytes")]
    RecordTooLarge { size: usize, limit: usize },

    /// The log hit a write or fsync error earlier and refuses all further
    /// appends and waits. After a failed fsync the kernel may already have
    /// dropped the dirty pages, so retrying could report durability that does
    /// not exist; the only safe continuation is to stop and recover from disk.
    #[error("the log has failed and accepts no more work: {0}")]
    Failed(String),

    /// The log was closed with [`Log::close`](crate::Log::close) (or dropped).
    #[error("the log is closed")]
    Closed,

    /// A replicated log could not replicate the record, and it was never
    /// appended: the commit certainly did not happen (no quorum, or this node
    /// is not the primary).
    #[error("not replicated: {0}")]
    NotReplicated(String),

    /// A replicated log lost track of a record after appending it (the
    /// primary changed, or the quorum was lost while it waited): the record
    /// may still commit under the next primary, or may be discarded.
    #[error("commit outcome unknown: {0}")]
    OutcomeUnknown(String),

    /// An LSN argument lies outside what the log holds (or was not a record boundary
    /// the caller could have seen).
    #[error("LSN {lsn} is outside the log's range {start}..{end}")]
    OutOfRange { lsn: Lsn, start: Lsn, end: Lsn },
}

/// `ENOSPC` on Linux and the BSDs: "No space left on device".
pub const ENOSPC: i32 = 28;

impl LogError {
    /// True when the underlying cause was a full disk (ENOSPC), so the caller can
    /// tell the operator to free space rather than suspect a hardware fault.
    ///
    /// For [`LogError::Failed`] the original I/O error is no longer attached; use
    /// [`Log::failure_cause`](crate::Log::failure_cause) to ask the log for it.
    pub fn is_disk_full(&self) -> bool {
        match self {
            LogError::Io { source, .. } => {
                source.kind() == io::ErrorKind::StorageFull || source.raw_os_error() == Some(ENOSPC)
            }
            _ => false,
        }
    }

    /// A record the log refused before taking it in (it is over the size
    /// limit): that record's error alone, the log goes on as it was.
    pub fn is_refused_record(&self) -> bool {
        matches!(self, LogError::RecordTooLarge { .. })
    }

    /// Errors of a replicated log: the replica set, not this node's disk,
    /// failed, so the engine stays writable.
    pub fn is_replication(&self) -> bool {
        matches!(self, LogError::NotReplicated(_) | LogError::OutcomeUnknown(_))
    }

    /// Shorthand used throughout the crate for wrapping an `io::Error`.
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> LogError {
        LogError::Io { context: context.into(), source }
    }

    pub(crate) fn corrupt(file: &Path, offset: u64, reason: impl Into<String>) -> LogError {
        LogError::Corrupt { file: file.to_path_buf(), offset, reason: reason.into() }
    }
}

/// "log segment <path>" for segment files, "file <path>" for anything else.
fn describe_file(file: &Path) -> String {
    if file.extension().is_some_and(|ext| ext == "log") {
        format!("log segment {}", file.display())
    } else {
        format!("file {}", file.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrupt_message_names_segment_and_offset() {
        let err = LogError::corrupt(Path::new("00000000000000000000.log"), 4096, "checksum mismatch");
        assert_eq!(
            err.to_string(),
            "log segment 00000000000000000000.log is corrupt at offset 4096: checksum mismatch"
        );
        let err = LogError::corrupt(Path::new("/x/data.ckpt"), 20, "bad magic");
        assert_eq!(err.to_string(), "file /x/data.ckpt is corrupt at offset 20: bad magic");
    }

    #[test]
    fn disk_full_is_recognised_by_kind_and_errno() {
        let err = LogError::io("writing", io::Error::from_raw_os_error(ENOSPC));
        assert!(err.is_disk_full());
        let err = LogError::io("writing", io::Error::from(io::ErrorKind::StorageFull));
        assert!(err.is_disk_full());
        let err = LogError::io("writing", io::Error::from(io::ErrorKind::PermissionDenied));
        assert!(!err.is_disk_full());
        assert!(!LogError::Closed.is_disk_full());
    }
}
