//! The SQL layer of a node, shared by its sessions: the node's engines and
//! catalog, and — on a secondary serving reads — what keeps its sessions
//! read-only and within their staleness bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use datafusion::sql::sqlparser::ast::Statement;
use parking_lot::Mutex;
use tessera_engine::Node;

use crate::error::{Result, SqlError, code};
use crate::session::Session;
use crate::storage::catalog::Catalog;
use crate::storage::cluster_view::SecondaryState;

/// The SQL layer shared by all sessions of a node.
pub struct SqlEngine {
    /// Open sessions per database (DROP DATABASE refuses while there are).
    pub(crate) connected: Mutex<std::collections::HashMap<String, usize>>,
    pub node: Arc<Node>,
    pub catalog: Arc<Catalog>,
    next_pid: AtomicI32,
    /// Set on a secondary serving reads: its sessions are read-only and
    /// check their staleness before each statement.
    secondary: Option<Arc<dyn SecondaryState>>,
}

impl SqlEngine {
    pub fn open(node: Arc<Node>) -> Result<Arc<SqlEngine>> {
        let catalog = Catalog::open(node.clone())?;
        Ok(SqlEngine::new(node, catalog, None))
    }

    /// Opens a read-only SQL engine over a secondary's replicated engines:
    /// the catalog is loaded as replicated so far (nothing is written), and
    /// every session refuses writes (25006) and reads only while the node
    /// is within the session's `tessera.max_staleness` of the primary.
    pub fn open_secondary(node: Arc<Node>, state: Arc<dyn SecondaryState>) -> Result<Arc<SqlEngine>> {
        let catalog = Catalog::open_replica(node.clone())?;
        Ok(SqlEngine::new(node, catalog, Some(state)))
    }

    /// Opens the SQL engine a cluster node serves the databases whose own
    /// groups it leads with: its catalog follows the cluster's catalog as
    /// replicated to this node (reloading when DDL arrives, as a
    /// secondary's does), and its sessions write their database's home
    /// (which this node leads) but nothing cluster-wide.
    pub fn open_follower(node: Arc<Node>) -> Result<Arc<SqlEngine>> {
        let catalog = Catalog::open_replica(node.clone())?;
        Ok(SqlEngine::new(node, catalog, None))
    }

    /// Opens the SQL engine of the primary of the cluster's catalog, which
    /// tidies (drops tables no catalog entry owns) only in the streams
    /// `maintains` accepts: those of its own group.
    pub fn open_maintaining(
        node: Arc<Node>,
        maintains: Arc<dyn Fn(u32) -> bool + Send + Sync>,
    ) -> Result<Arc<SqlEngine>> {
        let catalog = Catalog::open_maintaining(node.clone(), maintains)?;
        Ok(SqlEngine::new(node, catalog, None))
    }

    fn new(node: Arc<Node>, catalog: Arc<Catalog>, secondary: Option<Arc<dyn SecondaryState>>) -> Arc<SqlEngine> {
        Arc::new(SqlEngine { connected: Default::default(), node, catalog, next_pid: AtomicI32::new(1000), secondary })
    }

    pub fn is_secondary(&self) -> bool {
        self.secondary.is_some()
    }

    /// Opens a session for `user` on database `db`.
    pub fn session(self: &Arc<Self>, user: &str, db: &str) -> Result<Session> {
        // A replica's catalog may not have loaded the database yet.
        self.catalog.refresh_if_changed()?;
        if self.catalog.database(db).is_none() {
            return Err(SqlError::new(code::UNDEFINED_DATABASE, format!("database \"{db}\" does not exist")));
        }
        if !self.is_secondary()
            && let Err(e) = self.catalog.finish_left_work(db)
        {
            tracing::warn!(db, "what a former primary left half done stays so for now: {}", e.message);
        }
        match self.catalog.role(user) {
            None => return Err(SqlError::new(code::INVALID_AUTH, format!("role \"{user}\" does not exist"))),
            Some(r) if !r.login => {
                return Err(SqlError::new(code::INVALID_AUTH, format!("role \"{user}\" is not permitted to log in")));
            }
            Some(_) => {}
        }
        let pid = self.next_pid.fetch_add(1, Ordering::Relaxed);
        *self.connected.lock().entry(db.to_string()).or_default() += 1;
        Ok(Session::new(self.clone(), user, db, pid))
    }

    /// How many sessions are connected to database `db`.
    pub fn sessions_on(&self, db: &str) -> usize {
        self.connected.lock().get(db).copied().unwrap_or(0)
    }

    /// On a secondary, statements other than queries fail as in a
    /// read-only transaction (25006).
    pub(crate) fn refuse_writes(&self, stmt: &Statement) -> Result<()> {
        let reads = match stmt {
            Statement::Query(_) => true,
            Statement::Explain { statement, .. } => matches!(**statement, Statement::Query(_)),
            _ => false,
        };
        if reads || self.secondary.is_none() {
            return Ok(());
        }
        let what = stmt.to_string().split_whitespace().next().unwrap_or("this statement").to_uppercase();
        Err(SqlError::new(
            code::READ_ONLY_TXN,
            format!(
                "cannot execute {what} on a secondary: this session reads from one (tessera.read_from = secondary)"
            ),
        )
        .with_hint("Connect without tessera.read_from = secondary to reach the primary.".to_string()))
    }

    /// On a secondary, whether the node is within `bound` of the primary
    /// (57P03 when it is not, or cannot tell).
    pub(crate) fn check_staleness(&self, bound: Duration) -> Result<()> {
        let Some(state) = &self.secondary else { return Ok(()) };
        match state.staleness() {
            // Fresh enough: the catalog follows DDL replicated since.
            Some(lag) if lag <= bound => self.catalog.refresh_if_changed(),
            lag => Err(SqlError::new(
                code::CANNOT_CONNECT_NOW,
                match lag {
                    Some(lag) => format!(
                        "this secondary is {} ms behind the primary, more than tessera.max_staleness ({} ms)",
                        lag.as_millis(),
                        bound.as_millis()
                    ),
                    None => {
                        "this secondary cannot tell how far behind the primary it is (no primary heard from)".into()
                    }
                },
            )
            .with_hint("Retry, raise tessera.max_staleness, or read from the primary.".to_string())),
        }
    }
}
