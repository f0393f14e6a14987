//! Every node of a cluster is a gateway: it accepts PostgreSQL connections
//! whatever its role, and
//! - on the primary, serves them with its SQL engine;
//! - on a secondary, forwards them, byte for byte, to the primary's
//!   PostgreSQL listener (the client's TLS negotiation, authentication and
//!   session all happen there);
//! - with no primary (an election, or a lost quorum), refuses them with
//!   SQLSTATE 57P03 and the reason.
//!
//! The SQL engine exists only while this node is primary: it is opened
//! (loading the catalog from the replicated system engine) when the node
//! becomes primary, and when the node stops being primary every session
//! on it ends (FATAL 57P01), before the engines apply another primary's
//! commits. Clients reconnect — to any node — and reach the new primary.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tessera_replication::Role;
use tessera_sql::SqlEngine;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::{Listener, ServerConfig, accept, refuse};

/// Opens the SQL engine over the node's (replicated) engines.
pub type OpenSql = Arc<dyn Fn() -> Result<Arc<SqlEngine>, String> + Send + Sync>;

enum Serving {
    Primary { sql: Arc<SqlEngine>, stop: watch::Sender<bool> },
    Forward(String),
    Refuse(String),
}

/// Serves (or forwards, or refuses) connections on `listener` as `roles`
/// says, until the task is dropped.
pub async fn serve_cluster(
    listener: TcpListener,
    roles: watch::Receiver<Role>,
    open: OpenSql,
    config: ServerConfig,
) -> std::io::Result<()> {
    let shared = Listener::new(config)?;
    let serving = Arc::new(RwLock::new(Serving::Refuse("this node is starting".into())));
    let follower = tokio::spawn(follow_roles(roles, open, serving.clone()));
    let _stop_following = AbortOnDrop(follower);
    loop {
        let (socket, peer) = accept(&listener).await;
        let Some(slot) = shared.admit(&socket) else {
            tokio::spawn(refuse(socket, "53300", "sorry, too many clients already".into()));
            continue;
        };
        enum Target {
            Local(Arc<SqlEngine>, watch::Receiver<bool>),
            Forward(String),
            Refuse(String),
        }
        let target = match &*serving.read() {
            Serving::Primary { sql, stop } => Target::Local(sql.clone(), stop.subscribe()),
            Serving::Forward(addr) => Target::Forward(addr.clone()),
            Serving::Refuse(why) => Target::Refuse(why.clone()),
        };
        match target {
            Target::Local(sql, stop) => {
                if let Err(e) = shared.spawn_session(socket, peer, slot, sql, Some(stop)) {
                    tracing::warn!(%peer, "cannot serve a connection: {e}");
                }
            }
            Target::Forward(addr) => {
                tokio::spawn(async move {
                    let _slot = slot;
                    forward(socket, &addr).await;
                });
            }
            Target::Refuse(why) => {
                drop(slot);
                tokio::spawn(refuse(socket, "57P03", why));
            }
        }
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn follow_roles(mut roles: watch::Receiver<Role>, open: OpenSql, serving: Arc<RwLock<Serving>>) {
    loop {
        let role = roles.borrow_and_update().clone();
        let next = match role {
            Role::Primary => {
                if matches!(&*serving.read(), Serving::Primary { .. }) {
                    None
                } else {
                    // Not forwarding to the previous primary meanwhile: it
                    // may be the node that forwards here.
                    *serving.write() = Serving::Refuse("this node is becoming the primary".into());
                    let open = open.clone();
                    match tokio::task::spawn_blocking(move || open()).await {
                        Ok(Ok(sql)) => Some(Serving::Primary { sql, stop: watch::channel(false).0 }),
                        Ok(Err(e)) => {
                            tracing::error!("cannot open the SQL engine on this primary: {e}");
                            Some(Serving::Refuse(format!("the primary cannot open its catalog: {e}")))
                        }
                        Err(e) => Some(Serving::Refuse(format!("the primary cannot open its catalog: {e}"))),
                    }
                }
            }
            Role::Secondary { info, .. } => Some(Serving::Forward(info.pg_addr)),
            Role::Unavailable(why) => Some(Serving::Refuse(why)),
            Role::Starting => Some(Serving::Refuse("this node is starting".into())),
        };
        if let Some(next) = next {
            let old = std::mem::replace(&mut *serving.write(), next);
            if let Serving::Primary { stop, .. } = old {
                // Sessions end; their transactions roll back when dropped.
                let _ = stop.send(true);
            }
        }
        if roles.changed().await.is_err() {
            return;
        }
    }
}

/// Relays a client to the primary's PostgreSQL listener.
async fn forward(mut client: TcpStream, addr: &str) {
    let primary = match tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return refuse(client, "57P03", format!("cannot reach the primary at {addr}: {e}")).await,
        Err(_) => return refuse(client, "57P03", format!("cannot reach the primary at {addr}: timed out")).await,
    };
    let _ = primary.set_nodelay(true);
    let mut primary = primary;
    let _ = tokio::io::copy_bidirectional(&mut client, &mut primary).await;
}
