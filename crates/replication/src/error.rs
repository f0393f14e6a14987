//! The one error type of this crate, and what a caller can do about it
//! ([`ErrorKind`]).

/// Errors of replication: peers, the Raft log, the wire.
#[derive(Debug, thiserror::Error)]
pub enum ReplicationError {
    /// A peer could not be reached or the connection broke (retryable).
    #[error("peer unreachable: {0}")]
    Unreachable(String),
    /// A peer did not answer in time (retryable).
    #[error("timed out: {0}")]
    Timeout(String),
    /// A request this node or a peer will not carry out as things stand,
    /// and why: a wrong cluster secret, a group not hosted here, a node
    /// that is not the primary, a drain that would cost a quorum.
    #[error("refused: {0}")]
    Refused(String),
    /// A message could not be encoded or decoded (a bug, or a peer of another version).
    #[error("malformed message: {0}")]
    Codec(String),
    /// The node's Raft log on disk failed.
    #[error(transparent)]
    Log(#[from] tessera_log::LogError),
    /// Applying a committed record to the local engines failed.
    #[error(transparent)]
    Engine(#[from] tessera_engine::EngineError),
    /// Raft itself reported an error.
    #[error("raft: {0}")]
    Raft(String),
    /// Misuse or an impossible state.
    #[error("internal error: {0}")]
    Internal(String),
}

/// What a caller can do about a [`ReplicationError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Refused as things stand: tell the user why; the same request may
    /// succeed once something changes (a primary elected, a node added).
    Refused,
    /// A peer was out of reach or slow: trying again may succeed.
    Retryable,
    /// A bug, damage on disk or on the wire, or a failure of Raft or of the
    /// engines.
    Internal,
}

impl ReplicationError {
    /// The message for a person, without the kind's prefix for refusals
    /// (which already say what happened).
    pub fn message(&self) -> String {
        match self {
            ReplicationError::Refused(m) => m.clone(),
            e => e.to_string(),
        }
    }

    /// What a caller can do about it.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ReplicationError::Unreachable(_) | ReplicationError::Timeout(_) => ErrorKind::Retryable,
            ReplicationError::Refused(_) => ErrorKind::Refused,
            ReplicationError::Codec(_)
            | ReplicationError::Log(_)
            | ReplicationError::Engine(_)
            | ReplicationError::Raft(_)
            | ReplicationError::Internal(_) => ErrorKind::Internal,
        }
    }
}

pub type Result<T, E = ReplicationError> = std::result::Result<T, E>;
