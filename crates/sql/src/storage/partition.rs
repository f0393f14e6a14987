//! Partitions: where a table's rows live.
//!
//! A keyless database has one partition, the node's system engine (stream
//! 0). A keyed database is split into key ranges that cover the whole key
//! space without overlap; each range is a partition with its own engine on
//! the node's shared log (`tessera_engine::Node`), and every table of the
//! database exists in every partition. A range is `[low, high)` over the
//! partition key's stored bytes, which order as the values do (the keyed
//! types are exactly those whose equal values have equal bytes), with an
//! empty `low` for the first range and no `high` for the last.
//!
//! [`StoredTable`] is one SQL table as the layers below see it: the engine
//! table in each partition, and how to find the partition of a row (its key
//! field) or of a primary key (the key column's position in it).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};
use tessera_engine::tuple::{Tuple, key_field};
use tessera_engine::{Engine, IndexId, Table, TableSpec};

use crate::error::{Result, SqlError, code};
use crate::storage::catalog::TableDef;
use crate::storage::keyed::PartitionKey;
use crate::values::types::SqlType;
use tessera_engine::remote::PartitionRoutes;

/// The most partitions a database may have.
pub const MAX_PARTITIONS: usize = 1024;

/// One key range of a keyed database, as the catalog stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionDef {
    /// The partition's log stream, also its identity on the node.
    pub stream: u32,
    /// Inclusive lower bound (stored key bytes; empty: unbounded).
    pub low: Vec<u8>,
    /// Exclusive upper bound (None: unbounded).
    pub high: Option<Vec<u8>>,
    /// Bumped by every schema change applied to this partition.
    #[serde(default)]
    pub schema_version: u64,
    /// Holds rows outside its range (a split moved them and has not yet
    /// deleted them here); scans skip them meanwhile.
    #[serde(default)]
    pub dirty: bool,
}

impl PartitionDef {
    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.low.as_slice() && self.high.as_deref().is_none_or(|h| key < h)
    }
}

/// Split points that cut an integer key type's value space into `n` even
/// ranges. Integers are stored big-endian with the sign bit flipped, so an
/// even split of the stored bytes is an even split of the type's range.
pub fn even_splits(ty: SqlType, n: usize) -> Result<Vec<Vec<u8>>> {
    let width = match ty {
        SqlType::Int2 => 2,
        SqlType::Int4 => 4,
        SqlType::Int8 => 8,
        other => {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                format!("partitions = n splits integer keys evenly; give split_points for a key of type {other}"),
            ));
        }
    };
    let space: u128 = 1u128 << (8 * width);
    Ok((1..n)
        .map(|i| {
            let v = (i as u128 * space / n as u128).to_be_bytes();
            v[16 - width..].to_vec()
        })
        .collect())
}

/// The ranges that split points make (points must be sorted and distinct).
pub fn ranges(points: &[Vec<u8>]) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut out = Vec::with_capacity(points.len() + 1);
    let mut low = Vec::new();
    for p in points {
        out.push((low, Some(p.clone())));
        low = p.clone();
    }
    out.push((low, None));
    out
}

/// Parses `split_points = 'v1, v2, …'` for a key of type `ty` into sorted,
/// distinct stored bytes.
pub fn parse_split_points(text: &str, key: &PartitionKey) -> Result<Vec<Vec<u8>>> {
    let mut points = Vec::new();
    for part in text.split(',') {
        let v = part.trim();
        if v.is_empty() {
            return Err(SqlError::new(code::INVALID_PARAMETER_VALUE, "split_points has an empty value"));
        }
        points.push(encode_key_value(key.ty, v).map_err(|e| {
            SqlError::new(
                code::INVALID_PARAMETER_VALUE,
                format!("invalid split point \"{v}\" for {key}: {}", e.message),
            )
        })?);
    }
    points.sort();
    let n = points.len();
    points.dedup();
    if points.len() != n {
        return Err(SqlError::new(code::INVALID_PARAMETER_VALUE, "split_points has a value twice"));
    }
    if points.len() + 1 > MAX_PARTITIONS {
        return Err(SqlError::new(
            code::INVALID_PARAMETER_VALUE,
            format!("a database may have at most {MAX_PARTITIONS} partitions"),
        ));
    }
    Ok(points)
}

/// The stored bytes of a partition key value given as text.
pub fn encode_key_value(ty: SqlType, text: &str) -> Result<Vec<u8>> {
    use datafusion::arrow::array::{ArrayRef, StringArray};
    let strings: ArrayRef = Arc::new(StringArray::from(vec![text]));
    let array = crate::values::assign::cast_to(&strings, ty, "partition key", crate::values::tz::Zone::Utc)?;
    let mut encoded = crate::values::rowcodec::encode_column(ty, &array)?;
    encoded
        .pop()
        .flatten()
        .ok_or_else(|| SqlError::new(code::INVALID_PARAMETER_VALUE, "a partition key cannot be NULL"))
}

/// A key range's bounds as text, for system views and EXPLAIN.
pub fn describe_bound(ty: SqlType, bytes: Option<&[u8]>) -> Option<String> {
    let bytes = bytes?;
    if bytes.is_empty() {
        return None;
    }
    Some(show_value(ty, bytes))
}

/// A stored partition key value as text.
pub fn show_value(ty: SqlType, bytes: &[u8]) -> String {
    let row = tessera_engine::tuple::encode_tuple(&[Some(bytes)]);
    let refs: [&[u8]; 1] = [&row];
    crate::values::rowcodec::decode_column(ty, 0, &refs)
        .ok()
        .and_then(|a| crate::values::text::format_cell(&a, 0))
        .unwrap_or_else(|| "?".into())
}

/// Admission of writers to a partition, so that a split can wait until
/// no transaction is writing it and keep new writers out meanwhile.
///
/// A writer enters at its first write to the partition and leaves when its
/// transaction ends. Entering increments `writers` *before* reading
/// `frozen`, and a split sets `frozen` before reading `writers` (both
/// sequentially consistent), so either the writer sees the freeze or the
/// split sees the writer. `epoch` counts the partition's range changes: a
/// writer whose statement was planned against an older range is refused.
#[derive(Debug, Default)]
pub struct PartitionGate {
    writers: AtomicUsize,
    frozen: AtomicBool,
    epoch: AtomicU64,
}

impl PartitionGate {
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Admits a writer that planned against range `epoch`.
    pub fn enter(self: &Arc<Self>, epoch: u64) -> tessera_engine::Result<GateHold> {
        self.writers.fetch_add(1, Ordering::SeqCst);
        let hold = GateHold(self.clone());
        self.check(epoch)?;
        Ok(hold)
    }

    /// Whether a writer already inside may go on writing under `epoch`.
    pub fn check(&self, epoch: u64) -> tessera_engine::Result<()> {
        if self.frozen.load(Ordering::SeqCst) || self.epoch.load(Ordering::SeqCst) != epoch {
            return Err(tessera_engine::EngineError::conflict(tessera_engine::ConflictReason::PartitionChanged));
        }
        Ok(())
    }

    /// Keeps new writers out and waits (up to `timeout`) until the writers
    /// inside have left. False (and unfrozen) when they did not.
    pub fn freeze(&self, timeout: std::time::Duration) -> bool {
        self.frozen.store(true, Ordering::SeqCst);
        let deadline = std::time::Instant::now() + timeout;
        while self.writers.load(Ordering::SeqCst) > 0 {
            if std::time::Instant::now() >= deadline {
                self.frozen.store(false, Ordering::SeqCst);
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        true
    }

    /// Lets writers in again; `changed`: the range changed meanwhile.
    pub fn thaw(&self, changed: bool) {
        if changed {
            self.epoch.fetch_add(1, Ordering::SeqCst);
        }
        self.frozen.store(false, Ordering::SeqCst);
    }
}

/// A writer's presence in a partition; leaving is dropping it.
#[derive(Debug)]
pub struct GateHold(Arc<PartitionGate>);

impl Drop for GateHold {
    fn drop(&mut self) {
        self.0.writers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One partition's engine table.
pub struct Part {
    pub def: PartitionDef,
    /// The partition's engine on this node.
    pub engine: Arc<Engine>,
    /// Its engine table here (None: this node holds no copy of the
    /// partition with the table; its primary elsewhere serves it).
    pub table: Option<Arc<Table>>,
    /// The partition's writer gate (None for the system engine, which is
    /// never split) and the range epoch the table was looked up at.
    pub gate: Option<(Arc<PartitionGate>, u64)>,
    /// Where the partition's primary is, when it may be another node (on
    /// a cluster whose partitions are groups of their own).
    pub routes: Option<Arc<dyn PartitionRoutes>>,
}

impl Part {
    /// The engine table here, for a part of a transaction run here.
    pub fn local_table(&self, name: &str) -> tessera_engine::Result<&Arc<Table>> {
        self.table.as_ref().ok_or_else(|| {
            tessera_engine::EngineError::Unavailable(format!(
                "this node became the primary of partition {} before its table {name} reached it",
                self.def.stream
            ))
        })
    }
}

/// How to find a row's partition.
#[derive(Debug, Clone, Copy)]
struct Route {
    /// The engine field holding the partition key.
    row_field: usize,
    /// The key column's position in the engine primary key, if it is there.
    key_position: Option<usize>,
}

/// A SQL table's engine tables, one per partition, in key order.
pub struct StoredTable {
    pub parts: Vec<Part>,
    /// The database's partition key (None: keyless).
    pub key: Option<PartitionKey>,
    route: Option<Route>,
    /// The engine table's name, the same in every partition.
    pub name: String,
    /// Its indexes, as the access paths see them (every partition has the
    /// same).
    spec: Arc<TableSpec>,
}

impl std::fmt::Debug for StoredTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredTable").field("partitions", &self.parts.len()).finish()
    }
}

impl StoredTable {
    /// A table of a keyless database (one partition: its home, `stream`).
    pub fn single(engine: Arc<Engine>, table: Arc<Table>, stream: u32) -> StoredTable {
        let def = PartitionDef { stream, low: Vec::new(), high: None, schema_version: 0, dirty: false };
        let spec = table.spec();
        StoredTable {
            parts: vec![Part { def, engine, table: Some(table), gate: None, routes: None }],
            key: None,
            route: None,
            name: spec.name.clone(),
            spec,
        }
    }

    /// A table of a keyed database. Its indexes are those of the first
    /// partition held here, or the catalog's where none is.
    pub fn partitioned(def: &TableDef, key: &PartitionKey, parts: Vec<Part>) -> Result<StoredTable> {
        let col = def.column(&key.column).ok_or_else(|| {
            SqlError::internal(format!("table \"{}\" lacks partition key column {}", def.name, key.column))
        })?;
        let key_position = def.primary_key.iter().position(|c| *c == key.column).filter(|_| def.rowid_field.is_none());
        let spec = match parts.iter().find_map(|p| p.table.as_ref()) {
            Some(t) => t.spec(),
            None => Arc::new(crate::storage::catalog::engine_spec(def, &def.engine_name)?),
        };
        Ok(StoredTable {
            parts,
            key: Some(key.clone()),
            route: Some(Route { row_field: col.field as usize, key_position }),
            name: def.engine_name.clone(),
            spec,
        })
    }

    /// The table's indexes, as the access paths see them.
    pub fn spec(&self) -> Arc<TableSpec> {
        self.spec.clone()
    }

    /// The name of index `id` (None: the primary key), for a partition
    /// whose primary is another node (index ids are each engine's own).
    pub fn index_name(&self, id: IndexId) -> tessera_engine::Result<Option<String>> {
        if id == tessera_engine::PRIMARY {
            return Ok(None);
        }
        self.spec
            .index(id)
            .map(|i| Some(i.name.clone()))
            .ok_or_else(|| tessera_engine::EngineError::NoSuchIndex(format!("{id} of {}", self.name)))
    }

    /// Live rows and bytes over the partitions held here.
    pub fn stats(&self) -> tessera_engine::TableStats {
        let mut total = tessera_engine::TableStats { rows: 0, bytes: 0 };
        for t in self.parts.iter().filter_map(|p| p.table.as_ref()) {
            let s = t.stats();
            total.rows += s.rows;
            total.bytes += s.bytes;
        }
        total
    }

    pub fn is_partitioned(&self) -> bool {
        self.route.is_some()
    }

    /// The partition holding key value `key` (stored bytes).
    pub fn part_of_value(&self, key: &[u8]) -> usize {
        if self.parts.len() == 1 {
            return 0;
        }
        // Ranges are sorted and cover everything: the last whose low ≤ key.
        self.parts.partition_point(|p| p.def.low.as_slice() <= key).saturating_sub(1)
    }

    /// The partition a stored row belongs to.
    /// (A NULL key, possible in a table without a primary key, belongs to
    /// the first partition.)
    pub fn part_of_row(&self, row: &[u8]) -> tessera_engine::Result<usize> {
        let Some(route) = self.route else { return Ok(0) };
        if self.parts.len() == 1 {
            return Ok(0);
        }
        let t = Tuple::parse(row)?;
        Ok(t.field(route.row_field).map_or(0, |key| self.part_of_value(key)))
    }

    /// The partition of an engine primary key, when the key says (None: the
    /// table's key does not contain the partition key; look everywhere).
    pub fn part_of_key(&self, key: &[u8]) -> Option<usize> {
        let Some(route) = self.route else { return Some(0) };
        if self.parts.len() == 1 {
            return Some(0);
        }
        let value = key_field(key, route.key_position?)?;
        Some(self.part_of_value(&value))
    }

    /// The partitions whose ranges overlap `[low, high]` of key values
    /// (None bounds are open).
    pub fn parts_overlapping(&self, low: Option<&[u8]>, high: Option<&[u8]>) -> Vec<usize> {
        (0..self.parts.len())
            .filter(|&i| {
                let d = &self.parts[i].def;
                let above_low = low.is_none_or(|l| d.high.as_deref().is_none_or(|h| l < h));
                let below_high = high.is_none_or(|h| d.low.as_slice() <= h);
                above_low && below_high
            })
            .collect()
    }

    /// Whether stored row `row` lies in partition `part`'s range. Scans
    /// check it: after a split, rows that moved may linger in the old
    /// partition until it is cleaned.
    /// `fields` and the field routing rows to partitions, in increasing
    /// order: what a scan reading `fields` must bring back.
    pub fn fields_with_route(&self, fields: &[u32]) -> Vec<u32> {
        let mut out = fields.to_vec();
        out.extend(self.route.map(|r| r.row_field as u32));
        out.sort_unstable();
        out.dedup();
        out
    }

    pub fn row_in_part(&self, part: usize, row: &[u8]) -> bool {
        let Some(route) = self.route else { return true };
        if self.parts.len() == 1 && self.parts[0].def.low.is_empty() && self.parts[0].def.high.is_none() {
            return true;
        }
        match Tuple::parse(row) {
            Ok(t) => match t.field(route.row_field) {
                Some(k) => self.parts[part].def.contains(k),
                None => part == 0,
            },
            Err(_) => true,
        }
    }

    /// Whether the engine primary key starts with the partition key (so a
    /// range on the key's leading column selects partitions).
    pub fn key_leads_primary_key(&self) -> bool {
        self.route.is_some_and(|r| r.key_position == Some(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_splits_cut_integers_evenly() {
        let s = even_splits(SqlType::Int2, 4).unwrap();
        assert_eq!(s, vec![vec![0x40, 0], vec![0x80, 0], vec![0xC0, 0]]);
        let shown: Vec<String> = s.iter().map(|b| show_value(SqlType::Int2, b)).collect();
        assert_eq!(shown, ["-16384", "0", "16384"]);
        let r = ranges(&s);
        assert_eq!(r.len(), 4);
        assert_eq!(r[0], (vec![], Some(vec![0x40, 0])));
        assert_eq!(r[3], (vec![0xC0, 0], None));
        assert!(even_splits(SqlType::Int8, 1).unwrap().is_empty());
        let big = even_splits(SqlType::Int8, 2).unwrap();
        assert_eq!(show_value(SqlType::Int8, &big[0]), "0");
        assert!(even_splits(SqlType::Text, 2).is_err());
    }

    #[test]
    fn a_range_contains_its_low_and_not_its_high() {
        let d = PartitionDef { stream: 1, low: vec![5], high: Some(vec![9]), schema_version: 0, dirty: false };
        assert!(d.contains(&[5]));
        assert!(d.contains(&[8, 255]));
        assert!(!d.contains(&[9]));
        assert!(!d.contains(&[4, 255]));
    }
}
