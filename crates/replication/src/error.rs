//! The one error type of this crate.

/// Errors of replication: peers, the Raft log, the wire.
#[derive(Debug, thiserror::Error)]
pub enum ReplicationError {
    /// A peer could not be reached or the connection broke (retryable).
    #[error("peer unreachable: {0}")]
    Unreachable(String),
    /// A peer did not answer in time (retryable).
    #[error("timed out: {0}")]
    Timeout(String),
    /// A peer refused the connection (wrong cluster secret).
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

impl ReplicationError {
    /// The message for a person, without the kind's prefix for refusals
    /// (which already say what happened).
    pub fn message(&self) -> String {
        match self {
            ReplicationError::Refused(m) => m.clone(),
            e => e.to_string(),
        }
    }
}

pub type Result<T, E = ReplicationError> = std::result::Result<T, E>;
