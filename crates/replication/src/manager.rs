//! The partition manager at work: the primary keeps the group at its
//! replica count.
//!
//! A cluster may have more nodes than the group has replicas (`--replicas`,
//! 3 by default). The nodes outside the group's configuration are *spares*:
//! gateways that hold no replica. Every spare registers with the primary
//! twice a second (`Request::Register`; it learns who the primary is from
//! any node it can reach), which is how the primary knows which spares are
//! alive and where they are. Members' liveness comes from Raft's own
//! heartbeats.
//!
//! Twice a second the primary builds the cluster map from that (members with
//! their progress, spares, failure domains) and asks the manager's
//! decisions (`tessera_cluster::plan_repair`) what to do, then carries it
//! out through Raft membership changes, one at a time:
//!
//! * **Downshift**: a voter unreachable for longer than `replace_after`
//!   leaves the configuration (N → N-1) — but only when a spare can take
//!   its place; otherwise it is kept, so that its return restores the
//!   quorum by log catch-up.
//! * **Build**: the new node joins as a learner (a non-voting member), gets
//!   the primary's snapshot when the log it needs is purged, then the log
//!   since; once it is within `CAUGHT_UP` entries of the primary it
//!   becomes a voter.
//! * **Drop**: a learner that died while being built leaves the
//!   configuration; another is started elsewhere.
//!
//! Because the decisions live in the replicated state (the configuration is
//! a Raft log entry) and the roster is rebuilt from registrations within a
//! second, a new primary simply carries on: a build cut by a change of
//! primary is resumed by the next one.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::ChangeMembers;
use openraft::async_runtime::WatchReceiver;
use parking_lot::Mutex;
use tessera_cluster::{Action, ClusterMap, PartitionInfo, Replica, plan_repair};
use tokio::sync::watch;

use crate::group::Role;
use crate::load::LoadMeter;
use crate::status::{ALIVE, answered, matched};
use crate::types::{Load, NodeId, NodeInfo, Raft};

/// A learner this close to the primary's last log index becomes a voter.
const CAUGHT_UP: u64 = 64;
/// How often the primary looks at the map, and spares register.
pub(crate) const TICK: Duration = Duration::from_millis(500);

/// What the primary has heard from the other nodes: the spares (node →
/// where it is, when), and every node's load figures, with this node's
/// own meter.
pub struct Roster {
    spares: Mutex<BTreeMap<NodeId, (NodeInfo, Instant)>>,
    loads: Mutex<BTreeMap<NodeId, (Load, Instant)>>,
    meter: LoadMeter,
}

impl Roster {
    pub(crate) fn new(meter: LoadMeter) -> Roster {
        Roster { spares: Mutex::default(), loads: Mutex::default(), meter }
    }

    pub(crate) fn heard(&self, id: NodeId, info: NodeInfo) {
        self.spares.lock().insert(id, (info, Instant::now()));
    }

    /// A node's load figures, as it reported them with its registration.
    pub(crate) fn reported(&self, id: NodeId, load: Load) {
        self.loads.lock().insert(id, (load, Instant::now()));
    }

    /// This node's load figures, sampled now.
    pub(crate) fn own_load(&self) -> Load {
        self.meter.sample()
    }

    /// A node's load figures: this node's (`me`) sampled now, another's
    /// as last reported, if within `ALIVE`.
    pub(crate) fn load_of(&self, id: NodeId, me: NodeId) -> Option<Load> {
        if id == me {
            return Some(self.own_load());
        }
        let loads = self.loads.lock();
        loads.get(&id).filter(|(_, at)| at.elapsed() < ALIVE).map(|(load, _)| *load)
    }

    /// Spares heard from within `ALIVE`, with whether they still are.
    pub fn spares(&self) -> Vec<(NodeId, NodeInfo, bool)> {
        let mut spares = self.spares.lock();
        // Forget spares silent for long (a node taken out of the cluster).
        spares.retain(|_, (_, at)| at.elapsed() < Duration::from_secs(600));
        spares.iter().map(|(id, (info, at))| (*id, info.clone(), at.elapsed() < ALIVE)).collect()
    }
}

pub(crate) struct Manager {
    pub raft: Raft,
    pub me: NodeId,
    pub roster: Arc<Roster>,
    pub role: watch::Receiver<Role>,
    /// Voting replicas the group should have.
    pub replicas: usize,
    /// How long a voter may be unreachable before it is replaced.
    pub replace_after: Duration,
}

impl Manager {
    pub(crate) async fn run(self) {
        let mut down_since: HashMap<NodeId, Instant> = HashMap::new();
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if *self.role.borrow() != Role::Primary {
                // Only the primary decides; a new one starts its clocks afresh.
                down_since.clear();
                continue;
            }
            let (map, voters) = self.map();
            for v in &voters {
                if map.is_live(*v) {
                    down_since.remove(v);
                } else {
                    down_since.entry(*v).or_insert_with(Instant::now);
                }
            }
            down_since.retain(|n, _| voters.contains(n));
            let overdue: Vec<NodeId> =
                down_since.iter().filter(|(_, t)| t.elapsed() >= self.replace_after).map(|(n, _)| *n).collect();
            for action in plan_repair(&map, &overdue) {
                if let Err(e) = self.carry_out(&action).await {
                    tracing::warn!(?action, "the partition manager's step did not complete: {e}");
                    break;
                }
            }
        }
    }

    /// The cluster map as the primary sees it: members (voters, learners)
    /// and spares, with liveness and progress; the group's log as one
    /// partition. Also the voters' ids.
    fn map(&self) -> (ClusterMap, Vec<NodeId>) {
        let m = self.raft.metrics().borrow_watched().clone();
        let membership = m.membership_config.membership().clone();
        let voters: Vec<NodeId> = membership.voter_ids().collect();
        let mut map = ClusterMap::default();
        let mut replicas = Vec::new();
        for (id, info) in membership.nodes() {
            let me = *id == self.me;
            add_node(&mut map, *id, info, me || answered(&m, id));
            self.note_load(&mut map, *id);
            let role = if me {
                tessera_cluster::Role::Primary
            } else if voters.contains(id) {
                tessera_cluster::Role::Secondary
            } else {
                tessera_cluster::Role::Building
            };
            let applied = if me { m.last_log_index } else { matched(&m, id) };
            replicas.push(Replica { node: *id, role, applied: applied.unwrap_or(0) });
        }
        for (id, info, alive) in self.roster.spares() {
            if !map.nodes.contains_key(&id) {
                add_node(&mut map, id, &info, alive);
                self.note_load(&mut map, id);
            }
        }
        map.partitions.insert(
            0,
            PartitionInfo {
                id: 0,
                epoch: m.current_term,
                target: self.replicas,
                replicas,
                log_start: m.purged.as_ref().map_or(0, |l| l.index + 1),
                unavailable: false,
            },
        );
        (map, voters)
    }

    /// Puts a node's latest load figures on the map (placement prefers
    /// the less busy of otherwise equal nodes).
    fn note_load(&self, map: &mut ClusterMap, id: NodeId) {
        if let Some(n) = map.nodes.get_mut(&id) {
            n.cpu_percent = self.roster.load_of(id, self.me).map(|l| l.cpu_percent);
        }
    }

    async fn carry_out(&self, action: &Action) -> Result<(), String> {
        match action {
            Action::Downshift { node, .. } => {
                tracing::warn!(node, "downshifting: node {node} has been unreachable too long and leaves the group");
                self.change(ChangeMembers::RemoveVoters(BTreeSet::from([*node]))).await
            }
            Action::Drop { node, .. } => {
                tracing::warn!(node, "dropping node {node}'s unfinished replica");
                self.change(ChangeMembers::RemoveNodes(BTreeSet::from([*node]))).await
            }
            Action::Build { node, .. } => self.build(*node).await,
            // Elections are Raft's; the others do not arise from repair.
            _ => Ok(()),
        }
    }

    async fn change(&self, change: ChangeMembers<NodeId, NodeInfo>) -> Result<(), String> {
        self.raft.change_membership(change, false).await.map(|_| ()).map_err(|e| e.to_string())
    }

    /// Builds a replica on `node`: a learner first (snapshot, then the log),
    /// a voter once caught up. Gives up if this node stops being primary or
    /// the learner stops answering.
    async fn build(&self, node: NodeId) -> Result<(), String> {
        let m = self.raft.metrics().borrow_watched().clone();
        if m.membership_config.membership().get_node(&node).is_none() {
            let info = self
                .roster
                .spares()
                .into_iter()
                .find(|(id, _, _)| *id == node)
                .map(|(_, info, _)| info)
                .ok_or_else(|| format!("node {node} is not known"))?;
            tracing::info!(node, addr = %info.rpc_addr, "building a replica on node {node}");
            self.raft.add_learner(node, info, false).await.map_err(|e| e.to_string())?;
        }
        let started = Instant::now();
        let mut silent_since: Option<Instant> = None;
        loop {
            if *self.role.borrow() != Role::Primary {
                return Err("this node stopped being the primary".into());
            }
            let m = self.raft.metrics().borrow_watched().clone();
            let last = m.last_log_index.unwrap_or(0);
            if matched(&m, &node).is_some_and(|i| i + CAUGHT_UP >= last) {
                break;
            }
            // A snapshot being installed may keep the learner from
            // answering for a while; a learner silent far longer is gone.
            if answered(&m, &node) {
                silent_since = None;
            } else if silent_since.get_or_insert_with(Instant::now).elapsed() > self.replace_after.max(BUILD_SILENCE) {
                return Err(format!("node {node} stopped answering while its replica was built"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.change(ChangeMembers::AddVoterIds(BTreeSet::from([node]))).await?;
        tracing::info!(node, seconds = started.elapsed().as_secs_f64(), "node {node} now holds a replica and votes");
        Ok(())
    }
}

/// A learner may be silent this long (installing a snapshot) before its
/// build is given up.
const BUILD_SILENCE: Duration = Duration::from_secs(30);

/// Adds a node to a cluster map with its domains, address and liveness.
pub(crate) fn add_node(map: &mut ClusterMap, id: NodeId, info: &NodeInfo, live: bool) {
    map.add_node(id, &info.failure_domain, &info.upgrade_domain);
    if let Some(n) = map.nodes.get_mut(&id) {
        n.live = live;
        n.addr = info.rpc_addr.clone();
    }
}

/// The first voters of a new group: `replicas` of the founding nodes,
/// placed across failure domains (the lowest ids where domains tie), the
/// proposing node among them.
pub(crate) fn founding_voters(
    members: &BTreeMap<NodeId, NodeInfo>,
    me: NodeId,
    replicas: usize,
) -> BTreeMap<NodeId, NodeInfo> {
    if members.len() <= replicas {
        return members.clone();
    }
    let mut map = ClusterMap::default();
    for (id, info) in members {
        add_node(&mut map, *id, info, true);
    }
    let mut chosen = vec![me];
    if let Ok(more) = tessera_cluster::place(&map, replicas - 1, &[me]) {
        chosen.extend(more);
    }
    members.iter().filter(|(id, _)| chosen.contains(id)).map(|(id, i)| (*id, i.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(fd: &str) -> NodeInfo {
        NodeInfo { failure_domain: fd.into(), ..Default::default() }
    }

    #[test]
    fn founding_voters_spread_over_failure_domains() {
        let members: BTreeMap<NodeId, NodeInfo> =
            [(1, info("a")), (2, info("a")), (3, info("b")), (4, info("c")), (5, info("c"))].into();
        let voters = founding_voters(&members, 1, 3);
        assert_eq!(voters.keys().copied().collect::<Vec<_>>(), vec![1, 3, 4]);
        // Fewer founders than replicas: all of them vote.
        let two: BTreeMap<NodeId, NodeInfo> = [(1, info("a")), (2, info("a"))].into();
        assert_eq!(founding_voters(&two, 1, 3).len(), 2);
    }
}
