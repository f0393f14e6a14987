//! The OLTP fast path: short statements that reach rows by a unique key run
//! directly on the engine, without DataFusion.
//!
//! The general path parses, rewrites, plans (logical, optimized, physical)
//! and executes every statement, and DML is planned twice (once to find the
//! rows, once per RETURNING list). For `UPDATE accounts SET balance =
//! balance + $1 WHERE id = $2` that is most of the CPU of a transaction.
//! The Hekaton slides make the same observation about interpreted access
//! (10–30× the CPU of a compiled path); Tessera's answer is this module:
//!
//! - `plan::classify` recognizes the shapes (see `plan.rs`) and binds them
//!   once: table, key columns, compiled expressions (`expr`), result schema.
//! - A prepared statement keeps its [`FastPlan`] (extended protocol); a
//!   simple-protocol query is turned into a `template` whose literals
//!   become parameters, and the session caches plans by template text.
//!   Plans record the catalog version and are rebound after DDL.
//! - `exec::execute` runs a plan on the session's engine transaction.
//!
//! The fast path never produces an answer of its own where the general path
//! would produce a different one: whatever it does not handle exactly
//! (an overflow, a malformed literal, a NOT NULL violation, a type it does
//! not compute with) makes it *decline*, and the statement is undone to its
//! savepoint and run on the general path, which raises PostgreSQL's error.
//! The session setting `tessera.fast_path = off` turns the path off, which is
//! how the `.slt` suite checks that both paths give the same results.

pub(crate) mod exec;
pub(crate) mod expr;
pub(crate) mod plan;
pub(crate) mod template;
pub(crate) mod value;

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::ast::Statement;

pub use plan::FastPlan;
use template::Literal;
use value::{Decline, Value};

/// Parameter values as they arrive.
pub enum Args<'a> {
    /// Bound by the client (extended protocol).
    Scalars(&'a [ScalarValue]),
    /// Lifted out of a simple-protocol query.
    Literals(&'a [Literal]),
}

impl Args<'_> {
    pub(crate) fn bind(&self, types: &[crate::values::types::SqlType]) -> std::result::Result<Vec<Value>, Decline> {
        match self {
            Args::Scalars(s) => {
                if s.len() != types.len() {
                    return Err(Decline);
                }
                s.iter().zip(types).map(|(v, t)| value::from_scalar(*t, v)).collect()
            }
            Args::Literals(l) => {
                if l.len() != types.len() {
                    return Err(Decline);
                }
                l.iter()
                    .zip(types)
                    .map(|(v, t)| match v {
                        Literal::Int(i) => Ok(Value::Int(*i)),
                        Literal::Str(s) => value::from_text(*t, s),
                    })
                    .collect()
            }
        }
    }
}

/// A session's plans for simple-protocol templates. `None` remembers that a
/// template is not a fast-path statement.
#[derive(Default)]
pub struct TemplateCache {
    pub(crate) plans: HashMap<String, Option<(Statement, Arc<FastPlan>)>>,
}

/// Enough for any application's statement mix; beyond it the cache starts over.
pub(crate) const TEMPLATE_CACHE_LIMIT: usize = 512;

/// The statement's time, as `now()` reads it (microseconds, UTC).
pub fn now_micros() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}
