//! The SQL catalog: databases, tables, columns, constraints, indexes,
//! sequences, types, views and roles.
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
//! table has none.
//!
//! The parts, each in a module of its own:
//! - the definitions' types (here: `TableDef`, `DatabaseDef`, …);
//! - the stored entries (`entries.rs`): how each definition is written
//!   durably and read back;
//! - the schema snapshot (`schema.rs`, [`SchemaSnapshot`]): every lookup
//!   reads one immutable, versioned snapshot of the definitions; a change
//!   writes its entries first, then publishes a new snapshot, under one
//!   DDL mutex, so a reader holding a snapshot (a statement's planning)
//!   sees one version throughout;
//! - the counters handing out oids and streams (here), which only move
//!   forward, apart from the snapshot;
//! - schema-change jobs on keyed databases (`jobs.rs`), partitions and
//!   their writer gates (`partitions.rs`), homes (`home.rs`), sequences
//!   (`sequences.rs`), users' types (`types.rs`) and views (`views.rs`);
//! - what the node around it hooks in, each once: the cluster it belongs
//!   to (`ClusterView`), the replication groups that make homes
//!   (`DatabaseGroups`), and fault tests' crash points ([`FaultHooks`]).
//!
//! A crash between creating an engine table and writing its catalog entry
//! leaves an orphan engine table: `Catalog::open` drops it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use tessera_engine::tuple::{Tuple, encode_key};
use tessera_engine::{Engine, Node};

use crate::storage::partition::{Part, PartitionDef, PartitionGate, StoredTable};

use crate::error::{Result, SqlError, code};
use crate::values::types::SqlType;

mod entries;
mod home;
mod jobs;
mod layout;
mod partitions;
#[cfg(test)]
mod replica_tests;
mod schema;
mod sequences;
mod table_specs;
mod types;
pub mod views;

use entries::Entry;
pub use home::Home;
pub use layout::block_home;
pub use schema::SchemaSnapshot;
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

/// The live state of one sequence: `next` is handed out, `reserved` is the
/// last value already made durable.
#[derive(Debug)]
struct SequenceState {
    next: AtomicI64,
    reserved: Mutex<i64>,
    /// Whether nextval has been called since creation (for currval/setval semantics).
    called: std::sync::atomic::AtomicBool,
}

/// What hands out oids and streams. They only move forward: a value
/// handed out and not yet written (a DDL under way) stays taken, even
/// when the catalog reloads.
struct Counters {
    next_oid: u32,
    next_stream: u32,
    /// The next oid of each home's block (see `home::oid_block`).
    next_home_oid: std::collections::HashMap<u32, u32>,
}

impl Counters {
    /// Moves past the oid `oid` (and the block it is in).
    fn past_oid(&mut self, oid: u32) {
        match home::block_of(oid) {
            None => self.next_oid = self.next_oid.max(oid + 1),
            Some(stream) => {
                let next = self.next_home_oid.entry(stream).or_insert(oid + 1);
                *next = (*next).max(oid + 1);
            }
        }
    }
}

pub struct Catalog {
    node: Arc<Node>,
    engine: Arc<Engine>,
    /// The system engine as a home: its catalog and sequence tables
    /// (looked up again on a replica when a snapshot replaced them).
    system: RwLock<Home>,
    /// The definitions, as the snapshot every lookup reads
    /// (`catalog/schema.rs`); replaced whole by every change.
    schema: RwLock<Arc<SchemaSnapshot>>,
    counters: Mutex<Counters>,
    /// Serializes DDL so catalog entries and engine tables change together.
    ddl: Mutex<()>,
    sequences: RwLock<BTreeMap<u32, Arc<SequenceState>>>,
    /// Bumped by every change (and by what invalidates what sessions keep
    /// bound to the catalog without changing a definition: `touch`);
    /// sessions cache plans against it.
    version: AtomicI64,
    /// Writer gates of the partitions (see `PartitionGate`).
    gates: RwLock<std::collections::HashMap<u32, Arc<PartitionGate>>>,
    /// The cluster this node belongs to, if any (for `tessera.nodes`).
    cluster: std::sync::OnceLock<Arc<dyn crate::storage::cluster_view::ClusterView>>,
    /// On a cluster: makes each new home a replication group of its own.
    groups: std::sync::OnceLock<Arc<dyn crate::storage::cluster_view::DatabaseGroups>>,
    /// Where fault tests make the node die (see `crash_point`).
    crash_points: std::sync::OnceLock<Arc<dyn FaultHooks>>,
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
        if catalog.schema().databases.is_empty() {
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
            schema: RwLock::default(),
            counters: Mutex::new(Counters {
                next_oid: FIRST_USER_OID,
                next_stream: 1,
                next_home_oid: Default::default(),
            }),
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
        if catalog.schema().databases.is_empty() {
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

    /// Ends the process here if the node's crash points say so (fault
    /// tests; nothing otherwise).
    pub(crate) fn crash_point(&self, point: &str) {
        if let Some(hooks) = self.crash_points.get() {
            hooks.crash_point(point);
        }
    }

    /// Sets the node's crash points (once).
    pub fn set_crash_points(&self, points: Arc<dyn FaultHooks>) {
        let _ = self.crash_points.set(points);
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
        self.counters.lock().next_stream
    }

    pub fn version(&self) -> i64 {
        self.version.load(Ordering::Acquire)
    }

    /// Marks a change that is not a catalog entry but invalidates what
    /// sessions keep bound to it (TRUNCATE replaces a table's engine table).
    pub fn touch(&self) {
        self.version.fetch_add(1, Ordering::AcqRel);
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
            self.schema().tables.values().map(|t| t.engine_name.clone()).collect();
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
        let mut s = self.counters.lock();
        let oid = s.next_oid;
        s.next_oid += 1;
        oid
    }

    /// An oid for an object of database `db` (a table, an index, a
    /// sequence): from its home's own block when it has a home, so that
    /// the primaries of different databases never hand out the same one.
    pub fn alloc_oid_in(&self, db: &str) -> Result<u32> {
        let home = self.schema().database(db).and_then(|d| d.home);
        let Some(stream) = home else { return Ok(self.alloc_oid()) };
        let mut s = self.counters.lock();
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

    /// The definitions as of now: one consistent version, however much
    /// DDL runs while the caller holds it.
    pub fn schema(&self) -> Arc<SchemaSnapshot> {
        self.schema.read().clone()
    }

    pub fn ddl_lock(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.ddl.lock()
    }

    // ----- lookups -----

    pub fn database(&self, name: &str) -> Option<DatabaseDef> {
        self.schema().database(name).cloned()
    }

    pub fn databases(&self) -> Vec<DatabaseDef> {
        self.schema().databases().cloned().collect()
    }

    pub fn table(&self, db: &str, name: &str) -> Option<Arc<TableDef>> {
        self.schema().table(db, name).cloned()
    }

    pub fn tables(&self, db: &str) -> Vec<Arc<TableDef>> {
        self.schema().tables(db).cloned().collect()
    }

    pub fn sequence(&self, db: &str, name: &str) -> Option<Arc<SequenceDef>> {
        self.schema().sequence(db, name).cloned()
    }

    pub fn sequences(&self, db: &str) -> Vec<Arc<SequenceDef>> {
        self.schema().sequences(db).cloned().collect()
    }

    pub fn role(&self, name: &str) -> Option<RoleDef> {
        self.schema().role(name).cloned()
    }

    pub fn roles(&self) -> Vec<RoleDef> {
        self.schema().roles().cloned().collect()
    }

    /// Finds the index named `name` in database `db`.
    pub fn index(&self, db: &str, name: &str) -> Option<(Arc<TableDef>, IndexDef)> {
        self.schema().index(db, name)
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
}

/// What fault tests hook into the catalog: told each named step of a
/// change that spans several writes (a schema change's job, a split), the
/// binary's crash points may end the process there. Nothing is hooked
/// outside fault tests.
pub trait FaultHooks: Send + Sync {
    fn crash_point(&self, point: &str);
}

/// A 32-bit identifier that PostgreSQL clients display as a table's OID.
pub fn relkind_table() -> &'static str {
    "r"
}

/// Whether two partition lists have the same ranges on the same streams.
fn same_ranges(a: &[PartitionDef], b: &[PartitionDef]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.stream == y.stream && x.low == y.low && x.high == y.high)
}
