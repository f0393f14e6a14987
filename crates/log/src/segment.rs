//! Segment files: naming, the fixed header, creation, and the I/O primitives
//! (write, fsync) that route through the fault injector.
//!
//! Header layout (28 bytes, little-endian):
//!
//! ```text
//! offset  size  field
//!      0     8  magic b"TSSRLOG\0"
//!      8     4  format version (1)
//!     12     4  reserved (0)
//!     16     8  start LSN of the segment's first record
//!     24     4  crc32 of bytes 0..24
//! ```

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::Lsn;
use crate::error::LogError;
use crate::fault::FaultInjector;

pub(crate) const SEGMENT_MAGIC: [u8; 8] = *b"TSSRLOG\0";
pub(crate) const SEGMENT_FORMAT_VERSION: u32 = 1;
pub(crate) const SEGMENT_HEADER_LEN: u64 = 28;

/// `00000000000000001234.log`: the start LSN in 20 zero-padded decimal digits,
/// so that lexical order of names is LSN order.
pub(crate) fn segment_file_name(start: Lsn) -> String {
    format!("{start:020}.log")
}

/// Inverse of [`segment_file_name`]; `None` for any other file name.
pub(crate) fn parse_segment_file_name(name: &str) -> Option<Lsn> {
    let digits = name.strip_suffix(".log")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

pub(crate) fn encode_segment_header(start: Lsn) -> [u8; SEGMENT_HEADER_LEN as usize] {
    let mut header = [0u8; SEGMENT_HEADER_LEN as usize];
    header[0..8].copy_from_slice(&SEGMENT_MAGIC);
    header[8..12].copy_from_slice(&SEGMENT_FORMAT_VERSION.to_le_bytes());
    // bytes 12..16 reserved, zero
    header[16..24].copy_from_slice(&start.to_le_bytes());
    let crc = crc32fast::hash(&header[0..24]);
    header[24..28].copy_from_slice(&crc.to_le_bytes());
    header
}

/// Validates a segment header and returns the start LSN it records, or
/// `(offset, reason)` describing the first problem.
pub(crate) fn decode_segment_header(bytes: &[u8]) -> Result<Lsn, (u64, String)> {
    if bytes.len() < SEGMENT_HEADER_LEN as usize {
        return Err((0, format!("truncated segment header ({} of {SEGMENT_HEADER_LEN} bytes present)", bytes.len())));
    }
    if bytes[0..8] != SEGMENT_MAGIC {
        return Err((0, "bad segment magic (not a Tessera log segment)".into()));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    if version != SEGMENT_FORMAT_VERSION {
        return Err((
            8,
            format!("unknown segment format version {version} (this build reads version {SEGMENT_FORMAT_VERSION})"),
        ));
    }
    let stored_crc = u32::from_le_bytes(bytes[24..28].try_into().unwrap());
    if crc32fast::hash(&bytes[0..24]) != stored_crc {
        return Err((24, "segment header checksum mismatch".into()));
    }
    Ok(u64::from_le_bytes(bytes[16..24].try_into().unwrap()))
}

/// Reads and checks the header of an open segment file, also checking that the
/// LSN inside agrees with the file name.
pub(crate) fn check_segment_header_of(file: &mut File, path: &Path, expected_start: Lsn) -> Result<(), LogError> {
    use std::io::Read;
    let mut header = Vec::with_capacity(SEGMENT_HEADER_LEN as usize);
    Read::by_ref(file)
        .take(SEGMENT_HEADER_LEN)
        .read_to_end(&mut header)
        .map_err(|e| LogError::io(format!("reading header of {}", path.display()), e))?;
    let start = decode_segment_header(&header).map_err(|(offset, reason)| LogError::corrupt(path, offset, reason))?;
    if start != expected_start {
        return Err(LogError::corrupt(
            path,
            16,
            format!("header start LSN {start} does not match the file name (LSN {expected_start})"),
        ));
    }
    Ok(())
}

/// Performs the log's writes and fsyncs, consulting the fault injector first.
/// Every byte of segment data and every fsync the log issues goes through here.
#[derive(Debug, Clone, Default)]
pub(crate) struct DiskIo {
    pub faults: Option<Arc<FaultInjector>>,
}

impl DiskIo {
    pub(crate) fn write_all(&self, file: &mut File, bytes: &[u8]) -> io::Result<()> {
        if let Some(faults) = &self.faults {
            faults.check_write()?;
        }
        file.write_all(bytes)
    }

    /// Writes `len` zero bytes at `offset` without moving the file cursor:
    /// the flusher's preallocation of segment space (see `flusher.rs`).
    pub(crate) fn write_zeros_at(&self, file: &File, offset: u64, len: u64) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        static ZEROS: [u8; 64 << 10] = [0; 64 << 10];
        if let Some(faults) = &self.faults {
            faults.check_write()?;
        }
        let mut at = offset;
        let end = offset + len;
        while at < end {
            let n = (end - at).min(ZEROS.len() as u64) as usize;
            file.write_all_at(&ZEROS[..n], at)?;
            at += n as u64;
        }
        Ok(())
    }

    /// fdatasync: the record bytes and the file size, not the timestamps.
    pub(crate) fn sync_data(&self, file: &File) -> io::Result<()> {
        if let Some(faults) = &self.faults {
            faults.check_sync()?;
        }
        file.sync_data()
    }

    /// Makes file creations, renames and deletions in `dir` durable.
    pub(crate) fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if let Some(faults) = &self.faults {
            faults.check_sync()?;
        }
        File::open(dir)?.sync_all()
    }
}

/// Creates segment `start` in `dir` and returns it open for writing, positioned
/// after the header.
///
/// The header is written to a temporary name, fsynced, and only then renamed
/// into place, so a file with a segment name always has a complete header: a
/// bad header found at recovery is real damage, never a crash artefact.
pub(crate) fn create_segment(disk: &DiskIo, dir: &Path, start: Lsn) -> Result<File, LogError> {
    let final_path = dir.join(segment_file_name(start));
    let tmp_path = dir.join(format!("{}.tmp", segment_file_name(start)));
    let context = |what: &str| format!("{what} log segment {}", final_path.display());
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp_path)
        .map_err(|e| LogError::io(context("creating"), e))?;
    disk.write_all(&mut file, &encode_segment_header(start))
        .map_err(|e| LogError::io(context("writing header of"), e))?;
    disk.sync_data(&file).map_err(|e| LogError::io(context("syncing header of"), e))?;
    fs::rename(&tmp_path, &final_path).map_err(|e| LogError::io(context("renaming"), e))?;
    disk.sync_dir(dir).map_err(|e| LogError::io(format!("syncing log directory {}", dir.display()), e))?;
    Ok(file)
}

/// One segment file known to the log.
#[derive(Debug, Clone)]
pub(crate) struct SegmentMeta {
    pub start: Lsn,
    pub path: PathBuf,
}

/// The segment files in `dir`, sorted by start LSN. Leftover `*.log.tmp` files
/// from a crash during segment creation are removed: their data was never
/// acknowledged.
pub(crate) fn list_segments(dir: &Path) -> Result<Vec<SegmentMeta>, LogError> {
    let entries = fs::read_dir(dir).map_err(|e| LogError::io(format!("listing log directory {}", dir.display()), e))?;
    let mut segments = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| LogError::io(format!("listing log directory {}", dir.display()), e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(start) = parse_segment_file_name(name) {
            segments.push(SegmentMeta { start, path: entry.path() });
        } else if name
            .strip_suffix(".log.tmp")
            .is_some_and(|stem| parse_segment_file_name(&format!("{stem}.log")).is_some())
        {
            tracing::info!(file = %entry.path().display(), "removing unfinished log segment");
            fs::remove_file(entry.path())
                .map_err(|e| LogError::io(format!("removing {}", entry.path().display()), e))?;
        }
    }
    segments.sort_by_key(|s| s.start);
    Ok(segments)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(segment_file_name(0), "00000000000000000000.log");
        assert_eq!(segment_file_name(1234), "00000000000000001234.log");
        assert_eq!(parse_segment_file_name("00000000000000001234.log"), Some(1234));
        assert_eq!(parse_segment_file_name("1234.log"), None);
        assert_eq!(parse_segment_file_name("0000000000000000123x.log"), None);
        assert_eq!(parse_segment_file_name("00000000000000001234.log.tmp"), None);
    }

    #[test]
    fn header_round_trip_and_damage() {
        let header = encode_segment_header(4242);
        assert_eq!(decode_segment_header(&header), Ok(4242));
        let mut bad = header;
        bad[0] = b'X';
        assert!(decode_segment_header(&bad).unwrap_err().1.contains("magic"));
        let mut bad = header;
        bad[8] = 2;
        assert!(decode_segment_header(&bad).unwrap_err().1.contains("version 2"));
        let mut bad = header;
        bad[17] ^= 1;
        assert!(decode_segment_header(&bad).unwrap_err().1.contains("checksum"));
        assert!(decode_segment_header(&header[..20]).is_err());
    }
}
