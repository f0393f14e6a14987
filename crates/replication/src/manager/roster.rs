//! What the partition manager hears from the nodes: the [`Roster`].

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::load::LoadMeter;
use super::view::ManagerGroup;
use crate::error::{ReplicationError, Result};
use crate::raft::metrics::ALIVE;
use crate::types::{GroupId, Load, NodeId, NodeInfo};

/// What the primary has heard from the other nodes: the spares (node →
/// where it is, when), and every node's load figures, with this node's
/// own meter.
pub struct Roster {
    spares: Mutex<BTreeMap<NodeId, (NodeInfo, Instant)>>,
    loads: Mutex<BTreeMap<NodeId, (Load, Instant)>>,
    meter: LoadMeter,
    /// The manager group as the manager's leader last told this node, and
    /// where that leader is.
    manager_group: Mutex<Option<(ManagerGroup, Option<NodeInfo>, Instant)>>,
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
    pub(crate) async fn mark_draining(&self) -> Result<()> {
        let since = *self.draining.lock().get_or_insert_with(Instant::now);
        self.leader_hears(since).await
    }

    /// Reports now and waits until the manager's leader has answered a
    /// report sent at or after `since` (up to 5 s).
    pub(crate) async fn leader_hears(&self, since: Instant) -> Result<()> {
        self.report_now.notify_one();
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.leader_heard.lock().is_none_or(|at| at < since) {
            if Instant::now() > deadline {
                return Err(ReplicationError::Timeout(
                    "the manager's leader has not heard that this node is being drained".into(),
                ));
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

    pub(crate) fn set_manager_group(&self, group: ManagerGroup, leader: Option<NodeInfo>) {
        *self.manager_group.lock() = Some((group, leader, Instant::now()));
    }

    /// The manager group as last heard, if within `ALIVE`.
    pub(crate) fn manager_group(&self) -> Option<ManagerGroup> {
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

    /// Nodes heard from (spares registering with the system group's
    /// primary, every node reporting to the manager's leader), with whether
    /// they were within `ALIVE`.
    pub fn spares(&self) -> Vec<(NodeId, NodeInfo, bool)> {
        let mut spares = self.spares.lock();
        // Forget spares silent for long (a node taken out of the cluster).
        spares.retain(|_, (_, at)| at.elapsed() < Duration::from_secs(600));
        spares.iter().map(|(id, (info, at))| (*id, info.clone(), at.elapsed() < ALIVE)).collect()
    }
}
