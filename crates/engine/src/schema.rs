//! Table and index definitions, as the engine persists them.

use crate::codec::{Decoder, Encoder};
use crate::error::{EngineError, Result};

pub type TableId = u32;
pub type IndexId = u32;

/// The primary index always has this id.
pub const PRIMARY: IndexId = 0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum IndexKind {
    /// Point access only (equality on the whole key).
    Hash,
    /// Point access and range scans in key order.
    Ordered,
}

#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct IndexSpec {
    pub id: IndexId,
    pub name: String,
    pub kind: IndexKind,
    pub unique: bool,
    /// Row fields that make up the key, in key order.
    pub columns: Vec<u16>,
}

impl IndexSpec {
    pub fn new(name: impl Into<String>, kind: IndexKind, unique: bool, columns: Vec<u16>) -> Self {
        IndexSpec { id: 0, name: name.into(), kind, unique, columns }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TableSpec {
    pub id: TableId,
    pub name: String,
    /// The primary key: unique, identifies a row across its versions.
    pub primary: IndexSpec,
    pub secondary: Vec<IndexSpec>,
    pub next_index_id: IndexId,
}

impl TableSpec {
    /// A table whose primary key is made of `pk_columns`; `kind` says whether
    /// the primary key also gets an ordered index (a hash map by primary key
    /// always exists: it is the table's row directory).
    pub fn new(name: impl Into<String>, pk_columns: Vec<u16>, kind: IndexKind) -> Self {
        let name = name.into();
        TableSpec {
            id: 0,
            primary: IndexSpec { id: PRIMARY, name: format!("{name}_pkey"), kind, unique: true, columns: pk_columns },
            name,
            secondary: Vec::new(),
            next_index_id: 1,
        }
    }

    pub fn with_index(mut self, mut index: IndexSpec) -> Self {
        index.id = self.next_index_id;
        self.next_index_id += 1;
        self.secondary.push(index);
        self
    }

    pub fn index(&self, id: IndexId) -> Option<&IndexSpec> {
        if id == PRIMARY { Some(&self.primary) } else { self.secondary.iter().find(|i| i.id == id) }
    }

    pub fn index_by_name(&self, name: &str) -> Option<&IndexSpec> {
        std::iter::once(&self.primary).chain(self.secondary.iter()).find(|i| i.name == name)
    }

    pub fn validate(&self) -> Result<()> {
        if self.name.is_empty() {
            return Err(EngineError::InvalidSchema("a table needs a name".into()));
        }
        if self.primary.columns.is_empty() {
            return Err(EngineError::InvalidSchema(format!("table \"{}\" needs a primary key", self.name)));
        }
        for ix in std::iter::once(&self.primary).chain(self.secondary.iter()) {
            if ix.columns.is_empty() {
                return Err(EngineError::InvalidSchema(format!("index \"{}\" has no key columns", ix.name)));
            }
        }
        Ok(())
    }

    pub(crate) fn encode(&self, e: &mut Encoder) {
        e.u32(self.id);
        e.str(&self.name);
        e.u32(self.next_index_id);
        encode_index(&self.primary, e);
        e.u32(self.secondary.len() as u32);
        for ix in &self.secondary {
            encode_index(ix, e);
        }
    }

    pub(crate) fn decode(d: &mut Decoder) -> Result<Self> {
        let id = d.u32()?;
        let name = d.string()?;
        let next_index_id = d.u32()?;
        let primary = decode_index(d)?;
        let n = d.u32()? as usize;
        let mut secondary = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            secondary.push(decode_index(d)?);
        }
        Ok(TableSpec { id, name, primary, secondary, next_index_id })
    }
}

pub(crate) fn encode_index(ix: &IndexSpec, e: &mut Encoder) {
    e.u32(ix.id);
    e.str(&ix.name);
    e.u8(match ix.kind {
        IndexKind::Hash => 0,
        IndexKind::Ordered => 1,
    });
    e.u8(ix.unique as u8);
    e.u32(ix.columns.len() as u32);
    for c in &ix.columns {
        e.u16(*c);
    }
}

pub(crate) fn decode_index(d: &mut Decoder) -> Result<IndexSpec> {
    let id = d.u32()?;
    let name = d.string()?;
    let kind = match d.u8()? {
        0 => IndexKind::Hash,
        1 => IndexKind::Ordered,
        k => return Err(d.error(format!("unknown index kind {k}"))),
    };
    let unique = d.u8()? != 0;
    let n = d.u32()? as usize;
    let mut columns = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        columns.push(d.u16()?);
    }
    Ok(IndexSpec { id, name, kind, unique, columns })
}
