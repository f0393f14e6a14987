//! Log record formats: what a committed transaction or a DDL operation
//! writes to the commit log. The log itself (`tessera-log`) frames and
//! checksums records; this module defines their payload.
//!
//! ```text
//! commit: u8 1 | u64 commit ts | u32 n | n × write
//! write:  u32 table | u8 op (0 put, 1 delete) | u64 prev ts | bytes key | [bytes row]   (row only for put)
//! ddl:    u8 2 | u64 ts | u8 kind | body
//!         kind 1 create table: table spec; 2 drop table: u32 id;
//!         3 create index: u32 table, index spec; 4 drop index: u32 table, u32 index;
//!         5 truncate table: u32 old id, u32 new id
//! ```
//! `prev ts` is the begin timestamp of the committed version the write
//! replaced or deleted (0 for a fresh insert); checkpoints use it to know
//! which older data-file row a write made obsolete. Records carry after-images
//! only: recovery and replicas apply them without re-executing anything.

use crate::codec::{Decoder, Encoder};
use crate::error::Result;
use crate::mvcc::Timestamp;
use crate::schema::{IndexId, IndexSpec, TableId, TableSpec, decode_index, encode_index};

pub const COMMIT: u8 = 1;
pub const DDL: u8 = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DdlOp {
    CreateTable(TableSpec),
    DropTable(TableId),
    /// Empties a table atomically: the rows of `old` are dropped and the
    /// table lives on, with the same definition, under the id `new`.
    TruncateTable {
        old: TableId,
        new: TableId,
    },
    CreateIndex(TableId, IndexSpec),
    DropIndex(TableId, IndexId),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRecord<'a> {
    pub table: TableId,
    pub key: &'a [u8],
    pub prev_ts: Timestamp,
    /// The after-image; None for a delete.
    pub row: Option<&'a [u8]>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEntry<'a> {
    Commit { ts: Timestamp, writes: Vec<WriteRecord<'a>> },
    Ddl { ts: Timestamp, op: DdlOp },
}

impl LogEntry<'_> {
    pub fn ts(&self) -> Timestamp {
        match self {
            LogEntry::Commit { ts, .. } | LogEntry::Ddl { ts, .. } => *ts,
        }
    }
}

pub fn begin_commit(e: &mut Encoder, ts: Timestamp, writes: u32) {
    e.u8(COMMIT);
    e.u64(ts);
    e.u32(writes);
}

pub fn push_write(e: &mut Encoder, w: &WriteRecord<'_>) {
    e.u32(w.table);
    e.u8(if w.row.is_some() { 0 } else { 1 });
    e.u64(w.prev_ts);
    e.bytes(w.key);
    if let Some(row) = w.row {
        e.bytes(row);
    }
}

pub fn encode_ddl(ts: Timestamp, op: &DdlOp) -> Vec<u8> {
    let mut e = Encoder::with_capacity(64);
    e.u8(DDL);
    e.u64(ts);
    match op {
        DdlOp::CreateTable(spec) => {
            e.u8(1);
            spec.encode(&mut e);
        }
        DdlOp::DropTable(id) => {
            e.u8(2);
            e.u32(*id);
        }
        DdlOp::TruncateTable { old, new } => {
            e.u8(5);
            e.u32(*old);
            e.u32(*new);
        }
        DdlOp::CreateIndex(t, ix) => {
            e.u8(3);
            e.u32(*t);
            encode_index(ix, &mut e);
        }
        DdlOp::DropIndex(t, ix) => {
            e.u8(4);
            e.u32(*t);
            e.u32(*ix);
        }
    }
    e.buf
}

pub fn decode(payload: &[u8], lsn: u64) -> Result<LogEntry<'_>> {
    let mut d = Decoder::new(payload, lsn);
    let entry = match d.u8()? {
        COMMIT => {
            let ts = d.u64()?;
            let n = d.u32()? as usize;
            let mut writes = Vec::with_capacity(n.min(1 << 16));
            for _ in 0..n {
                writes.push(decode_write(&mut d)?);
            }
            LogEntry::Commit { ts, writes }
        }
        DDL => {
            let ts = d.u64()?;
            let op = match d.u8()? {
                1 => DdlOp::CreateTable(TableSpec::decode(&mut d)?),
                2 => DdlOp::DropTable(d.u32()?),
                3 => DdlOp::CreateIndex(d.u32()?, decode_index(&mut d)?),
                4 => DdlOp::DropIndex(d.u32()?, d.u32()?),
                5 => DdlOp::TruncateTable { old: d.u32()?, new: d.u32()? },
                k => return Err(d.error(format!("unknown DDL kind {k}"))),
            };
            LogEntry::Ddl { ts, op }
        }
        t => return Err(d.error(format!("unknown record type {t}"))),
    };
    if !d.is_done() {
        return Err(d.error("trailing bytes after the record"));
    }
    Ok(entry)
}

pub(crate) fn decode_write<'a>(d: &mut Decoder<'a>) -> Result<WriteRecord<'a>> {
    let table = d.u32()?;
    let op = d.u8()?;
    let prev_ts = d.u64()?;
    let key = d.bytes()?;
    let row = match op {
        0 => Some(d.bytes()?),
        1 => None,
        k => return Err(d.error(format!("unknown write op {k}"))),
    };
    Ok(WriteRecord { table, key, prev_ts, row })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::IndexKind;

    #[test]
    fn commit_and_ddl_round_trip() {
        let mut e = Encoder::default();
        begin_commit(&mut e, 42, 2);
        let w1 = WriteRecord { table: 3, key: b"k1", prev_ts: 0, row: Some(b"row") };
        let w2 = WriteRecord { table: 3, key: b"k2", prev_ts: 17, row: None };
        push_write(&mut e, &w1);
        push_write(&mut e, &w2);
        assert_eq!(decode(&e.buf, 0).unwrap(), LogEntry::Commit { ts: 42, writes: vec![w1, w2] });

        let spec = TableSpec::new("t", vec![0], IndexKind::Ordered).with_index(IndexSpec::new(
            "t_b",
            IndexKind::Hash,
            true,
            vec![1, 2],
        ));
        for op in [
            DdlOp::CreateTable(spec.clone()),
            DdlOp::DropTable(9),
            DdlOp::TruncateTable { old: 3, new: 4 },
            DdlOp::CreateIndex(1, spec.secondary[0].clone()),
            DdlOp::DropIndex(1, 2),
        ] {
            let bytes = encode_ddl(7, &op);
            assert_eq!(decode(&bytes, 0).unwrap(), LogEntry::Ddl { ts: 7, op });
        }
        assert!(decode(&[9], 0).is_err());
        assert!(decode(&e.buf[..e.buf.len() - 1], 0).is_err());
    }
}
