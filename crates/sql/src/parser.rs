//! Parsing SQL text: the statements a client sends (`parse_sql`, with the
//! syntax sqlparser lacks read by `database` and `normalize`), and one
//! statement or expression for the rewrites that build SQL as text
//! (`CAST(x AS bytea)`, `tessera_json_get(a, b)`, …).
//!
//! It sits at the bottom of the crate, above `error` only: every layer
//! parses, and the parser uses nothing of theirs. PostgreSQL's names for
//! functions and catalog queries are applied after parsing, by
//! `plan::parse_sql`.

pub(crate) mod database;
pub(crate) mod normalize;
pub(crate) mod with_dml;

use datafusion::sql::sqlparser::ast::{Ident, ObjectName, Statement};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;

use datafusion::sql::sqlparser::ast::Expr;

use crate::error::{Result, SqlError};

/// PostgreSQL folds unquoted identifiers to lower case.
pub fn normalize(value: &str, quote: Option<char>) -> String {
    if quote.is_some() { value.to_string() } else { value.to_lowercase() }
}

/// An identifier quoted for SQL text.
pub fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// An identifier's name as PostgreSQL reads it (folded unless quoted).
pub fn ident(i: &Ident) -> String {
    normalize(&i.value, i.quote_style)
}

/// The last part of a possibly qualified name, as [`ident`] reads it.
pub fn object_name(n: &ObjectName) -> String {
    n.0.last().and_then(|p| p.as_ident()).map(ident).unwrap_or_default()
}

/// A call's arguments in the order of `params` (each a parameter's name and
/// the SQL text of its default, None for a required one): named arguments
/// (`name => v`, and PostgreSQL's older `name := v`) go to their places and
/// omitted ones take their defaults. The call is left as it is when an
/// argument names no parameter or a required one is missing, for the
/// planner to refuse.
pub fn positional_args(f: &mut datafusion::sql::sqlparser::ast::Function, params: &[(&str, Option<&str>)]) {
    use datafusion::sql::sqlparser::ast::{BinaryOperator, FunctionArg, FunctionArgExpr, FunctionArguments};
    let FunctionArguments::List(list) = &mut f.args else { return };
    let place = |name: &str| params.iter().position(|(p, _)| name.eq_ignore_ascii_case(p));
    let mut slots: Vec<Option<FunctionArgExpr>> = vec![None; params.len()];
    for (k, a) in list.args.iter().enumerate() {
        let (position, value) = match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::BinaryOp {
                left,
                op: BinaryOperator::Assignment,
                right,
            })) => match left.as_ref() {
                Expr::Identifier(name) => (place(&name.value), FunctionArgExpr::Expr((**right).clone())),
                _ => return,
            },
            FunctionArg::Unnamed(v) => (Some(k), v.clone()),
            FunctionArg::Named { name, arg, .. } => (place(&name.value), arg.clone()),
            FunctionArg::ExprNamed { name: Expr::Identifier(name), arg, .. } => (place(&name.value), arg.clone()),
            FunctionArg::ExprNamed { .. } => return,
        };
        let Some(p) = position.filter(|p| *p < slots.len()) else { return };
        slots[p] = Some(value);
    }
    let mut args = Vec::with_capacity(params.len());
    for (slot, (_, default)) in slots.into_iter().zip(params) {
        let value = match (slot, default) {
            (Some(v), _) => v,
            (None, Some(d)) => match parse_expr(d) {
                Ok(e) => FunctionArgExpr::Expr(e),
                Err(_) => return,
            },
            (None, None) => return,
        };
        args.push(FunctionArg::Unnamed(value));
    }
    list.args = args;
}

/// Parses one SQL expression (PostgreSQL dialect).
pub fn parse_expr(sql: &str) -> Result<Expr> {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::syntax(format!("syntax error: {e}")))
}

/// Parses one SQL statement (PostgreSQL dialect), for rewrites that build
/// a subquery as text.
pub fn parse_statement(sql: &str) -> Result<datafusion::sql::sqlparser::ast::Statement> {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statement())
        .map_err(|e| SqlError::syntax(format!("syntax error: {e}")))
}

/// Splits a query string into statements (PostgreSQL dialect), reading
/// the syntax of Tessera's and PostgreSQL's that sqlparser lacks.
pub fn parse_sql(sql: &str) -> Result<Vec<Statement>> {
    if let Some(keyed) = database::parse_create_database_with(sql) {
        return keyed.map(|s| vec![s]);
    }
    if let Some(split) = database::parse_alter_database_split(sql) {
        return split.map(|s| vec![s]);
    }
    let sql = &normalize::copy_options(sql);
    let domain = normalize::create_domain(sql);
    let sql = domain.as_deref().unwrap_or(sql);
    let view = normalize::alter_view(sql);
    let sql = view.as_deref().unwrap_or(sql);
    let reset = normalize::reset_time_zone(sql);
    let sql = reset.as_deref().unwrap_or(sql);
    let abort = normalize::abort(sql);
    let sql = abort.as_deref().unwrap_or(sql);
    let interval = normalize::interval_precision(sql);
    let sql = interval.as_deref().unwrap_or(sql);
    let substring = normalize::substring_similar(sql);
    let sql = substring.as_deref().unwrap_or(sql);
    let frames = normalize::frame_interval_offsets(sql);
    let sql = frames.as_deref().unwrap_or(sql);
    if let Some((begin, deferrable)) = normalize::begin_deferrable(sql) {
        let mut stmts = parse_sql(&begin)?;
        if let [Statement::StartTransaction { modifier, .. }] = stmts.as_mut_slice() {
            use datafusion::sql::sqlparser::ast::TransactionModifier;
            // Carried to the session in the modifier, which PostgreSQL's
            // BEGIN does not otherwise have.
            *modifier = Some(if deferrable { TransactionModifier::Deferred } else { TransactionModifier::Immediate });
        }
        return Ok(stmts);
    }
    // VACUUM's options and table list (`VACUUM ANALYZE t`) do not parse; the
    // GC pass it triggers covers every table anyway.
    let head = sql.trim_start();
    if head.get(..6).is_some_and(|w| w.eq_ignore_ascii_case("vacuum"))
        && !head.trim_end().trim_end_matches(';').contains(';')
    {
        return datafusion::sql::sqlparser::parser::Parser::parse_sql(&PostgreSqlDialect {}, "VACUUM")
            .map_err(|e| SqlError::internal(e.to_string()));
    }
    let stmts = datafusion::sql::sqlparser::parser::Parser::parse_sql(&PostgreSqlDialect {}, sql).map_err(|e| {
        let msg = e.to_string();
        let msg = msg.trim_start_matches("sql parser error: ");
        let msg = match msg.find(" at Line: ") {
            Some(i) => &msg[..i],
            None => msg,
        };
        SqlError::syntax(format!("syntax error: {msg}"))
    })?;
    Ok(stmts.into_iter().map(with_dml::with_before_dml).collect())
}
