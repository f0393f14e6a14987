//! The partition manager at work. It runs on the leader of the manager
//! group (`directory`: a Raft group of its own, on 3 nodes, 5 once the
//! cluster has 5 or more) and keeps both groups at their replica counts:
//! the data group (its count in the directory, `--replicas` at first) and
//! the manager group itself.
//!
//! A cluster may have more nodes than a group has replicas. The nodes
//! outside a group's configuration are *spares* for it. Every node reports
//! to the manager's leader twice a second (`Request::Report`; it learns who
//! that is from any node it can reach): that is how the manager knows which
//! nodes are alive, where they are and how busy. A voter's liveness is the
//! group leader's: whether it answers the leader's heartbeats.
//!
//! Twice a second the manager's leader takes each group's view from the
//! group's leader (`GroupView`; the data group's primary answers over RPC
//! when it is another node), builds the cluster map from it (members with
//! their progress, the other nodes, failure domains, load) and asks the
//! decisions (`tessera_cluster::plan_repair`) what to do. The group's
//! leader carries each step out as a Raft membership change
//! (`Request::Reconfigure` for the data group), one at a time:
//!
//! * **Downshift**: a voter unreachable for longer than `replace_after`
//!   leaves the configuration (N → N-1) — but only when a spare can take
//!   its place; otherwise it is kept, so that its return restores the
//!   quorum by log catch-up.
//! * **Build**: the new node joins as a learner (a non-voting member), gets
//!   the leader's snapshot when the log it needs is purged, then the log
//!   since; once it is within `CAUGHT_UP` entries of the leader it
//!   becomes a voter (a later round sees it caught up and promotes it).
//! * **Drop**: a learner that died while being built leaves the
//!   configuration; another is started elsewhere.
//! * **Readers**: every other live node is a learner of the first group
//!   and of the manager group while they have their voters (`add_reader`):
//!   it holds the catalog (databases' groups may keep replicas there) and
//!   the directory, and replaces a lost voter at once, being caught up.
//!
//! Because the decisions live in replicated state (each configuration is a
//! Raft log entry of its group, the directory is the manager's) and the
//! liveness figures are rebuilt from reports within a second, a new
//! manager leader simply carries on: a build cut by a change of leader,
//! of either group, is resumed by the next round.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::async_runtime::WatchReceiver;
use openraft::storage::RaftStateMachine;
use openraft::{ChangeMembers, ServerState};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tessera_cluster::{Action, ClusterMap, PartitionInfo, Replica, balance_primaries, plan_repair};
use tokio::sync::watch;

use crate::manager::directory::{DirectoryCommand, DirectoryMachine, DirectoryRaft};
use crate::manager::load::LoadMeter;
use crate::manager::status::{ALIVE, answered, matched};
use crate::node::Role;
use crate::raft::network::{Reply, Request};
use crate::raft::type_config::{C, Raft};
use crate::types::{DATA_GROUP, GroupId, Load, NodeId, NodeInfo};
use crate::wire::Peers;

/// A learner this close to the primary's last log index becomes a voter.
pub(crate) const CAUGHT_UP: u64 = 64;
/// How often the primary looks at the map, and spares register.
pub(crate) const TICK: Duration = Duration::from_millis(500);

/// What the primary has heard from the other nodes: the spares (node →
/// where it is, when), and every node's load figures, with this node's
/// own meter.
pub struct Roster {
    spares: Mutex<BTreeMap<NodeId, (NodeInfo, Instant)>>,
    loads: Mutex<BTreeMap<NodeId, (Load, Instant)>>,
    meter: LoadMeter,
    /// The manager group as the manager's leader last told this node, and
    /// where that leader is.
    manager_group: Mutex<Option<(crate::manager::status::ManagerGroup, Option<NodeInfo>, Instant)>>,
    /// Each data group's primary as the manager's leader last saw it (on
    /// the leader: from its own round; elsewhere: with report answers), for
    /// nodes outside a group that must send its clients on.
    primaries: Mutex<(Vec<GroupPrimary>, Option<Instant>)>,
    /// This node is being drained (since when): the manager moves no
    /// primary to it, and moves off any it gets, until it restarts.
    draining: Mutex<Option<Instant>>,
    /// On the manager's leader: the nodes whose last report said they are
    /// being drained, and when.
    drained: Mutex<BTreeMap<NodeId, Instant>>,
    /// The nodes being drained as the manager's leader last listed them
    /// (elsewhere than on the leader), and when.
    draining_heard: Mutex<(Vec<NodeId>, Option<Instant>)>,
    /// When a report of this node last reached the manager's leader (its
    /// sending began then; on the leader itself, its round began then).
    leader_heard: Mutex<Option<Instant>>,
    /// On the manager's leader: each database group's members as its
    /// primary last showed them (for telling a node the groups it is no
    /// longer in: `outside`).
    members: Mutex<Vec<(GroupId, Vec<NodeId>)>>,
    /// Wakes the report loop for a report now.
    pub(crate) report_now: tokio::sync::Notify,
}

/// A data group's primary, as the manager last saw it.
pub type GroupPrimary = (GroupId, NodeId, NodeInfo);

impl Roster {
    pub(crate) fn new(meter: LoadMeter) -> Roster {
        Roster {
            spares: Mutex::default(),
            loads: Mutex::default(),
            meter,
            manager_group: Mutex::default(),
            primaries: Mutex::default(),
            draining: Mutex::default(),
            drained: Mutex::default(),
            draining_heard: Mutex::default(),
            leader_heard: Mutex::default(),
            members: Mutex::default(),
            report_now: tokio::sync::Notify::new(),
        }
    }

    /// Marks this node as being drained and waits until the manager's
    /// leader has heard it (a report sent after the mark reached it), so
    /// that its next round moves no primary here.
    pub(crate) async fn mark_draining(&self) -> Result<(), String> {
        let since = *self.draining.lock().get_or_insert_with(Instant::now);
        self.leader_hears(since).await
    }

    /// Reports now and waits until the manager's leader has answered a
    /// report sent at or after `since` (up to 5 s).
    pub(crate) async fn leader_hears(&self, since: Instant) -> Result<(), String> {
        self.report_now.notify_one();
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.leader_heard.lock().is_none_or(|at| at < since) {
            if Instant::now() > deadline {
                return Err("the manager's leader has not heard that this node is being drained".into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }

    /// This node is being drained.
    pub(crate) fn draining(&self) -> bool {
        self.draining.lock().is_some()
    }

    pub(crate) fn leader_heard(&self, at: Instant) {
        let mut heard = self.leader_heard.lock();
        if heard.is_none_or(|h| h < at) {
            *heard = Some(at);
        }
    }

    /// The nodes being drained as this node knows them: itself by its own
    /// mark, the others as they reported (on the manager's leader) or as
    /// the leader last listed them (elsewhere), within `ALIVE`.
    pub(crate) fn draining_nodes(&self, me: NodeId) -> Vec<NodeId> {
        let mut nodes: BTreeSet<NodeId> =
            self.drained.lock().iter().filter(|(_, at)| at.elapsed() < ALIVE).map(|(id, _)| *id).collect();
        let heard = self.draining_heard.lock();
        if heard.1.is_some_and(|at| at.elapsed() < ALIVE) {
            nodes.extend(heard.0.iter().copied());
        }
        if self.draining() {
            nodes.insert(me);
        }
        nodes.into_iter().collect()
    }

    pub(crate) fn set_draining_nodes(&self, nodes: Vec<NodeId>) {
        *self.draining_heard.lock() = (nodes, Some(Instant::now()));
    }

    pub(crate) fn set_manager_group(&self, group: crate::manager::status::ManagerGroup, leader: Option<NodeInfo>) {
        *self.manager_group.lock() = Some((group, leader, Instant::now()));
    }

    /// The manager group as last heard, if within `ALIVE`.
    pub(crate) fn manager_group(&self) -> Option<crate::manager::status::ManagerGroup> {
        self.manager_group.lock().as_ref().filter(|(_, _, at)| at.elapsed() < ALIVE).map(|(g, _, _)| g.clone())
    }

    /// Where the manager's leader is, as last heard within `ALIVE`.
    pub(crate) fn manager_leader(&self) -> Option<NodeInfo> {
        self.manager_group.lock().as_ref().filter(|(_, _, at)| at.elapsed() < ALIVE).and_then(|(_, l, _)| l.clone())
    }

    pub(crate) fn set_group_primaries(&self, primaries: Vec<GroupPrimary>) {
        *self.primaries.lock() = (primaries, Some(Instant::now()));
    }

    /// Records each database group's members, as the manager's round saw
    /// them.
    pub(crate) fn set_group_members(&self, members: Vec<(GroupId, Vec<NodeId>)>) {
        *self.members.lock() = members;
    }

    /// The database groups whose configuration, as the manager last saw
    /// it, leaves `node` out: a replica moved off a node is not told by Raft
    /// (its leader stops writing to it), and would otherwise campaign in
    /// vain for ever.
    pub(crate) fn outside(&self, node: NodeId) -> Vec<GroupId> {
        self.members.lock().iter().filter(|(_, m)| !m.contains(&node)).map(|(g, _)| *g).collect()
    }

    /// Each data group's primary as the manager last saw it, if heard
    /// within `ALIVE`.
    pub(crate) fn group_primaries(&self) -> Vec<GroupPrimary> {
        let p = self.primaries.lock();
        if p.1.is_some_and(|at| at.elapsed() < ALIVE) { p.0.clone() } else { Vec::new() }
    }

    pub(crate) fn heard(&self, id: NodeId, info: NodeInfo) {
        self.spares.lock().insert(id, (info, Instant::now()));
    }

    /// A node's load figures, as it reported them with its registration.
    pub(crate) fn reported(&self, id: NodeId, load: Load) {
        self.loads.lock().insert(id, (load, Instant::now()));
    }

    /// Whether a node is being drained, as it reported to the manager's
    /// leader.
    pub(crate) fn reported_draining(&self, id: NodeId, draining: bool) {
        let mut drained = self.drained.lock();
        if draining {
            drained.insert(id, Instant::now());
        } else {
            drained.remove(&id);
        }
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

    /// Every node's load figures heard within `ALIVE` (this node's sampled now).
    pub(crate) fn live_loads(&self, me: NodeId) -> BTreeMap<NodeId, Load> {
        let mut loads: BTreeMap<NodeId, Load> = self
            .loads
            .lock()
            .iter()
            .filter(|(_, (_, at))| at.elapsed() < ALIVE)
            .map(|(id, (load, _))| (*id, *load))
            .collect();
        loads.insert(me, self.own_load());
        loads
    }

    /// Nodes heard from (spares registering with the data group's
    /// primary, every node reporting to the manager's leader), with whether
    /// they were within `ALIVE`.
    pub fn spares(&self) -> Vec<(NodeId, NodeInfo, bool)> {
        let mut spares = self.spares.lock();
        // Forget spares silent for long (a node taken out of the cluster).
        spares.retain(|_, (_, at)| at.elapsed() < Duration::from_secs(600));
        spares.iter().map(|(id, (info, at))| (*id, info.clone(), at.elapsed() < ALIVE)).collect()
    }
}

/// A group as its leader sees it: what the manager's decisions need of
/// it. The data group's primary answers it over RPC (`Request::GroupView`);
/// the manager group's own comes from the manager's leader itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupView {
    /// The leader's epoch (Raft term).
    pub term: u64,
    pub leader: NodeId,
    pub members: Vec<MemberView>,
    pub last_index: u64,
    /// The first index still in the leader's log.
    pub log_start: u64,
    /// The configuration is joint: a change was cut short between its two
    /// steps (its leader moved). Until it is settled, a quorum needs a
    /// majority of both the old and the new voters.
    pub joint: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemberView {
    pub id: NodeId,
    pub info: NodeInfo,
    pub voter: bool,
    /// Answered the leader within `ALIVE` (the leader: always).
    pub answered: bool,
    /// The last index known to be on it.
    pub matched: Option<u64>,
}

impl GroupView {
    /// The group as `raft` sees it, when this node (`me`) leads it.
    /// `quiet_answered`: whether a voter confirmed the group as quiet
    /// lately (a quiet group's secondaries answer no heartbeats).
    pub(crate) fn of_leader<SM: RaftStateMachine<C>>(
        raft: &openraft::Raft<C, SM>,
        me: NodeId,
        quiet_answered: &dyn Fn(NodeId) -> bool,
    ) -> Result<GroupView, String> {
        let m = raft.metrics().borrow_watched().clone();
        if m.state != ServerState::Leader || m.current_leader != Some(me) {
            return Err(format!("node {me} does not lead the group"));
        }
        let membership = m.membership_config.membership();
        let voters: Vec<NodeId> = membership.voter_ids().collect();
        let members = membership
            .nodes()
            .map(|(id, info)| {
                let own = *id == me;
                MemberView {
                    id: *id,
                    info: info.clone(),
                    voter: voters.contains(id),
                    answered: own || answered(&m, id) || quiet_answered(*id),
                    matched: if own { m.last_log_index } else { matched(&m, id) },
                }
            })
            .collect();
        Ok(GroupView {
            term: m.current_term,
            leader: me,
            members,
            last_index: m.last_log_index.unwrap_or(0),
            log_start: m.purged.as_ref().map_or(0, |l| l.index + 1),
            joint: membership.get_joint_config().len() > 1,
        })
    }

    fn member(&self, id: NodeId) -> Option<&MemberView> {
        self.members.iter().find(|m| m.id == id)
    }
}

/// One membership change of a group, carried out by its leader.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Step {
    /// Downshift: a lost voter leaves (N → N-1).
    RemoveVoter(NodeId),
    /// An unfinished replica is dropped.
    RemoveNode(NodeId),
    /// A replica starts being built: a learner gets the snapshot and the log.
    AddLearner(NodeId, NodeInfo),
    /// A learner that caught up votes.
    Promote(NodeId),
    /// A joint configuration becomes the new one alone (the second step of
    /// a change whose leader moved before it).
    Settle,
}

/// Carries out `step` on data group `group`, which `raft` leads here: a
/// quiet group is woken first, and Raft's lease renewed (a leader whose
/// lease has lapsed, as a quiet group's has, refuses membership changes as
/// it refuses writes).
pub(crate) async fn reconfigure_data_group(
    quiet: &crate::raft::quiet::Quiet,
    group: GroupId,
    raft: &Raft,
    step: Step,
) -> Result<(), String> {
    let lease = Duration::from_millis(raft.config().election_timeout_max);
    quiet.ready_to_write(group, raft, lease).await;
    reconfigure(raft, step).await
}

/// Carries out `step` on the group `raft` leads.
pub(crate) async fn reconfigure<SM: RaftStateMachine<C>>(
    raft: &openraft::Raft<C, SM>,
    step: Step,
) -> Result<(), String> {
    let change = |c| async { raft.change_membership(c, false).await.map(|_| ()).map_err(|e| e.to_string()) };
    match step {
        Step::RemoveVoter(n) => change(ChangeMembers::RemoveVoters(BTreeSet::from([n]))).await,
        Step::RemoveNode(n) => change(ChangeMembers::RemoveNodes(BTreeSet::from([n]))).await,
        Step::Promote(n) => change(ChangeMembers::AddVoterIds(BTreeSet::from([n]))).await,
        Step::AddLearner(n, info) => raft.add_learner(n, info, false).await.map(|_| ()).map_err(|e| e.to_string()),
        Step::Settle => change(ChangeMembers::AddVoterIds(BTreeSet::new())).await,
    }
}

/// Which group the manager is repairing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Target {
    /// The manager group itself.
    Manager,
    /// A data group (its primary carries out the steps).
    Data(GroupId),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Manager => f.write_str("manager group"),
            Target::Data(g) => write!(f, "data group {g}"),
        }
    }
}

/// The manager at work on the manager group's leader.
pub(crate) struct Manager {
    pub directory: DirectoryRaft,
    pub machine: DirectoryMachine,
    /// This node's data Raft and role: the way to the data group's primary.
    pub data: Raft,
    pub role: watch::Receiver<Role>,
    /// The other data groups this node hosts.
    pub hosting: Arc<crate::raft::group::Hosting>,
    pub peers: Peers,
    pub me: NodeId,
    pub info: NodeInfo,
    pub roster: Arc<Roster>,
    /// The data group's replica count, until the directory records one.
    pub replicas: usize,
    /// How long a voter may be unreachable before it is replaced.
    pub replace_after: Duration,
    /// Each group's primary as last seen, and since when.
    pub primaries_seen: parking_lot::Mutex<HashMap<GroupId, (NodeId, std::time::Instant)>>,
    /// The replica move under way (`moves.rs`).
    pub moves: crate::manager::moves::Moves,
}

/// How long after moving a primary the manager waits before the next move.
const SETTLE: Duration = Duration::from_secs(2);

/// A primary that changed within this long is not moved to spread
/// primaries: it was just elected, or put there on purpose (a split makes
/// the node running it its partition's primary), and moving it back at
/// once would undo that work.
const STAY: Duration = Duration::from_secs(10);

/// Load figures are recorded in the directory every this many ticks.
const LOAD_TICKS: u64 = 20;

/// The manager group's size for a cluster of `nodes`: 3, or 5 once there
/// are 5 or more (fewer when the cluster is smaller).
pub(crate) fn manager_size(nodes: usize) -> usize {
    if nodes >= 5 { 5 } else { nodes.clamp(1, 3) }
}

impl Manager {
    pub(crate) async fn run(self) {
        let mut down_since: HashMap<(Target, NodeId), Instant> = HashMap::new();
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut ticks = 0u64;
        let mut settled: Option<Instant> = None;
        loop {
            tick.tick().await;
            if GroupView::of_leader(&self.directory, self.me, &|_| false).is_err() {
                // Only the manager's leader decides; a new one starts its clocks afresh.
                down_since.clear();
                continue;
            }
            ticks += 1;
            self.roster.heard(self.me, self.info.clone());
            if let Err(e) = self.keep_directory(ticks).await {
                tracing::debug!("the directory was not updated: {e}");
            }
            let directory = self.machine.directory();
            if let Ok(view) = GroupView::of_leader(&self.directory, self.me, &|_| false) {
                let size = manager_size(directory.nodes.len().max(view.members.len()));
                self.repair(Target::Manager, &view, size, None, &mut down_since).await;
                self.add_reader(Target::Manager, &view, size).await;
            }
            // Every data group, as its primary sees it.
            let mut views: Vec<(GroupId, GroupView)> = Vec::new();
            match self.data_view().await {
                Ok(view) => views.push((DATA_GROUP, view)),
                Err(e) => tracing::debug!("the data group's primary did not answer the manager: {e}"),
            }
            for (&group, _) in directory.streams.iter().filter(|(_, streams)| !streams.is_empty()) {
                match self.group_view(group).await {
                    Ok(view) => views.push((group, view)),
                    Err(e) => tracing::debug!("data group {group}'s primary did not answer the manager: {e}"),
                }
            }
            self.roster.set_group_members(
                views
                    .iter()
                    .filter(|(g, _)| *g != DATA_GROUP)
                    .map(|(g, v)| (*g, v.members.iter().map(|m| m.id).collect()))
                    .collect(),
            );
            self.roster.set_group_primaries(
                views
                    .iter()
                    .filter_map(|(g, v)| {
                        v.members.iter().find(|m| m.id == v.leader).map(|m| (*g, m.id, m.info.clone()))
                    })
                    .collect(),
            );
            // A database's group keeps its replicas on nodes that hold the
            // catalog (the first group's voters, and its readers once they
            // have caught up): its primary serves the database's sessions,
            // which read the catalog there.
            let holders: Option<HashSet<NodeId>> = views.iter().find(|(g, _)| *g == DATA_GROUP).map(|(_, v)| {
                v.members
                    .iter()
                    .filter(|m| m.voter || m.matched.is_some_and(|i| i + CAUGHT_UP >= v.last_index))
                    .map(|m| m.id)
                    .collect()
            });
            let target_of = |group: GroupId| {
                (directory.targets.get(&group))
                    .or(directory.targets.get(&DATA_GROUP))
                    .copied()
                    .unwrap_or(self.replicas)
                    .max(1)
            };
            let moving = self.moves.settle(&views);
            for (group, view) in &views {
                let replicas = target_of(*group);
                let within = if *group == DATA_GROUP { None } else { Some(holders.clone().unwrap_or_default()) };
                self.repair(Target::Data(*group), view, replicas, within.as_ref(), &mut down_since).await;
                if *group == DATA_GROUP {
                    self.add_reader(Target::Data(DATA_GROUP), view, replicas).await;
                }
            }
            // A move takes a moment to show in the views: none until the
            // last one has settled.
            if settled.is_none_or(|t| t.elapsed() >= SETTLE) {
                if self.balance(&views).await {
                    settled = Some(Instant::now());
                } else if !moving && let Some(holders) = &holders {
                    // Primaries are spread: even out the replicas (a
                    // move's steps are repair's, from the next round on).
                    let heard: HashMap<NodeId, bool> =
                        self.roster.spares().into_iter().map(|(id, _, alive)| (id, alive)).collect();
                    let live = |n: NodeId| n == self.me || heard.get(&n).copied().unwrap_or(false);
                    let draining = self.roster.draining_nodes(self.me);
                    let nodes = crate::manager::moves::NodesNow {
                        holders,
                        draining: &draining,
                        live: &live,
                        target: &target_of,
                    };
                    if self.moves.start_next(&views, &nodes).is_some() {
                        settled = Some(Instant::now());
                    }
                }
            }
        }
    }

    /// Data group `group` as its primary sees it: asked of the primary
    /// this node knows of (it hosts every group; a member knows the
    /// primary), else of every node heard from until the primary answers.
    async fn group_view(&self, group: GroupId) -> Result<GroupView, String> {
        let mut candidates: Vec<String> = Vec::new();
        if let Some(raft) = self.hosting.raft_of(group) {
            let quiet = &self.hosting.context.quiet;
            if let Ok(view) = GroupView::of_leader(&raft, self.me, &|n| quiet.answered(group, n)) {
                return Ok(view);
            }
            let m = raft.metrics().borrow_watched().clone();
            let membership = m.membership_config.membership();
            candidates.extend(m.current_leader.and_then(|l| membership.get_node(&l)).map(|i| i.rpc_addr.clone()));
            candidates.extend(membership.nodes().map(|(_, i)| i.rpc_addr.clone()));
        }
        candidates.extend(self.roster.spares().into_iter().filter(|(_, _, alive)| *alive).map(|(_, i, _)| i.rpc_addr));
        candidates.retain(|a| *a != self.info.rpc_addr);
        let mut seen = std::collections::HashSet::new();
        candidates.retain(|a| seen.insert(a.clone()));
        for addr in candidates {
            if let Ok(Reply::GroupView(view)) = self.call(&addr, Request::GroupView(group)).await {
                return Ok(view);
            }
        }
        Err(format!("no node answers as data group {group}'s primary"))
    }

    /// Spreads the data groups' primaries over the nodes (the paper's
    /// Fig. 2): when some node leads at least two groups more than another
    /// node holding an up-to-date replica of one of them, that group's
    /// primary moves there. One move per round, so each is seen through;
    /// returns whether one was asked for.
    async fn balance(&self, views: &[(GroupId, GroupView)]) -> bool {
        let mut map = ClusterMap::default();
        let heard: HashMap<NodeId, bool> = self.roster.spares().into_iter().map(|(id, _, alive)| (id, alive)).collect();
        let now = std::time::Instant::now();
        for (group, view) in views {
            let stays = {
                let mut seen = self.primaries_seen.lock();
                let since = seen.entry(*group).or_insert((view.leader, now));
                if since.0 != view.leader {
                    *since = (view.leader, now);
                }
                now.duration_since(since.1) < STAY
            };
            let mut replicas = Vec::new();
            for m in &view.members {
                if !map.nodes.contains_key(&m.id) {
                    add_node(&mut map, m.id, &m.info, m.id == self.me || heard.get(&m.id).copied().unwrap_or(false));
                }
                // The first group's primary (the cluster's catalog, and
                // the sessions of `tessera`, `postgres` and keyed
                // databases) stays where it is: only the databases' own
                // groups move, as they are small and their sessions few.
                let role = if m.id == view.leader {
                    tessera_cluster::Role::Primary
                } else if m.voter && m.answered && *group != DATA_GROUP && !stays {
                    tessera_cluster::Role::Secondary
                } else {
                    tessera_cluster::Role::Building
                };
                // Within a batch or two of the primary counts as caught up:
                // the move itself waits for the rest.
                let caught_up = m.matched.is_some_and(|i| i + CAUGHT_UP >= view.last_index);
                let applied = if caught_up { view.last_index } else { m.matched.unwrap_or(0) };
                replicas.push(Replica { node: m.id, role, applied });
            }
            let p = PartitionInfo {
                id: *group as u64,
                epoch: view.term,
                target: replicas.len(),
                replicas,
                log_start: view.log_start,
                unavailable: false,
                serves_sessions: self.hosting.serves_sessions.get().is_none_or(|serves| serves(*group)),
                moving: None,
            };
            map.partitions.insert(*group as u64, p);
        }
        let draining = self.roster.draining_nodes(self.me);
        for node in map.nodes.values_mut() {
            node.draining = draining.contains(&node.id);
        }
        let Some(Action::TransferLeadership { partition, from, to }) = balance_primaries(&map).into_iter().next()
        else {
            return false;
        };
        let group = partition as GroupId;
        let Some((_, view)) = views.iter().find(|(g, _)| *g == group) else { return false };
        let Some(leader) = view.members.iter().find(|m| m.id == view.leader) else { return false };
        tracing::info!(group, from, to, "moving data group {group}'s primary from node {from} to node {to}");
        let moved = if leader.id == self.me {
            let hosted = self.hosting.context.hosts.read().get(&group).cloned();
            match hosted {
                Some(hosted) => hosted.hand_over(group, &self.hosting.context.quiet, self.me, to).await,
                None => Err(format!("data group {group} is not hosted here")),
            }
        } else {
            match self.call(&leader.info.rpc_addr, Request::Lead { group, to }).await {
                Ok(Reply::Done(_)) => Ok(()),
                Ok(Reply::Failed(e)) => Err(e),
                Ok(_) => Err("unexpected reply to a move of the primary".into()),
                Err(e) => Err(e),
            }
        };
        if let Err(e) = moved {
            tracing::warn!(group, "moving data group {group}'s primary to node {to} did not work: {e}");
        }
        true
    }

    /// Records in the directory the nodes heard from whose entry is
    /// missing or changed, the data group's replica count when it has
    /// none, and every `LOAD_TICKS` the nodes' load figures.
    async fn keep_directory(&self, ticks: u64) -> Result<(), String> {
        let directory = self.machine.directory();
        let mut commands = Vec::new();
        for (id, info, alive) in self.roster.spares() {
            if alive && directory.nodes.get(&id) != Some(&info) {
                commands.push(DirectoryCommand::Node { id, info });
            }
        }
        if !directory.targets.contains_key(&DATA_GROUP) {
            commands.push(DirectoryCommand::Target { group: DATA_GROUP, replicas: self.replicas.max(1) });
        }
        if ticks.is_multiple_of(LOAD_TICKS) {
            commands.push(DirectoryCommand::Loads(self.roster.live_loads(self.me)));
        }
        if commands.is_empty() {
            return Ok(());
        }
        let entries: Vec<_> = commands.iter().map(|c| c.to_entry(self.me)).collect();
        let mut results = self.directory.client_write_many(entries).await.map_err(|e| e.to_string())?;
        while let Some(r) = futures::StreamExt::next(&mut results).await {
            r.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The data group as its primary sees it (this node, or over RPC).
    async fn data_view(&self) -> Result<GroupView, String> {
        let role = self.role.borrow().clone();
        match role {
            Role::Primary => GroupView::of_leader(&self.data, self.me, &|_| false),
            Role::Secondary { info, .. } => match self.call(&info.rpc_addr, Request::GroupView(DATA_GROUP)).await? {
                Reply::GroupView(view) => Ok(view),
                Reply::Failed(e) => Err(e),
                _ => Err("unexpected reply to a group view".into()),
            },
            Role::Starting | Role::Unavailable(_) => Err("the data group has no primary".into()),
        }
    }

    async fn call(&self, addr: &str, request: Request) -> Result<Reply, String> {
        let reply = self
            .peers
            .client(addr)
            .call(crate::raft::network::encode(&request), Duration::from_secs(10))
            .await
            .map_err(|e| e.to_string())?;
        postcard::from_bytes(&reply).map_err(|e| e.to_string())
    }

    /// Carries out a step on the group: the manager group's here, a data
    /// group's at its primary (`view.leader`).
    async fn step(&self, target: Target, view: &GroupView, step: Step) -> Result<(), String> {
        let group = match target {
            Target::Manager => return reconfigure(&self.directory, step).await,
            Target::Data(group) => group,
        };
        if view.leader == self.me {
            if group == DATA_GROUP {
                return reconfigure(&self.data, step).await;
            }
            return match self.hosting.raft_of(group) {
                Some(raft) => reconfigure_data_group(&self.hosting.context.quiet, group, &raft, step).await,
                None => Err(format!("data group {group} is not hosted here")),
            };
        }
        let leader = view.members.iter().find(|m| m.id == view.leader).ok_or("the group's primary is not a member")?;
        match self.call(&leader.info.rpc_addr, Request::Reconfigure { group, step }).await? {
            Reply::Reconfigured => Ok(()),
            Reply::Failed(e) => Err(e),
            _ => Err("unexpected reply to a reconfiguration".into()),
        }
    }

    /// One round of the manager's decisions for a group.
    async fn repair(
        &self,
        target: Target,
        view: &GroupView,
        replicas: usize,
        within: Option<&HashSet<NodeId>>,
        down_since: &mut HashMap<(Target, NodeId), Instant>,
    ) {
        if view.joint {
            tracing::info!("settling the {target}'s joint configuration");
            if let Err(e) = self.step(target, view, Step::Settle).await {
                tracing::warn!("the {target}'s joint configuration was not settled: {e}");
            }
            return;
        }
        let readers = matches!(target, Target::Manager | Target::Data(DATA_GROUP));
        let mut map = self.map(view, replicas, within, readers);
        if let Target::Data(group) = target
            && let Some(p) = map.partitions.get_mut(&0)
        {
            p.moving = self.moves.of(group);
        }
        let voters: Vec<NodeId> = view.members.iter().filter(|m| m.voter).map(|m| m.id).collect();
        for v in &voters {
            if map.is_live(*v) {
                down_since.remove(&(target, *v));
            } else {
                down_since.entry((target, *v)).or_insert_with(Instant::now);
            }
        }
        down_since.retain(|(t, n), _| *t != target || voters.contains(n));
        let overdue: Vec<NodeId> = down_since
            .iter()
            .filter(|((t, _), since)| *t == target && since.elapsed() >= self.replace_after)
            .map(|((_, n), _)| *n)
            .collect();
        for action in plan_repair(&map, &overdue) {
            if let Err(e) = self.carry_out(target, view, &action).await {
                tracing::warn!(?action, "the partition manager's step on the {target} did not complete: {e}");
                break;
            }
        }
    }

    /// The cluster map for one group: its members with their liveness
    /// (a voter: it answers the leader; a replica being built may be busy
    /// installing a snapshot, so reporting to the manager counts too) and
    /// progress, and the other nodes heard from (those `within`, when
    /// given), as candidates. `readers`: the group's learners read it
    /// (the first group's, the catalog) while it has its voters: no build
    /// to carry on or drop, but nodes to build on first when a voter is
    /// lost (they have its data already).
    fn map(&self, view: &GroupView, target: usize, within: Option<&HashSet<NodeId>>, readers: bool) -> ClusterMap {
        let mut map = ClusterMap::default();
        let mut replicas = Vec::new();
        let heard: HashMap<NodeId, (NodeInfo, bool)> =
            self.roster.spares().into_iter().map(|(id, info, alive)| (id, (info, alive))).collect();
        let voters = view.members.iter().filter(|m| m.voter).count();
        for m in &view.members {
            let reports = heard.get(&m.id).is_some_and(|(_, alive)| *alive);
            let live = m.answered || (!m.voter && reports);
            add_node(&mut map, m.id, &m.info, live);
            self.note_load(&mut map, m.id);
            if readers && !m.voter && live && voters >= target {
                continue;
            }
            let role = if m.id == view.leader {
                tessera_cluster::Role::Primary
            } else if m.voter {
                tessera_cluster::Role::Secondary
            } else {
                tessera_cluster::Role::Building
            };
            replicas.push(Replica { node: m.id, role, applied: m.matched.unwrap_or(0) });
        }
        for (id, (info, alive)) in &heard {
            if !map.nodes.contains_key(id) && within.is_none_or(|w| w.contains(id)) {
                add_node(&mut map, *id, info, *alive);
                self.note_load(&mut map, *id);
            }
        }
        map.partitions.insert(
            0,
            PartitionInfo {
                id: 0,
                epoch: view.term,
                target,
                replicas,
                log_start: view.log_start,
                unavailable: false,
                serves_sessions: true,
                moving: None,
            },
        );
        map
    }

    /// Makes one more live node outside a group's configuration a *reader*
    /// of it (a learner that never votes unless a voter is lost), while the
    /// group has its voters and no change under way. Of the first group: it
    /// then holds the catalog, so databases' replicas can be built on it
    /// and its sessions served there. Of both the first and the manager
    /// group: a lost voter is replaced at once by promoting a reader, which
    /// has the data already. One per round.
    async fn add_reader(&self, group: Target, view: &GroupView, target: usize) {
        let voters = view.members.iter().filter(|m| m.voter).count();
        if view.joint || voters < target {
            return;
        }
        let outside = self.roster.spares().into_iter().find(|(id, _, alive)| *alive && view.member(*id).is_none());
        let Some((node, info, _)) = outside else { return };
        tracing::info!(node, "node {node} becomes a reader of the {group}");
        if let Err(e) = self.step(group, view, Step::AddLearner(node, info)).await {
            tracing::warn!(node, "node {node} did not become a reader of the {group}: {e}");
        }
    }

    /// Puts a node's latest load figures on the map (placement prefers
    /// the less busy of otherwise equal nodes).
    fn note_load(&self, map: &mut ClusterMap, id: NodeId) {
        if let Some(n) = map.nodes.get_mut(&id) {
            n.cpu_percent = self.roster.load_of(id, self.me).map(|l| l.cpu_percent);
        }
    }

    async fn carry_out(&self, target: Target, view: &GroupView, action: &Action) -> Result<(), String> {
        match action {
            Action::Downshift { node, .. } => {
                if view.member(*node).is_some_and(|m| m.answered) {
                    tracing::info!(node, "node {node}'s replica leaves the {target} (moved to another node)");
                } else {
                    tracing::warn!(
                        node,
                        "downshifting the {target}: node {node} has been unreachable too long and leaves it"
                    );
                }
                self.step(target, view, Step::RemoveVoter(*node)).await
            }
            Action::Drop { node, .. } => {
                tracing::warn!(node, "dropping node {node}'s unfinished replica of the {target}");
                self.step(target, view, Step::RemoveNode(*node)).await
            }
            Action::Build { node, .. } => match view.member(*node) {
                None => {
                    let info = self
                        .roster
                        .spares()
                        .into_iter()
                        .find(|(id, _, _)| id == node)
                        .map(|(_, info, _)| info)
                        .or_else(|| self.machine.directory().nodes.get(node).cloned())
                        .ok_or_else(|| format!("node {node} is not known"))?;
                    tracing::info!(node, addr = %info.rpc_addr, "building a replica of the {target} on node {node}");
                    self.step(target, view, Step::AddLearner(*node, info)).await
                }
                Some(m) if m.matched.is_some_and(|i| i + CAUGHT_UP >= view.last_index) => {
                    self.step(target, view, Step::Promote(*node)).await?;
                    tracing::info!(node, "node {node} now holds a replica of the {target} and votes");
                    Ok(())
                }
                // Still catching up.
                Some(_) => Ok(()),
            },
            // Elections are Raft's; the others do not arise from repair.
            _ => Ok(()),
        }
    }
}

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
