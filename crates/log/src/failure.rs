//! The remembered cause of the error that poisoned a log.
//!
//! `io::Error` is not `Clone`, yet the one error seen by the flusher thread has
//! to be reported to every waiter it strands and to every later caller. So the
//! flusher keeps the parts that matter (what it was doing, the error kind and
//! the OS error number) and rebuilds errors from them on demand.

use std::io;

use crate::error::LogError;

#[derive(Debug, Clone)]
pub(crate) struct Failure {
    context: String,
    kind: io::ErrorKind,
    raw_os_error: Option<i32>,
    message: String,
}

impl Failure {
    pub(crate) fn from_error(error: &LogError) -> Failure {
        match error {
            LogError::Io { context, source } => Failure {
                context: context.clone(),
                kind: source.kind(),
                raw_os_error: source.raw_os_error(),
                message: source.to_string(),
            },
            other => Failure {
                context: "log flusher".into(),
                kind: io::ErrorKind::Other,
                raw_os_error: None,
                message: other.to_string(),
            },
        }
    }

    pub(crate) fn from_message(context: &str, message: &str) -> Failure {
        Failure { context: context.into(), kind: io::ErrorKind::Other, raw_os_error: None, message: message.into() }
    }

    /// The original error, as an `Io` error (so `is_disk_full` works on it).
    /// Given to the callers whose records were in flight when the log failed.
    pub(crate) fn to_io_error(&self) -> LogError {
        let source = match self.raw_os_error {
            Some(code) => io::Error::from_raw_os_error(code),
            None => io::Error::new(self.kind, self.message.clone()),
        };
        LogError::io(self.context.clone(), source)
    }

    /// What every later append or wait gets.
    pub(crate) fn to_failed(&self) -> LogError {
        LogError::Failed(format!("{}: {}", self.context, self.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ENOSPC;

    #[test]
    fn rebuilt_errors_keep_the_cause() {
        let original =
            LogError::io("writing log segment 00000000000000000000.log", io::Error::from_raw_os_error(ENOSPC));
        let failure = Failure::from_error(&original);
        let rebuilt = failure.to_io_error();
        assert!(rebuilt.is_disk_full());
        assert_eq!(rebuilt.to_string(), original.to_string());
        let failed = failure.to_failed();
        assert!(matches!(failed, LogError::Failed(_)));
        assert!(failed.to_string().starts_with("the log has failed and accepts no more work: writing log segment"));
    }
}
