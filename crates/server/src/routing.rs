//! Routing a connection by its database. On a cluster every keyless
//! database (but `tessera` and `postgres`) has a replication group of its
//! own, whose primary may be any node holding the cluster's catalog; the
//! gateway reads the startup message's `database` and
//! - serves the session here when this node is that group's primary, with
//!   the node's *follower* SQL engine (its catalog follows the cluster's
//!   catalog as replicated here; its sessions write the homes this node
//!   leads), handing it over to the new primary (`handoff`) when this
//!   node stops leading the group;
//! - relays it to the group's primary (as this node's replica of the group
//!   names it, or as the partition manager last saw it where this node
//!   holds no replica);
//! - refuses it (57P03) while the group has no primary;
//! - and leaves every other database (`tessera`, `postgres`, databases
//!   from older data directories, names this node's catalog does not
//!   know yet) to the first group's
//!   primary, as before.

use std::sync::Arc;

use parking_lot::Mutex;
use tessera_replication::{Groups, Role};
use tessera_sql::SqlEngine;

use crate::Stop;
use crate::gateway::OpenSql;
use crate::handoff::{Locate, Moving};

/// Opens a read-only SQL engine over this node's replica of group `g`.
pub type OpenSqlIn = Arc<dyn Fn(u32) -> Result<Arc<SqlEngine>, String> + Send + Sync>;

/// What routing by database needs of the node.
pub struct DatabaseRouting {
    groups: Groups,
    open_follower: OpenSql,
    open_secondary_in: OpenSqlIn,
    /// The follower engine, once opened (it needs the cluster's catalog
    /// to have reached this node).
    follower: Mutex<Option<Arc<SqlEngine>>>,
}

/// Where a connection goes.
pub(crate) enum Route {
    /// To the first group's primary (not a database with a group of its own).
    FirstGroup,
    /// Served here, moving with the database's primary.
    Serve(Arc<SqlEngine>, Moving),
    /// Relayed to this PostgreSQL address.
    Relay(String),
    Refuse(String),
}

impl DatabaseRouting {
    pub fn new(groups: Groups, open_follower: OpenSql, open_secondary_in: OpenSqlIn) -> Arc<DatabaseRouting> {
        Arc::new(DatabaseRouting { groups, open_follower, open_secondary_in, follower: Mutex::new(None) })
    }

    /// The follower engine, opened on first use (blocking: loads the catalog).
    fn follower(&self) -> Option<Arc<SqlEngine>> {
        let mut f = self.follower.lock();
        if f.is_none() {
            match (self.open_follower)() {
                Ok(sql) => *f = Some(sql),
                Err(e) => tracing::debug!("the catalog cannot be read on this node yet: {e}"),
            }
        }
        f.clone()
    }

    /// The group of database `db`'s home, as this node's replica of the
    /// cluster's catalog knows it (blocking).
    fn group_of(&self, db: &str) -> Option<u32> {
        let sql = self.follower()?;
        if let Err(e) = sql.catalog.refresh_if_changed() {
            tracing::debug!("the catalog did not reload: {e}");
        }
        sql.catalog.database(db)?.home
    }

    /// How many sessions this node serves of the database whose home is
    /// group `group` (as its primary: the follower engine's sessions).
    pub fn sessions_in(&self, group: u32) -> usize {
        let Some(sql) = self.follower.lock().clone() else { return 0 };
        let db = sql.catalog.databases().into_iter().find(|d| d.home == Some(group));
        db.map_or(0, |d| sql.sessions_on(&d.name))
    }

    /// How the first group's sessions learn of a planned move of its primary.
    pub(crate) fn first_gate(&self) -> Option<Arc<tessera_replication::MoveGate>> {
        self.groups.system_move_gate()
    }

    /// Where a session of database `db` runs.
    pub(crate) async fn route(self: &Arc<Self>, db: Option<String>) -> Route {
        let Some(db) = db else { return Route::FirstGroup };
        let this = self.clone();
        let name = db.clone();
        let Ok((group, sql)) = tokio::task::spawn_blocking(move || (this.group_of(&name), this.follower())).await
        else {
            return Route::FirstGroup;
        };
        let Some(group) = group else { return Route::FirstGroup };
        let role = self.groups.role_of(group);
        let current = role.as_ref().map(|r| r.borrow().clone());
        match current {
            Some(Role::Primary) => match (sql, role) {
                (Some(sql), Some(mut role)) => {
                    let stop: Stop = Box::pin(async move {
                        let _ = role.wait_for(|r| *r != Role::Primary).await;
                    });
                    let gate = self.groups.move_gate_of(group);
                    Route::Serve(sql, Moving { stop, locate: locate_db(self.clone(), db), gate })
                }
                _ => Route::Refuse("this node cannot read the cluster's catalog yet".into()),
            },
            Some(Role::Secondary { info, .. }) => Route::Relay(info.pg_addr),
            Some(Role::Unavailable(why)) => Route::Refuse(format!("the database's replicas have no primary: {why}")),
            Some(Role::Starting) | None => match self.groups.primary_of(group) {
                Some((_, info)) => Route::Relay(info.pg_addr),
                None => Route::Refuse("the database's primary is not known on this node yet; try again shortly".into()),
            },
        }
    }

    /// Where a session reading database `db` on this node (`tessera.read_from
    /// = secondary`) runs: here, read-only, when `db` has a group of its
    /// own and this node holds a secondary replica of it; as any session
    /// does where this node is its primary (as on the first group's
    /// primary); the first group's way for the other databases.
    pub(crate) async fn reader(self: &Arc<Self>, db: Option<String>) -> Reader {
        let Some(db) = db else { return Reader::FirstGroup };
        let this = self.clone();
        let Ok(Some(group)) = tokio::task::spawn_blocking(move || this.group_of(&db)).await else {
            return Reader::FirstGroup;
        };
        let role = self.groups.role_of(group).map(|r| r.borrow().clone());
        match role {
            Some(Role::Primary) => Reader::AsPrimary,
            Some(Role::Secondary { .. }) => {
                let open = self.open_secondary_in.clone();
                match tokio::task::spawn_blocking(move || open(group)).await {
                    Ok(Ok(sql)) => Reader::Here(sql),
                    Ok(Err(e)) => Reader::Refuse(e),
                    Err(e) => Reader::Refuse(e.to_string()),
                }
            }
            _ => Reader::Refuse("this node holds no replica of the database".into()),
        }
    }
}

/// Where a session of database `db` goes once this node stops serving as
/// its primary: to the new primary, as routing finds it.
fn locate_db(routing: Arc<DatabaseRouting>, db: String) -> Locate {
    Arc::new(move || {
        let (routing, db) = (routing.clone(), db.clone());
        Box::pin(async move {
            match routing.route(Some(db)).await {
                Route::Relay(addr) => Some(addr),
                _ => None,
            }
        })
    })
}

/// Where a reading session goes.
pub(crate) enum Reader {
    FirstGroup,
    /// This node is the database's primary: as any session.
    AsPrimary,
    Here(Arc<SqlEngine>),
    Refuse(String),
}
