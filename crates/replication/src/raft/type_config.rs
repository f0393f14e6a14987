//! The Raft type configuration of a data group, and what its log carries.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::types::{NodeId, NodeInfo};

/// One log entry's payload: a commit or DDL record of one engine (stream),
/// tagged with the node and ticket that proposed it, so that the proposer
/// recognizes its own entry when it applies it. A record larger than
/// [`RECORD_CHUNK`] travels as several entries, `part` (index, count) of
/// one ticket, and is applied when its last part is (`state_machine`):
/// no single entry is large enough to hold up heartbeats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    pub origin: NodeId,
    /// Random per process start of the origin: tickets restart from 1.
    pub incarnation: u64,
    pub ticket: u64,
    pub stream: u32,
    /// For a record split over several entries: this entry's piece and
    /// how many there are.
    pub part: Option<(u32, u32)>,
    /// Shared, not copied, when Raft clones the entry (once per follower
    /// it sends it to, and for its in-memory cache).
    #[serde(with = "raw_bytes")]
    pub record: bytes::Bytes,
}

/// Records above this size are split over several log entries.
pub const RECORD_CHUNK: usize = 1 << 20;

/// Serializes a record as one byte string rather than a sequence of
/// numbers: one copy instead of a loop per byte.
mod raw_bytes {
    use serde::de::{Error, Visitor};
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &bytes::Bytes, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<bytes::Bytes, D::Error> {
        struct Bytes;
        impl<'de> Visitor<'de> for Bytes {
            type Value = bytes::Bytes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<bytes::Bytes, E> {
                Ok(bytes::Bytes::copy_from_slice(v))
            }
            fn visit_byte_buf<E: Error>(self, v: Vec<u8>) -> Result<bytes::Bytes, E> {
                Ok(bytes::Bytes::from(v))
            }
        }
        d.deserialize_byte_buf(Bytes)
    }
}

impl Command {
    /// The record's commit timestamp (commit and DDL records both start
    /// with a kind byte and the timestamp).
    pub fn ts(&self) -> u64 {
        if self.part.is_some_and(|(i, _)| i > 0) {
            return 0;
        }
        self.record.get(1..9).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).unwrap_or(0)
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "stream {} record of {} bytes from node {}", self.stream, self.record.len(), self.origin)
    }
}

openraft::declare_raft_types!(
    /// A data group's Raft: entries carry engine records; a response is the
    /// entry's log index.
    pub TypeConfig:
        D = Command,
        R = u64,
        NodeId = NodeId,
        Node = NodeInfo,
);

pub type C = TypeConfig;
pub type LogId = openraft::type_config::alias::LogIdOf<C>;
pub type Vote = openraft::type_config::alias::VoteOf<C>;
pub type Entry = openraft::type_config::alias::EntryOf<C>;
pub type StoredMembership = openraft::type_config::alias::StoredMembershipOf<C>;
pub type SnapshotMeta = openraft::type_config::alias::SnapshotMetaOf<C>;
