//! The partition manager at work on the manager group's leader: a
//! `Manager` round twice a second (see the module's essay, `manager`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use openraft::async_runtime::WatchReceiver;
use tokio::sync::watch;

use super::directory::{DirectoryCommand, DirectoryMachine, DirectoryRaft};
use super::messages::{ManagerMessage, ManagerReply};
use super::moves::{Moves, NodesNow};
use super::placement::manager_size;
use super::reconfigure::{Step, reconfigure, reconfigure_data_group};
use super::roster::Roster;
use super::view::{CAUGHT_UP, GroupView};
use crate::error::{ReplicationError, Result};
use crate::raft::groups::RaftGroups;
use crate::raft::role::Role;
use crate::raft::state_machine::Raft;
use crate::types::{GroupId, NodeId, NodeInfo, SYSTEM_GROUP};
use crate::wire::Peers;
use crate::wire::service::{self, Refusal};

/// How often the manager's leader looks at the map, and nodes register
/// and report.
pub(crate) const TICK: Duration = Duration::from_millis(500);

/// How long the manager waits for another node's answer.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Which group the manager is repairing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Target {
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
    /// This node's system group Raft and role: the way to the system
    /// group's primary.
    pub system: Raft,
    pub system_role: watch::Receiver<Role>,
    /// The data groups this node hosts.
    pub groups: Arc<RaftGroups>,
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
    /// The replica move under way (`moves`).
    pub moves: Moves,
    /// Whether a group's primary serves SQL sessions (set by the server;
    /// unset, every group's does): balancing moves the others first.
    pub serves_sessions: Arc<OnceLock<GroupClassifier>>,
}

/// Tells something of a group by its id (see `Manager::serves_sessions`).
pub type GroupClassifier = Arc<dyn Fn(GroupId) -> bool + Send + Sync>;

/// How long after moving a primary the manager waits before the next move.
const SETTLE: Duration = Duration::from_secs(2);

/// Load figures are recorded in the directory every this many ticks.
const LOAD_TICKS: u64 = 20;

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
            match self.system_view().await {
                Ok(view) => views.push((SYSTEM_GROUP, view)),
                Err(e) => tracing::debug!("the system group's primary did not answer the manager: {e}"),
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
                    .filter(|(g, _)| *g != SYSTEM_GROUP)
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
            // catalog (the system group's voters, and its readers once they
            // have caught up): its primary serves the database's sessions,
            // which read the catalog there.
            let holders: Option<HashSet<NodeId>> = views.iter().find(|(g, _)| *g == SYSTEM_GROUP).map(|(_, v)| {
                v.members
                    .iter()
                    .filter(|m| m.voter || m.matched.is_some_and(|i| i + CAUGHT_UP >= v.last_index))
                    .map(|m| m.id)
                    .collect()
            });
            let target_of = |group: GroupId| {
                (directory.targets.get(&group))
                    .or(directory.targets.get(&SYSTEM_GROUP))
                    .copied()
                    .unwrap_or(self.replicas)
                    .max(1)
            };
            let moving = self.moves.settle(&views);
            for (group, view) in &views {
                let replicas = target_of(*group);
                let within = if *group == SYSTEM_GROUP { None } else { Some(holders.clone().unwrap_or_default()) };
                self.repair(Target::Data(*group), view, replicas, within.as_ref(), &mut down_since).await;
                if *group == SYSTEM_GROUP {
                    self.add_reader(Target::Data(SYSTEM_GROUP), view, replicas).await;
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
                    let nodes = NodesNow { holders, draining: &draining, live: &live, target: &target_of };
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
    async fn group_view(&self, group: GroupId) -> Result<GroupView> {
        let mut candidates: Vec<String> = Vec::new();
        if let Some(raft) = self.groups.database_group(group).map(|g| g.raft.clone()) {
            let quiet = &self.groups.quiet;
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
            if let Ok(ManagerReply::GroupView(view)) = self.call(&addr, ManagerMessage::GroupView(group)).await {
                return Ok(view);
            }
        }
        Err(ReplicationError::Refused(format!("no node answers as data group {group}'s primary")))
    }

    /// Records in the directory the nodes heard from whose entry is
    /// missing or changed, the system group's replica count when it has
    /// none, and every `LOAD_TICKS` the nodes' load figures.
    async fn keep_directory(&self, ticks: u64) -> Result<()> {
        let directory = self.machine.directory();
        let mut commands = Vec::new();
        for (id, info, alive) in self.roster.spares() {
            if alive && directory.nodes.get(&id) != Some(&info) {
                commands.push(DirectoryCommand::Node { id, info });
            }
        }
        if !directory.targets.contains_key(&SYSTEM_GROUP) {
            commands.push(DirectoryCommand::Target { group: SYSTEM_GROUP, replicas: self.replicas.max(1) });
        }
        if ticks.is_multiple_of(LOAD_TICKS) {
            commands.push(DirectoryCommand::Loads(self.roster.live_loads(self.me)));
        }
        if commands.is_empty() {
            return Ok(());
        }
        let entries: Vec<_> = commands.iter().map(|c| c.to_entry(self.me)).collect();
        let raft = |e: &dyn std::fmt::Display| ReplicationError::Raft(e.to_string());
        let mut results = self.directory.client_write_many(entries).await.map_err(|e| raft(&e))?;
        while let Some(r) = futures::StreamExt::next(&mut results).await {
            r.map_err(|e| raft(&e))?.map_err(|e| raft(&e))?;
        }
        Ok(())
    }

    /// The system group as its primary sees it (this node, or over RPC).
    async fn system_view(&self) -> Result<GroupView> {
        let role = self.system_role.borrow().clone();
        match role {
            Role::Primary => GroupView::of_leader(&self.system, self.me, &|_| false),
            Role::Secondary { info, .. } => {
                match self.call(&info.rpc_addr, ManagerMessage::GroupView(SYSTEM_GROUP)).await? {
                    ManagerReply::GroupView(view) => Ok(view),
                    _ => Err(ReplicationError::Codec("unexpected reply to a group view".into())),
                }
            }
            Role::Starting | Role::Unavailable(_) => {
                Err(ReplicationError::Refused("the system group has no primary".into()))
            }
        }
    }

    /// Asks the node at `addr`; its refusal is an error.
    pub(super) async fn call(&self, addr: &str, request: ManagerMessage) -> Result<ManagerReply> {
        match service::call(&self.peers.client(addr), &request, CALL_TIMEOUT).await? {
            Ok(reply) => Ok(reply),
            Err(Refusal(e)) => Err(ReplicationError::Refused(e)),
        }
    }

    /// Carries out a step on the group: the manager group's here, a data
    /// group's at its primary (`view.leader`).
    pub(super) async fn step(&self, target: Target, view: &GroupView, step: Step) -> Result<()> {
        let group = match target {
            Target::Manager => return reconfigure(&self.directory, step).await,
            Target::Data(group) => group,
        };
        if view.leader == self.me {
            if group == SYSTEM_GROUP {
                return reconfigure(&self.system, step).await;
            }
            return match self.groups.database_group(group) {
                Some(g) => reconfigure_data_group(&self.groups.quiet, group, &g.raft, step).await,
                None => Err(ReplicationError::Refused(format!("data group {group} is not hosted here"))),
            };
        }
        let leader = view
            .members
            .iter()
            .find(|m| m.id == view.leader)
            .ok_or_else(|| ReplicationError::Internal("the group's primary is not a member".into()))?;
        match self.call(&leader.info.rpc_addr, ManagerMessage::Reconfigure { group, step }).await? {
            ManagerReply::Reconfigured => Ok(()),
            _ => Err(ReplicationError::Codec("unexpected reply to a reconfiguration".into())),
        }
    }
}
