//! What one statement sees, below planning: its session's identity and
//! settings ([`SessionInfo`]), and the [`Resolver`] — the catalog, the
//! database, the session's transaction and the rows a statement binds to
//! a name — through which DataFusion's catalog (`plan::context`) and the
//! system views (`system`) find tables.
//!
//! While a statement is planned, the resolver holds one snapshot of the
//! catalog's definitions ([`Resolver::pin_schema`]): every name the plan
//! reads resolves against that one version, so DDL committed by another
//! session meanwhile never gives a plan one table as it was and another
//! as it is.
//!
//! It sits above `storage` (whose catalog and transactions it names) and
//! below `system`, `plan` and `session`, which all read it.

pub mod output;
pub mod settings;

use std::sync::Arc;

use datafusion::datasource::TableProvider;
use parking_lot::Mutex;

use crate::scope::settings::Settings;
use crate::storage::catalog::{Catalog, SchemaSnapshot};
use crate::storage::provider::{EngineTable, ScanNotes, TxnSlot};

/// What a session knows about itself, shared with SQL functions.
pub struct SessionInfo {
    pub user: String,
    pub db: String,
    pub pid: i32,
    /// The session's temporary schema, `pg_temp_<token>` (`temp_tables`).
    pub temp_schema: String,
    pub settings: Mutex<Settings>,
    pub catalog: Arc<Catalog>,
    /// When the open transaction block began (µs since the epoch; 0
    /// outside one): `now()` answers it in the block, as PostgreSQL's is
    /// the transaction's start, not the statement's.
    pub block_started: std::sync::atomic::AtomicI64,
}

#[derive(Clone)]
pub struct Resolver {
    pub catalog: Arc<Catalog>,
    pub db: String,
    pub txn: TxnSlot,
    pub notes: ScanNotes,
    pub info: Arc<SessionInfo>,
    /// Rows a statement binds to a name for DataFusion to read (the rows
    /// RETURNING or a CHECK is evaluated over), in schema `__scratch`.
    pub scratch: Scratch,
    /// The catalog snapshot the statement being planned reads (None:
    /// none is being planned; lookups read the newest).
    pub schema: SchemaPin,
}

/// Where a session keeps the snapshot its statement's planning reads.
pub type SchemaPin = Arc<Mutex<Option<Arc<SchemaSnapshot>>>>;

/// Holds a snapshot pinned until dropped (see [`Resolver::pin_schema`]).
pub struct PinnedSchema {
    pin: SchemaPin,
    pub snapshot: Arc<SchemaSnapshot>,
    /// Whether this guard pinned it (an inner planning, as of a view's
    /// query, reads its statement's snapshot and leaves the pin alone).
    owner: bool,
}

impl Drop for PinnedSchema {
    fn drop(&mut self) {
        if self.owner {
            *self.pin.lock() = None;
        }
    }
}

/// Pins `catalog`'s current snapshot in `pin` for as long as the guard
/// lives, or shares the one pinned already.
pub fn pin_schema(pin: &SchemaPin, catalog: &Catalog) -> PinnedSchema {
    let mut held = pin.lock();
    match &*held {
        Some(snapshot) => PinnedSchema { pin: pin.clone(), snapshot: snapshot.clone(), owner: false },
        None => {
            let snapshot = catalog.schema();
            *held = Some(snapshot.clone());
            PinnedSchema { pin: pin.clone(), snapshot, owner: true }
        }
    }
}

pub type Scratch = Arc<parking_lot::Mutex<std::collections::HashMap<String, datafusion::arrow::array::RecordBatch>>>;

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Resolver({})", self.db)
    }
}

impl Resolver {
    /// The definitions names resolve against: the pinned snapshot while a
    /// statement is planned, the newest otherwise.
    pub fn schema(&self) -> Arc<SchemaSnapshot> {
        self.schema.lock().clone().unwrap_or_else(|| self.catalog.schema())
    }

    /// Pins the catalog's current snapshot until the guard drops.
    pub fn pin_schema(&self) -> PinnedSchema {
        pin_schema(&self.schema, &self.catalog)
    }

    pub(crate) fn user_table(&self, name: &str, with_rowid: bool) -> Option<Arc<dyn TableProvider>> {
        let def = self.schema().table(&self.db, name)?.clone();
        let table = self.catalog.engine_table(&def).ok()?;
        Some(Arc::new(EngineTable::new(def, table, self.txn.clone(), self.notes.clone(), with_rowid)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tessera_engine::{EngineConfig, Node};

    /// A statement's planning reads one version of the catalog: what
    /// another session creates, alters or drops meanwhile is seen by the
    /// next statement, never half by this one.
    #[test]
    fn a_pinned_snapshot_keeps_its_version_while_ddl_runs() {
        let sql = crate::SqlEngine::open(Arc::new(Node::open(EngineConfig::in_memory()).unwrap())).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let mut ddl = sql.session("tessera", "tessera").unwrap();
        let reader = sql.session("tessera", "tessera").unwrap();
        let run = |s: &mut crate::Session, statement: &str| {
            let (_, err) = rt.block_on(s.execute_sql(statement));
            assert!(err.is_none(), "{statement}: {err:?}");
        };
        run(&mut ddl, "CREATE TABLE kept (a int)");

        let pinned = reader.pin_schema();
        let version = pinned.snapshot.version();
        run(&mut ddl, "CREATE TABLE added (a int)");
        run(&mut ddl, "ALTER TABLE kept ADD COLUMN b int");
        assert_eq!(pinned.snapshot.version(), version);
        assert!(pinned.snapshot.table("tessera", "added").is_none());
        assert_eq!(pinned.snapshot.table("tessera", "kept").unwrap().columns.len(), 1);
        // A second pin while the first is held shares it (a view's query
        // planned inside its statement).
        let inner = reader.pin_schema();
        assert_eq!(inner.snapshot.version(), version);
        drop(inner);
        assert_eq!(reader.pin_schema().snapshot.version(), version, "the outer pin stays until it drops");
        drop(pinned);

        let fresh = reader.pin_schema();
        assert!(fresh.snapshot.version() > version);
        assert!(fresh.snapshot.table("tessera", "added").is_some());
        assert_eq!(fresh.snapshot.table("tessera", "kept").unwrap().columns.len(), 2);
    }
}
