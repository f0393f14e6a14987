//! What a DML statement's parameters are, for the extended protocol's
//! Describe: a `$n` that is a whole VALUES cell or SET value takes its
//! column's type; the others are inferred by DataFusion over a probe query
//! with the statement's WHERE clause.

use std::collections::HashMap;

use datafusion::sql::sqlparser::ast::{Expr, FromTable, SetExpr, Statement, TableObject, UpdateTableFromKind};

use crate::error::Result;
use crate::exec::dml::{assignment_columns, target_of, target_table};
use crate::parser::{normalize, quote_ident};
use crate::session::Session;
use crate::values::types::SqlType;

/// Parameter types a DML statement implies: `$n` as a whole VALUES cell or
/// SET value takes its column's type.
pub fn dml_param_types(session: &Session, stmt: &Statement) -> Result<HashMap<usize, SqlType>> {
    let mut out = HashMap::new();
    let placeholder = |e: &Expr| match e {
        Expr::Value(v) => match &v.value {
            datafusion::sql::sqlparser::ast::Value::Placeholder(p) => {
                p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok())
            }
            _ => None,
        },
        _ => None,
    };
    match stmt {
        Statement::Insert(ins) => {
            let TableObject::TableName(name) = &ins.table else { return Ok(out) };
            let def = target_table(session, name)?;
            let targets: Vec<usize> = if ins.columns.is_empty() {
                (0..def.columns.len()).collect()
            } else {
                ins.columns
                    .iter()
                    .filter_map(|c| {
                        let n = c.0.last().and_then(|p| p.as_ident()).map(|i| normalize(&i.value, i.quote_style))?;
                        def.column_index(&n)
                    })
                    .collect()
            };
            if let Some(q) = &ins.source
                && let SetExpr::Values(v) = q.body.as_ref()
            {
                for row in &v.rows {
                    for (i, cell) in row.content.iter().enumerate() {
                        if let (Some(n), Some(t)) = (placeholder(cell), targets.get(i)) {
                            out.insert(n, def.columns[*t].ty);
                        }
                    }
                }
            }
        }
        Statement::Update(upd) => {
            let (name, _) = target_of(&upd.table)?;
            let def = target_table(session, &name)?;
            for a in &upd.assignments {
                let names = assignment_columns(&a.target)?;
                if let (Some(n), [col]) = (placeholder(&a.value), names.as_slice())
                    && let Some(c) = def.column(col)
                {
                    out.insert(n, c.ty);
                }
            }
        }
        _ => {}
    }
    Ok(out)
}

/// A query with the WHERE clause of an UPDATE or DELETE (or the SELECT of an
/// INSERT … SELECT), planned only to infer its parameters' types.
pub fn where_probe(session: &Session, stmt: &Statement) -> Result<Option<String>> {
    Ok(match stmt {
        Statement::Update(u) => {
            let (name, alias) = target_of(&u.table)?;
            let def = target_table(session, &name)?;
            let alias = alias.unwrap_or_else(|| def.name.clone());
            let from = match &u.from {
                None => String::new(),
                Some(UpdateTableFromKind::AfterSet(f)) | Some(UpdateTableFromKind::BeforeSet(f)) => {
                    format!(", {}", f.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", "))
                }
            };
            let sets: Vec<String> = u.assignments.iter().map(|a| a.value.to_string()).collect();
            Some(format!(
                "SELECT {} FROM {} AS {}{from}{}",
                if sets.is_empty() { "1".to_string() } else { sets.join(", ") },
                quote_ident(&def.name),
                quote_ident(&alias),
                u.selection.as_ref().map(|w| format!(" WHERE {w}")).unwrap_or_default()
            ))
        }
        Statement::Delete(d) => {
            let tables = match &d.from {
                FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
            };
            let Some(first) = tables.first() else { return Ok(None) };
            let (name, alias) = target_of(first)?;
            let def = target_table(session, &name)?;
            let alias = alias.unwrap_or_else(|| def.name.clone());
            let using = match &d.using {
                None => String::new(),
                Some(u) => format!(", {}", u.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ")),
            };
            d.selection.as_ref().map(|w| {
                format!("SELECT 1 FROM {} AS {}{using} WHERE {w}", quote_ident(&def.name), quote_ident(&alias))
            })
        }
        Statement::Insert(i) => match &i.source {
            Some(q) if !matches!(q.body.as_ref(), SetExpr::Values(_)) => Some(q.to_string()),
            _ => None,
        },
        _ => None,
    })
}
