//! The session's entry points to the fast path (`fast`): whether it may
//! run, binding a statement for it, and running a bound plan in the
//! session's transaction (declining to the general path where it must).

use std::sync::Arc;

use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::ast::Statement;

use crate::error::Result;
use crate::fast::template::{self, Template};
use crate::fast::{Args, FastPlan, TEMPLATE_CACHE_LIMIT, exec, plan};
use crate::session::{Output, Session};
use crate::storage::keyed::RowGroupCheck;

impl Session {
    /// What the fast path binds statements against.
    fn binder(&self) -> plan::Binder<'_> {
        plan::Binder { catalog: self.catalog(), db: self.db(), partition_key: self.partition_key.as_ref() }
    }

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
        plan::classify(&self.binder(), stmt, &[]).map(Arc::new)
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
                let plan = plan::classify(&self.binder(), &stmt, &template.kinds()).map(Arc::new);
                self.remember(&template, plan.clone().map(|p| (stmt, p)));
                plan?
            }
            None => {
                let mut stmts = crate::plan::parse_sql(template.text()).ok()?;
                let plan = match stmts.as_slice() {
                    [stmt] => {
                        plan::classify(&self.binder(), stmt, &template.kinds()).map(|p| (stmts.remove(0), Arc::new(p)))
                    }
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
            let fresh = Arc::new(plan::classify(&self.binder(), stmt, &[])?);
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
        self.note_query();
        let autocommit = self.autocommit();
        let created = self.txn.lock().is_none();
        if let Err(e) = self.ensure_txn() {
            return Some(Err(e));
        }
        // In a block, the block's start (as the general path's `now()`).
        let now = match self.info.block_started.load(std::sync::atomic::Ordering::Relaxed) {
            0 => crate::fast::now_micros(),
            started => started,
        };
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
