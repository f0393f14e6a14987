//! Checksummed record files, used by the engine for checkpoint files.
//!
//! ```text
//! header   (20 bytes)  magic b"TSSRCKPT" | version u32 (1) | kind [u8; 4] | crc32 of the preceding 16 bytes
//! record   (8 + n)     length u32 | crc32(payload) u32 | payload
//! ...
//! trailer  (16 bytes)  0xFFFFFFFF u32 | record count u64 | crc32 over every record's crc (u32 LE each, in order)
//! ```
//!
//! A file is written under `<path>.tmp`, fsynced, renamed to `<path>` and the
//! directory fsynced, so a file with the final name was completely written.
//! The trailer makes truncation at a record boundary detectable, and the
//! crc-of-crcs catches records dropped, duplicated or reordered. A checkpoint
//! file is never partially valid: the reader reports `None` (end of records)
//! only after it has verified the trailer and that nothing follows it, so a
//! caller that loads records as it goes must treat an error at any point,
//! including after the last record, as "this file is unusable".

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::MAX_RECORD_BYTES;
use crate::error::LogError;

const CHECKED_FILE_MAGIC: [u8; 8] = *b"TSSRCKPT";
const CHECKED_FILE_VERSION: u32 = 1;
const HEADER_LEN: u64 = 20;
const RECORD_HEADER_LEN: u64 = 8;
const TRAILER_LEN: u64 = 16;
/// A length field with this value starts the trailer instead of a record.
const TRAILER_MARKER: u32 = 0xFFFF_FFFF;
const IO_BUFFER_BYTES: usize = 1 << 20;

/// What [`CheckedFileWriter::finish`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckedFileSummary {
    pub records: u64,
    /// Size of the finished file, header and trailer included.
    pub bytes: u64,
}

/// `<path>.tmp`, beside the final file so the rename stays within one directory.
fn temporary_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

fn encode_header(kind: [u8; 4]) -> [u8; HEADER_LEN as usize] {
    let mut header = [0u8; HEADER_LEN as usize];
    header[0..8].copy_from_slice(&CHECKED_FILE_MAGIC);
    header[8..12].copy_from_slice(&CHECKED_FILE_VERSION.to_le_bytes());
    header[12..16].copy_from_slice(&kind);
    let crc = crc32fast::hash(&header[0..16]);
    header[16..20].copy_from_slice(&crc.to_le_bytes());
    header
}

/// Human-readable form of a 4-byte kind tag, e.g. `"DATA"`.
fn kind_name(kind: &[u8; 4]) -> String {
    String::from_utf8_lossy(kind).into_owned()
}

/// Writes a checked file. Dropping it without [`finish`](Self::finish)
/// removes the temporary file and leaves any existing `<path>` untouched.
pub struct CheckedFileWriter {
    path: PathBuf,
    tmp_path: PathBuf,
    out: Option<BufWriter<File>>,
    records: u64,
    bytes: u64,
    crc_of_crcs: crc32fast::Hasher,
}

impl CheckedFileWriter {
    /// Starts writing `<path>.tmp` with a header carrying `kind`
    /// (e.g. `*b"DATA"`, `*b"DLTA"`, `*b"MANI"`).
    pub fn create(path: impl AsRef<Path>, kind: [u8; 4]) -> Result<Self, LogError> {
        let path = path.as_ref().to_path_buf();
        let tmp_path = temporary_path(&path);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp_path)
            .map_err(|e| LogError::io(format!("creating {}", tmp_path.display()), e))?;
        let mut writer = CheckedFileWriter {
            path,
            tmp_path,
            out: Some(BufWriter::with_capacity(IO_BUFFER_BYTES, file)),
            records: 0,
            bytes: 0,
            crc_of_crcs: crc32fast::Hasher::new(),
        };
        writer.write(&encode_header(kind))?;
        Ok(writer)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), LogError> {
        let out = self.out.as_mut().expect("writer used after finish");
        out.write_all(bytes).map_err(|e| LogError::io(format!("writing {}", self.tmp_path.display()), e))?;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    /// Appends one record. Records up to 64 MiB.
    pub fn append(&mut self, record: &[u8]) -> Result<(), LogError> {
        if record.len() > MAX_RECORD_BYTES {
            return Err(LogError::RecordTooLarge { size: record.len(), limit: MAX_RECORD_BYTES });
        }
        let crc = crc32fast::hash(record);
        let mut record_header = [0u8; RECORD_HEADER_LEN as usize];
        record_header[0..4].copy_from_slice(&(record.len() as u32).to_le_bytes());
        record_header[4..8].copy_from_slice(&crc.to_le_bytes());
        self.write(&record_header)?;
        self.write(record)?;
        self.crc_of_crcs.update(&crc.to_le_bytes());
        self.records += 1;
        Ok(())
    }

    /// Writes the trailer, fsyncs, renames `<path>.tmp` to `<path>` and
    /// fsyncs the directory. Only after this returns does `<path>` exist
    /// with the new contents.
    pub fn finish(mut self) -> Result<CheckedFileSummary, LogError> {
        let mut trailer = [0u8; TRAILER_LEN as usize];
        trailer[0..4].copy_from_slice(&TRAILER_MARKER.to_le_bytes());
        trailer[4..12].copy_from_slice(&self.records.to_le_bytes());
        trailer[12..16].copy_from_slice(&self.crc_of_crcs.clone().finalize().to_le_bytes());
        self.write(&trailer)?;

        let tmp = self.tmp_path.display().to_string();
        let out = self.out.take().expect("finish called once");
        let file = out.into_inner().map_err(|e| LogError::io(format!("writing {tmp}"), e.into_error()))?;
        file.sync_all().map_err(|e| LogError::io(format!("syncing {tmp}"), e))?;
        drop(file);
        fs::rename(&self.tmp_path, &self.path)
            .map_err(|e| LogError::io(format!("renaming {tmp} to {}", self.path.display()), e))?;
        let dir = parent_dir(&self.path);
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| LogError::io(format!("syncing directory {}", dir.display()), e))?;
        Ok(CheckedFileSummary { records: self.records, bytes: self.bytes })
    }
}

impl Drop for CheckedFileWriter {
    fn drop(&mut self) {
        // `out` is still present only if `finish` did not complete.
        if self.out.take().is_some() {
            let _ = fs::remove_file(&self.tmp_path);
        }
    }
}

/// Reads and verifies a checked file record by record.
pub struct CheckedFileReader {
    path: PathBuf,
    input: BufReader<File>,
    file_len: u64,
    /// File offset of the next unread byte.
    offset: u64,
    records: u64,
    crc_of_crcs: crc32fast::Hasher,
    /// Reused payload buffer for [`next_record`](Self::next_record).
    record: Vec<u8>,
    /// The trailer was verified, or an error was returned: no more items.
    done: bool,
}

impl CheckedFileReader {
    /// Opens `path` and checks its header, including that it holds `expected_kind`.
    pub fn open(path: impl AsRef<Path>, expected_kind: [u8; 4]) -> Result<Self, LogError> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|e| LogError::io(format!("opening {}", path.display()), e))?;
        let file_len =
            file.metadata().map_err(|e| LogError::io(format!("reading metadata of {}", path.display()), e))?.len();
        let mut reader = CheckedFileReader {
            path,
            input: BufReader::with_capacity(IO_BUFFER_BYTES, file),
            file_len,
            offset: 0,
            records: 0,
            crc_of_crcs: crc32fast::Hasher::new(),
            record: Vec::new(),
            done: false,
        };
        let mut header = [0u8; HEADER_LEN as usize];
        reader.read_exact(&mut header, "header")?;
        if header[0..8] != CHECKED_FILE_MAGIC {
            return Err(reader.corrupt(0, "bad magic (not a Tessera checkpoint file)"));
        }
        let version = u32::from_le_bytes(header[8..12].try_into().unwrap());
        if version != CHECKED_FILE_VERSION {
            return Err(reader.corrupt(
                8,
                format!("unknown format version {version} (this build reads version {CHECKED_FILE_VERSION})"),
            ));
        }
        let stored_crc = u32::from_le_bytes(header[16..20].try_into().unwrap());
        if crc32fast::hash(&header[0..16]) != stored_crc {
            return Err(reader.corrupt(16, "header checksum mismatch"));
        }
        let kind: [u8; 4] = header[12..16].try_into().unwrap();
        if kind != expected_kind {
            return Err(reader.corrupt(
                12,
                format!("file holds kind {:?}, expected {:?}", kind_name(&kind), kind_name(&expected_kind)),
            ));
        }
        Ok(reader)
    }

    fn corrupt(&self, offset: u64, reason: impl Into<String>) -> LogError {
        LogError::corrupt(&self.path, offset, reason)
    }

    /// Reads exactly `buf.len()` bytes; running out of file is corruption
    /// (the writer always ends with a trailer).
    fn read_exact(&mut self, buf: &mut [u8], what: &str) -> Result<(), LogError> {
        let at = self.offset;
        if self.file_len.saturating_sub(at) < buf.len() as u64 {
            return Err(self.corrupt(at, format!("file is truncated inside the {what}")));
        }
        match self.input.read_exact(buf) {
            Ok(()) => {
                self.offset += buf.len() as u64;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Err(self.corrupt(at, format!("file is truncated inside the {what}")))
            }
            Err(e) => Err(LogError::io(format!("reading {}", self.path.display()), e)),
        }
    }

    /// The next record, or `None` once the trailer has been verified.
    pub fn next_record(&mut self) -> Result<Option<&[u8]>, LogError> {
        if self.done {
            return Ok(None);
        }
        match self.read_record() {
            Ok(true) => Ok(Some(&self.record)),
            Ok(false) => {
                self.done = true;
                Ok(None)
            }
            Err(error) => {
                self.done = true;
                Err(error)
            }
        }
    }

    /// Reads the next record into `self.record`; false when the verified
    /// trailer was reached instead.
    fn read_record(&mut self) -> Result<bool, LogError> {
        let record_offset = self.offset;
        let mut length_bytes = [0u8; 4];
        self.read_exact(&mut length_bytes, "trailer (the file ends without one)")?;
        let length = u32::from_le_bytes(length_bytes);
        if length == TRAILER_MARKER {
            self.check_trailer(record_offset)?;
            return Ok(false);
        }
        // Bound the length by what the file can hold before allocating.
        let room = self.file_len - self.offset;
        if length as usize > MAX_RECORD_BYTES || u64::from(length) + 4 > room {
            return Err(self.corrupt(
                record_offset,
                format!("record length {length} does not fit in the file ({room} bytes remain)"),
            ));
        }
        let mut crc_bytes = [0u8; 4];
        self.read_exact(&mut crc_bytes, "record header")?;
        let stored_crc = u32::from_le_bytes(crc_bytes);
        let mut record = std::mem::take(&mut self.record);
        record.clear();
        record.resize(length as usize, 0);
        let read = self.read_exact(&mut record, "record");
        self.record = record;
        read?;
        let actual_crc = crc32fast::hash(&self.record);
        if actual_crc != stored_crc {
            return Err(self.corrupt(
                record_offset,
                format!(
                    "record {} checksum mismatch (stored {stored_crc:#010x}, computed {actual_crc:#010x})",
                    self.records
                ),
            ));
        }
        self.crc_of_crcs.update(&stored_crc.to_le_bytes());
        self.records += 1;
        Ok(true)
    }

    fn check_trailer(&mut self, trailer_offset: u64) -> Result<(), LogError> {
        let mut rest = [0u8; (TRAILER_LEN - 4) as usize];
        self.read_exact(&mut rest, "trailer")?;
        let count = u64::from_le_bytes(rest[0..8].try_into().unwrap());
        let stored_crc = u32::from_le_bytes(rest[8..12].try_into().unwrap());
        if count != self.records {
            return Err(
                self.corrupt(trailer_offset, format!("trailer says {count} records but {} were found", self.records))
            );
        }
        if stored_crc != self.crc_of_crcs.clone().finalize() {
            return Err(self.corrupt(trailer_offset, "trailer checksum mismatch"));
        }
        if self.offset != self.file_len {
            return Err(self
                .corrupt(self.offset, format!("{} unexpected bytes after the trailer", self.file_len - self.offset)));
        }
        Ok(())
    }

    /// Records returned so far.
    pub fn records_read(&self) -> u64 {
        self.records
    }

    /// Reads and verifies a whole file, returning its records. For callers
    /// that want all-or-nothing without handling a stream.
    pub fn read_all(path: impl AsRef<Path>, kind: [u8; 4]) -> Result<Vec<Vec<u8>>, LogError> {
        CheckedFileReader::open(path, kind)?.collect()
    }

    /// Verifies a whole file without keeping its records, e.g. before
    /// starting to load it.
    pub fn verify(path: impl AsRef<Path>, kind: [u8; 4]) -> Result<CheckedFileSummary, LogError> {
        let mut reader = CheckedFileReader::open(path, kind)?;
        while reader.next_record()?.is_some() {}
        Ok(CheckedFileSummary { records: reader.records, bytes: reader.file_len })
    }
}

impl Iterator for CheckedFileReader {
    type Item = Result<Vec<u8>, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().map(|record| record.map(<[u8]>::to_vec)).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_sample(path: &Path, records: &[&[u8]]) -> CheckedFileSummary {
        let mut writer = CheckedFileWriter::create(path, *b"DATA").unwrap();
        for record in records {
            writer.append(record).unwrap();
        }
        writer.finish().unwrap()
    }

    fn sample_records() -> Vec<Vec<u8>> {
        vec![b"alpha".to_vec(), Vec::new(), vec![7u8; 300], b"omega".to_vec()]
    }

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.ckpt");
        let records = sample_records();
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        let summary = write_sample(&path, &refs);
        assert_eq!(summary.records, 4);
        assert_eq!(summary.bytes, fs::metadata(&path).unwrap().len());
        assert!(!temporary_path(&path).exists());
        assert_eq!(CheckedFileReader::read_all(&path, *b"DATA").unwrap(), records);
        assert_eq!(CheckedFileReader::verify(&path, *b"DATA").unwrap(), summary);

        let mut reader = CheckedFileReader::open(&path, *b"DATA").unwrap();
        assert_eq!(reader.next_record().unwrap(), Some(&b"alpha"[..]));
        assert_eq!(reader.records_read(), 1);
    }

    #[test]
    fn empty_file_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.ckpt");
        write_sample(&path, &[]);
        assert!(CheckedFileReader::read_all(&path, *b"DATA").unwrap().is_empty());
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.ckpt");
        let records = sample_records();
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        write_sample(&path, &refs);
        let original = fs::read(&path).unwrap();
        let damaged_path = dir.path().join("damaged.ckpt");
        for i in 0..original.len() {
            let mut damaged = original.clone();
            damaged[i] ^= 0x10;
            fs::write(&damaged_path, &damaged).unwrap();
            let result = CheckedFileReader::read_all(&damaged_path, *b"DATA");
            assert!(matches!(result, Err(LogError::Corrupt { .. })), "flip at byte {i} went unnoticed: {result:?}");
        }
    }

    #[test]
    fn every_truncation_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.ckpt");
        let records = sample_records();
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        write_sample(&path, &refs);
        let original = fs::read(&path).unwrap();
        let cut_path = dir.path().join("cut.ckpt");
        for len in 0..original.len() {
            fs::write(&cut_path, &original[..len]).unwrap();
            let result = CheckedFileReader::read_all(&cut_path, *b"DATA");
            let Err(LogError::Corrupt { file, .. }) = &result else {
                panic!("truncation to {len} bytes went unnoticed: {result:?}");
            };
            assert_eq!(file, &cut_path);
        }
        let mut extended = original.clone();
        extended.push(0);
        fs::write(&cut_path, &extended).unwrap();
        let error = CheckedFileReader::read_all(&cut_path, *b"DATA").unwrap_err();
        assert!(error.to_string().contains("after the trailer"), "{error}");
    }

    #[test]
    fn wrong_kind_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.ckpt");
        write_sample(&path, &[b"x"]);
        let error = CheckedFileReader::open(&path, *b"MANI").err().unwrap();
        assert!(matches!(error, LogError::Corrupt { offset: 12, .. }));
        assert!(error.to_string().contains("expected \"MANI\""), "{error}");
    }

    #[test]
    fn abandoned_writer_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.ckpt");
        let mut writer = CheckedFileWriter::create(&path, *b"DLTA").unwrap();
        writer.append(b"never finished").unwrap();
        drop(writer);
        assert!(!path.exists());
        assert!(!temporary_path(&path).exists());
    }

    #[test]
    fn finished_file_replaces_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("MANIFEST");
        let mut writer = CheckedFileWriter::create(&path, *b"MANI").unwrap();
        writer.append(b"v1").unwrap();
        writer.finish().unwrap();
        let mut writer = CheckedFileWriter::create(&path, *b"MANI").unwrap();
        writer.append(b"v2").unwrap();
        writer.finish().unwrap();
        assert_eq!(CheckedFileReader::read_all(&path, *b"MANI").unwrap(), vec![b"v2".to_vec()]);
    }
}
