//! What travels for a transaction on a partition whose primary is
//! another node: the calls ([`PartMessage`]), their answers, and the
//! engine's values as they travel.

use std::ops::Bound;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tessera_engine::row_filter::{Cmp, FieldTest};
use tessera_engine::{
    ConflictReason, Durability, EngineError, IndexKind, IndexSpec, Isolation, LogError, PutCondition, RowVersion,
    TableSpec,
};

use crate::types::{GroupId, NodeId};
use crate::wire::{Message, Subsystem};

/// A request to a partition's primary (answered by `parts::server`).
#[derive(Debug, Serialize, Deserialize)]
pub enum PartMessage {
    /// A call of a transaction on a partition the asked node leads.
    Call(PartCall),
    /// A schema change of a partition the asked node leads.
    Schema { group: GroupId, stream: u32, change: SchemaChange },
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
    /// 0 read committed, 1 snapshot, 2 repeatable read, 3 serializable.
    pub isolation: u8,
    /// 0 the engine's default, 1 synchronous, 2 lazy.
    pub durability: u8,
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

/// A bound of a key range.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum WireBound {
    Unbounded,
    Included(Vec<u8>),
    Excluded(Vec<u8>),
}

/// A test of a scanned row's field (`tessera_engine::row_filter`), as it
/// travels.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireTest {
    pub field: u32,
    pub cmp: WireCmp,
    #[serde(with = "serde_bytes")]
    pub value: Vec<u8>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub enum WireCmp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    IsNull,
    IsNotNull,
}

impl WireTest {
    pub fn of(t: &FieldTest) -> WireTest {
        let cmp = match t.cmp {
            Cmp::Eq => WireCmp::Eq,
            Cmp::NotEq => WireCmp::NotEq,
            Cmp::Lt => WireCmp::Lt,
            Cmp::LtEq => WireCmp::LtEq,
            Cmp::Gt => WireCmp::Gt,
            Cmp::GtEq => WireCmp::GtEq,
            Cmp::IsNull => WireCmp::IsNull,
            Cmp::IsNotNull => WireCmp::IsNotNull,
        };
        WireTest { field: t.field, cmp, value: t.value.clone() }
    }

    pub fn test(self) -> FieldTest {
        let cmp = match self.cmp {
            WireCmp::Eq => Cmp::Eq,
            WireCmp::NotEq => Cmp::NotEq,
            WireCmp::Lt => Cmp::Lt,
            WireCmp::LtEq => Cmp::LtEq,
            WireCmp::Gt => Cmp::Gt,
            WireCmp::GtEq => Cmp::GtEq,
            WireCmp::IsNull => Cmp::IsNull,
            WireCmp::IsNotNull => Cmp::IsNotNull,
        };
        FieldTest { field: self.field, cmp, value: self.value }
    }
}

/// An index as it travels (its id is the receiving engine's to give).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireIndex {
    pub name: String,
    /// false: hash, true: ordered.
    pub ordered: bool,
    pub unique: bool,
    pub columns: Vec<u16>,
}

impl WireIndex {
    pub fn of(spec: &IndexSpec) -> WireIndex {
        WireIndex {
            name: spec.name.clone(),
            ordered: spec.kind == IndexKind::Ordered,
            unique: spec.unique,
            columns: spec.columns.clone(),
        }
    }

    pub fn spec(&self) -> IndexSpec {
        let kind = if self.ordered { IndexKind::Ordered } else { IndexKind::Hash };
        IndexSpec::new(self.name.clone(), kind, self.unique, self.columns.clone())
    }
}

/// A table as it travels: its name, primary key and secondary indexes
/// (ids are the receiving engine's to give).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireTable {
    pub name: String,
    pub primary: WireIndex,
    pub secondary: Vec<WireIndex>,
}

impl WireTable {
    pub fn of(spec: &TableSpec) -> WireTable {
        WireTable {
            name: spec.name.clone(),
            primary: WireIndex::of(&spec.primary),
            secondary: spec.secondary.iter().map(WireIndex::of).collect(),
        }
    }

    pub fn spec(&self) -> TableSpec {
        let mut primary = self.primary.spec();
        primary.id = tessera_engine::PRIMARY;
        let secondary: Vec<IndexSpec> = self
            .secondary
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let mut s = w.spec();
                s.id = i as u32 + 1;
                s
            })
            .collect();
        let next_index_id = secondary.len() as u32 + 1;
        TableSpec { id: 0, name: self.name.clone(), primary, secondary, next_index_id }
    }
}

/// A schema change of one partition's engine, made on its primary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum SchemaChange {
    CreateTable(WireTable),
    DropTable(String),
    CreateIndex {
        table: String,
        index: WireIndex,
    },
    DropIndex {
        table: String,
        index: String,
    },
    TruncateTable(String),
    /// Make the engine's tables exactly these (`Engine::match_tables`).
    MatchTables(Vec<WireTable>),
    /// Make table `to` a copy of table `from` (`Engine::copy_table`).
    CopyTable {
        from: String,
        to: WireTable,
    },
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
        lower: WireBound,
        upper: WireBound,
        /// The fields the caller reads (None: all); the others travel as NULL.
        fields: Option<Vec<u32>>,
        /// Tests a row must pass to travel at all (its query's filter,
        /// where it can be checked on the stored bytes).
        tests: Vec<WireTest>,
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
        cond: WireCondition,
    },
    DeleteIf {
        table: String,
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
        cond: WireCondition,
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

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub enum WireCondition {
    Always,
    Absent,
    Present,
    VersionIs(u64),
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

pub fn isolation_code(i: Isolation) -> u8 {
    match i {
        Isolation::ReadCommitted => 0,
        Isolation::Snapshot => 1,
        Isolation::RepeatableRead => 2,
        Isolation::Serializable => 3,
    }
}

pub fn isolation_of(code: u8) -> Isolation {
    match code {
        0 => Isolation::ReadCommitted,
        1 => Isolation::Snapshot,
        2 => Isolation::RepeatableRead,
        _ => Isolation::Serializable,
    }
}

pub fn durability_code(d: Option<Durability>) -> u8 {
    match d {
        None => 0,
        Some(Durability::Synchronous) => 1,
        Some(Durability::Lazy) => 2,
    }
}

pub fn durability_of(code: u8) -> Option<Durability> {
    match code {
        1 => Some(Durability::Synchronous),
        2 => Some(Durability::Lazy),
        _ => None,
    }
}

pub fn bound_to_wire(b: &Bound<Vec<u8>>) -> WireBound {
    match b {
        Bound::Unbounded => WireBound::Unbounded,
        Bound::Included(k) => WireBound::Included(k.clone()),
        Bound::Excluded(k) => WireBound::Excluded(k.clone()),
    }
}

pub fn bound_of_wire(b: WireBound) -> Bound<Vec<u8>> {
    match b {
        WireBound::Unbounded => Bound::Unbounded,
        WireBound::Included(k) => Bound::Included(k),
        WireBound::Excluded(k) => Bound::Excluded(k),
    }
}

pub fn condition_to_wire(c: PutCondition) -> WireCondition {
    match c {
        PutCondition::Always => WireCondition::Always,
        PutCondition::Absent => WireCondition::Absent,
        PutCondition::Present => WireCondition::Present,
        PutCondition::VersionIs(v) => WireCondition::VersionIs(v.0),
    }
}

pub fn condition_of_wire(c: WireCondition) -> PutCondition {
    match c {
        WireCondition::Always => PutCondition::Always,
        WireCondition::Absent => PutCondition::Absent,
        WireCondition::Present => PutCondition::Present,
        WireCondition::VersionIs(v) => PutCondition::VersionIs(RowVersion(v)),
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
