//! A session's DataFusion context and what runs before DataFusion plans a
//! statement. It sits above `system` (whose views its catalog provider
//! serves) and below `fast`, `session` and the handlers.
//!
//! - `context`: the session context configured for PostgreSQL's dialect,
//!   with a catalog provider that resolves names against the Tessera
//!   catalog (`public`, `pg_catalog`, `information_schema`, `tessera`, and
//!   `__dml`, which exposes keyless tables' hidden row id to UPDATE and
//!   DELETE) and every rule and function of Tessera's registered;
//! - `functions`: PostgreSQL's functions DataFusion lacks, and the names
//!   PostgreSQL gives functions and catalog queries (`normalize_pg`);
//!   `volatile` gives every row its own `nextval()` and `gen_random_uuid()`;
//! - `views`: a view's query is stored qualified and put in place of the
//!   view in every statement that reads it, before any other rewrite;
//! - `temp_tables`: a session's temporary tables and views, its names
//!   resolved to their stored names before anything else reads a statement;
//! - `subplans`: what runs after DataFusion plans: where its physical
//!   planner refuses a subquery it could not turn into a join, the plan is
//!   made again with that subquery run once per outer row.

pub(crate) mod context;
pub(crate) mod functions;
pub(crate) mod subplans;
pub(crate) mod temp_tables;
pub(crate) mod views;
pub(crate) mod volatile;

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
