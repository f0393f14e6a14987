//! RETURNING lists: evaluated as a query over the rows a statement wrote.
//!
//! The affected rows become a scratch table named by the target's alias,
//! and the list is planned over it like a SELECT list, so every function,
//! cast and expression of a query works. An UPDATE … FROM or a DELETE …
//! USING also returns its other tables' columns, as PostgreSQL does: the
//! statement's query carries each such table's columns beside the target
//! row (as `__from{k}_{i}`), and the list's references to them — `i.f1`,
//! an unqualified name only they have, `i.*`, and `*`, which is the
//! target's columns and then theirs — are read from those columns.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, UInt32Array};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::ast::{
    Expr, Ident, SelectItem, SelectItemQualifiedWildcardKind, Statement, TableFactor, TableObject, TableWithJoins,
    visit_expressions_mut,
};

use crate::error::{Result, SqlError, code};
use crate::parser::quote_ident;
use crate::plan::parse_sql;
use crate::session::{Output, Session};
use crate::storage::catalog::TableDef;

use super::dml::{target_of, target_table};

/// A table of an UPDATE's FROM or a DELETE's USING: its name in the
/// statement and its columns.
#[derive(Debug, Clone)]
pub(crate) struct FromRelation {
    pub(crate) name: String,
    pub(crate) columns: Vec<String>,
    types: Vec<DataType>,
}

/// The name a FROM item is known by.
fn relation_name(t: &TableFactor) -> Option<String> {
    match t {
        TableFactor::Table { alias: Some(a), .. } | TableFactor::Derived { alias: Some(a), .. } => {
            Some(a.name.value.clone())
        }
        TableFactor::Table { name, .. } => name.0.last().and_then(|p| p.as_ident()).map(|i| i.value.clone()),
        _ => None,
    }
}

/// The tables of a FROM (or USING) list, each with its columns, found by
/// planning `SELECT name.* FROM …`.
pub(crate) async fn from_relations(
    session: &Session,
    from: &[TableWithJoins],
    params: &[ScalarValue],
) -> Result<Vec<FromRelation>> {
    let list = from.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
    let mut names = Vec::new();
    for t in from {
        names.extend(relation_name(&t.relation));
        names.extend(t.joins.iter().filter_map(|j| relation_name(&j.relation)));
    }
    let mut out = Vec::new();
    for name in names {
        let sql = format!("SELECT {}.* FROM {list} WHERE false", quote_ident(&name));
        let stmt = parse_sql(&sql)?.pop().expect("statement");
        let plan = session.plan_query(stmt, params).await?;
        let fields = plan.schema().fields();
        let columns = fields.iter().map(|f| f.name().clone()).collect();
        let types = fields.iter().map(|f| f.data_type().clone()).collect();
        out.push(FromRelation { name, columns, types });
    }
    Ok(out)
}

/// The select-list entries that carry the FROM tables' columns.
pub(crate) fn from_columns(rels: &[FromRelation]) -> String {
    let mut items = Vec::new();
    for (k, rel) in rels.iter().enumerate() {
        for (i, c) in rel.columns.iter().enumerate() {
            items.push(format!("{}.{} AS \"__from{k}_{i}\"", quote_ident(&rel.name), quote_ident(c)));
        }
    }
    items.join(", ")
}

/// How many columns the FROM tables add.
fn from_width(rels: &[FromRelation]) -> usize {
    rels.iter().map(|r| r.columns.len()).sum()
}

/// A RETURNING list read against the target's columns and the FROM
/// tables' carried ones (see the module's text): each item's expression
/// and PostgreSQL's name for its column.
fn rewrite_items(
    items: &[SelectItem],
    alias: &str,
    def: &TableDef,
    rels: &[FromRelation],
) -> Result<Vec<(String, String)>> {
    let target = |out: &mut Vec<(String, String)>| {
        for c in &def.columns {
            out.push((format!("{}.{}", quote_ident(alias), quote_ident(&c.name)), c.name.clone()));
        }
    };
    let relation = |out: &mut Vec<(String, String)>, k: usize| {
        for (i, c) in rels[k].columns.iter().enumerate() {
            out.push((format!("\"__from{k}_{i}\""), c.clone()));
        }
    };
    let mut out = Vec::new();
    for item in items {
        match item {
            SelectItem::Wildcard(_) => {
                target(&mut out);
                (0..rels.len()).for_each(|k| relation(&mut out, k));
            }
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
                let q = name.0.last().and_then(|p| p.as_ident()).map(|i| i.value.clone()).unwrap_or_default();
                if q == alias {
                    target(&mut out);
                } else if let Some(k) = rels.iter().position(|r| r.name == q) {
                    relation(&mut out, k);
                } else {
                    return Err(SqlError::new(
                        code::UNDEFINED_TABLE,
                        format!("missing FROM-clause entry for table \"{q}\""),
                    ));
                }
            }
            SelectItem::UnnamedExpr(e) => {
                let name = crate::rewrite::naming::pg_name(e);
                let mut e = e.clone();
                map_references(&mut e, def, rels);
                out.push((e.to_string(), name));
            }
            SelectItem::ExprWithAlias { expr, alias: a } => {
                let mut e = expr.clone();
                map_references(&mut e, def, rels);
                out.push((e.to_string(), a.value.clone()));
            }
            other => return Err(SqlError::unsupported(format!("the RETURNING item {other}"))),
        }
    }
    Ok(out)
}

/// Points references to the FROM tables' columns at the carried columns;
/// whether any was.
fn map_references(e: &mut Expr, def: &TableDef, rels: &[FromRelation]) -> bool {
    let mut changed = false;
    let carried = |k: usize, i: usize| Expr::Identifier(Ident::with_quote('"', format!("__from{k}_{i}")));
    let _ = visit_expressions_mut(e, |e| {
        match e {
            Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                if let Some(k) = rels.iter().position(|r| r.name == parts[0].value)
                    && let Some(i) = rels[k].columns.iter().position(|c| *c == parts[1].value)
                {
                    *e = carried(k, i);
                    changed = true;
                }
            }
            Expr::Identifier(id) if def.column_index(&id.value).is_none() => {
                let found: Vec<(usize, usize)> = rels
                    .iter()
                    .enumerate()
                    .filter_map(|(k, r)| r.columns.iter().position(|c| *c == id.value).map(|i| (k, i)))
                    .collect();
                if let [(k, i)] = found[..] {
                    *e = carried(k, i);
                    changed = true;
                }
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    changed
}

/// Plans a RETURNING list over the scratch table (which the caller has
/// set): the plan and PostgreSQL's names for its columns.
async fn plan_returning(
    session: &Session,
    def: &TableDef,
    alias: &str,
    (items, rels): (&[SelectItem], &[FromRelation]),
    params: &[ScalarValue],
) -> Result<(datafusion::logical_expr::LogicalPlan, crate::rewrite::naming::ResultNames)> {
    let list = rewrite_items(items, alias, def, rels)?;
    // Named apart while planned (PostgreSQL allows repeated names), then
    // given their names.
    let exprs: Vec<String> = list.iter().enumerate().map(|(n, (e, _))| format!("{e} AS \"__ret{n}\"")).collect();
    let names: Vec<String> = list.into_iter().map(|(_, name)| name).collect();
    let sql = format!("SELECT {} FROM __scratch.returning AS {}", exprs.join(", "), quote_ident(alias));
    let stmt = parse_sql(&sql)?.pop().expect("statement");
    let plan = session.plan_query(stmt, params).await?;
    Ok((plan, crate::rewrite::naming::ResultNames::Positional(names)))
}

/// Evaluates a RETURNING list over the affected rows: the target's
/// columns, then the FROM tables' carried ones.
pub(crate) async fn returning(
    session: &Session,
    def: &TableDef,
    alias: Option<&str>,
    rows: RecordBatch,
    list: (&[SelectItem], &[FromRelation]),
    params: &[ScalarValue],
    tag: &str,
) -> Result<Output> {
    let alias = alias.unwrap_or(&def.name);
    session.set_scratch("returning", rows);
    let result = async {
        let (plan, names) = plan_returning(session, def, alias, list, params).await?;
        Ok::<_, crate::error::SqlError>((session.collect(plan).await?, names))
    }
    .await;
    session.clear_scratch();
    match result? {
        (Output::Rows { schema, batches, .. }, names) => {
            let schema = crate::session::rename_schema(&schema, &names);
            let batches = batches
                .into_iter()
                .map(|b| RecordBatch::try_new(schema.clone(), b.columns().to_vec()))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(Output::Rows { schema, batches, tag: tag.to_string() })
        }
        (other, _) => Ok(other),
    }
}

/// The scratch table's schema: the target's columns, then the carried ones.
pub(crate) fn carried_schema(def: &TableDef, rels: &[FromRelation]) -> SchemaRef {
    let mut fields: Vec<FieldRef> = def.arrow_schema().fields().iter().cloned().collect();
    for (k, rel) in rels.iter().enumerate() {
        for (i, ty) in rel.types.iter().enumerate() {
            fields.push(Arc::new(Field::new(format!("__from{k}_{i}"), ty.clone(), true)));
        }
    }
    Arc::new(Schema::new(fields))
}

/// The affected rows with the FROM tables' carried columns beside them:
/// `rows` are the `taken` rows of the statement's query batch `found`,
/// whose last columns are the carried ones.
pub(crate) fn with_carried(
    def: &TableDef,
    rels: &[FromRelation],
    rows: &RecordBatch,
    found: &RecordBatch,
    taken: &UInt32Array,
) -> Result<RecordBatch> {
    let first_carried = found.num_columns() - from_width(rels);
    let carried = found.columns()[first_carried..]
        .iter()
        .map(|c| datafusion::arrow::compute::take(c, taken, None))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    // The carried columns' types as the statement's query gave them.
    let mut fields: Vec<FieldRef> = def.arrow_schema().fields().iter().cloned().collect();
    let mut n = 0;
    for (k, rel) in rels.iter().enumerate() {
        for i in 0..rel.columns.len() {
            let ty = carried.get(n).map_or(DataType::Null, |a| a.data_type().clone());
            fields.push(Arc::new(Field::new(format!("__from{k}_{i}"), ty, true)));
            n += 1;
        }
    }
    let mut columns = rows.columns().to_vec();
    columns.extend(carried);
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?)
}

/// The schema of a RETURNING list (for Describe), evaluated over no rows.
pub async fn returning_schema(session: &Session, stmt: &Statement) -> Result<Option<SchemaRef>> {
    use datafusion::sql::sqlparser::ast::{FromTable, UpdateTableFromKind};
    let (name, alias, items, from) = match stmt {
        Statement::Insert(i) => match (&i.table, &i.returning) {
            (TableObject::TableName(n), Some(r)) => (n.clone(), None, r.clone(), Vec::new()),
            _ => return Ok(None),
        },
        Statement::Update(u) => match &u.returning {
            Some(r) => {
                let (n, a) = target_of(&u.table)?;
                let from = match &u.from {
                    Some(UpdateTableFromKind::AfterSet(f) | UpdateTableFromKind::BeforeSet(f)) => f.clone(),
                    None => Vec::new(),
                };
                (n, a, r.clone(), from)
            }
            None => return Ok(None),
        },
        Statement::Delete(d) => match (&d.from, &d.returning) {
            (FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t), Some(r)) if t.len() == 1 => {
                let (n, a) = target_of(&t[0])?;
                (n, a, r.clone(), d.using.clone().unwrap_or_default())
            }
            _ => return Ok(None),
        },
        _ => return Ok(None),
    };
    let def = target_table(session, &name)?;
    let rels = from_relations(session, &from, &[]).await?;
    // Planned, not run: the parameters have no values yet.
    session.set_scratch("returning", empty_rows(&def, &rels));
    let alias = alias.unwrap_or_else(|| def.name.clone());
    let planned = plan_returning(session, &def, &alias, (&items, &rels), &[]).await;
    session.clear_scratch();
    let (plan, names) = planned?;
    let schema = Arc::new(plan.schema().as_arrow().clone());
    Ok(Some(crate::session::rename_schema(&schema, &names)))
}

fn empty_rows(def: &TableDef, rels: &[FromRelation]) -> RecordBatch {
    RecordBatch::new_empty(carried_schema(def, rels))
}
