//! Injected write and fsync failures: the log poisons itself, stranded waiters
//! get the cause, and a reopened log holds exactly what was durable.

mod common;

use std::io::ErrorKind;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::*;
use tessera_log::{ENOSPC, FaultInjector, Log, LogConfig, LogError};

fn config_with_faults(dir: &std::path::Path) -> (LogConfig, Arc<FaultInjector>) {
    let faults = Arc::new(FaultInjector::new());
    let mut config = LogConfig::new(dir);
    config.faults = Some(faults.clone());
    (config, faults)
}

/// Appends 20 durable records, arms `arm`, appends 5 more and waits for them.
/// Returns the error the waiter got and the durable LSN before the failure.
fn fail_after_durable_prefix(log: &Log, arm: impl FnOnce()) -> (LogError, u64) {
    append_range(log, 0..20);
    let durable = log.flush().unwrap();
    arm();
    let positions = append_range(log, 20..25);
    let error = log.wait_durable(positions[4].1).unwrap_err();
    assert_eq!(log.durable_lsn(), durable);
    (error, durable)
}

fn assert_poisoned(log: &Log) {
    let error = log.append(0, b"after failure").unwrap_err();
    assert!(matches!(error, LogError::Failed(_)), "{error}");
    let error = log.wait_durable(log.end_lsn()).unwrap_err();
    assert!(matches!(error, LogError::Failed(_)), "{error}");
    assert!(matches!(log.flush(), Err(LogError::Failed(_))));
    assert!(matches!(log.close(), Err(LogError::Failed(_))));
    // What was durable before the failure stays durable.
    log.wait_durable(log.durable_lsn()).unwrap();
}

fn assert_reopen_holds_prefix(config: &LogConfig, faults: &FaultInjector, durable: u64) {
    faults.clear();
    let (log, report) = open(config.clone());
    assert_eq!(report.end_lsn, durable);
    assert_eq!(report.cut_tail, None);
    assert_records(&read_all(&log, 0), 0..20);
    // The reopened log works normally.
    append_range(&log, 20..30);
    log.flush().unwrap();
    assert_records(&read_all(&log, 0), 0..30);
}

#[test]
fn failed_write_poisons_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let (config, faults) = config_with_faults(dir.path());
    let (log, _) = open(config.clone());
    let (error, durable) = fail_after_durable_prefix(&log, || faults.fail_writes(ErrorKind::PermissionDenied));
    assert!(matches!(error, LogError::Io { .. }), "{error}");
    assert!(error.to_string().starts_with("writing log segment"), "{error}");
    assert!(!error.is_disk_full());
    assert_poisoned(&log);
    // Clearing the fault does not revive a failed log.
    faults.clear();
    assert!(matches!(log.append(0, b"x"), Err(LogError::Failed(_))));
    drop(log);
    assert_reopen_holds_prefix(&config, &faults, durable);
}

#[test]
fn failed_fsync_poisons_the_log_and_drops_the_unsynced_tail() {
    let dir = tempfile::tempdir().unwrap();
    let (config, faults) = config_with_faults(dir.path());
    let (log, _) = open(config.clone());
    let (error, durable) = fail_after_durable_prefix(&log, || faults.fail_syncs(ErrorKind::Other));
    assert!(error.to_string().starts_with("syncing log segment"), "{error}");
    assert_poisoned(&log);
    drop(log);
    // The failed records were written to the page cache; they must not come back.
    assert_reopen_holds_prefix(&config, &faults, durable);
}

#[test]
fn disk_full_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let (config, faults) = config_with_faults(dir.path());
    let (log, _) = open(config.clone());
    let (error, durable) = fail_after_durable_prefix(&log, || faults.fail_writes(ENOSPC));
    assert!(error.is_disk_full(), "{error}");
    println!("waiter saw: {error}");
    let later = log.append(0, b"x").unwrap_err();
    println!("later append saw: {later}");
    assert!(matches!(later, LogError::Failed(_)));
    assert!(later.to_string().contains("No space left on device"), "{later}");
    assert!(log.failure_cause().unwrap().is_disk_full());
    drop(log);
    assert_reopen_holds_prefix(&config, &faults, durable);
}

#[test]
fn failure_during_segment_roll_keeps_the_sealed_segments() {
    let dir = tempfile::tempdir().unwrap();
    let (mut config, faults) = config_with_faults(dir.path());
    config.segment_bytes = 1024;
    let (log, _) = open(config.clone());
    let (_, durable) = fail_after_durable_prefix(&log, || faults.fail_syncs(ENOSPC));
    assert_poisoned(&log);
    drop(log);
    assert!(segment_files(dir.path()).len() > 1);
    assert_reopen_holds_prefix(&config, &faults, durable);
}

#[test]
fn every_concurrent_waiter_is_released_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (mut config, faults) = config_with_faults(dir.path());
    // Nothing is flushed unless someone waits, so all waiters pile up first.
    config.lazy_flush_interval = Duration::from_secs(3600);
    let (log, _) = open(config);
    let log = Arc::new(log);
    faults.fail_syncs(ErrorKind::Other);
    let barrier = Arc::new(Barrier::new(8));
    let waiters: Vec<_> = (0..8u64)
        .map(|t| {
            let (log, barrier) = (log.clone(), barrier.clone());
            std::thread::spawn(move || {
                let lsn = log.append(t as u32, &payload(t));
                barrier.wait();
                lsn.and_then(|lsn| log.wait_durable(lsn))
            })
        })
        .collect();
    for waiter in waiters {
        assert!(waiter.join().unwrap().is_err());
    }
    assert_eq!(log.durable_lsn(), 0);
}

#[test]
fn open_fails_cleanly_when_the_first_segment_cannot_be_created() {
    let dir = tempfile::tempdir().unwrap();
    let (config, faults) = config_with_faults(dir.path());
    faults.fail_writes(ENOSPC);
    let error = Log::open(config.clone()).unwrap_err();
    assert!(error.is_disk_full(), "{error}");
    faults.clear();
    let (log, report) = open(config);
    assert_eq!(report.end_lsn, 0);
    append_range(&log, 0..3);
    log.flush().unwrap();
}

#[test]
fn on_durable_callbacks_learn_of_a_failed_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let (config, faults) = config_with_faults(dir.path());
    let (log, _) = open(config);
    append_range(&log, 0..5);
    log.flush().unwrap();
    faults.fail_syncs(ErrorKind::Other);
    let (tx, rx) = std::sync::mpsc::channel();
    for (_, end) in append_range(&log, 5..10) {
        let tx = tx.clone();
        log.on_durable(end, Box::new(move |outcome| tx.send(outcome.map_err(|e| e.to_string())).unwrap()));
    }
    for _ in 0..5 {
        let outcome = rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap();
        let error = outcome.expect_err("the fsync failed");
        assert!(error.starts_with("syncing log segment"), "{error}");
    }
    // After the failure a new callback is told at once.
    let tx2 = tx.clone();
    log.on_durable(log.end_lsn(), Box::new(move |o| tx2.send(o.map_err(|e| e.to_string())).unwrap()));
    assert!(rx.try_recv().unwrap().is_err());
}
