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
//! - [`plan::classify`] recognizes the shapes (see `plan.rs`) and binds them
//!   once: table, key columns, compiled expressions ([`expr`]), result schema.
//! - A prepared statement keeps its [`FastPlan`] (extended protocol); a
//!   simple-protocol query is turned into a [`template`] whose literals
//!   become parameters, and the session caches plans by template text.
//!   Plans record the catalog version and are rebound after DDL.
//! - [`exec::execute`] runs a plan on the session's engine transaction.
//!
//! The fast path never produces an answer of its own where the general path
//! would produce a different one: whatever it does not handle exactly
//! (an overflow, a malformed literal, a NOT NULL violation, a type it does
//! not compute with) makes it *decline*, and the statement is undone to its
//! savepoint and run on the general path, which raises PostgreSQL's error.
//! The session setting `tessera.fast_path = off` turns the path off, which is
//! how the `.slt` suite checks that both paths give the same results.

pub mod exec;
pub mod expr;
pub mod plan;
pub mod template;
pub mod value;

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::ast::Statement;

pub use plan::FastPlan;
use template::{Literal, Template};
use value::{Decline, Value};

use crate::error::Result;
use crate::session::{Output, Session};
use crate::storage::keyed::RowGroupCheck;

/// Parameter values as they arrive.
pub enum Args<'a> {
    /// Bound by the client (extended protocol).
    Scalars(&'a [ScalarValue]),
    /// Lifted out of a simple-protocol query.
    Literals(&'a [Literal]),
}

impl Args<'_> {
    fn bind(&self, types: &[crate::values::types::SqlType]) -> std::result::Result<Vec<Value>, Decline> {
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
    plans: HashMap<String, Option<(Statement, Arc<FastPlan>)>>,
}

/// Enough for any application's statement mix; beyond it the cache starts over.
const TEMPLATE_CACHE_LIMIT: usize = 512;

impl Session {
    /// Whether the fast path may run: it is on, and the session has no
    /// temporary tables (its plans name tables as the catalog does, not as
    /// `temp_tables` resolves them).
    pub fn fast_path_enabled(&self) -> bool {
        self.info.settings.lock().hot().fast_path && self.temp.is_empty()
    }

    /// Binds a statement for the fast path, if it is one (at Parse time).
    pub fn prepare_fast(&self, stmt: &Statement) -> Option<Arc<FastPlan>> {
        if !self.temp.is_empty() {
            return None;
        }
        if !matches!(stmt, Statement::Query(_) | Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)) {
            return None;
        }
        plan::classify(self, stmt, &[]).map(Arc::new)
    }

    /// Runs a simple-protocol query on the fast path if it is a fast-path
    /// statement; None when the general path must run it.
    pub async fn execute_simple_fast(&mut self, sql: &str) -> Option<Result<Output>> {
        if !self.fast_path_enabled() {
            return None;
        }
        let template: Template = template::templatize(sql)?;
        let version = self.catalog().version();
        let cached = match self.templates.plans.get(&template.key) {
            Some(None) => return None,
            Some(Some((_, p))) if p.version == version => p.clone(),
            Some(Some((stmt, _))) => {
                let stmt = stmt.clone();
                let plan = plan::classify(self, &stmt, &template.kinds()).map(Arc::new);
                self.remember(&template, plan.clone().map(|p| (stmt, p)));
                plan?
            }
            None => {
                let mut stmts = crate::plan::parse_sql(template.text()).ok()?;
                let plan = match stmts.as_slice() {
                    [stmt] => plan::classify(self, stmt, &template.kinds()).map(|p| (stmts.remove(0), Arc::new(p))),
                    _ => None,
                };
                let p = plan.as_ref().map(|(_, p)| p.clone());
                self.remember(&template, plan);
                p?
            }
        };
        self.run_fast(&cached, Args::Literals(&template.literals)).await
    }

    fn remember(&mut self, template: &Template, entry: Option<(Statement, Arc<FastPlan>)>) {
        if self.templates.plans.len() >= TEMPLATE_CACHE_LIMIT {
            self.templates.plans.clear();
        }
        self.templates.plans.insert(template.key.clone(), entry);
    }

    /// Runs a prepared statement's plan (rebinding it if the catalog
    /// changed); None when the general path must run the statement.
    pub async fn execute_prepared_fast(
        &mut self,
        stmt: &Statement,
        plan: &Arc<FastPlan>,
        params: &[ScalarValue],
    ) -> Option<Result<Output>> {
        if !self.fast_path_enabled() {
            return None;
        }
        if plan.version != self.catalog().version() {
            let fresh = Arc::new(plan::classify(self, stmt, &[])?);
            return self.run_fast(&fresh, Args::Scalars(params)).await;
        }
        self.run_fast(plan, Args::Scalars(params)).await
    }

    async fn run_fast(&mut self, plan: &FastPlan, args: Args<'_>) -> Option<Result<Output>> {
        let writes = !matches!(plan.kind, plan::Kind::Select { .. });
        // The general path reports these states with their errors.
        if self.block_failed() || (writes && self.read_only()) {
            return None;
        }
        // A read on a secondary is bounded in staleness like any other.
        if !writes && let Err(e) = self.check_staleness() {
            return Some(Err(e));
        }
        let params = args.bind(&plan.params).ok()?;
        let autocommit = self.autocommit();
        let created = self.txn.lock().is_none();
        if let Err(e) = self.ensure_txn() {
            return Some(Err(e));
        }
        let now = crate::exec::fast::now_micros();
        let deadline = self.statement_deadline();
        // Borrow the fields the attempt needs (no clone, no shared counter
        // touched per statement).
        let catalog = &self.shared.catalog;
        let (db, key) = (&self.info.db, self.partition_key.as_ref());
        let bound = &mut self.row_group;
        let slot = &self.txn;
        let mut attempt = || {
            let mut slot = slot.lock();
            let txn = slot.as_mut().expect("transaction");
            txn.refresh_snapshot();
            txn.set_wait_deadline(deadline);
            let sp = txn.savepoint();
            txn.set_wait(false);
            let group = key.map(|key| RowGroupCheck { db, key, bound: &mut *bound });
            let outcome = exec::execute(plan, txn, catalog, &params, now, group);
            txn.set_wait(true);
            if matches!(outcome, Ok(exec::Outcome::Declined | exec::Outcome::MustWait(_))) {
                // Undo this attempt before the next one.
                if txn.rollback_to(sp).is_err() {
                    slot.take();
                }
            }
            (sp, outcome)
        };
        // Never block the runtime's thread on a concurrent writer: when a
        // row's holder must be waited for, the attempt is undone, the task
        // awaits the holder's end and the statement runs again (on a fresh
        // snapshot, as read committed allows).
        let (mut sp, mut outcome) = attempt();
        while let Ok(exec::Outcome::MustWait(holder)) = outcome {
            let Some(wait) = self.txn.lock().as_ref().map(|t| t.row_wait(holder)) else { break };
            if let Err(e) = crate::storage::row_waits::await_row(wait).await {
                outcome = Err(e);
                break;
            }
            (sp, outcome) = attempt();
        }
        let result = match outcome {
            Ok(exec::Outcome::Declined | exec::Outcome::MustWait(_)) => {
                if autocommit
                    && created
                    && let Some(t) = self.txn.lock().take()
                {
                    t.abort();
                }
                return None;
            }
            Ok(exec::Outcome::Done(out)) => Ok(out),
            Err(e) => Err(e),
        };
        let r = self.finish_statement(autocommit, sp, result).await;
        if r.is_err() {
            self.fail_block();
        }
        Some(r)
    }
}

/// The statement's time, as `now()` reads it (microseconds, UTC).
pub fn now_micros() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}
