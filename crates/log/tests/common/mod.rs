//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use tessera_log::{Log, LogConfig, LogRecord, Lsn, RecoveryReport};

/// Size of a segment header, which LSNs do not count.
pub const SEGMENT_HEADER_LEN: u64 = 28;
/// Bytes in front of every payload.
pub const FRAME_HEADER_LEN: u64 = 20;

/// A deterministic payload whose size varies with `i`.
pub fn payload(i: u64) -> Vec<u8> {
    let len = (i * 37 % 300) as usize;
    (0..len).map(|j| (i as usize * 31 + j) as u8).collect()
}

pub fn open(config: LogConfig) -> (Log, RecoveryReport) {
    Log::open(config).expect("open log")
}

/// Appends records `range` (stream = i % 4) and returns (start LSN, end LSN) of each.
pub fn append_range(log: &Log, range: std::ops::Range<u64>) -> Vec<(Lsn, Lsn)> {
    range
        .map(|i| {
            let start = log.end_lsn();
            let end = log.append((i % 4) as u32, &payload(i)).expect("append");
            assert_eq!(end, start + FRAME_HEADER_LEN + payload(i).len() as u64);
            (start, end)
        })
        .collect()
}

pub fn read_all(log: &Log, from: Lsn) -> Vec<LogRecord> {
    log.read_from(from).expect("read_from").collect::<Result<Vec<_>, _>>().expect("read records")
}

/// Asserts that `records` are exactly records `range` as written by `append_range`.
pub fn assert_records(records: &[LogRecord], range: std::ops::Range<u64>) {
    assert_eq!(records.len() as u64, range.end - range.start, "record count");
    let mut expected_lsn = records.first().map(|r| r.lsn).unwrap_or(0);
    for (record, i) in records.iter().zip(range) {
        assert_eq!(record.lsn, expected_lsn, "record {i} lsn");
        assert_eq!(record.stream, (i % 4) as u32, "record {i} stream");
        assert_eq!(record.payload, payload(i), "record {i} payload");
        expected_lsn = record.end;
    }
}

/// Segment files in `dir`, oldest first.
pub fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "log"))
        .collect();
    files.sort();
    files
}

/// The start LSN encoded in a segment file's name.
pub fn segment_start(path: &Path) -> Lsn {
    path.file_stem().unwrap().to_str().unwrap().parse().unwrap()
}

/// File offset of the frame with `lsn` inside the segment at `path`.
pub fn file_offset(path: &Path, lsn: Lsn) -> u64 {
    SEGMENT_HEADER_LEN + lsn - segment_start(path)
}

pub fn xor_byte(path: &Path, offset: u64, mask: u8) {
    let mut bytes = fs::read(path).unwrap();
    bytes[offset as usize] ^= mask;
    fs::write(path, bytes).unwrap();
}
