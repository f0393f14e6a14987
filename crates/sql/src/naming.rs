//! PostgreSQL's names for unaliased result columns.
//!
//! PostgreSQL names `count(*)` "count", `x::int` "x", `1 + 1` "?column?", and
//! allows two result columns with the same name; DataFusion names columns
//! after the whole expression and requires unique names. Before planning,
//! each unaliased projection item gets a unique alias; after execution the
//! result fields are renamed to PostgreSQL's (possibly repeated) names.

use std::collections::HashSet;

use datafusion::sql::sqlparser::ast::{Expr, Ident, Query, SelectItem, SetExpr};

/// Assigns aliases to the top-level projection of `query`; returns the
/// display name of every result column when they can be known from the AST
/// (not when the projection has a wildcard).
pub fn alias_projection(query: &mut Query) -> Option<Vec<String>> {
    let select = match query.body.as_mut() {
        SetExpr::Select(s) => s,
        _ => return None,
    };
    let mut display = Vec::new();
    let mut used: HashSet<String> = HashSet::new();
    let mut wildcard = false;
    for item in &select.projection {
        match item {
            SelectItem::ExprWithAlias { alias, .. } => {
                used.insert(alias.value.to_lowercase());
            }
            SelectItem::UnnamedExpr(e) => {
                if let Some(n) = column_name(e) {
                    used.insert(n.to_lowercase());
                }
            }
            _ => wildcard = true,
        }
    }
    for item in select.projection.iter_mut() {
        match item {
            SelectItem::UnnamedExpr(e) => {
                let name = pg_name(e);
                if column_name(e).is_some() {
                    display.push(name);
                    continue;
                }
                let mut unique = name.clone();
                let mut k = 1;
                while !used.insert(unique.to_lowercase()) {
                    unique = format!("{name}_{k}");
                    k += 1;
                }
                display.push(name);
                let expr = std::mem::replace(e, Expr::value(datafusion::sql::sqlparser::ast::Value::Null));
                *item = SelectItem::ExprWithAlias { expr, alias: Ident::with_quote('"', unique) };
            }
            SelectItem::ExprWithAlias { alias, .. } => display.push(alias.value.clone()),
            _ => {}
        }
    }
    if wildcard { None } else { Some(display) }
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
        Expr::Function(f) => f.name.0.last().and_then(|p| p.as_ident()).map(ident).unwrap_or_default(),
        Expr::Cast { expr, data_type, .. } => match expr.as_ref() {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) | Expr::Function(_) | Expr::Cast { .. } => pg_name(expr),
            _ => type_name(&data_type.to_string()),
        },
        Expr::Nested(inner) => pg_name(inner),
        Expr::Case { .. } => "case".into(),
        Expr::Exists { .. } => "exists".into(),
        Expr::Array(_) => "array".into(),
        Expr::Extract { .. } => "extract".into(),
        Expr::Substring { .. } => "substring".into(),
        Expr::Trim { .. } => "btrim".into(),
        Expr::Position { .. } => "position".into(),
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

/// PostgreSQL's internal type name, used for the name of `'x'::type`.
fn type_name(t: &str) -> String {
    let lower = t.to_lowercase();
    let base = lower.split('(').next().unwrap_or("").trim();
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
    use crate::session::parse_sql;
    use datafusion::sql::sqlparser::ast::Statement;

    fn names(sql: &str) -> Option<Vec<String>> {
        let Statement::Query(mut q) = parse_sql(sql).unwrap().pop().unwrap() else { panic!() };
        alias_projection(&mut q)
    }

    #[test]
    fn names_like_postgres() {
        assert_eq!(
            names("SELECT count(*), count(a), a, t.b, 1 + 1, 'x'::text, a::int").unwrap(),
            vec!["count", "count", "a", "b", "?column?", "text", "a"]
        );
        assert_eq!(names("SELECT * FROM t"), None);
    }
}
