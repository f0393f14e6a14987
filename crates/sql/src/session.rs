//! A client session: its transaction state, settings and statement dispatch.
//!
//! Every statement runs inside an engine transaction. Outside BEGIN … COMMIT
//! each statement gets its own (autocommit). Inside a block, a savepoint is
//! taken before each statement so a failed statement leaves no partial
//! effects; the block is then *aborted* and accepts only ROLLBACK (25P02), as
//! in PostgreSQL. Read committed refreshes the snapshot per statement.
//!
//! Isolation levels map onto the engine: READ COMMITTED → `ReadCommitted`,
//! REPEATABLE READ → `Snapshot` (what PostgreSQL provides under that name),
//! SERIALIZABLE → `Serializable`. READ UNCOMMITTED behaves as READ COMMITTED.
//!
//! DDL takes effect at once and is not undone by ROLLBACK (a documented
//! difference from PostgreSQL).

pub mod settings;
pub mod sql_engine;

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{ParamValues, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{Statement, TransactionIsolationLevel};
use parking_lot::Mutex;
use tessera_engine::Isolation;

use crate::storage::txn::{Savepoint, Txn};

mod blocks;

pub use crate::session::sql_engine::SqlEngine;

use crate::error::{Result, SqlError, code};
use crate::exec::copy::CopyIn;
use crate::plan::context::new_context;
use crate::plan::parse_sql;
use crate::scope::settings::Settings;
use crate::scope::{Resolver, SessionInfo};
use crate::storage::catalog::Catalog;
use crate::storage::provider::{ScanNotes, TxnSlot};

/// The result of one statement.
pub enum Output {
    Rows {
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
        tag: String,
    },
    Command(String),
    /// COPY … FROM STDIN: the caller streams the data into `CopyIn`, then
    /// calls [`Session::finish_copy`].
    CopyIn(Box<CopyIn>),
    /// COPY … TO STDOUT: the rows, already formatted, one chunk per row (a
    /// header line travels with the first row, as clients count chunks).
    CopyOut {
        chunks: Vec<Vec<u8>>,
        columns: usize,
        rows: usize,
        /// `FORMAT binary` (the trailer is the wire layer's to send).
        binary: bool,
    },
    Empty,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Output::Rows { tag, .. } => write!(f, "Rows({tag})"),
            Output::Command(t) => write!(f, "Command({t})"),
            Output::CopyIn(_) => write!(f, "CopyIn"),
            Output::CopyOut { rows, .. } => write!(f, "CopyOut({rows})"),
            Output::Empty => write!(f, "Empty"),
        }
    }
}

/// The transaction status PostgreSQL reports in ReadyForQuery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnStatus {
    Idle,
    InBlock,
    Failed,
}

pub struct Session {
    pub shared: Arc<SqlEngine>,
    pub info: Arc<SessionInfo>,
    pub(crate) txn: TxnSlot,
    pub(crate) notes: ScanNotes,
    pub(crate) ctx: SessionContext,
    scratch: crate::scope::Scratch,
    block: Option<Block>,
    /// Set by SET TRANSACTION before the first statement of a block.
    next_isolation: Option<Isolation>,
    /// Fast-path plans of simple-protocol queries, by template.
    pub(crate) templates: crate::exec::fast::TemplateCache,
    /// The database's partition key when it is keyed (fixed at creation).
    pub(crate) partition_key: Option<crate::storage::keyed::PartitionKey>,
    /// The database's home (fixed at creation): on a cluster, its group.
    home: Option<u32>,
    /// The row group the current transaction writes in (keyed databases).
    pub(crate) row_group: Option<crate::storage::keyed::RowGroup>,
    /// The session's temporary tables and views.
    pub(crate) temp: crate::plan::temp_tables::TempTables,
}

struct Block {
    /// Opened for a multi-statement query string rather than by BEGIN.
    implicit: bool,
    isolation: Isolation,
    read_only: bool,
    failed: bool,
    savepoints: Vec<(String, Savepoint)>,
    /// Why the block was given up from outside (its primary moved): the
    /// error its next statement reports, once (taken then; 25P02 after).
    /// Its transaction is gone, so a savepoint cannot revive it either.
    abandoned: Option<Mutex<Option<SqlError>>>,
}

fn level(l: &TransactionIsolationLevel) -> Isolation {
    match l {
        TransactionIsolationLevel::ReadUncommitted | TransactionIsolationLevel::ReadCommitted => {
            Isolation::ReadCommitted
        }
        TransactionIsolationLevel::RepeatableRead | TransactionIsolationLevel::Snapshot => Isolation::Snapshot,
        TransactionIsolationLevel::Serializable => Isolation::Serializable,
    }
}

impl Session {
    /// (Counted in `SqlEngine::connected` by the caller; `Drop` uncounts.)
    pub(crate) fn new(shared: Arc<SqlEngine>, user: &str, db: &str, pid: i32) -> Session {
        let temp = crate::plan::temp_tables::TempTables::new();
        let info = Arc::new(SessionInfo {
            temp_schema: temp.schema().to_string(),
            user: user.to_string(),
            db: db.to_string(),
            pid,
            settings: Mutex::new(Settings::defaults(shared.is_secondary())),
            catalog: shared.catalog.clone(),
        });
        let txn: TxnSlot = Arc::new(Mutex::new(None));
        let notes: ScanNotes = Arc::new(Mutex::new(Vec::new()));
        let resolver = Resolver {
            catalog: shared.catalog.clone(),
            db: db.to_string(),
            txn: txn.clone(),
            notes: notes.clone(),
            info: info.clone(),
            scratch: Default::default(),
        };
        let scratch = resolver.scratch.clone();
        let ctx = new_context(resolver);
        let partition_key = shared.catalog.database(db).and_then(|d| d.partition_key);
        let home = shared.catalog.database(db).and_then(|d| d.home);
        Session {
            shared,
            info,
            txn,
            notes,
            ctx,
            scratch,
            block: None,
            next_isolation: None,
            templates: Default::default(),
            partition_key,
            home,
            row_group: None,
            temp,
        }
    }

    pub(crate) fn set_scratch(&self, name: &str, batch: RecordBatch) {
        self.scratch.lock().insert(name.to_string(), batch);
    }

    pub(crate) fn clear_scratch(&self) {
        self.scratch.lock().clear();
    }

    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.shared.catalog
    }

    pub fn db(&self) -> &str {
        &self.info.db
    }

    /// `SELECT *` over USING joins in PostgreSQL's column order (`using_joins`).
    pub(crate) fn expand_using_wildcards(&self, stmt: &mut Statement) -> Result<()> {
        let columns = |table: &str| {
            self.catalog().table(&self.info.db, table).map(|d| d.columns.iter().map(|c| c.name.clone()).collect())
        };
        crate::rewrite::using_joins::expand(stmt, &columns)
    }

    /// Each view a statement reads replaced by its query (`views.rs`).
    pub(crate) fn expand_views(&self, stmt: &mut Statement) -> Result<()> {
        let catalog = self.catalog();
        let db = &self.info.db;
        if !crate::plan::views::names_a_view(stmt, &|n| catalog.view(db, n).is_some()) {
            return Ok(());
        }
        crate::plan::views::expand(stmt, &|n| catalog.view(db, n))
    }

    /// The session's `TimeZone`.
    pub fn zone(&self) -> crate::values::tz::Zone {
        self.info.settings.lock().hot().zone
    }

    pub fn status(&self) -> TxnStatus {
        match &self.block {
            None => TxnStatus::Idle,
            Some(b) if b.implicit => TxnStatus::Idle,
            Some(b) if b.failed => TxnStatus::Failed,
            Some(_) => TxnStatus::InBlock,
        }
    }

    fn default_isolation(&self) -> Isolation {
        self.info.settings.lock().hot().default_isolation.unwrap_or(Isolation::ReadCommitted)
    }

    /// The isolation of the current or next transaction.
    pub fn current_isolation(&self) -> Isolation {
        match &self.block {
            Some(b) => b.isolation,
            None => self.next_isolation.unwrap_or_else(|| self.default_isolation()),
        }
    }

    /// Runs every statement of a simple-protocol query string; stops at the
    /// first error, which is returned after the outputs that preceded it.
    pub async fn execute_sql(&mut self, sql: &str) -> (Vec<Output>, Option<SqlError>) {
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
        let mut outs = Vec::new();
        for stmt in stmts {
            match self.execute(stmt, &[]).await {
                Ok(o) => {
                    let is_copy = matches!(o, Output::CopyIn(_));
                    outs.push(o);
                    if is_copy {
                        break;
                    }
                }
                Err(e) => return (outs, Some(e)),
            }
        }
        (outs, None)
    }

    /// Inside an aborted transaction block.
    pub(crate) fn block_failed(&self) -> bool {
        self.block.as_ref().is_some_and(|b| b.failed)
    }

    /// Statements commit one by one (no block is open).
    pub(crate) fn autocommit(&self) -> bool {
        self.block.is_none()
    }

    /// An error (of any kind: a statement that did not even parse too)
    /// aborts an explicit transaction block, as in PostgreSQL.
    pub fn fail_block(&mut self) {
        if let Some(b) = &mut self.block {
            b.failed = true;
        }
    }

    /// Runs BEGIN, COMMIT/END and ROLLBACK (without savepoint), which need
    /// no planning, without entering the general path's machinery; None for
    /// other statements.
    pub async fn execute_control(&mut self, stmt: &Statement) -> Option<Result<Output>> {
        match stmt {
            Statement::StartTransaction { modes, begin, .. } => Some(self.begin(modes).map(|o| start_tag(o, *begin))),
            Statement::Commit { chain: false, .. } => Some(self.commit().await),
            Statement::Rollback { savepoint: None, chain: false } => Some(Ok(self.rollback())),
            _ => None,
        }
    }

    /// Runs one statement with parameter values.
    pub async fn execute(&mut self, stmt: Statement, params: &[ScalarValue]) -> Result<Output> {
        // Transaction control first: it works even in an aborted block.
        match &stmt {
            Statement::StartTransaction { modes, begin, .. } => {
                return self.begin(modes).map(|o| start_tag(o, *begin));
            }
            Statement::Commit { chain, .. } => return self.end_block(true, *chain).await,
            Statement::Rollback { savepoint: None, chain } => return self.end_block(false, *chain).await,
            Statement::Rollback { savepoint: Some(name), .. } => return self.rollback_to(&name.value),
            _ => {}
        }
        self.check_block_accepts(&stmt)?;
        match &stmt {
            Statement::Savepoint { name } => return self.savepoint(&name.value),
            Statement::ReleaseSavepoint { name } => return self.release(&name.value),
            _ => {}
        }
        let result = self.execute_in_txn(stmt, params).await;
        if result.is_err() {
            self.fail_block();
        }
        result
    }

    pub(crate) async fn execute_in_txn(&mut self, mut stmt: Statement, params: &[ScalarValue]) -> Result<Output> {
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
        // Statements that do not touch a transaction.
        if let Some(out) = crate::session::settings::try_execute(self, &stmt)? {
            return Ok(out);
        }
        self.check_secondary(&stmt)?;
        if let Some(out) = crate::ddl::try_execute(self, &stmt).await? {
            return Ok(out);
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

    /// Ends a statement: commits in autocommit mode, undoes a failed one.
    pub(crate) async fn finish_statement(
        &mut self,
        autocommit: bool,
        sp: Savepoint,
        result: Result<Output>,
    ) -> Result<Output> {
        match result {
            Ok(out) => {
                let txn = if autocommit { self.txn.lock().take() } else { None };
                if let Some(txn) = txn {
                    commit_txn(txn).await?;
                }
                Ok(out)
            }
            Err(e) => {
                let mut slot = self.txn.lock();
                if autocommit {
                    if let Some(txn) = slot.take() {
                        txn.abort();
                    }
                } else if let Some(txn) = slot.as_mut()
                    && txn.rollback_to(sp).is_err()
                {
                    // The engine ended the transaction (a commit-time failure).
                    slot.take();
                }
                Err(e)
            }
        }
    }

    /// In a keyed database, checks that the rows a statement writes belong
    /// to the transaction's row group, binding it at the first write.
    pub(crate) fn check_row_group<'r>(
        &mut self,
        def: &crate::storage::catalog::TableDef,
        rows: impl IntoIterator<Item = &'r Vec<u8>>,
    ) -> Result<()> {
        let Some(key) = &self.partition_key else { return Ok(()) };
        let Some(txn) = self.txn.lock().as_ref().map(|t| t.id()) else { return Ok(()) };
        crate::storage::keyed::check_rows(&self.info.db, key, def, txn, &mut self.row_group, rows)
    }

    /// When the statement starting now must give up waiting for rows held
    /// by other transactions (`statement_timeout`; None when it is off).
    pub(crate) fn statement_deadline(&self) -> Option<std::time::Instant> {
        let ms = self.info.settings.lock().hot().statement_timeout_ms;
        (ms > 0).then(|| std::time::Instant::now() + std::time::Duration::from_millis(ms))
    }

    /// A transaction of this session's database, on its home engine.
    pub(crate) fn begin_txn(&self, isolation: tessera_engine::Isolation) -> Result<Txn> {
        let (stream, engine) = self.shared.catalog.base_engine(&self.info.db)?;
        Txn::begin(&engine, stream, isolation)
    }

    pub(crate) fn ensure_txn(&mut self) -> Result<()> {
        let mut slot = self.txn.lock();
        if slot.is_none() {
            let isolation = self.current_isolation();
            let mut txn = self.begin_txn(isolation)?;
            if self.info.settings.lock().hot().lazy_commit {
                txn.set_durability(tessera_engine::Durability::Lazy);
            }
            *slot = Some(txn);
        }
        Ok(())
    }

    /// Whether the session reads on a secondary.
    pub(crate) fn on_secondary(&self) -> bool {
        self.shared.is_secondary()
    }

    pub(crate) fn read_only(&self) -> bool {
        self.shared.is_secondary() || self.block.as_ref().is_some_and(|b| b.read_only)
    }

    /// On a secondary: only reads, and only while the node is fresh enough.
    fn check_secondary(&self, stmt: &Statement) -> Result<()> {
        self.shared.refuse_writes(stmt)?;
        self.check_staleness()
    }

    /// On a secondary: the node is within this session's staleness bound.
    pub(crate) fn check_staleness(&self) -> Result<()> {
        if !self.shared.is_secondary() {
            // A primary serves while it holds its lease: its role watch
            // ends the session when it lapses, but only on its next look.
            if !self.shared.catalog.holds_lease(self.home) {
                return Err(SqlError::new(
                    code::CANNOT_CONNECT_NOW,
                    format!(
                        "this node's lease as the primary of database \"{}\" has lapsed (it may have lost its quorum or been replaced); the statement did not run",
                        self.info.db
                    ),
                )
                .with_hint("Retry: the next attempt reaches the database's primary.".to_string()));
            }
            // A node serving the databases whose groups it leads follows
            // the cluster's catalog (nothing on a primary's own catalog).
            return self.shared.catalog.refresh_if_changed();
        }
        let bound = std::time::Duration::from_millis(self.info.settings.lock().millis("tessera.max_staleness"));
        self.shared.check_staleness(bound)
    }

    async fn run_statement(&mut self, stmt: Statement, params: &[ScalarValue]) -> Result<Output> {
        match stmt {
            Statement::Query(q) => {
                if !q.locks.is_empty() {
                    return Err(SqlError::unsupported("SELECT … FOR UPDATE/SHARE (row locks)"));
                }
                let mut q = q;
                let names = crate::rewrite::naming::alias_projection(&mut q);
                let plan = self.plan_query(Statement::Query(q), params).await?;
                Ok(rename(self.collect(plan).await?, names.as_ref()))
            }
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
                if self.read_only() {
                    return Err(SqlError::new(code::READ_ONLY_TXN, "cannot execute DML in a read-only transaction"));
                }
                crate::exec::dml::execute(self, stmt, params).await
            }
            Statement::Explain { statement, analyze, verbose, .. } => {
                crate::exec::explain::execute(self, *statement, analyze, verbose, params).await
            }
            Statement::Copy { source, to, target, options, legacy_options, .. } => {
                crate::exec::copy::start(self, source, to, target, options, legacy_options).await
            }
            other => Err(unsupported_statement(&other)),
        }
    }

    /// Plans a query statement with DataFusion and binds parameters.
    pub(crate) async fn plan_query(&self, mut stmt: Statement, params: &[ScalarValue]) -> Result<LogicalPlan> {
        self.expand_views(&mut stmt)?;
        self.expand_using_wildcards(&mut stmt)?;
        crate::values::enums::rewrite_casts(&mut stmt, &|name| self.catalog().user_type(self.db(), name))?;
        crate::rewrite::strict::rewrite_statement(&mut stmt, self.zone())?;
        crate::plan::functions::rewrite_casts(&mut stmt);
        crate::rewrite::naming::name_function_columns(&mut stmt);
        let state = self.ctx.state();
        let plan = state.statement_to_plan(DFStatement::Statement(Box::new(stmt))).await.map_err(|e| {
            let mut e = SqlError::from(e);
            if let Some(db) = e.detail.as_deref().and_then(|d| d.strip_prefix(crate::error::CATALOG_MARK)) {
                if db != self.info.db {
                    return SqlError::unsupported(format!("cross-database references ({db}.…)"));
                }
                e.detail = None;
            }
            e
        })?;
        bind(plan, params)
    }

    /// Executes a plan. Engine reads happen while the physical plan is made
    /// (in the session's transaction); the rest runs as its own task, so a
    /// statement timeout or cancel can end the statement even while
    /// DataFusion computes without yielding (the task is aborted at its next
    /// yield point).
    pub(crate) async fn run_plan(&self, plan: LogicalPlan) -> Result<(SchemaRef, Vec<RecordBatch>)> {
        let df = self.ctx.execute_logical_plan(plan).await?;
        let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
        let task = query_runtime().spawn(df.collect());
        struct AbortOnDrop(tokio::task::AbortHandle);
        impl Drop for AbortOnDrop {
            fn drop(&mut self) {
                self.0.abort();
            }
        }
        let _guard = AbortOnDrop(task.abort_handle());
        let batches = task.await.map_err(|e| SqlError::internal(format!("query task failed: {e}")))??;
        Ok((schema, batches))
    }

    pub(crate) async fn collect(&self, plan: LogicalPlan) -> Result<Output> {
        let (schema, batches) = self.run_plan(plan).await?;
        let n: usize = batches.iter().map(|b| b.num_rows()).sum();
        Ok(Output::Rows { schema, batches, tag: format!("SELECT {n}") })
    }

    /// Starts the statement-level bookkeeping for a COPY that continues
    /// after the data arrives; returns (autocommit, savepoint).
    pub(crate) fn statement_state(&self) -> (bool, Savepoint) {
        let sp = self.txn.lock().as_mut().map(|t| t.savepoint()).expect("transaction");
        (self.block.is_none(), sp)
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
}

/// Commits. A durable commit awaits its group's fsync without holding a
/// runtime thread: the log's flusher finishes the commit and wakes this
/// task, so the commits of all connections share one fsync (group commit).
async fn commit_txn(txn: Txn) -> Result<()> {
    txn.commit().await
}

/// DataFusion's CPU-bound work runs on its own thread pool, so the
/// network runtime stays free to notice timeouts, cancels and other clients.
fn query_runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("tessera-query")
            .enable_all()
            .build()
            .expect("query runtime")
    })
}

/// What Describe reports about a statement before it runs.
pub struct Described {
    /// Inferred Arrow type of each `$n` (1-based).
    pub params: std::collections::HashMap<usize, datafusion::arrow::datatypes::DataType>,
    /// The SQL type of a `$n` when known more precisely than its Arrow type
    /// (an INSERT into a uuid column, an explicit `$1::varchar`).
    pub param_sql: std::collections::HashMap<usize, crate::values::types::SqlType>,
    /// The result columns, when the statement returns rows.
    pub schema: Option<SchemaRef>,
}

impl Session {
    /// Parameter types and result columns of a statement, for the extended protocol.
    pub async fn describe(&mut self, stmt: &Statement) -> Result<Described> {
        let mut resolved = stmt.clone();
        self.temp.resolve(&mut resolved)?;
        let stmt = &resolved;
        // A secondary's catalog follows DDL replicated since it was loaded.
        self.shared.catalog.refresh_if_changed()?;
        let mut params = std::collections::HashMap::new();
        let mut param_sql = std::collections::HashMap::new();
        let mut schema = None;
        // `$n::type` fixes the parameter's type (DataFusion does not infer it).
        let _ = datafusion::sql::sqlparser::ast::visit_expressions(stmt, |e| {
            if let datafusion::sql::sqlparser::ast::Expr::Cast { expr, data_type, .. } = e
                && let datafusion::sql::sqlparser::ast::Expr::Value(v) = expr.as_ref()
                && let datafusion::sql::sqlparser::ast::Value::Placeholder(p) = &v.value
                && let Some(n) = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok())
                && let Ok(t) = crate::values::types::SqlType::parse(&data_type.to_string())
            {
                params.entry(n).or_insert(t.arrow_type());
                param_sql.entry(n).or_insert(t);
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        let add =
            |plan: &LogicalPlan,
             params: &mut std::collections::HashMap<usize, datafusion::arrow::datatypes::DataType>| {
                if let Ok(types) = plan.get_parameter_types() {
                    for (k, v) in types {
                        if let (Some(n), Some(t)) = (k.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()), v) {
                            params.entry(n).or_insert(t);
                        }
                    }
                }
            };
        // `col = $n` with a uuid, json or char column: DataFusion sees text,
        // the client should see the column's type.
        let mut tables = Vec::new();
        let _ = datafusion::sql::sqlparser::ast::visit_relations(stmt, |r| {
            if let Some(name) = r.0.last().and_then(|p| p.as_ident())
                && let Some(t) =
                    self.catalog().table(self.db(), &crate::parser::normalize(&name.value, name.quote_style))
            {
                tables.push(t);
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        let _ = datafusion::sql::sqlparser::ast::visit_expressions(stmt, |e| {
            use datafusion::sql::sqlparser::ast::Expr;
            if let Expr::BinaryOp { left, right, .. } = e {
                let placeholder = |x: &Expr| match x {
                    Expr::Value(v) => match &v.value {
                        datafusion::sql::sqlparser::ast::Value::Placeholder(p) => {
                            p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok())
                        }
                        _ => None,
                    },
                    _ => None,
                };
                let column = |x: &Expr| match x {
                    Expr::Identifier(i) => Some(crate::parser::normalize(&i.value, i.quote_style)),
                    Expr::CompoundIdentifier(p) => p.last().map(|i| crate::parser::normalize(&i.value, i.quote_style)),
                    _ => None,
                };
                let pair = match (placeholder(left), placeholder(right)) {
                    (None, Some(n)) => column(left).map(|c| (c, n)),
                    (Some(n), None) => column(right).map(|c| (c, n)),
                    _ => None,
                };
                if let Some((c, n)) = pair {
                    let types: Vec<crate::values::types::SqlType> =
                        tables.iter().filter_map(|t| t.column(&c).map(|c| c.ty)).collect();
                    if let [ty] = types.as_slice()
                        && matches!(
                            ty,
                            crate::values::types::SqlType::Uuid
                                | crate::values::types::SqlType::Json
                                | crate::values::types::SqlType::Jsonb
                                | crate::values::types::SqlType::Char(_)
                                | crate::values::types::SqlType::Varchar(_)
                        )
                    {
                        param_sql.entry(n).or_insert(*ty);
                    }
                }
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        match stmt {
            Statement::Query(q) => {
                let state = self.ctx.state();
                let mut q = q.clone();
                let names = crate::rewrite::naming::alias_projection(&mut q);
                let mut stmt = Statement::Query(q);
                self.expand_views(&mut stmt)?;
                self.expand_using_wildcards(&mut stmt)?;
                crate::values::enums::rewrite_casts(&mut stmt, &|name| self.catalog().user_type(self.db(), name))?;
                crate::rewrite::strict::rewrite_statement(&mut stmt, self.zone())?;
                crate::plan::functions::rewrite_casts(&mut stmt);
                crate::rewrite::naming::name_function_columns(&mut stmt);
                let plan = state.statement_to_plan(DFStatement::Statement(Box::new(stmt))).await?;
                add(&plan, &mut params);
                // The result's types are those after Tessera's analyzer rules
                // (`1` is an integer, a quotient has its scale), as the
                // execution's will be; a plan they cannot analyze before its
                // parameters have types keeps the planner's.
                let analyzed = state.analyzer().execute_and_check(plan.clone(), state.config_options(), |_, _| {});
                let plan = analyzed.unwrap_or(plan);
                let s: SchemaRef = Arc::new(plan.schema().as_arrow().clone());
                schema = Some(match &names {
                    Some(n) => rename_schema(&s, n),
                    None => s,
                });
            }
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
                for (n, t) in crate::exec::dml_params::dml_param_types(self, stmt)? {
                    params.insert(n, t.arrow_type());
                    param_sql.insert(n, t);
                }
                if let Some(sql) = crate::exec::dml_params::where_probe(self, stmt)? {
                    let probe = parse_sql(&sql)?.pop().expect("statement");
                    let state = self.ctx.state();
                    if let Ok(plan) = state.statement_to_plan(DFStatement::Statement(Box::new(probe))).await {
                        add(&plan, &mut params);
                    }
                }
                schema = crate::exec::dml::returning_schema(self, stmt).await?;
            }
            Statement::ShowVariable { variable } => {
                let name: Vec<String> = variable.iter().map(|i| i.value.clone()).collect();
                let name = name.join(" ");
                let col = if name.eq_ignore_ascii_case("all") { "name".to_string() } else { name.to_lowercase() };
                schema = Some(Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
                    datafusion::arrow::datatypes::Field::new(col, datafusion::arrow::datatypes::DataType::Utf8, true),
                ])));
                if name.eq_ignore_ascii_case("all") {
                    schema = None;
                }
            }
            Statement::Explain { .. } => {
                schema = Some(Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
                    datafusion::arrow::datatypes::Field::new(
                        "QUERY PLAN",
                        datafusion::arrow::datatypes::DataType::Utf8,
                        false,
                    ),
                ])));
            }
            _ => {}
        }
        Ok(Described { params, param_sql, schema })
    }

    /// Undoes a statement that was interrupted (statement timeout, cancel).
    pub fn abort_statement(&mut self) {
        match &mut self.block {
            None => {
                if let Some(t) = self.txn.lock().take() {
                    t.abort();
                }
            }
            Some(b) => b.failed = true,
        }
    }
}

/// Gives result fields their PostgreSQL names (which may repeat).
pub(crate) fn rename(out: Output, names: Option<&crate::rewrite::naming::ResultNames>) -> Output {
    let Some(names) = names else { return out };
    match out {
        Output::Rows { schema, batches, tag } => {
            let renamed = rename_schema(&schema, names);
            if Arc::ptr_eq(&renamed, &schema) {
                return Output::Rows { schema, batches, tag };
            }
            let batches = batches
                .into_iter()
                .map(|b| RecordBatch::try_new(renamed.clone(), b.columns().to_vec()).unwrap_or(b))
                .collect();
            Output::Rows { schema: renamed, batches, tag }
        }
        other => other,
    }
}

pub(crate) fn rename_schema(schema: &SchemaRef, names: &crate::rewrite::naming::ResultNames) -> SchemaRef {
    use crate::rewrite::naming::ResultNames;
    let fields: Vec<datafusion::arrow::datatypes::Field> = match names {
        ResultNames::Positional(names) if schema.fields().len() == names.len() => {
            schema.fields().iter().zip(names).map(|(f, n)| f.as_ref().clone().with_name(n)).collect()
        }
        ResultNames::Aliased(renamed) if !renamed.is_empty() => schema
            .fields()
            .iter()
            .map(|f| match renamed.iter().find(|(alias, _)| alias == f.name()) {
                Some((_, name)) => f.as_ref().clone().with_name(name),
                None => f.as_ref().clone(),
            })
            .collect(),
        _ => return schema.clone(),
    };
    Arc::new(datafusion::arrow::datatypes::Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// Binds `$n` parameters (already of the types the plan inferred).
pub(crate) fn bind(plan: LogicalPlan, params: &[ScalarValue]) -> Result<LogicalPlan> {
    if params.is_empty() {
        return Ok(plan);
    }
    Ok(plan.with_param_values(ParamValues::List(params.iter().map(|v| v.clone().into()).collect()))?)
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
