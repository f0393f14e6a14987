//! Recognizing fast-path statements and binding them to the catalog.
//!
//! A statement qualifies when it names one table and reaches its rows
//! through every column of the primary key or of a unique index, fixed by
//! equalities with expressions that do not read the row:
//!
//! ```text
//! SELECT items FROM t [AS a] WHERE key = e [AND …]
//! INSERT INTO t [(cols)] VALUES (…)[, (…)] [RETURNING items]
//! UPDATE t [AS a] SET col = e, … WHERE key = e [AND …] [RETURNING items]
//! DELETE FROM t [AS a] WHERE key = e [AND …] [RETURNING items]
//! ```
//!
//! Anything else (joins, ORDER BY, ON CONFLICT, CHECK constraints or domains, a key
//! that changes, a type the fast path does not compute with) is left to the
//! general path: classification returns None and costs nothing more.

use std::sync::Arc;

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::sql::sqlparser::ast::{
    Assignment, AssignmentTarget, BinaryOperator, Delete, Expr, FromTable, Insert, ObjectName, Query, SelectItem,
    SetExpr, Statement, TableFactor, TableObject, TableWithJoins, Update,
};
use tessera_engine::{IndexId, PRIMARY};

use crate::storage::partition::StoredTable;

use super::expr::{FExpr, ParamKind, Scope, compile};
use super::value::supported;
use crate::parser::normalize;
use crate::storage::catalog::Catalog;
use crate::storage::catalog::sequence_of_default;
use crate::storage::catalog::{Identity, SequenceDef, TableDef};
use crate::storage::keyed::PartitionKey;
use crate::values::types::SqlType;

/// A statement bound to the catalog, ready to run without planning.
pub struct FastPlan {
    /// The catalog version it was bound under; a different one means rebind.
    pub version: i64,
    pub def: Arc<TableDef>,
    pub table: Arc<StoredTable>,
    pub kind: Kind,
    /// The type each `$n` is read as.
    pub params: Vec<SqlType>,
    pub returning: Option<Projection>,
}

impl FastPlan {
    /// A SELECT: it reads and never waits for another transaction.
    pub fn is_read_only(&self) -> bool {
        matches!(self.kind, Kind::Select { .. })
    }
}

#[derive(Debug)]
pub enum Kind {
    Select {
        lookup: Lookup,
        filter: Option<FExpr>,
        items: Projection,
    },
    /// `rowid`: the sequence of the hidden row id, for a table without a primary key.
    Insert {
        rows: Vec<Vec<Cell>>,
        rowid: Option<Arc<SequenceDef>>,
    },
    Update {
        lookup: Lookup,
        filter: Option<FExpr>,
        sets: Vec<Set>,
    },
    Delete {
        lookup: Lookup,
        filter: Option<FExpr>,
    },
}

/// How the row is found: a point lookup in `index` with one value per key column.
#[derive(Debug)]
pub struct Lookup {
    pub index: IndexId,
    pub name: String,
    pub keys: Vec<(SqlType, FExpr)>,
}

/// One column of a new row.
#[derive(Debug)]
pub enum Cell {
    Null,
    Value(FExpr),
    Sequence(Arc<SequenceDef>),
}

#[derive(Debug)]
pub struct Set {
    pub field: u16,
    pub ty: SqlType,
    pub expr: FExpr,
}

/// Result columns: stored fields copied out, or computed values.
#[derive(Debug)]
pub struct Projection {
    pub items: Vec<Item>,
    pub schema: SchemaRef,
}

#[derive(Debug)]
pub enum Item {
    Field { field: u16, ty: SqlType },
    Expr { expr: FExpr, ty: SqlType },
}

impl std::fmt::Debug for FastPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastPlan").field("kind", &self.kind).field("params", &self.params).finish_non_exhaustive()
    }
}

impl FastPlan {
    /// One line for EXPLAIN.
    pub fn describe(&self) -> String {
        let lookup = |l: &Lookup| format!("point lookup on {}", l.name);
        let what = match &self.kind {
            Kind::Select { lookup: l, .. } => format!("Select on {}: {}", self.def.name, lookup(l)),
            Kind::Insert { rows, .. } => format!("Insert into {}: {} row(s)", self.def.name, rows.len()),
            Kind::Update { lookup: l, .. } => format!("Update on {}: {}", self.def.name, lookup(l)),
            Kind::Delete { lookup: l, .. } => format!("Delete on {}: {}", self.def.name, lookup(l)),
        };
        format!("Tessera fast path: {what}")
    }
}

/// What binding a statement reads of its session: the catalog, the
/// database, and the database's partition key when it is keyed.
pub struct Binder<'a> {
    pub catalog: &'a Arc<Catalog>,
    pub db: &'a str,
    pub partition_key: Option<&'a PartitionKey>,
}

/// Binds `stmt` if it is a fast-path statement. `kinds` types the `$n` of a
/// simple-protocol template (empty for a client's own parameters).
pub fn classify(binder: &Binder<'_>, stmt: &Statement, kinds: &[ParamKind]) -> Option<FastPlan> {
    let version = binder.catalog.version();
    let mut params: Vec<Option<SqlType>> = Vec::new();
    let (def, kind, returning) = match stmt {
        Statement::Query(q) => select(binder, q, kinds, &mut params)?,
        Statement::Insert(i) => insert(binder, i, kinds, &mut params)?,
        Statement::Update(u) => update(binder, u, kinds, &mut params)?,
        Statement::Delete(d) => delete(binder, d, kinds, &mut params)?,
        _ => return None,
    };
    // In a keyed database a write checks its rows' row group as it writes
    // them (`exec`). An UPDATE or DELETE finds its row through a unique key,
    // which there always contains the partition key, so it names its row
    // group; an UPDATE may not change the key (the general path says why).
    if let Some(key) = binder.partition_key {
        let field = def.column(&key.column)?.field;
        match &kind {
            Kind::Update { sets, .. } if def.rowid_field.is_some() || sets.iter().any(|s| s.field == field) => {
                return None;
            }
            Kind::Delete { .. } if def.rowid_field.is_some() => return None,
            _ => {}
        }
    }
    let table = binder.catalog.engine_table(&def).ok()?;
    // Every parameter must have a type (an unused `$n` has none).
    let params: Vec<SqlType> = params.into_iter().collect::<Option<_>>()?;
    if !kinds.is_empty() && params.len() != kinds.len() {
        return None;
    }
    Some(FastPlan { version, def, table, kind, params, returning })
}

fn table_def(binder: &Binder<'_>, name: &ObjectName) -> Option<Arc<TableDef>> {
    crate::storage::catalog::target_table(binder.catalog, binder.db, name).ok()
}

fn target(t: &TableWithJoins) -> Option<(&ObjectName, Vec<String>)> {
    if !t.joins.is_empty() {
        return None;
    }
    match &t.relation {
        TableFactor::Table { name, alias, args: None, with_hints, version: None, partitions, .. }
            if with_hints.is_empty() && partitions.is_empty() =>
        {
            let qualifiers = match alias {
                Some(a) if a.columns.is_empty() => vec![normalize(&a.name.value, a.name.quote_style)],
                Some(_) => return None,
                None => vec![normalize(&name.0.last()?.as_ident()?.value, None), name.0.last()?.to_string()],
            };
            Some((name, qualifiers))
        }
        _ => None,
    }
}

fn conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        Expr::Nested(inner) => conjuncts(inner, out),
        other => out.push(other),
    }
}

/// Finds a unique key fixed by WHERE; the rest of WHERE becomes a filter.
fn lookup(
    binder: &Binder<'_>,
    def: &TableDef,
    selection: Option<&Expr>,
    scope: &mut Scope<'_>,
) -> Option<(Lookup, Option<FExpr>)> {
    let mut parts = Vec::new();
    conjuncts(selection?, &mut parts);
    // `column = expression-without-columns`, by column name.
    let mut eqs: Vec<(String, &Expr)> = Vec::new();
    for p in &parts {
        if let Expr::BinaryOp { left, op: BinaryOperator::Eq, right } = p {
            let col = |e: &Expr| match e {
                Expr::Identifier(i) => Some(normalize(&i.value, i.quote_style)),
                Expr::CompoundIdentifier(ids) if ids.len() == 2 => {
                    let q = normalize(&ids[0].value, ids[0].quote_style);
                    scope.qualifiers.contains(&q).then(|| normalize(&ids[1].value, ids[1].quote_style))
                }
                _ => None,
            };
            if let Some(c) = col(left) {
                eqs.push((c, right));
            } else if let Some(c) = col(right) {
                eqs.push((c, left));
            }
        }
    }
    let engine_spec = binder.catalog.engine_table(def).ok()?.spec();
    let candidates = crate::storage::provider::key_indexes(def, &engine_spec);
    for crate::storage::provider::KeyIndex { id: index, name, columns, .. } in
        candidates.into_iter().filter(|k| k.unique)
    {
        let chosen: Option<Vec<(&String, &Expr)>> =
            columns.iter().map(|c| eqs.iter().find(|(n, _)| n == c).map(|(_, e)| (c, *e))).collect();
        let Some(chosen) = chosen else { continue };
        let mut keys = Vec::new();
        for (c, e) in &chosen {
            let col = def.column(c)?;
            if !supported(col.ty) {
                return None;
            }
            let (k, ty) = compile(e, Some(col.ty), scope)?;
            if k.reads_row() || !key_compatible(col.ty, ty) {
                return None;
            }
            keys.push((col.ty, k));
        }
        // The key equalities are the lookup itself on the primary key; a
        // secondary index entry may be stale, so there WHERE is checked whole.
        let rest: Vec<&Expr> = if index == PRIMARY {
            parts
                .iter()
                .filter(|p| {
                    !chosen.iter().any(|(c, e)| {
                        matches!(p, Expr::BinaryOp { left, op: BinaryOperator::Eq, right }
                            if (std::ptr::eq(right.as_ref(), *e) || std::ptr::eq(left.as_ref(), *e)) && columns.contains(c))
                    })
                })
                .copied()
                .collect()
        } else {
            parts.clone()
        };
        let mut filter: Option<FExpr> = None;
        for p in rest {
            let (f, ty) = compile(p, Some(SqlType::Bool), scope)?;
            if ty != SqlType::Bool {
                return None;
            }
            filter = Some(match filter {
                None => f,
                Some(prev) => FExpr::And(Box::new(prev), Box::new(f)),
            });
        }
        return Some((Lookup { index, name, keys }, filter));
    }
    None
}

/// Whether a key value of type `value` can be looked up in a key column of
/// type `column` by encoding it in the column's type (an equality that
/// compares the same way both ways).
fn key_compatible(column: SqlType, value: SqlType) -> bool {
    use super::value::{is_float, is_int, is_text};
    (is_int(column) && is_int(value))
        || (is_float(column) && (is_float(value) || is_int(value)))
        || (is_text(column) && is_text(value))
        || column == value
}

fn projection(items: &[SelectItem], def: &TableDef, scope: &mut Scope<'_>) -> Option<Projection> {
    let mut out = Vec::new();
    let mut fields = Vec::new();
    for item in items {
        match item {
            SelectItem::Wildcard(opts) if opts.opt_exclude.is_none() && opts.opt_except.is_none() => {
                for c in &def.columns {
                    out.push(Item::Field { field: c.field, ty: c.ty });
                    fields.push(c.ty.field(&c.name, true));
                }
            }
            SelectItem::UnnamedExpr(e @ (Expr::Identifier(_) | Expr::CompoundIdentifier(_))) => {
                let name = match e {
                    Expr::Identifier(i) => normalize(&i.value, i.quote_style),
                    Expr::CompoundIdentifier(ids) if ids.len() == 2 => {
                        let q = normalize(&ids[0].value, ids[0].quote_style);
                        if !scope.qualifiers.contains(&q) {
                            return None;
                        }
                        normalize(&ids[1].value, ids[1].quote_style)
                    }
                    _ => return None,
                };
                let col = def.column(&name)?;
                out.push(Item::Field { field: col.field, ty: col.ty });
                fields.push(col.ty.field(&col.name, true));
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                let name = normalize(&alias.value, alias.quote_style);
                if let Expr::Identifier(i) = expr
                    && let Some(col) = def.column(&normalize(&i.value, i.quote_style))
                {
                    out.push(Item::Field { field: col.field, ty: col.ty });
                    fields.push(col.ty.field(&name, true));
                    continue;
                }
                let (e, ty) = compile(expr, None, scope)?;
                // A bare `$n` or literal has PostgreSQL's own typing rules; leave those alone.
                if matches!(e, FExpr::Param(_) | FExpr::Const(_)) {
                    return None;
                }
                out.push(Item::Expr { expr: e, ty });
                fields.push(ty.field(&name, true));
            }
            _ => return None,
        }
    }
    Some(Projection { items: out, schema: Arc::new(Schema::new(fields)) })
}

type Bound = (Arc<TableDef>, Kind, Option<Projection>);

fn select(binder: &Binder<'_>, q: &Query, kinds: &[ParamKind], params: &mut Vec<Option<SqlType>>) -> Option<Bound> {
    if q.with.is_some()
        || q.order_by.is_some()
        || q.limit_clause.is_some()
        || q.fetch.is_some()
        || !q.locks.is_empty()
        || q.for_clause.is_some()
        || q.settings.is_some()
        || q.format_clause.is_some()
        || !q.pipe_operators.is_empty()
    {
        return None;
    }
    let SetExpr::Select(s) = q.body.as_ref() else { return None };
    if s.distinct.is_some()
        || s.top.is_some()
        || s.into.is_some()
        || !s.lateral_views.is_empty()
        || s.prewhere.is_some()
        || s.having.is_some()
        || !s.named_window.is_empty()
        || s.qualify.is_some()
        || !s.connect_by.is_empty()
        || !s.cluster_by.is_empty()
        || !s.distribute_by.is_empty()
        || !s.sort_by.is_empty()
        || s.from.len() != 1
        || !matches!(&s.group_by, datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty())
    {
        return None;
    }
    let (name, qualifiers) = target(&s.from[0])?;
    let def = table_def(binder, name)?;
    let mut scope = Scope { def: &def, qualifiers: &qualifiers, row: true, kinds, params };
    let (lookup, filter) = lookup(binder, &def, s.selection.as_ref(), &mut scope)?;
    let items = projection(&s.projection, &def, &mut scope)?;
    Some((def.clone(), Kind::Select { lookup, filter, items }, None))
}

fn returning(
    items: Option<&Vec<SelectItem>>,
    def: &TableDef,
    qualifiers: &[String],
    kinds: &[ParamKind],
    params: &mut Vec<Option<SqlType>>,
) -> Option<Option<Projection>> {
    match items {
        None => Some(None),
        Some(items) => {
            let mut scope = Scope { def, qualifiers, row: true, kinds, params };
            Some(Some(projection(items, def, &mut scope)?))
        }
    }
}

fn insert(binder: &Binder<'_>, ins: &Insert, kinds: &[ParamKind], params: &mut Vec<Option<SqlType>>) -> Option<Bound> {
    if ins.on.is_some() || ins.overwrite || ins.partitioned.is_some() || !ins.after_columns.is_empty() {
        return None;
    }
    if ins.table_alias.is_some() || ins.or.is_some() || ins.ignore || ins.replace_into || ins.priority.is_some() {
        return None;
    }
    let TableObject::TableName(name) = &ins.table else { return None };
    let def = table_def(binder, name)?;
    if !def.checks.is_empty() || def.columns.iter().any(|c| c.domain.is_some()) {
        return None;
    }
    let targets: Vec<usize> = if ins.columns.is_empty() {
        (0..def.columns.len()).collect()
    } else {
        let mut t = Vec::new();
        for c in &ins.columns {
            let id = c.0.last()?.as_ident()?;
            let i = def.column_index(&normalize(&id.value, id.quote_style))?;
            if t.contains(&i) {
                return None;
            }
            t.push(i);
        }
        t
    };
    let source = ins.source.as_ref()?;
    if source.with.is_some() || source.order_by.is_some() || source.limit_clause.is_some() {
        return None;
    }
    let SetExpr::Values(values) = source.body.as_ref() else { return None };
    let qualifiers = vec![def.name.clone()];
    let mut rows = Vec::new();
    for row in &values.rows {
        if row.content.len() != targets.len() {
            return None;
        }
        let mut cells = Vec::with_capacity(def.columns.len());
        for (ci, col) in def.columns.iter().enumerate() {
            let given = targets.iter().position(|t| *t == ci).map(|p| &row.content[p]);
            let is_default = |e: &Expr| matches!(e, Expr::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("default"));
            let cell = match given {
                Some(e) if !is_default(e) => {
                    if col.identity == Some(Identity::Always) || !supported(col.ty) {
                        return None;
                    }
                    let mut scope = Scope { def: &def, qualifiers: &qualifiers, row: false, kinds, params };
                    let (f, ty) = compile(e, Some(col.ty), &mut scope)?;
                    if !assignable(col.ty, ty) {
                        return None;
                    }
                    Cell::Value(f)
                }
                _ => default_cell(binder, &def, ci)?,
            };
            cells.push(cell);
        }
        rows.push(cells);
    }
    let rowid = match def.rowid_field {
        Some(_) => Some(binder.catalog.sequence(&def.db, &crate::storage::catalog::rowid_sequence(&def))?),
        None => None,
    };
    let ret = returning(ins.returning.as_ref(), &def, &qualifiers, kinds, params)?;
    Some((def.clone(), Kind::Insert { rows, rowid }, ret))
}

/// Whether a value of type `from` is stored in a column of type `to` as the
/// general path's assignment cast would store it.
fn assignable(to: SqlType, from: SqlType) -> bool {
    use super::value::{is_float, is_int, is_text};
    (is_int(to) && is_int(from))
        || (is_float(to) && (is_float(from) || is_int(from)))
        || (is_text(to) && is_text(from))
        || (matches!(to, SqlType::Timestamp | SqlType::TimestampTz)
            && matches!(from, SqlType::Timestamp | SqlType::TimestampTz))
        || to == from
}

fn default_cell(binder: &Binder<'_>, def: &TableDef, ci: usize) -> Option<Cell> {
    let col = &def.columns[ci];
    let Some(expr) = &col.default else { return Some(Cell::Null) };
    if let Some(seq) = sequence_of_default(expr) {
        return (super::value::is_int(col.ty)).then_some(Cell::Sequence(binder.catalog.sequence(&def.db, &seq)?));
    }
    if !supported(col.ty) {
        return None;
    }
    let parsed = crate::parser::parse_expr(expr).ok()?;
    let mut params = Vec::new();
    let mut scope = Scope { def, qualifiers: &[], row: false, kinds: &[], params: &mut params };
    let (f, ty) = compile(&parsed, Some(col.ty), &mut scope)?;
    assignable(col.ty, ty).then_some(Cell::Value(f))
}

fn update(binder: &Binder<'_>, upd: &Update, kinds: &[ParamKind], params: &mut Vec<Option<SqlType>>) -> Option<Bound> {
    if upd.from.is_some() || upd.or.is_some() || upd.limit.is_some() {
        return None;
    }
    let (name, qualifiers) = target(&upd.table)?;
    let def = table_def(binder, name)?;
    if !def.checks.is_empty() || def.columns.iter().any(|c| c.domain.is_some()) {
        return None;
    }
    let mut scope = Scope { def: &def, qualifiers: &qualifiers, row: true, kinds, params };
    let (lookup, filter) = lookup(binder, &def, upd.selection.as_ref(), &mut scope)?;
    let key_fields = def.key_fields();
    let mut sets: Vec<Set> = Vec::new();
    for Assignment { target, value } in &upd.assignments {
        let AssignmentTarget::ColumnName(n) = target else { return None };
        let id = n.0.last()?.as_ident()?;
        let col = def.column(&normalize(&id.value, id.quote_style))?;
        if col.identity == Some(Identity::Always)
            || !supported(col.ty)
            || key_fields.contains(&col.field)
            || sets.iter().any(|s| s.field == col.field)
        {
            return None;
        }
        if matches!(value, Expr::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("default")) {
            return None;
        }
        let (e, ty) = compile(value, Some(col.ty), &mut scope)?;
        if !assignable(col.ty, ty) {
            return None;
        }
        sets.push(Set { field: col.field, ty: col.ty, expr: e });
    }
    let ret = returning(upd.returning.as_ref(), &def, &qualifiers, kinds, params)?;
    Some((def.clone(), Kind::Update { lookup, filter, sets }, ret))
}

fn delete(binder: &Binder<'_>, del: &Delete, kinds: &[ParamKind], params: &mut Vec<Option<SqlType>>) -> Option<Bound> {
    if del.using.is_some() || !del.tables.is_empty() || del.limit.is_some() || !del.order_by.is_empty() {
        return None;
    }
    let tables = match &del.from {
        FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
    };
    let [t] = tables.as_slice() else { return None };
    let (name, qualifiers) = target(t)?;
    let def = table_def(binder, name)?;
    let mut scope = Scope { def: &def, qualifiers: &qualifiers, row: true, kinds, params };
    let (lookup, filter) = lookup(binder, &def, del.selection.as_ref(), &mut scope)?;
    let ret = returning(del.returning.as_ref(), &def, &qualifiers, kinds, params)?;
    Some((def.clone(), Kind::Delete { lookup, filter }, ret))
}
