//! The engine's error type, classified by who must act on it.

use std::path::PathBuf;

use tessera_log::LogError;

/// Who is at fault for an error, and therefore what the caller should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The request itself is wrong (duplicate key, unknown table): report it.
    User,
    /// A concurrency conflict: the transaction was rolled back and may simply be retried.
    Retryable,
    /// The engine cannot continue as asked (I/O failure, read-only after a failure).
    Unavailable,
    /// Damaged files found by recovery: an operator must act.
    Corruption,
    /// A bug in Tessera.
    Internal,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("could not serialize access: {reason}")]
    Conflict { reason: ConflictReason },

    #[error("deadlock detected: transactions waiting for each other's rows")]
    Deadlock,

    #[error("gave up waiting for a row held by another transaction after {0:?}")]
    LockTimeout(std::time::Duration),

    /// A wait for a row's holder reached the deadline the caller set
    /// ([`crate::Transaction::set_wait_deadline`]). Nothing was changed.
    #[error("gave up waiting for a row held by another transaction: the deadline passed")]
    DeadlinePassed,

    /// The transaction was told not to wait ([`crate::Transaction::set_wait`])
    /// and would have had to wait for a row's holder. Nothing was changed.
    #[error("a row is held by another transaction and this one may not wait")]
    WouldBlock {
        /// The transaction to wait for ([`crate::Transaction::row_wait`]).
        holder: crate::mvcc::TxnId,
    },

    #[error("duplicate key value violates unique constraint \"{index}\"")]
    UniqueViolation { table: String, index: String },

    /// A row has a NULL in a field of a primary key it is to be copied
    /// under ([`crate::Engine::copy_table`]).
    #[error("a row of table \"{table}\" has a NULL in a primary key column")]
    NullInKey { table: String },

    #[error("table \"{0}\" does not exist")]
    NoSuchTable(String),

    #[error("table \"{0}\" already exists")]
    TableExists(String),

    #[error("index \"{0}\" does not exist")]
    NoSuchIndex(String),

    #[error("index \"{0}\" already exists")]
    IndexExists(String),

    #[error("invalid schema: {0}")]
    InvalidSchema(String),

    #[error("malformed row: {0}")]
    MalformedRow(String),

    #[error("the transaction has already ended")]
    TransactionEnded,

    #[error("too many concurrent transactions (limit {0})")]
    TooManyTransactions(usize),

    #[error("the engine is read-only after a log failure ({0}); restart to recover the durable state")]
    ReadOnly(String),

    #[error("commit failed and was rolled back: {0}")]
    CommitFailed(#[source] LogError),

    #[error(transparent)]
    Log(#[from] LogError),

    #[error("checkpoint file {file} is corrupt: {reason}")]
    CorruptCheckpoint { file: PathBuf, reason: String },

    #[error("log record at LSN {lsn} is malformed: {reason}")]
    CorruptRecord { lsn: u64, reason: String },

    #[error("data directory {} is in use by another Tessera process", .0.display())]
    DataDirInUse(PathBuf),

    #[error("I/O error: {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },

    /// Where the data lives is not reachable now (on a cluster: a
    /// partition without a primary). Nothing was done; retry later.
    #[error("{0}")]
    Unavailable(String),

    #[error("internal error: {0}")]
    Internal(String),
}

/// Why a transaction lost an optimistic race.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConflictReason {
    /// Another transaction wrote the row first (first writer wins).
    WriteWrite,
    /// A row this transaction read was changed before it committed (read stability).
    ReadValidation,
    /// A scan would now return rows it did not see (phantom).
    Phantom,
    /// The partition the transaction writes is being split, or was split
    /// after the statement was planned.
    PartitionChanged,
}

impl std::fmt::Display for ConflictReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ConflictReason::WriteWrite => "concurrent update of the same row",
            ConflictReason::ReadValidation => "a row read by this transaction was changed",
            ConflictReason::Phantom => "a scan by this transaction would see new rows",
            ConflictReason::PartitionChanged => "the partition holding the row is being split",
        })
    }
}

impl EngineError {
    pub fn conflict(reason: ConflictReason) -> Self {
        EngineError::Conflict { reason }
    }

    pub fn class(&self) -> ErrorClass {
        use EngineError::*;
        match self {
            Conflict { .. } | Deadlock | LockTimeout(_) | DeadlinePassed | WouldBlock { .. } => ErrorClass::Retryable,
            UniqueViolation { .. }
            | NullInKey { .. }
            | NoSuchTable(_)
            | TableExists(_)
            | NoSuchIndex(_)
            | IndexExists(_)
            | InvalidSchema(_)
            | MalformedRow(_)
            | TransactionEnded => ErrorClass::User,
            TooManyTransactions(_) | ReadOnly(_) | CommitFailed(_) | Io { .. } | DataDirInUse(_) | Unavailable(_) => {
                ErrorClass::Unavailable
            }
            Log(LogError::Corrupt { .. }) => ErrorClass::Corruption,
            Log(_) => ErrorClass::Unavailable,
            CorruptCheckpoint { .. } | CorruptRecord { .. } => ErrorClass::Corruption,
            Internal(_) => ErrorClass::Internal,
        }
    }

    pub fn is_retryable(&self) -> bool {
        self.class() == ErrorClass::Retryable
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        EngineError::Io { context: context.into(), source }
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;
