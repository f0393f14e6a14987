//! Parsing one SQL expression, for the rewrites that build expressions as
//! text (`CAST(x AS bytea)`, `tessera_json_get(a, b)`, …).
//!
//! It sits at the bottom of the crate: the statement rewriters of every
//! layer use it, and it uses nothing of theirs.

use datafusion::sql::sqlparser::ast::Expr;

use crate::error::{Result, SqlError};

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
