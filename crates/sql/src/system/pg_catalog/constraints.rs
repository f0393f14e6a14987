//! Indexes and constraints: `pg_index` and `pg_constraint`, and the
//! definitions `pg_get_indexdef` and `pg_get_constraintdef` print.
//!
//! A unique or primary key constraint has its index's OID. A CHECK
//! constraint has no OID of its own in Tessera's catalog: it shows one
//! derived from its table's ([`check_oid`]).

use std::sync::Arc;

use super::{PUBLIC_NS, TEMP_NS};
use crate::scope::Resolver;
use crate::storage::catalog::{IndexDef, IndexMethod, TableDef};
use crate::system::view::{View, view_row};
use crate::system::visible;

/// The OID the `k`th CHECK constraint of `t` shows.
fn check_oid(t: &TableDef, k: usize) -> u32 {
    t.oid.wrapping_mul(64).wrapping_add(k as u32 + 1) | 0x4000_0000
}

/// The statement that makes the index `ix` of `t`.
pub fn index_def(t: &TableDef, ix: &IndexDef) -> String {
    format!(
        "CREATE {}INDEX {} ON public.{} USING {} ({})",
        if ix.unique { "UNIQUE " } else { "" },
        ix.name,
        t.name,
        if ix.method == IndexMethod::Hash { "hash" } else { "btree" },
        ix.columns.join(", ")
    )
}

/// The definition of the constraint `oid` of one of `tables`, as a table
/// constraint clause.
pub fn constraint_def(tables: &[Arc<TableDef>], oid: u32) -> Option<String> {
    for t in tables {
        for ix in t.indexes.iter().filter(|i| i.constraint) {
            if ix.oid == oid {
                let kind = if ix.primary { "PRIMARY KEY" } else { "UNIQUE" };
                return Some(format!("{kind} ({})", ix.columns.join(", ")));
            }
        }
        for (k, c) in t.checks.iter().enumerate() {
            if check_oid(t, k) == oid {
                return Some(format!("CHECK ({})", c.expr));
            }
        }
    }
    None
}

/// The column numbers (from 1) of the index `ix` of `t`.
fn key_numbers(t: &TableDef, ix: &IndexDef) -> Vec<String> {
    ix.columns.iter().filter_map(|c| t.column_index(c)).map(|k| (k + 1).to_string()).collect()
}

view_row! {
    /// A row of `pg_index`: an index of a table.
    pub struct PgIndex {
        indexrelid: i64,
        indrelid: i64,
        indnatts: i16,
        indisunique: bool,
        indisprimary: bool,
        indisclustered: bool,
        indisvalid: bool,
        indisready: bool,
        indisreplident: bool,
        /// The column numbers, separated by spaces (`int2vector`'s text).
        indkey: String,
        indexprs: Option<String>,
        indpred: Option<String>,
        indisexclusion: bool,
    }
}

pub static PG_INDEX: View<PgIndex> = View { name: "pg_index", rows: pg_index };

fn pg_index(r: &Resolver) -> Vec<PgIndex> {
    let mut rows = Vec::new();
    for t in visible::tables(r) {
        for ix in &t.indexes {
            rows.push(PgIndex {
                indexrelid: ix.oid as i64,
                indrelid: t.oid as i64,
                indnatts: ix.columns.len() as i16,
                indisunique: ix.unique,
                indisprimary: ix.primary,
                indisclustered: false,
                indisvalid: true,
                indisready: true,
                indisreplident: false,
                indkey: key_numbers(&t, ix).join(" "),
                indexprs: None,
                indpred: None,
                indisexclusion: false,
            });
        }
    }
    rows
}

view_row! {
    /// A row of `pg_constraint`: a unique, primary key or CHECK
    /// constraint of a table.
    pub struct PgConstraint {
        oid: i64,
        conname: String,
        connamespace: i64,
        contype: &'static str,
        conrelid: i64,
        conindid: i64,
        /// The column numbers as an array's text (`{1,2}`); NULL for a
        /// CHECK.
        conkey: Option<String>,
        condeferrable: bool,
        condeferred: bool,
        convalidated: bool,
        confrelid: i64,
        /// A CHECK's expression.
        conbin: Option<String>,
    }
}

pub static PG_CONSTRAINT: View<PgConstraint> = View { name: "pg_constraint", rows: pg_constraint };

/// Each table's unique and primary key constraints, then its CHECKs.
fn pg_constraint(r: &Resolver) -> Vec<PgConstraint> {
    let temp = visible::temp_oids(r);
    let mut rows = Vec::new();
    for t in visible::tables(r) {
        // A temporary table's constraints are in the session's temporary schema.
        let connamespace = if temp.contains(&t.oid) { TEMP_NS } else { PUBLIC_NS };
        for ix in t.indexes.iter().filter(|i| i.constraint) {
            rows.push(PgConstraint {
                oid: ix.oid as i64,
                conname: ix.name.clone(),
                connamespace,
                contype: if ix.primary { "p" } else { "u" },
                conrelid: t.oid as i64,
                conindid: ix.oid as i64,
                conkey: Some(format!("{{{}}}", key_numbers(&t, ix).join(","))),
                condeferrable: false,
                condeferred: false,
                convalidated: true,
                confrelid: 0,
                conbin: None,
            });
        }
        for (k, c) in t.checks.iter().enumerate() {
            rows.push(PgConstraint {
                oid: check_oid(&t, k) as i64,
                conname: c.name.clone(),
                connamespace,
                contype: "c",
                conrelid: t.oid as i64,
                conindid: 0,
                conkey: None,
                condeferrable: false,
                condeferred: false,
                convalidated: true,
                confrelid: 0,
                conbin: Some(c.expr.clone()),
            });
        }
    }
    rows
}
