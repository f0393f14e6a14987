//! `CREATE TABLE name [(columns)] AS query`: a table shaped like a query's
//! result, filled with its rows.
//!
//! The query is planned first for its result columns (named as PostgreSQL
//! names them, typed by what DataFusion computes), the table is created
//! through the ordinary CREATE TABLE path with those columns (no primary
//! key, as in PostgreSQL), and the rows go in through the ordinary
//! `INSERT INTO name query`. DDL is not transactional here (see `ddl`),
//! so a failed fill drops the new table again: the statement has either
//! its whole effect or none.

use datafusion::sql::sqlparser::ast::{CreateTable, Query, Statement};

use crate::error::{Result, SqlError, code};
use crate::parser::quote_ident;
use crate::plan::parse_sql;
use crate::session::{Output, Session, rename_schema};
use crate::values::types::SqlType;

pub(crate) async fn create_table_as(session: &mut Session, ct: &CreateTable, query: &Query) -> Result<Output> {
    let name = crate::parser::object_name(&ct.name);
    let db = session.db().to_string();
    if session.catalog().relation_oid(&db, &name).is_some() || session.catalog().sequence(&db, &name).is_some() {
        if ct.if_not_exists {
            return Ok(Output::Command("SELECT 0".into()));
        }
        return Err(SqlError::new(code::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
    }

    // The result's columns, as a SELECT of the query would describe them.
    let mut probe = query.clone();
    let names = crate::rewrite::naming::alias_projection(&mut probe);
    let plan = session.plan_query(Statement::Query(Box::new(probe)), &[]).await?;
    // The types after Tessera's analyzer rules (`a * 10` of an integer is an
    // integer), as the INSERT below will produce them.
    let state = session.ctx.state();
    let plan = state.analyzer().execute_and_check(plan.clone(), state.config_options(), |_, _| {}).unwrap_or(plan);
    let schema = std::sync::Arc::new(plan.schema().as_arrow().clone());
    let schema = match &names {
        Some(n) => rename_schema(&schema, n),
        None => schema,
    };
    let given: Vec<String> = ct.columns.iter().map(|c| crate::parser::ident(&c.name)).collect();
    if given.len() > schema.fields().len() {
        return Err(SqlError::syntax("too many column names were specified"));
    }
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (i, field) in schema.fields().iter().enumerate() {
        let column = given.get(i).cloned().unwrap_or_else(|| field.name().clone());
        if columns.iter().any(|(c, _): &(String, SqlType)| *c == column) {
            return Err(SqlError::new(code::DUPLICATE_COLUMN, format!("column \"{column}\" specified more than once")));
        }
        columns.push((column, SqlType::of_field(field)));
    }

    let list: Vec<String> = columns.iter().map(|(c, ty)| format!("{} {}", quote_ident(c), ty.name())).collect();
    let create = parse_one(&format!("CREATE TABLE {} ({})", quote_ident(&name), list.join(", ")))?;
    // Through the DDL handler, so that in a keyed database it is a
    // schema-change job like any CREATE TABLE.
    Box::pin(crate::ddl::try_execute(session, &create)).await?;

    let insert = parse_one(&format!("INSERT INTO {} {query}", quote_ident(&name)))?;
    // As a statement of its own: in the session's transaction, committed
    // at once outside a block.
    match Box::pin(session.execute_in_txn(insert, &[])).await {
        Ok(Output::Command(tag)) => {
            let rows = tag.rsplit(' ').next().unwrap_or("0").to_string();
            Ok(Output::Command(format!("SELECT {rows}")))
        }
        Ok(_) => Ok(Output::Command("SELECT 0".into())),
        Err(e) => {
            // Undo the half-done statement; the fill's error is the one to report.
            let drop = parse_one(&format!("DROP TABLE IF EXISTS {}", quote_ident(&name)))?;
            if let Err(undo) = Box::pin(crate::ddl::try_execute(session, &drop)).await {
                tracing::warn!(table = %name, error = %undo.message, "could not drop a table whose CREATE TABLE AS failed");
            }
            Err(e)
        }
    }
}

fn parse_one(sql: &str) -> Result<Statement> {
    parse_sql(sql)?.pop().ok_or_else(|| SqlError::internal(format!("no statement in {sql}")))
}
