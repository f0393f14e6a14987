//! Where a statement goes: the top of the SQL layer.
//!
//! A client's query string or bound statement enters here
//! ([`Session::execute_sql`], [`Session::execute`]); transaction control
//! runs first (`blocks`: BEGIN, COMMIT, ROLLBACK, savepoints, and the
//! aborted block that accepts only ROLLBACK), then the session's temporary
//! names are resolved, views expanded, and `Session::run_statement`
//! hands the statement to its one handler: a query to the session's
//! planner, INSERT/UPDATE/DELETE/COPY/EXPLAIN to `exec`, SET/SHOW to
//! `session::settings`, everything else to `ddl` (CREATE TABLE … AS, which
//! is DDL and DML together, to `create_as`). `describe` answers the
//! extended protocol's Describe without running anything.
//!
//! Nothing below imports this module; it imports every layer it routes to.

mod blocks;
pub(crate) mod create_as;
mod describe;
mod route;

use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::ast::Statement;

pub use describe::Described;

use tessera_engine::Isolation;

use crate::error::{Result, SqlError, code};
use crate::plan::parse_sql;
use crate::scope::output::CopyIn;
use crate::session::{Output, Session, rename};
use route::{Route, route};

impl Session {
    /// Runs a simple-protocol query string as PostgreSQL does: the fast
    /// path first; then its statements in order, several of them (without
    /// transaction control or COPY) as one implicit transaction; stops at
    /// the first error, which is returned after the outputs before it, and
    /// at a COPY FROM STDIN, which waits for its data. (The wire layer runs
    /// the same steps, answering each statement as it completes.)
    pub async fn execute_sql(&mut self, sql: &str) -> (Vec<Output>, Option<SqlError>) {
        if let Some(result) = self.execute_simple_fast(sql).await {
            return match result {
                Ok(o) => (vec![o], None),
                Err(e) => (vec![], Some(e)),
            };
        }
        let stmts = match parse_sql(sql) {
            Ok(s) => s,
            Err(e) => {
                self.fail_block();
                return (vec![], Some(e));
            }
        };
        if stmts.is_empty() {
            return (vec![Output::Empty], None);
        }
        let several = Self::runs_in_implicit_blocks(&stmts);
        let mut outs = Vec::new();
        for stmt in stmts {
            if several && let Err(e) = self.enter_implicit_block() {
                return (outs, Some(e));
            }
            let result = match self.execute_control(&stmt).await {
                Some(r) => r,
                None => Box::pin(self.execute_timed(stmt, &[])).await,
            };
            match result {
                Ok(o) => {
                    let is_copy = matches!(o, Output::CopyIn(_));
                    outs.push(o);
                    if is_copy {
                        break;
                    }
                }
                Err(e) => {
                    self.undo_implicit_block();
                    return (outs, Some(e));
                }
            }
        }
        if several && let Err(e) = self.end_implicit().await {
            return (outs, Some(e));
        }
        (outs, None)
    }
    /// Whether a simple-protocol query string's statements run in implicit
    /// transaction blocks, as PostgreSQL runs them: when there are several
    /// (none of them COPY, which waits for its data mid-string). Outside an
    /// explicit block they run as one transaction, begun again after a
    /// COMMIT or ROLLBACK among them; an error undoes the statements since
    /// the string's last COMMIT; a BEGIN makes the block explicit, taking
    /// in the statements before it.
    pub fn runs_in_implicit_blocks(stmts: &[Statement]) -> bool {
        stmts.len() > 1 && !stmts.iter().any(|s| matches!(s, Statement::Copy { .. }))
    }
    /// [`Self::execute`] under the session's `statement_timeout`: a
    /// statement that runs longer is cancelled (57014) and undone.
    pub async fn execute_timed(&mut self, stmt: Statement, params: &[ScalarValue]) -> Result<Output> {
        let ms = self.info.settings.lock().hot().statement_timeout_ms;
        if ms == 0 {
            return self.execute(stmt, params).await;
        }
        match tokio::time::timeout(std::time::Duration::from_millis(ms), self.execute(stmt, params)).await {
            Ok(r) => r,
            Err(_) => {
                // The statement future was dropped mid-way: undo what it did.
                self.abort_statement();
                Err(SqlError::new(code::QUERY_CANCELED, "canceling statement due to statement timeout"))
            }
        }
    }
    /// Runs BEGIN, COMMIT/END and ROLLBACK (without savepoint), which need
    /// no planning, without entering the general path's machinery; None for
    /// other statements.
    pub async fn execute_control(&mut self, stmt: &Statement) -> Option<Result<Output>> {
        match stmt {
            Statement::StartTransaction { modes, begin, modifier, .. } => {
                Some(self.begin(modes, deferrable_of(modifier)).map(|o| start_tag(o, *begin)))
            }
            Statement::Commit { chain: false, .. } => Some(self.commit().await),
            Statement::Rollback { savepoint: None, chain: false } => Some(Ok(self.rollback())),
            _ => None,
        }
    }
    /// Runs one statement with parameter values.
    pub async fn execute(&mut self, stmt: Statement, params: &[ScalarValue]) -> Result<Output> {
        if route(&stmt) == Route::Control {
            return self.control(stmt).await;
        }
        self.check_block_accepts(&stmt)?;
        let result = match self.refuse_in_block(&stmt) {
            Ok(()) => self.execute_in_txn(stmt, params).await,
            Err(e) => Err(e),
        };
        if result.is_err() {
            self.fail_block();
        }
        result
    }
    /// Runs transaction control. BEGIN, COMMIT and ROLLBACK work even in an
    /// aborted block; a savepoint's creation and release do not.
    async fn control(&mut self, stmt: Statement) -> Result<Output> {
        match &stmt {
            Statement::StartTransaction { modes, begin, modifier, .. } => {
                self.begin(modes, deferrable_of(modifier)).map(|o| start_tag(o, *begin))
            }
            Statement::Commit { chain, .. } => self.end_block(true, *chain).await,
            Statement::Rollback { savepoint: None, chain } => self.end_block(false, *chain).await,
            Statement::Rollback { savepoint: Some(name), .. } => self.rollback_to(&name.value),
            Statement::Savepoint { name } | Statement::ReleaseSavepoint { name } => {
                self.check_block_accepts(&stmt)?;
                let result = match &stmt {
                    Statement::Savepoint { .. } => self.savepoint(&name.value),
                    _ => self.release(&name.value),
                };
                // Like any error in a block (RELEASE of a savepoint that
                // does not exist), it aborts the block.
                if result.is_err() {
                    self.fail_block();
                }
                result
            }
            other => Err(unsupported_statement(other)),
        }
    }
    pub(crate) async fn execute_in_txn(&mut self, mut stmt: Statement, params: &[ScalarValue]) -> Result<Output> {
        if !matches!(
            stmt,
            Statement::Set(_) | Statement::ShowVariable { .. } | Statement::Reset(_) | Statement::Discard { .. }
        ) {
            self.note_query();
        }
        let creating = self.temp.resolve(&mut stmt)?;
        let ddl = matches!(
            stmt,
            Statement::CreateTable(_)
                | Statement::CreateView(_)
                | Statement::CreateIndex(_)
                | Statement::Drop { .. }
                | Statement::AlterTable(_)
        );
        // Boxed: the statement's future is large, and CREATE TABLE AS nests one.
        let result = Box::pin(self.execute_resolved(stmt, params)).await;
        if let (Some(c), Ok(_)) = (creating, &result) {
            self.note_temp_created(&c.name);
            self.temp.created(c);
        }
        if ddl && !self.temp.is_empty() {
            self.temp.sync(&self.shared.catalog, &self.info.db);
        }
        // An autocommitted statement's transaction has ended.
        let result = match (result, self.block.is_none()) {
            (Ok(out), true) => self.end_of_transaction().map(|()| out),
            (result, _) => result,
        };
        result.map_err(|e| self.temp.unmangle(e))
    }
    /// What the end of a transaction does to temporary tables (`ON
    /// COMMIT DROP | DELETE ROWS`).
    pub(crate) fn end_of_transaction(&mut self) -> Result<()> {
        let due = self.temp.due();
        if due.is_empty() {
            return Ok(());
        }
        let catalog = self.shared.catalog.clone();
        let _g = catalog.ddl_lock();
        for (stored, action) in due {
            let Some(def) = catalog.table(&self.info.db, &stored) else { continue };
            match action {
                crate::plan::temp_tables::AtCommit::Drop => crate::ddl::drop_table_def(&catalog, &def, true)?,
                crate::plan::temp_tables::AtCommit::DeleteRows => {
                    for engine in catalog.engines_of_name(&def.db)? {
                        engine.truncate_table(&def.engine_name)?;
                    }
                    catalog.touch();
                }
            }
        }
        self.temp.sync(&catalog, &self.info.db);
        Ok(())
    }
    /// [`Self::execute_in_txn`] of a statement whose temporary tables'
    /// names are resolved.
    async fn execute_resolved(&mut self, stmt: Statement, params: &[ScalarValue]) -> Result<Output> {
        let route = route(&stmt);
        // Statements that do not touch a transaction.
        if route == Route::Settings {
            return crate::session::settings::try_execute(self, &stmt)?.ok_or_else(|| unsupported_statement(&stmt));
        }
        self.check_secondary(&stmt)?;
        if matches!(route, Route::Ddl | Route::CreateTableAs)
            && self.read_only()
            && let Some(command) = persistent_ddl_name(&stmt)
        {
            return Err(SqlError::new(
                code::READ_ONLY_TXN,
                format!("cannot execute {command} in a read-only transaction"),
            ));
        }
        match (route, &stmt) {
            (Route::CreateTableAs, Statement::CreateTable(ct)) if let Some(query) = &ct.query => {
                return create_as::create_table_as(self, ct, query).await;
            }
            (Route::Ddl, _) => {
                return crate::ddl::try_execute(self, &stmt).await?.ok_or_else(|| unsupported_statement(&stmt));
            }
            (Route::Unsupported, _) => return Err(unsupported_statement(&stmt)),
            _ => {}
        }
        let autocommit = self.block.is_none();
        self.ensure_txn()?;
        let deadline = self.statement_deadline();
        let sp = {
            let mut slot = self.txn.lock();
            let txn = slot.as_mut().expect("transaction");
            if txn.isolation() == Isolation::ReadCommitted {
                txn.refresh_snapshot();
            }
            txn.set_wait_deadline(deadline);
            txn.savepoint()
        };
        self.notes.lock().clear();
        if let Some(key) = &self.partition_key {
            crate::storage::keyed::check_names_row_group(&self.info.db, key, &stmt)?;
        }
        let result = self.run_statement(stmt, params).await;
        if let Ok(Output::CopyIn(_)) = &result {
            // The transaction stays open until the data has arrived.
            return result;
        }
        self.finish_statement(autocommit, sp, result).await
    }
    /// Runs a statement of the routes that work in the statement's
    /// transaction (begun, with its savepoint, by the caller).
    async fn run_statement(&mut self, stmt: Statement, params: &[ScalarValue]) -> Result<Output> {
        match (route(&stmt), stmt) {
            (Route::Query, Statement::Query(mut q)) => {
                if !q.locks.is_empty() {
                    return Err(SqlError::unsupported("SELECT … FOR UPDATE/SHARE (row locks)"));
                }
                let names = crate::rewrite::naming::alias_projection(&mut q);
                let plan = self.plan_query(Statement::Query(q), params).await?;
                Ok(rename(self.collect(plan).await?, names.as_ref()))
            }
            (Route::Dml, stmt) => {
                if self.read_only() && !writes_temp_table(&stmt) {
                    let command = match &stmt {
                        Statement::Insert(_) => "INSERT",
                        Statement::Update(_) => "UPDATE",
                        Statement::Delete(_) => "DELETE",
                        _ => "MERGE",
                    };
                    return Err(SqlError::new(
                        code::READ_ONLY_TXN,
                        format!("cannot execute {command} in a read-only transaction"),
                    ));
                }
                crate::exec::dml::execute(self, stmt, params).await
            }
            (Route::Explain, Statement::Explain { statement, analyze, verbose, .. }) => {
                crate::exec::explain::execute(self, *statement, analyze, verbose, params).await
            }
            (Route::Copy, Statement::Copy { source, to, target, options, legacy_options, .. }) => {
                if !to && self.read_only() {
                    return Err(SqlError::new(
                        code::READ_ONLY_TXN,
                        "cannot execute COPY FROM in a read-only transaction",
                    ));
                }
                crate::exec::copy::start(self, source, to, target, options, legacy_options).await
            }
            (_, other) => Err(unsupported_statement(&other)),
        }
    }
    /// Completes COPY FROM STDIN with the data received (or the client's error).
    pub async fn finish_copy(&mut self, copy: Box<CopyIn>, outcome: std::result::Result<(), String>) -> Result<Output> {
        let (autocommit, sp) = (copy.autocommit, copy.savepoint);
        let result = match outcome {
            Ok(()) => crate::exec::copy::finish(self, *copy).await,
            Err(msg) => Err(SqlError::new(code::QUERY_CANCELED, format!("COPY from stdin failed: {msg}"))),
        };
        let r = self.finish_statement(autocommit, sp, result).await;
        if r.is_err() {
            self.fail_block();
        }
        r
    }
    /// On a secondary: only reads, and only while the node is fresh enough.
    fn check_secondary(&self, stmt: &Statement) -> Result<()> {
        self.shared.refuse_writes(stmt)?;
        self.check_staleness()
    }
}

fn unsupported_statement(stmt: &Statement) -> SqlError {
    let text = stmt.to_string();
    let words: Vec<&str> = text.split_whitespace().take(2).collect();
    SqlError::unsupported(format!("the statement {}", words.join(" ")))
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.temp.is_empty()
            && let Err(e) = crate::ddl::drop_temporary(&mut self.temp, &self.shared.catalog, &self.info.db)
        {
            tracing::warn!(schema = %self.temp.schema(), error = %e.message, "could not drop a session's temporary tables");
        }
        let mut connected = self.shared.connected.lock();
        if let Some(n) = connected.get_mut(&self.info.db) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                connected.remove(&self.info.db);
            }
        }
    }
}

/// `START TRANSACTION` answers with its own tag, as in PostgreSQL.
fn start_tag(out: Output, begin: bool) -> Output {
    if begin { out } else { Output::Command("START TRANSACTION".into()) }
}

/// The command a read-only transaction refuses, as PostgreSQL names it;
/// None for DDL it allows there (on temporary tables, which are the
/// session's own).
fn persistent_ddl_name(stmt: &Statement) -> Option<String> {
    use datafusion::sql::sqlparser::ast::{CreateTable, Statement as S};
    match stmt {
        S::CreateTable(CreateTable { temporary: true, .. }) => None,
        S::Drop { temporary: true, .. } => None,
        S::Drop { object_type, .. } => Some(format!("DROP {object_type}")),
        _ => {
            let text = stmt.to_string();
            let words: Vec<&str> = text
                .split_whitespace()
                .take_while(|w| w.chars().all(|c| c.is_ascii_uppercase()))
                .filter(|w| !matches!(*w, "OR" | "REPLACE" | "UNIQUE"))
                .take(2)
                .collect();
            Some(words.join(" "))
        }
    }
}

/// Whether a DML statement's target is a temporary table, which a
/// read-only transaction may still write (it is the session's own).
fn writes_temp_table(stmt: &Statement) -> bool {
    use datafusion::sql::sqlparser::ast::{FromTable, ObjectName, TableFactor, TableObject};
    let stored = |name: &ObjectName| {
        let ident = name.0.last().and_then(|p| p.as_ident()).map(|i| i.value.clone()).unwrap_or_default();
        crate::storage::temp_names::is_temp(&ident)
    };
    let relation = |t: &TableFactor| matches!(t, TableFactor::Table { name, .. } if stored(name));
    match stmt {
        Statement::Insert(i) => matches!(&i.table, TableObject::TableName(name) if stored(name)),
        Statement::Update(u) => relation(&u.table.relation),
        Statement::Delete(d) => match &d.from {
            FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => {
                !t.is_empty() && t.iter().all(|t| relation(&t.relation))
            }
        },
        _ => false,
    }
}

/// `[NOT] DEFERRABLE` of a BEGIN, which the parser carries in the
/// modifier (see `parser::normalize::begin_deferrable`).
fn deferrable_of(modifier: &Option<datafusion::sql::sqlparser::ast::TransactionModifier>) -> Option<bool> {
    use datafusion::sql::sqlparser::ast::TransactionModifier;
    match modifier {
        Some(TransactionModifier::Deferred) => Some(true),
        Some(TransactionModifier::Immediate) => Some(false),
        _ => None,
    }
}
