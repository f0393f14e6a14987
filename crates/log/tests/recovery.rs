//! What `Log::open` does with damaged files: cut torn tails, refuse everything else.

mod common;

use std::fs::{self, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use common::*;
use tessera_log::{Log, LogConfig, LogError, Lsn};

/// Writes records 0..n into a fresh log in `dir` and returns their (start, end) LSNs.
fn write_log(config: &LogConfig, n: u64) -> Vec<(Lsn, Lsn)> {
    let (log, _) = open(config.clone());
    let positions = append_range(&log, 0..n);
    log.close().unwrap();
    positions
}

fn expect_corrupt(config: LogConfig) -> (std::path::PathBuf, u64, String, String) {
    match Log::open(config) {
        Err(error @ LogError::Corrupt { .. }) => {
            let message = error.to_string();
            let LogError::Corrupt { file, offset, reason } = error else { unreachable!() };
            (file, offset, reason, message)
        }
        Err(other) => panic!("expected Corrupt, got {other}"),
        Ok((_, report)) => panic!("expected Corrupt, but open succeeded: {report:?}"),
    }
}

/// After a cut, the log accepts appends and reads everything back after another reopen.
fn check_appends_after_cut(config: &LogConfig, kept: u64) {
    let (log, _) = open(config.clone());
    append_range(&log, 1000..1010);
    log.close().unwrap();
    drop(log);
    let (log, report) = open(config.clone());
    assert_eq!(report.cut_tail, None);
    let records = read_all(&log, 0);
    assert_records(&records[..kept as usize], 0..kept);
    assert_records(&records[kept as usize..], 1000..1010);
}

#[test]
fn truncated_last_record_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig::new(dir.path());
    let positions = write_log(&config, 50);
    let segment = segment_files(dir.path()).pop().unwrap();
    let (last_start, last_end) = positions[49];
    let middle = file_offset(&segment, last_start) + (last_end - last_start) / 2;
    OpenOptions::new().write(true).open(&segment).unwrap().set_len(middle).unwrap();

    let (log, report) = open(config.clone());
    let cut = report.cut_tail.expect("tail should be cut");
    assert_eq!(cut.file, segment);
    assert_eq!(cut.offset, file_offset(&segment, last_start));
    assert_eq!(cut.discarded_bytes, middle - cut.offset);
    assert!(cut.reason.contains("truncated"), "{}", cut.reason);
    assert_eq!(report.records, 49);
    assert_eq!(report.end_lsn, last_start);
    assert_eq!(log.end_lsn(), last_start);
    assert_eq!(fs::metadata(&segment).unwrap().len(), cut.offset);
    assert_records(&read_all(&log, 0), 0..49);
    drop(log);
    check_appends_after_cut(&config, 49);
}

#[test]
fn garbage_in_last_record_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig::new(dir.path());
    let positions = write_log(&config, 50);
    let segment = segment_files(dir.path()).pop().unwrap();
    let (last_start, last_end) = positions[49];
    let mut file = OpenOptions::new().write(true).open(&segment).unwrap();
    file.seek(SeekFrom::Start(file_offset(&segment, last_start))).unwrap();
    file.write_all(&vec![0xA5; (last_end - last_start) as usize]).unwrap();
    drop(file);

    let (log, report) = open(config.clone());
    let cut = report.cut_tail.expect("tail should be cut");
    assert_eq!(cut.offset, file_offset(&segment, last_start));
    assert_eq!(cut.discarded_bytes, last_end - last_start);
    assert_eq!(report.records, 49);
    assert_records(&read_all(&log, 0), 0..49);
    drop(log);
    check_appends_after_cut(&config, 49);
}

#[test]
fn zeroed_tail_after_last_record_is_cut() {
    // A crash can leave a file extended with zeros past the last write.
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig::new(dir.path());
    let positions = write_log(&config, 10);
    let segment = segment_files(dir.path()).pop().unwrap();
    let len = fs::metadata(&segment).unwrap().len();
    OpenOptions::new().write(true).open(&segment).unwrap().set_len(len + 4096).unwrap();
    let (log, report) = open(config.clone());
    assert_eq!(report.cut_tail.unwrap().discarded_bytes, 4096);
    assert_eq!(report.end_lsn, positions[9].1);
    assert_records(&read_all(&log, 0), 0..10);
}

#[test]
fn flipped_byte_mid_log_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig::new(dir.path());
    let positions = write_log(&config, 50);
    let segment = segment_files(dir.path()).pop().unwrap();
    let (start, _) = positions[25];
    let record_offset = file_offset(&segment, start);
    // Flip a payload byte (record 25 has a non-empty payload).
    assert!(!payload(25).is_empty());
    xor_byte(&segment, record_offset + FRAME_HEADER_LEN + 1, 0x40);
    let before = fs::read(&segment).unwrap();

    let (file, offset, reason, message) = expect_corrupt(config.clone());
    assert_eq!(file, segment);
    assert_eq!(offset, record_offset);
    assert!(reason.contains("checksum mismatch"), "{reason}");
    assert!(reason.contains("valid record follows"), "{reason}");
    assert!(message.starts_with(&format!("log segment {}", segment.display())), "{message}");
    assert!(message.contains(&format!("is corrupt at offset {record_offset}")), "{message}");
    // Nothing was truncated or otherwise "repaired".
    assert_eq!(fs::read(&segment).unwrap(), before);
    // Damage in the length field is caught the same way.
    xor_byte(&segment, record_offset + FRAME_HEADER_LEN + 1, 0x40);
    xor_byte(&segment, record_offset, 0x01);
    let (_, offset, _, _) = expect_corrupt(config);
    assert_eq!(offset, record_offset);
}

#[test]
fn damage_in_an_earlier_segment_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = LogConfig::new(dir.path());
    config.segment_bytes = 2048;
    write_log(&config, 200);
    let files = segment_files(dir.path());
    assert!(files.len() >= 3);
    // Damage the very last bytes of the first segment: its tail looks torn,
    // but it is not the last segment, so it must not be cut.
    let first = &files[0];
    let len = fs::metadata(first).unwrap().len();
    xor_byte(first, len - 1, 0xFF);
    let (file, offset, reason, _) = expect_corrupt(config.clone());
    assert_eq!(&file, first);
    assert!(offset < len && offset >= SEGMENT_HEADER_LEN);
    assert!(reason.contains("not the last"), "{reason}");
    xor_byte(first, len - 1, 0xFF);

    // A truncated earlier segment leaves a gap before the next one.
    let second = &files[1];
    let len = fs::metadata(second).unwrap().len();
    OpenOptions::new().write(true).open(second).unwrap().set_len(len - 3).unwrap();
    let (file, _, _, _) = expect_corrupt(config.clone());
    assert_eq!(&file, second);
}

#[test]
fn missing_middle_segment_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = LogConfig::new(dir.path());
    config.segment_bytes = 2048;
    write_log(&config, 200);
    let files = segment_files(dir.path());
    fs::remove_file(&files[1]).unwrap();
    let (file, offset, reason, _) = expect_corrupt(config);
    assert_eq!(file, files[2]);
    assert_eq!(offset, 16);
    assert!(reason.contains("previous segment ends"), "{reason}");
}

fn set_byte(path: &Path, offset: u64, value: u8) {
    let mut bytes = fs::read(path).unwrap();
    bytes[offset as usize] = value;
    fs::write(path, bytes).unwrap();
}

#[test]
fn bad_header_magic_or_version_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = LogConfig::new(dir.path());
    config.segment_bytes = 2048;
    write_log(&config, 100);
    let files = segment_files(dir.path());
    assert!(files.len() >= 3, "{} segments", files.len());
    // The first, a middle and the last segment: header damage is never a torn tail.
    for segment in [&files[0], &files[1], files.last().unwrap()] {
        set_byte(segment, 0, b'X');
        let (file, offset, reason, _) = expect_corrupt(config.clone());
        assert_eq!((&file, offset), (segment, 0));
        assert!(reason.contains("magic"), "{reason}");
        set_byte(segment, 0, b'T');

        set_byte(segment, 8, 2);
        let (file, offset, reason, _) = expect_corrupt(config.clone());
        assert_eq!((&file, offset), (segment, 8));
        assert!(reason.contains("unknown segment format version 2"), "{reason}");
        set_byte(segment, 8, 1);

        // A flipped start LSN fails the header checksum.
        let start_byte = fs::read(segment).unwrap()[16];
        set_byte(segment, 16, start_byte ^ 1);
        let (file, _, reason, _) = expect_corrupt(config.clone());
        assert_eq!(&file, segment);
        assert!(reason.contains("checksum"), "{reason}");
        set_byte(segment, 16, start_byte);
    }
    // Restored: opens cleanly again.
    let (_, report) = open(config);
    assert_eq!(report.records, 100);
}

#[test]
fn segment_renamed_to_another_lsn_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig::new(dir.path());
    write_log(&config, 10);
    let segment = segment_files(dir.path()).pop().unwrap();
    fs::rename(&segment, dir.path().join(format!("{:020}.log", 7))).unwrap();
    let (_, offset, reason, _) = expect_corrupt(config);
    assert_eq!(offset, 16);
    assert!(reason.contains("does not match the file name"), "{reason}");
}

#[test]
fn unfinished_segment_creation_is_discarded() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig::new(dir.path());
    let positions = write_log(&config, 10);
    let stray = dir.path().join(format!("{:020}.log.tmp", positions[9].1));
    fs::write(&stray, b"TSSR").unwrap();
    let (log, report) = open(config);
    assert_eq!(report.cut_tail, None);
    assert!(!stray.exists());
    assert_records(&read_all(&log, 0), 0..10);
}
