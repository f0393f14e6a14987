//! The SQL catalog: databases, tables, columns, constraints, indexes,
//! sequences and roles.
//!
//! Definitions live as JSON documents in the engine table `__catalog`, so
//! DDL is logged, checkpointed and recovered like any data. The system
//! engine's holds what is cluster-wide (databases, roles, streams);
//! a database made by CREATE DATABASE keeps its own tables', sequences'
//! and schema-change jobs' entries, and a keyed one its partitions'
//! layout (`catalog/layout.rs`), in its *home* engine (`catalog/home.rs`),
//! with its rows, so that a database is self-contained. Each SQL table is
//! one engine table named `t<oid>` (renames touch only the catalog); its
//! engine primary key is the SQL primary key, or a hidden row id when the
//! table has none. The in-memory copy answers lookups; every change writes the
//! engine first, then memory, under one DDL mutex.
//!
//! A crash between creating an engine table and writing its catalog entry
//! leaves an orphan engine table: `Catalog::open` drops it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use tessera_engine::tuple::{Tuple, encode_key, encode_tuple};
use tessera_engine::{Engine, Isolation, Node};

use crate::storage::jobs::JobDef;
use crate::storage::partition::{Part, PartitionDef, PartitionGate, StoredTable};

use crate::error::{Result, SqlError, code};
use crate::values::types::SqlType;

mod home;
mod layout;
mod partitions;
#[cfg(test)]
mod replica_tests;
mod sequences;
mod table_specs;
mod types;
pub mod views;

pub use home::Home;
pub use layout::block_home;
pub(crate) use table_specs::{engine_spec, fields_of};
pub use table_specs::{rowid_sequence, sequence_of_default, target_table};
pub use types::{DomainDef, ResolvedType, TypeDef, TypeKind, type_key};

pub const CATALOG_TABLE: &str = "__catalog";
pub const SEQUENCE_TABLE: &str = "__sequences";
pub const DEFAULT_DB: &str = "tessera";
pub const BOOTSTRAP_USER: &str = "tessera";
/// OIDs below this are PostgreSQL's built-ins (types, namespaces).
pub const FIRST_USER_OID: u32 = 16384;
/// The hidden row-id column of a table without a primary key.
pub const ROWID: &str = "__rowid";
/// How many sequence values one durable write reserves.
const SEQUENCE_BATCH: i64 = 32;
/// The same for the hidden row-id sequences of tables without a primary key.
const ROWID_SEQUENCE_BATCH: i64 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Identity {
    Always,
    ByDefault,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ColumnDef {
    pub name: String,
    pub ty: SqlType,
    pub not_null: bool,
    /// The DEFAULT expression as SQL text.
    pub default: Option<String>,
    pub identity: Option<Identity>,
    /// The engine tuple field holding this column.
    pub field: u16,
    /// The domain the column was declared with (its `ty` is the domain's
    /// base type; the domain's constraints apply to its values).
    #[serde(default)]
    pub domain: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum IndexMethod {
    Btree,
    Hash,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexDef {
    pub name: String,
    pub oid: u32,
    pub columns: Vec<String>,
    pub unique: bool,
    pub method: IndexMethod,
    /// Backs a PRIMARY KEY (true) or UNIQUE constraint rather than CREATE INDEX.
    pub primary: bool,
    pub constraint: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckDef {
    pub name: String,
    pub expr: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableDef {
    pub oid: u32,
    pub db: String,
    pub name: String,
    pub columns: Vec<ColumnDef>,
    /// The PRIMARY KEY columns; empty when the table has a hidden row id.
    pub primary_key: Vec<String>,
    /// Indexes, including those backing PRIMARY KEY and UNIQUE constraints.
    pub indexes: Vec<IndexDef>,
    pub checks: Vec<CheckDef>,
    pub next_field: u16,
    /// The engine field of the hidden row id, when there is no primary key.
    pub rowid_field: Option<u16>,
    /// The engine table's name (changes when the table is rebuilt).
    pub engine_name: String,
}

impl TableDef {
    pub fn column(&self, name: &str) -> Option<&ColumnDef> {
        self.columns.iter().find(|c| c.name == name)
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// The table's schema as DataFusion sees it (no hidden row id).
    pub fn arrow_schema(&self) -> SchemaRef {
        // Declared nullable even for NOT NULL columns: Tessera checks NOT NULL
        // itself, with PostgreSQL's error, before rows reach the engine.
        Arc::new(Schema::new(self.columns.iter().map(|c| c.ty.field(&c.name, true)).collect::<Vec<_>>()))
    }

    /// Engine fields of the primary key, in key order.
    pub fn key_fields(&self) -> Vec<u16> {
        match self.rowid_field {
            Some(f) => vec![f],
            None => self.primary_key.iter().map(|n| self.column(n).expect("pk column").field).collect(),
        }
    }

    /// The engine key of a stored row.
    pub fn key_of(&self, row: &[u8]) -> Result<Vec<u8>> {
        let t = Tuple::parse(row).map_err(|e| SqlError::internal(e.to_string()))?;
        let fields: Vec<Option<&[u8]>> = self.key_fields().iter().map(|f| t.field(*f as usize)).collect();
        Ok(encode_key(&fields))
    }

    /// The SQL name of the constraint behind an engine index (the engine
    /// names the primary key after its own table).
    pub fn constraint_name(&self, engine_index: &str) -> String {
        if engine_index == format!("{}_pkey", self.engine_name)
            && let Some(ix) = self.indexes.iter().find(|i| i.primary)
        {
            return ix.name.clone();
        }
        engine_index.to_string()
    }

    pub fn qualified(&self) -> String {
        format!("public.{}", self.name)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SequenceDef {
    pub oid: u32,
    pub db: String,
    pub name: String,
    pub start: i64,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    /// (table oid, column name) for serial and identity columns.
    pub owned_by: Option<(u32, String)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DatabaseDef {
    pub oid: u32,
    pub name: String,
    pub owner: String,
    /// A keyed database's partition key; None for a keyless one.
    #[serde(default)]
    pub partition_key: Option<crate::storage::keyed::PartitionKey>,
    /// A keyed database's partitions in key order (empty: the database
    /// lives in the system engine).
    #[serde(default)]
    pub partitions: Vec<PartitionDef>,
    /// Raised by every schema change (a job); each partition records the
    /// version it has applied.
    #[serde(default)]
    pub schema_version: u64,
    /// The stream of the engine holding its catalog entries and keyless
    /// tables (see `catalog/home.rs`); None: the system engine.
    #[serde(default)]
    pub home: Option<u32>,
    /// The next stream of its home's block a new partition takes (a keyed
    /// database with a home; see `catalog/layout.rs`).
    #[serde(default)]
    pub next_stream: u32,
}

/// A SCRAM-SHA-256 verifier: what the server keeps instead of a password.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScramSecret {
    pub salt: Vec<u8>,
    pub iterations: u32,
    pub salted_password: Vec<u8>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RoleDef {
    pub oid: u32,
    pub name: String,
    pub superuser: bool,
    pub login: bool,
    pub create_db: bool,
    pub password: Option<ScramSecret>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind")]
enum Entry {
    Database(DatabaseDef),
    Table(TableDef),
    Sequence(SequenceDef),
    Role(RoleDef),
    /// The next unused log stream (stream ids are never reused).
    Streams {
        next: u32,
    },
    Job(JobDef),
    /// A keyed database's partitions and schema version, in its home
    /// (`catalog/layout.rs`).
    Layout(layout::Layout),
    /// An enum type or a domain (`catalog/types.rs`).
    Type(TypeDef),
    /// A view (`catalog/views.rs`).
    View(crate::storage::catalog::views::ViewDef),
}

impl Entry {
    fn key(&self) -> String {
        match self {
            Entry::Database(d) => format!("database:{}", d.oid),
            Entry::Table(t) => format!("table:{}", t.oid),
            Entry::Sequence(s) => format!("sequence:{}", s.oid),
            Entry::Role(r) => format!("role:{}", r.oid),
            Entry::Streams { .. } => "streams:0".into(),
            Entry::Job(j) => format!("job:{}", j.id),
            Entry::Layout(l) => format!("layout:{}", l.db),
            Entry::Type(t) => format!("type:{}", t.oid),
            Entry::View(v) => format!("view:{}", v.oid),
        }
    }
}

/// The live state of one sequence: `next` is handed out, `reserved` is the
/// last value already made durable.
#[derive(Debug)]
struct SequenceState {
    next: AtomicI64,
    reserved: Mutex<i64>,
    /// Whether nextval has been called since creation (for currval/setval semantics).
    called: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct State {
    databases: BTreeMap<String, DatabaseDef>,
    tables: BTreeMap<(String, String), Arc<TableDef>>,
    sequences: BTreeMap<(String, String), Arc<SequenceDef>>,
    roles: BTreeMap<String, RoleDef>,
    types: BTreeMap<(String, String), Arc<TypeDef>>,
    views: BTreeMap<(String, String), Arc<crate::storage::catalog::views::ViewDef>>,
    jobs: BTreeMap<u32, JobDef>,
    next_oid: u32,
    next_stream: u32,
    /// The next oid of each home's block (see `home::oid_block`).
    next_home_oid: std::collections::HashMap<u32, u32>,
}

pub struct Catalog {
    node: Arc<Node>,
    engine: Arc<Engine>,
    /// The system engine as a home: its catalog and sequence tables
    /// (looked up again on a replica when a snapshot replaced them).
    system: RwLock<Home>,
    state: RwLock<State>,
    /// Serializes DDL so catalog entries and engine tables change together.
    ddl: Mutex<()>,
    sequences: RwLock<BTreeMap<u32, Arc<SequenceState>>>,
    /// Bumped by every change; sessions cache plans against it.
    version: AtomicI64,
    /// Writer gates of the partitions (see `PartitionGate`).
    gates: RwLock<std::collections::HashMap<u32, Arc<PartitionGate>>>,
    /// The cluster this node belongs to, if any (for `tessera.nodes`).
    cluster: std::sync::OnceLock<Arc<dyn crate::storage::cluster_view::ClusterView>>,
    /// On a cluster: makes each new home a replication group of its own.
    groups: std::sync::OnceLock<Arc<dyn crate::storage::cluster_view::DatabaseGroups>>,
    /// Where fault tests make the node die (see `crash_point`).
    crash_points: std::sync::OnceLock<CrashPoints>,
    /// A secondary's catalog: it follows DDL replicated after it was
    /// loaded (`refresh_if_changed`) instead of making any.
    replica: bool,
    /// The catalog tables' change count when they were last loaded.
    loaded_changes: AtomicI64,
    /// The databases' homes attached so far, by stream.
    homes: RwLock<std::collections::HashMap<u32, Home>>,
    /// The schema-change jobs running here (id → database); held while a
    /// replica's catalog finishes the jobs a former primary left.
    jobs_here: Mutex<std::collections::HashMap<u32, String>>,
}

impl Catalog {
    /// Loads the catalog, creating the bootstrap database and role on a new
    /// data directory and dropping engine tables no catalog entry owns.
    pub fn open(node: Arc<Node>) -> Result<Arc<Catalog>> {
        Catalog::open_maintaining(node, Arc::new(|_| true))
    }

    /// [`Catalog::open`], tidying only the streams `maintains` accepts (on
    /// a cluster: those of the group whose primary this node is; the other
    /// groups' primaries write theirs).
    pub fn open_maintaining(
        node: Arc<Node>,
        maintains: Arc<dyn Fn(u32) -> bool + Send + Sync>,
    ) -> Result<Arc<Catalog>> {
        let engine = node.system().clone();
        let system = Home::in_engine(tessera_engine::SYSTEM_STREAM, engine, true)?
            .ok_or_else(|| SqlError::internal("the system engine's catalog tables were not created"))?;
        let catalog = Catalog::load_from(node, system, false)?;
        let catalog = Arc::new(catalog);
        if catalog.state.read().databases.is_empty() {
            catalog.bootstrap()?;
        }
        catalog.open_partitions(&*maintains)?;
        catalog.drop_orphans(&*maintains)?;
        // Finish the jobs and the clean-up of splits a stop interrupted,
        // in the databases of this node's group (on a cluster, another
        // group's primary writes its own).
        let mine = |d: &DatabaseDef| d.home.is_none_or(|h| maintains(h));
        crate::storage::jobs::recover(&catalog, &mine)?;
        for d in catalog.databases().into_iter().filter(mine) {
            for k in 0..d.partitions.len() {
                if d.partitions[k].dirty {
                    crate::storage::split::clean(&catalog, &d, k)?;
                }
            }
        }
        Ok(catalog)
    }

    /// A catalog read from its two tables in the system engine.
    fn load_from(node: Arc<Node>, system: Home, replica: bool) -> Result<Catalog> {
        let engine = node.system().clone();
        let catalog = Catalog {
            node,
            engine,
            system: RwLock::new(system),
            state: RwLock::new(State { next_oid: FIRST_USER_OID, next_stream: 1, ..Default::default() }),
            ddl: Mutex::new(()),
            sequences: RwLock::new(BTreeMap::new()),
            version: AtomicI64::new(0),
            gates: RwLock::new(std::collections::HashMap::new()),
            cluster: std::sync::OnceLock::new(),
            groups: std::sync::OnceLock::new(),
            crash_points: std::sync::OnceLock::new(),
            replica,
            loaded_changes: AtomicI64::new(0),
            jobs_here: Mutex::default(),
            homes: RwLock::default(),
        };
        catalog.load()?;
        Ok(catalog)
    }

    /// Loads the catalog of a secondary as replicated so far, writing
    /// nothing: no bootstrap, no clean-up of orphans or interrupted jobs
    /// (the primary does those, and they reach here through the log), and
    /// partitions stay as the replication layer opened them.
    pub fn open_replica(node: Arc<Node>) -> Result<Arc<Catalog>> {
        let engine = node.system().clone();
        let missing = || {
            SqlError::new(code::CANNOT_CONNECT_NOW, "this secondary has not received the catalog from the primary yet")
        };
        let system = Home::in_engine(tessera_engine::SYSTEM_STREAM, engine, false)?.ok_or_else(missing)?;
        let catalog = Catalog::load_from(node, system, true)?;
        if catalog.state.read().databases.is_empty() {
            return Err(missing());
        }
        Ok(Arc::new(catalog))
    }

    /// A secondary's catalog reloads itself when DDL has been replicated
    /// since it was loaded (the catalog table changed), so that a session
    /// reading there sees tables created after it connected, and when a
    /// snapshot replaced the tables it read (a replica rebuilt or
    /// restarted from its group's snapshot). So does the catalog of the
    /// cluster's first group, whose databases' homes their own primaries
    /// write (their tables, a keyed database's partitions). Nothing on a
    /// single node's catalog, which DDL updates as it runs.
    pub fn refresh_if_changed(&self) -> Result<()> {
        if !(self.replica || self.groups().is_some())
            || (self.system_home().changes() + self.home_changes() == self.loaded_changes.load(Ordering::Acquire)
                && !self.home_arrived()
                && !self.homes_replaced())
        {
            return Ok(());
        }
        self.load()?;
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// The system engine: the cluster-wide catalog, and the home of the
    /// databases without one of their own.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    pub fn node(&self) -> &Arc<Node> {
        &self.node
    }

    /// Tells the catalog which cluster the node belongs to (once).
    pub fn set_cluster(&self, view: Arc<dyn crate::storage::cluster_view::ClusterView>) {
        let _ = self.cluster.set(view);
    }

    /// Whether this node may serve a statement of the database whose home
    /// is `home` as its primary now (always, on a single node).
    pub fn holds_lease(&self, home: Option<u32>) -> bool {
        self.cluster.get().is_none_or(|view| view.holds_lease(home))
    }

    /// The cluster's nodes; a single node shows itself as the primary.
    pub fn cluster_nodes(&self) -> Vec<crate::storage::cluster_view::NodeRow> {
        match self.cluster.get() {
            Some(view) => view.nodes(),
            None => vec![crate::storage::cluster_view::NodeRow {
                id: 1,
                rpc_addr: String::new(),
                pg_addr: String::new(),
                failure_domain: String::new(),
                upgrade_domain: String::new(),
                role: "primary".into(),
                epoch: 0,
                applied: None,
                behind: Some(0),
                load: None,
                manager: Some("leader".into()),
                draining: false,
            }],
        }
    }

    /// The next stream the cluster-wide counter hands out: every home
    /// made so far has a lower one.
    pub fn next_stream(&self) -> u32 {
        self.state.read().next_stream
    }

    pub fn version(&self) -> i64 {
        self.version.load(Ordering::Acquire)
    }

    /// Marks a change that is not a catalog entry but invalidates what
    /// sessions keep bound to it (TRUNCATE replaces a table's engine table).
    pub fn touch(&self) {
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    fn load(&self) -> Result<()> {
        if self.replica && !self.system_home().is_current(&self.node) {
            let system =
                Home::in_engine(tessera_engine::SYSTEM_STREAM, self.engine.clone(), false)?.ok_or_else(|| {
                    SqlError::new(code::CANNOT_CONNECT_NOW, "this replica is loading the catalog from a snapshot")
                })?;
            *self.system.write() = system;
        }
        let system = self.system_home();
        // Counted before the scan: a change during it is seen next time.
        let mut changes = system.changes();
        let (rows, mut seq_rows) = system.scan()?;
        let parse = |rows: Vec<Vec<u8>>| -> Result<Vec<Entry>> {
            rows.iter()
                .map(|row| {
                    let t = Tuple::parse(row).map_err(|e| SqlError::internal(e.to_string()))?;
                    let doc = t.field(1).ok_or_else(|| SqlError::internal("catalog entry without a document"))?;
                    serde_json::from_slice(doc)
                        .map_err(|e| SqlError::new(code::DATA_CORRUPTED, format!("catalog entry is unreadable: {e}")))
                })
                .collect()
        };
        let mut entries = parse(rows)?;
        // Then every database's home (a replica's may not be there yet).
        let homes: Vec<u32> = entries
            .iter()
            .filter_map(|e| match e {
                Entry::Database(d) => d.home,
                _ => None,
            })
            .collect();
        self.homes.write().retain(|s, h| homes.contains(s) && h.is_current(&self.node));
        for stream in homes {
            if let Some(h) = self.attach_home(stream)? {
                changes += h.changes();
                let (rows, seqs) = h.scan()?;
                entries.extend(parse(rows)?);
                seq_rows.extend(seqs);
            }
        }
        let mut state = self.state.write();
        // From scratch (a replica reloads into a catalog in use), but for
        // the counters, which never go back: an oid or stream handed out
        // here and not yet written (a DDL under way) stays taken.
        let (next_oid, next_stream) = (state.next_oid, state.next_stream);
        let next_home_oid = std::mem::take(&mut state.next_home_oid);
        *state = State {
            next_oid: next_oid.max(FIRST_USER_OID),
            next_stream: next_stream.max(1),
            next_home_oid,
            ..Default::default()
        };
        self.loaded_changes.store(changes, Ordering::Release);
        let mut layouts = Vec::new();
        for entry in entries {
            let oid = match &entry {
                Entry::Layout(l) => {
                    layouts.push(l.clone());
                    continue;
                }
                Entry::Database(d) => d.oid,
                Entry::Table(t) => t.oid,
                Entry::Sequence(s) => s.oid,
                Entry::Role(r) => r.oid,
                Entry::Type(t) => t.oid,
                Entry::View(v) => v.oid,
                Entry::Streams { next } => {
                    state.next_stream = state.next_stream.max(*next);
                    continue;
                }
                Entry::Job(j) => j.id,
            };
            let indexes = match &entry {
                Entry::Table(t) => t.indexes.iter().map(|ix| ix.oid).collect(),
                _ => vec![],
            };
            for oid in std::iter::once(oid).chain(indexes) {
                match home::block_of(oid) {
                    None => state.next_oid = state.next_oid.max(oid + 1),
                    Some(stream) => {
                        let next = state.next_home_oid.entry(stream).or_insert(oid + 1);
                        *next = (*next).max(oid + 1);
                    }
                }
            }
            match entry {
                Entry::Database(d) => {
                    state.databases.insert(d.name.clone(), d);
                }
                Entry::Table(t) => {
                    state.tables.insert((t.db.clone(), t.name.clone()), Arc::new(t));
                }
                Entry::Sequence(s) => {
                    state.sequences.insert((s.db.clone(), s.name.clone()), Arc::new(s));
                }
                Entry::Role(r) => {
                    state.roles.insert(r.name.clone(), r);
                }
                Entry::Type(t) => {
                    t.publish();
                    state.types.insert((t.db.clone(), t.name.clone()), Arc::new(t));
                }
                Entry::View(v) => {
                    state.views.insert((v.db.clone(), v.name.clone()), Arc::new(v));
                }
                Entry::Streams { .. } | Entry::Layout(_) => {}
                Entry::Job(j) => {
                    state.jobs.insert(j.id, j);
                }
            }
        }
        state.merge_layouts(layouts);
        // Never hand out a stream a database still uses (belt and braces;
        // the streams of homes' blocks are not the counter's).
        let used = state
            .databases
            .values()
            .flat_map(|d| d.partitions.iter().map(|p| p.stream).chain(d.home))
            .filter(|s| *s < layout::FIRST_BLOCK_STREAM)
            .max();
        if let Some(max) = used {
            state.next_stream = state.next_stream.max(max + 1);
        }
        let mut reserved = BTreeMap::new();
        for row in seq_rows {
            let t = Tuple::parse(&row).map_err(|e| SqlError::internal(e.to_string()))?;
            let oid = t.field(0).and_then(|b| b.try_into().ok()).map(u32::from_be_bytes);
            let value = t.field(1).and_then(|b| b.try_into().ok()).map(i64::from_be_bytes);
            if let (Some(oid), Some(value)) = (oid, value) {
                reserved.insert(oid, value);
            }
        }
        let mut seqs = self.sequences.write();
        for s in state.sequences.values() {
            // After a restart continue past everything that may have been handed out.
            let (next, res, called) = match reserved.get(&s.oid) {
                Some(r) => (r + s.increment, *r, true),
                None => (s.start, s.start - s.increment, false),
            };
            seqs.insert(
                s.oid,
                Arc::new(SequenceState {
                    next: AtomicI64::new(next),
                    reserved: Mutex::new(res),
                    called: std::sync::atomic::AtomicBool::new(called),
                }),
            );
        }
        Ok(())
    }

    fn bootstrap(&self) -> Result<()> {
        let _g = self.ddl.lock();
        let oid = self.alloc_oid();
        self.write_entries(&[Entry::Role(RoleDef {
            oid: 10,
            name: BOOTSTRAP_USER.into(),
            superuser: true,
            login: true,
            create_db: true,
            password: None,
        })])?;
        self.write_entries(&[Entry::Database(DatabaseDef {
            oid,
            name: DEFAULT_DB.into(),
            owner: BOOTSTRAP_USER.into(),
            partition_key: None,
            partitions: Vec::new(),
            schema_version: 0,
            home: None,
            next_stream: 0,
        })])?;
        // `postgres` exists too: many tools connect to it first.
        let oid = self.alloc_oid();
        self.write_entries(&[Entry::Database(DatabaseDef {
            oid,
            name: "postgres".into(),
            owner: BOOTSTRAP_USER.into(),
            partition_key: None,
            partitions: Vec::new(),
            schema_version: 0,
            home: None,
            next_stream: 0,
        })])
    }

    fn drop_orphans(&self, maintains: &dyn Fn(u32) -> bool) -> Result<()> {
        let owned: std::collections::HashSet<String> =
            self.state.read().tables.values().map(|t| t.engine_name.clone()).collect();
        let mut engines = vec![self.engine.clone()];
        engines.extend(self.node.partitions().into_iter().filter(|(s, _)| maintains(*s)).map(|(_, e)| e));
        for engine in engines {
            for spec in engine.tables() {
                if spec.name.starts_with("__") || owned.contains(&spec.name) {
                    continue;
                }
                tracing::warn!(table = %spec.name, "dropping an engine table no catalog entry owns (interrupted DDL)");
                engine.drop_table(&spec.name)?;
            }
        }
        Ok(())
    }

    /// An oid for a cluster-wide object (a database, a job) or one of a
    /// database without a home of its own.
    pub fn alloc_oid(&self) -> u32 {
        let mut s = self.state.write();
        let oid = s.next_oid;
        s.next_oid += 1;
        oid
    }

    /// An oid for an object of database `db` (a table, an index, a
    /// sequence): from its home's own block when it has a home, so that
    /// the primaries of different databases never hand out the same one.
    pub fn alloc_oid_in(&self, db: &str) -> Result<u32> {
        let home = self.state.read().databases.get(db).and_then(|d| d.home);
        let Some(stream) = home else { return Ok(self.alloc_oid()) };
        let mut s = self.state.write();
        let next = s.next_home_oid.entry(stream).or_insert(home::oid_block(stream) + 1);
        if *next >= home::oid_block(stream + 1) - 1 {
            return Err(SqlError::new(
                code::PROGRAM_LIMIT,
                format!("database \"{db}\" has used up its object identifiers"),
            ));
        }
        let oid = *next;
        *next += 1;
        Ok(oid)
    }

    /// Writes catalog documents durably, then applies them in memory.
    fn write_entries(&self, entries: &[Entry]) -> Result<()> {
        // One durable commit per home the entries are kept in.
        let durable = self.durable(entries);
        for (home, entries) in self.by_home(&durable, |e| self.entry_home(e))? {
            self.check_writable(&home)?;
            let mut txn = home.engine.begin(Isolation::Snapshot)?;
            for e in entries {
                let key = e.key();
                let doc = serde_json::to_vec(e).map_err(|e| SqlError::internal(e.to_string()))?;
                let row = encode_tuple(&[Some(key.as_bytes()), Some(&doc)]);
                txn.put(&home.catalog, row, tessera_engine::PutCondition::Always)?;
            }
            // A durable commit: wait for the fsync off the runtime's thread.
            crate::storage::blocking(|| txn.commit())?;
        }
        let mut state = self.state.write();
        for e in entries {
            match e.clone() {
                Entry::Database(d) => {
                    state.databases.retain(|_, x| x.oid != d.oid);
                    state.databases.insert(d.name.clone(), d);
                }
                Entry::Table(t) => {
                    state.tables.retain(|_, x| x.oid != t.oid);
                    state.tables.insert((t.db.clone(), t.name.clone()), Arc::new(t));
                }
                Entry::Sequence(s) => {
                    state.sequences.retain(|_, x| x.oid != s.oid);
                    state.sequences.insert((s.db.clone(), s.name.clone()), Arc::new(s));
                }
                Entry::Role(r) => {
                    state.roles.retain(|_, x| x.oid != r.oid);
                    state.roles.insert(r.name.clone(), r);
                }
                Entry::Type(t) => {
                    t.publish();
                    state.types.retain(|_, x| x.oid != t.oid);
                    state.types.insert((t.db.clone(), t.name.clone()), Arc::new(t));
                }
                Entry::View(v) => {
                    state.views.retain(|_, x| x.oid != v.oid);
                    state.views.insert((v.db.clone(), v.name.clone()), Arc::new(v));
                }
                Entry::Streams { next } => state.next_stream = state.next_stream.max(next),
                Entry::Job(j) => {
                    state.jobs.insert(j.id, j);
                }
                Entry::Layout(l) => state.merge_layouts(vec![l]),
            }
        }
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    fn delete_entries(&self, keys: &[String]) -> Result<()> {
        for (home, keys) in self.by_home(keys, |k| self.key_home(k))? {
            self.check_writable(&home)?;
            let mut txn = home.engine.begin(Isolation::Snapshot)?;
            for key in keys {
                txn.delete(&home.catalog, &encode_key(&[Some(key.as_bytes())]))?;
            }
            // A durable commit: wait for the fsync off the runtime's thread.
            crate::storage::blocking(|| txn.commit())?;
        }
        let mut state = self.state.write();
        for key in keys {
            let (kind, oid) = key.split_once(':').expect("catalog key");
            let oid: u32 = oid.parse().expect("catalog oid");
            match kind {
                "database" => state.databases.retain(|_, x| x.oid != oid),
                "table" => state.tables.retain(|_, x| x.oid != oid),
                "sequence" => state.sequences.retain(|_, x| x.oid != oid),
                "type" => state.types.retain(|_, x| x.oid != oid),
                "view" => state.views.retain(|_, x| x.oid != oid),
                _ => state.roles.retain(|_, x| x.oid != oid),
            }
        }
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    pub fn ddl_lock(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.ddl.lock()
    }

    // ----- lookups -----

    pub fn database(&self, name: &str) -> Option<DatabaseDef> {
        self.state.read().databases.get(name).cloned()
    }

    pub fn databases(&self) -> Vec<DatabaseDef> {
        self.state.read().databases.values().cloned().collect()
    }

    pub fn table(&self, db: &str, name: &str) -> Option<Arc<TableDef>> {
        self.state.read().tables.get(&(db.to_string(), name.to_string())).cloned()
    }

    pub fn tables(&self, db: &str) -> Vec<Arc<TableDef>> {
        self.state.read().tables.values().filter(|t| t.db == db).cloned().collect()
    }

    pub fn sequence(&self, db: &str, name: &str) -> Option<Arc<SequenceDef>> {
        self.state.read().sequences.get(&(db.to_string(), name.to_string())).cloned()
    }

    pub fn sequences(&self, db: &str) -> Vec<Arc<SequenceDef>> {
        self.state.read().sequences.values().filter(|s| s.db == db).cloned().collect()
    }

    pub fn role(&self, name: &str) -> Option<RoleDef> {
        self.state.read().roles.get(name).cloned()
    }

    pub fn roles(&self) -> Vec<RoleDef> {
        self.state.read().roles.values().cloned().collect()
    }

    /// Finds the index named `name` in database `db`.
    pub fn index(&self, db: &str, name: &str) -> Option<(Arc<TableDef>, IndexDef)> {
        let state = self.state.read();
        state
            .tables
            .values()
            .filter(|t| t.db == db)
            .find_map(|t| t.indexes.iter().find(|i| i.name == name).map(|i| (t.clone(), i.clone())))
    }

    /// The engine tables holding `def`'s rows, one per partition.
    pub fn engine_table(&self, def: &TableDef) -> Result<Arc<StoredTable>> {
        let missing = || SqlError::internal(format!("engine table {} of \"{}\" is missing", def.engine_name, def.name));
        let db = self.database(&def.db).ok_or_else(missing)?;
        let (Some(key), false) = (&db.partition_key, db.partitions.is_empty()) else {
            let home = self.home_of(&def.db)?;
            let table = home.engine.table(&def.engine_name).ok_or_else(missing)?;
            return Ok(Arc::new(StoredTable::single(home.engine, table, home.stream)));
        };
        let mut db = db.clone();
        let mut key = key.clone();
        let routes = self.groups().and_then(|g| g.routes());
        loop {
            let mut parts = Vec::with_capacity(db.partitions.len());
            for p in &db.partitions {
                let engine = self.partition_engine(&db, p.stream)?;
                // A partition led by another node may have no copy here.
                let table = engine.table(&def.engine_name);
                if table.is_none() && routes.is_none() {
                    if self.replica {
                        // A reading session on a node that holds no copy
                        // of this partition (or not yet its table).
                        return Err(SqlError::new(
                            code::CANNOT_CONNECT_NOW,
                            format!(
                                "this node holds no copy of table \"{}\" in partition {} of database \"{}\"",
                                def.name, p.stream, def.db
                            ),
                        )
                        .with_hint("Read on a node holding the partition, or from the primary."));
                    }
                    return Err(missing());
                }
                let gate = self.gate(p.stream);
                let epoch = gate.epoch();
                parts.push(Part { def: p.clone(), engine, table, gate: Some((gate, epoch)), routes: routes.clone() });
            }
            // A split switches the ranges before it moves the gate's epoch
            // on: ranges read before the switch with an epoch read after it
            // would let a writer into the old range. The ranges read again,
            // unchanged, belong with the epochs (a later split moves the
            // epochs on, which refuses this table's writes then).
            let again = self.database(&def.db).ok_or_else(missing)?;
            if same_ranges(&again.partitions, &db.partitions) {
                return Ok(Arc::new(StoredTable::partitioned(def, &key, parts)?));
            }
            key = again.partition_key.clone().ok_or_else(missing)?;
            db = again;
        }
    }

    // ----- changes (callers hold `ddl_lock`) -----

    pub fn put_database(&self, d: DatabaseDef) -> Result<()> {
        self.write_entries(&[Entry::Database(d)])
    }

    pub fn put_table(&self, t: TableDef) -> Result<()> {
        self.write_entries(&[Entry::Table(t)])
    }

    pub fn put_role(&self, r: RoleDef) -> Result<()> {
        self.write_entries(&[Entry::Role(r)])
    }

    pub fn drop_role(&self, oid: u32) -> Result<()> {
        self.delete_entries(&[format!("role:{oid}")])
    }

    pub fn drop_database_entry(&self, oid: u32) -> Result<()> {
        self.delete_entries(&[format!("database:{oid}")])
    }

    /// Removes a table's catalog entry and the sequences it owns.
    pub fn drop_table_entry(&self, t: &TableDef) -> Result<()> {
        let mut keys = vec![format!("table:{}", t.oid)];
        for s in self.sequences(&t.db) {
            if s.owned_by.as_ref().map(|o| o.0) == Some(t.oid) {
                keys.push(format!("sequence:{}", s.oid));
            }
        }
        self.delete_entries(&keys)
    }

    pub fn put_sequence(&self, s: SequenceDef) -> Result<()> {
        let oid = s.oid;
        let start = s.start;
        let inc = s.increment;
        let fresh = !self.sequences.read().contains_key(&oid);
        self.write_entries(&[Entry::Sequence(s)])?;
        if fresh {
            self.sequences.write().insert(
                oid,
                Arc::new(SequenceState {
                    next: AtomicI64::new(start),
                    reserved: Mutex::new(start - inc),
                    called: std::sync::atomic::AtomicBool::new(false),
                }),
            );
        }
        Ok(())
    }

    pub fn drop_sequence_entry(&self, oid: u32) -> Result<()> {
        self.delete_entries(&[format!("sequence:{oid}")])?;
        self.sequences.write().remove(&oid);
        Ok(())
    }
}

/// A node's crash points, as the binary sets them for fault tests: called
/// with a point's name, it may end the process there.
pub type CrashPoints = Arc<dyn Fn(&str) + Send + Sync>;

/// A 32-bit identifier that PostgreSQL clients display as a table's OID.
pub fn relkind_table() -> &'static str {
    "r"
}

/// Whether two partition lists have the same ranges on the same streams.
fn same_ranges(a: &[PartitionDef], b: &[PartitionDef]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.stream == y.stream && x.low == y.low && x.high == y.high)
}
