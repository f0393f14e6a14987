//! One client connection's message loop, with PostgreSQL's output batching.
//!
//! pgwire flushes its socket after most backend messages (BindComplete,
//! CommandComplete, ReadyForQuery, …), which costs one `send` system call
//! per message: four or five per prepared statement, where PostgreSQL makes
//! one. A profile of `pgbench -S -M prepared` showed those calls, not SQL,
//! dominating the server's CPU. So the socket is wrapped in [`Corked`], which
//! keeps what the handlers write and sends it when the server next needs
//! input (exactly when PostgreSQL flushes: before it waits for the client),
//! when it has gathered [`CORK_LIMIT`] bytes, or when the connection closes.
//! Pipelined messages (Parse, Bind, Execute, Sync in one packet) are answered
//! with one write.
//!
//! The loop itself follows pgwire's `process_socket`, whose pieces
//! (`negotiate_tls`, `process_message`, `process_error`) pgwire exports.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use pgwire::api::DefaultClient;
use pgwire::api::{ClientInfo, ErrorHandler, PgWireConnectionState, PgWireServerHandlers};
use pgwire::messages::PgWireFrontendMessage;
use pgwire::messages::response::TransactionStatus;
use pgwire::tokio::server::{MaybeTls, PgWireMessageServerCodec, negotiate_tls, process_error, process_message};
use pgwire::tokio::tokio_rustls::server::TlsStream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, FramedParts};

use crate::handoff::{self, MoveEvent, Mover, NamedStatements};
use crate::lane::{Lane, Offer};

/// Output is sent at the latest once this much has gathered (large results
/// and COPY TO stream in chunks of this size).
pub const CORK_LIMIT: usize = 64 * 1024;

/// A client must finish startup (and authentication) within this time.
pub(crate) const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// A stream whose writes are held until the reader wants input, the buffer
/// is full, or the stream shuts down.
pub struct Corked<S> {
    inner: S,
    out: Vec<u8>,
    sent: usize,
}

impl<S: AsyncWrite + Unpin> Corked<S> {
    pub fn new(inner: S) -> Self {
        Corked { inner, out: Vec::with_capacity(8 * 1024), sent: 0 }
    }

    /// Writes everything held to the inner stream and flushes it.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.out.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.out[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.out.clear();
        self.sent = 0;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    pub async fn drain(&mut self) -> io::Result<()> {
        futures::future::poll_fn(|cx| self.poll_drain(cx)).await
    }

    /// The inner stream (what is held must have been drained first).
    pub fn into_inner(self) -> S {
        debug_assert!(self.out.is_empty());
        self.inner
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Corked<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // The server is about to wait for the client: answer first.
        if !this.out.is_empty() {
            ready!(this.poll_drain(cx))?;
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Corked<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.out.len() >= CORK_LIMIT {
            ready!(this.poll_drain(cx))?;
        }
        this.out.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.out.len() >= CORK_LIMIT {
            ready!(this.poll_drain(cx))?;
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// Serves one TCP connection until the client leaves or a fatal error.
pub async fn serve_connection(
    tcp: TcpStream,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    handlers: crate::Handlers,
    mover: Option<Mover>,
) -> io::Result<()> {
    let startup_deadline = tokio::time::Instant::now() + STARTUP_TIMEOUT;
    let negotiated = tokio::select! {
        _ = tokio::time::sleep_until(startup_deadline) => return Ok(()),
        socket = negotiate_tls(tcp, tls) => socket?,
    };
    // A direct TLS handshake without TLS configured.
    let Some(socket) = negotiated else { return Ok(()) };
    serve_negotiated(socket, handlers, startup_deadline, mover).await
}

/// Serves a connection whose TLS the gateway accepted itself, and whose
/// startup message (`startup`, whole, length included) it read to choose
/// where the session runs: the message is put back in front of the rest.
pub async fn serve_greeted(
    tls: Box<TlsStream<TcpStream>>,
    startup: Vec<u8>,
    handlers: crate::Handlers,
    mover: Option<Mover>,
) -> io::Result<()> {
    let startup_deadline = tokio::time::Instant::now() + STARTUP_TIMEOUT;
    let peer = tls.get_ref().0.peer_addr()?;
    let codec = PgWireMessageServerCodec::new(DefaultClient::new(peer, true));
    let mut parts = FramedParts::new(MaybeTls::Tls(tls), codec);
    parts.read_buf = bytes::BytesMut::from(&startup[..]);
    let mut socket = Framed::from_parts(parts);
    socket.set_state(PgWireConnectionState::AwaitingStartup);
    serve_negotiated(socket, handlers, startup_deadline, mover).await
}

/// The message loop, from the startup message on. With a mover, the
/// session follows its database's primary when this node stops serving as
/// it (`handoff`): at the next ReadyForQuery outside a transaction block,
/// the connection is handed over and relayed.
async fn serve_negotiated(
    socket: Framed<MaybeTls, PgWireMessageServerCodec<crate::handler::Prepared>>,
    handlers: crate::Handlers,
    startup_deadline: tokio::time::Instant,
    mut mover: Option<Mover>,
) -> io::Result<()> {
    let startup_timeout = tokio::time::sleep_until(startup_deadline);
    tokio::pin!(startup_timeout);
    let old = socket.into_parts();
    let mut parts = FramedParts::new(Corked::new(old.io), old.codec);
    parts.read_buf = old.read_buf;
    parts.write_buf = old.write_buf;
    let mut socket = Framed::from_parts(parts);

    let startup_handler = handlers.startup_handler();
    let simple_query_handler = handlers.simple_query_handler();
    let extended_query_handler = handlers.extended.clone();
    let copy_handler = handlers.copy_handler();
    let cancel_handler = handlers.cancel_handler();
    let error_handler = handlers.error_handler();
    let mut lane = Lane::new(handlers.conn.clone());
    let mut statements = NamedStatements::default();
    // Whether the last message answered ended with a ReadyForQuery (a
    // Query or a Sync): a point where the session may be handed over.
    let mut cycle_done = false;
    loop {
        let starting = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup | PgWireConnectionState::AuthenticationInProgress
        );
        // This node no longer serves the session's database as primary:
        // a transaction left open is given up at once (the engines take
        // the new primary's commits only when no local one is open), and
        // at the next ReadyForQuery outside a block the session moves.
        if mover.as_ref().is_some_and(|m| m.stopped())
            && handoff::give_up_block(&handlers.conn).await
            && cycle_done
            && matches!(socket.state(), PgWireConnectionState::ReadyForQuery)
            && let Some(m) = mover.take()
        {
            return handoff::hand_off(socket, &handlers.conn, m, &statements).await;
        }
        // Between transactions while a planned move of the primary is
        // under way: the next transaction waits for the new primary.
        let idle = cycle_done && socket.transaction_status() == TransactionStatus::Idle;
        let hold = idle && mover.as_mut().is_some_and(|m| m.holds());
        // pgwire's decoder panics on some malformed messages: end the
        // connection cleanly instead, after sending what earlier messages
        // were answered with.
        let next = std::panic::AssertUnwindSafe(socket.next()).catch_unwind();
        let msg = tokio::select! {
            _ = &mut startup_timeout, if starting => None,
            msg = next, if !hold => msg.unwrap_or(None),
            event = handoff::next_event(&mut mover) => match event {
                MoveEvent::Stopped | MoveEvent::Announced => continue,
                MoveEvent::Expired => return handoff::end_session(socket, GIVEN_UP).await,
            },
        };
        let Some(Ok(msg)) = msg else { break };
        // Terminate: the client is leaving (some clients wait for the close).
        if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
            break;
        }
        let is_extended_query = match socket.state() {
            PgWireConnectionState::CopyInProgress(is_extended_query) => is_extended_query,
            _ => msg.is_extended_query(),
        };
        let is_cancel_request = matches!(msg, PgWireFrontendMessage::CancelRequest(_));
        let ends_cycle = starting || matches!(msg, PgWireFrontendMessage::Query(_) | PgWireFrontendMessage::Sync(_));
        statements.observe(&msg);
        if let Some(m) = mover.as_mut() {
            m.working();
        }
        // The statement under way finishes even if the node stops serving
        // as primary meanwhile (a COMMIT gets its real answer), within the
        // move's grace.
        let result = {
            let answer = async {
                match lane.offer(msg, &mut socket).await {
                    Ok(Offer::Taken) => Ok(()),
                    Ok(Offer::Declined(msg)) => {
                        process_message(
                            msg,
                            &mut socket,
                            startup_handler.clone(),
                            simple_query_handler.clone(),
                            extended_query_handler.clone(),
                            copy_handler.clone(),
                            cancel_handler.clone(),
                        )
                        .await
                    }
                    Err(e) => Err(e),
                }
            };
            tokio::pin!(answer);
            loop {
                tokio::select! {
                    result = &mut answer => break Some(result),
                    event = handoff::next_event(&mut mover) => match event {
                        MoveEvent::Stopped | MoveEvent::Announced => continue,
                        MoveEvent::Expired => break None,
                    },
                }
            }
        };
        let Some(result) = result else {
            return handoff::end_session(socket, GIVEN_UP).await;
        };
        cycle_done = ends_cycle;
        if let Some(m) = mover.as_mut()
            && cycle_done
            && socket.transaction_status() == TransactionStatus::Idle
        {
            m.idle();
        }
        if let Err(mut e) = result {
            error_handler.on_error(&socket, &mut e);
            let fatal = e.is_fatal();
            process_error(&mut socket, e, is_extended_query).await?;
            if fatal {
                break;
            }
        }
        if is_cancel_request {
            break;
        }
    }
    // Whatever is still held (a FATAL error, say) reaches the client.
    socket.get_mut().drain().await
}

/// Why a session that could not reach a point to be handed over ends.
const GIVEN_UP: &str = "terminating connection: this node is no longer the primary, and the session did not reach the end of its transaction in time to follow the new one; reconnect";
