//! The scan `Log::open` runs over every segment before the log accepts appends.
//!
//! It checks each segment header, that each segment starts where the previous
//! one ended, and every record's checksum and embedded LSN. The only damage it
//! repairs is a torn tail of the last segment, i.e. bytes after the last valid
//! record that contain no valid record. Everything else is reported as
//! [`LogError::Corrupt`], because quietly skipping a record in the middle of
//! the log would lose a committed transaction while later ones survive.

use std::fs::{self, File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::Lsn;
use crate::error::LogError;
use crate::frame::{self, FRAME_HEADER_LEN};
use crate::segment::{self, DiskIo, SEGMENT_HEADER_LEN, SegmentMeta, create_segment, decode_segment_header};

/// What `Log::open` found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryReport {
    /// First LSN still held in the files (greater than 0 after truncation).
    pub start_lsn: Lsn,
    /// One past the last valid record; appends continue here.
    pub end_lsn: Lsn,
    /// Valid records found across all segments.
    pub records: u64,
    /// Segment files present after recovery.
    pub segments: usize,
    /// Set when a torn tail was cut off the last segment.
    pub cut_tail: Option<CutTail>,
}

/// A torn tail that recovery truncated away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutTail {
    /// The segment that was truncated.
    pub file: PathBuf,
    /// File offset (not LSN) where the file now ends.
    pub offset: u64,
    /// Bytes removed from the end of the file.
    pub discarded_bytes: u64,
    /// Why the first discarded frame did not validate.
    pub reason: String,
}

/// [`CutTail::reason`] when everything past the last record was zeros.
pub const ZERO_FILLED: &str = "zero-filled space past the last record";

/// The recovered state handed to the running log.
pub(crate) struct Recovered {
    pub segments: Vec<SegmentMeta>,
    pub end: Lsn,
    /// The last segment, open for writing and positioned at its end.
    pub active_file: File,
    pub report: RecoveryReport,
}

/// Outcome of scanning one segment's bytes.
struct SegmentScan {
    records: u64,
    /// File offset one past the last valid record.
    valid_end: usize,
    /// The first bad frame, if the scan stopped before the end of the file.
    damage: Option<(usize, String)>,
}

pub(crate) fn recover(dir: &Path, disk: &DiskIo) -> Result<Recovered, LogError> {
    let dir_is_new = !dir.exists();
    fs::create_dir_all(dir).map_err(|e| LogError::io(format!("creating log directory {}", dir.display()), e))?;
    if dir_is_new && let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        // The new directory's entry must survive a crash along with the
        // segment created inside it.
        disk.sync_dir(parent).map_err(|e| LogError::io(format!("syncing directory {}", parent.display()), e))?;
    }
    let segments = segment::list_segments(dir)?;

    if segments.is_empty() {
        let active_file = create_segment(disk, dir, 0)?;
        tracing::info!(dir = %dir.display(), "created new log");
        return Ok(Recovered {
            segments: vec![SegmentMeta { start: 0, path: dir.join(segment::segment_file_name(0)) }],
            end: 0,
            active_file,
            report: RecoveryReport { start_lsn: 0, end_lsn: 0, records: 0, segments: 1, cut_tail: None },
        });
    }

    let mut records = 0u64;
    let mut expected_start: Option<Lsn> = None;
    let mut cut_tail = None;
    let mut end = 0;
    let last_index = segments.len() - 1;
    for (index, meta) in segments.iter().enumerate() {
        let is_last = index == last_index;
        let bytes = fs::read(&meta.path)
            .map_err(|e| LogError::io(format!("reading log segment {}", meta.path.display()), e))?;
        let header_start =
            decode_segment_header(&bytes).map_err(|(offset, reason)| LogError::corrupt(&meta.path, offset, reason))?;
        if header_start != meta.start {
            return Err(LogError::corrupt(
                &meta.path,
                16,
                format!("header start LSN {header_start} does not match the file name (LSN {})", meta.start),
            ));
        }
        if let Some(expected) = expected_start
            && meta.start != expected
        {
            return Err(LogError::corrupt(
                &meta.path,
                16,
                format!(
                    "segment starts at LSN {} but the previous segment ends at LSN {expected}; \
                     log data is missing or a stray segment was added",
                    meta.start
                ),
            ));
        }

        let scan = scan_segment(&bytes, meta.start);
        records += scan.records;
        if let Some((offset, reason)) = scan.damage {
            if !is_last {
                return Err(LogError::corrupt(
                    &meta.path,
                    offset as u64,
                    format!("{reason} (in a segment that is not the last one)"),
                ));
            }
            let zeros = bytes[offset..].iter().all(|&b| b == 0);
            if zeros {
                // The flusher's preallocated space (or a file extended by a
                // crash): the normal end of a log that was not closed.
                cut_tail = Some(CutTail {
                    file: meta.path.clone(),
                    offset: offset as u64,
                    discarded_bytes: (bytes.len() - offset) as u64,
                    reason: ZERO_FILLED.into(),
                });
            } else if let Some(valid_at) = find_valid_frame_after(&bytes, offset + 1, meta.start) {
                return Err(LogError::corrupt(
                    &meta.path,
                    offset as u64,
                    format!(
                        "{reason}; a valid record follows at offset {valid_at}, \
                         so this is damage inside the log, not a torn tail"
                    ),
                ));
            } else {
                cut_tail = Some(CutTail {
                    file: meta.path.clone(),
                    offset: offset as u64,
                    discarded_bytes: (bytes.len() - offset) as u64,
                    reason,
                });
            }
        }
        end = meta.start + (scan.valid_end as u64 - SEGMENT_HEADER_LEN);
        expected_start = Some(end);
    }

    let active_meta = &segments[last_index];
    let active_file = open_active_segment(disk, active_meta, end, cut_tail.as_ref())?;
    if let Some(cut) = cut_tail.as_ref().filter(|cut| cut.reason == ZERO_FILLED) {
        tracing::debug!(file = %cut.file.display(), offset = cut.offset, "cut preallocated space off the log");
    } else if let Some(cut) = &cut_tail {
        tracing::warn!(
            file = %cut.file.display(),
            offset = cut.offset,
            discarded_bytes = cut.discarded_bytes,
            reason = %cut.reason,
            "cut torn tail off the log"
        );
    }
    let report =
        RecoveryReport { start_lsn: segments[0].start, end_lsn: end, records, segments: segments.len(), cut_tail };
    Ok(Recovered { segments, end, active_file, report })
}

/// Walks the frames of one segment from just after the header.
fn scan_segment(bytes: &[u8], segment_start: Lsn) -> SegmentScan {
    let mut pos = SEGMENT_HEADER_LEN as usize;
    let mut records = 0;
    while pos < bytes.len() {
        let lsn = segment_start + (pos as u64 - SEGMENT_HEADER_LEN);
        match frame::validate_in_buffer(bytes, pos, lsn) {
            Ok(frame_end) => {
                records += 1;
                pos = frame_end;
            }
            Err(reason) => {
                return SegmentScan { records, valid_end: pos, damage: Some((pos, reason)) };
            }
        }
    }
    SegmentScan { records, valid_end: pos, damage: None }
}

/// Looks for any offset at or after `from` where a complete frame validates
/// with the LSN that belongs to that position. A torn write can only lose the
/// end of the log, so the existence of such a frame means the bad bytes
/// before it are damage to data that was once written in full.
fn find_valid_frame_after(bytes: &[u8], from: usize, segment_start: Lsn) -> Option<usize> {
    let last_candidate = bytes.len().checked_sub(FRAME_HEADER_LEN)?;
    (from..=last_candidate).find(|&offset| {
        let lsn = segment_start + (offset as u64 - SEGMENT_HEADER_LEN);
        // Cheap pre-filter on the embedded LSN before paying for a checksum.
        bytes[offset + 8..offset + 16] == lsn.to_le_bytes() && frame::validate_in_buffer(bytes, offset, lsn).is_ok()
    })
}

/// Opens the last segment for appending, first truncating a torn tail away
/// (and making the truncation durable, so the garbage cannot reappear after
/// another crash and be mistaken for something else).
fn open_active_segment(
    disk: &DiskIo,
    meta: &SegmentMeta,
    end: Lsn,
    cut_tail: Option<&CutTail>,
) -> Result<File, LogError> {
    let context = |what: &str| format!("{what} log segment {}", meta.path.display());
    let mut file =
        OpenOptions::new().read(true).write(true).open(&meta.path).map_err(|e| LogError::io(context("opening"), e))?;
    let file_end = SEGMENT_HEADER_LEN + (end - meta.start);
    if let Some(cut) = cut_tail {
        debug_assert_eq!(cut.offset, file_end);
        file.set_len(file_end).map_err(|e| LogError::io(context("truncating torn tail of"), e))?;
        disk.sync_data(&file).map_err(|e| LogError::io(context("syncing truncated"), e))?;
    }
    file.seek(SeekFrom::Start(file_end)).map_err(|e| LogError::io(context("seeking to end of"), e))?;
    Ok(file)
}
