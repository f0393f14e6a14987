//! Running a bound fast-path statement directly on the engine transaction.
//!
//! A lookup is one directory probe (`get_with`) or one unique-index point
//! scan; an UPDATE is one `update_with`, whose closure computes the new row
//! from the version the engine hands it (the newest committed one under
//! read committed, so concurrent increments are never lost: the same
//! re-evaluation the general path does with a second query). New rows are
//! built by copying the stored fields that do not change.

use datafusion::arrow::array::{ArrayRef, RecordBatch, new_empty_array};
use datafusion::common::ScalarValue;
use tessera_engine::tuple::{Tuple, TupleBuilder, push_key_field};
use tessera_engine::{EngineError, KeyRange, PRIMARY};

use crate::storage::keyed::RowGroupCheck;
use crate::storage::txn::Txn;

use super::expr::{Cx, FExpr};
use super::plan::{Cell, FastPlan, Item, Kind, Lookup, Projection};
use super::value::{Decline, Eval, Value, encode_into, to_scalar};
use crate::error::{Result, SqlError, code};
use crate::scope::output::Output;
use crate::storage::catalog::{Catalog, SequenceDef};

/// What a fast-path execution came to.
pub enum Outcome {
    Done(Output),
    /// The general path must run the statement; the caller undoes anything
    /// this attempt wrote (to the statement's savepoint).
    Declined,
    /// A row is held by a concurrent writer (this transaction) and the
    /// transaction was told not to wait: the caller undoes the attempt, waits
    /// for the holder and tries again.
    MustWait(tessera_engine::mvcc::TxnId),
}

/// An engine error as the statement's outcome.
fn failed(e: EngineError) -> Result<Outcome> {
    match e {
        EngineError::WouldBlock { holder } => Ok(Outcome::MustWait(holder)),
        e => Err(e.into()),
    }
}

impl From<Decline> for Outcome {
    fn from(_: Decline) -> Self {
        Outcome::Declined
    }
}

macro_rules! eval {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(Decline) => return Ok(Outcome::Declined),
        }
    };
}

/// `group`: in a keyed database, the row-group check every written row passes.
pub fn execute(
    plan: &FastPlan,
    txn: &mut Txn,
    catalog: &Catalog,
    params: &[Value],
    now: i64,
    mut group: Option<RowGroupCheck<'_>>,
) -> Result<Outcome> {
    let cx = Cx { row: None, params, now };
    match &plan.kind {
        Kind::Select { lookup, filter, items } => {
            let Some(key) = eval!(key(lookup, &cx)) else { return rows_output(items, &[], params, now, "SELECT 0") };
            let rows = read(plan, txn, lookup, &key)?;
            let mut keep = Vec::with_capacity(rows.len());
            for r in rows {
                if eval!(passes(filter.as_ref(), &r, params, now)) {
                    keep.push(r);
                }
            }
            let tag = format!("SELECT {}", keep.len());
            rows_output(items, &keep, params, now, &tag)
        }
        Kind::Insert { rows, rowid } => insert(plan, txn, catalog, rows, rowid.as_deref(), &cx, group),
        Kind::Update { lookup, filter, sets } => {
            let Some(key) = eval!(key(lookup, &cx)) else { return done(plan, &[], params, now, "UPDATE 0") };
            let pks = primary_keys(plan, txn, lookup, key)?;
            let nfields = plan.def.next_field as usize;
            let mut written = Vec::new();
            let id = txn.id();
            for pk in pks {
                // The new row keeps the key, hence the row group: check it first.
                if let Some(g) = group.as_mut() {
                    g.check_key(&plan.def, id, &pk)?;
                }
                let mut outcome: Eval<()> = Ok(());
                let mut image: Option<Vec<u8>> = None;
                let result = txn.update_with(&plan.table, &pk, |current| {
                    let built = (|| -> Eval<Option<Vec<u8>>> {
                        let t = Tuple::parse(current).map_err(|_| Decline)?;
                        if !passes(filter.as_ref(), current, params, now)? {
                            return Ok(None);
                        }
                        let cx = Cx { row: Some(t), params, now };
                        let mut b = TupleBuilder::new();
                        let mut buf = Vec::new();
                        for f in 0..nfields {
                            match sets.iter().find(|s| s.field as usize == f) {
                                Some(s) => {
                                    buf.clear();
                                    let v = s.expr.eval(&cx)?;
                                    if encode_into(s.ty, &v, &mut buf)? {
                                        b.push(Some(&buf));
                                    } else {
                                        if plan.def.columns.iter().any(|c| c.field as usize == f && c.not_null) {
                                            return Err(Decline);
                                        }
                                        b.push(None);
                                    }
                                }
                                None => {
                                    b.push(t.field(f));
                                }
                            }
                        }
                        Ok(Some(b.finish()))
                    })();
                    match built {
                        Ok(Some(row)) => {
                            if plan.returning.is_some() {
                                image = Some(row.clone());
                            }
                            Some(row)
                        }
                        Ok(None) => None,
                        Err(d) => {
                            outcome = Err(d);
                            None
                        }
                    }
                });
                match result {
                    Ok(true) => written.push(image.unwrap_or_default()),
                    Ok(false) => {}
                    // The general path reports these with its own wording.
                    Err(EngineError::UniqueViolation { .. } | EngineError::InvalidSchema(_)) => {
                        return Ok(Outcome::Declined);
                    }
                    Err(e) => return failed(e),
                }
                if outcome.is_err() {
                    return Ok(Outcome::Declined);
                }
            }
            let tag = format!("UPDATE {}", written.len());
            done(plan, &written, params, now, &tag)
        }
        Kind::Delete { lookup, filter } => {
            let Some(key) = eval!(key(lookup, &cx)) else { return done(plan, &[], params, now, "DELETE 0") };
            let rows = read(plan, txn, lookup, &key)?;
            let mut deleted = Vec::new();
            for r in rows {
                if !eval!(passes(filter.as_ref(), &r, params, now)) {
                    continue;
                }
                if let Some(g) = group.as_mut() {
                    g.check(&plan.def, txn.id(), &r)?;
                }
                let pk = plan.def.key_of(&r)?;
                match txn.delete(&plan.table, &pk) {
                    Ok(true) => deleted.push(r),
                    Ok(false) => {}
                    Err(e) => return failed(e),
                }
            }
            let tag = format!("DELETE {}", deleted.len());
            done(plan, &deleted, params, now, &tag)
        }
    }
}

/// The encoded lookup key; None when no row can match (a NULL, or a value
/// outside the key column's type).
fn key(lookup: &Lookup, cx: &Cx<'_>) -> Eval<Option<Vec<u8>>> {
    let mut key = Vec::with_capacity(16);
    let mut buf = Vec::with_capacity(16);
    for (ty, e) in &lookup.keys {
        let v = e.eval(cx)?;
        buf.clear();
        match encode_into(*ty, &v, &mut buf) {
            Ok(true) => push_key_field(&mut key, Some(&buf)),
            // NULL, or a value no stored key can equal (out of the column's range, too long).
            Ok(false) | Err(Decline) => return Ok(None),
        }
    }
    Ok(Some(key))
}

/// The stored rows the lookup finds (at most one: the key is unique).
fn read(plan: &FastPlan, txn: &mut Txn, lookup: &Lookup, key: &[u8]) -> Result<Vec<Vec<u8>>> {
    let mut rows = Vec::with_capacity(1);
    if lookup.index == PRIMARY {
        if let Some(r) = txn.get_with(&plan.table, key, |d| d.to_vec())? {
            rows.push(r);
        }
    } else {
        txn.scan(&plan.table, lookup.index, &KeyRange::point(key.to_vec()), |r| {
            rows.push(r.to_vec());
            true
        })?;
    }
    Ok(rows)
}

/// Primary keys of the rows to update.
fn primary_keys(plan: &FastPlan, txn: &mut Txn, lookup: &Lookup, key: Vec<u8>) -> Result<Vec<Vec<u8>>> {
    if lookup.index == PRIMARY {
        return Ok(vec![key]);
    }
    read(plan, txn, lookup, &key)?.iter().map(|r| plan.def.key_of(r)).collect()
}

fn passes(filter: Option<&FExpr>, row: &[u8], params: &[Value], now: i64) -> Eval<bool> {
    let Some(f) = filter else { return Ok(true) };
    let t = Tuple::parse(row).map_err(|_| Decline)?;
    Ok(f.eval(&Cx { row: Some(t), params, now })? == Value::Bool(true))
}

fn insert(
    plan: &FastPlan,
    txn: &mut Txn,
    catalog: &Catalog,
    rows: &[Vec<Cell>],
    rowid_seq: Option<&SequenceDef>,
    cx: &Cx<'_>,
    mut group: Option<RowGroupCheck<'_>>,
) -> Result<Outcome> {
    let def = &plan.def;
    let (params, now) = (cx.params, cx.now);
    // Evaluate everything before writing anything.
    let mut values: Vec<Vec<Value>> = Vec::with_capacity(rows.len());
    for cells in rows {
        let mut row = Vec::with_capacity(cells.len());
        for cell in cells {
            row.push(match cell {
                Cell::Null | Cell::Sequence(_) => Value::Null,
                Cell::Value(e) => eval!(e.eval(cx)),
            });
        }
        values.push(row);
    }
    let mut images = Vec::with_capacity(rows.len());
    let mut by_field: Vec<Option<usize>> = vec![None; def.next_field as usize];
    for (ci, c) in def.columns.iter().enumerate() {
        by_field[c.field as usize] = Some(ci);
    }
    let mut buf = Vec::with_capacity(32);
    for (cells, mut row) in rows.iter().zip(values) {
        for (ci, cell) in cells.iter().enumerate() {
            if let Cell::Sequence(seq) = cell {
                row[ci] = Value::Int(catalog.nextval(seq)?);
            }
        }
        let mut b = TupleBuilder::new();
        for (f, column) in by_field.iter().enumerate() {
            if Some(f as u16) == def.rowid_field {
                let id = catalog.nextval(rowid_seq.ok_or_else(|| SqlError::internal("row id sequence missing"))?)?;
                b.push(Some(&crate::values::rowcodec::enc_i64(id)));
                continue;
            }
            let Some(ci) = *column else {
                b.push(None);
                continue;
            };
            let col = &def.columns[ci];
            buf.clear();
            if eval!(encode_into(col.ty, &row[ci], &mut buf)) {
                b.push(Some(&buf));
            } else if col.not_null {
                return Ok(Outcome::Declined);
            } else {
                b.push(None);
            }
        }
        images.push(b.finish());
    }
    let mut written = Vec::with_capacity(images.len());
    for image in images {
        if let Some(g) = group.as_mut() {
            g.check(def, txn.id(), &image)?;
        }
        let keep = plan.returning.is_some().then(|| image.clone());
        match txn.insert(&plan.table, image) {
            Ok(()) => written.push(keep.unwrap_or_default()),
            Err(EngineError::UniqueViolation { index, .. }) => {
                return Err(SqlError::new(
                    code::UNIQUE,
                    format!("duplicate key value violates unique constraint \"{}\"", def.constraint_name(&index)),
                ));
            }
            Err(e) => return failed(e),
        }
    }
    let tag = format!("INSERT 0 {}", written.len());
    done(plan, &written, params, now, &tag)
}

/// A DML statement's result: its tag, or its RETURNING rows.
fn done(plan: &FastPlan, rows: &[Vec<u8>], params: &[Value], now: i64, tag: &str) -> Result<Outcome> {
    match &plan.returning {
        None => Ok(Outcome::Done(Output::Command(tag.to_string()))),
        Some(p) => rows_output(p, rows, params, now, tag),
    }
}

fn rows_output(p: &Projection, rows: &[Vec<u8>], params: &[Value], now: i64, tag: &str) -> Result<Outcome> {
    let refs: Vec<&[u8]> = rows.iter().map(|r| r.as_slice()).collect();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(p.items.len());
    for item in &p.items {
        columns.push(match item {
            Item::Field { field, ty } => crate::values::rowcodec::decode_column(*ty, *field as usize, &refs)?,
            Item::Expr { expr, ty } => {
                if rows.is_empty() {
                    new_empty_array(&ty.arrow_type())
                } else {
                    let mut scalars = Vec::with_capacity(rows.len());
                    for r in &refs {
                        let t = Tuple::parse(r).map_err(|e| SqlError::internal(e.to_string()))?;
                        let v = eval!(expr.eval(&Cx { row: Some(t), params, now }));
                        scalars.push(eval!(to_scalar(*ty, &v)));
                    }
                    ScalarValue::iter_to_array(scalars)?
                }
            }
        });
    }
    let batch = RecordBatch::try_new(p.schema.clone(), columns)?;
    Ok(Outcome::Done(Output::Rows { schema: p.schema.clone(), batches: vec![batch], tag: tag.to_string() }))
}
