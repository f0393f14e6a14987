//! # tessera-server: the PostgreSQL wire protocol
//!
//! Accepts connections (pgwire handles framing, startup and the
//! extended-protocol state machine) and hands every statement to the
//! connection's `tessera_sql::Session`. This crate only translates: rows to
//! DataRow messages in text or binary format (`values`, with the binary
//! layouts of `tessera_sql::values::pg_binary`), Bind parameters to
//! typed values, errors to ErrorResponse with their SQLSTATE, and the
//! session's transaction state to ReadyForQuery.
//!
//! Each connection runs its own message loop (`connection`) over pgwire's
//! pieces, on a corked socket: replies are sent when the server next waits
//! for input, one write per round trip as in PostgreSQL, rather than one
//! per message. Prepared statements carry their fast-path plan
//! (`tessera_sql::fast`), and simple-protocol queries try the fast path
//! before they are parsed for the general path. The most common extended
//! sequence of all, Bind/Describe/Execute/Sync of a prepared fast-path
//! SELECT, is answered by the connection's `lane` without pgwire's portal
//! objects; everything else, and every sequence the lane is not sure of,
//! goes through pgwire as before (the lane hands its portal over first).
//! Sessions run pinned to per-core runtimes of one worker each
//! (`runtimes`), not on the node's work-stealing runtime.
//!
//! On a cluster node the listener is the gateway (`gateway`, `routing`):
//! it reads each connection's startup message and serves the session,
//! relays it to the primary of its database's group, or refuses it. A
//! session served here follows its database's primary when the role
//! moves (`handoff`): between transactions it is opened again on the new
//! primary and the connection relayed there.
//!
//! Limits: a connection cap (excess connections get SQLSTATE 53300 and are
//! closed) and pgwire's message size limit; a malformed message ends only
//! its own connection.

mod connection;
mod gateway;
mod handler;
mod handoff;
mod lane;
mod relayed;
mod routing;
mod runtimes;
mod values;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pgwire::api::auth::AuthDriver;
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::sasl::scram::ScramAuth;
use pgwire::api::{ConnectionManager, PgWireServerHandlers};
use tessera_sql::SqlEngine;
use tokio::net::TcpListener;

use handler::{Conn, Extended, Parser, Startup, server_params};

pub use gateway::{OpenSql, serve_cluster};
pub use handler::AuthMode;
pub use routing::{DatabaseRouting, OpenSqlIn};
pub use runtimes::ConnectionRuntimes;

pub struct ServerConfig {
    pub max_connections: usize,
    pub auth: AuthMode,
    /// PEM certificate chain and private key: clients may then use TLS
    /// (`sslmode=require`).
    pub tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    /// The runtimes client sessions are pinned to; `None` runs them on the
    /// listener's own runtime.
    pub session_runtimes: Option<Arc<ConnectionRuntimes>>,
    /// The count of client connections (served or relayed), kept by the
    /// listener; shared so that the node can report it as a load figure.
    pub connections: Arc<AtomicUsize>,
    /// The cluster's secret, by which nodes vouch for the sessions they
    /// hand over to each other when a primary moves (`handoff`); `None`
    /// on a single node.
    pub cluster_secret: Option<tessera_replication::ClusterSecret>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_connections: 100,
            auth: AuthMode::Auto,
            tls: None,
            session_runtimes: None,
            connections: Arc::default(),
            cluster_secret: None,
        }
    }
}

/// Builds the TLS acceptor from PEM files.
pub fn tls_acceptor(cert: &std::path::Path, key: &std::path::Path) -> Result<pgwire::tokio::TlsAcceptor, String> {
    use pgwire::tokio::tokio_rustls::rustls;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("cannot read TLS certificate {}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("cannot parse TLS certificate {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {}", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("cannot read TLS key {}: {e}", key.display()))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("invalid TLS certificate or key: {e}"))?;
    Ok(pgwire::tokio::TlsAcceptor::from(Arc::new(config)))
}

struct Handlers {
    pub(crate) conn: Arc<Conn>,
    manager: Arc<ConnectionManager>,
    pub(crate) extended: Arc<Extended>,
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
    fn error_handler(&self) -> Arc<impl pgwire::api::ErrorHandler> {
        Arc::new(PostgresCodes)
    }
}

/// Gives pgwire's own protocol errors the SQLSTATEs and messages PostgreSQL
/// uses for them.
struct PostgresCodes;

impl pgwire::api::ErrorHandler for PostgresCodes {
    fn on_error<C: pgwire::api::ClientInfo>(&self, _client: &C, error: &mut pgwire::error::PgWireError) {
        use pgwire::error::{ErrorInfo, PgWireError};
        let (code, message) = match error {
            PgWireError::PortalNotFound(name) => ("34000", format!("portal \"{name}\" does not exist")),
            PgWireError::StatementNotFound(name) => ("26000", format!("prepared statement \"{name}\" does not exist")),
            _ => return,
        };
        *error = PgWireError::UserError(Box::new(ErrorInfo::new("ERROR".into(), code.into(), message)));
    }
}

/// What every connection of a listener shares.
struct Listener {
    active: Arc<AtomicUsize>,
    manager: Arc<ConnectionManager>,
    params: Arc<handler::ServerParams>,
    /// The same for sessions reading on a secondary.
    standby_params: Arc<handler::ServerParams>,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    /// The certificate (PEM) TLS presents, for channel binding.
    cert_pem: Option<Vec<u8>>,
    /// The sessions this node relays, by cancel key.
    relayed: Arc<relayed::Relayed>,
    config: ServerConfig,
}

impl Listener {
    fn new(config: ServerConfig) -> std::io::Result<Listener> {
        let (tls, cert_pem) = match &config.tls {
            Some((cert, key)) => {
                (Some(tls_acceptor(cert, key).map_err(std::io::Error::other)?), Some(std::fs::read(cert)?))
            }
            None => (None, None),
        };
        Ok(Listener {
            active: config.connections.clone(),
            manager: Arc::new(ConnectionManager::new()),
            params: server_params(false),
            standby_params: server_params(true),
            tls,
            cert_pem,
            relayed: Arc::default(),
            config,
        })
    }

    /// Takes a connection slot, or refuses the client (SQLSTATE 53300).
    fn admit(&self, socket: &tokio::net::TcpStream) -> Option<Slot> {
        let _ = socket.set_nodelay(true);
        if self.active.load(Ordering::Acquire) >= self.config.max_connections {
            return None;
        }
        self.active.fetch_add(1, Ordering::AcqRel);
        Some(Slot(self.active.clone()))
    }

    /// Runs a client session against `sql` on its own task (on a session
    /// runtime when there are some). With `moving`, the session follows
    /// its database's primary when this node stops serving as it
    /// (`handoff`).
    fn spawn_session(
        &self,
        socket: tokio::net::TcpStream,
        peer: SocketAddr,
        slot: Slot,
        sql: Arc<SqlEngine>,
        moving: Option<handoff::Moving>,
    ) -> std::io::Result<()> {
        // Second handles on the socket let the idle-in-transaction watchdog
        // and the stop signal close it.
        let std_socket = socket.into_std()?;
        let handles = SocketHandles { watch: std_socket.try_clone()? };
        let (runtime, seat) = match &self.config.session_runtimes {
            Some(runtimes) => {
                let (handle, seat) = runtimes.seat();
                (handle, Some(seat))
            }
            None => (tokio::runtime::Handle::current(), None),
        };
        let session = self.session(peer, sql, moving, handles, self.tls.is_none());
        let tls = self.tls.clone();
        runtime.spawn(async move {
            // Held to the end, even if the connection task panics (pgwire
            // panics on some malformed messages).
            let _held = (slot, seat);
            // Registered with the poller of the runtime it runs on.
            let socket = match tokio::net::TcpStream::from_std(std_socket) {
                Ok(socket) => socket,
                Err(e) => {
                    tracing::warn!(%peer, "cannot serve a connection: {e}");
                    return;
                }
            };
            session.run(|handlers, mover| connection::serve_connection(socket, tls, handlers, mover)).await;
        });
        Ok(())
    }

    /// Runs a session on a connection whose TLS the gateway accepted and
    /// whose startup message it read (`startup`), on the current runtime.
    fn spawn_greeted_session(
        &self,
        tls: Box<pgwire::tokio::tokio_rustls::server::TlsStream<tokio::net::TcpStream>>,
        startup: Vec<u8>,
        peer: SocketAddr,
        slot: Slot,
        sql: Arc<SqlEngine>,
        moving: Option<handoff::Moving>,
    ) -> std::io::Result<()> {
        use std::os::fd::AsFd;
        let tcp = tls.get_ref().0.as_fd();
        let handles = SocketHandles { watch: std::net::TcpStream::from(tcp.try_clone_to_owned()?) };
        let session = self.session(peer, sql, moving, handles, false);
        tokio::spawn(async move {
            let _held = slot;
            session.run(|handlers, mover| connection::serve_greeted(tls, startup, handlers, mover)).await;
        });
        Ok(())
    }

    /// A client session against `sql`, ready to run on a connection.
    fn session(
        &self,
        peer: SocketAddr,
        sql: Arc<SqlEngine>,
        moving: Option<handoff::Moving>,
        handles: SocketHandles,
        plaintext: bool,
    ) -> Session {
        let conn = Arc::new(Conn::new(sql.clone()));
        let params = if sql.is_secondary() { self.standby_params.clone() } else { self.params.clone() };
        let manager = self.manager.clone();
        let handlers = Handlers {
            extended: Arc::new(Extended { conn: conn.clone(), parser: Arc::new(Parser::new(conn.clone())) }),
            startup: Arc::new(Startup {
                conn: conn.clone(),
                driver: AuthDriver::new(params.clone()).with_connection_manager(manager.clone()),
                mode: self.config.auth,
                sasl: scram_handler(&sql, &params, &manager, None),
                sasl_tls: self.cert_pem.as_deref().map(|pem| scram_handler(&sql, &params, &manager, Some(pem))),
                scram: Default::default(),
                handoff: self.config.cluster_secret.clone(),
            }),
            conn: conn.clone(),
            manager,
        };
        let mover = moving.map(|m| handoff::Mover::new(m, self.config.cluster_secret.clone(), self.relayed.clone()));
        Session { peer, conn, handlers, mover, handles, plaintext }
    }
}

/// The SCRAM exchange of one session; with `cert_pem`, offering channel
/// binding to that certificate too.
fn scram_handler(
    sql: &Arc<SqlEngine>,
    params: &Arc<handler::ServerParams>,
    manager: &Arc<ConnectionManager>,
    cert_pem: Option<&[u8]>,
) -> SASLAuthStartupHandler<handler::ServerParams> {
    let mut scram = ScramAuth::new(Arc::new(handler::RoleSecrets { sql: sql.clone() }));
    scram.set_iterations(tessera_sql::ddl::SCRAM_ITERATIONS as usize);
    if let Some(pem) = cert_pem
        && let Err(e) = scram.configure_certificate(pem)
    {
        // (A certificate whose signature algorithm has no channel-binding
        // hash: said once, not per connection.)
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| tracing::warn!("channel binding is not offered: {e}"));
    }
    SASLAuthStartupHandler::new(params.clone()).with_scram(scram).with_connection_manager(manager.clone())
}

/// Second handles on a session's socket, for closing it from outside the
/// message loop.
struct SocketHandles {
    watch: std::net::TcpStream,
}

/// A client session, with what runs beside its message loop.
struct Session {
    peer: SocketAddr,
    conn: Arc<Conn>,
    handlers: Handlers,
    /// How the session follows its database's primary, when it is served
    /// as that primary's.
    mover: Option<handoff::Mover>,
    handles: SocketHandles,
    /// Whether the connection is plaintext (an error frame may then be
    /// written to the socket directly).
    plaintext: bool,
}

impl Session {
    /// Runs the message loop `work` makes of the session's handlers (and
    /// its mover, which hands the session over when this node stops
    /// serving as its primary) to its end, with the idle watchdog beside
    /// it. Then rolls back whatever the client left open.
    async fn run<W>(self, work: impl FnOnce(Handlers, Option<handoff::Mover>) -> W)
    where
        W: std::future::Future<Output = std::io::Result<()>>,
    {
        let Session { peer, conn, handlers, mover, handles, plaintext } = self;
        let work = work(handlers, mover);
        let watchdog = tokio::spawn(idle_watchdog(conn.clone(), handles.watch, plaintext));
        // Runs even if the message loop panics: closes the watchdog's
        // handle on the socket, so the client sees the connection end.
        let _watchdog = AbortOnDrop(watchdog.abort_handle());
        if let Err(e) = work.await {
            tracing::debug!(%peer, "connection ended: {e}");
        }
        // Roll back whatever the client left open.
        if let Some(mut s) = conn.session.lock().await.take() {
            s.reset();
        }
    }
}

/// Resolves when a session must end because this node stopped serving
/// its database as primary.
pub(crate) type Stop = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// A stop that resolves when `stop` turns true (or its sender is gone).
pub(crate) fn stop_when(mut stop: tokio::sync::watch::Receiver<bool>) -> Stop {
    Box::pin(async move {
        let _ = stop.wait_for(|s| *s).await;
    })
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The next connection. A failing accept (out of file descriptors, say)
/// waits for resources to be freed rather than stopping the listener.
async fn accept(listener: &TcpListener) -> (tokio::net::TcpStream, SocketAddr) {
    loop {
        match listener.accept().await {
            Ok(accepted) => return accepted,
            Err(e) => {
                tracing::warn!("cannot accept a connection: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

/// One connection's share of the connection cap, held until it ends.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Serves connections on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, sql: Arc<SqlEngine>, config: ServerConfig) -> std::io::Result<()> {
    let shared = Listener::new(config)?;
    loop {
        let (socket, peer) = accept(&listener).await;
        let Some(slot) = shared.admit(&socket) else {
            tokio::spawn(refuse(socket, "53300", "sorry, too many clients already".into()));
            continue;
        };
        // One client's socket failing (out of file descriptors, say) must
        // not stop the listener.
        if let Err(e) = shared.spawn_session(socket, peer, slot, sql.clone(), None) {
            tracing::warn!(%peer, "cannot serve a connection: {e}");
        }
    }
}

/// Ends a session that stays idle inside a transaction longer than its
/// `idle_in_transaction_session_timeout`: the transaction is rolled back, the
/// client is told (FATAL 25P03) and the connection closed, as in PostgreSQL.
async fn idle_watchdog(conn: Arc<Conn>, socket: std::net::TcpStream, plaintext: bool) {
    use std::io::Write;
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if conn.busy.load(Ordering::Acquire) {
            continue;
        }
        let Ok(mut guard) = conn.session.try_lock() else { continue };
        let Some(session) = guard.as_mut() else { continue };
        let limit = session.info.settings.lock().millis("idle_in_transaction_session_timeout");
        if limit == 0 || session.status() == tessera_sql::TxnStatus::Idle {
            continue;
        }
        let idle = conn.last_active.lock().unwrap_or_else(|e| e.into_inner()).elapsed();
        if idle < std::time::Duration::from_millis(limit) {
            continue;
        }
        tracing::info!(user = %session.info.user, "terminating connection due to idle-in-transaction timeout");
        session.reset();
        let mut socket = socket;
        if plaintext {
            // Nothing else writes while the session is idle.
            let _ =
                socket.write_all(&error_frame("25P03", "terminating connection due to idle-in-transaction timeout"));
        }
        let _ = socket.shutdown(std::net::Shutdown::Both);
        return;
    }
}

/// A FATAL ErrorResponse message.
fn error_frame(code: &str, message: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for (tag, value) in [(b'S', "FATAL"), (b'V', "FATAL"), (b'C', code), (b'M', message)] {
        body.push(tag);
        body.extend_from_slice(value.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut frame = vec![b'E'];
    frame.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

/// Tells a client why it is refused (over the connection limit, or no
/// primary to serve it), in answer to its startup message.
async fn refuse(mut socket: tokio::net::TcpStream, code: &'static str, message: String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = [0u8; 1024];
    let wait = std::time::Duration::from_secs(5);
    let first = tokio::time::timeout(wait, socket.read(&mut buf)).await;
    // libpq asks for TLS (or GSS encryption) first: decline, as PostgreSQL
    // does, so the client reads the refusal as the error it is.
    if let Ok(Ok(8)) = first
        && matches!(u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]), 80_877_103 | 80_877_104)
    {
        if socket.write_all(b"N").await.is_err() {
            return;
        }
        let _ = tokio::time::timeout(wait, socket.read(&mut buf)).await;
    }
    let frame = error_frame(code, &message);
    let _ = socket.write_all(&frame).await;
}
