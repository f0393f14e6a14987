//! Appending, reading back, segment rolling, truncation, group commit and lazy flushing.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use tessera_log::{Log, LogConfig, LogError, MAX_RECORD_BYTES};

fn small_segments(dir: &std::path::Path) -> LogConfig {
    let mut config = LogConfig::new(dir);
    config.segment_bytes = 4096;
    config
}

#[test]
fn round_trip_across_segments_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (log, report) = open(small_segments(dir.path()));
    assert_eq!((report.start_lsn, report.end_lsn, report.records), (0, 0, 0));
    assert_eq!(report.cut_tail, None);

    let positions = append_range(&log, 0..1000);
    let end = log.flush().unwrap();
    assert_eq!(end, positions.last().unwrap().1);
    assert_eq!(log.durable_lsn(), end);
    let stats = log.stats();
    assert!(stats.segments >= 10, "expected many segments, got {}", stats.segments);
    assert_eq!(stats.records, 1000);
    assert_eq!(stats.bytes, end);
    assert_records(&read_all(&log, 0), 0..1000);
    log.close().unwrap();
    drop(log);

    // Every segment respects the size limit and starts where the previous ended.
    let files = segment_files(dir.path());
    let mut expected_start = 0;
    for file in &files {
        let len = std::fs::metadata(file).unwrap().len();
        assert!(len - SEGMENT_HEADER_LEN <= 4096, "{} is {len} bytes", file.display());
        assert_eq!(segment_start(file), expected_start);
        expected_start += len - SEGMENT_HEADER_LEN;
    }
    assert_eq!(expected_start, end);

    let (log, report) = open(small_segments(dir.path()));
    assert_eq!(report.records, 1000);
    assert_eq!(report.end_lsn, end);
    assert_eq!(report.segments, files.len());
    assert_eq!(report.cut_tail, None);
    assert_records(&read_all(&log, 0), 0..1000);
    let middle = positions[537].0;
    let from_middle = read_all(&log, middle);
    assert_eq!(from_middle[0].lsn, middle);
    assert_records(&from_middle, 537..1000);
    assert!(read_all(&log, end).is_empty());

    // Appending continues after the recovered end.
    append_range(&log, 1000..1100);
    log.flush().unwrap();
    assert_records(&read_all(&log, 0), 0..1100);
}

#[test]
fn read_from_rejects_out_of_range_and_mid_record_positions() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(LogConfig::new(dir.path()));
    let positions = append_range(&log, 1..20);
    log.flush().unwrap();
    let end = log.durable_lsn();
    assert!(matches!(log.read_from(end + 1), Err(LogError::OutOfRange { .. })));
    // Not a record boundary: the reader reports corruption instead of garbage.
    let mut reader = log.read_from(positions[3].0 + 1).unwrap();
    assert!(matches!(reader.next(), Some(Err(LogError::Corrupt { .. }))));
    assert!(reader.next().is_none());
    assert!(matches!(log.wait_durable(end + 1), Err(LogError::OutOfRange { .. })));
}

#[test]
fn oversized_record_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(LogConfig::new(dir.path()));
    let big = vec![0u8; MAX_RECORD_BYTES + 1];
    let error = log.append(0, &big).unwrap_err();
    assert!(matches!(error, LogError::RecordTooLarge { .. }));
    assert!(error.to_string().contains("exceeds the limit"), "{error}");
    // The log is still usable.
    log.append(0, b"ok").unwrap();
    log.flush().unwrap();
}

#[test]
fn truncate_before_deletes_only_whole_older_segments() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(small_segments(dir.path()));
    let positions = append_range(&log, 0..600);
    log.flush().unwrap();
    let before = segment_files(dir.path());
    let cut = positions[300].0;

    log.truncate_before(cut).unwrap();
    let after = segment_files(dir.path());
    let start = log.start_lsn();
    assert!(start > 0 && start <= cut, "start {start}, cut {cut}");
    assert_eq!(after.len(), log.stats().segments);
    // Removed exactly the segments that end at or before `cut`.
    for file in &before {
        let kept = after.contains(file);
        let next_start = before.iter().map(|f| segment_start(f)).find(|&s| s > segment_start(file));
        let wholly_below = next_start.is_some_and(|next| next <= cut);
        assert_eq!(kept, !wholly_below, "{}", file.display());
    }
    assert_eq!(segment_start(&after[0]), start);

    let first_kept = positions.iter().position(|p| p.0 == start).unwrap() as u64;
    assert_records(&read_all(&log, start), first_kept..600);
    assert!(matches!(log.read_from(0), Err(LogError::OutOfRange { .. })));

    // Truncating everything keeps the active segment.
    log.truncate_before(u64::MAX).unwrap();
    assert_eq!(segment_files(dir.path()).len(), 1);
    append_range(&log, 600..610);
    log.flush().unwrap();
    drop(log);

    let (log, report) = open(small_segments(dir.path()));
    assert_eq!(report.start_lsn, log.start_lsn());
    let last_start = log.start_lsn();
    let first_kept = positions.iter().position(|p| p.0 == last_start).unwrap() as u64;
    assert_records(&read_all(&log, last_start), first_kept..610);
}

#[test]
fn group_commit_shares_fsyncs() {
    const THREADS: u64 = 8;
    const COMMITS: u64 = 200;
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(LogConfig::new(dir.path()));
    let log = Arc::new(log);
    let started = Instant::now();
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..COMMITS {
                    let lsn = log.append(t as u32, &payload(t * COMMITS + i)).unwrap();
                    log.wait_durable(lsn).unwrap();
                    assert!(log.durable_lsn() >= lsn);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    let stats = log.stats();
    println!(
        "group commit: {} commits from {THREADS} threads took {} fsyncs ({:.1} commits/fsync) in {:?}",
        stats.records,
        stats.fsyncs,
        stats.records as f64 / stats.fsyncs as f64,
        started.elapsed()
    );
    assert_eq!(stats.records, THREADS * COMMITS);
    assert!(stats.fsyncs < THREADS * COMMITS, "fsyncs: {}", stats.fsyncs);
    assert_eq!(read_all(&log, 0).len() as u64, THREADS * COMMITS);
}

#[test]
fn lazy_appends_become_durable_within_the_interval() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = LogConfig::new(dir.path());
    config.lazy_flush_interval = Duration::from_millis(20);
    let (log, _) = open(config);
    append_range(&log, 0..100);
    assert!(log.end_lsn() > 0);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(log.durable_lsn(), log.end_lsn());
    let fsyncs = log.stats().fsyncs;
    assert!((1..100).contains(&fsyncs), "fsyncs: {fsyncs}");
    // A trickle of lazy appends is flushed too, each within the bound.
    for i in 100..105 {
        log.append(0, &payload(i)).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(log.durable_lsn(), log.end_lsn());
    }
}

#[test]
fn close_flushes_and_refuses_further_work() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = LogConfig::new(dir.path());
    config.lazy_flush_interval = Duration::from_secs(3600);
    let (log, _) = open(config.clone());
    append_range(&log, 0..50);
    log.close().unwrap();
    assert_eq!(log.durable_lsn(), log.end_lsn());
    assert!(matches!(log.append(0, b"late"), Err(LogError::Closed)));
    log.close().unwrap();
    drop(log);

    // Drop alone also flushes.
    let (log, report) = open(config.clone());
    assert_eq!(report.records, 50);
    append_range(&log, 50..60);
    drop(log);
    let (log, _) = open(config);
    assert_records(&read_all(&log, 0), 0..60);
}

#[test]
fn reading_while_appending_sees_a_consistent_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(small_segments(dir.path()));
    let log = Arc::new(log);
    let writer = {
        let log = log.clone();
        std::thread::spawn(move || {
            for i in 0..2000 {
                let lsn = log.append((i % 4) as u32, &payload(i)).unwrap();
                if i % 10 == 0 {
                    log.wait_durable(lsn).unwrap();
                }
            }
            log.flush().unwrap();
        })
    };
    let mut last_seen = 0;
    while !writer.is_finished() {
        let records = read_all(&log, 0);
        assert!(records.len() >= last_seen);
        assert_records(&records, 0..records.len() as u64);
        last_seen = records.len();
    }
    writer.join().unwrap();
    assert_records(&read_all(&log, 0), 0..2000);
}

#[test]
fn log_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Log>();
}

/// A waker that unparks the test thread.
struct Unpark(std::thread::Thread);

impl std::task::Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `poll_durable` as an executor would: park until woken, poll again.
fn block_on_durable(log: &Log, lsn: u64) -> Result<(), LogError> {
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let std::task::Poll::Ready(r) = log.poll_durable(lsn, &mut cx) {
            return r;
        }
        assert!(Instant::now() < deadline, "never woken for lsn {lsn}");
        std::thread::park_timeout(Duration::from_secs(1));
    }
}

#[test]
fn poll_durable_wakes_tasks_without_a_thread_each() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(LogConfig::new(dir.path()));
    let log = Arc::new(log);
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    let lsn = log.append(t as u32, &payload(t * 100 + i)).unwrap();
                    block_on_durable(&log, lsn).unwrap();
                    assert!(log.durable_lsn() >= lsn);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(read_all(&log, 0).len(), 400);
    // Past the end: an error, not a wait forever. After close: Closed.
    assert!(matches!(block_on_durable(&log, log.end_lsn() + 100), Err(LogError::OutOfRange { .. })));
    let lsn = log.append(9, &payload(1)).unwrap();
    log.close().unwrap();
    assert!(block_on_durable(&log, lsn).is_ok(), "close flushes what was appended");
}

#[test]
fn on_durable_calls_back_once_each_record_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(LogConfig::new(dir.path()));
    let log = Arc::new(log);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut expected = Vec::new();
    for i in 0..200u64 {
        let lsn = log.append(0, &payload(i)).unwrap();
        expected.push(lsn);
        let (tx, check) = (tx.clone(), log.clone());
        log.on_durable(
            lsn,
            Box::new(move |outcome| {
                // Told only once the record is on disk.
                assert!(check.durable_lsn() >= lsn);
                tx.send((lsn, outcome.is_ok())).unwrap();
            }),
        );
    }
    let mut told: Vec<_> = (0..200).map(|_| rx.recv_timeout(Duration::from_secs(30)).unwrap()).collect();
    told.sort();
    assert_eq!(told, expected.iter().map(|l| (*l, true)).collect::<Vec<_>>());
    assert!(rx.try_recv().is_err(), "each callback runs once");
    // Already durable: called at once, on this thread. Past the end: an error.
    let (tx, rx) = std::sync::mpsc::channel();
    let tx2 = tx.clone();
    log.on_durable(expected[0], Box::new(move |o| tx.send(o.is_ok()).unwrap()));
    assert_eq!(rx.try_recv(), Ok(true));
    log.on_durable(log.end_lsn() + 100, Box::new(move |o| tx2.send(o.is_ok()).unwrap()));
    assert_eq!(rx.try_recv(), Ok(false));
}
