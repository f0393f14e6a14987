//! Test hook that makes the log's writes or fsyncs fail on demand.
//!
//! Real disks fail rarely and at awkward moments; the code paths that handle
//! those failures (poisoning the log, waking waiters with an error, cutting the
//! undurable tail) would otherwise never run in tests. A `FaultInjector` is
//! shared by `Arc` between the test and the log through
//! [`LogConfig::faults`](crate::LogConfig::faults); while a fault is armed the
//! log's segment writes or fsyncs return the chosen error *instead of* doing
//! the I/O.

use std::io;

use parking_lot::Mutex;

/// The error an armed fault produces: an `io::ErrorKind` or a raw OS error
/// number such as [`ENOSPC`](crate::ENOSPC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InjectedError {
    Kind(io::ErrorKind),
    Os(i32),
}

impl InjectedError {
    fn to_io_error(self) -> io::Error {
        match self {
            InjectedError::Kind(kind) => io::Error::new(kind, "injected fault"),
            InjectedError::Os(code) => io::Error::from_raw_os_error(code),
        }
    }
}

impl From<io::ErrorKind> for InjectedError {
    fn from(kind: io::ErrorKind) -> Self {
        InjectedError::Kind(kind)
    }
}

impl From<i32> for InjectedError {
    fn from(code: i32) -> Self {
        InjectedError::Os(code)
    }
}

/// Switches for failing the log's I/O. All methods take `&self`, so a test can
/// flip them while other threads are appending.
#[derive(Debug, Default)]
pub struct FaultInjector {
    write_fault: Mutex<Option<InjectedError>>,
    sync_fault: Mutex<Option<InjectedError>>,
}

impl FaultInjector {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every following segment write fails with `error` until [`clear`](Self::clear).
    pub fn fail_writes(&self, error: impl Into<InjectedError>) {
        *self.write_fault.lock() = Some(error.into());
    }

    /// Every following fsync (file or directory) fails with `error` until [`clear`](Self::clear).
    pub fn fail_syncs(&self, error: impl Into<InjectedError>) {
        *self.sync_fault.lock() = Some(error.into());
    }

    /// Disarms all faults.
    pub fn clear(&self) {
        *self.write_fault.lock() = None;
        *self.sync_fault.lock() = None;
    }

    pub(crate) fn check_write(&self) -> io::Result<()> {
        match *self.write_fault.lock() {
            Some(error) => Err(error.to_io_error()),
            None => Ok(()),
        }
    }

    pub(crate) fn check_sync(&self) -> io::Result<()> {
        match *self.sync_fault.lock() {
            Some(error) => Err(error.to_io_error()),
            None => Ok(()),
        }
    }
}
