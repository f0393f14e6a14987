//! Authenticated, multiplexed request/response between nodes, over TCP.
//!
//! A connection starts with the handshake (`auth`), then carries any number
//! of concurrent calls as envelopes (`frame`), matched to their replies by
//! id. The bodies are opaque bytes here: the services above give them
//! meaning (`service`).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use parking_lot::Mutex;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio_util::bytes::Bytes;

use super::auth::{ClusterSecret, PROTOCOL_VERSION, accept_peer, introduce};
use super::frame::{Envelope, Wire, framed};
use crate::error::{ReplicationError, Result};

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// What a server does with a request from an authenticated peer. It is
/// called for each request of a connection in the order they arrived, and
/// its futures then run concurrently: work done before returning the
/// future (such as queueing the request for an ordered consumer) keeps the
/// peer's order.
pub type Handler = Arc<dyn Fn(u64, Bytes) -> Pin<Box<dyn Future<Output = Vec<u8>> + Send>> + Send + Sync>;

/// Which nodes have a connection open to this node's listener, and what
/// is to be done when a node's last one closes. A node that dies (a crash,
/// a kill) has its sockets closed by its kernel, so its connections end at
/// once: what this node holds for it (a transaction a session of that node
/// left open here, holding rows) can be let go at once, not after a
/// timeout meant for a caller that is merely slow.
#[derive(Default)]
pub struct Presence {
    open: Mutex<HashMap<u64, usize>>,
    on_gone: Mutex<Vec<GoneHook>>,
}

/// What is done with a node's id when its last connection closes.
type GoneHook = Box<dyn Fn(u64) + Send + Sync>;

impl Presence {
    /// Calls `f` with a node's id whenever its last connection closes.
    pub fn on_gone(&self, f: impl Fn(u64) + Send + Sync + 'static) {
        self.on_gone.lock().push(Box::new(f));
    }

    fn arrived(&self, node: u64) {
        *self.open.lock().entry(node).or_default() += 1;
    }

    fn left(&self, node: u64) {
        let last = {
            let mut open = self.open.lock();
            let n = open.entry(node).or_default();
            *n = n.saturating_sub(1);
            let last = *n == 0;
            if last {
                open.remove(&node);
            }
            last
        };
        if last {
            for f in self.on_gone.lock().iter() {
                f(node);
            }
        }
    }
}

/// Accepts peers on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, secret: ClusterSecret, handler: Handler) {
    serve_version(listener, secret, PROTOCOL_VERSION, handler, Arc::default()).await
}

/// Like [`serve`], keeping `presence` up to date with the peers connected.
pub async fn serve_tracked(listener: TcpListener, secret: ClusterSecret, handler: Handler, presence: Arc<Presence>) {
    serve_version(listener, secret, PROTOCOL_VERSION, handler, presence).await
}

async fn serve_version(
    listener: TcpListener,
    secret: ClusterSecret,
    version: u32,
    handler: Handler,
    presence: Arc<Presence>,
) {
    loop {
        let Ok((socket, peer)) = listener.accept().await else { continue };
        let secret = secret.clone();
        let handler = handler.clone();
        let presence = presence.clone();
        tokio::spawn(async move {
            let mut wire = framed(socket);
            let accepted = accept_peer(&mut wire, &secret, version);
            let node = match tokio::time::timeout(HANDSHAKE_TIMEOUT, accepted).await {
                Ok(Ok(node)) => node,
                Ok(Err(e)) => {
                    tracing::warn!(%peer, "refused a cluster connection: {e}");
                    return;
                }
                Err(_) => return,
            };
            presence.arrived(node);
            serve_peer(wire, node, handler).await;
            presence.left(node);
        });
    }
}

async fn serve_peer(wire: Wire, node: u64, handler: Handler) {
    let (mut sink, mut stream) = StreamExt::split::<Bytes>(wire);
    let (tx, mut rx) = mpsc::unbounded_channel::<Envelope>();
    let writer = tokio::spawn(async move {
        while let Some(reply) = rx.recv().await {
            if sink.send(reply.encode()).await.is_err() {
                break;
            }
        }
    });
    while let Some(Ok(frame)) = stream.next().await {
        let Some((id, body)) = Envelope::decode(frame) else { break };
        // The handler is called here, in the order the requests arrived
        // (what it does before its future first awaits happens in that
        // order: see `Handler`); the futures run concurrently.
        let reply = handler(node, body);
        let tx = tx.clone();
        tokio::spawn(async move {
            let body = reply.await;
            let _ = tx.send(Envelope { id, body });
        });
    }
    writer.abort();
}

/// A request sent, its reply still to come.
pub struct PendingReply {
    conn: Arc<Connection>,
    id: u64,
    rx: oneshot::Receiver<Bytes>,
    addr: String,
}

impl PendingReply {
    /// Waits at most `timeout` for the reply.
    pub async fn wait(self, timeout: Duration) -> Result<Bytes> {
        match tokio::time::timeout(timeout, self.rx).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => Err(ReplicationError::Unreachable(format!("connection to {} closed", self.addr))),
            Err(_) => {
                self.conn.waiting.lock().remove(&self.id);
                Err(ReplicationError::Timeout(format!("{} did not answer within {timeout:?}", self.addr)))
            }
        }
    }
}

/// One authenticated connection to a peer, shared by concurrent calls.
struct Connection {
    out: mpsc::UnboundedSender<Envelope>,
    waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<Bytes>>>>,
    next: AtomicU64,
    closed: Arc<AtomicBool>,
}

/// A client for one peer: connects on first use and again after a failure.
pub struct RpcClient {
    addr: String,
    me: u64,
    secret: ClusterSecret,
    /// `PROTOCOL_VERSION` (another in tests).
    version: u32,
    conn: tokio::sync::Mutex<Option<Arc<Connection>>>,
}

impl RpcClient {
    pub fn new(addr: String, me: u64, secret: ClusterSecret) -> RpcClient {
        RpcClient { addr, me, secret, version: PROTOCOL_VERSION, conn: tokio::sync::Mutex::new(None) }
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Sends one request; the reply is awaited with [`PendingReply::wait`].
    /// Requests sent one after another by one task reach the peer's
    /// handler in that order (one connection, one writer).
    pub async fn send(&self, body: Vec<u8>) -> Result<PendingReply> {
        let conn = self.connection().await?;
        let id = conn.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        conn.waiting.lock().insert(id, tx);
        if conn.out.send(Envelope { id, body }).is_err() {
            conn.waiting.lock().remove(&id);
            self.forget(&conn).await;
            return Err(ReplicationError::Unreachable(format!("connection to {} closed", self.addr)));
        }
        Ok(PendingReply { conn, id, rx, addr: self.addr.clone() })
    }

    /// Sends one request and waits (at most `timeout`) for its reply.
    pub async fn call(&self, body: Vec<u8>, timeout: Duration) -> Result<Bytes> {
        let PendingReply { conn, id, rx, .. } = self.send(body).await?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => {
                self.forget(&conn).await;
                Err(ReplicationError::Unreachable(format!("connection to {} closed", self.addr)))
            }
            Err(_) => {
                conn.waiting.lock().remove(&id);
                Err(ReplicationError::Timeout(format!("{} did not answer within {timeout:?}", self.addr)))
            }
        }
    }

    async fn forget(&self, conn: &Arc<Connection>) {
        let mut slot = self.conn.lock().await;
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            *slot = None;
        }
    }

    async fn connection(&self) -> Result<Arc<Connection>> {
        let mut slot = self.conn.lock().await;
        if let Some(c) = slot.as_ref()
            && !c.closed.load(Ordering::Acquire)
        {
            return Ok(c.clone());
        }
        let socket = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&self.addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(ReplicationError::Unreachable(format!("{}: {e}", self.addr))),
            Err(_) => return Err(ReplicationError::Unreachable(format!("{}: connect timed out", self.addr))),
        };
        if socket.local_addr().ok() == socket.peer_addr().ok() {
            // TCP's simultaneous open connected a socket to itself: the peer
            // is down and the kernel picked its port as ours. Holding on would
            // keep the peer from binding its port when it comes back.
            return Err(ReplicationError::Unreachable(format!(
                "{}: connection refused (connected to itself)",
                self.addr
            )));
        }
        let mut wire = framed(socket);
        tokio::time::timeout(HANDSHAKE_TIMEOUT, introduce(&mut wire, &self.addr, self.me, &self.secret, self.version))
            .await
            .map_err(|_| ReplicationError::Unreachable(format!("{}: handshake timed out", self.addr)))??;
        let conn = Arc::new(spawn_connection(wire));
        *slot = Some(conn.clone());
        Ok(conn)
    }
}

fn spawn_connection(wire: Wire) -> Connection {
    let (mut sink, mut stream) = StreamExt::split::<Bytes>(wire);
    let (out, mut rx) = mpsc::unbounded_channel::<Envelope>();
    let waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<Bytes>>>> = Arc::default();
    let closed = Arc::new(AtomicBool::new(false));
    let writer_closed = closed.clone();
    tokio::spawn(async move {
        while let Some(req) = rx.recv().await {
            if sink.send(req.encode()).await.is_err() {
                break;
            }
        }
        writer_closed.store(true, Ordering::Release);
    });
    let reader_waiting = waiting.clone();
    let reader_closed = closed.clone();
    tokio::spawn(async move {
        while let Some(Ok(frame)) = stream.next().await {
            let Some((id, body)) = Envelope::decode(frame) else { break };
            if let Some(tx) = reader_waiting.lock().remove(&id) {
                let _ = tx.send(body);
            }
        }
        reader_closed.store(true, Ordering::Release);
        // Callers still waiting learn that the connection is gone.
        reader_waiting.lock().clear();
    });
    Connection { out, waiting, next: AtomicU64::new(1), closed }
}

#[cfg(test)]
mod tests {
    use super::super::auth::{Handshake, nonce};
    use super::super::frame::{receive, send};
    use super::*;

    async fn echo_server(secret: &[u8]) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let handler: Handler = Arc::new(|from, body| {
            Box::pin(async move {
                let mut reply = format!("from {from}: ").into_bytes();
                reply.extend(body);
                reply
            })
        });
        tokio::spawn(serve(listener, ClusterSecret::new(secret), handler));
        addr
    }

    #[tokio::test]
    async fn calls_with_the_right_secret() {
        let addr = echo_server(b"s3cret").await;
        let client = RpcClient::new(addr, 7, ClusterSecret::new(b"s3cret"));
        let reply = client.call(b"hi".to_vec(), Duration::from_secs(5)).await.unwrap();
        assert_eq!(&reply[..], b"from 7: hi");
        // Concurrent calls share the connection.
        let calls = (0..20).map(|i| client.call(vec![b'0' + i], Duration::from_secs(5)));
        let replies = futures::future::join_all(calls).await;
        for (i, r) in replies.into_iter().enumerate() {
            assert_eq!(r.unwrap().to_vec(), [b"from 7: ".as_slice(), &[b'0' + i as u8]].concat());
        }
    }

    /// Pipelined replication rests on this: requests sent one after
    /// another reach the handler in that order, though their replies may
    /// come in any order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_handler_sees_a_connections_requests_in_order() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let seen: Arc<Mutex<Vec<u8>>> = Arc::default();
        let order = seen.clone();
        let handler: Handler = Arc::new(move |_, body| {
            order.lock().push(body[0]);
            Box::pin(async move {
                // Later requests answer sooner.
                tokio::time::sleep(Duration::from_millis(200 - body[0] as u64)).await;
                body.to_vec()
            })
        });
        tokio::spawn(serve(listener, ClusterSecret::new(b"k"), handler));
        let client = RpcClient::new(addr, 1, ClusterSecret::new(b"k"));
        let mut pending = Vec::new();
        for i in 0..100u8 {
            pending.push(client.send(vec![i]).await.unwrap());
        }
        for (i, p) in pending.into_iter().enumerate() {
            assert_eq!(&p.wait(Duration::from_secs(5)).await.unwrap()[..], &[i as u8]);
        }
        assert_eq!(*seen.lock(), (0..100).collect::<Vec<u8>>());
    }

    /// Nodes of two protocol versions refuse each other at the handshake,
    /// whichever side is newer, and say why.
    #[tokio::test]
    async fn refuses_a_node_of_another_protocol_version() {
        let addr = echo_server(b"k").await;
        let mut newer = RpcClient::new(addr, 7, ClusterSecret::new(b"k"));
        newer.version = PROTOCOL_VERSION + 1;
        let err = newer.call(b"hi".to_vec(), Duration::from_secs(5)).await.unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, ReplicationError::Refused(_)), "{text}");
        assert!(text.contains(&format!("version {PROTOCOL_VERSION} and this node version {}", PROTOCOL_VERSION + 1)));

        // A server of another version refuses a hello of this one.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let handler: Handler = Arc::new(|_, body| Box::pin(async move { body.to_vec() }));
        tokio::spawn(serve_version(listener, ClusterSecret::new(b"k"), PROTOCOL_VERSION + 1, handler, Arc::default()));
        let mut wire = framed(TcpStream::connect(&addr).await.unwrap());
        let Handshake::Challenge { nonce: challenge, .. } = receive(&mut wire).await.unwrap() else { panic!() };
        let proof = ClusterSecret::new(b"k").prove(b"client", &challenge);
        let hello = Handshake::Hello { node: 7, version: PROTOCOL_VERSION, challenge: nonce(), proof };
        send(&mut wire, &hello).await.unwrap();
        let Handshake::Refused(why) = receive(&mut wire).await.unwrap() else { panic!("welcomed") };
        assert!(why.contains("must run a release of the same protocol version"), "{why}");
        // The same versions talk.
        let client = RpcClient::new(echo_server(b"k").await, 7, ClusterSecret::new(b"k"));
        assert_eq!(&client.call(b"hi".to_vec(), Duration::from_secs(5)).await.unwrap()[..], b"from 7: hi");
    }

    #[tokio::test]
    async fn refuses_a_wrong_secret() {
        let addr = echo_server(b"s3cret").await;
        let client = RpcClient::new(addr, 7, ClusterSecret::new(b"guess"));
        let err = client.call(b"hi".to_vec(), Duration::from_secs(5)).await.unwrap_err();
        assert!(matches!(err, ReplicationError::Refused(_)), "{err}");
    }
}
