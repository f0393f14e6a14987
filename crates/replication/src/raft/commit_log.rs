//! The engines' commit log on a replicated node: a commit is durable when
//! the Raft log of its stream's data group has committed it (a quorum holds it).
//!
//! `append` hands the record to Raft and returns a *ticket*. The ticket is
//! resolved in one of two ways:
//! - the state machine applies the entry on this node, which is then known
//!   to be committed: the ticket succeeds, and the engine, which already
//!   holds the transaction's versions, stamps them (nothing is re-applied);
//! - Raft gives up on it (this node lost its leadership while the entry
//!   waited): the outcome is unknown — a new primary may still commit the
//!   entry, or discard it — so the ticket fails with
//!   [`LogError::OutcomeUnknown`], the engine undoes the transaction, and if
//!   the entry does commit after all, it reaches this node again as a
//!   replicated entry and is applied like any other.
//!
//! A node that is not serving as primary refuses appends at once with
//! [`LogError::NotReplicated`]: nothing was written, the commit certainly
//! did not happen.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};

use parking_lot::{Condvar, Mutex};
use tessera_engine::CommitLog;
use tessera_log::LogError;
use tokio::sync::mpsc;

use crate::raft::type_config::{Command, RECORD_CHUNK};

/// How a ticket ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Committed,
    Unknown(String),
}

#[derive(Default)]
struct Ticket {
    outcome: Option<Outcome>,
    waker: Option<Waker>,
    /// Someone polls it (and will consume the outcome).
    polled: bool,
    /// A large record: completing it takes seconds of CPU.
    large: bool,
}

/// The commits this node proposed and has not yet seen decided.
#[derive(Default)]
pub struct Tickets {
    next: AtomicU64,
    open: Mutex<HashMap<u64, Ticket>>,
    decided: Condvar,
}

impl Tickets {
    fn open(&self, large: bool) -> u64 {
        let t = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.open.lock().insert(t, Ticket { large, ..Ticket::default() });
        t
    }

    /// Decides a ticket still open; false if it was decided already or is unknown.
    pub fn decide(&self, ticket: u64, outcome: Outcome) -> bool {
        let waker = {
            let mut open = self.open.lock();
            let Some(t) = open.get_mut(&ticket) else { return false };
            if t.outcome.is_some() {
                return false;
            }
            t.outcome = Some(outcome);
            t.waker.take().map(|w| (w, t.large))
        };
        self.decided.notify_all();
        // Outside the lock: the waker completes (stamps or undoes) the
        // commit. A small one is completed here, at once (a hand-off to
        // another thread would cost more than the work); a large one, a
        // job of seconds, on a thread of its own at lower priority, so that
        // it never holds up Raft's workers, which also answer heartbeats.
        if let Some((w, large)) = waker {
            if !large {
                w.wake();
            } else {
                let fallback = w.clone();
                let spawned = std::thread::Builder::new().name("tessera-stamp".into()).spawn(move || {
                    crate::raft::priority::lower_this_threads_priority();
                    w.wake()
                });
                if spawned.is_err() {
                    fallback.wake();
                }
            }
        }
        true
    }

    /// The state machine applies one of this node's own entries: if its
    /// ticket is still open, the transaction is in the engine already and
    /// now committed (true: do not apply it again). False when the ticket
    /// failed (the engine undid it) or belongs to an earlier run of the
    /// process: the entry must be applied.
    pub fn claim_applied(&self, ticket: u64) -> bool {
        self.decide(ticket, Outcome::Committed)
    }

    /// Fails every open ticket (the node stepped down, or is shutting down).
    pub fn fail_all(&self, why: &str) {
        let open: Vec<u64> = self.open.lock().iter().filter(|(_, t)| t.outcome.is_none()).map(|(k, _)| *k).collect();
        for t in open {
            self.decide(t, Outcome::Unknown(why.to_string()));
        }
    }

    pub fn pending(&self) -> usize {
        self.open.lock().values().filter(|t| t.outcome.is_none()).count()
    }

    fn result(outcome: Outcome) -> Result<(), LogError> {
        match outcome {
            Outcome::Committed => Ok(()),
            Outcome::Unknown(why) => Err(LogError::OutcomeUnknown(why)),
        }
    }
}

/// What the replicated commit logs of a node share.
pub struct Proposals {
    pub me: u64,
    /// Random per process start, so that an entry proposed by an earlier run
    /// of this node is never taken for one of this run's tickets.
    pub incarnation: u64,
    pub tickets: Tickets,
    submit: mpsc::UnboundedSender<Command>,
    /// Whether this node serves as primary (leader, caught up, with a quorum).
    serving: AtomicBool,
    why_not: Mutex<String>,
    /// How the node's sessions follow a planned move of the role.
    pub gate: Arc<MoveGate>,
}

impl Proposals {
    /// `submit` carries proposals to the task that feeds them to Raft.
    pub fn new(me: u64, submit: mpsc::UnboundedSender<Command>) -> Arc<Proposals> {
        let mut bytes = [0u8; 8];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).expect("system randomness");
        Arc::new(Proposals {
            me,
            incarnation: u64::from_le_bytes(bytes),
            tickets: Tickets::default(),
            submit,
            serving: AtomicBool::new(false),
            why_not: Mutex::new("this node is starting".into()),
            gate: Arc::default(),
        })
    }

    pub fn set_serving(&self, serving: bool, why_not: &str) {
        if !serving {
            *self.why_not.lock() = why_not.to_string();
        }
        self.serving.store(serving, Ordering::SeqCst);
    }

    pub fn is_serving(&self) -> bool {
        self.serving.load(Ordering::SeqCst)
    }
}

/// Which group's proposals an engine's commits go to: the stream's group
/// when one claimed it, the node's system group otherwise.
pub struct Router {
    default: Arc<Proposals>,
    claimed: parking_lot::RwLock<HashMap<u32, Arc<Proposals>>>,
}

impl Router {
    pub fn new(default: Arc<Proposals>) -> Arc<Router> {
        Arc::new(Router { default, claimed: Default::default() })
    }

    /// Sends the commits of `streams` to `proposals` (a group hosted for them).
    pub fn claim(&self, streams: &[u32], proposals: &Arc<Proposals>) {
        let mut claimed = self.claimed.write();
        for s in streams {
            claimed.insert(*s, proposals.clone());
        }
    }

    fn proposals(&self, stream: u32) -> Arc<Proposals> {
        self.claimed.read().get(&stream).cloned().unwrap_or_else(|| self.default.clone())
    }

    /// The commit log of one engine (stream) of this node.
    pub fn commit_log(self: &Arc<Self>, stream: u32) -> ReplicatedCommitLog {
        ReplicatedCommitLog { stream, router: self.clone() }
    }
}

pub struct ReplicatedCommitLog {
    stream: u32,
    router: Arc<Router>,
}

impl CommitLog for ReplicatedCommitLog {
    fn append(&self, record: &[u8]) -> Result<u64, LogError> {
        let p = &self.router.proposals(self.stream);
        if !p.is_serving() {
            return Err(LogError::NotReplicated(p.why_not.lock().clone()));
        }
        let ticket = p.tickets.open(record.len() >= crate::raft::priority::LOW_PRIORITY_BYTES);
        let command = |part, record: &[u8]| Command {
            origin: p.me,
            incarnation: p.incarnation,
            ticket,
            stream: self.stream,
            part,
            record: bytes::Bytes::copy_from_slice(record),
        };
        // A large record goes as several entries (see `RECORD_CHUNK`).
        let commands: Vec<Command> = if record.len() <= RECORD_CHUNK {
            vec![command(None, record)]
        } else {
            let count = record.len().div_ceil(RECORD_CHUNK) as u32;
            record.chunks(RECORD_CHUNK).enumerate().map(|(i, piece)| command(Some((i as u32, count)), piece)).collect()
        };
        for command in commands {
            if p.submit.send(command).is_err() {
                p.tickets.decide(ticket, Outcome::Unknown("the node is shutting down".into()));
                p.tickets.open.lock().remove(&ticket);
                return Err(LogError::NotReplicated("the node is shutting down".into()));
            }
        }
        Ok(ticket)
    }

    fn wait_durable(&self, ticket: u64) -> Result<(), LogError> {
        let proposals = self.router.proposals(self.stream);
        let tickets = &proposals.tickets;
        let mut open = tickets.open.lock();
        loop {
            let Some(t) = open.get(&ticket) else { return Ok(()) };
            if let Some(outcome) = t.outcome.clone() {
                if !t.polled {
                    open.remove(&ticket);
                }
                return Tickets::result(outcome);
            }
            tickets.decided.wait(&mut open);
        }
    }

    fn poll_durable(&self, ticket: u64, cx: &mut Context<'_>) -> Poll<Result<(), LogError>> {
        let proposals = self.router.proposals(self.stream);
        let mut open = proposals.tickets.open.lock();
        let Some(t) = open.get_mut(&ticket) else {
            return Poll::Ready(Err(LogError::OutcomeUnknown("the commit's ticket was lost".into())));
        };
        match t.outcome.take() {
            Some(outcome) => {
                open.remove(&ticket);
                Poll::Ready(Tickets::result(outcome))
            }
            None => {
                t.polled = true;
                t.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    fn wait_when_abandoned(&self) -> bool {
        false
    }

    fn allows_lazy(&self) -> bool {
        false
    }
}

/// How client sessions follow a planned move of a group's primary role
/// (`RaftGroups::hand_over`) without an error: while the role is being handed
/// over, sessions hold their next transaction (the session layer hands
/// them to the new primary once it serves), and the hand-over waits a
/// little for the transactions and statements already under way to end,
/// each counted by an [`OpenWork`] its session holds.
#[derive(Default)]
pub struct MoveGate {
    handing_over: Mutex<Option<tokio::sync::watch::Sender<bool>>>,
    open: std::sync::atomic::AtomicUsize,
    ended: tokio::sync::Notify,
}

impl MoveGate {
    fn sender(&self) -> tokio::sync::watch::Sender<bool> {
        self.handing_over.lock().get_or_insert_with(|| tokio::sync::watch::channel(false).0).clone()
    }

    /// Turns true while the role is being handed over from this node.
    pub fn watch(&self) -> tokio::sync::watch::Receiver<bool> {
        self.sender().subscribe()
    }

    /// Whether the role is being handed over from this node now.
    pub fn is_handing_over(&self) -> bool {
        *self.sender().borrow()
    }

    /// Counts a session's transaction or statement under way until dropped.
    pub fn open_work(self: &Arc<Self>) -> OpenWork {
        self.open.fetch_add(1, Ordering::SeqCst);
        OpenWork(self.clone())
    }

    pub(crate) fn set_handing_over(&self, on: bool) {
        self.sender().send_if_modified(|v| std::mem::replace(v, on) != on);
    }

    /// Waits until no work is under way, for at most `limit`; returns
    /// what is still under way.
    pub(crate) async fn settle(&self, limit: std::time::Duration) -> usize {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let ended = self.ended.notified();
            let open = self.open.load(Ordering::SeqCst);
            if open == 0 {
                return 0;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return self.open.load(Ordering::SeqCst);
            }
        }
    }
}

/// A session's transaction or statement under way (see [`MoveGate`]).
pub struct OpenWork(Arc<MoveGate>);

impl Drop for OpenWork {
    fn drop(&mut self) {
        if self.0.open.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.ended.notify_waiters();
        }
    }
}

#[cfg(test)]
mod move_gate_tests {
    use super::*;

    #[tokio::test]
    async fn a_hand_over_waits_for_work_under_way_and_no_longer_than_its_limit() {
        let gate = Arc::new(MoveGate::default());
        let mut watch = gate.watch();
        assert_eq!(gate.settle(std::time::Duration::from_millis(10)).await, 0);
        let work = gate.open_work();
        let other = gate.open_work();
        gate.set_handing_over(true);
        assert!(watch.has_changed().unwrap() && *watch.borrow_and_update());
        let started = tokio::time::Instant::now();
        assert_eq!(gate.settle(std::time::Duration::from_millis(50)).await, 2);
        assert!(started.elapsed() >= std::time::Duration::from_millis(50));
        drop(other);
        let ends = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            drop(work);
        });
        assert_eq!(gate.settle(std::time::Duration::from_secs(10)).await, 0);
        ends.await.unwrap();
        gate.set_handing_over(true);
        assert!(!watch.has_changed().unwrap(), "no change, no wake-up");
    }
}
