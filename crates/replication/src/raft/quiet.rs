//! Quiet groups: a database's group with nothing to write stops Raft's
//! timers, and one node-level message per pair of nodes keeps it safe.
//!
//! Every database is a Raft group, and an idle group's primary would send
//! Raft heartbeats (20 a second) to each secondary for ever; with many
//! tenants per node that alone fills the cores. So a group that has written
//! nothing for [`QuietTiming::idle`], with every voter caught up and no
//! change of its members under way, goes *quiet*: its Raft ticker stops on
//! every replica (`runtime_config().tick(false)`: no heartbeats, no
//! election timer, no wake-ups at all). Instead, every
//! [`QuietTiming::round`] the primary's node sends each node holding a
//! voter of one of its quiet groups one message ([`QuietAsk`] per group:
//! group, term, last index, commit index), and the secondary *confirms*
//! each group it agrees on: it is a follower of that primary in that term,
//! with the whole log. As CockroachDB's quiescent ranges and TiKV's
//! hibernating regions do.
//!
//! Safety rests on two rules:
//! - A secondary that confirmed a group refuses its votes and pre-votes
//!   while it has heard the primary's node within [`QuietTiming::hold`]
//!   (Raft's own lease on the follower, renewed by heartbeats, has long
//!   lapsed). A confirmation and a vote are ordered by a per-group gate,
//!   so a secondary never confirms a primary after granting another
//!   candidate its vote. Votes of a leadership transfer, which the primary
//!   itself asked for, pass.
//! - The quiet primary's lease is the send time of the latest round a
//!   quorum of its voters (itself included) confirmed, plus `hold` less
//!   [`QuietTiming::margin`]: until then no other node can have been
//!   elected, since every majority holds a voter that refuses. The role
//!   watch counts this lease as it counts Raft's quorum acknowledgement.
//!
//! A group wakes (its ticker starts again, at once on the primary):
//! - on the primary, with its first write (`submit_loop`), or when a voter
//!   stops confirming (a node restarted, or cut off): quiet needs every
//!   voter, not just a quorum;
//! - on a secondary, when an AppendEntries from the primary succeeds (the
//!   primary woke; Raft's lease on the follower is fresh again), when an
//!   AppendEntries from another leader arrives, or when it has not heard
//!   the primary's node for `hold` (the primary's node is gone: the group
//!   elects as any other). `hold` is at most Raft's own lease on a
//!   follower (the maximum election timeout), so that a secondary woken by
//!   an append is covered by that lease for as long as the primary counts
//!   on its confirmation.
//!
//! Only a group whose primary serves (its role watch says so) goes quiet.
//! One whose primary is asked to hand over (Raft's leadership transfer)
//! wakes and stays awake for `HANDOVER`: a transferring leader sends no
//! heartbeats and refuses writes, and if the target does not take over,
//! the secondaries must time out and elect rather than keep confirming it.
//!
//! The system group (the catalog) and the manager group never go
//! quiet: they are one each per cluster.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use openraft::ServerState;
use openraft::async_runtime::WatchReceiver;
use openraft::vote::RaftLeaderId;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use futures::future::BoxFuture;

use super::group::Hosts;
use super::metrics::{ALIVE, matched};
use super::state_machine::Raft;
use super::type_config::C;
use crate::types::{GroupId, NodeId, SYSTEM_GROUP};
use crate::wire::Peers;
use crate::wire::service::{self, Answer, Message, Service, Subsystem};

/// The timing of quiet groups.
#[derive(Debug, Clone, Copy)]
pub struct QuietTiming {
    /// A group that wrote nothing for this long may go quiet.
    pub idle: Duration,
    /// How often a primary's node tells the others which groups are quiet.
    pub round: Duration,
    /// A quiet secondary refuses votes this long after it last heard the
    /// primary's node, and then wakes the group. At most the maximum
    /// election timeout.
    pub hold: Duration,
    /// Taken off the primary's lease, for clocks that run at different
    /// rates and for the time a confirmation takes to be recorded.
    pub margin: Duration,
}

impl QuietTiming {
    /// The timing for Raft's maximum election timeout `election_max`.
    pub fn for_election_timeout(election_max: Duration) -> QuietTiming {
        QuietTiming {
            idle: Duration::from_secs(2),
            round: Duration::from_millis(150),
            hold: election_max,
            margin: Duration::from_millis(100),
        }
    }
}

/// One quiet group, as its primary names it to a secondary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QuietAsk {
    pub group: GroupId,
    pub term: u64,
    /// The primary's last log index: a secondary confirms only with all of it.
    pub last_index: u64,
    /// The primary's commit index (for the secondary's freshness).
    pub commit: u64,
}

/// A group as its primary's node keeps it here.
struct Leading {
    term: u64,
    /// The last log index seen, and since when it has not moved.
    last_index: Option<u64>,
    since: Instant,
    /// For each other voter, the send time of the latest round it confirmed.
    confirmed: HashMap<NodeId, Instant>,
    /// The group's voters when it was last asked about.
    voters: usize,
    /// Its ticker is stopped.
    quiet: bool,
}

/// A group in which this node is a quiet secondary.
struct Following {
    leader: NodeId,
    term: u64,
    heard: Instant,
}

/// This node's quiet groups, as primary and as secondary.
pub struct Quiet {
    me: NodeId,
    timing: QuietTiming,
    leading: Mutex<HashMap<GroupId, Leading>>,
    following: Mutex<HashMap<GroupId, Following>>,
    /// How many groups `following` holds (a cheap test on the append path).
    followed: AtomicUsize,
    /// Per group: a vote holds it shared, a confirmation exclusively.
    gates: Mutex<HashMap<GroupId, Arc<tokio::sync::RwLock<()>>>>,
    /// The groups this node serves as primary (its role watch says so).
    serving: Mutex<std::collections::HashSet<GroupId>>,
    /// Groups whose primary is being handed over, and until when they stay
    /// awake: Raft's transfer needs the timers (a leader that hands over
    /// sends no heartbeats, and if the new one does not take over, the
    /// secondaries must time out and elect).
    handovers: Mutex<HashMap<GroupId, Instant>>,
}

/// How long a group stays awake after its primary was asked to hand over.
const HANDOVER: Duration = Duration::from_secs(10);

/// The latest moment a quiet primary may serve, from when each other voter
/// last confirmed (`confirmed`), in a group of `voters` voters: a quorum
/// counts the primary itself and the newest confirmations.
pub(crate) fn lease_until(confirmed: &[Instant], voters: usize, timing: &QuietTiming) -> Option<Instant> {
    let needed = (voters / 2 + 1).saturating_sub(1);
    if needed == 0 {
        return None;
    }
    let mut newest: Vec<Instant> = confirmed.to_vec();
    newest.sort_unstable_by(|a, b| b.cmp(a));
    newest.get(needed - 1).map(|at| *at + timing.hold - timing.margin)
}

impl Quiet {
    pub fn new(me: NodeId, timing: QuietTiming) -> Quiet {
        Quiet {
            me,
            timing,
            leading: Mutex::default(),
            following: Mutex::default(),
            followed: AtomicUsize::new(0),
            gates: Mutex::default(),
            serving: Mutex::default(),
            handovers: Mutex::default(),
        }
    }

    /// This node's role watch: whether it serves group `group` as primary.
    /// Only a serving primary's group goes quiet.
    pub fn set_serving(&self, group: GroupId, serving: bool) {
        let mut set = self.serving.lock();
        if serving {
            set.insert(group);
        } else {
            set.remove(&group);
        }
    }

    /// Group `group`'s primary here is about to hand its role over (Raft's
    /// leadership transfer): the group wakes and stays awake a while.
    pub fn hand_over(&self, group: GroupId, raft: &Raft) {
        self.handovers.lock().insert(group, Instant::now() + HANDOVER);
        self.wake(group, raft);
        // Not quiet, whatever `wake` found: the ticker runs.
        raft.runtime_config().tick(true);
    }

    fn gate(&self, group: GroupId) -> Arc<tokio::sync::RwLock<()>> {
        self.gates.lock().entry(group).or_default().clone()
    }

    /// Whether group `group` (this node its primary in `term`, with
    /// `voters` voters) holds a lease from its voters' confirmations.
    pub fn lease_ok(&self, group: GroupId, term: u64, voters: usize) -> bool {
        let leading = self.leading.lock();
        leading.get(&group).filter(|l| l.term == term).is_some_and(|l| self.leased(l, voters))
    }

    fn leased(&self, l: &Leading, voters: usize) -> bool {
        let confirmed: Vec<Instant> = l.confirmed.values().copied().collect();
        lease_until(&confirmed, voters, &self.timing).is_some_and(|until| Instant::now() < until)
    }

    /// Whether voter `node` of group `group` confirmed it lately (for the
    /// manager's and the views' liveness: a quiet group's secondaries
    /// answer no heartbeats).
    pub fn answered(&self, group: GroupId, node: NodeId) -> bool {
        let leading = self.leading.lock();
        leading.get(&group).and_then(|l| l.confirmed.get(&node)).is_some_and(|at| at.elapsed() < ALIVE)
    }

    /// Whether group `group` is quiet with this node its primary.
    pub fn is_quiet(&self, group: GroupId) -> bool {
        self.leading.lock().get(&group).is_some_and(|l| l.quiet)
    }

    /// Wakes group `group` on its primary (something is to be written):
    /// its ticker starts again and a heartbeat goes out now, which wakes
    /// the secondaries. The lease from confirmations stays until it lapses,
    /// by when Raft's own acknowledgements have taken over.
    pub fn wake(&self, group: GroupId, raft: &Raft) {
        let woke = {
            let mut leading = self.leading.lock();
            match leading.get_mut(&group) {
                Some(l) if l.quiet => {
                    l.quiet = false;
                    l.since = Instant::now();
                    true
                }
                Some(l) => {
                    l.since = Instant::now();
                    false
                }
                None => false,
            }
        };
        if woke {
            raft.runtime_config().tick(true);
            let raft = raft.clone();
            tokio::spawn(async move {
                let _ = raft.trigger().heartbeat().await;
            });
            tracing::debug!(group, "data group {group} wakes");
        }
    }

    /// Readies group `group`'s primary for a write: wakes the group, and
    /// when Raft's own lease has lapsed (Raft refuses writes then), renews
    /// it with one round of heartbeats answered by a quorum.
    pub async fn ready_to_write(&self, group: GroupId, raft: &Raft, lease: Duration) {
        self.wake(group, raft);
        let stale = {
            let m = raft.metrics();
            let m = m.borrow_watched();
            let renew_within = lease.saturating_sub(self.timing.margin);
            m.state == ServerState::Leader
                && m.last_quorum_acked.as_ref().is_none_or(|t| openraft::Instant::elapsed(&**t) >= renew_within)
        };
        if stale {
            // Bounded: without a quorum the write fails as it would have.
            let renew = raft.ensure_linearizable(openraft::ReadPolicy::ReadIndex);
            let _ = tokio::time::timeout(lease, renew).await;
        }
    }

    /// A vote or pre-vote for group `group` arrived (`transfer`: of a
    /// leadership transfer): None to pass it to Raft — with the gate held
    /// until Raft has answered — or why it is refused.
    pub async fn vote_gate(
        &self,
        group: GroupId,
        transfer: bool,
    ) -> (tokio::sync::OwnedRwLockReadGuard<()>, Option<String>) {
        let guard = self.gate(group).read_owned().await;
        if transfer {
            return (guard, None);
        }
        (guard, self.refusal(group))
    }

    /// Why this node refuses votes in group `group` now, if it does: it is
    /// a quiet secondary that still hears the primary's node, or the
    /// primary holding a lease from its voters' confirmations (Raft's own
    /// refusal rests on heartbeats a quiet group does not send).
    fn refusal(&self, group: GroupId) -> Option<String> {
        if let Some(f) = self.following.lock().get(&group).filter(|f| f.heard.elapsed() < self.timing.hold) {
            return Some(format!(
                "group {group} is quiet and its primary (node {}) is still heard; no election is needed",
                f.leader
            ));
        }
        let leading = self.leading.lock();
        leading.get(&group).filter(|l| self.leased(l, l.voters)).map(|_| {
            format!("this node is group {group}'s primary, and a quorum confirmed it lately; no election is needed")
        })
    }

    /// An AppendEntries for group `group` from leader `leader` in `term`
    /// arrived: from another leader, the group stops being quiet here
    /// before Raft takes it. Returns whether it was quiet here.
    pub fn before_append(&self, group: GroupId, leader: NodeId, term: u64, raft: &Raft) -> bool {
        if self.followed.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let mut following = self.following.lock();
        match following.get(&group) {
            Some(f) if f.leader != leader || f.term != term => {
                following.remove(&group);
                self.followed.store(following.len(), Ordering::Relaxed);
                raft.runtime_config().tick(true);
                false
            }
            Some(_) => true,
            None => false,
        }
    }

    /// The quiet primary's AppendEntries succeeded: it woke, and Raft's
    /// own lease on this follower is fresh again.
    pub fn after_append(&self, group: GroupId, raft: &Raft) {
        if self.followed.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut following = self.following.lock();
        if following.remove(&group).is_some() {
            self.followed.store(following.len(), Ordering::Relaxed);
            raft.runtime_config().tick(true);
            tracing::debug!(group, "data group {group} wakes: its primary writes again");
        }
    }

    /// Group `group` changes its primary by a leadership transfer (this
    /// node is to lead it, or votes for the node that is): it is no longer
    /// a quiet secondary there.
    pub fn leave(&self, group: GroupId, raft: &Raft) {
        let mut following = self.following.lock();
        if following.remove(&group).is_some() {
            self.followed.store(following.len(), Ordering::Relaxed);
        }
        raft.runtime_config().tick(true);
    }

    /// Node `from` names the groups it leads and keeps quiet: confirms
    /// those this node agrees on (a voter following `from` in that term,
    /// with its whole log), stopping their tickers here.
    pub async fn confirm(&self, from: NodeId, asks: Vec<QuietAsk>, hosts: &Hosts) -> Vec<GroupId> {
        let mut confirmed = Vec::with_capacity(asks.len());
        for ask in asks {
            let Some(hosted) = hosts.read().get(&ask.group).cloned() else { continue };
            let now = Instant::now();
            // Still quiet here under the same primary and term: nothing
            // can have changed, since votes were refused meanwhile and an
            // append from anyone would have ended it.
            {
                let mut following = self.following.lock();
                if let Some(f) = following.get_mut(&ask.group)
                    && f.leader == from
                    && f.term == ask.term
                    && f.heard.elapsed() < self.timing.hold
                {
                    f.heard = now;
                    drop(following);
                    hosted.freshness.heard(ask.commit);
                    confirmed.push(ask.group);
                    continue;
                }
            }
            let gate = self.gate(ask.group);
            let _exclusive = gate.write().await;
            let me = self.me;
            let agrees = hosted
                .raft
                .with_raft_state(move |s| {
                    let vote = s.vote_ref();
                    let voter = s.membership_state.effective().membership().voter_ids().any(|v| v == me);
                    vote.is_committed()
                        && vote.leader_id().term() == ask.term
                        && *vote.leader_id().node_id() == from
                        && s.server_state == ServerState::Follower
                        && voter
                        && s.log_ids.last().map(|l| l.index) == Some(ask.last_index)
                })
                .await
                .unwrap_or(false);
            if !agrees {
                continue;
            }
            self.follow(ask.group, from, ask.term, now);
            hosted.raft.runtime_config().tick(false);
            hosted.freshness.heard(ask.commit);
            confirmed.push(ask.group);
        }
        confirmed
    }

    /// Records this node a quiet secondary of `group` under `leader` in
    /// `term`, having heard it at `heard`.
    fn follow(&self, group: GroupId, leader: NodeId, term: u64, heard: Instant) {
        let mut following = self.following.lock();
        following.insert(group, Following { leader, term, heard });
        self.followed.store(following.len(), Ordering::Relaxed);
    }

    /// Whether this node is a quiet secondary of `group`.
    pub fn is_following(&self, group: GroupId) -> bool {
        self.following.lock().get(&group).is_some_and(|f| f.heard.elapsed() < self.timing.hold)
    }

    /// Runs the rounds of this node, as primary and as secondary, until
    /// the runtime stops.
    pub async fn run(self: Arc<Self>, hosts: Hosts, peers: Peers) {
        let mut tick = tokio::time::interval(self.timing.round);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            self.lead_round(&hosts, &peers).await;
            self.follow_round(&hosts);
        }
    }

    /// A quiet secondary that has not heard the primary's node for `hold`
    /// wakes the group: it elects as any other.
    fn follow_round(&self, hosts: &Hosts) {
        let lapsed: Vec<GroupId> = {
            let mut following = self.following.lock();
            let lapsed: Vec<GroupId> =
                following.iter().filter(|(_, f)| f.heard.elapsed() >= self.timing.hold).map(|(g, _)| *g).collect();
            for g in &lapsed {
                following.remove(g);
            }
            self.followed.store(following.len(), Ordering::Relaxed);
            lapsed
        };
        for group in lapsed {
            if let Some(hosted) = hosts.read().get(&group) {
                hosted.raft.runtime_config().tick(true);
            }
            tracing::info!(group, "data group {group} wakes: its primary's node is not heard");
        }
    }

    /// One round of a primary's node: finds the groups it leads that may
    /// be quiet, asks their other voters' nodes to confirm them, stops the
    /// tickers of those every voter confirmed, and wakes those a voter
    /// did not.
    async fn lead_round(&self, hosts: &Hosts, peers: &Peers) {
        let now = Instant::now();
        let groups: Vec<(GroupId, Raft)> =
            hosts.read().iter().filter(|(g, _)| **g != SYSTEM_GROUP).map(|(g, h)| (*g, h.raft.clone())).collect();
        let serving = self.serving.lock().clone();
        let handing_over: std::collections::HashSet<GroupId> = {
            let mut handovers = self.handovers.lock();
            handovers.retain(|_, until| *until > now);
            handovers.keys().copied().collect()
        };
        let mut asks: HashMap<NodeId, (String, Vec<QuietAsk>)> = HashMap::new();
        let mut candidates: Vec<(GroupId, Raft, Vec<NodeId>)> = Vec::new();
        {
            let mut leading = self.leading.lock();
            leading.retain(|g, _| groups.iter().any(|(h, _)| h == g));
            for (group, raft) in &groups {
                let m = raft.metrics().borrow_watched().clone();
                let leads = m.state == ServerState::Leader && m.current_leader == Some(self.me);
                if !leads {
                    if let Some(l) = leading.remove(group)
                        && l.quiet
                    {
                        raft.runtime_config().tick(true);
                    }
                    continue;
                }
                let l = leading.entry(*group).or_insert_with(|| Leading {
                    term: m.current_term,
                    last_index: m.last_log_index,
                    since: now,
                    confirmed: HashMap::new(),
                    voters: 0,
                    quiet: false,
                });
                if l.term != m.current_term {
                    *l = Leading {
                        term: m.current_term,
                        last_index: m.last_log_index,
                        since: now,
                        confirmed: HashMap::new(),
                        voters: 0,
                        quiet: l.quiet,
                    };
                }
                let others =
                    steady_voters(&m, self.me).filter(|_| serving.contains(group) && !handing_over.contains(group));
                if others.is_none() || l.last_index != m.last_log_index {
                    l.last_index = m.last_log_index;
                    l.since = now;
                    if l.quiet {
                        l.quiet = false;
                        raft.runtime_config().tick(true);
                    }
                    continue;
                }
                if now.duration_since(l.since) < self.timing.idle {
                    continue;
                }
                let others = others.expect("steady above");
                let ask = QuietAsk {
                    group: *group,
                    term: m.current_term,
                    last_index: m.last_log_index.unwrap_or(0),
                    commit: m.last_applied.as_ref().map_or(0, |l| l.index),
                };
                for (id, addr) in &others {
                    asks.entry(*id).or_insert_with(|| (addr.clone(), Vec::new())).1.push(ask.clone());
                }
                l.voters = others.len() + 1;
                candidates.push((*group, raft.clone(), others.into_iter().map(|(id, _)| id).collect()));
            }
        }
        if candidates.is_empty() {
            return;
        }
        let calls = asks.into_iter().map(|(node, (addr, groups))| {
            let client = peers.client(&addr);
            let round = self.timing.round;
            async move {
                let reply = service::call(&client, &QuietMessage::Confirm(groups), round).await;
                let confirmed = match reply {
                    Ok(Ok(groups)) => groups,
                    _ => Vec::new(),
                };
                (node, confirmed)
            }
        });
        let answers = futures::future::join_all(calls).await;
        let mut leading = self.leading.lock();
        for (node, confirmed) in answers {
            for group in confirmed {
                if let Some(l) = leading.get_mut(&group) {
                    l.confirmed.insert(node, now);
                }
            }
        }
        for (group, raft, others) in candidates {
            let Some(l) = leading.get_mut(&group) else { continue };
            let all = others.iter().all(|n| l.confirmed.get(n) == Some(&now));
            // A write may have woken the group while the round was out.
            let unmoved = raft.metrics().borrow_watched().last_log_index == l.last_index;
            if all && unmoved && !l.quiet && now.duration_since(l.since) >= self.timing.idle {
                l.quiet = true;
                raft.runtime_config().tick(false);
                tracing::debug!(group, "data group {group} is quiet");
            } else if !all && l.quiet {
                l.quiet = false;
                l.since = now;
                raft.runtime_config().tick(true);
                let raft = raft.clone();
                tokio::spawn(async move {
                    let _ = raft.trigger().heartbeat().await;
                });
                tracing::debug!(group, "data group {group} wakes: a voter did not confirm");
            }
        }
    }
}

/// What the primary's node of quiet groups asks of the nodes of their
/// other voters (answered by [`QuietService`]).
#[derive(Serialize, Deserialize)]
pub enum QuietMessage {
    /// The quiet groups the asking node leads: confirm them. The reply
    /// lists the groups this node confirms.
    Confirm(Vec<QuietAsk>),
}

impl Message for QuietMessage {
    const SUBSYSTEM: Subsystem = Subsystem::Quiet;
    type Reply = Vec<GroupId>;
}

/// Confirms quiet groups with this node's replicas of them.
pub struct QuietService {
    pub quiet: Arc<Quiet>,
    pub hosts: Hosts,
}

impl Service for QuietService {
    type Message = QuietMessage;

    fn serve(self: &Arc<Self>, from: NodeId, message: QuietMessage) -> BoxFuture<'static, Answer<Vec<GroupId>>> {
        let this = self.clone();
        let QuietMessage::Confirm(asks) = message;
        Box::pin(async move { Ok(this.quiet.confirm(from, asks, &this.hosts).await) })
    }
}

/// The other voters of a group this node leads (`m`: its metrics) with
/// their RPC addresses, when the group is steady enough to go quiet: no
/// learner and no change of its members under way, every entry applied
/// here and on every voter.
fn steady_voters(m: &openraft::RaftMetrics<C>, me: NodeId) -> Option<Vec<(NodeId, String)>> {
    let membership = m.membership_config.membership();
    if membership.get_joint_config().len() != 1 || membership.learner_ids().next().is_some() {
        return None;
    }
    let last = m.last_log_index?;
    if m.last_applied.as_ref().map(|l| l.index) != Some(last) {
        return None;
    }
    let mut others = Vec::new();
    for id in membership.voter_ids().filter(|v| *v != me) {
        if matched(m, &id) != Some(last) {
            return None;
        }
        others.push((id, membership.get_node(&id)?.rpc_addr.clone()));
    }
    Some(others)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing() -> QuietTiming {
        QuietTiming::for_election_timeout(Duration::from_millis(600))
    }

    #[test]
    fn a_lease_needs_a_quorum_counting_the_primary() {
        let t = timing();
        let now = Instant::now();
        let (old, new) = (now - Duration::from_millis(400), now);
        // One voter: the primary alone is the quorum; no lease is needed.
        assert_eq!(lease_until(&[], 1, &t), None);
        // Three voters: the primary and the newer of the two confirmations.
        assert_eq!(lease_until(&[old, new], 3, &t), Some(new + t.hold - t.margin));
        assert_eq!(lease_until(&[old], 3, &t), Some(old + t.hold - t.margin));
        assert_eq!(lease_until(&[], 3, &t), None);
        // Five voters: the primary and the two newest of four.
        let mid = now - Duration::from_millis(200);
        assert_eq!(lease_until(&[old, new, mid, old], 5, &t), Some(mid + t.hold - t.margin));
        assert_eq!(lease_until(&[new], 5, &t), None);
    }

    #[test]
    fn a_quiet_secondary_refuses_votes_while_it_hears_the_primary() {
        let t = timing();
        let q = Quiet::new(2, t);
        assert_eq!(q.refusal(7), None, "an awake group votes as Raft decides");
        q.follow(7, 1, 5, Instant::now());
        assert!(q.refusal(7).is_some_and(|why| why.contains("node 1")));
        assert_eq!(q.refusal(8), None, "only the quiet group refuses");
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        // A leadership transfer is the primary's own wish.
        assert_eq!(rt.block_on(q.vote_gate(7, true)).1, None);
        assert!(rt.block_on(q.vote_gate(7, false)).1.is_some());
        // Not heard for the hold: the group elects again.
        q.follow(7, 1, 5, Instant::now() - t.hold);
        assert_eq!(q.refusal(7), None);
        assert!(!q.is_following(7));
    }

    #[test]
    fn a_quiet_primary_refuses_votes_while_a_quorum_confirmed_it() {
        let t = timing();
        let q = Quiet::new(1, t);
        let now = Instant::now();
        let leading = |confirmed: &[(NodeId, Instant)]| Leading {
            term: 5,
            last_index: Some(10),
            since: now,
            confirmed: confirmed.iter().copied().collect(),
            voters: 3,
            quiet: true,
        };
        q.leading.lock().insert(7, leading(&[(2, now)]));
        assert!(q.refusal(7).is_some());
        assert!(q.lease_ok(7, 5, 3));
        assert!(!q.lease_ok(7, 6, 3), "a lease is of one term");
        assert!(!q.lease_ok(7, 5, 5), "one confirmation of four is no quorum of five");
        // The confirmation is older than the hold (less the margin): no lease.
        q.leading.lock().insert(7, leading(&[(2, now - t.hold + t.margin), (3, now - t.hold)]));
        assert_eq!(q.refusal(7), None);
        assert!(!q.lease_ok(7, 5, 3));
    }

    #[test]
    fn the_hold_is_within_rafts_own_lease_and_renewed_in_time() {
        let t = timing();
        assert!(t.hold <= Duration::from_millis(600));
        // A lease from one round outlives the next round by more than a round.
        assert!(t.hold - t.margin > t.round * 2);
    }
}
