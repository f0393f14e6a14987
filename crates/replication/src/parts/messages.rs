//! What travels for a transaction on a partition whose primary is
//! another node: the calls ([`PartMessage`]) and their answers. The
//! engine's own types (`KeyRange`, `FieldTest`, `PutCondition`,
//! `PartSchema` with its `TableSpec`s) travel as they are (the engine's
//! `serde` feature); only its errors have a form of their own here
//! ([`WireError`]), since they hold what does not travel (I/O errors).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tessera_engine::remote::PartSchema;
use tessera_engine::row_filter::FieldTest;
use tessera_engine::{ConflictReason, Durability, EngineError, Isolation, KeyRange, LogError, PutCondition};

use crate::types::{GroupId, NodeId};
use crate::wire::{Message, Subsystem};

/// A request to a partition's primary (answered by `parts::server`).
#[derive(Debug, Serialize, Deserialize)]
pub enum PartMessage {
    /// A call of a transaction on a partition the asked node leads.
    Call(PartCall),
    /// A schema change of a partition the asked node leads.
    Schema { group: GroupId, stream: u32, change: PartSchema },
}

impl Message for PartMessage {
    const SUBSYSTEM: Subsystem = Subsystem::Parts;
    type Reply = PartAnswer;
}

/// A remote transaction's identity: the node running the SQL transaction,
/// that process's incarnation (random per start), and a number there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RemoteTxnId {
    pub node: NodeId,
    pub incarnation: u64,
    pub seq: u64,
}

/// How a remote transaction begins (sent with its first call).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Begin {
    pub isolation: Isolation,
    /// None: the engine's default.
    pub durability: Option<Durability>,
    /// Milliseconds left until the caller's statement deadline (the
    /// first statement's; each call carries the one of its own statement).
    pub deadline_ms: Option<u64>,
}

/// One call on a partition's primary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PartCall {
    /// The partition's group (its primary must hold a lease on it).
    pub group: GroupId,
    /// The partition's engine (its stream).
    pub stream: u32,
    pub txn: RemoteTxnId,
    /// Present on the transaction's first call: open it.
    pub begin: Option<Begin>,
    /// Before the operation: take a fresh snapshot (read committed).
    pub refresh: bool,
    /// Before the operation: take these savepoints (the caller numbers
    /// them; 0 is the transaction's start).
    pub savepoints: Vec<u32>,
    /// Milliseconds left until the deadline of the caller's statement
    /// making this call (None: no deadline): waits for a row's holder end
    /// there, as the statement's own would on the caller's node.
    pub deadline_ms: Option<u64>,
    pub op: PartOp,
}

/// What to do on the partition. Tables are named by their engine name,
/// indexes by theirs (None: the primary key), since ids are the engine's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum PartOp {
    Get {
        table: String,
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
    },
    /// Claims the row with this key for this transaction, as the
    /// engine's `update_with` does (waiting for a holder; under read
    /// committed, on the newest committed version), and returns it.
    Claim {
        table: String,
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
    },
    GetVersioned {
        table: String,
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
    },
    Scan {
        table: String,
        index: Option<String>,
        range: KeyRange,
        /// The fields the caller reads (None: all); the others travel as NULL.
        fields: Option<Vec<u32>>,
        /// Tests a row must pass to travel at all (its query's filter,
        /// where it can be checked on the stored bytes).
        tests: Vec<FieldTest>,
    },
    Insert {
        table: String,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
    },
    Update {
        table: String,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
    },
    Delete {
        table: String,
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
    },
    Put {
        table: String,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        cond: PutCondition,
    },
    DeleteIf {
        table: String,
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
        cond: PutCondition,
    },
    /// The next rows of the last scan.
    ScanMore,
    RollbackTo(u32),
    /// Whether the primary can commit the transaction now: it holds its
    /// lease, serves (a hand-over has not reached its last step), and
    /// still holds the transaction. Asked of every partition a commit over several writes
    /// before any of them commits.
    Ready,
    Commit,
    Abort,
}

/// The answer to a [`PartCall`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum PartAnswer {
    Done,
    Bool(bool),
    Row(#[serde(with = "serde_bytes")] Option<Vec<u8>>),
    Versioned(Option<(Vec<u8>, u64)>),
    /// Rows of a scan, in order; `more`: the rest follow on `ScanMore`
    /// (one answer stays well below a frame's limit).
    Rows {
        rows: RowPage,
        more: bool,
    },
    /// A conditional write: None written, Some(current version) rejected.
    Put(Option<Option<u64>>),
    Failed(WireError),
    /// A transaction's first call reached a node that no longer leads the
    /// partition (its role was just handed over): nothing was done there,
    /// so the caller begins again at the new primary.
    Moved,
}

/// Rows as they travel: one buffer, each row its length (4 bytes, little
/// endian) and its bytes. One copy in and out, where a list of byte
/// vectors would be encoded and decoded a byte at a time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowPage {
    data: Vec<u8>,
}

impl RowPage {
    pub fn push(&mut self, row: &[u8]) {
        let len = u32::try_from(row.len()).expect("a row is smaller than 4 GiB");
        self.data.extend_from_slice(&len.to_le_bytes());
        self.data.extend_from_slice(row);
    }

    /// The bytes the page takes.
    pub fn bytes(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn iter(&self) -> RowPageIter<'_> {
        RowPageIter { rest: &self.data }
    }

    /// The page's rows, each a vector of its own.
    pub fn to_rows(&self) -> Vec<Vec<u8>> {
        self.iter().map(<[u8]>::to_vec).collect()
    }

    /// Checks that the buffer is a whole number of rows.
    fn check(data: &[u8]) -> Result<(), String> {
        let mut rest = data;
        while !rest.is_empty() {
            let Some((len, after)) = rest.split_first_chunk::<4>() else {
                return Err("a row page ends inside a row's length".into());
            };
            let len = u32::from_le_bytes(*len) as usize;
            if after.len() < len {
                return Err(format!("a row page ends inside a row ({} of {len} bytes)", after.len()));
            }
            rest = &after[len..];
        }
        Ok(())
    }
}

pub struct RowPageIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for RowPageIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        // The buffer was checked whole when it was received or built.
        let (len, after) = self.rest.split_first_chunk::<4>()?;
        let len = u32::from_le_bytes(*len) as usize;
        let (row, rest) = after.split_at(len);
        self.rest = rest;
        Some(row)
    }
}

impl Serialize for RowPage {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.data)
    }
}

impl<'de> Deserialize<'de> for RowPage {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let data = serde_bytes::ByteBuf::deserialize(d)?.into_vec();
        RowPage::check(&data).map_err(serde::de::Error::custom)?;
        Ok(RowPage { data })
    }
}

/// An engine error as it travels.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum WireError {
    Conflict(u8),
    Deadlock,
    LockTimeout(u64),
    DeadlinePassed,
    Unique {
        table: String,
        index: String,
    },
    NoSuchTable(String),
    NoSuchIndex(String),
    MalformedRow(String),
    /// Nothing was committed (no primary here, the transaction ended).
    NotCommitted(String),
    /// The commit may or may not have happened.
    Unknown(String),
    /// The partition has no primary now; nothing was done.
    Unavailable(String),
    Other(String),
    NullInKey(String),
}

impl WireError {
    pub fn from_engine(e: &EngineError) -> WireError {
        match e {
            EngineError::Conflict { reason } => WireError::Conflict(match reason {
                ConflictReason::WriteWrite => 0,
                ConflictReason::ReadValidation => 1,
                ConflictReason::Phantom => 2,
                ConflictReason::PartitionChanged => 3,
            }),
            EngineError::Deadlock => WireError::Deadlock,
            EngineError::LockTimeout(d) => WireError::LockTimeout(d.as_millis() as u64),
            EngineError::DeadlinePassed => WireError::DeadlinePassed,
            EngineError::UniqueViolation { table, index } => {
                WireError::Unique { table: table.clone(), index: index.clone() }
            }
            EngineError::NoSuchTable(t) => WireError::NoSuchTable(t.clone()),
            EngineError::NoSuchIndex(i) => WireError::NoSuchIndex(i.clone()),
            EngineError::MalformedRow(m) => WireError::MalformedRow(m.clone()),
            EngineError::CommitFailed(LogError::NotReplicated(why)) => WireError::NotCommitted(why.clone()),
            EngineError::CommitFailed(LogError::OutcomeUnknown(why)) => WireError::Unknown(why.clone()),
            EngineError::Unavailable(why) => WireError::Unavailable(why.clone()),
            EngineError::NullInKey { table } => WireError::NullInKey(table.clone()),
            other => WireError::Other(other.to_string()),
        }
    }

    pub fn into_engine(self) -> EngineError {
        match self {
            WireError::Conflict(r) => EngineError::conflict(match r {
                0 => ConflictReason::WriteWrite,
                1 => ConflictReason::ReadValidation,
                2 => ConflictReason::Phantom,
                _ => ConflictReason::PartitionChanged,
            }),
            WireError::Deadlock => EngineError::Deadlock,
            WireError::LockTimeout(ms) => EngineError::LockTimeout(Duration::from_millis(ms)),
            WireError::DeadlinePassed => EngineError::DeadlinePassed,
            WireError::Unique { table, index } => EngineError::UniqueViolation { table, index },
            WireError::NoSuchTable(t) => EngineError::NoSuchTable(t),
            WireError::NoSuchIndex(i) => EngineError::NoSuchIndex(i),
            WireError::MalformedRow(m) => EngineError::MalformedRow(m),
            WireError::NotCommitted(why) => EngineError::CommitFailed(LogError::NotReplicated(why)),
            WireError::Unknown(why) => EngineError::CommitFailed(LogError::OutcomeUnknown(why)),
            WireError::Unavailable(why) => EngineError::Unavailable(why),
            WireError::Other(m) => EngineError::Internal(format!("on the partition's primary: {m}")),
            WireError::NullInKey(table) => EngineError::NullInKey { table },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_page_keeps_its_rows_on_the_wire_and_a_cut_one_is_refused() {
        let rows: Vec<Vec<u8>> = vec![b"first".to_vec(), Vec::new(), vec![7; 300]];
        let mut page = RowPage::default();
        for r in &rows {
            page.push(r);
        }
        let answer = PartAnswer::Rows { rows: page.clone(), more: true };
        let wire = postcard::to_allocvec(&answer).unwrap();
        match postcard::from_bytes::<PartAnswer>(&wire).unwrap() {
            PartAnswer::Rows { rows: got, more: true } => assert_eq!(got.to_rows(), rows),
            other => panic!("{other:?}"),
        }
        // A page whose last row is cut short does not decode.
        let mut cut = page.clone();
        cut.data.truncate(cut.data.len() - 1);
        let wire = postcard::to_allocvec(&PartAnswer::Rows { rows: cut, more: false }).unwrap();
        assert!(postcard::from_bytes::<PartAnswer>(&wire).is_err());
    }
}
