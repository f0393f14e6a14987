//! DataFusion's view of engine tables.
//!
//! `EngineTable` reads through the session's open engine transaction, so a
//! query sees exactly its transaction's snapshot (and its own writes). It
//! chooses an access path from the pushed-down filters: a point lookup when
//! every column of the primary key or a unique index is fixed by equality, a
//! prefix or range scan over an ordered index for equality or range
//! predicates on its leading column, a full scan otherwise. Filters stay
//! `Inexact`: DataFusion re-applies them above the scan, so an access path
//! only has to return a superset. The path chosen is recorded for EXPLAIN.

use std::ops::Bound;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::ScalarValue;
use datafusion::datasource::TableProvider;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{BinaryExpr, Expr, Operator, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use parking_lot::Mutex;
use tessera_engine::tuple::{encode_key, prefix_end, push_key_field};
use tessera_engine::{IndexId, KeyRange, PRIMARY};

use crate::storage::partition::StoredTable;

use crate::error::{Result, SqlError};
use crate::storage::catalog::{IndexMethod, ROWID, TableDef};
use crate::values::rowcodec::{decode_column, encode_column};
use crate::values::types::SqlType;

/// The session's current engine transaction, shared with the scans it plans.
pub type TxnSlot = Arc<Mutex<Option<crate::storage::txn::Txn>>>;

/// Notes on the access paths chosen while planning a statement (for EXPLAIN).
pub type ScanNotes = Arc<Mutex<Vec<String>>>;

pub struct EngineTable {
    pub def: Arc<TableDef>,
    pub table: Arc<StoredTable>,
    txn: TxnSlot,
    notes: ScanNotes,
    /// Also expose the hidden row id (for UPDATE and DELETE on keyless tables).
    with_rowid: bool,
    schema: SchemaRef,
    /// The primary key, so that the planner knows the other columns
    /// depend on it (`GROUP BY id` may select `name`, as in PostgreSQL).
    constraints: datafusion::common::Constraints,
}

impl std::fmt::Debug for EngineTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineTable").field("table", &self.def.name).field("with_rowid", &self.with_rowid).finish()
    }
}

impl EngineTable {
    pub fn new(def: Arc<TableDef>, table: Arc<StoredTable>, txn: TxnSlot, notes: ScanNotes, with_rowid: bool) -> Self {
        let mut fields: Vec<Field> = def.arrow_schema().fields().iter().map(|f| f.as_ref().clone()).collect();
        if with_rowid && def.rowid_field.is_some() {
            fields.push(Field::new(ROWID, DataType::Int64, false));
        }
        let schema = Arc::new(Schema::new(fields));
        let key: Option<Vec<usize>> = def.primary_key.iter().map(|k| def.column_index(k)).collect();
        let constraints = match key {
            Some(key) if !key.is_empty() => {
                datafusion::common::Constraints::new_unverified(vec![datafusion::common::Constraint::PrimaryKey(key)])
            }
            _ => datafusion::common::Constraints::default(),
        };
        EngineTable { def, table, txn, notes, with_rowid, schema, constraints }
    }

    /// Reads the rows the access path selects, in the transaction. Rows
    /// read on other nodes carry only `fields` (None: all), the others NULL.
    pub fn read_rows(
        &self,
        filters: &[Expr],
        limit: Option<usize>,
        fields: Option<&[u32]>,
    ) -> Result<(Vec<Vec<u8>>, String)> {
        let path = choose_path(&self.def, &self.table.spec(), filters)?;
        let parts = prune(&self.def, &self.table, filters);
        // What of the filters can be tested on the stored rows, as they
        // are read (on the partitions' primaries for those led elsewhere).
        let tests = crate::storage::field_tests::field_tests(&self.def, filters);
        let select = (fields, tests.as_slice());
        let mut guard = self.txn.lock();
        let txn = guard.as_mut().ok_or_else(|| SqlError::internal("scan outside a transaction"))?;
        let mut rows = Vec::new();
        let table = &self.table;
        let describe = match &path {
            AccessPath::Point { index: PRIMARY, key, name } => {
                if let Some(r) = txn.get(table, key)? {
                    rows.push(r);
                }
                let part = table.part_of_key(key).map(|p| vec![p]);
                return Ok((rows, format!("point lookup on {name}{}", where_in(table, part.as_deref()))));
            }
            AccessPath::Point { index, key, name } => {
                rows =
                    txn.scan_parts_collect(table, parts.as_deref(), *index, &KeyRange::point(key.clone()), select)?;
                format!("point lookup on {name}")
            }
            AccessPath::Range { index, range, name, what } => {
                match limit {
                    // Every row: the partitions are read at once.
                    None => rows = txn.scan_parts_collect(table, parts.as_deref(), *index, range, select)?,
                    Some(l) => txn.scan_parts(table, parts.as_deref(), *index, range, |r| {
                        rows.push(r.to_vec());
                        rows.len() < l
                    })?,
                }
                format!("{what} on {name}")
            }
            AccessPath::Full => {
                match limit {
                    None => {
                        rows = txn.scan_parts_collect(table, parts.as_deref(), PRIMARY, &KeyRange::all(), select)?
                    }
                    Some(l) => txn.scan_parts(table, parts.as_deref(), PRIMARY, &KeyRange::all(), |r| {
                        rows.push(r.to_vec());
                        rows.len() < l
                    })?,
                }
                "full scan".to_string()
            }
        };
        let tested = if tests.is_empty() { "" } else { ", filtered as read" };
        Ok((rows, format!("{describe}{}{tested}", where_in(table, parts.as_deref()))))
    }

    /// Builds a batch of the projected columns from stored rows.
    pub fn to_batch(&self, rows: &[Vec<u8>], projection: Option<&Vec<usize>>) -> Result<RecordBatch> {
        let all: Vec<usize> = (0..self.schema.fields().len()).collect();
        let cols = projection.unwrap_or(&all);
        let refs: Vec<&[u8]> = rows.iter().map(|r| r.as_slice()).collect();
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(cols.len());
        for &i in cols {
            if i < self.def.columns.len() {
                let c = &self.def.columns[i];
                arrays.push(decode_column(c.ty, c.field as usize, &refs)?);
            } else {
                let f = self.def.rowid_field.expect("rowid field");
                arrays.push(decode_column(SqlType::Int8, f as usize, &refs)?);
            }
        }
        let schema = Arc::new(self.schema.project(cols)?);
        Ok(RecordBatch::try_new_with_options(
            schema,
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(rows.len())),
        )?)
    }
}

#[async_trait]
impl TableProvider for EngineTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn constraints(&self) -> Option<&datafusion::common::Constraints> {
        Some(&self.constraints)
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        // DataFusion passes a limit only when no filter remains above the scan.
        let limit = if filters.is_empty() { limit } else { None };
        // The stored fields of the columns the plan reads (those its
        // filters need among them): the rest of a row need not travel.
        let fields: Option<Vec<u32>> = projection.map(|cols| {
            cols.iter()
                .map(|&i| match self.def.columns.get(i) {
                    Some(c) => c.field as u32,
                    None => self.def.rowid_field.expect("rowid field") as u32,
                })
                .collect()
        });
        let (rows, describe) =
            self.read_rows(filters, limit, fields.as_deref()).map_err(|e| DataFusionError::External(Box::new(e)))?;
        self.notes.lock().push(format!("{}: {describe}, {} rows read", self.def.name, rows.len()));
        let batch = self.to_batch(&rows, projection).map_err(|e| DataFusionError::External(Box::new(e)))?;
        let schema = batch.schema();
        let exec = MemorySourceConfig::try_new_exec(&[vec![batch]], schema, None)?;
        Ok(exec)
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }
}

#[derive(Debug)]
enum AccessPath {
    Point { index: IndexId, key: Vec<u8>, name: String },
    Range { index: IndexId, range: KeyRange, name: String, what: &'static str },
    Full,
}

/// A simple predicate `column op literal` found among the filters.
struct Pred {
    column: String,
    op: Operator,
    value: ScalarValue,
}

fn collect_preds(def: &TableDef, expr: &Expr, out: &mut Vec<Pred>) {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op: Operator::And, right }) => {
            collect_preds(def, left, out);
            collect_preds(def, right, out);
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (col, lit, op) = match (key_column(def, left), strip_cast(right), key_column(def, right)) {
                (Some(c), Expr::Literal(v, _), _) => (c, v, *op),
                (None, _, Some(c)) => match (strip_cast(left), op.swap()) {
                    (Expr::Literal(v, _), Some(o)) => (c, v, o),
                    _ => return,
                },
                _ => return,
            };
            if matches!(op, Operator::Eq | Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq)
                && !lit.is_null()
            {
                out.push(Pred { column: col.to_string(), op, value: lit.clone() });
            }
        }
        Expr::Between(b) if !b.negated => {
            if let (Some(name), Expr::Literal(lo, _), Expr::Literal(hi, _)) =
                (key_column(def, &b.expr), strip_cast(&b.low), strip_cast(&b.high))
            {
                out.push(Pred { column: name.to_string(), op: Operator::GtEq, value: lo.clone() });
                out.push(Pred { column: name.to_string(), op: Operator::LtEq, value: hi.clone() });
            }
        }
        _ => {}
    }
}

/// The column `e` compares by its own order: the column itself, or the
/// column through a cast that keeps its values distinct and in order. (A
/// cast that does not, such as text to integer, where '05' and '5' both
/// become 5, would send the lookup to the wrong keys.)
pub(crate) fn key_column<'a>(def: &TableDef, e: &'a Expr) -> Option<&'a str> {
    match e {
        Expr::Column(c) => Some(&c.name),
        Expr::Cast(datafusion::logical_expr::Cast { expr, field })
        | Expr::TryCast(datafusion::logical_expr::TryCast { expr, field }) => match expr.as_ref() {
            Expr::Column(c) => {
                let col = def.column(&c.name)?;
                crate::storage::field_tests::keeps_order(col.ty, field.data_type()).then_some(c.name.as_str())
            }
            _ => None,
        },
        _ => None,
    }
}

fn strip_cast(e: &Expr) -> &Expr {
    match e {
        Expr::Cast(c) => strip_cast(&c.expr),
        Expr::TryCast(c) => strip_cast(&c.expr),
        other => other,
    }
}

/// The key bytes of `value` as a field of column type `ty`, if it converts
/// exactly (a lossy conversion must not pick the wrong rows).
pub(crate) fn key_field(ty: SqlType, value: &ScalarValue) -> Option<Vec<u8>> {
    let target = ty.arrow_type();
    let cast = value.cast_to(&target).ok()?;
    if cast.is_null() {
        return None;
    }
    // Reject lossy casts (1.5 -> 1): the value must survive the round trip.
    if value.data_type() != target
        && let Ok(back) = cast.cast_to(&value.data_type())
        && back != *value
    {
        return None;
    }
    let array = cast.to_array().ok()?;
    encode_column(ty, &array).ok()?.pop().flatten()
}

/// An index rows can be found by, as the catalog names it.
pub(crate) struct KeyIndex {
    pub id: IndexId,
    pub name: String,
    pub columns: Vec<String>,
    pub unique: bool,
    pub method: IndexMethod,
}

/// The table's indexes in the order lookups prefer them: the primary key
/// (unless the table has only a hidden row id), then the others.
pub(crate) fn key_indexes(def: &TableDef, spec: &tessera_engine::TableSpec) -> Vec<KeyIndex> {
    let mut out = Vec::new();
    if def.rowid_field.is_none() {
        let method = if spec.primary.kind == tessera_engine::IndexKind::Ordered {
            IndexMethod::Btree
        } else {
            IndexMethod::Hash
        };
        let name = def.constraint_name(&spec.primary.name);
        out.push(KeyIndex { id: PRIMARY, name, columns: def.primary_key.clone(), unique: true, method });
    }
    for ix in &def.indexes {
        if let Some(s) = spec.index_by_name(&ix.name)
            && s.id != PRIMARY
        {
            let (name, columns) = (ix.name.clone(), ix.columns.clone());
            out.push(KeyIndex { id: s.id, name, columns, unique: ix.unique, method: ix.method });
        }
    }
    out
}

/// Which partitions a scan must read, from the filters on the partition
/// key (None: all of them). An equality picks one partition, a range the
/// partitions it overlaps; anything else reads every partition.
fn prune(def: &TableDef, table: &StoredTable, filters: &[Expr]) -> Option<Vec<usize>> {
    let key = table.key.as_ref()?;
    if table.parts.len() == 1 {
        return None;
    }
    let mut preds = Vec::new();
    for f in filters {
        collect_preds(def, f, &mut preds);
    }
    let ty = def.column(&key.column)?.ty;
    let (mut low, mut high): (Option<Vec<u8>>, Option<Vec<u8>>) = (None, None);
    for p in preds.iter().filter(|p| p.column == key.column) {
        let Some(v) = key_field(ty, &p.value) else { continue };
        // Bounds are inclusive: a strict comparison only reads a superset.
        match p.op {
            Operator::Eq => {
                low = Some(low.map_or(v.clone(), |l| l.max(v.clone())));
                high = Some(high.map_or(v.clone(), |h| h.min(v)));
            }
            Operator::Gt | Operator::GtEq => low = Some(low.map_or(v.clone(), |l| l.max(v))),
            Operator::Lt | Operator::LtEq => high = Some(high.map_or(v.clone(), |h| h.min(v))),
            _ => {}
        }
    }
    if low.is_none() && high.is_none() {
        return None;
    }
    Some(table.parts_overlapping(low.as_deref(), high.as_deref()))
}

/// ", in partition 3 of 8" for EXPLAIN (nothing for a keyless table).
fn where_in(table: &StoredTable, parts: Option<&[usize]>) -> String {
    if !table.is_partitioned() {
        return String::new();
    }
    let n = table.parts.len();
    match parts {
        None => format!(", in all {n} partitions"),
        Some([p]) => format!(", in partition {} of {n}", p + 1),
        Some(ps) => {
            let list: Vec<String> = ps.iter().map(|p| (p + 1).to_string()).collect();
            format!(", in partitions {} of {n}", list.join(", "))
        }
    }
}

fn choose_path(def: &TableDef, spec: &tessera_engine::TableSpec, filters: &[Expr]) -> Result<AccessPath> {
    let mut preds = Vec::new();
    for f in filters {
        collect_preds(def, f, &mut preds);
    }
    if preds.is_empty() {
        return Ok(AccessPath::Full);
    }
    let eq = |col: &str| {
        let ty = def.column(col)?.ty;
        preds.iter().filter(|p| p.column == col && p.op == Operator::Eq).find_map(|p| key_field(ty, &p.value))
    };
    // 1. Every column of a unique key fixed by equality: a point lookup.
    let candidates = key_indexes(def, spec);
    for KeyIndex { id, name, columns: cols, .. } in candidates.iter().filter(|k| k.unique) {
        let fields: Option<Vec<Vec<u8>>> = cols.iter().map(|c| eq(c)).collect();
        if let Some(fields) = fields {
            let refs: Vec<Option<&[u8]>> = fields.iter().map(|f| Some(f.as_slice())).collect();
            return Ok(AccessPath::Point { index: *id, key: encode_key(&refs), name: name.clone() });
        }
    }
    // 2. Equality on every column of a non-unique hash index, or a prefix /
    //    range on the leading column of an ordered index.
    for KeyIndex { id, name, columns: cols, method, .. } in &candidates {
        let fields: Option<Vec<Vec<u8>>> = cols.iter().map(|c| eq(c)).collect();
        if let Some(fields) = fields {
            let refs: Vec<Option<&[u8]>> = fields.iter().map(|f| Some(f.as_slice())).collect();
            let key = encode_key(&refs);
            let what = "index equality scan";
            return Ok(AccessPath::Range { index: *id, range: KeyRange::prefix(key), name: name.clone(), what });
        }
        if *method != IndexMethod::Btree {
            continue;
        }
        let lead = &cols[0];
        let Some(ty) = def.column(lead).map(|c| c.ty) else { continue };
        let mut lower: Bound<Vec<u8>> = Bound::Unbounded;
        let mut upper: Bound<Vec<u8>> = Bound::Unbounded;
        let mut used = false;
        for p in preds.iter().filter(|p| &p.column == lead) {
            let Some(f) = key_field(ty, &p.value) else { continue };
            let mut enc = Vec::new();
            push_key_field(&mut enc, Some(&f));
            let after = prefix_end(&enc);
            match p.op {
                Operator::Eq => {
                    lower = Bound::Included(enc.clone());
                    upper = after.map(Bound::Excluded).unwrap_or(Bound::Unbounded);
                }
                Operator::Gt => lower = after.map(Bound::Included).unwrap_or(Bound::Unbounded),
                Operator::GtEq => lower = Bound::Included(enc),
                Operator::Lt => upper = Bound::Excluded(enc),
                Operator::LtEq => upper = after.map(Bound::Excluded).unwrap_or(Bound::Unbounded),
                _ => continue,
            }
            used = true;
        }
        if used {
            let range = KeyRange { lower, upper };
            return Ok(AccessPath::Range { index: *id, range, name: name.clone(), what: "index range scan" });
        }
    }
    Ok(AccessPath::Full)
}
