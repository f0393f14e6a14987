//! DDL of views (`views.rs`): `CREATE [OR REPLACE] VIEW`, `DROP VIEW`, and
//! what other DDL must respect about them: a table or view that a view
//! reads is dropped only with CASCADE (which drops the views too), renaming
//! it rewrites the views' stored queries, and a column a view reads is
//! neither dropped nor retyped under it (2BP01 and 0A000, as PostgreSQL).
//!
//! A view is planned when it is created, with the session's rules, so a
//! query that does not plan is refused then, and the columns it produces
//! (PostgreSQL's names, the types Tessera's rules compute) are recorded.
//! `CREATE OR REPLACE VIEW` keeps the view's OID and, as in PostgreSQL,
//! may only add columns at the end.

use std::sync::Arc;

use datafusion::logical_expr::{Distinct, LogicalPlan, Projection};
use datafusion::sql::sqlparser::ast::{
    AlterTableOperation, CreateView, Expr, Ident, ObjectName, ObjectType, Query, RenameTableNameKind, SelectItem,
    SetExpr, Statement,
};

use crate::error::{Result, SqlError, code};
use crate::parser::{ident, object_name};
use crate::session::{Output, Session, rename_schema};
use crate::storage::catalog::Catalog;
use crate::storage::catalog::views::{ViewColumn, ViewDef};
use crate::values::types::SqlType;

/// Runs a statement this module owns; `None` for any other.
pub async fn try_execute(session: &mut Session, stmt: &Statement) -> Option<Result<Output>> {
    Some(match stmt {
        Statement::CreateView(cv) => create_view(session, cv).await,
        Statement::Drop { object_type: ObjectType::View, if_exists, names, cascade, .. } => {
            drop_views(session, *if_exists, names, *cascade)
        }
        _ => return None,
    })
}

async fn create_view(session: &mut Session, cv: &CreateView) -> Result<Output> {
    if cv.materialized {
        return Err(SqlError::unsupported("CREATE MATERIALIZED VIEW"));
    }
    let name = view_name(&cv.name)?;
    let db = session.db().to_string();
    let catalog = session.catalog().clone();
    check_name_free(&catalog, &db, &name)?;
    if catalog.view(&db, &name).is_some() && !cv.or_replace {
        if cv.if_not_exists {
            return Ok(Output::Command("CREATE VIEW".into()));
        }
        return Err(SqlError::new(code::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
    }

    let mut stmt = Statement::Query(cv.query.clone());
    session.expand_using_wildcards(&mut stmt)?;
    let Statement::Query(query) = stmt else { unreachable!("a query stays a query") };
    let mut query = *query;
    let depends_on = crate::plan::views::qualify(&mut query, &|n| catalog.relation_oid(&db, n))?;
    if let Some(old) = catalog.view(&db, &name)
        && (depends_on.contains(&old.oid)
            || catalog.dependent_views_deep(&db, old.oid).iter().any(|v| depends_on.contains(&v.oid)))
    {
        return Err(SqlError::new(
            code::INVALID_OBJECT_DEFINITION,
            format!("infinite recursion detected in rules for relation \"{name}\""),
        ));
    }

    // The columns, as a SELECT of the query would describe them.
    let mut probe = query.clone();
    let names = crate::rewrite::naming::alias_projection(&mut probe);
    let plan = session.plan_query(Statement::Query(Box::new(probe)), &[]).await?;
    expand_wildcards(&mut query, &plan);
    let state = session.ctx.state();
    let analyzed = state.analyzer().execute_and_check(plan.clone(), state.config_options(), |_, _| {}).unwrap_or(plan);
    let schema = Arc::new(analyzed.schema().as_arrow().clone());
    let schema = match &names {
        Some(n) => rename_schema(&schema, n),
        None => schema,
    };
    let given: Vec<String> = cv.columns.iter().map(|c| ident(&c.name)).collect();
    if given.len() > schema.fields().len() {
        return Err(SqlError::syntax("CREATE VIEW specifies more column names than columns"));
    }
    let mut columns: Vec<ViewColumn> = Vec::with_capacity(schema.fields().len());
    for (i, field) in schema.fields().iter().enumerate() {
        let column = given.get(i).cloned().unwrap_or_else(|| field.name().clone());
        if columns.iter().any(|c| c.name == column) {
            return Err(SqlError::new(code::DUPLICATE_COLUMN, format!("column \"{column}\" specified more than once")));
        }
        columns.push(ViewColumn { name: column, ty: SqlType::of_field(field) });
    }

    let _g = catalog.ddl_lock();
    check_name_free(&catalog, &db, &name)?;
    let oid = match catalog.view(&db, &name) {
        Some(old) if cv.or_replace => {
            check_replacement(&old.columns, &columns)?;
            old.oid
        }
        Some(_) => return Err(SqlError::new(code::DUPLICATE_TABLE, format!("relation \"{name}\" already exists"))),
        None => catalog.alloc_oid_in(&db)?,
    };
    catalog.put_views(vec![ViewDef { oid, db, name, query: query.to_string(), columns, depends_on }])?;
    Ok(Output::Command("CREATE VIEW".into()))
}

/// A view's name: unqualified or in `public` (Tessera's one schema).
fn view_name(n: &ObjectName) -> Result<String> {
    match n.0.as_slice() {
        [_] => Ok(object_name(n)),
        [schema, _] if schema.as_ident().is_some_and(|s| ident(s) == "public") => Ok(object_name(n)),
        _ => Err(SqlError::unsupported(format!("views outside schema public ({n})"))),
    }
}

/// Refuses a name a table or sequence has (they share one namespace).
fn check_name_free(catalog: &Catalog, db: &str, name: &str) -> Result<()> {
    if catalog.table(db, name).is_some() || catalog.sequence(db, name).is_some() {
        return Err(SqlError::new(code::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
    }
    Ok(())
}

/// PostgreSQL's rule for `CREATE OR REPLACE VIEW`: the old columns stay,
/// with their names and types, and new ones may follow.
fn check_replacement(old: &[ViewColumn], new: &[ViewColumn]) -> Result<()> {
    if new.len() < old.len() {
        return Err(SqlError::new(code::INVALID_TABLE_DEFINITION, "cannot drop columns from view"));
    }
    for (o, n) in old.iter().zip(new) {
        if o.name != n.name {
            return Err(SqlError::new(
                code::INVALID_TABLE_DEFINITION,
                format!("cannot change name of view column \"{}\" to \"{}\"", o.name, n.name),
            )
            .with_hint("Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead."));
        }
        if o.ty != n.ty {
            return Err(SqlError::new(
                code::INVALID_TABLE_DEFINITION,
                format!(
                    "cannot change data type of view column \"{}\" from {} to {}",
                    o.name,
                    o.ty.name(),
                    n.ty.name()
                ),
            ));
        }
    }
    Ok(())
}

/// Replaces each `*` and `t.*` of the query's select list by the columns
/// it stands for now (PostgreSQL stores a view's query so expanded). A
/// select list whose wildcards cannot be matched to the planned columns
/// (a set operation, several bare `*`) keeps them.
fn expand_wildcards(query: &mut Query, plan: &LogicalPlan) {
    let SetExpr::Select(select) = query.body.as_mut() else { return };
    let Some(projection) = top_projection(plan) else { return };
    let items = &select.projection;
    let is_wildcard = |i: &SelectItem| matches!(i, SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..));
    let bare = items.iter().filter(|i| matches!(i, SelectItem::Wildcard(_))).count();
    if bare > 1 || !items.iter().any(is_wildcard) {
        return;
    }
    let plain = items.iter().filter(|i| !is_wildcard(i)).count();
    let exprs = &projection.expr;
    let Some(bare_len) = exprs.len().checked_sub(plain) else { return };
    let mut out = Vec::with_capacity(exprs.len());
    let mut k = 0;
    for item in items {
        let taken: Vec<&datafusion::logical_expr::Expr> = match item {
            SelectItem::Wildcard(_) => exprs.iter().skip(k).take(bare_len).collect(),
            SelectItem::QualifiedWildcard(kind, _) => {
                let qualifier = kind.to_string();
                let q = qualifier.rsplit('.').next().unwrap_or_default().trim_matches('"').to_lowercase();
                exprs
                    .iter()
                    .skip(k)
                    .take_while(|e| {
                        matches!(e, datafusion::logical_expr::Expr::Column(c)
                            if c.relation.as_ref().is_some_and(|r| r.table().eq_ignore_ascii_case(&q)))
                    })
                    .collect()
            }
            other => {
                k += 1;
                out.push(other.clone());
                continue;
            }
        };
        for e in &taken {
            let datafusion::logical_expr::Expr::Column(c) = e else { return };
            let name = Ident::with_quote('"', &c.name);
            out.push(SelectItem::UnnamedExpr(match &c.relation {
                Some(r) => Expr::CompoundIdentifier(vec![Ident::with_quote('"', r.table()), name]),
                None => Expr::Identifier(name),
            }));
        }
        k += taken.len();
    }
    if k == exprs.len() {
        select.projection = out;
    }
}

/// The projection that makes a plan's result columns, under the sort,
/// limit and DISTINCT a SELECT may add.
fn top_projection(plan: &LogicalPlan) -> Option<&Projection> {
    match plan {
        LogicalPlan::Projection(p) => Some(p),
        LogicalPlan::Sort(s) => top_projection(&s.input),
        LogicalPlan::Limit(l) => top_projection(&l.input),
        LogicalPlan::Distinct(Distinct::All(input)) => top_projection(input),
        _ => None,
    }
}

fn drop_views(session: &mut Session, if_exists: bool, names: &[ObjectName], cascade: bool) -> Result<Output> {
    let catalog = session.catalog().clone();
    let db = session.db().to_string();
    let _g = catalog.ddl_lock();
    let named: Vec<String> = names.iter().map(object_name).collect();
    let mut doomed: Vec<u32> = Vec::new();
    for name in &named {
        let Some(view) = catalog.view(&db, name) else {
            if catalog.table(&db, name).is_some() {
                return Err(SqlError::new(code::WRONG_OBJECT_TYPE, format!("\"{name}\" is not a view"))
                    .with_hint("Use DROP TABLE to remove a table."));
            }
            if if_exists {
                continue;
            }
            return Err(SqlError::new(code::UNDEFINED_TABLE, format!("view \"{name}\" does not exist")));
        };
        let dependents: Vec<Arc<ViewDef>> =
            catalog.dependent_views_deep(&db, view.oid).into_iter().filter(|d| !named.contains(&d.name)).collect();
        if !dependents.is_empty() && !cascade {
            return Err(dependency_error(&catalog, &db, &format!("view {name}"), &dependents));
        }
        for d in dependents.iter().map(|d| d.oid).chain([view.oid]) {
            if !doomed.contains(&d) {
                doomed.push(d);
            }
        }
    }
    catalog.drop_view_entries(&doomed)?;
    Ok(Output::Command("DROP VIEW".into()))
}

/// PostgreSQL's error for dropping `what` (`table t`, `view v`) while the
/// views `dependents` read it.
pub fn dependency_error(catalog: &Catalog, db: &str, what: &str, dependents: &[Arc<ViewDef>]) -> SqlError {
    let detail: Vec<String> = dependents
        .iter()
        .rev()
        .map(|v| {
            let on = v
                .depends_on
                .iter()
                .find_map(|oid| relation_label(catalog, db, *oid))
                .unwrap_or_else(|| what.to_string());
            format!("view {} depends on {on}", v.name)
        })
        .collect();
    SqlError::new(code::DEPENDENT_OBJECTS, format!("cannot drop {what} because other objects depend on it"))
        .with_detail(detail.join("\n"))
        .with_hint("Use DROP ... CASCADE to drop the dependent objects too.")
}

/// `table t` or `view v` for a relation's OID.
fn relation_label(catalog: &Catalog, db: &str, oid: u32) -> Option<String> {
    if let Some(t) = catalog.tables(db).into_iter().find(|t| t.oid == oid) {
        return Some(format!("table {}", t.name));
    }
    catalog.views(db).into_iter().find(|v| v.oid == oid).map(|v| format!("view {}", v.name))
}

/// The views to drop with table `name` (OID `oid`): none, or with CASCADE
/// every view reading it; without CASCADE, views reading it are an error.
pub fn views_dropped_with(catalog: &Catalog, db: &str, name: &str, oid: u32, cascade: bool) -> Result<Vec<u32>> {
    let dependents = catalog.dependent_views_deep(db, oid);
    if dependents.is_empty() {
        return Ok(vec![]);
    }
    if !cascade {
        return Err(dependency_error(catalog, db, &format!("table {name}"), &dependents));
    }
    Ok(dependents.iter().map(|v| v.oid).collect())
}

/// After relation `old` (a table or view of `db`) was renamed to `new`:
/// the views naming it name it anew. Callers hold `ddl_lock`.
pub fn relation_renamed(catalog: &Catalog, db: &str, oid: u32, old: &str, new: &str) -> Result<()> {
    let mut changed = Vec::new();
    for v in catalog.dependent_views(db, oid) {
        let mut v = (*v).clone();
        v.query = crate::plan::views::rename_relation(&v.query, old, new)?;
        changed.push(v);
    }
    if changed.is_empty() { Ok(()) } else { catalog.put_views(changed) }
}

/// Refuses a change to column `column` of table `table` (OID `oid`) that
/// would change what a view reading it means: dropping it (2BP01),
/// renaming or retyping it (0A000; PostgreSQL renames through, and refuses
/// retyping too).
pub fn check_column_change(
    catalog: &Catalog,
    db: &str,
    table: &str,
    oid: u32,
    column: &str,
    change: ColumnChange,
) -> Result<()> {
    let users: Vec<Arc<ViewDef>> = catalog
        .dependent_views(db, oid)
        .into_iter()
        .filter(|v| crate::plan::views::mentions_column(&v.query, column))
        .collect();
    let Some(first) = users.first() else { return Ok(()) };
    Err(match change {
        ColumnChange::Drop => SqlError::new(
            code::DEPENDENT_OBJECTS,
            format!("cannot drop column {column} of table {table} because other objects depend on it"),
        )
        .with_detail(format!("view {} depends on column {column} of table {table}", first.name))
        .with_hint("Use DROP ... CASCADE to drop the dependent objects too."),
        ColumnChange::Retype => {
            SqlError::new(code::FEATURE_NOT_SUPPORTED, "cannot alter type of a column used by a view or rule")
                .with_detail(format!("rule _RETURN on view {} depends on column \"{column}\"", first.name))
        }
        ColumnChange::Rename => SqlError::unsupported(format!(
            "renaming column \"{column}\" of table {table}, which view {} reads",
            first.name
        )),
    })
}

/// `ALTER TABLE v …` (or `ALTER VIEW`) of a view: RENAME TO; PostgreSQL's
/// other forms for views (RENAME COLUMN, OWNER, SET options) are not built.
pub fn alter_view(session: &mut Session, view: &ViewDef, ops: &[AlterTableOperation]) -> Result<Option<Output>> {
    let catalog = session.catalog().clone();
    let _g = catalog.ddl_lock();
    for op in ops {
        match op {
            AlterTableOperation::RenameTable { table_name } => {
                let new = match table_name {
                    RenameTableNameKind::As(n) | RenameTableNameKind::To(n) => object_name(n),
                };
                if catalog.relation_oid(&view.db, &new).is_some() || catalog.sequence(&view.db, &new).is_some() {
                    return Err(SqlError::new(code::DUPLICATE_TABLE, format!("relation \"{new}\" already exists")));
                }
                let mut renamed = view.clone();
                renamed.name = new.clone();
                catalog.put_views(vec![renamed])?;
                relation_renamed(&catalog, &view.db, view.oid, &view.name, &new)?;
            }
            other => {
                return Err(SqlError::unsupported(format!("ALTER TABLE … {other} of a view")));
            }
        }
    }
    Ok(Some(Output::Command("ALTER TABLE".into())))
}

/// What ALTER TABLE does to a column (see [`check_column_change`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnChange {
    Drop,
    Retype,
    Rename,
}
