//! What a table's definition implies for the engine and for statements:
//! its engine table's spec, the fields of named columns, the table a
//! statement writes, and the names of the sequences behind row ids and
//! defaults.

use std::sync::Arc;

use tessera_engine::{IndexKind, IndexSpec, TableSpec};

use super::{Catalog, IndexMethod, TableDef};
use crate::error::{Result, SqlError, code};

/// The engine field numbers of named columns (42703 when one is missing).
pub(crate) fn fields_of(def: &TableDef, cols: &[String]) -> Result<Vec<u16>> {
    cols.iter()
        .map(|c| {
            def.column(c).map(|c| c.field).ok_or_else(|| {
                SqlError::new(code::UNDEFINED_COLUMN, format!("column \"{c}\" named in key does not exist"))
            })
        })
        .collect()
}

pub(crate) fn engine_spec(def: &TableDef, engine_name: &str) -> Result<TableSpec> {
    // A keyless table's rows are keyed by a row id drawn from a sequence, in
    // an ordered index: a scan returns them in the order they were inserted,
    // as PostgreSQL's heap does for a table nobody has updated (users and
    // tests read `SELECT * FROM t` without ORDER BY and expect that order).
    let pk_fields = match def.rowid_field {
        Some(f) => vec![f],
        None => fields_of(def, &def.primary_key)?,
    };
    let mut spec = TableSpec::new(engine_name, pk_fields, IndexKind::Ordered);
    for ix in def.indexes.iter().filter(|i| !i.primary) {
        let kind = if ix.method == IndexMethod::Hash { IndexKind::Hash } else { IndexKind::Ordered };
        spec = spec.with_index(IndexSpec::new(ix.name.clone(), kind, ix.unique, fields_of(def, &ix.columns)?));
    }
    Ok(spec)
}

/// The table a statement writes (INSERT, UPDATE, DELETE, COPY): a
/// `public` table of `db` (42P01 for another schema, 0A000 for a view).
pub fn target_table(
    catalog: &Catalog,
    db: &str,
    name: &datafusion::sql::sqlparser::ast::ObjectName,
) -> Result<Arc<TableDef>> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| p.as_ident().map(|i| crate::parser::normalize(&i.value, i.quote_style)).unwrap_or_default())
        .collect();
    let (schema, table) = match parts.as_slice() {
        [t] => ("public", t.as_str()),
        [s, t] => (s.as_str(), t.as_str()),
        [_, s, t] => (s.as_str(), t.as_str()),
        _ => return Err(SqlError::syntax(format!("invalid table name {name}"))),
    };
    if schema != "public" {
        return Err(SqlError::new(code::UNDEFINED_TABLE, format!("relation \"{schema}.{table}\" does not exist")));
    }
    if catalog.view(db, table).is_some() {
        return Err(SqlError::unsupported(format!("writing to a view ({table})")));
    }
    catalog
        .table(db, table)
        .ok_or_else(|| SqlError::new(code::UNDEFINED_TABLE, format!("relation \"{table}\" does not exist")))
}

pub fn rowid_sequence(def: &TableDef) -> String {
    format!("__rowid_{}", def.oid)
}

/// `nextval('name'::regclass)` → the sequence name.
pub fn sequence_of_default(expr: &str) -> Option<String> {
    let rest = expr.trim().strip_prefix("nextval('")?;
    let end = rest.find('\'')?;
    Some(rest[..end].to_string())
}
