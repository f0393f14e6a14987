//! The flusher zero-fills the active segment ahead of its writes (so most
//! fsyncs need no journal commit for a new file size). These tests pin down
//! what that may and may not leave on disk: zeros past the records only in
//! the active segment, none after a clean close or in a sealed segment, and
//! a crash image with zeros recovers every durable record.

mod common;

use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use common::*;
use tessera_log::{LogConfig, ZERO_FILLED};

/// Length of the segment's records (header included), from the log's LSNs.
fn records_len(path: &Path, end_lsn: u64) -> u64 {
    file_offset(path, end_lsn)
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn the_active_segment_is_zero_filled_ahead_and_trimmed_on_close() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig::new(dir.path());
    let (log, _) = open(config.clone());
    append_range(&log, 0..100);
    log.wait_durable(log.end_lsn()).unwrap();
    let segment = segment_files(dir.path()).pop().unwrap();
    let bytes = fs::read(&segment).unwrap();
    let end = records_len(&segment, log.end_lsn()) as usize;
    assert!(bytes.len() > end, "space past the records is preallocated ({} bytes, records end at {end})", bytes.len());
    assert!(bytes[end..].iter().all(|&b| b == 0), "preallocated space is zeros");

    log.close().unwrap();
    assert_eq!(fs::metadata(&segment).unwrap().len(), end as u64, "a closed log holds exactly its records");
    let (log, report) = open(config);
    assert_eq!(report.cut_tail, None);
    assert_records(&read_all(&log, 0), 0..100);
}

#[test]
fn a_crash_image_with_zeros_recovers_every_durable_record_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig::new(dir.path());
    let (log, _) = open(config);
    append_range(&log, 0..200);
    log.wait_durable(log.end_lsn()).unwrap();
    // The files as a crash would leave them: the log is still open.
    let image = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), image.path());
    let image_config = LogConfig::new(image.path());
    let (recovered, report) = open(image_config.clone());
    let cut = report.cut_tail.expect("the zeros are cut");
    assert_eq!(cut.reason, ZERO_FILLED);
    assert_eq!(report.end_lsn, log.end_lsn());
    assert_records(&read_all(&recovered, 0), 0..200);
    append_range(&recovered, 1000..1010);
    recovered.close().unwrap();
    let (reopened, report) = open(image_config);
    assert_eq!(report.cut_tail, None);
    let records = read_all(&reopened, 0);
    assert_records(&records[..200], 0..200);
    assert_records(&records[200..], 1000..1010);
}

#[test]
fn a_torn_record_before_the_zeros_is_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig::new(dir.path());
    let (log, _) = open(config);
    let positions = append_range(&log, 0..50);
    log.wait_durable(log.end_lsn()).unwrap();
    let image = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), image.path());
    // Half of a record's bytes reached the disk, the rest is still zeros.
    let segment = segment_files(image.path()).pop().unwrap();
    let (start, end) = positions[49];
    let mut file = fs::OpenOptions::new().write(true).open(&segment).unwrap();
    let zero_from = file_offset(&segment, start) + (end - start) / 2;
    file.seek(SeekFrom::Start(zero_from)).unwrap();
    file.write_all(&vec![0; (end - start) as usize]).unwrap();
    drop(file);
    let (recovered, report) = open(LogConfig::new(image.path()));
    let cut = report.cut_tail.expect("the torn record is cut");
    assert_ne!(cut.reason, ZERO_FILLED, "a record with bytes present is not preallocated space");
    assert_eq!(cut.offset, file_offset(&segment, start));
    assert_records(&read_all(&recovered, 0), 0..49);
}

#[test]
fn sealed_segments_hold_exactly_their_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = LogConfig::new(dir.path());
    config.segment_bytes = 8 << 10;
    let (log, _) = open(config.clone());
    for chunk in 0..20 {
        append_range(&log, chunk * 10..chunk * 10 + 10);
        log.wait_durable(log.end_lsn()).unwrap();
    }
    let segments = segment_files(dir.path());
    assert!(segments.len() > 3, "the log rolled ({} segments)", segments.len());
    for pair in segments.windows(2) {
        let len = fs::metadata(&pair[0]).unwrap().len();
        assert_eq!(len, records_len(&pair[0], segment_start(&pair[1])), "{} is sealed exactly", pair[0].display());
    }
    let active = segments.last().unwrap();
    assert!(
        fs::metadata(active).unwrap().len() <= SEGMENT_HEADER_LEN + config.segment_bytes,
        "bounded by the segment size"
    );
    // A crash image recovers across the sealed segments.
    let image = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), image.path());
    let (recovered, _) = open(LogConfig { dir: image.path().into(), ..config });
    assert_records(&read_all(&recovered, 0), 0..200);
}
