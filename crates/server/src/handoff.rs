//! Sessions that outlive a move of their database's primary.
//!
//! A session runs where its database's primary is. When the primary role
//! moves (a drain, a balancing move, a leadership transfer), the node stops
//! serving the database, and its sessions would have to end (FATAL 57P01)
//! for their clients to reconnect. A planned move is the one failover a
//! database can hide, so instead the session is *handed over*: at a
//! transaction boundary, the node opens a session on the new primary for
//! the same role and database, with the session's settings and its named
//! prepared statements, and from then on relays the client's connection
//! there, byte for byte. The client sees nothing.
//!
//! - **Where:** only between transactions, at a ReadyForQuery, so that no
//!   statement is half answered and no transaction's state has to travel.
//!   A session idle between transactions is handed over at once.
//! - **A transaction in flight** cannot continue on another node (its
//!   writes are this engine's, uncommitted). The statement under way
//!   finishes (a COMMIT gets its real answer); then the block is rolled
//!   back and its next statement — a COMMIT too — fails once with 40001
//!   (retryable: "run the transaction again"); after the client's ROLLBACK
//!   the session is idle and handed over. One retryable error per
//!   transaction in flight, never an unknown outcome.
//! - **Trust:** the new primary accepts the session without the client's
//!   password because the old one vouches for it: the startup message
//!   carries [`HANDOFF_PARAM`], an HMAC under the cluster's secret of the
//!   role, the database and the time, good for [`TOKEN_LIFETIME`]. Only a
//!   node of the cluster can make one (as only a node can join it).
//! - **Cancel requests** the client sends to this node with its old key
//!   follow the session, rewritten with the new session's key (`relayed`).
//! - **What does not travel:** `currval`/`lastval` of the session, and
//!   unnamed statements and portals (which end with their transaction
//!   anyway). A handover that fails (no new primary within [`MOVE_WAIT`],
//!   or the new one refuses) ends the session with 57P01, as before.
//! - A session that cannot reach a boundary within [`MOVE_GRACE`] of the
//!   move (a statement that will not finish, a client idle in an aborted
//!   block) is ended with 57P01.
//!
//! The old node keeps relaying: a client connected to a node that is later
//! taken down loses its connection then, as any client of that node does.

use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::SinkExt;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, METADATA_DATABASE, METADATA_USER};
use pgwire::error::ErrorInfo;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{MaybeTls, PgWireMessageServerCodec};
use tessera_replication::{ClusterSecret, MoveGate, OpenWork};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::codec::Framed;

use crate::Stop;
use crate::connection::Corked;
use crate::handler::{Conn, Prepared};
use crate::relayed::{MovedKey, Relayed};

/// The startup parameter by which a node hands a session to another.
pub(crate) const HANDOFF_PARAM: &str = "tessera.handoff";

/// How long a handover token is good for (clocks of a cluster's nodes
/// agree far better than this).
const TOKEN_LIFETIME: u64 = 60;

/// How long a handover looks for the new primary (an election after a
/// transfer takes well under a second).
pub(crate) const MOVE_WAIT: Duration = Duration::from_secs(5);

/// How long after the move a session may take to reach a transaction
/// boundary before it is ended.
pub(crate) const MOVE_GRACE: Duration = Duration::from_secs(30);

/// The largest message read from the new primary while the session is set
/// up there (all of them are small).
const MAX_SETUP_MESSAGE: usize = 1 << 20;

/// Finds the PostgreSQL address of the database's new primary (None while
/// it is not known, or while it is still this node).
pub(crate) type Locate =
    Arc<dyn Fn() -> Pin<Box<dyn std::future::Future<Output = Option<String>> + Send>> + Send + Sync>;

/// How a session learns that it must move, and where to.
pub(crate) struct Moving {
    /// Resolves when this node stops serving the database as primary.
    pub stop: Stop,
    pub locate: Locate,
    /// The database's group's gate, through which a planned move is
    /// announced before it happens (None where the node has none).
    pub gate: Option<Arc<MoveGate>>,
}

/// What a session's message loop needs to hand its session over.
pub(crate) struct Mover {
    /// Until it resolves (then None).
    stop: Option<Stop>,
    /// When the move began.
    since: Option<Instant>,
    locate: Locate,
    secret: Option<ClusterSecret>,
    relayed: Arc<Relayed>,
    gate: Option<(Arc<MoveGate>, tokio::sync::watch::Receiver<bool>)>,
    /// Since when the session holds its next transaction (a planned move
    /// is under way).
    holding_since: Option<Instant>,
    /// The session's statement or transaction under way, as the gate counts it.
    work: Option<OpenWork>,
}

/// What happened to a session's move.
pub(crate) enum MoveEvent {
    /// The node stopped serving the session's database as primary.
    Stopped,
    /// The session did not reach a boundary in time.
    Expired,
    /// A planned move began or ended: whether to hold the session changed.
    Announced,
}

/// How long a session holds its next transaction for a planned move that
/// does not happen (the hand-over itself gives up after about 6 s).
const HOLD_LIMIT: Duration = Duration::from_secs(8);

impl Mover {
    pub(crate) fn new(moving: Moving, secret: Option<ClusterSecret>, relayed: Arc<Relayed>) -> Mover {
        let gate = moving.gate.map(|g| {
            let watch = g.watch();
            (g, watch)
        });
        Mover {
            stop: Some(moving.stop),
            since: None,
            locate: moving.locate,
            secret,
            relayed,
            gate,
            holding_since: None,
            work: None,
        }
    }

    pub(crate) fn stopped(&self) -> bool {
        self.since.is_some()
    }

    /// Whether an idle session holds its next transaction now: a planned
    /// move is announced and has not yet happened (nor taken too long).
    pub(crate) fn holds(&mut self) -> bool {
        let announced = self.since.is_none() && self.gate.as_ref().is_some_and(|(_, w)| *w.borrow());
        if !announced {
            self.holding_since = None;
            return false;
        }
        self.holding_since.get_or_insert_with(Instant::now).elapsed() < HOLD_LIMIT
    }

    /// Counts the session's work from a message on (until [`Self::idle`]),
    /// so that a planned move waits a moment for it.
    pub(crate) fn working(&mut self) {
        if self.work.is_none() {
            self.work = self.gate.as_ref().map(|(g, _)| g.open_work());
        }
    }

    /// The session is between transactions again.
    pub(crate) fn idle(&mut self) {
        self.work = None;
    }

    async fn event(&mut self) -> MoveEvent {
        let Mover { stop, since, gate, holding_since, .. } = self;
        match (stop.as_mut(), *since) {
            (Some(s), _) => {
                let announced = async {
                    match gate {
                        Some((_, watch)) => match holding_since {
                            Some(held) => {
                                let _ = tokio::time::timeout_at(*held + HOLD_LIMIT, watch.changed()).await;
                            }
                            None => {
                                if watch.changed().await.is_err() {
                                    std::future::pending::<()>().await;
                                }
                            }
                        },
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = s => {
                        *stop = None;
                        *since = Some(Instant::now());
                        MoveEvent::Stopped
                    }
                    _ = announced => MoveEvent::Announced,
                }
            }
            (None, Some(since)) => {
                tokio::time::sleep_until(since + MOVE_GRACE).await;
                MoveEvent::Expired
            }
            (None, None) => std::future::pending().await,
        }
    }
}

/// The next event of a session's move (never, for a session that does not move).
pub(crate) async fn next_event(mover: &mut Option<Mover>) -> MoveEvent {
    match mover {
        Some(m) => m.event().await,
        None => std::future::pending().await,
    }
}

/// The token a node presents for a session of `user` in `db` at `secs`
/// (seconds since the epoch).
pub(crate) fn token(secret: &ClusterSecret, user: &str, db: &str, secs: u64) -> String {
    let proof = secret.sign(b"session handoff", token_message(user, db, secs).as_bytes());
    format!("{secs}.{}", hex(&proof))
}

/// Whether `token` vouches for a session of `user` in `db` now.
pub(crate) fn token_is_good(secret: &ClusterSecret, user: &str, db: &str, token: &str) -> bool {
    let Some((secs, proof)) = token.split_once('.') else { return false };
    let (Ok(secs), Some(proof)) = (secs.parse::<u64>(), unhex(proof)) else { return false };
    now_secs().abs_diff(secs) <= TOKEN_LIFETIME
        && secret.verify(b"session handoff", token_message(user, db, secs).as_bytes(), &proof)
}

fn token_message(user: &str, db: &str, secs: u64) -> String {
    format!("{user}\0{db}\0{secs}")
}

pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

/// The named prepared statements a client made over the extended
/// protocol, with their text and parameter types, as its Parse messages
/// said (pgwire's store keeps only the parsed form).
#[derive(Default)]
pub(crate) struct NamedStatements(BTreeMap<String, (String, Vec<u32>)>);

impl NamedStatements {
    pub(crate) fn observe(&mut self, msg: &PgWireFrontendMessage) {
        match msg {
            PgWireFrontendMessage::Parse(p) => {
                if let Some(name) = p.name.as_ref().filter(|n| !n.is_empty()) {
                    self.0.insert(name.clone(), (p.query.clone(), p.type_oids.clone()));
                }
            }
            PgWireFrontendMessage::Close(c) if c.target_type == b'S' => {
                if let Some(name) = &c.name {
                    self.0.remove(name);
                }
            }
            _ => {}
        }
    }
}

/// The framed client connection of a session.
pub(crate) type ClientSocket = Framed<Corked<MaybeTls>, PgWireMessageServerCodec<Prepared>>;

/// What is needed to set the session up on the new primary.
struct Handover {
    user: String,
    db: String,
    settings: Vec<(&'static str, String)>,
    statements: Vec<(String, String, Vec<u32>)>,
    old_key: (i32, Vec<u8>),
}

/// Whether a session (with no statement under way) is outside any
/// transaction block, and so can be handed over at its next
/// ReadyForQuery; a block still open is given up first (see the module
/// notes), so that the session can be once the client ends it.
pub(crate) async fn give_up_block(conn: &Conn) -> bool {
    let mut guard = conn.session.lock().await;
    let Some(session) = guard.as_mut() else { return true };
    match session.status() {
        tessera_sql::TxnStatus::Idle => true,
        tessera_sql::TxnStatus::InBlock => {
            session.abandon_block(moved_error());
            false
        }
        tessera_sql::TxnStatus::Failed => false,
    }
}

/// What the statement after a move reports in a transaction in flight.
fn moved_error() -> tessera_sql::SqlError {
    tessera_sql::SqlError::new(
        tessera_sql::error::code::SERIALIZATION,
        "the transaction was rolled back because its database's primary moved to another node",
    )
    .with_hint("Run the transaction again (after ROLLBACK): the session continues on the new primary.")
}

/// Hands the session over to the new primary and relays the connection
/// there until either side ends it; or, when that cannot be done, ends the
/// session (57P01).
pub(crate) async fn hand_off(
    mut socket: ClientSocket,
    conn: &Conn,
    mover: Mover,
    statements: &NamedStatements,
) -> io::Result<()> {
    let Mover { locate, secret, relayed, .. } = mover;
    let handover = {
        let guard = conn.session.lock().await;
        let settings = guard.as_ref().map(|s| s.info.settings.lock().changed()).unwrap_or_default();
        let meta = socket.metadata();
        let user = meta.get(METADATA_USER).cloned().unwrap_or_default();
        let db = meta.get(METADATA_DATABASE).cloned().unwrap_or_else(|| user.clone());
        let store = socket.portal_store();
        let statements = statements
            .0
            .iter()
            .filter(|(name, _)| store.get_statement(name).is_some_and(|e| e.value().is_some()))
            .map(|(name, (query, oids))| (name.clone(), query.clone(), oids.clone()))
            .collect();
        let (pid, key) = socket.pid_and_secret_key();
        Handover { user, db, settings, statements, old_key: (pid, key.to_bytes().to_vec()) }
    };
    let reached = match &secret {
        Some(secret) => reach_new_primary(&locate, secret, &handover).await,
        None => Err("this node cannot vouch for sessions (it has no cluster secret)".to_string()),
    };
    let (backend, addr, new_key) = match reached {
        Ok(reached) => reached,
        Err(why) => {
            tracing::info!(user = %handover.user, db = %handover.db, "a session could not follow its primary: {why}");
            return end_session(socket, &format!("terminating connection: this node is no longer the primary, and the session could not move to the new one ({why}); reconnect")).await;
        }
    };
    // The local session had nothing open; it ends here.
    if let Some(mut s) = conn.session.lock().await.take() {
        s.reset();
    }
    tracing::debug!(user = %handover.user, db = %handover.db, %addr, "session handed over to the new primary");
    socket.flush().await.map_err(io::Error::other)?;
    let parts = socket.into_parts();
    let mut client = parts.io;
    client.drain().await?;
    let (client, pending) = (client.into_inner(), parts.read_buf);
    // (The codec, dropped here, unregisters the old key from cancels.)
    drop(parts.codec);
    let _moved = MovedKey::new(relayed, handover.old_key.clone(), addr, new_key);
    let mut backend = backend;
    if !pending.is_empty() {
        backend.write_all(&pending).await?;
    }
    crate::gateway::relay(client, backend, None).await;
    Ok(())
}

/// Ends the session with FATAL 57P01, `message` saying why.
pub(crate) async fn end_session(mut socket: ClientSocket, message: &str) -> io::Result<()> {
    let error = ErrorInfo::new("FATAL".into(), "57P01".into(), message.to_string());
    let _ = socket.send(PgWireBackendMessage::ErrorResponse(error.into())).await;
    let _ = socket.flush().await;
    socket.get_mut().drain().await
}

/// The session set up on the new primary: its connection, its address and
/// its cancel key.
type Reached = (TcpStream, String, (i32, Vec<u8>));

/// Finds the new primary and sets the session up there, trying again
/// while [`MOVE_WAIT`] lasts (the role may still be on its way).
async fn reach_new_primary(locate: &Locate, secret: &ClusterSecret, handover: &Handover) -> Result<Reached, String> {
    let deadline = Instant::now() + MOVE_WAIT;
    let mut last = "the new primary is not known yet".to_string();
    while Instant::now() < deadline {
        if let Some(addr) = locate().await {
            match set_up(&addr, secret, handover).await {
                Ok((stream, key)) => return Ok((stream, addr, key)),
                Err(Setup::Refused(why)) => return Err(why),
                Err(Setup::Unreachable(why)) => last = why,
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(last)
}

enum Setup {
    /// Worth trying again (the listener is not there yet).
    Unreachable(String),
    /// The new primary answered with an error.
    Refused(String),
}

/// Opens the session on the primary at `addr`: startup with the handover
/// token and the session's settings, then its named statements prepared
/// again. Returns the connection, ready for the client's next message,
/// and the new session's cancel key.
async fn set_up(addr: &str, secret: &ClusterSecret, h: &Handover) -> Result<(TcpStream, (i32, Vec<u8>)), Setup> {
    let mut stream = crate::gateway::connect_primary(addr).await.map_err(Setup::Unreachable)?;
    let token = token(secret, &h.user, &h.db, now_secs());
    let mut params: Vec<(&str, &str)> = vec![("user", &h.user), ("database", &h.db), (HANDOFF_PARAM, &token)];
    params.extend(h.settings.iter().map(|(k, v)| (*k, v.as_str())));
    let io = |e: io::Error| Setup::Unreachable(format!("the new primary at {addr}: {e}"));
    stream.write_all(&startup_message(&params)).await.map_err(io)?;
    let key = read_until_ready(&mut stream, addr).await?.unwrap_or_default();
    if !h.statements.is_empty() {
        let mut out = Vec::new();
        for (name, query, oids) in &h.statements {
            out.extend(parse_message(name, query, oids));
        }
        out.extend(message(b'S', &[]));
        stream.write_all(&out).await.map_err(io)?;
        read_until_ready(&mut stream, addr).await?;
    }
    Ok((stream, key))
}

/// Reads the new primary's answers up to its ReadyForQuery; returns the
/// cancel key it sent, if it sent one. An error or a request for a
/// password refuses the handover.
async fn read_until_ready(stream: &mut TcpStream, addr: &str) -> Result<Option<(i32, Vec<u8>)>, Setup> {
    let refused = |why: String| Setup::Refused(format!("the new primary at {addr}: {why}"));
    let mut key = None;
    loop {
        let mut head = [0u8; 5];
        let read = tokio::time::timeout(MOVE_WAIT, stream.read_exact(&mut head)).await;
        match read {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(refused(e.to_string())),
            Err(_) => return Err(refused("no answer".into())),
        }
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        if !(4..=MAX_SETUP_MESSAGE).contains(&len) {
            return Err(refused(format!("a malformed message ({len} bytes)")));
        }
        let mut body = vec![0u8; len - 4];
        stream.read_exact(&mut body).await.map_err(|e| refused(e.to_string()))?;
        match head[0] {
            b'Z' => return Ok(key),
            b'K' if body.len() >= 8 => {
                key = Some((i32::from_be_bytes([body[0], body[1], body[2], body[3]]), body[4..].to_vec()));
            }
            b'R' if body.get(..4) != Some(&[0, 0, 0, 0]) => {
                return Err(refused("it asked for a password".into()));
            }
            b'E' => return Err(refused(error_text(&body))),
            _ => {}
        }
    }
}

/// The SQLSTATE and message of an ErrorResponse body.
fn error_text(body: &[u8]) -> String {
    let mut code = "";
    let mut text = "";
    for field in body.split(|b| *b == 0) {
        match field.first() {
            Some(b'C') => code = std::str::from_utf8(&field[1..]).unwrap_or(""),
            Some(b'M') => text = std::str::from_utf8(&field[1..]).unwrap_or(""),
            _ => {}
        }
    }
    format!("{code} {text}")
}

fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

fn startup_message(params: &[(&str, &str)]) -> Vec<u8> {
    let mut body = 196_608u32.to_be_bytes().to_vec(); // protocol 3.0
    for (k, v) in params {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut out = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    out.extend(body);
    out
}

fn parse_message(name: &str, query: &str, oids: &[u32]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(name.as_bytes());
    body.push(0);
    body.extend_from_slice(query.as_bytes());
    body.push(0);
    body.extend_from_slice(&(oids.len() as u16).to_be_bytes());
    for oid in oids {
        body.extend_from_slice(&oid.to_be_bytes());
    }
    message(b'P', &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_vouches_for_its_role_and_database_only_and_only_for_a_while() {
        let secret = ClusterSecret::new(b"s3cret");
        let now = now_secs();
        let t = token(&secret, "alice", "shop", now);
        assert!(token_is_good(&secret, "alice", "shop", &t));
        assert!(!token_is_good(&secret, "bob", "shop", &t));
        assert!(!token_is_good(&secret, "alice", "other", &t));
        assert!(!token_is_good(&ClusterSecret::new(b"another"), "alice", "shop", &t));
        let old = token(&secret, "alice", "shop", now - TOKEN_LIFETIME - 5);
        assert!(!token_is_good(&secret, "alice", "shop", &old));
        for bad in ["", "x", "12.zz", &t[..t.len() - 1], &format!("{}{}", now + 1, &t[t.find('.').unwrap()..])] {
            assert!(!token_is_good(&secret, "alice", "shop", bad), "{bad}");
        }
    }

    #[test]
    fn named_statements_follow_parse_and_close() {
        use pgwire::messages::extendedquery::{Close, Parse};
        let mut s = NamedStatements::default();
        let parse =
            |name: &str, q: &str| PgWireFrontendMessage::Parse(Parse::new(Some(name.into()), q.into(), vec![23]));
        s.observe(&parse("a", "SELECT $1"));
        s.observe(&parse("", "SELECT 2"));
        s.observe(&parse("b", "SELECT 3"));
        s.observe(&PgWireFrontendMessage::Close(Close::new(b'S', Some("b".into()))));
        s.observe(&PgWireFrontendMessage::Close(Close::new(b'P', Some("a".into()))));
        assert_eq!(s.0.keys().collect::<Vec<_>>(), ["a"]);
        assert_eq!(s.0["a"], ("SELECT $1".to_string(), vec![23]));
    }

    #[test]
    fn an_error_response_reads_as_its_code_and_message() {
        assert_eq!(error_text(b"SFATAL\0C28000\0Mno such role\0\0"), "28000 no such role");
    }
}
