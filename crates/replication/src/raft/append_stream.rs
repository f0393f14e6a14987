//! Pipelined replication: a primary keeps several AppendEntries requests in
//! flight to each secondary instead of one.
//!
//! openraft's replication turns the entries to send into a stream of
//! requests and reads a stream of answers in the same order
//! (`RaftNetworkV2::stream_append`). Sent one at a time, a commit that
//! arrives while a request is out waits for that request's whole round
//! trip (the network both ways and the secondary's fsync) before it is
//! even sent. Here the primary sends each request as soon as Raft has it,
//! up to [`MAX_IN_FLIGHT`], over the peer's one connection (so they arrive
//! in order), and answers in order; the secondary feeds the requests of a
//! session, in arrival order, into `Raft::stream_append`, which appends each
//! batch as it comes and answers each once it is durable — its group
//! commit then covers every batch that arrived during the previous fsync.
//!
//! A session is one stream of the primary's replication to one secondary;
//! it ends at the first error (a conflict, a higher vote, a lost
//! connection, a timeout), and Raft starts another. The secondary keeps one
//! session per primary node: a request of a new session replaces the old
//! one, whose unanswered requests fail (the primary's session has ended by
//! then, or ends on that failure). A session that ended or was replaced
//! stays retired: a late request of it is refused, never started afresh,
//! because a fresh stream into Raft could overtake the old stream's last
//! requests (a request whose predecessor Raft has not seen yet is a
//! conflict, and the primary, having seen the predecessor acknowledged
//! first, would take it for a secondary that lost acknowledged entries).
//! Heartbeats never come as sessions (`transport::PeerLink`).

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::{Stream, StreamExt};
use openraft::errors::{RPCError, Unreachable};
use openraft::network::RPCOption;
use openraft::raft::{AppendEntriesRequest, StreamAppendResult};
use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};

use super::freshness::Freshness;
use super::messages::{RaftMessage, RaftReply};
use super::state_machine::Raft;
use super::type_config::{C, LogId};
use crate::types::{GroupId, NodeId};
use crate::wire::RpcClient;
use crate::wire::service::{self, Answer, Refusal};

/// Requests a primary keeps in flight to one secondary.
pub const MAX_IN_FLIGHT: usize = 8;

/// Bytes of log entries per request: a secondary appends a bounded batch at
/// a time, and a heartbeat (on a connection of its own) never waits long
/// behind one.
pub const APPEND_BYTES: usize = 4 << 20;

/// Cuts `rpc` to at most [`APPEND_BYTES`] of entries (at least one entry).
/// Returns the id of the last entry kept if entries were cut, and the time
/// the request may take: a large batch gets time in proportion to its size.
pub(crate) fn fit(rpc: &mut AppendEntriesRequest<C>, ttl: Duration) -> (Option<Option<LogId>>, Duration) {
    let mut bytes = 0;
    let mut keep = rpc.entries.len();
    for (i, e) in rpc.entries.iter().enumerate() {
        let size = match &e.payload {
            openraft::EntryPayload::Normal(cmd) => cmd.record.len() + 64,
            _ => 64,
        };
        if i > 0 && bytes + size > APPEND_BYTES {
            keep = i;
            break;
        }
        bytes += size;
    }
    let cut = keep < rpc.entries.len();
    rpc.entries.truncate(keep);
    let ttl = match bytes {
        // About 16 MB/s, and a second to spare.
        b if b > 256 << 10 => ttl.max(Duration::from_secs(1) + Duration::from_millis((b >> 14) as u64)),
        _ => ttl,
    };
    (cut.then(|| rpc.entries.last().map(|e| e.log_id)), ttl)
}

static NEXT_SESSION: AtomicU64 = AtomicU64::new(0);

/// A session id no earlier session of this process (nor, but by a chance
/// of 2^-40, of an earlier run) has used.
fn new_session() -> u64 {
    if NEXT_SESSION.load(Ordering::Relaxed) == 0 {
        let mut bytes = [0u8; 8];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).expect("system randomness");
        let _ =
            NEXT_SESSION.compare_exchange(0, u64::from_le_bytes(bytes) << 24 | 1, Ordering::Relaxed, Ordering::Relaxed);
    }
    NEXT_SESSION.fetch_add(1, Ordering::Relaxed)
}

type StreamAnswer = Result<StreamAppendResult<C>, RPCError<C>>;

struct InFlight {
    reply: Pin<Box<dyn Future<Output = crate::error::Result<bytes::Bytes>> + Send>>,
}

/// The primary's side of one session.
struct Pipeline<S> {
    input: S,
    client: Arc<RpcClient>,
    target: NodeId,
    group: GroupId,
    session: u64,
    ttl: Duration,
    in_flight: VecDeque<InFlight>,
    /// Pull no more requests: the input ended, or a request was cut (the
    /// next one Raft made would not follow on from what was sent).
    drained: bool,
    /// An error was answered: the session is over.
    ended: bool,
}

impl<S> Pipeline<S>
where
    S: Stream<Item = AppendEntriesRequest<C>> + Send + Unpin + 'static,
{
    fn unreachable(&self, e: impl std::fmt::Display) -> RPCError<C> {
        Unreachable::from_string(format!("node {} ({}): {e}", self.target, self.client.addr())).into()
    }

    async fn send(&mut self, mut rpc: AppendEntriesRequest<C>) -> Result<(), RPCError<C>> {
        let (cut, ttl) = fit(&mut rpc, self.ttl);
        if cut.is_some() {
            self.drained = true;
        }
        let request = RaftMessage::AppendStream { group: self.group, session: self.session, rpc };
        let pending = self.client.send(service::request(&request)).await.map_err(|e| self.unreachable(e))?;
        self.in_flight.push_back(InFlight { reply: Box::pin(pending.wait(ttl)) });
        Ok(())
    }

    fn answer(&self, reply: crate::error::Result<bytes::Bytes>) -> StreamAnswer {
        let reply = reply.map_err(|e| self.unreachable(e))?;
        match postcard::from_bytes::<Answer<RaftReply>>(&reply) {
            Ok(Ok(RaftReply::StreamAppended(result))) => Ok(result),
            Ok(Err(Refusal(e))) => Err(self.unreachable(e)),
            Ok(Ok(_)) => Err(self.unreachable("unexpected reply to append entries")),
            Err(e) => Err(self.unreachable(format!("malformed reply: {e}"))),
        }
    }

    /// The next answer, in request order; sends requests meanwhile.
    async fn next(mut self) -> Option<(StreamAnswer, Self)> {
        if self.ended {
            return None;
        }
        loop {
            if self.in_flight.is_empty() {
                if self.drained {
                    return None;
                }
                match self.input.next().await {
                    Some(rpc) => {
                        if let Err(e) = self.send(rpc).await {
                            self.ended = true;
                            return Some((Err(e), self));
                        }
                    }
                    None => self.drained = true,
                }
                continue;
            }
            let room = !self.drained && self.in_flight.len() < MAX_IN_FLIGHT;
            let front = self.in_flight.front_mut().expect("not empty");
            tokio::select! {
                biased;
                reply = &mut front.reply => {
                    self.in_flight.pop_front();
                    let answer = self.answer(reply);
                    if !matches!(answer, Ok(Ok(_))) {
                        self.ended = true;
                    }
                    return Some((answer, self));
                }
                // Cancel-safe: the request stream keeps its own progress.
                rpc = self.input.next(), if room => match rpc {
                    Some(rpc) => {
                        if let Err(e) = self.send(rpc).await {
                            self.ended = true;
                            return Some((Err(e), self));
                        }
                    }
                    None => self.drained = true,
                },
            }
        }
    }
}

/// The primary's side: answers, in order, for the requests of `input`.
pub(crate) fn pipeline<S>(
    client: Arc<RpcClient>,
    target: NodeId,
    group: GroupId,
    input: S,
    option: &RPCOption,
) -> impl Stream<Item = StreamAnswer> + Send + 'static
where
    S: Stream<Item = AppendEntriesRequest<C>> + Send + Unpin + 'static,
{
    let state = Pipeline {
        input,
        client,
        target,
        group,
        session: new_session(),
        ttl: option.hard_ttl(),
        in_flight: VecDeque::new(),
        drained: false,
        ended: false,
    };
    futures::stream::unfold(state, Pipeline::next)
}

/// A request queued for the secondary's session, and where its answer goes.
type Queued = (AppendEntriesRequest<C>, oneshot::Sender<Answer<RaftReply>>);

struct Session {
    id: u64,
    queue: mpsc::UnboundedSender<Queued>,
}

/// Sessions retired per primary node that are remembered (a late request
/// of an older one is one a primary sent long ago; it finds no session and
/// fails on its own time-out).
const RETIRED_KEPT: usize = 64;

/// One primary node's sessions on this secondary.
#[derive(Default)]
struct PeerSessions {
    current: Option<Session>,
    /// Ended or replaced, newest last.
    retired: VecDeque<u64>,
}

impl PeerSessions {
    fn retire(&mut self, id: u64) {
        if self.retired.len() == RETIRED_KEPT {
            self.retired.pop_front();
        }
        self.retired.push_back(id);
    }
}

/// The secondary's side: one session per primary node.
#[derive(Default)]
pub struct AppendSessions {
    by_peer: Mutex<HashMap<NodeId, PeerSessions>>,
}

impl AppendSessions {
    /// Queues a request of `session` from node `from` (call in arrival
    /// order); the answer comes on the returned channel.
    pub(crate) fn enqueue(
        self: &Arc<Self>,
        raft: &Raft,
        freshness: &Arc<Freshness>,
        from: NodeId,
        session: u64,
        rpc: AppendEntriesRequest<C>,
    ) -> oneshot::Receiver<Answer<RaftReply>> {
        let (tx, rx) = oneshot::channel();
        let mut by_peer = self.by_peer.lock();
        let peer = by_peer.entry(from).or_default();
        let queued = (rpc, tx);
        if let Some(s) = &peer.current
            && s.id == session
        {
            // A send fails only while the session's stream is ending (an
            // error was answered): then this request fails with it.
            let _ = s.queue.send(queued);
            return rx;
        }
        if peer.retired.contains(&session) {
            // Dropping the request's answer fails it.
            return rx;
        }
        let (queue, requests) = mpsc::unbounded_channel();
        queue.send(queued).expect("the receiver is here");
        // Replacing a session drops its queue: its stream ends.
        if let Some(old) = peer.current.replace(Session { id: session, queue }) {
            peer.retire(old.id);
        }
        tokio::spawn(serve_session(raft.clone(), freshness.clone(), requests, (self.clone(), from, session)));
        rx
    }
}

/// A request fed to Raft: the commit index it announced, and where its
/// answer goes.
type Waiting = (Option<u64>, oneshot::Sender<Answer<RaftReply>>);

/// Feeds a session's requests to Raft in order and answers each once Raft
/// has it durably (or refuses it).
async fn serve_session(
    raft: Raft,
    freshness: Arc<Freshness>,
    mut requests: mpsc::UnboundedReceiver<Queued>,
    (sessions, from, session): (Arc<AppendSessions>, NodeId, u64),
) {
    // Where each request's answer goes, with the commit index it announced.
    let waiting: Arc<Mutex<VecDeque<Waiting>>> = Arc::default();
    let input = {
        let waiting = waiting.clone();
        futures::stream::poll_fn(move |cx| {
            requests.poll_recv(cx).map(|q| {
                q.map(|(rpc, answer): Queued| {
                    waiting.lock().push_back((rpc.leader_commit.as_ref().map(|l| l.index), answer));
                    rpc
                })
            })
        })
    };
    let answers = raft.stream_append(input);
    let mut answers = std::pin::pin!(answers);
    while let Some(answer) = answers.next().await {
        let Some((commit, to)) = waiting.lock().pop_front() else { break };
        let reply = match answer {
            Ok(result) => {
                // Only a primary this node accepts speaks for freshness.
                if let (Ok(_), Some(c)) = (&result, commit) {
                    freshness.heard(c);
                }
                Ok(RaftReply::StreamAppended(result))
            }
            Err(fatal) => Err(Refusal(fatal.to_string())),
        };
        let _ = to.send(reply);
    }
    // The stream ended (an error was answered, or the session was
    // replaced): retire it, which closes its queue. Requests still waiting
    // get no answer — their senders drop — and the primary's session ends
    // on that; a later request of the same session is refused.
    let mut by_peer = sessions.by_peer.lock();
    if let Some(peer) = by_peer.get_mut(&from)
        && peer.current.as_ref().is_some_and(|s| s.id == session)
    {
        peer.current = None;
        peer.retire(session);
    }
}

#[cfg(test)]
mod tests {
    use openraft::entry::RaftEntry;
    use openraft::testing::log_id;

    use super::*;
    use crate::raft::type_config::{Command, Entry};

    fn entry(index: u64, bytes: usize) -> Entry {
        let cmd = Command {
            origin: 1,
            incarnation: 1,
            ticket: index,
            stream: 0,
            part: None,
            record: bytes::Bytes::from(vec![7u8; bytes]),
        };
        Entry::new(log_id::<C>(1, 1, index), openraft::EntryPayload::Normal(cmd))
    }

    fn request(sizes: &[usize]) -> AppendEntriesRequest<C> {
        AppendEntriesRequest {
            vote: openraft::Vote::new_committed(1, 1),
            prev_log_id: Some(log_id::<C>(1, 1, 0)),
            leader_commit: None,
            entries: sizes.iter().enumerate().map(|(i, s)| entry(i as u64 + 1, *s)).collect(),
        }
    }

    #[test]
    fn fit_cuts_at_the_byte_budget_but_keeps_at_least_one_entry() {
        let ttl = Duration::from_millis(50);
        // Small batches go whole, in the time Raft gives.
        let mut small = request(&[100, 200, 300]);
        assert_eq!(fit(&mut small, ttl), (None, ttl));
        assert_eq!(small.entries.len(), 3);
        // Three 1 MiB parts fit (with their overhead, a fourth does not).
        let mut large = request(&[1 << 20; 6]);
        let (cut, long) = fit(&mut large, ttl);
        assert_eq!(large.entries.len(), 3);
        assert_eq!(cut, Some(Some(log_id::<C>(1, 1, 3))));
        assert!(long > Duration::from_secs(1), "a large batch gets time for its size: {long:?}");
        // One entry over the budget still goes, alone.
        let mut huge = request(&[APPEND_BYTES * 2, 10]);
        let (cut, _) = fit(&mut huge, ttl);
        assert_eq!((huge.entries.len(), cut), (1, Some(Some(log_id::<C>(1, 1, 1)))));
    }

    #[test]
    fn session_ids_are_distinct() {
        let a = new_session();
        let b = new_session();
        assert_ne!(a, b);
        assert_ne!(a, 0);
    }
}
