//! Follows a data group's Raft and turns it into this node's [`Role`] in
//! the group: the rule of when a node serves as primary.

use std::sync::Arc;
use std::time::Duration;

use openraft::Instant as _;
use openraft::async_runtime::WatchReceiver;
use openraft::{ReadPolicy, ServerState};
use tessera_engine::{Node, SYSTEM_STREAM};
use tokio::sync::watch;

use super::commit_log::Proposals;
use super::log_store::LogStore;
use super::metrics::ALIVE;
use super::quiet::Quiet;
use super::role::Role;
use super::settings::RaftSettings;
use super::state_machine::{Owns, Raft};
use super::transport::hello;
use super::type_config::C;
use crate::types::{GroupId, NodeId, NodeInfo};
use crate::wire::Peers;

/// What a node outside the group's configuration (a spare, or a node that
/// was replaced while away) last heard from the primary when registering.
#[derive(Debug, Clone)]
pub(crate) struct SpareView {
    pub primary: NodeId,
    pub info: NodeInfo,
    /// The primary counts this node a member (a learner being built, or a voter).
    pub member: bool,
    pub at: std::time::Instant,
}

pub(crate) type SpareState = Arc<parking_lot::Mutex<Option<SpareView>>>;

/// How long after a quorum last answered a primary may still serve: no
/// other node can be elected before its followers have missed it for the
/// lease (the maximum election timeout) plus at least the minimum election
/// timeout; until then it may serve, even if a large entry delays the
/// quorum's answers.
pub(crate) fn primary_lease(settings: &RaftSettings) -> Duration {
    let (min, max) = settings.election_timeout_ms;
    Duration::from_millis(max + min - settings.heartbeat_ms.min(min / 2))
}

/// Whether this node (`me`) leads the group whose metrics are `m` with a
/// lease: a group of one, a quorum that answered Raft within `lease`, or
/// (a quiet group) a quorum that confirmed it lately.
pub(crate) fn leads_with_lease(
    m: &openraft::RaftMetrics<C>,
    me: NodeId,
    lease: Duration,
    quiet: &Quiet,
    group: GroupId,
) -> bool {
    let leads = m.state == ServerState::Leader && m.current_leader == Some(me);
    let voters = m.membership_config.membership().voter_ids().count();
    leads
        && (voters <= 1
            || m.last_quorum_acked.as_ref().is_some_and(|t| t.elapsed() < lease)
            || quiet.lease_ok(group, m.current_term, voters))
}

/// Follows Raft's metrics and turns them into this node's role. A node
/// becomes primary only once it leads with a quorum and has applied every
/// entry committed before its term (so its engines hold everything), and
/// its engines' clocks are above every timestamp in its log.
pub(crate) struct RoleWatch {
    pub group: GroupId,
    pub raft: Raft,
    pub node: Arc<Node>,
    pub log: LogStore,
    pub proposals: Arc<Proposals>,
    pub peers: Peers,
    pub settings: RaftSettings,
    pub spare: SpareState,
    /// The streams the group replicates: a new primary raises their clocks.
    pub owns: Owns,
    /// A quiet group's primary holds its lease from its voters'
    /// confirmations, not from Raft's heartbeats.
    pub quiet: Arc<Quiet>,
}

impl RoleWatch {
    pub(crate) async fn run(self, role: watch::Sender<Role>) {
        let mut metrics = self.raft.metrics();
        let lease = primary_lease(&self.settings);
        let mut tick = tokio::time::interval(Duration::from_millis(self.settings.heartbeat_ms.max(20) / 2));
        // The primary's addresses as it reports them now (they may differ
        // from those recorded when the cluster formed).
        let mut resolved: Option<(NodeId, NodeInfo)> = None;
        loop {
            tokio::select! {
                changed = metrics.changed() => if changed.is_err() { return },
                _ = tick.tick() => {}
            }
            let m = metrics.borrow_and_update().clone();
            let me = self.settings.id;
            let leads = m.state == ServerState::Leader && m.current_leader == Some(me);
            let voters = m.membership_config.membership().voter_ids().count();
            let quorum = leads_with_lease(&m, me, lease, &self.quiet, self.group);
            let current = role.borrow().clone();
            // Outside the configuration (a spare, or a node replaced while
            // away), or a member hearing no primary while the primary says
            // it is not one: a gateway to the primary it registered with.
            let spare = self.spare.lock().clone().filter(|s| {
                !s.member
                    && s.at.elapsed() < ALIVE
                    && s.primary != me
                    && (m.current_leader.is_none() || m.membership_config.membership().get_node(&me).is_none())
            });
            let next = if let Some(s) = spare.filter(|_| !leads) {
                Role::Secondary { primary: s.primary, info: s.info }
            } else if leads && quorum {
                if current == Role::Primary { Role::Primary } else { self.promote(m.current_term).await }
            } else if leads {
                // Name what is known: when a quorum last acknowledged this
                // leader, against the lease, not a guess at how many nodes
                // are down (a busy but live voter misses the lease too).
                let since = match m.last_quorum_acked.as_ref() {
                    Some(t) => format!("last acknowledged it {} ms ago", t.elapsed().as_millis()),
                    None => "has not acknowledged it yet".to_string(),
                };
                Role::Unavailable(format!(
                    "this node leads the group but a quorum of its voters ({} of {voters}) {since}, \
                     beyond its lease of {} ms: writes wait until a quorum answers or another node takes over",
                    voters / 2 + 1,
                    lease.as_millis()
                ))
            } else {
                let recorded = m
                    .current_leader
                    .and_then(|l| m.membership_config.membership().get_node(&l).map(|i| (l, i.clone())));
                match recorded {
                    Some((primary, info)) => {
                        if resolved.as_ref().is_none_or(|(id, _)| *id != primary) {
                            let live =
                                hello(&self.peers, &info.rpc_addr).await.ok().filter(|(id, _, _)| *id == primary);
                            resolved = Some((primary, live.map_or(info, |(_, i, _)| i)));
                        }
                        let (primary, info) = resolved.clone().expect("resolved above");
                        Role::Secondary { primary, info }
                    }
                    None if voters == 0 => Role::Starting,
                    None => Role::Unavailable(
                        "the cluster has no primary: an election is under way, or fewer than a quorum of nodes is reachable"
                            .into(),
                    ),
                }
            };
            if next != Role::Primary && current == Role::Primary {
                let why = match &next {
                    Role::Unavailable(why) => why.clone(),
                    _ => "this node is no longer the primary".to_string(),
                };
                self.proposals.set_serving(false, &why);
                if !leads {
                    self.proposals.tickets.fail_all("the primary changed while the commit waited for its quorum");
                }
                tracing::warn!(group = self.group, "this node stopped serving as primary: {why}");
            }
            if next != current {
                self.quiet.set_serving(self.group, next == Role::Primary);
                let _ = role.send(next);
            }
        }
    }

    /// Catches up (everything committed before this term applied), lifts
    /// the engines' clocks above every timestamp in the log, and serves.
    async fn promote(&self, term: u64) -> Role {
        match self.raft.ensure_linearizable(ReadPolicy::ReadIndex).await {
            Ok(_) => {
                let ts = self.log.max_ts();
                if (self.owns)(SYSTEM_STREAM) {
                    self.node.system().raise_clock(ts);
                }
                for (stream, engine) in self.node.partitions() {
                    if (self.owns)(stream) {
                        engine.raise_clock(ts);
                    }
                }
                self.proposals.set_serving(true, "");
                self.proposals.gate.set_handing_over(false);
                tracing::info!(group = self.group, term, "this node is now the primary");
                Role::Primary
            }
            Err(e) => Role::Unavailable(format!("this node is becoming the primary ({e})")),
        }
    }
}
