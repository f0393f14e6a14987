//! What one statement sees, below planning: its session's identity and
//! settings ([`SessionInfo`]), and the [`Resolver`] — the catalog, the
//! database, the session's transaction and the rows a statement binds to
//! a name — through which DataFusion's catalog (`plan::context`) and the
//! system views (`system`) find tables.
//!
//! It sits above `storage` (whose catalog and transactions it names) and
//! below `system`, `plan` and `session`, which all read it.

pub mod output;
pub mod settings;

use std::sync::Arc;

use datafusion::datasource::TableProvider;
use parking_lot::Mutex;

use crate::scope::settings::Settings;
use crate::storage::catalog::Catalog;
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
}

pub type Scratch = Arc<parking_lot::Mutex<std::collections::HashMap<String, datafusion::arrow::array::RecordBatch>>>;

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Resolver({})", self.db)
    }
}

impl Resolver {
    pub(crate) fn user_table(&self, name: &str, with_rowid: bool) -> Option<Arc<dyn TableProvider>> {
        let def = self.catalog.table(&self.db, name)?;
        let table = self.catalog.engine_table(&def).ok()?;
        Some(Arc::new(EngineTable::new(def, table, self.txn.clone(), self.notes.clone(), with_rowid)))
    }
}
