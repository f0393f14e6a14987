//! PostgreSQL's names for unaliased result columns.
//!
//! PostgreSQL names `count(*)` "count", `x::int` "x", `1 + 1` "?column?", and
//! allows two result columns with the same name; DataFusion names columns
//! after the whole expression and requires unique names. Before planning,
//! each unaliased projection item gets a unique alias; after execution the
//! result fields are renamed to PostgreSQL's (possibly repeated) names.

use std::collections::HashSet;

use datafusion::sql::sqlparser::ast::{Expr, Ident, Query, SelectItem, SetExpr, VisitMut};

/// The PostgreSQL names of a query's result columns, to give its fields
/// after planning (DataFusion's may differ, and must be unique).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultNames {
    /// Every result column's name, in order (no wildcard in the projection).
    Positional(Vec<String>),
    /// The projection has a wildcard, whose columns keep their names; the
    /// listed fields (by the alias given them here) are renamed.
    Aliased(Vec<(String, String)>),
}

/// A name for a projection item that no column of the query can have, so
/// that it never collides with a column a wildcard brings in.
fn internal_alias(k: usize) -> String {
    format!("?tessera column {k}?")
}

/// Assigns aliases to the top-level projection of `query` so that
/// DataFusion sees unique names, and returns the names PostgreSQL shows
/// (None for a query that is not a plain SELECT).
///
/// - An unaliased expression is aliased with PostgreSQL's name for it
///   (`count`, `?column?`), made unique.
/// - A column or alias that repeats an earlier result column's name
///   (`SELECT a, a`, `SELECT 1 AS x, 2 AS x`) gets an internal alias.
/// - Beside a wildcard, whose columns are not known here, every plain
///   column and explicit alias gets an internal alias (`SELECT *, a`);
///   ORDER BY items naming such an alias follow it.
pub fn alias_projection(query: &mut Query) -> Option<ResultNames> {
    let select = match query.body.as_mut() {
        SetExpr::Select(s) => s,
        _ => return None,
    };
    let wildcard =
        select.projection.iter().any(|i| matches!(i, SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)));
    let mut used: HashSet<String> = HashSet::new();
    for item in &select.projection {
        match item {
            SelectItem::ExprWithAlias { alias, .. } => {
                used.insert(ident(alias));
            }
            SelectItem::UnnamedExpr(e) => {
                if let Some(n) = column_name(e) {
                    used.insert(n);
                }
            }
            _ => {}
        }
    }
    let mut display = Vec::new();
    let mut renamed: Vec<(String, String)> = Vec::new();
    // Explicit aliases replaced by internal ones, for ORDER BY.
    let mut moved_aliases: Vec<(String, String)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for (k, item) in select.projection.iter_mut().enumerate() {
        match item {
            SelectItem::UnnamedExpr(e) => {
                let name = pg_name(e);
                if let Some(column) = column_name(e) {
                    display.push(name.clone());
                    if wildcard || !seen.insert(column) {
                        let internal = internal_alias(k);
                        renamed.push((internal.clone(), name));
                        let expr = std::mem::replace(e, Expr::value(datafusion::sql::sqlparser::ast::Value::Null));
                        *item = SelectItem::ExprWithAlias { expr, alias: Ident::with_quote('"', internal) };
                    }
                    continue;
                }
                let mut unique = name.clone();
                let mut n = 1;
                while !used.insert(unique.to_lowercase()) {
                    unique = format!("{name}_{n}");
                    n += 1;
                }
                seen.insert(unique.to_lowercase());
                display.push(name.clone());
                renamed.push((unique.clone(), name));
                let expr = std::mem::replace(e, Expr::value(datafusion::sql::sqlparser::ast::Value::Null));
                *item = SelectItem::ExprWithAlias { expr, alias: Ident::with_quote('"', unique) };
            }
            SelectItem::ExprWithAlias { alias, .. } => {
                display.push(alias.value.clone());
                if wildcard || !seen.insert(ident(alias)) {
                    let internal = internal_alias(k);
                    renamed.push((internal.clone(), alias.value.clone()));
                    moved_aliases.push((ident(alias), internal.clone()));
                    *alias = Ident::with_quote('"', internal);
                }
            }
            _ => {}
        }
    }
    // Beside a wildcard every explicit alias is internal: `ORDER BY x`
    // follows the first result column of that name. (Without a wildcard
    // the first column of a name keeps it.)
    if wildcard
        && let Some(order_by) = query.order_by.as_mut()
        && let datafusion::sql::sqlparser::ast::OrderByKind::Expressions(items) = &mut order_by.kind
    {
        for item in items.iter_mut() {
            if let Expr::Identifier(i) = &item.expr
                && let Some((_, internal)) = moved_aliases.iter().find(|(name, _)| *name == ident(i))
            {
                item.expr = Expr::Identifier(Ident::with_quote('"', internal.clone()));
            }
        }
    }
    if wildcard { Some(ResultNames::Aliased(renamed)) } else { Some(ResultNames::Positional(display)) }
}

/// Names the single column of a set-returning function in FROM as
/// PostgreSQL does: after the table alias (`generate_series(1, 3) AS g`
/// has a column `g`), or after the function without one (a column
/// `generate_series`). DataFusion would call it `value`.
pub fn name_function_columns(stmt: &mut datafusion::sql::sqlparser::ast::Statement) {
    use datafusion::sql::sqlparser::ast::{TableAlias, TableAliasColumnDef, TableFactor, VisitorMut};
    struct Namer;
    impl VisitorMut for Namer {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> std::ops::ControlFlow<()> {
            if let Some(lateral) = lateral_function(factor) {
                *factor = lateral;
            }
            let (function, alias) = match factor {
                TableFactor::Table { name, args: Some(_), alias, .. } => {
                    let f = name.0.last().and_then(|p| p.as_ident()).map(ident).unwrap_or_default();
                    if f != "generate_series" {
                        return std::ops::ControlFlow::Continue(());
                    }
                    (f, alias)
                }
                TableFactor::UNNEST { alias, array_exprs, with_offset: false, with_ordinality: false, .. }
                    if array_exprs.len() == 1 =>
                {
                    ("unnest".to_string(), alias)
                }
                _ => return std::ops::ControlFlow::Continue(()),
            };
            match alias {
                Some(a) if a.columns.is_empty() => {
                    a.columns = vec![TableAliasColumnDef { name: a.name.clone(), data_type: None }];
                }
                Some(_) => {}
                None => {
                    *alias = Some(TableAlias {
                        explicit: true,
                        name: Ident::new(function.clone()),
                        columns: vec![TableAliasColumnDef::from_name(function)],
                        at: None,
                    });
                }
            }
            std::ops::ControlFlow::Continue(())
        }

        fn pre_visit_query(&mut self, query: &mut Query) -> std::ops::ControlFlow<()> {
            expand_series_in_select_list(query);
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Namer);
}

/// A set-returning function in FROM that reads an earlier item's columns
/// (`FROM t, generate_series(1, t.n) g`, `CROSS JOIN LATERAL unnest(t.a)`),
/// which PostgreSQL runs per row of that item, as a LATERAL subquery
/// DataFusion can plan: `generate_series` becomes `LATERAL (SELECT
/// unnest(generate_series(…)) AS g) AS g`, a LATERAL `unnest` DataFusion's
/// own UNNEST item. None for other items.
fn lateral_function(
    factor: &datafusion::sql::sqlparser::ast::TableFactor,
) -> Option<datafusion::sql::sqlparser::ast::TableFactor> {
    use datafusion::sql::sqlparser::ast::{FunctionArg, FunctionArgExpr, TableFactor};
    let (name, args, alias, lateral) = match factor {
        TableFactor::Table { name, args: Some(args), alias, .. } => (name, args.args.clone(), alias, false),
        TableFactor::Function { lateral, name, args, alias, with_ordinality: false } => {
            (name, args.clone(), alias, *lateral)
        }
        _ => return None,
    };
    let function = name.0.last().and_then(|p| p.as_ident()).map(ident)?;
    let exprs: Vec<Expr> = args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let reads_columns = exprs.iter().any(|e| {
        let mut found = false;
        let _ = datafusion::sql::sqlparser::ast::visit_expressions(e, |e| {
            found |= matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_));
            std::ops::ControlFlow::<()>::Continue(())
        });
        found
    });
    if !(lateral || reads_columns) {
        return None;
    }
    let list = exprs.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(", ");
    let item = match function.as_str() {
        "unnest" if exprs.len() == 1 => format!("UNNEST({list})"),
        "generate_series" => {
            let name = alias.as_ref().map_or_else(|| function.clone(), |a| a.name.value.clone());
            let column = alias.as_ref().and_then(|a| a.columns.first()).map_or(name.clone(), |c| c.name.value.clone());
            let sql = format!(
                "LATERAL (SELECT unnest(generate_series({list})) AS {}) AS {}",
                crate::parser::quote_ident(&column),
                crate::parser::quote_ident(&name)
            );
            return parse_table_factor(&sql);
        }
        _ => return None,
    };
    let mut unnest = parse_table_factor(&item)?;
    if let TableFactor::UNNEST { alias: a, .. } = &mut unnest {
        a.clone_from(alias);
    }
    Some(unnest)
}

/// The one item of `SELECT * FROM <item>`.
fn parse_table_factor(item: &str) -> Option<datafusion::sql::sqlparser::ast::TableFactor> {
    use datafusion::sql::sqlparser::ast::Statement;
    let stmt = crate::parser::parse_sql(&format!("SELECT * FROM {item}")).ok()?.pop()?;
    let Statement::Query(q) = stmt else { return None };
    let SetExpr::Select(select) = *q.body else { return None };
    select.from.into_iter().next().map(|t| t.relation)
}

/// `generate_series(…)` in a select list yields one row per value, as in
/// PostgreSQL (`INSERT INTO t SELECT generate_series(1, 100)`), where
/// DataFusion's would be one list: it is wrapped in `unnest(…)`, and keeps
/// the name PostgreSQL gives its column.
fn expand_series_in_select_list(query: &mut Query) {
    use datafusion::sql::sqlparser::ast::{FunctionArg, FunctionArgExpr, FunctionArguments};
    let SetExpr::Select(select) = query.body.as_mut() else { return };
    let is_series = |e: &Expr| matches!(e, Expr::Function(f) if f.name.0.last().and_then(|p| p.as_ident()).map(ident).as_deref() == Some("generate_series"));
    let unnest = |e: Expr| -> Option<Expr> {
        let dialect = datafusion::sql::sqlparser::dialect::PostgreSqlDialect {};
        let mut call = datafusion::sql::sqlparser::parser::Parser::new(&dialect)
            .try_with_sql("unnest(NULL)")
            .and_then(|mut p| p.parse_expr())
            .ok()?;
        if let Expr::Function(f) = &mut call
            && let FunctionArguments::List(list) = &mut f.args
            && let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))) = list.args.first_mut()
        {
            *arg = e;
            return Some(call);
        }
        None
    };
    for item in select.projection.iter_mut() {
        match item {
            SelectItem::UnnamedExpr(e) if is_series(e) => {
                if let Some(call) = unnest(e.clone()) {
                    *item = SelectItem::ExprWithAlias { expr: call, alias: Ident::new("generate_series") };
                }
            }
            SelectItem::ExprWithAlias { expr, .. } if is_series(expr) => {
                if let Some(call) = unnest(expr.clone()) {
                    *expr = call;
                }
            }
            _ => {}
        }
    }
}

fn column_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(i) => Some(ident(i)),
        Expr::CompoundIdentifier(parts) => parts.last().map(ident),
        Expr::Nested(inner) => column_name(inner),
        _ => None,
    }
}

fn ident(i: &Ident) -> String {
    if i.quote_style.is_some() { i.value.clone() } else { i.value.to_lowercase() }
}

/// The name PostgreSQL gives an unaliased expression.
pub fn pg_name(e: &Expr) -> String {
    match e {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => column_name(e).unwrap_or_default(),
        // `functions::normalize_pg` made ARRAY(SELECT …) this call.
        Expr::Function(f)
            if f.to_string().ends_with(", make_array())")
                && f.to_string().starts_with("coalesce((SELECT array_agg(") =>
        {
            "array".into()
        }
        Expr::Function(f) => f.name.0.last().and_then(|p| p.as_ident()).map(ident).unwrap_or_default(),
        // A cast is named by what it casts if that has a name of its own
        // (a column or a function, under any casts), else by its type:
        // `x::float8::int4` is `int4`, `a::text::int4` is `a`.
        Expr::Cast { expr, data_type, .. } => strong_name(expr).unwrap_or_else(|| type_name(&data_type.to_string())),
        Expr::Nested(inner) => pg_name(inner),
        // `a[1]` is named `a`.
        Expr::CompoundFieldAccess { root, .. } if strong_name(root).is_some() => pg_name(root),
        Expr::Case { .. } => "case".into(),
        Expr::Interval(_) => "interval".into(),
        Expr::Exists { .. } => "exists".into(),
        Expr::Array(_) => "array".into(),
        Expr::Extract { .. } => "extract".into(),
        Expr::Substring { .. } => "substring".into(),
        Expr::Trim { .. } => "btrim".into(),
        Expr::Position { .. } => "position".into(),
        Expr::AtTimeZone { .. } => "timezone".into(),
        Expr::Subquery(q) => match q.body.as_ref() {
            SetExpr::Select(s) => match s.projection.first() {
                Some(SelectItem::UnnamedExpr(e)) => pg_name(e),
                Some(SelectItem::ExprWithAlias { alias, .. }) => alias.value.clone(),
                _ => "?column?".into(),
            },
            _ => "?column?".into(),
        },
        _ => "?column?".into(),
    }
}

/// The name of a column or function under `e`'s casts and parentheses.
fn strong_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) | Expr::Function(_) => Some(pg_name(e)),
        Expr::Cast { expr, .. } | Expr::Nested(expr) => strong_name(expr),
        _ => None,
    }
}

/// PostgreSQL's internal type name, used for the name of `'x'::type`.
fn type_name(t: &str) -> String {
    let lower = t.to_lowercase();
    // An array type is named by its element type (`'{1}'::int[]` is `int4`).
    let base = lower.split(['(', '[']).next().unwrap_or("").trim();
    match base {
        "int" | "integer" | "int4" => "int4",
        "bigint" | "int8" => "int8",
        "smallint" | "int2" => "int2",
        "real" | "float4" => "float4",
        "double precision" | "float8" | "double" => "float8",
        "boolean" | "bool" => "bool",
        "character varying" | "varchar" => "varchar",
        "character" | "char" => "bpchar",
        "decimal" | "numeric" => "numeric",
        "timestamp with time zone" | "timestamptz" => "timestamptz",
        "timestamp" | "timestamp without time zone" => "timestamp",
        other => return other.to_string(),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse_sql;
    use datafusion::sql::sqlparser::ast::Statement;

    fn rewrite(sql: &str) -> (Option<ResultNames>, String) {
        let Statement::Query(mut q) = parse_sql(sql).unwrap().pop().unwrap() else { panic!() };
        let names = alias_projection(&mut q);
        (names, q.to_string())
    }

    fn names(sql: &str) -> Vec<String> {
        match rewrite(sql).0 {
            Some(ResultNames::Positional(n)) => n,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn names_like_postgres() {
        assert_eq!(
            names("SELECT count(*), count(a), a, t.b, 1 + 1, 'x'::text, a::int"),
            vec!["count", "count", "a", "b", "?column?", "text", "a"]
        );
        assert_eq!(rewrite("SELECT * FROM t").0, Some(ResultNames::Aliased(vec![])));
        assert_eq!(rewrite("VALUES (1)").0, None);
    }

    #[test]
    fn repeated_names_get_internal_aliases() {
        let (names, sql) = rewrite("SELECT a, a, t.a, 1 AS x, 2 AS x FROM t ORDER BY x");
        assert_eq!(
            names,
            Some(ResultNames::Positional(vec!["a".into(), "a".into(), "a".into(), "x".into(), "x".into()]))
        );
        assert_eq!(
            sql,
            "SELECT a, a AS \"?tessera column 1?\", t.a AS \"?tessera column 2?\", 1 AS x, \
             2 AS \"?tessera column 4?\" FROM t ORDER BY x"
        );
    }

    #[test]
    fn beside_a_wildcard_columns_and_aliases_are_internal() {
        let (names, sql) = rewrite("SELECT *, a, b + 1 AS c FROM t ORDER BY c");
        assert_eq!(
            names,
            Some(ResultNames::Aliased(vec![
                ("?tessera column 1?".into(), "a".into()),
                ("?tessera column 2?".into(), "c".into())
            ]))
        );
        assert_eq!(
            sql,
            "SELECT *, a AS \"?tessera column 1?\", b + 1 AS \"?tessera column 2?\" FROM t \
             ORDER BY \"?tessera column 2?\""
        );
    }

    #[test]
    fn set_returning_functions_name_their_column() {
        let named = |sql: &str| {
            let mut stmt = parse_sql(sql).unwrap().pop().unwrap();
            name_function_columns(&mut stmt);
            stmt.to_string()
        };
        assert_eq!(named("SELECT g FROM generate_series(1, 3) g"), "SELECT g FROM generate_series(1, 3) g (g)");
        assert_eq!(
            named("SELECT * FROM generate_series(1, 3)"),
            "SELECT * FROM generate_series(1, 3) AS generate_series (generate_series)"
        );
        assert_eq!(
            named("SELECT x FROM generate_series(1, 3) AS g(x)"),
            "SELECT x FROM generate_series(1, 3) AS g (x)"
        );
        assert_eq!(named("SELECT u FROM unnest(ARRAY[1, 2]) AS u"), "SELECT u FROM UNNEST(ARRAY[1, 2]) AS u (u)");
        assert_eq!(named("SELECT * FROM t"), "SELECT * FROM t");
    }
}
