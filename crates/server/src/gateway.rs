//! Every node of a cluster is a gateway: it accepts PostgreSQL connections
//! whatever its role. A connection to a database with a replication group
//! of its own is routed by its database (`routing`): served where that
//! group's primary is, relayed there, or refused. Every other connection
//! (`tessera`, `postgres`, keyed databases) is the first group's, and
//! - on the primary, serves them with its SQL engine;
//! - on a secondary, forwards them to the primary's PostgreSQL listener
//!   (authentication and the session happen there) — unless the client's
//!   startup options ask for `tessera.read_from=secondary`: then the
//!   secondary serves the session itself, read-only, with a SQL engine over
//!   its replicated engines, as long as it is within the session's
//!   `tessera.max_staleness` of the primary. A plaintext startup message
//!   is peeked at, not consumed, so a forwarded connection is relayed byte
//!   for byte. With TLS the options travel encrypted, so a node with a
//!   certificate accepts the client's TLS itself, reads the startup
//!   message, and then serves the session or relays it to the primary
//!   (in plaintext inside the cluster, as replication travels). A reading
//!   session outlives changes of the node's role: each statement checks
//!   the node's staleness (zero while it is the primary itself);
//! - with no primary (an election, or a lost quorum), holds them for up to
//!   [`PRIMARY_WAIT`] in case one is chosen meanwhile (a failover takes
//!   about a second), then refuses them with SQLSTATE 57P03 and the reason.
//!
//! The SQL engine exists only while this node is primary: it is opened
//! (loading the catalog from the replicated system engine) when the node
//! becomes primary. When the node stops being primary, every session on
//! it gives up its open transaction (before the engines apply another
//! primary's commits) and follows the role to the new primary at its next
//! transaction boundary (`handoff`): the client keeps its connection.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use pgwire::messages::startup::SecretKey;
use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::tokio_rustls::server::TlsStream;
use tessera_replication::Role;
use tessera_sql::SqlEngine;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::handoff::{Locate, Moving};
use crate::relayed::KeyWatch;
use crate::routing::{DatabaseRouting, Reader, Route};
use crate::{Listener, ServerConfig, accept, refuse};

/// How long a new connection waits for its database's group to have a
/// primary before it is refused: long enough to hide a failover (or a
/// group formed a moment ago on another node) from a client that connects
/// meanwhile, short enough to answer well within common connect timeouts
/// when the group has lost its quorum.
pub const PRIMARY_WAIT: Duration = Duration::from_secs(2);

/// How often a waiting connection looks again.
const PRIMARY_POLL: Duration = Duration::from_millis(50);

/// Opens the SQL engine over the node's (replicated) engines.
pub type OpenSql = Arc<dyn Fn() -> Result<Arc<SqlEngine>, String> + Send + Sync>;

enum Serving {
    Primary {
        sql: Arc<SqlEngine>,
        stop: watch::Sender<bool>,
    },
    /// A secondary: forward to the primary at this address, or serve reads
    /// here. Reading sessions outlive changes of role: they read replicated
    /// data whatever the node's role, and each statement checks staleness.
    Forward(String),
    Refuse(String),
}

/// Where a connection of the first group goes, taken from [`Serving`]
/// (and held without its lock).
enum Target {
    Local(Arc<SqlEngine>, watch::Receiver<bool>),
    Forward(String),
    Refuse(String),
}

impl Serving {
    fn target(&self) -> Target {
        match self {
            Serving::Primary { sql, stop } => Target::Local(sql.clone(), stop.subscribe()),
            Serving::Forward(addr) => Target::Forward(addr.clone()),
            Serving::Refuse(why) => Target::Refuse(why.clone()),
        }
    }
}

/// Serves (or forwards, or refuses) connections on `listener` as `roles`
/// says, until the task is dropped.
/// `open_secondary` opens a read-only SQL engine for a session that reads
/// on this node while it is a secondary.
pub async fn serve_cluster(
    listener: TcpListener,
    roles: watch::Receiver<Role>,
    open: OpenSql,
    open_secondary: OpenSql,
    routing: Option<Arc<DatabaseRouting>>,
    config: ServerConfig,
) -> std::io::Result<()> {
    let shared = Arc::new(Listener::new(config)?);
    let serving = Arc::new(RwLock::new(Serving::Refuse("this node is starting".into())));
    let follower = tokio::spawn(follow_roles(roles, open, serving.clone()));
    let _stop_following = crate::AbortOnDrop(follower.abort_handle());
    loop {
        let (socket, peer) = accept(&listener).await;
        let Some(slot) = shared.admit(&socket) else {
            tokio::spawn(refuse(socket, "53300", "sorry, too many clients already".into()));
            continue;
        };
        if let Some(routing) = &routing {
            let (shared, serving, open_secondary) = (shared.clone(), serving.clone(), open_secondary.clone());
            tokio::spawn(serve_routed(shared, serving, open_secondary, routing.clone(), socket, peer, slot));
            continue;
        }
        let (shared, serving, open_secondary) = (shared.clone(), serving.clone(), open_secondary.clone());
        tokio::spawn(serve_first_group(shared, serving, open_secondary, socket, peer, slot));
    }
}

/// A connection on a node without routing: served here on the primary,
/// forwarded on a secondary; while the group has no primary, served as
/// soon as it has one, or refused after [`PRIMARY_WAIT`].
async fn serve_first_group(
    shared: Arc<Listener>,
    serving: Arc<RwLock<Serving>>,
    open_secondary: OpenSql,
    socket: TcpStream,
    peer: std::net::SocketAddr,
    slot: crate::Slot,
) {
    let deadline = tokio::time::Instant::now() + PRIMARY_WAIT;
    loop {
        let target = serving.read().target();
        match target {
            Target::Local(sql, stop) => {
                let moving = Moving { stop: crate::stop_when(stop), locate: locate_first(serving.clone()), gate: None };
                if let Err(e) = shared.spawn_session(socket, peer, slot, sql, Some(moving)) {
                    tracing::warn!(%peer, "cannot serve a connection: {e}");
                }
                return;
            }
            Target::Forward(addr) => return serve_secondary(shared, open_secondary, socket, peer, slot, addr).await,
            Target::Refuse(why) if tokio::time::Instant::now() >= deadline => {
                drop(slot);
                return refuse(socket, "57P03", why).await;
            }
            Target::Refuse(_) => tokio::time::sleep(PRIMARY_POLL).await,
        }
    }
}

/// A connection this secondary received: served here if it asks to read
/// on a secondary, a cancel request for a session here is carried out, and
/// anything else goes to the primary at `addr`.
async fn serve_secondary(
    shared: Arc<Listener>,
    open_secondary: OpenSql,
    socket: TcpStream,
    peer: std::net::SocketAddr,
    slot: crate::Slot,
    addr: String,
) {
    let greeting = greet(socket, shared.tls.as_ref()).await;
    serve_greeted_secondary(shared, open_secondary, greeting, peer, slot, addr).await
}

/// [`serve_secondary`] once the connection has been greeted.
async fn serve_greeted_secondary(
    shared: Arc<Listener>,
    open_secondary: OpenSql,
    greeting: Greeting,
    peer: std::net::SocketAddr,
    slot: crate::Slot,
    addr: String,
) {
    let ask = match &greeting {
        Greeting::Plain(_, ask) | Greeting::Tls(_, _, ask) => ask.clone(),
        Greeting::Gone => return,
    };
    let greeting = match cancel_moved(&shared, greeting).await {
        Some(greeting) => greeting,
        None => return,
    };
    match ask {
        Ask::Secondary(_) => {}
        Ask::Cancel(_, key) if shared.manager.cancel(ask_pid(&ask), &key).await => {
            // One of this node's reading sessions: cancelled here.
            return close_cancel(greeting, &key).await;
        }
        Ask::Primary(_) | Ask::Cancel(..) => {
            let _slot = slot;
            let watch = Some(KeyWatch::new(shared.relayed.clone(), &addr));
            match greeting {
                Greeting::Plain(socket, _) => forward(socket, &addr, watch).await,
                Greeting::Tls(stream, startup, _) => match connect_primary(&addr).await {
                    Ok(primary) => relay_greeted(stream, startup, primary, &addr, watch).await,
                    Err(why) => refuse_greeted(stream, "57P03", &why).await,
                },
                Greeting::Gone => {}
            }
            return;
        }
    }
    let sql = match tokio::task::spawn_blocking(move || open_secondary()).await {
        Ok(Ok(sql)) => Ok(sql),
        Ok(Err(e)) => Err(format!("cannot read on this secondary: {e}")),
        Err(e) => Err(format!("cannot read on this secondary: {e}")),
    };
    let served = match (greeting, sql) {
        (Greeting::Plain(socket, _), Ok(sql)) => shared.spawn_session(socket, peer, slot, sql, None),
        (Greeting::Tls(stream, startup, _), Ok(sql)) => {
            shared.spawn_greeted_session(stream, startup, peer, slot, sql, None)
        }
        (Greeting::Plain(socket, _), Err(why)) => {
            refuse(socket, "57P03", why).await;
            Ok(())
        }
        (Greeting::Tls(stream, _, _), Err(why)) => {
            refuse_greeted(stream, "57P03", &why).await;
            Ok(())
        }
        (Greeting::Gone, _) => Ok(()),
    };
    if let Err(e) = served {
        tracing::warn!(%peer, "cannot serve a connection: {e}");
    }
}

/// A connection on a node that routes by database (see `routing`): served
/// here, relayed to its database's primary, refused, or left to the first
/// group's primary as on a node without routing.
async fn serve_routed(
    shared: Arc<Listener>,
    serving: Arc<RwLock<Serving>>,
    open_secondary: OpenSql,
    routing: Arc<DatabaseRouting>,
    socket: TcpStream,
    peer: std::net::SocketAddr,
    slot: crate::Slot,
) {
    let greeting = greet(socket, shared.tls.as_ref()).await;
    let ask = match &greeting {
        Greeting::Plain(_, ask) | Greeting::Tls(_, _, ask) => ask.clone(),
        Greeting::Gone => return,
    };
    let Some(greeting) = cancel_moved(&shared, greeting).await else { return };
    // A refusal for want of a primary is looked at again until
    // PRIMARY_WAIT has passed; other refusals are final.
    let deadline = tokio::time::Instant::now() + PRIMARY_WAIT;
    loop {
        let (route, waits) = match ask.clone() {
            Ask::Primary(db) => (routing.route(db).await, true),
            Ask::Secondary(db) => match routing.reader(db.clone()).await {
                Reader::Here(sql) => return serve_here(&shared, greeting, peer, slot, sql, None),
                Reader::AsPrimary => (routing.route(db).await, true),
                Reader::Refuse(why) => (Route::Refuse(format!("cannot read on this node: {why}")), false),
                Reader::FirstGroup => (Route::FirstGroup, true),
            },
            // A cancel request for a session this node relays follows it.
            Ask::Cancel(pid, key) => match shared.relayed.target(pid, &key.to_bytes()) {
                Some(addr) => (Route::Relay(addr), false),
                None => (Route::FirstGroup, false),
            },
        };
        let route = if let Route::FirstGroup = route {
            let target = serving.read().target();
            match target {
                Target::Local(sql, stop) => Route::Serve(
                    sql,
                    Moving {
                        stop: crate::stop_when(stop),
                        locate: locate_first(serving.clone()),
                        gate: routing.first_gate(),
                    },
                ),
                // A session for the primary is relayed below (and waits
                // if the primary cannot be reached); anything else is the
                // secondary's to answer.
                Target::Forward(addr) if matches!(ask, Ask::Primary(_)) => Route::Relay(addr),
                Target::Forward(addr) => {
                    return serve_greeted_secondary(shared, open_secondary, greeting, peer, slot, addr).await;
                }
                Target::Refuse(why) => Route::Refuse(why),
            }
        } else {
            route
        };
        match route {
            Route::Serve(sql, moving) => return serve_here(&shared, greeting, peer, slot, sql, Some(moving)),
            Route::Relay(addr) => {
                // A primary that just died is still named by its
                // secondaries for a moment: its listener refuses, and the
                // connection waits for the next primary.
                let primary = match connect_primary(&addr).await {
                    Ok(primary) => primary,
                    Err(_) if waits && tokio::time::Instant::now() < deadline => {
                        tokio::time::sleep(PRIMARY_POLL).await;
                        continue;
                    }
                    Err(why) => return refuse_greeting(greeting, why).await,
                };
                let _slot = slot;
                let watch = Some(KeyWatch::new(shared.relayed.clone(), &addr));
                match greeting {
                    Greeting::Plain(socket, _) => relay(socket, primary, watch).await,
                    Greeting::Tls(stream, startup, _) => relay_greeted(stream, startup, primary, &addr, watch).await,
                    Greeting::Gone => {}
                }
                return;
            }
            Route::Refuse(_) if waits && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(PRIMARY_POLL).await
            }
            Route::Refuse(why) => return refuse_greeting(greeting, why).await,
            Route::FirstGroup => unreachable!("resolved above"),
        }
    }
}

/// Serves a greeted connection's session here, with `sql`.
fn serve_here(
    shared: &Listener,
    greeting: Greeting,
    peer: std::net::SocketAddr,
    slot: crate::Slot,
    sql: Arc<SqlEngine>,
    moving: Option<Moving>,
) {
    let served = match greeting {
        Greeting::Plain(socket, _) => shared.spawn_session(socket, peer, slot, sql, moving),
        Greeting::Tls(stream, startup, _) => shared.spawn_greeted_session(stream, startup, peer, slot, sql, moving),
        Greeting::Gone => Ok(()),
    };
    if let Err(e) = served {
        tracing::warn!(%peer, "cannot serve a connection: {e}");
    }
}

/// Where the first group's sessions go once this node stops serving as
/// its primary: the new primary, as this node's replica names it.
fn locate_first(serving: Arc<RwLock<Serving>>) -> Locate {
    Arc::new(move || {
        let target = serving.read().target();
        Box::pin(async move {
            match target {
                Target::Forward(addr) => Some(addr),
                _ => None,
            }
        })
    })
}

/// Carries out a cancel request for a session handed over from this node
/// to a new primary (`handoff`): sent there, with the session's key there.
/// Gives the greeting back when it is not such a request.
async fn cancel_moved(shared: &Listener, greeting: Greeting) -> Option<Greeting> {
    let (pid, key) = match &greeting {
        Greeting::Plain(_, Ask::Cancel(pid, key)) | Greeting::Tls(_, _, Ask::Cancel(pid, key)) => (*pid, key.clone()),
        _ => return Some(greeting),
    };
    let Some((addr, new_key)) = shared.relayed.moved(pid, &key.to_bytes()) else { return Some(greeting) };
    crate::relayed::send_cancel(&addr, &new_key).await;
    close_cancel(greeting, &key).await;
    None
}

fn ask_pid(ask: &Ask) -> i32 {
    match ask {
        Ask::Cancel(pid, _) => *pid,
        _ => 0,
    }
}

/// Closes a cancel request's connection once it is carried out: as in
/// PostgreSQL, the connection just closes (cleanly: the request consumed,
/// TLS closed with its closing message).
async fn close_cancel(greeting: Greeting, key: &SecretKey) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    match greeting {
        Greeting::Plain(mut socket, _) => {
            // The request was peeked: 12 bytes and the key.
            let mut request = vec![0u8; 12 + key.to_bytes().len()];
            let _ = socket.read_exact(&mut request).await;
            let _ = socket.shutdown().await;
        }
        Greeting::Tls(mut stream, _, _) => {
            let _ = stream.shutdown().await;
        }
        Greeting::Gone => {}
    }
}

/// Refuses a greeted connection (57P03), telling it why.
async fn refuse_greeting(greeting: Greeting, why: String) {
    match greeting {
        Greeting::Plain(socket, _) => refuse(socket, "57P03", why).await,
        Greeting::Tls(stream, _, _) => refuse_greeted(stream, "57P03", &why).await,
        Greeting::Gone => {}
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

/// What the gateway learned from a connection's first messages.
enum Greeting {
    /// A plaintext connection, and what its first message asks. Nothing was
    /// consumed but a declined SSL or GSS encryption request: the message
    /// is still there for the session or the relay. A connection that
    /// starts otherwise (a direct TLS handshake, a malformed or slow start)
    /// is one for the primary.
    Plain(TcpStream, Ask),
    /// A TLS connection, accepted here (the options travel encrypted), with
    /// its first message read from it (whole, length included), and what
    /// that asks.
    Tls(Box<TlsStream<TcpStream>>, Vec<u8>, Ask),
    /// The client left, its TLS handshake failed, or it was refused.
    Gone,
}

/// What a connection's first message asks of this secondary.
#[derive(Clone)]
enum Ask {
    /// A session on the primary, of this database (when the message names one).
    Primary(Option<String>),
    /// A session reading on this secondary, of this database.
    Secondary(Option<String>),
    /// To cancel the statement of the session with this key: one of this
    /// node's reading sessions, or else one on the primary.
    Cancel(i32, SecretKey),
}

const SSL_REQUEST: u32 = 80877103;
const GSSENC_REQUEST: u32 = 80877104;
const CANCEL_REQUEST: u32 = 80877102;

/// The longest startup message the gateway reads (PostgreSQL's limit).
const MAX_STARTUP: usize = 10_000;

/// What a whole first message (`message`, length included) asks.
fn ask_of(message: &[u8]) -> Ask {
    let code = u32::from_be_bytes(message[4..8].try_into().expect("8 bytes"));
    if code == CANCEL_REQUEST && message.len() >= 16 {
        let pid = i32::from_be_bytes(message[8..12].try_into().expect("12 bytes"));
        return Ask::Cancel(pid, SecretKey::Bytes(bytes::Bytes::copy_from_slice(&message[12..])));
    }
    let db = startup_database(&message[8..]);
    if startup_asks_secondary(&message[8..]) { Ask::Secondary(db) } else { Ask::Primary(db) }
}

/// Finds out what a connection asks: to read on this secondary
/// (`options=-c tessera.read_from=secondary`, or the same as its own
/// startup parameter), to cancel a statement, or a session on the primary.
/// A plaintext first message is peeked at, not consumed. An SSL request
/// (most clients send one first) is declined ('N', as the primary would)
/// on a node without TLS; on a node with TLS it is accepted here, so that
/// the options can be read.
async fn greet(mut socket: TcpStream, tls: Option<&TlsAcceptor>) -> Greeting {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let mut buf = vec![0u8; 16 << 10];
    loop {
        let n = match tokio::time::timeout_at(deadline, socket.peek(&mut buf)).await {
            Ok(Ok(n)) => n,
            _ => return Greeting::Plain(socket, Ask::Primary(None)),
        };
        if n == 0 {
            return Greeting::Gone;
        }
        if n >= 4 {
            let len = u32::from_be_bytes(buf[..4].try_into().expect("4 bytes")) as usize;
            if len < 8 || len > buf.len() {
                return Greeting::Plain(socket, Ask::Primary(None));
            }
            if n >= len {
                let code = u32::from_be_bytes(buf[4..8].try_into().expect("4 bytes"));
                if len == 8 && (code == SSL_REQUEST || code == GSSENC_REQUEST) {
                    let mut request = [0u8; 8];
                    if socket.read_exact(&mut request).await.is_err() {
                        return Greeting::Gone;
                    }
                    match tls {
                        Some(tls) if code == SSL_REQUEST => {
                            if socket.write_all(b"S").await.is_err() {
                                return Greeting::Gone;
                            }
                            return greet_tls(socket, tls).await;
                        }
                        _ => {
                            if socket.write_all(b"N").await.is_err() {
                                return Greeting::Gone;
                            }
                            continue;
                        }
                    }
                }
                let ask = ask_of(&buf[..len]);
                return Greeting::Plain(socket, ask);
            }
        }
        // The rest of the message is on its way.
        tokio::time::sleep(Duration::from_millis(2)).await;
        if tokio::time::Instant::now() >= deadline {
            return Greeting::Plain(socket, Ask::Primary(None));
        }
    }
}

/// Accepts TLS on a connection whose SSL request was answered 'S', and
/// reads the first message from it, within the time a session has for its
/// startup.
async fn greet_tls(socket: TcpStream, tls: &TlsAcceptor) -> Greeting {
    use tokio::io::AsyncReadExt;
    let deadline = tokio::time::Instant::now() + crate::connection::STARTUP_TIMEOUT;
    let read = async {
        let mut stream = Box::new(tls.accept(socket).await.ok()?);
        let mut len = [0u8; 4];
        stream.read_exact(&mut len).await.ok()?;
        let len = u32::from_be_bytes(len) as usize;
        if !(8..=MAX_STARTUP).contains(&len) {
            refuse_greeted(stream, "08P01", "invalid length of startup packet").await;
            return Some(Greeting::Gone);
        }
        let mut message = vec![0u8; len];
        message[..4].copy_from_slice(&(len as u32).to_be_bytes());
        stream.read_exact(&mut message[4..]).await.ok()?;
        let code = u32::from_be_bytes(message[4..8].try_into().expect("8 bytes"));
        if code == SSL_REQUEST || code == GSSENC_REQUEST {
            let what = "an encryption request inside an encrypted connection";
            refuse_greeted(stream, "08P01", &format!("unsupported frontend protocol: {what}")).await;
            return Some(Greeting::Gone);
        }
        let ask = ask_of(&message);
        Some(Greeting::Tls(stream, message, ask))
    };
    tokio::time::timeout_at(deadline, read).await.ok().flatten().unwrap_or(Greeting::Gone)
}

/// The database a startup message names (`params`: its name/value pairs),
/// which is the user's name when it names none, as in PostgreSQL.
fn startup_database(params: &[u8]) -> Option<String> {
    let mut parts = params.split(|b| *b == 0).map(|p| String::from_utf8_lossy(p).into_owned());
    let (mut db, mut user) = (None, None);
    while let (Some(name), Some(value)) = (parts.next(), parts.next()) {
        match name.as_str() {
            "" => break,
            "database" if !value.is_empty() => db = Some(value),
            "user" => user = Some(value),
            _ => {}
        }
    }
    db.or(user)
}

/// `params`: a startup message's name/value pairs (NUL-terminated strings).
fn startup_asks_secondary(params: &[u8]) -> bool {
    let mut parts = params.split(|b| *b == 0).map(|p| String::from_utf8_lossy(p).into_owned());
    let secondary = |name: &str, value: &str| {
        name.replace('-', "_").eq_ignore_ascii_case("tessera.read_from") && value.eq_ignore_ascii_case("secondary")
    };
    while let (Some(name), Some(value)) = (parts.next(), parts.next()) {
        if name.is_empty() {
            break;
        }
        if secondary(&name, &value) {
            return true;
        }
        if name == "options" && crate::handler::startup_options(&value).iter().any(|(k, v)| secondary(k, v)) {
            return true;
        }
    }
    false
}

/// Connects to the primary's PostgreSQL listener.
pub(crate) async fn connect_primary(addr: &str) -> Result<TcpStream, String> {
    let primary = match tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(format!("cannot reach the primary at {addr}: {e}")),
        Err(_) => return Err(format!("cannot reach the primary at {addr}: timed out")),
    };
    if primary.local_addr().ok() == primary.peer_addr().ok() {
        // Connected to itself (TCP simultaneous open): the primary is down.
        return Err(format!("cannot reach the primary at {addr}: connection refused"));
    }
    let _ = primary.set_nodelay(true);
    Ok(primary)
}

/// Relays a client to the primary's PostgreSQL listener, byte for byte
/// (the client's TLS negotiation, if any, happens there).
async fn forward(client: TcpStream, addr: &str, watch: Option<KeyWatch>) {
    let primary = match connect_primary(addr).await {
        Ok(primary) => primary,
        Err(why) => return refuse(client, "57P03", why).await,
    };
    relay(client, primary, watch).await;
}

/// How long one direction of a relay may go on once the other has ended.
const RELAY_GRACE: Duration = Duration::from_secs(5);

/// Copies bytes both ways between a client and the primary until either
/// side ends, then lets the other direction finish what it was sending
/// (within [`RELAY_GRACE`]): a client that goes silent after the primary
/// closed its session does not hold the relay, nor its connection slot.
/// `watch` looks for the session's cancel key in what the primary sends.
pub(crate) async fn relay<C, P>(client: C, primary: P, watch: Option<KeyWatch>)
where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    P: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    relay_with_grace(client, primary, RELAY_GRACE, watch).await
}

async fn relay_with_grace<C, P>(client: C, primary: P, grace: Duration, mut watch: Option<KeyWatch>)
where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    P: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut client_in, mut client_out) = tokio::io::split(client);
    let (mut primary_in, mut primary_out) = tokio::io::split(primary);
    let up = async {
        let _ = tokio::io::copy(&mut client_in, &mut primary_out).await;
        let _ = primary_out.shutdown().await;
    };
    let down = async {
        let mut buf = vec![0u8; 8 << 10];
        loop {
            let n = match primary_in.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if let Some(w) = watch.as_mut() {
                w.feed(&buf[..n]);
            }
            if client_out.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = client_out.shutdown().await;
    };
    tokio::pin!(up, down);
    tokio::select! {
        _ = &mut up => { let _ = tokio::time::timeout(grace, down).await; }
        _ = &mut down => { let _ = tokio::time::timeout(grace, up).await; }
    }
}

/// Relays a client whose TLS this node accepted to the primary: the
/// startup message first, then everything both ways. Inside the cluster
/// the session travels in plaintext, as replication does; authentication
/// is the primary's, unchanged (SCRAM passes through; channel binding,
/// which ties it to the client's TLS, is not offered there).
async fn relay_greeted(
    client: Box<TlsStream<TcpStream>>,
    startup: Vec<u8>,
    mut primary: TcpStream,
    addr: &str,
    watch: Option<KeyWatch>,
) {
    use tokio::io::AsyncWriteExt;
    if primary.write_all(&startup).await.is_err() {
        return refuse_greeted(client, "57P03", &format!("cannot reach the primary at {addr}: connection lost")).await;
    }
    relay(client, primary, watch).await;
}

/// Tells a client whose startup message was read why it is refused.
async fn refuse_greeted(mut client: Box<TlsStream<TcpStream>>, code: &str, message: &str) {
    use tokio::io::AsyncWriteExt;
    let _ = client.write_all(&crate::error_frame(code, message)).await;
    let _ = client.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (k, v) in pairs {
            out.extend_from_slice(k.as_bytes());
            out.push(0);
            out.extend_from_slice(v.as_bytes());
            out.push(0);
        }
        out.push(0);
        out
    }

    fn message(code: u32, body: &[u8]) -> Vec<u8> {
        let mut out = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&code.to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn a_first_message_asks_for_the_primary_a_secondary_or_a_cancel() {
        let reading = message(196608, &params(&[("user", "u"), ("tessera.read_from", "secondary")]));
        assert!(matches!(ask_of(&reading), Ask::Secondary(Some(db)) if db == "u"));
        let plain = message(196608, &params(&[("user", "u"), ("database", "d")]));
        assert!(matches!(ask_of(&plain), Ask::Primary(Some(db)) if db == "d"));
        let mut key = 77i32.to_be_bytes().to_vec();
        key.extend_from_slice(&[1, 2, 3, 4]);
        match ask_of(&message(CANCEL_REQUEST, &key)) {
            Ask::Cancel(pid, secret) => {
                assert_eq!(pid, 77);
                assert!(secret.eq_value(&SecretKey::I32(0x01020304)));
            }
            _ => panic!("a cancel request was not recognised"),
        }
        // Protocol 3.2's longer keys too.
        let mut long = 5i32.to_be_bytes().to_vec();
        long.extend_from_slice(&[9u8; 32]);
        assert!(matches!(ask_of(&message(CANCEL_REQUEST, &long)), Ask::Cancel(5, _)));
    }

    /// A relay ends once the primary has closed and the client stays
    /// silent, instead of holding its connection slot for good.
    #[tokio::test]
    async fn a_relay_ends_when_one_side_has_closed() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut client, client_side) = tokio::io::duplex(1024);
        let (primary_side, mut primary) = tokio::io::duplex(1024);
        let grace = Duration::from_millis(100);
        let relaying = tokio::spawn(relay_with_grace(client_side, primary_side, grace, None));
        primary.write_all(b"bye").await.unwrap();
        drop(primary);
        let mut got = Vec::new();
        client.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"bye");
        // The client neither writes nor closes: the relay still ends.
        tokio::time::timeout(Duration::from_secs(10), relaying).await.expect("the relay never ended").unwrap();
        drop(client);
    }

    #[test]
    fn the_startup_message_chooses_where_a_session_runs() {
        assert!(startup_asks_secondary(&params(&[("user", "u"), ("options", "-c tessera.read_from=secondary")])));
        assert!(startup_asks_secondary(&params(&[("options", "--tessera.read-from=Secondary -c jit=off")])));
        assert!(startup_asks_secondary(&params(&[("tessera.read_from", "secondary")])));
        assert!(!startup_asks_secondary(&params(&[("options", "-c tessera.read_from=primary")])));
        assert!(!startup_asks_secondary(&params(&[("user", "u"), ("database", "d")])));
        assert!(!startup_asks_secondary(b"garbage"));
    }
}
