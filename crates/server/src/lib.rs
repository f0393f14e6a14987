//! # tessera-server: the PostgreSQL wire protocol
//!
//! Accepts connections (pgwire handles framing, startup and the
//! extended-protocol state machine) and hands every statement to the
//! connection's `tessera_sql::Session`. This crate only translates: rows to
//! DataRow messages in text or binary format (`values`), Bind parameters to
//! typed values, errors to ErrorResponse with their SQLSTATE, and the
//! session's transaction state to ReadyForQuery.
//!
//! Limits: a connection cap (excess connections get SQLSTATE 53300 and are
//! closed) and pgwire's message size limit; a malformed message ends only
//! its own connection.

mod handler;
mod values;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pgwire::api::auth::AuthDriver;
use pgwire::api::{ConnectionManager, PgWireServerHandlers};
use pgwire::tokio::process_socket;
use tessera_sql::SqlEngine;
use tokio::net::TcpListener;

use handler::{Conn, Extended, Parser, Startup, server_params};

pub struct ServerConfig {
    pub max_connections: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig { max_connections: 100 }
    }
}

struct Handlers {
    conn: Arc<Conn>,
    manager: Arc<ConnectionManager>,
    extended: Arc<Extended>,
    startup: Arc<Startup>,
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl pgwire::api::query::SimpleQueryHandler> {
        self.conn.clone()
    }
    fn extended_query_handler(&self) -> Arc<impl pgwire::api::query::ExtendedQueryHandler> {
        self.extended.clone()
    }
    fn startup_handler(&self) -> Arc<impl pgwire::api::auth::StartupHandler> {
        self.startup.clone()
    }
    fn copy_handler(&self) -> Arc<impl pgwire::api::copy::CopyHandler> {
        self.conn.clone()
    }
    // A CancelRequest names a backend by the key sent at startup; pgwire then
    // drops that connection's running statement future.
    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        Arc::new(pgwire::api::cancel::DefaultCancelHandler::new(self.manager.clone()))
    }
}

/// Serves connections on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, sql: Arc<SqlEngine>, config: ServerConfig) -> std::io::Result<()> {
    let active = Arc::new(AtomicUsize::new(0));
    let manager = Arc::new(ConnectionManager::new());
    let params = server_params();
    loop {
        let (socket, peer): (_, SocketAddr) = listener.accept().await?;
        let _ = socket.set_nodelay(true);
        if active.load(Ordering::Acquire) >= config.max_connections {
            tokio::spawn(refuse(socket));
            continue;
        }
        active.fetch_add(1, Ordering::AcqRel);
        let conn = Arc::new(Conn { sql: sql.clone(), session: Default::default(), copy: Default::default() });
        let handlers = Handlers {
            extended: Arc::new(Extended { conn: conn.clone(), parser: Arc::new(Parser::new(conn.clone())) }),
            startup: Arc::new(Startup {
                conn: conn.clone(),
                driver: AuthDriver::new(params.clone()).with_connection_manager(manager.clone()),
            }),
            conn: conn.clone(),
            manager: manager.clone(),
        };
        let active = active.clone();
        tokio::spawn(async move {
            if let Err(e) = process_socket(socket, None, handlers).await {
                tracing::debug!(%peer, "connection ended: {e}");
            }
            // Roll back whatever the client left open.
            if let Some(mut s) = conn.session.lock().await.take() {
                s.reset();
            }
            active.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

/// Tells a client over the connection limit why it is refused.
async fn refuse(mut socket: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = [0u8; 1024];
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), socket.read(&mut buf)).await;
    let msg = "Ssorry, too many clients already\0";
    let mut body = Vec::new();
    body.push(b'S');
    body.extend_from_slice(b"FATAL\0");
    body.push(b'C');
    body.extend_from_slice(b"53300\0");
    body.push(b'M');
    body.extend_from_slice(&msg.as_bytes()[1..]);
    body.push(0);
    let mut frame = vec![b'E'];
    frame.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    let _ = socket.write_all(&frame).await;
}
