//! INSERT, UPDATE and DELETE.
//!
//! DataFusion never writes: its DML hooks receive only the filters it could
//! extract (apache/datafusion#24654 changed every row for a WHERE with a
//! subquery). Instead each statement becomes a query that DataFusion plans
//! in full, and Tessera applies its rows:
//!
//! * INSERT: the VALUES list (each cell cast to its column's type) or the
//!   SELECT yields the new rows; defaults, sequences, NOT NULL, CHECK and
//!   type limits are applied here, then rows go to the engine.
//! * UPDATE t SET … FROM … WHERE …  →  `SELECT t.*, <row id>, <new values>
//!   FROM t, … WHERE …`: each result row names a target row and its new
//!   values.
//! * DELETE FROM t USING … WHERE …  →  `SELECT t.*, <row id> FROM t, … WHERE …`.
//!
//! Whatever the WHERE clause (subqueries, joins, constant false), the rows
//! changed are exactly the rows the query returns. Under READ COMMITTED an
//! UPDATE that finds its row changed by a transaction that committed
//! meanwhile re-evaluates the statement for that row on the newest version,
//! as PostgreSQL does; a deleted row is skipped.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch, new_null_array};
use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, ConflictTarget, Delete, Expr, FromTable, Insert, ObjectName, OnConflict, OnConflictAction,
    OnInsert, Query, SetExpr, Statement, TableFactor, TableObject, Update, UpdateTableFromKind, Values,
};
use tessera_engine::tuple::{Tuple, TupleBuilder};
use tessera_engine::{EngineError, Isolation};

use crate::storage::partition::StoredTable;
use crate::values::assign::{cast_to, cast_to_styled};

use crate::error::{Result, SqlError, code};
use crate::exec::dml_returning::{carried_schema, from_columns, from_relations, returning, with_carried};
use crate::parser::normalize;
use crate::parser::quote_ident;
use crate::plan::context::DML_SCHEMA;
use crate::plan::parse_sql;
use crate::session::{Output, Session};
use crate::storage::catalog::rowid_sequence;
use crate::storage::catalog::sequence_of_default;
use crate::storage::catalog::{Identity, TableDef};
use crate::values::rowcodec::encode_column;
use crate::values::types::SqlType;

pub async fn execute(session: &mut Session, stmt: Statement, params: &[ScalarValue]) -> Result<Output> {
    match stmt {
        Statement::Insert(i) => insert(session, i, params).await,
        Statement::Update(u) => update(session, u, params).await,
        Statement::Delete(d) => delete(session, d, params).await,
        _ => Err(SqlError::internal("not a DML statement")),
    }
}

/// The table a DML statement names (`t` or `public.t`).
pub fn target_table(session: &Session, name: &ObjectName) -> Result<Arc<TableDef>> {
    crate::storage::catalog::target_table(session.catalog(), session.db(), name)
}

/// `expr` converted to column type `ty` for a write: a CAST, except into a
/// numeric wider than Decimal128, which `numeric_ops` converts exactly (or
/// refuses) where DataFusion's cast would round or truncate.
pub(crate) fn cast_for(expr: &str, ty: SqlType) -> String {
    if ty == SqlType::NUMERIC_DEFAULT {
        return format!("tessera_numeric_default({expr})");
    }
    if let SqlType::Array { .. } = ty {
        return format!("tessera_to_array({expr}, '{}')", ty.name());
    }
    // Beyond Decimal128, and text (which may spell NaN), by Tessera's
    // conversion.
    if let SqlType::Numeric { precision, scale } = ty
        && (precision > 38 || expr.trim_start().starts_with('\''))
    {
        return format!("tessera_numeric_as({expr}, {precision}, {scale})");
    }
    format!("CAST({expr} AS {})", cast_type(ty))
}

/// The SQL type to CAST a VALUES cell to for a column (DataFusion's own
/// spelling; uuid, json and char(n) travel as text and are checked here).
pub(crate) fn cast_type(ty: SqlType) -> String {
    ty.cast_name()
}

fn string_literal(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => match &v.value {
            datafusion::sql::sqlparser::ast::Value::SingleQuotedString(s)
            | datafusion::sql::sqlparser::ast::Value::EscapedStringLiteral(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

fn is_default_keyword(e: &Expr) -> bool {
    matches!(e, Expr::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("default"))
}

// ----- INSERT -----

async fn insert(session: &mut Session, ins: Insert, params: &[ScalarValue]) -> Result<Output> {
    let TableObject::TableName(name) = &ins.table else {
        return Err(SqlError::unsupported("INSERT INTO a table function"));
    };
    let def = target_table(session, name)?;
    let targets = insert_targets(&def, &ins.columns)?;
    // The source rows, one column per target; None marks DEFAULT cells.
    let (source, defaults_mask) = match &ins.source {
        None => (None, None),
        Some(q) => {
            let explicit = !ins.columns.is_empty();
            let (batches, mask) = source_rows(session, &def, (&targets, explicit), q, params).await?;
            (Some(batches), mask)
        }
    };
    let columns_in = match &source {
        Some(b) => b.first().map(|b| b.num_columns()),
        None => Some(0),
    };
    if let Some(n) = columns_in
        && n > targets.len()
    {
        return Err(SqlError::syntax("INSERT has more expressions than target columns"));
    }
    let batch = match source {
        None => None,
        Some(batches) => {
            let batches: Vec<RecordBatch> = batches.into_iter().filter(|b| b.num_rows() > 0).collect();
            if batches.is_empty() {
                None
            } else {
                Some(datafusion::arrow::compute::concat_batches(&batches[0].schema(), &batches)?)
            }
        }
    };
    let nrows = match (&batch, &ins.source) {
        (Some(b), _) => b.num_rows(),
        (None, None) => 1,
        (None, Some(_)) => 0,
    };
    let arrays = new_row_columns(session, &def, &targets, batch.as_ref(), defaults_mask.as_deref(), nrows).await?;
    let batch = RecordBatch::try_new(def.arrow_schema(), arrays)?;
    let batch = check_rows(session, &def, batch).await?;
    let rowids = allocate_rowids(session, &def, nrows)?;
    let rows = encode_rows(&def, &batch, rowids.as_deref())?;
    session.check_row_group(&def, &rows)?;
    let table = session.catalog().engine_table(&def)?;
    let on_conflict = match &ins.on {
        None => None,
        Some(OnInsert::OnConflict(c)) => Some(c.clone()),
        Some(_) => return Err(SqlError::unsupported("ON DUPLICATE KEY UPDATE")),
    };
    let (written, updated) = write_rows(session, &def, &table, rows, &batch, on_conflict.as_ref(), params).await?;
    let count = written.len() + updated.iter().map(|b| b.num_rows()).sum::<usize>();
    match &ins.returning {
        None => Ok(Output::Command(format!("INSERT 0 {count}"))),
        Some(items) => {
            let idx =
                datafusion::arrow::array::UInt32Array::from(written.iter().map(|i| *i as u32).collect::<Vec<_>>());
            let mut parts = vec![datafusion::arrow::compute::take_record_batch(&batch, &idx)?];
            parts.extend(updated);
            let all = datafusion::arrow::compute::concat_batches(&def.arrow_schema(), &parts)?;
            returning(session, &def, None, all, (items, &[]), params, &format!("INSERT 0 {count}")).await
        }
    }
}

/// The table columns an INSERT's values go to, by index: its column list's,
/// or every column.
fn insert_targets(def: &TableDef, columns: &[ObjectName]) -> Result<Vec<usize>> {
    if columns.is_empty() {
        return Ok((0..def.columns.len()).collect());
    }
    let mut seen = HashSet::new();
    columns
        .iter()
        .map(|c| {
            let n =
                c.0.last().and_then(|p| p.as_ident()).map(|i| normalize(&i.value, i.quote_style)).unwrap_or_default();
            let idx = def.column_index(&n).ok_or_else(|| {
                SqlError::new(
                    code::UNDEFINED_COLUMN,
                    format!("column \"{n}\" of relation \"{}\" does not exist", def.name),
                )
            })?;
            if !seen.insert(idx) {
                return Err(SqlError::new(code::DUPLICATE_COLUMN, format!("column \"{n}\" specified more than once")));
            }
            Ok(idx)
        })
        .collect()
}

/// Runs an INSERT's source query. Returns its rows, and for VALUES which
/// cells are DEFAULT (by row, then target). `explicit`: the statement
/// named its target columns, so the source must give each one a value
/// (without a list, the trailing columns take their defaults).
async fn source_rows(
    session: &mut Session,
    def: &TableDef,
    (targets, explicit): (&[usize], bool),
    q: &Query,
    params: &[ScalarValue],
) -> Result<(Vec<RecordBatch>, Option<Vec<Vec<bool>>>)> {
    let mut q = Box::new(q.clone());
    let mut mask: Option<Vec<Vec<bool>>> = None;
    if let SetExpr::Values(values) = q.body.as_mut() {
        mask = Some(cast_values(def, (targets, explicit), values)?);
    } else {
        // Result names do not matter here, but DataFusion wants them
        // unique (`INSERT … SELECT g, g`).
        crate::rewrite::naming::alias_projection(&mut q);
    }
    let plan = session.plan_query(Statement::Query(q), params).await?;
    check_arity(plan.schema().fields().len(), targets.len(), explicit)?;
    let (_, batches) = session.run_plan(plan).await?;
    Ok((batches, mask))
}

/// PostgreSQL's check of an INSERT's source against its target columns,
/// made before anything runs.
fn check_arity(expressions: usize, targets: usize, explicit: bool) -> Result<()> {
    if expressions > targets {
        return Err(SqlError::syntax("INSERT has more expressions than target columns"));
    }
    if explicit && expressions < targets {
        return Err(SqlError::syntax("INSERT has more target columns than expressions"));
    }
    Ok(())
}

/// Casts each cell of a VALUES list to its target column's type, a DEFAULT
/// cell becoming NULL. Returns which cells were DEFAULT.
fn cast_values(def: &TableDef, (targets, explicit): (&[usize], bool), values: &mut Values) -> Result<Vec<Vec<bool>>> {
    let mut m = Vec::new();
    for row in values.rows.iter_mut() {
        check_arity(row.content.len(), targets.len(), explicit)?;
        let mut rm = Vec::new();
        for (i, cell) in row.content.iter_mut().enumerate() {
            let ty = def.columns[targets[i]].ty;
            let default = is_default_keyword(cell);
            rm.push(default);
            let inner = if default {
                "NULL".to_string()
            } else if let (SqlType::Bytea, Some(text)) = (ty, string_literal(cell)) {
                // PostgreSQL reads a string as bytea's text form ('\x0102').
                let bytes = crate::values::text::parse_bytea(&text)?;
                format!("X'{}'", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())
            } else {
                cell.to_string()
            };
            *cell = crate::parser::parse_expr(&cast_for(&inner, ty))?;
        }
        m.push(rm);
    }
    Ok(m)
}

/// Builds every column of the new rows: the values given, cast to the
/// column's type, and defaults where none is given (or DEFAULT is).
async fn new_row_columns(
    session: &Session,
    def: &TableDef,
    targets: &[usize],
    batch: Option<&RecordBatch>,
    defaults_mask: Option<&[Vec<bool>]>,
    nrows: usize,
) -> Result<Vec<ArrayRef>> {
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(def.columns.len());
    for (ci, col) in def.columns.iter().enumerate() {
        let pos = targets.iter().position(|t| *t == ci);
        let given = match (batch, pos) {
            (Some(b), Some(p)) if p < b.num_columns() => {
                Some(cast_to_styled(b.column(p), col.ty, &col.name, session.text_style())?)
            }
            _ => None,
        };
        if col.identity == Some(Identity::Always) && given.is_some() {
            let all_default = defaults_mask.is_some_and(|m| m.iter().all(|r| r.get(pos.unwrap()) == Some(&true)));
            if !all_default {
                return Err(SqlError::new(
                    "428C9",
                    format!("cannot insert a non-DEFAULT value into column \"{}\"", col.name),
                )
                .with_detail(format!("Column \"{}\" is an identity column defined as GENERATED ALWAYS.", col.name))
                .with_hint("Use OVERRIDING SYSTEM VALUE to override."));
            }
        }
        let needs_default: Vec<bool> = (0..nrows)
            .map(|r| match (&given, pos) {
                (None, _) => true,
                (Some(_), Some(p)) => defaults_mask.is_some_and(|m| m[r].get(p) == Some(&true)),
                _ => false,
            })
            .collect();
        let array = if needs_default.iter().any(|d| *d) {
            let defaults = default_values(session, def, ci, nrows, &needs_default).await?;
            match given {
                None => defaults,
                Some(g) => {
                    let mask = BooleanArray::from(needs_default);
                    datafusion::arrow::compute::kernels::zip::zip(&mask, &defaults, &g)?
                }
            }
        } else {
            given.unwrap_or_else(|| new_null_array(&col.ty.arrow_type(), nrows))
        };
        arrays.push(array);
    }
    Ok(arrays)
}

/// Writes the new rows; rows skipped or updated by ON CONFLICT are tracked
/// for RETURNING. Returns the indexes of the rows inserted, and the rows
/// ON CONFLICT DO UPDATE wrote.
async fn write_rows(
    session: &mut Session,
    def: &Arc<TableDef>,
    table: &StoredTable,
    rows: Vec<Vec<u8>>,
    batch: &RecordBatch,
    on_conflict: Option<&OnConflict>,
    params: &[ScalarValue],
) -> Result<(Vec<usize>, Vec<RecordBatch>)> {
    let mut written: Vec<usize> = Vec::with_capacity(rows.len());
    let mut updated: Vec<RecordBatch> = Vec::new();
    let txn_slot = session.txn.clone();
    for (i, row) in rows.into_iter().enumerate() {
        // A row held by another transaction is waited for as a task, and
        // the insert is tried again (it changed nothing).
        let result = crate::storage::row_waits::write_waiting(&txn_slot, |txn| {
            let r = match on_conflict {
                None => txn.insert(table, row.clone()).map(|_| true),
                Some(_) => {
                    let sp = txn.savepoint();
                    match txn.insert(table, row.clone()) {
                        Ok(()) => Ok(true),
                        Err(EngineError::UniqueViolation { index, .. }) => {
                            txn.rollback_to(sp)?;
                            Err(EngineError::UniqueViolation {
                                table: def.name.clone(),
                                index: def.constraint_name(&index),
                            })
                        }
                        Err(e) => Err(e),
                    }
                }
            };
            crate::storage::row_waits::lift_wait(r)
        })
        .await?;
        match result {
            Ok(_) => written.push(i),
            Err(EngineError::UniqueViolation { index, .. }) if on_conflict.is_some() => {
                let c = on_conflict.unwrap();
                check_conflict_target(def, c.conflict_target.as_ref(), &index)?;
                match &c.action {
                    OnConflictAction::DoNothing => {}
                    OnConflictAction::DoUpdate(du) => {
                        let proposed = batch.slice(i, 1);
                        if let Some(b) = upsert(session, def, table, &index, proposed, du, params).await? {
                            updated.push(b);
                        }
                    }
                }
            }
            Err(EngineError::UniqueViolation { index, .. }) => {
                return Err(SqlError::new(
                    code::UNIQUE,
                    format!("duplicate key value violates unique constraint \"{}\"", def.constraint_name(&index)),
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok((written, updated))
}

/// Hidden row ids for `n` new rows of a table without a primary key (None
/// for tables with one).
pub(crate) fn allocate_rowids(session: &Session, def: &TableDef, n: usize) -> Result<Option<Vec<i64>>> {
    if def.rowid_field.is_none() {
        return Ok(None);
    }
    let seq = session
        .catalog()
        .sequence(&def.db, &rowid_sequence(def))
        .ok_or_else(|| SqlError::internal("row id sequence missing"))?;
    session.catalog().nextval_many(&seq, n).map(Some)
}

fn check_conflict_target(def: &TableDef, target: Option<&ConflictTarget>, violated: &str) -> Result<()> {
    let Some(target) = target else { return Ok(()) };
    let ok = match target {
        ConflictTarget::Columns(cols) => {
            let want: Vec<String> = cols.iter().map(|c| normalize(&c.value, c.quote_style)).collect();
            let matching: Vec<&str> =
                def.indexes.iter().filter(|i| i.unique && i.columns == want).map(|i| i.name.as_str()).collect();
            if matching.is_empty() {
                return Err(SqlError::new(
                    code::INVALID_COLUMN_REFERENCE,
                    "there is no unique or exclusion constraint matching the ON CONFLICT specification",
                ));
            }
            matching.contains(&violated)
        }
        ConflictTarget::OnConstraint(name) => name.to_string() == violated,
    };
    if ok {
        Ok(())
    } else {
        Err(SqlError::new(code::UNIQUE, format!("duplicate key value violates unique constraint \"{violated}\"")))
    }
}

/// ON CONFLICT DO UPDATE for one proposed row: finds the existing row by the
/// violated unique index, computes the new values with `excluded` bound to
/// the proposed row, and writes them. Returns the new row when written.
async fn upsert(
    session: &mut Session,
    def: &Arc<TableDef>,
    table: &StoredTable,
    index: &str,
    proposed: RecordBatch,
    du: &datafusion::sql::sqlparser::ast::DoUpdate,
    params: &[ScalarValue],
) -> Result<Option<RecordBatch>> {
    let ix = def.indexes.iter().find(|i| i.name == index).ok_or_else(|| SqlError::internal("unknown index"))?;
    // Bind the proposed row as `excluded` and select the existing row by the conflicting key.
    session.set_scratch("excluded", proposed.clone());
    let conds: Vec<String> = ix
        .columns
        .iter()
        .map(|c| format!("{t}.{c} IS NOT DISTINCT FROM excluded.{c}", t = quote_ident(&def.name), c = quote_ident(c)))
        .collect();
    let mut assigns = Vec::new();
    for a in &du.assignments {
        let names = assignment_columns(&a.target)?;
        if names.len() != 1 {
            return Err(SqlError::unsupported("multi-column assignment in ON CONFLICT DO UPDATE"));
        }
        let ci = def.column_index(&names[0]).ok_or_else(|| undefined_column(def, &names[0]))?;
        assigns.push((ci, a.value.to_string()));
    }
    let set_list: Vec<String> = assigns.iter().map(|(ci, e)| cast_for(e, def.columns[*ci].ty)).collect();
    let mut sql = format!(
        "SELECT {t}.*{sep}{sets} FROM {dml}.{t} AS {t}, __scratch.excluded AS excluded WHERE {conds}",
        t = quote_ident(&def.name),
        sep = if set_list.is_empty() { "" } else { ", " },
        sets = set_list.join(", "),
        dml = DML_SCHEMA,
        conds = conds.join(" AND "),
    );
    if let Some(w) = &du.selection {
        sql.push_str(&format!(" AND ({w})"));
    }
    let stmt = parse_sql(&sql)?.pop().ok_or_else(|| SqlError::internal("empty upsert query"))?;
    let plan = session.plan_query(stmt, params).await?;
    let (_, batches) = session.run_plan(plan).await?;
    session.clear_scratch();
    let n = def.columns.len() + usize::from(def.rowid_field.is_some());
    let mut out = None;
    for b in batches.iter().filter(|b| b.num_rows() > 0) {
        let (new_rows, keys, _) = build_updated(session.zone(), def, b, n, &assigns)?;
        let new_rows = check_rows(session, def, new_rows).await?;
        let encoded = encode_rows(def, &new_rows, rowids_of(def, b)?.as_deref())?;
        session.check_row_group(def, &encoded)?;
        let rows: Vec<_> = encoded.into_iter().zip(keys).collect();
        // Progress survives the waits for rows' holders (see `update`).
        let (mut next, mut deleted) = (0, false);
        crate::storage::row_waits::write_waiting(&session.txn, |txn| {
            while let Some((row, key)) = rows.get(next) {
                if def.key_of(row)? != *key {
                    if !deleted {
                        txn.delete(table, key)?;
                        deleted = true;
                    }
                    txn.insert(table, row.clone())?;
                    deleted = false;
                } else {
                    txn.update(table, row.clone())?;
                }
                next += 1;
            }
            Ok(())
        })
        .await?;
        out = Some(new_rows);
    }
    Ok(out)
}

fn undefined_column(def: &TableDef, name: &str) -> SqlError {
    SqlError::new(code::UNDEFINED_COLUMN, format!("column \"{name}\" of relation \"{}\" does not exist", def.name))
}

pub(crate) fn assignment_columns(t: &AssignmentTarget) -> Result<Vec<String>> {
    let one = |n: &ObjectName| {
        n.0.last().and_then(|p| p.as_ident()).map(|i| normalize(&i.value, i.quote_style)).unwrap_or_default()
    };
    Ok(match t {
        AssignmentTarget::ColumnName(n) => vec![one(n)],
        AssignmentTarget::Tuple(ns) => ns.iter().map(one).collect(),
    })
}

/// Values for the DEFAULT of column `ci` in `n` rows (only rows flagged in
/// `needed` draw from a sequence).
async fn default_values(session: &Session, def: &TableDef, ci: usize, n: usize, needed: &[bool]) -> Result<ArrayRef> {
    let col = &def.columns[ci];
    let Some(expr) = &col.default else {
        return Ok(new_null_array(&col.ty.arrow_type(), n));
    };
    if let Some(seq) = sequence_of_default(expr) {
        let seq = session
            .catalog()
            .sequence(&def.db, &seq)
            .ok_or_else(|| SqlError::new(code::UNDEFINED_TABLE, format!("relation \"{seq}\" does not exist")))?;
        let wanted = needed.iter().take(n).filter(|need| **need).count();
        let mut drawn = session.catalog().nextval_many(&seq, wanted)?.into_iter();
        let values: Vec<Option<i64>> =
            needed.iter().take(n).map(|need| if *need { drawn.next() } else { None }).collect();
        let array: ArrayRef = Arc::new(datafusion::arrow::array::Int64Array::from(values));
        return cast_to_styled(&array, col.ty, &col.name, session.text_style());
    }
    // Other defaults are evaluated for every row, as PostgreSQL does: a
    // volatile one (gen_random_uuid(), random(), clock_timestamp()) gives
    // each row its own value; a constant one is folded once by the planner
    // (and now() is the transaction's time anyway).
    let sql = match n {
        1 => format!("SELECT {}", cast_for(expr, col.ty)),
        _ => format!("SELECT {} FROM generate_series(1, {n})", cast_for(expr, col.ty)),
    };
    let stmt = parse_sql(&sql)?.pop().expect("statement");
    let plan = session.plan_query(stmt, &[]).await?;
    let batches = session.run_plan(plan).await?.1;
    let columns: Vec<ArrayRef> = batches.iter().map(|b| b.column(0).clone()).collect();
    let array = match columns.len() {
        0 => ScalarValue::Null.to_array_of_size(n)?,
        1 => columns[0].clone(),
        _ => {
            let parts: Vec<&dyn datafusion::arrow::array::Array> = columns.iter().map(|c| c.as_ref()).collect();
            datafusion::arrow::compute::concat(&parts)?
        }
    };
    if array.len() != n {
        return Err(SqlError::internal(format!("a default gave {} values for {n} rows", array.len())));
    }
    cast_to_styled(&array, col.ty, &col.name, session.text_style())
}

pub(crate) async fn default_values_pub(
    session: &Session,
    def: &TableDef,
    ci: usize,
    n: usize,
    needed: &[bool],
) -> Result<ArrayRef> {
    default_values(session, def, ci, n, needed).await
}

/// Applies type limits, NOT NULL and CHECK constraints to new rows.
pub(crate) async fn check_rows(session: &Session, def: &TableDef, batch: RecordBatch) -> Result<RecordBatch> {
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    for (ci, col) in def.columns.iter().enumerate() {
        let a = &columns[ci];
        if col.not_null && a.null_count() > 0 {
            return Err(SqlError::new(
                code::NOT_NULL,
                format!(
                    "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                    col.name, def.name
                ),
            ));
        }
        if let Some(fixed) = crate::values::text::enforce_text_type(col.ty, a)? {
            columns[ci] = fixed;
        }
        if let SqlType::Enum(oid) = col.ty {
            crate::values::user_types::check_labels(oid, &columns[ci])?;
        }
    }
    let batch = RecordBatch::try_new(batch.schema(), columns)?;
    for (ci, col) in def.columns.iter().enumerate() {
        let Some((t, d)) = session.catalog().domain(col.domain) else { continue };
        if d.not_null && batch.column(ci).null_count() > 0 {
            return Err(crate::values::domains::null_error(&t));
        }
        let value = Expr::Identifier(datafusion::sql::sqlparser::ast::Ident::with_quote('"', col.name.clone()));
        for c in &d.checks {
            let check = crate::values::domains::substitute_value(&c.expr, &value)?;
            if violates(session, def, &batch, &check.to_string()).await? {
                return Err(crate::values::domains::check_error(&t, &c.name));
            }
        }
    }
    for check in &def.checks {
        if violates(session, def, &batch, &check.expr).await? {
            return Err(SqlError::new(
                code::CHECK,
                format!("new row for relation \"{}\" violates check constraint \"{}\"", def.name, check.name),
            ));
        }
    }
    Ok(batch)
}

/// Whether `check` (SQL over the table's columns) is false for a row of
/// `batch`.
async fn violates(session: &Session, def: &TableDef, batch: &RecordBatch, check: &str) -> Result<bool> {
    session.set_scratch("newrow", batch.clone());
    let sql = format!("SELECT ({check}) FROM __scratch.newrow AS {}", quote_ident(&def.name));
    let stmt = parse_sql(&sql)?.pop().expect("statement");
    let plan = session.plan_query(stmt, &[]).await;
    let result = match plan {
        Ok(plan) => session.run_plan(plan).await.map(|(_, b)| b),
        Err(e) => {
            session.clear_scratch();
            return Err(e);
        }
    };
    session.clear_scratch();
    for b in result? {
        let col = b.column(0);
        let Some(bools) = col.as_boolean_opt() else { continue };
        if bools.iter().any(|v| v == Some(false)) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Encodes full rows (columns in catalog order) as engine tuples.
pub(crate) fn encode_rows(def: &TableDef, batch: &RecordBatch, rowids: Option<&[i64]>) -> Result<Vec<Vec<u8>>> {
    let n = batch.num_rows();
    let nfields = def.next_field as usize;
    let mut fields: Vec<Vec<Option<Vec<u8>>>> = vec![Vec::new(); nfields];
    for (ci, col) in def.columns.iter().enumerate() {
        fields[col.field as usize] = encode_column(col.ty, batch.column(ci))?;
    }
    if let (Some(f), Some(ids)) = (def.rowid_field, rowids) {
        fields[f as usize] = ids.iter().map(|v| Some(crate::values::rowcodec::enc_i64(*v).to_vec())).collect();
    }
    let mut rows = Vec::with_capacity(n);
    let mut b = TupleBuilder::new();
    for r in 0..n {
        b = TupleBuilder::new();
        for f in &fields {
            b.push(f.get(r).and_then(|v| v.as_deref()));
        }
        rows.push(b.finish());
    }
    drop(b);
    Ok(rows)
}

fn rowids_of(def: &TableDef, batch: &RecordBatch) -> Result<Option<Vec<i64>>> {
    if def.rowid_field.is_none() {
        return Ok(None);
    }
    let col = batch.column(def.columns.len());
    let ids = col
        .as_primitive_opt::<datafusion::arrow::datatypes::Int64Type>()
        .ok_or_else(|| SqlError::internal("row id column"))?;
    Ok(Some(ids.values().to_vec()))
}

/// From a batch of `old columns, [row id], new values`, builds the new rows
/// and the engine keys of the old ones.
fn build_updated(
    zone: crate::values::tz::Zone,
    def: &TableDef,
    batch: &RecordBatch,
    n_old: usize,
    assigns: &[(usize, String)],
) -> Result<(RecordBatch, Vec<Vec<u8>>, RecordBatch)> {
    let mut cols: Vec<ArrayRef> = batch.columns()[..def.columns.len()].to_vec();
    let old = RecordBatch::try_new(def.arrow_schema(), cols.clone())?;
    for (k, (ci, _)) in assigns.iter().enumerate() {
        let col = &def.columns[*ci];
        cols[*ci] = cast_to(batch.column(n_old + k), col.ty, &col.name, zone)?;
    }
    let new = RecordBatch::try_new(def.arrow_schema(), cols)?;
    let rowids = rowids_of(def, batch)?;
    let old_rows = encode_rows(def, &old, rowids.as_deref())?;
    let keys = old_rows.iter().map(|r| def.key_of(r)).collect::<Result<Vec<_>>>()?;
    Ok((new, keys, old))
}

// ----- UPDATE -----

pub(crate) fn target_of(
    table: &datafusion::sql::sqlparser::ast::TableWithJoins,
) -> Result<(ObjectName, Option<String>)> {
    if !table.joins.is_empty() {
        return Err(SqlError::syntax("UPDATE target cannot have joins; use UPDATE … FROM"));
    }
    match &table.relation {
        TableFactor::Table { name, alias, .. } => {
            Ok((name.clone(), alias.as_ref().map(|a| normalize(&a.name.value, a.name.quote_style))))
        }
        _ => Err(SqlError::syntax("UPDATE and DELETE need a table name")),
    }
}

async fn update(session: &mut Session, upd: Update, params: &[ScalarValue]) -> Result<Output> {
    let (name, alias) = target_of(&upd.table)?;
    let def = target_table(session, &name)?;
    let alias = alias.unwrap_or_else(|| def.name.clone());
    let mut assigns: Vec<(usize, String)> = Vec::new();
    for a in &upd.assignments {
        let names = assignment_columns(&a.target)?;
        let values: Vec<String> = if names.len() == 1 {
            vec![a.value.to_string()]
        } else {
            match &a.value {
                Expr::Tuple(items) if items.len() == names.len() => items.iter().map(|e| e.to_string()).collect(),
                _ => return Err(SqlError::unsupported("this form of multi-column assignment")),
            }
        };
        for (n, v) in names.iter().zip(values) {
            let ci = def.column_index(n).ok_or_else(|| undefined_column(&def, n))?;
            if assigns.iter().any(|(c, _)| *c == ci) {
                return Err(SqlError::syntax(format!("multiple assignments to same column \"{n}\"")));
            }
            let col = &def.columns[ci];
            if col.identity == Some(Identity::Always) && !v.eq_ignore_ascii_case("default") {
                return Err(SqlError::new("428C9", format!("column \"{n}\" can only be updated to DEFAULT"))
                    .with_detail(format!("Column \"{n}\" is an identity column defined as GENERATED ALWAYS.")));
            }
            let v = if v.eq_ignore_ascii_case("default") {
                match &col.default {
                    Some(d) => d.clone(),
                    None => "NULL".to_string(),
                }
            } else {
                v
            };
            assigns.push((ci, v));
        }
    }
    let from_tables = match &upd.from {
        None => &[][..],
        Some(UpdateTableFromKind::AfterSet(f)) | Some(UpdateTableFromKind::BeforeSet(f)) => &f[..],
    };
    let from = if from_tables.is_empty() {
        String::new()
    } else {
        format!(", {}", from_tables.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", "))
    };
    // RETURNING may name the FROM tables' columns: the query carries them.
    let rels = match &upd.returning {
        Some(_) => from_relations(session, from_tables, params).await?,
        None => Vec::new(),
    };
    // Each new value named apart from the row's columns (read by position):
    // `SET qty = qty` casts a column to its own type, which the planner
    // drops, and two outputs named `qty` are refused.
    let sets: Vec<String> = assigns
        .iter()
        .enumerate()
        .map(|(i, (ci, e))| format!("{} AS \"__set_{i}\"", cast_for(e, def.columns[*ci].ty)))
        .collect();
    let mut sets = sets;
    if !rels.is_empty() {
        sets.push(from_columns(&rels));
    }
    let select = format!(
        "SELECT {a}.*{sep}{sets} FROM {dml}.{t} AS {a}{from}{where_}",
        a = quote_ident(&alias),
        sep = if sets.is_empty() { "" } else { ", " },
        sets = sets.join(", "),
        dml = DML_SCHEMA,
        t = quote_ident(&def.name),
        where_ = upd.selection.as_ref().map(|w| format!(" WHERE {w}")).unwrap_or_default(),
    );
    let table = session.catalog().engine_table(&def)?;
    let n_old = def.columns.len() + usize::from(def.rowid_field.is_some());
    let mut done: HashSet<Vec<u8>> = HashSet::new();
    let mut results: Vec<RecordBatch> = Vec::new();
    let mut only: Option<HashSet<Vec<u8>>> = None;
    // Read committed: rows changed under us are re-evaluated on their newest version.
    for _round in 0..100 {
        let stmt = parse_sql(&select)?.pop().expect("statement");
        let plan = session.plan_query(stmt, params).await?;
        let batches = session.run_plan(plan).await?.1;
        let mut stale: HashSet<Vec<u8>> = HashSet::new();
        for b in batches.iter().filter(|b| b.num_rows() > 0) {
            let (new_rows, keys, old) = build_updated(session.zone(), &def, b, n_old, &assigns)?;
            let new_rows = check_rows(session, &def, new_rows).await?;
            let rowids = rowids_of(&def, b)?;
            let encoded = encode_rows(&def, &new_rows, rowids.as_deref())?;
            let old_encoded = encode_rows(&def, &old, rowids.as_deref())?;
            session.check_row_group(&def, old_encoded.iter().chain(&encoded))?;
            let mut keep = Vec::new();
            let rows: Vec<_> = encoded.into_iter().zip(keys).zip(old_encoded).collect();
            // Progress survives the waits for rows' holders: the row at
            // `next` is written again after a wait, and `deleted` says
            // whether a key-changing update of it has deleted the old row.
            let (mut next, mut deleted) = (0, false);
            crate::storage::row_waits::write_waiting(&session.txn, |txn| {
                while let Some(((row, key), old_row)) = rows.get(next) {
                    let i = next;
                    if only.as_ref().is_some_and(|o| !o.contains(key)) || done.contains(key) {
                        next += 1;
                        continue;
                    }
                    let new_key = def.key_of(row)?;
                    if new_key != *key {
                        if !deleted {
                            if !txn.delete(&table, key)? {
                                next += 1;
                                continue;
                            }
                            deleted = true;
                        }
                        txn.insert(&table, row.clone())?;
                        deleted = false;
                        done.insert(new_key);
                        done.insert(key.clone());
                        keep.push(i as u32);
                        next += 1;
                        continue;
                    }
                    let mut changed = false;
                    let wrote = txn.update_with(&table, key, |current| {
                        if same_columns(&def, current, old_row) {
                            Some(row.clone())
                        } else {
                            changed = true;
                            None
                        }
                    })?;
                    if wrote {
                        done.insert(key.clone());
                        keep.push(i as u32);
                    } else if changed {
                        stale.insert(key.clone());
                    }
                    next += 1;
                }
                Ok(())
            })
            .await?;
            let idx = datafusion::arrow::array::UInt32Array::from(keep);
            let written = datafusion::arrow::compute::take_record_batch(&new_rows, &idx)?;
            results.push(with_carried(&def, &rels, &written, b, &idx)?);
        }
        let isolation = session.txn.lock().as_ref().map(|t| t.isolation());
        if stale.is_empty() || isolation != Some(Isolation::ReadCommitted) {
            break;
        }
        // Newer committed versions exist: look again with a fresh snapshot.
        if let Some(t) = session.txn.lock().as_mut() {
            t.refresh_snapshot();
        }
        only = Some(stale);
    }
    let count: usize = results.iter().map(|b| b.num_rows()).sum();
    let tag = format!("UPDATE {count}");
    match &upd.returning {
        None => Ok(Output::Command(tag)),
        Some(items) => {
            let schema = results.first().map_or_else(|| carried_schema(&def, &rels), |b| b.schema());
            let all = datafusion::arrow::compute::concat_batches(&schema, &results)?;
            returning(session, &def, Some(&alias), all, (items, &rels), params, &tag).await
        }
    }
}

/// Whether the live columns of two stored rows are equal.
fn same_columns(def: &TableDef, a: &[u8], b: &[u8]) -> bool {
    let (Ok(ta), Ok(tb)) = (Tuple::parse(a), Tuple::parse(b)) else { return false };
    def.columns.iter().all(|c| ta.field(c.field as usize) == tb.field(c.field as usize))
}

// ----- DELETE -----

async fn delete(session: &mut Session, del: Delete, params: &[ScalarValue]) -> Result<Output> {
    let tables = match &del.from {
        FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
    };
    if tables.len() != 1 {
        return Err(SqlError::unsupported("DELETE from several tables"));
    }
    let (name, alias) = target_of(&tables[0])?;
    let def = target_table(session, &name)?;
    let alias = alias.unwrap_or_else(|| def.name.clone());
    let using = match &del.using {
        None => String::new(),
        Some(u) => format!(", {}", u.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ")),
    };
    // RETURNING may name the USING tables' columns: the query carries them.
    let rels = match (&del.returning, &del.using) {
        (Some(_), Some(u)) => from_relations(session, u, params).await?,
        _ => Vec::new(),
    };
    let carry = if rels.is_empty() { String::new() } else { format!(", {}", from_columns(&rels)) };
    let select = format!(
        "SELECT {a}.*{carry} FROM {dml}.{t} AS {a}{using}{where_}",
        a = quote_ident(&alias),
        dml = DML_SCHEMA,
        t = quote_ident(&def.name),
        where_ = del.selection.as_ref().map(|w| format!(" WHERE {w}")).unwrap_or_default(),
    );
    let stmt = parse_sql(&select)?.pop().expect("statement");
    let plan = session.plan_query(stmt, params).await?;
    let batches = session.run_plan(plan).await?.1;
    let table = session.catalog().engine_table(&def)?;
    let mut deleted: Vec<RecordBatch> = Vec::new();
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    for b in batches.iter().filter(|b| b.num_rows() > 0) {
        let old = RecordBatch::try_new(def.arrow_schema(), b.columns()[..def.columns.len()].to_vec())?;
        let rowids = rowids_of(&def, b)?;
        let rows = encode_rows(&def, &old, rowids.as_deref())?;
        session.check_row_group(&def, &rows)?;
        let mut keep = Vec::new();
        // Progress survives the waits for rows' holders (see `update`).
        let mut next = 0;
        crate::storage::row_waits::write_waiting(&session.txn, |txn| {
            while let Some(r) = rows.get(next) {
                let key = def.key_of(r)?;
                if seen.contains(&key) {
                    next += 1;
                    continue;
                }
                if txn.delete(&table, &key)? {
                    keep.push(next as u32);
                }
                seen.insert(key);
                next += 1;
            }
            Ok(())
        })
        .await?;
        let idx = datafusion::arrow::array::UInt32Array::from(keep);
        let gone = datafusion::arrow::compute::take_record_batch(&old, &idx)?;
        deleted.push(with_carried(&def, &rels, &gone, b, &idx)?);
    }
    let count: usize = deleted.iter().map(|b| b.num_rows()).sum();
    let tag = format!("DELETE {count}");
    match &del.returning {
        None => Ok(Output::Command(tag)),
        Some(items) => {
            let schema = deleted.first().map_or_else(|| carried_schema(&def, &rels), |b| b.schema());
            let all = datafusion::arrow::compute::concat_batches(&schema, &deleted)?;
            returning(session, &def, Some(&alias), all, (items, &rels), params, &tag).await
        }
    }
}
