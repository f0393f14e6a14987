//! TODO layer essay

pub mod context;
pub mod functions;
pub mod temp_tables;
pub mod views;
pub mod volatile;

use datafusion::sql::sqlparser::ast::Statement;

/// Parses a query string into statements as PostgreSQL reads them: the
/// parser's statements with PostgreSQL's function and catalog names
/// (`functions::normalize_pg`), and catalog queries over empty catalogs
/// answered without planning (`functions::short_circuit_empty_catalog`).
pub fn parse_sql(sql: &str) -> crate::error::Result<Vec<Statement>> {
    let mut stmts = crate::parser::parse_sql(sql)?;
    let catalog_query = sql.contains("pg_catalog.");
    for s in stmts.iter_mut() {
        if catalog_query {
            functions::short_circuit_empty_catalog(s);
        }
        functions::normalize_pg(s, catalog_query);
    }
    Ok(stmts)
}
