//! The engine: one partition's tables, its transactions, its log and its
//! checkpoints.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, RwLock};
use tessera_log::{Log, LogConfig, LogError};

use crate::checkpoint::{CheckpointState, CheckpointStats};
use crate::clock::{Sequencer, TxnTable};
use crate::error::{EngineError, Result};
use crate::gc::Gc;
use crate::index::Index;
use crate::record::{DdlOp, encode_ddl};
use crate::schema::{IndexId, IndexSpec, TableId, TableSpec};
use crate::table::{Table, index_key};
use crate::txn::{Durability, Isolation, Transaction};

/// Where a commit's after-images go, and how the engine learns they are
/// durable. The local group-committed log implements it today; a replicated
/// log, where durable means "a quorum has it", implements it in a cluster.
pub trait CommitLog: Send + Sync {
    /// Hands over one commit record; returns a ticket for `wait_durable`.
    fn append(&self, record: &[u8]) -> Result<u64, LogError>;
    /// Blocks until the record with this ticket is durable.
    fn wait_durable(&self, ticket: u64) -> Result<(), LogError>;
    /// Whether the record with this ticket is durable; if not, `cx`'s waker
    /// is woken once it is (or once it never will be: polling again then
    /// returns the error). Wakers are called without the log's locks held.
    fn poll_durable(&self, ticket: u64, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), LogError>>;
    /// Whether a commit whose waiter went away must still be waited for
    /// before the waiter's thread moves on. A local log says yes (the fsync
    /// is seconds at worst); a replicated log, whose answer may take as long
    /// as the quorum is away, says no: it keeps the commit's waker and
    /// finishes the commit whenever the outcome is known.
    fn wait_when_abandoned(&self) -> bool {
        true
    }
    /// Whether a lazily durable commit may be acknowledged before its
    /// record is durable. A replicated log says no: a commit the quorum
    /// never gets would leave the primary's engine ahead of its replicas.
    fn allows_lazy(&self) -> bool {
        true
    }
    /// Whether the log is one ordered sequence in which a record is durable
    /// only if every record appended before it is, and a failure fails every
    /// later record too (a local log: one file, a prefix survives a crash,
    /// the first error poisons it). Such a log lets a writer build on a
    /// commit whose record is appended but not yet durable (Hekaton's commit
    /// dependency): the later record can never outlive the earlier one.
    fn ordered(&self) -> bool {
        false
    }
}

/// Makes the commit log of each stream of a node whose commits are
/// replicated rather than written to a local log.
#[derive(Clone)]
pub struct CommitLogSource(pub Arc<dyn Fn(u32) -> Box<dyn CommitLog> + Send + Sync>);

impl std::fmt::Debug for CommitLogSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CommitLogSource")
    }
}

/// The node's local log, seen as one partition's commit log.
pub struct LocalCommitLog {
    pub log: Arc<Log>,
    pub stream: u32,
}

impl CommitLog for LocalCommitLog {
    fn append(&self, record: &[u8]) -> Result<u64, LogError> {
        self.log.append(self.stream, record)
    }
    fn wait_durable(&self, ticket: u64) -> Result<(), LogError> {
        self.log.wait_durable(ticket)
    }
    fn poll_durable(&self, ticket: u64, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), LogError>> {
        self.log.poll_durable(ticket, cx)
    }
    fn ordered(&self) -> bool {
        true
    }
}

#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Data directory (`log/` and `checkpoint/` beneath it). None: purely
    /// in memory, no log ("log off").
    pub dir: Option<PathBuf>,
    /// Default durability of commits (a transaction may override it).
    pub durability: Durability,
    /// Lazy commits reach the disk within this interval.
    pub lazy_flush_interval: Duration,
    /// Log segment size.
    pub segment_bytes: u64,
    /// A background checkpoint starts when this many log bytes accumulated
    /// since the last one (0 disables automatic checkpoints).
    pub checkpoint_log_bytes: u64,
    /// Merge checkpoint data files when there are more than this many.
    pub checkpoint_merge_files: usize,
    /// The stream id of this partition in the shared log.
    pub stream: u32,
    /// Threads used to load checkpoint files at recovery.
    pub recovery_threads: usize,
    /// Fault injection for tests: make the log's writes or fsyncs fail.
    pub log_faults: Option<Arc<tessera_log::FaultInjector>>,
    /// Write into the node's shared log (under `stream`) instead of a log of
    /// this engine's own in `dir/log`. `dir` still holds the checkpoints.
    pub shared_log: Option<Arc<crate::shared_log::SharedLog>>,
    /// How long a read-committed writer waits for another transaction that
    /// holds the row it wants (PostgreSQL waits on the row lock).
    pub lock_timeout: Duration,
    /// The stream was allocated just now and never written: a partition
    /// without a checkpoint then has nothing to replay, so recovery skips
    /// reading the shared log (which other partitions may have filled).
    pub fresh_stream: bool,
    /// Commits go to this replicated log instead of a local one (`dir` is
    /// then None: the replicated log is the engine's durability, and the
    /// engine is rebuilt from it at start).
    pub commit_log: Option<CommitLogSource>,
}

impl EngineConfig {
    pub fn in_memory() -> Self {
        EngineConfig {
            dir: None,
            durability: Durability::Synchronous,
            lazy_flush_interval: Duration::from_millis(10),
            segment_bytes: 64 << 20,
            checkpoint_log_bytes: 256 << 20,
            checkpoint_merge_files: 8,
            stream: 0,
            recovery_threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
            log_faults: None,
            shared_log: None,
            lock_timeout: Duration::from_secs(60),
            fresh_stream: false,
            commit_log: None,
        }
    }

    pub fn durable(dir: impl Into<PathBuf>) -> Self {
        EngineConfig { dir: Some(dir.into()), ..Self::in_memory() }
    }
}

#[derive(Default)]
pub(crate) struct Catalog {
    pub by_name: HashMap<String, Arc<Table>>,
    pub by_id: HashMap<TableId, Arc<Table>>,
    pub next_table_id: TableId,
}

pub struct EngineInner {
    pub(crate) config: EngineConfig,
    pub(crate) seq: Sequencer,
    pub(crate) txns: TxnTable,
    pub(crate) gc: Gc,
    pub(crate) catalog: RwLock<Catalog>,
    pub(crate) log: Option<Box<dyn CommitLog>>,
    pub(crate) local_log: Option<Arc<Log>>,
    pub(crate) checkpoint: Mutex<CheckpointState>,
    read_only: Mutex<Option<String>>,
    is_read_only: AtomicBool,
    /// Live version records (allocated minus freed).
    pub(crate) versions: crate::clock::StripedCounter,
    shutdown: (Mutex<bool>, Condvar),
    /// Serializes DDL operations.
    pub(crate) ddl: Mutex<()>,
    /// Active transactions that have written (or tried to): the replica
    /// apply path waits for them, not for readers.
    pub(crate) writers: std::sync::atomic::AtomicUsize,
    /// The log is ordered ([`CommitLog::ordered`]): read-committed writers
    /// build on logged commits instead of waiting for their durability.
    pub(crate) builds_on_logged: bool,
    /// How many times a checkpoint replaced everything the engine holds
    /// ([`Engine::restore_checkpoint`]), counted when each is complete.
    restores: std::sync::atomic::AtomicU64,
}

impl EngineInner {
    pub(crate) fn new(config: EngineConfig, local_log: Option<Arc<Log>>) -> Self {
        let log: Option<Box<dyn CommitLog>> = match &config.commit_log {
            Some(source) => Some((source.0)(config.stream)),
            None => local_log
                .clone()
                .map(|log| Box::new(LocalCommitLog { log, stream: config.stream }) as Box<dyn CommitLog>),
        };
        let builds_on_logged = log.as_ref().is_some_and(|l| l.ordered());
        EngineInner {
            builds_on_logged,
            config,
            seq: Sequencer::new(0),
            txns: TxnTable::new(),
            gc: Gc::default(),
            catalog: RwLock::new(Catalog { next_table_id: 1, ..Default::default() }),
            log,
            local_log,
            checkpoint: Mutex::new(CheckpointState::default()),
            read_only: Mutex::new(None),
            is_read_only: AtomicBool::new(false),
            versions: crate::clock::StripedCounter::default(),
            shutdown: (Mutex::new(false), Condvar::new()),
            ddl: Mutex::new(()),
            writers: std::sync::atomic::AtomicUsize::new(0),
            restores: std::sync::atomic::AtomicU64::new(0),
        }
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.is_read_only.load(Relaxed) {
            let reason = self.read_only.lock().clone().unwrap_or_default();
            return Err(EngineError::ReadOnly(reason));
        }
        Ok(())
    }

    /// After a log failure the engine keeps serving reads but refuses writes:
    /// the in-memory state may hold lazily committed data the disk lost, and
    /// only a restart (recovery from the files) re-establishes the truth.
    pub(crate) fn fail(&self, err: &LogError) {
        if err.is_replication() || err.is_refused_record() {
            // The replica set failed the commit, not this node's disk; or
            // the log refused this one record (too large) and took nothing.
            return;
        }
        let mut r = self.read_only.lock();
        if r.is_none() {
            tracing::error!(error = %err, "commit log failed; the engine is now read-only");
            *r = Some(err.to_string());
        }
        self.is_read_only.store(true, SeqCst);
    }

    /// Runs a DDL operation through the sequencer and the log (always
    /// synchronously durable), then applies it.
    fn run_ddl<T>(&self, op: DdlOp, apply: impl FnOnce() -> Result<T>) -> Result<T> {
        self.check_writable()?;
        let ts = self.seq.assign();
        if let Some(log) = &self.log
            && let Err(e) = log.append(&encode_ddl(ts, &op)).and_then(|t| log.wait_durable(t))
        {
            self.fail(&e);
            self.seq.finish(ts);
            return Err(EngineError::CommitFailed(e));
        }
        let out = apply();
        self.seq.finish(ts);
        self.seq.wait_visible(ts);
        out
    }

    /// Applies a DDL operation to the in-memory catalog (also used by
    /// recovery and replicas).
    pub(crate) fn apply_ddl(&self, op: &DdlOp) -> Result<()> {
        let mut cat = self.catalog.write();
        match op {
            DdlOp::CreateTable(spec) => {
                let table = Arc::new(Table::new(spec.clone()));
                cat.by_name.insert(spec.name.clone(), table.clone());
                cat.by_id.insert(spec.id, table);
                cat.next_table_id = cat.next_table_id.max(spec.id + 1);
            }
            DdlOp::DropTable(id) => {
                if let Some(t) = cat.by_id.remove(id) {
                    cat.by_name.remove(&t.name());
                }
            }
            DdlOp::TruncateTable { old, new } => {
                if let Some(t) = cat.by_id.remove(old) {
                    let mut spec = (*t.spec()).clone();
                    spec.id = *new;
                    let table = Arc::new(Table::new(spec.clone()));
                    cat.by_name.insert(spec.name.clone(), table.clone());
                    cat.by_id.insert(*new, table);
                }
                cat.next_table_id = cat.next_table_id.max(*new + 1);
            }
            DdlOp::CreateIndex(tid, ix) => {
                let table = cat.by_id.get(tid).cloned().ok_or_else(|| EngineError::NoSuchTable(format!("id {tid}")))?;
                drop(cat);
                build_index(&table, ix.clone())?;
            }
            DdlOp::DropIndex(tid, ix) => {
                if let Some(table) = cat.by_id.get(tid) {
                    forget_index(table, *ix);
                }
            }
        }
        Ok(())
    }

    pub(crate) fn table_by_id(&self, id: TableId) -> Option<Arc<Table>> {
        self.catalog.read().by_id.get(&id).cloned()
    }
}

/// Removes an index from a table's in-memory definition and structures.
fn forget_index(table: &Table, id: IndexId) {
    table.remove_secondary(id);
    let mut spec = (*table.spec()).clone();
    spec.secondary.retain(|i| i.id != id);
    table.set_spec(spec);
}

/// Adds an index to a table and fills it from every existing version.
/// Writers that start after the index is registered maintain it themselves;
/// writes already in progress finish before registration (see `Table::ddl`).
fn build_index(table: &Arc<Table>, ix: IndexSpec) -> Result<()> {
    let index = Arc::new(Index::new(ix.clone()));
    {
        let _quiesce = table.ddl.write();
        table.add_secondary(index.clone());
        let mut spec = (*table.spec()).clone();
        spec.secondary.push(ix.clone());
        spec.next_index_id = spec.next_index_id.max(ix.id + 1);
        table.set_spec(spec);
    }
    let guard = crossbeam_epoch::pin();
    let sguard = scc::Guard::new();
    let mut live: HashMap<Vec<u8>, usize> = HashMap::new();
    for (_, row) in table.rows.iter(&sguard) {
        // A removed row has no versions.
        let mut newest = true;
        for v in row.versions(&guard) {
            if v.begin.load(Acquire) != crate::mvcc::INFINITY {
                let (key, has_null) = index_key(&ix.columns, &v.data)?;
                index.add(&key, row);
                if ix.unique && newest && !has_null && v.end.load(Acquire) == crate::mvcc::INFINITY {
                    *live.entry(key).or_default() += 1;
                }
                newest = false;
            }
        }
    }
    if live.values().any(|&n| n > 1) {
        forget_index(table, ix.id);
        return Err(EngineError::UniqueViolation { table: table.name(), index: ix.name });
    }
    Ok(())
}

/// A storage engine instance: one partition.
pub struct Engine {
    inner: Arc<EngineInner>,
    background: Mutex<Option<JoinHandle<()>>>,
    /// Held for the engine's lifetime: a second process (or a second engine
    /// in this one) on the same directory would interleave two logs.
    _dir_lock: Option<std::fs::File>,
}

/// Takes the data directory's lock file (`LOCK`, an advisory `flock`, which
/// the kernel releases when the process dies, however it dies).
fn lock_data_dir(dir: &std::path::Path) -> Result<std::fs::File> {
    std::fs::create_dir_all(dir).map_err(|e| EngineError::io(format!("creating {}", dir.display()), e))?;
    let path = dir.join("LOCK");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| EngineError::io(format!("opening {}", path.display()), e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(EngineError::DataDirInUse(dir.to_path_buf())),
        Err(std::fs::TryLockError::Error(e)) => Err(EngineError::io(format!("locking {}", path.display()), e)),
    }
}

/// Counters for tests, benchmarks and system views.
#[derive(Debug, Clone, Default)]
pub struct EngineStats {
    pub versions: i64,
    pub versions_freed: u64,
    pub rows_removed: u64,
    pub gc_pending: usize,
    pub active_transactions: usize,
    pub last_commit_ts: u64,
    pub tables: usize,
}

impl Engine {
    /// Opens (recovering from checkpoint and log) or creates an engine.
    pub fn open(config: EngineConfig) -> Result<Engine> {
        let mut dir_lock = None;
        let inner = match &config.dir {
            None => Arc::new(EngineInner::new(config.clone(), None)),
            Some(dir) => {
                dir_lock = Some(lock_data_dir(dir)?);
                let log = match &config.shared_log {
                    Some(shared) => shared.log().clone(),
                    None => {
                        let mut log_config = LogConfig::new(dir.join("log"));
                        log_config.lazy_flush_interval = config.lazy_flush_interval;
                        log_config.segment_bytes = config.segment_bytes;
                        log_config.faults = config.log_faults.clone();
                        let (log, report) = Log::open(log_config)?;
                        if let Some(cut) = &report.cut_tail {
                            tracing::warn!(file = %cut.file.display(), offset = cut.offset, bytes = cut.discarded_bytes, reason = %cut.reason, "cut a torn log tail");
                        }
                        Arc::new(log)
                    }
                };
                let inner = Arc::new(EngineInner::new(config.clone(), Some(log)));
                crate::recovery::recover(&inner)?;
                if let Some(shared) = &config.shared_log {
                    shared.register(config.stream, inner.checkpoint.lock().log_end_at_checkpoint)?;
                }
                inner
            }
        };
        let engine = Engine { inner, background: Mutex::new(None), _dir_lock: dir_lock };
        if engine.inner.local_log.is_some() && engine.inner.config.checkpoint_log_bytes > 0 {
            let inner = engine.inner.clone();
            let handle = std::thread::Builder::new()
                .name("tessera-checkpoint".into())
                .spawn(move || checkpoint_loop(inner))
                .map_err(|e| EngineError::io("starting the checkpoint thread", e))?;
            *engine.background.lock() = Some(handle);
        }
        Ok(engine)
    }

    pub fn begin(&self, isolation: Isolation) -> Result<Transaction> {
        Transaction::new(self.inner.clone(), isolation)
    }

    pub fn create_table(&self, mut spec: TableSpec) -> Result<Arc<Table>> {
        spec.validate()?;
        let _ddl = self.inner.ddl.lock();
        {
            let mut cat = self.inner.catalog.write();
            if cat.by_name.contains_key(&spec.name) {
                return Err(EngineError::TableExists(spec.name));
            }
            spec.id = cat.next_table_id;
            cat.next_table_id += 1;
        }
        let name = spec.name.clone();
        let op = DdlOp::CreateTable(spec);
        self.inner.run_ddl(op.clone(), || self.inner.apply_ddl(&op))?;
        self.table(&name).ok_or_else(|| EngineError::Internal(format!("table {name} vanished after creation")))
    }

    pub fn drop_table(&self, name: &str) -> Result<()> {
        let _ddl = self.inner.ddl.lock();
        let table = self.table(name).ok_or_else(|| EngineError::NoSuchTable(name.into()))?;
        let op = DdlOp::DropTable(table.id);
        self.inner.run_ddl(op.clone(), || self.inner.apply_ddl(&op))
    }

    /// Empties a table in one durable step (TRUNCATE). The table keeps its
    /// name, columns and indexes under a new id; transactions still holding
    /// the old table handle write into the discarded rows, so the SQL layer
    /// must keep writers out while it truncates (PostgreSQL takes an
    /// exclusive lock). Returns the new handle.
    pub fn truncate_table(&self, name: &str) -> Result<Arc<Table>> {
        let _ddl = self.inner.ddl.lock();
        let table = self.table(name).ok_or_else(|| EngineError::NoSuchTable(name.into()))?;
        let new = {
            let mut cat = self.inner.catalog.write();
            let id = cat.next_table_id;
            cat.next_table_id += 1;
            id
        };
        let op = DdlOp::TruncateTable { old: table.id, new };
        self.inner.run_ddl(op.clone(), || self.inner.apply_ddl(&op))?;
        self.table(name).ok_or_else(|| EngineError::Internal(format!("table {name} vanished while truncating")))
    }

    pub fn create_index(&self, table: &str, mut index: IndexSpec) -> Result<()> {
        let _ddl = self.inner.ddl.lock();
        let t = self.table(table).ok_or_else(|| EngineError::NoSuchTable(table.into()))?;
        let spec = t.spec();
        if spec.index_by_name(&index.name).is_some() {
            return Err(EngineError::IndexExists(index.name));
        }
        if index.columns.is_empty() {
            return Err(EngineError::InvalidSchema(format!("index \"{}\" has no key columns", index.name)));
        }
        index.id = spec.next_index_id;
        self.inner.check_writable()?;
        // Build first (it may fail on duplicates), then log: replay rebuilds it.
        build_index(&t, index.clone())?;
        let op = DdlOp::CreateIndex(t.id, index.clone());
        self.inner.run_ddl(op, || Ok(())).inspect_err(|_| forget_index(&t, index.id))
    }

    pub fn drop_index(&self, table: &str, index: &str) -> Result<()> {
        let _ddl = self.inner.ddl.lock();
        let t = self.table(table).ok_or_else(|| EngineError::NoSuchTable(table.into()))?;
        let id: IndexId = t
            .spec()
            .secondary
            .iter()
            .find(|i| i.name == index)
            .map(|i| i.id)
            .ok_or_else(|| EngineError::NoSuchIndex(index.into()))?;
        let op = DdlOp::DropIndex(t.id, id);
        self.inner.run_ddl(op.clone(), || self.inner.apply_ddl(&op))
    }

    /// Makes this engine's tables exactly `specs` (by name, with exactly
    /// their secondary indexes): missing ones are created, extra indexes
    /// and tables dropped. Tables named `__…` (internal) are left alone.
    /// Idempotent: a schema change interrupted on some engines is finished
    /// by calling it again. Returns what it changed, in words.
    pub fn match_tables(&self, specs: &[TableSpec]) -> Result<Vec<String>> {
        let mut changed = Vec::new();
        for spec in specs {
            let Some(table) = self.table(&spec.name) else {
                changed.push(format!("created table {}", spec.name));
                self.create_table(spec.clone())?;
                continue;
            };
            let have = table.spec();
            for ix in have.secondary.iter().filter(|i| spec.index_by_name(&i.name).is_none()) {
                changed.push(format!("dropped index {} of {}", ix.name, spec.name));
                self.drop_index(&spec.name, &ix.name)?;
            }
            for ix in spec.secondary.iter().filter(|i| have.index_by_name(&i.name).is_none()) {
                changed.push(format!("created index {} of {}", ix.name, spec.name));
                let new = IndexSpec::new(ix.name.clone(), ix.kind, ix.unique, ix.columns.clone());
                self.create_index(&spec.name, new)?;
            }
        }
        for have in self.tables() {
            if !have.name.starts_with("__") && !specs.iter().any(|s| s.name == have.name) {
                changed.push(format!("dropped table {}", have.name));
                self.drop_table(&have.name)?;
            }
        }
        Ok(changed)
    }

    pub fn table(&self, name: &str) -> Option<Arc<Table>> {
        self.inner.catalog.read().by_name.get(name).cloned()
    }

    pub fn tables(&self) -> Vec<Arc<TableSpec>> {
        let mut v: Vec<_> = self.inner.catalog.read().by_id.values().map(|t| t.spec()).collect();
        v.sort_by_key(|s| s.id);
        v
    }

    /// Writes a checkpoint now (a no-op for an in-memory engine).
    pub fn checkpoint(&self) -> Result<Option<CheckpointStats>> {
        crate::checkpoint::checkpoint(&self.inner)
    }

    /// Collects all garbage that is collectable now.
    pub fn collect_garbage(&self) {
        self.inner.gc.drain(&self.inner);
    }

    /// Makes every commit so far durable (lazy ones included).
    pub fn flush(&self) -> Result<()> {
        if let Some(log) = &self.inner.local_log {
            log.flush()?;
        }
        Ok(())
    }

    /// Installs a commit or DDL record that a replicated log committed, as a
    /// replica does: after-images only, nothing validated, in log order.
    /// Local transactions must not write concurrently, so this first waits
    /// until no local writer is active (a primary that was just demoted may
    /// still be unwinding its sessions). Returns the record's timestamp.
    pub fn apply_committed(&self, record: &[u8]) -> Result<u64> {
        let entry = crate::record::decode(record, 0)?;
        let ts = entry.ts();
        self.wait_for_local_transactions();
        let rows = match &entry {
            crate::record::LogEntry::Commit { writes, .. } => writes.len(),
            crate::record::LogEntry::Ddl { .. } => 0,
        };
        crate::apply::apply_entry(&self.inner, &entry)?;
        self.raise_clock(ts);
        // A replica has no committing sessions to collect garbage
        // cooperatively: the apply path does their share (the versions it
        // replaced go to GC shard 0).
        self.inner.gc.work(&self.inner, 0, 2 * rows + 8);
        Ok(ts)
    }

    /// Replaces everything this engine holds with the checkpoint in `dir`
    /// (as [`crate::checkpoint::extend_checkpoint`] writes them): a replica
    /// installing a snapshot, or a node restarting from its last one. Like
    /// [`Engine::apply_committed`], it first waits until no local
    /// transaction is active. Returns the number of rows loaded.
    pub fn restore_checkpoint(&self, dir: &std::path::Path) -> Result<usize> {
        let manifest = crate::checkpoint::read_latest_manifest(dir)?;
        self.wait_for_local_transactions();
        let _ddl = self.inner.ddl.lock();
        let ids: Vec<_> = self.inner.catalog.read().by_id.keys().copied().collect();
        for id in ids {
            self.inner.apply_ddl(&crate::record::DdlOp::DropTable(id))?;
        }
        let rows = match manifest {
            None => 0,
            Some(m) => {
                let rows = crate::recovery::load_checkpoint(&self.inner, dir, &m)?;
                self.raise_clock(m.ckpt_ts);
                self.inner.gc.drain(&self.inner);
                rows
            }
        };
        self.inner.restores.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Ok(rows)
    }

    /// How many times a checkpoint has replaced everything this engine
    /// holds ([`Engine::restore_checkpoint`]; each counted once complete).
    /// Whoever keeps its tables (a replica's catalog) looks them up again
    /// when it moves: the tables it kept are gone.
    pub fn restores(&self) -> u64 {
        self.inner.restores.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether some local transaction has written something: a replica's
    /// [`Engine::apply_committed`] would then wait for it to end.
    pub fn has_local_writers(&self) -> bool {
        self.inner.writers.load(Relaxed) > 0
    }

    /// Waits until no local transaction has written anything: a replica
    /// installs committed after-images only where no local write marker
    /// can be. Readers may go on (a secondary serving reads): an entry's
    /// versions carry its timestamp, above every running reader's snapshot
    /// until the clock is raised after the entry is applied, so a reader
    /// sees an entry whole or not at all.
    fn wait_for_local_transactions(&self) {
        let started = std::time::Instant::now();
        let mut warned = false;
        while self.inner.writers.load(Relaxed) > 0 {
            if !warned && started.elapsed() > Duration::from_secs(5) {
                tracing::warn!(
                    writers = self.inner.writers.load(Relaxed),
                    "replica apply waits for local writers to end"
                );
                warned = true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Moves the clock (and the visible watermark) up to `ts` if it is
    /// behind: a replica that becomes primary must hand out timestamps
    /// above every record its log holds. No transaction may be running.
    pub fn raise_clock(&self, ts: u64) {
        if self.inner.seq.last_assigned() < ts {
            self.inner.seq.reset(ts);
        }
    }

    pub fn is_read_only(&self) -> bool {
        self.inner.is_read_only.load(Relaxed)
    }

    pub fn stats(&self) -> EngineStats {
        EngineStats {
            versions: self.inner.versions.get(),
            versions_freed: self.inner.gc.versions_freed.load(Relaxed),
            rows_removed: self.inner.gc.rows_removed.load(Relaxed),
            gc_pending: self.inner.gc.pending(),
            active_transactions: self.inner.txns.active(),
            last_commit_ts: self.inner.seq.visible(),
            tables: self.inner.catalog.read().by_id.len(),
        }
    }

    pub fn log(&self) -> Option<&Arc<Log>> {
        self.inner.local_log.as_ref()
    }

    /// Stops background work and flushes the log. Also done on drop.
    pub fn close(&self) -> Result<()> {
        {
            let (lock, cv) = &self.inner.shutdown;
            *lock.lock() = true;
            cv.notify_all();
        }
        if let Some(h) = self.background.lock().take() {
            let _ = h.join();
        }
        if let Some(log) = &self.inner.local_log {
            if self.inner.config.shared_log.is_some() {
                // The node's log outlives its partitions.
                log.flush()?;
            } else {
                log.close()?;
            }
        }
        Ok(())
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

fn checkpoint_loop(inner: Arc<EngineInner>) {
    let (lock, cv) = &inner.shutdown;
    loop {
        {
            let mut stop = lock.lock();
            if *stop {
                return;
            }
            cv.wait_for(&mut stop, Duration::from_millis(200));
            if *stop {
                return;
            }
        }
        let due = crate::checkpoint::log_bytes_since_checkpoint(&inner) >= inner.config.checkpoint_log_bytes;
        if due && let Err(e) = crate::checkpoint::checkpoint(&inner) {
            tracing::error!(error = %e, "background checkpoint failed");
        }
    }
}
