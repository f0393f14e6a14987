//! A client session's state: its transaction, settings, catalog and
//! DataFusion context, and what every statement's handler asks of it
//! (plan and run a query, begin or join the statement's transaction, finish
//! it). Where a statement goes, transaction blocks and Describe are
//! `dispatch`'s, the layer above the handlers.
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

pub(crate) mod fast_path;
pub mod settings;
pub(crate) mod sql_engine;

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

pub use crate::session::sql_engine::SqlEngine;

pub use crate::scope::output::Output;

use crate::error::{Result, SqlError, code};
use crate::plan::context::new_context;
use crate::scope::settings::Settings;
use crate::scope::{Resolver, SessionInfo};
use crate::storage::catalog::Catalog;
use crate::storage::provider::{ScanNotes, TxnSlot};

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
    pub(crate) scratch: crate::scope::Scratch,
    /// The catalog snapshot the statement being planned reads (shared
    /// with the resolver; see `scope::pin_schema`).
    pub(crate) schema: crate::scope::SchemaPin,
    pub(crate) block: Option<Block>,
    /// Set by SET TRANSACTION before the first statement of a block.
    pub(crate) next_isolation: Option<Isolation>,
    /// Fast-path plans of simple-protocol queries, by template.
    pub(crate) templates: crate::fast::TemplateCache,
    /// The database's partition key when it is keyed (fixed at creation).
    pub(crate) partition_key: Option<crate::storage::keyed::PartitionKey>,
    /// The database's home (fixed at creation): on a cluster, its group.
    pub(crate) home: Option<u32>,
    /// The row group the current transaction writes in (keyed databases).
    pub(crate) row_group: Option<crate::storage::keyed::RowGroup>,
    /// The session's temporary tables and views.
    pub(crate) temp: crate::plan::temp_tables::TempTables,
}

/// An open transaction block (BEGIN … COMMIT, or a multi-statement
/// query string's implicit one); `dispatch::blocks` runs it.
pub(crate) struct Block {
    /// Opened for a multi-statement query string rather than by BEGIN.
    pub(crate) implicit: bool,
    pub(crate) isolation: Isolation,
    pub(crate) read_only: bool,
    /// DEFERRABLE: Tessera's read-only transactions never fail to
    /// serialize (they read one snapshot and validate nothing), so it only
    /// shows in `transaction_deferrable`.
    pub(crate) deferrable: bool,
    pub(crate) failed: bool,
    /// A query (not SET, SHOW or transaction control) has run in it: its
    /// isolation level and read-write mode are fixed from then on.
    pub(crate) queried: bool,
    pub(crate) savepoints: Vec<OpenSavepoint>,
    /// Why the block was given up from outside (its primary moved): the
    /// error its next statement reports, once (taken then; 25P02 after).
    /// Its transaction is gone, so a savepoint cannot revive it either.
    pub(crate) abandoned: Option<Mutex<Option<SqlError>>>,
    /// The temporary relations the block created (their names given, and
    /// how many savepoints were open then): a rollback drops them.
    pub(crate) temp_created: Vec<(String, usize)>,
}

/// A savepoint open in a block.
pub(crate) struct OpenSavepoint {
    /// Its name, lowercased.
    pub(crate) name: String,
    pub(crate) engine: Savepoint,
    /// The block's read-only mode when it was taken: PostgreSQL's
    /// subtransaction keeps its own, so its end (RELEASE or ROLLBACK TO)
    /// restores this one.
    pub(crate) read_only: bool,
}

pub(crate) fn level(l: &TransactionIsolationLevel) -> Isolation {
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
            block_started: std::sync::atomic::AtomicI64::new(0),
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
            schema: Default::default(),
        };
        let scratch = resolver.scratch.clone();
        let schema = resolver.schema.clone();
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
            schema,
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
        let schema = self.pin_schema();
        let columns = |table: &str| {
            let def = schema.snapshot.table(&self.info.db, table)?;
            Some(def.columns.iter().map(|c| c.name.clone()).collect())
        };
        crate::rewrite::using_joins::expand(stmt, &columns)
    }

    /// Each view a statement reads replaced by its query (`views.rs`).
    pub(crate) fn expand_views(&self, stmt: &mut Statement) -> Result<()> {
        let schema = self.pin_schema();
        let db = &self.info.db;
        if !crate::plan::views::names_a_view(stmt, &|n| schema.snapshot.view(db, n).is_some()) {
            return Ok(());
        }
        crate::plan::views::expand(stmt, &|n| schema.snapshot.view(db, n).cloned())
    }

    /// Pins the catalog snapshot this session's statement plans against
    /// (`scope::pin_schema`) until the guard drops.
    pub(crate) fn pin_schema(&self) -> crate::scope::PinnedSchema {
        crate::scope::pin_schema(&self.schema, self.catalog())
    }

    /// The session's `TimeZone`.
    pub fn zone(&self) -> crate::values::tz::Zone {
        self.info.settings.lock().hot().zone
    }

    /// The settings that shape text output (`TimeZone`, `IntervalStyle`).
    pub fn text_style(&self) -> crate::values::text::TextStyle {
        let hot = self.info.settings.lock().hot();
        crate::values::text::TextStyle {
            zone: hot.zone,
            interval: hot.interval_style,
            float_digits: hot.extra_float_digits,
            bytea_escape: hot.bytea_escape,
        }
    }

    pub fn status(&self) -> TxnStatus {
        match &self.block {
            None => TxnStatus::Idle,
            Some(b) if b.implicit => TxnStatus::Idle,
            Some(b) if b.failed => TxnStatus::Failed,
            Some(_) => TxnStatus::InBlock,
        }
    }

    pub(crate) fn default_isolation(&self) -> Isolation {
        self.info.settings.lock().hot().default_isolation.unwrap_or(Isolation::ReadCommitted)
    }

    /// The isolation of the current or next transaction.
    pub fn current_isolation(&self) -> Isolation {
        match &self.block {
            Some(b) => b.isolation,
            None => self.next_isolation.unwrap_or_else(|| self.default_isolation()),
        }
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
        self.shared.is_secondary()
            || match &self.block {
                Some(b) => b.read_only,
                // A statement outside a block is a transaction of its own,
                // with default_transaction_read_only's mode.
                None => self.info.settings.lock().hot().default_read_only,
            }
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

    /// Plans a query statement with DataFusion and binds parameters.
    /// Every name resolves against one catalog snapshot, pinned for the
    /// planning.
    pub(crate) async fn plan_query(&self, mut stmt: Statement, params: &[ScalarValue]) -> Result<LogicalPlan> {
        let schema = self.pin_schema();
        self.expand_views(&mut stmt)?;
        self.expand_using_wildcards(&mut stmt)?;
        crate::values::enums::rewrite_casts(&mut stmt, &|name| schema.snapshot.user_type(self.db(), name).cloned())?;
        crate::rewrite::strict::rewrite_statement(&mut stmt, self.text_style())?;
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
        let (state, plan) = df.into_parts();
        let cancelled = Arc::new(crate::plan::subplans::Cancelled::default());
        let flag = cancelled.clone();
        // Planned where it runs: a subquery run per outer row
        // (`plan::subplans`) blocks a query thread while it runs.
        let task = query_runtime().spawn(async move {
            let physical = crate::plan::subplans::physical_plan(&state, plan, &flag).await?;
            datafusion::physical_plan::collect(physical, state.task_ctx()).await
        });
        struct AbortOnDrop(tokio::task::AbortHandle, Arc<crate::plan::subplans::Cancelled>);
        impl Drop for AbortOnDrop {
            fn drop(&mut self) {
                self.1.0.store(true, std::sync::atomic::Ordering::Relaxed);
                self.0.abort();
            }
        }
        let _guard = AbortOnDrop(task.abort_handle(), cancelled);
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
}

/// Commits. A durable commit awaits its group's fsync without holding a
/// runtime thread: the log's flusher finishes the commit and wakes this
/// task, so the commits of all connections share one fsync (group commit).
pub(crate) async fn commit_txn(txn: Txn) -> Result<()> {
    txn.commit().await
}

/// Runs a physical plan to its rows on the query threads (where a
/// subquery run per outer row may block its thread, `plan::subplans`).
pub(crate) async fn collect_on_query_runtime(
    physical: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
    task_ctx: Arc<datafusion::execution::TaskContext>,
) -> Result<Vec<RecordBatch>> {
    let task = query_runtime().spawn(datafusion::physical_plan::collect(physical, task_ctx));
    Ok(task.await.map_err(|e| SqlError::internal(format!("query task failed: {e}")))??)
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
