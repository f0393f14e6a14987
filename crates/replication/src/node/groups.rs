//! [`Groups`]: the node's data groups as the layers above use them. The
//! SQL layer creates a database's group through it (`create`, then
//! `wait_serving` before anything is written to the group's streams), and
//! the gateway asks it where each group's primary is (`role_of` on a
//! node hosting the group, `primary_of` elsewhere: the manager's word) and
//! how fresh this node's replica is (`freshness_of`).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;
use tessera_engine::EngineError;
use tokio::sync::watch;

use super::service::{NodeMessage, SessionCounter};
use crate::error::{ReplicationError, Result};
use crate::manager::admin::{Administration, call};
use crate::manager::leader::GroupClassifier;
use crate::manager::messages::{ManagerMessage, ManagerReply};
use crate::manager::roster::Roster;
use crate::manager::view::{GroupReplica, GroupView, replicas_in, replicas_seen};
use crate::parts::client::{Locate, PartCalls, RemoteTxnIds, change_schema};
use tessera_engine::remote::PartSchema;

use crate::parts::messages::Begin;
use crate::parts::server::PartServer;
use crate::raft::commit_log::MoveGate;
use crate::raft::freshness::Freshness;
use crate::raft::groups::RaftGroups;
use crate::raft::role::Role;
use crate::types::{GroupId, NodeId, NodeInfo, SYSTEM_GROUP};
use crate::wire::Refusal;

/// A cheap handle on the node's data groups.
#[derive(Clone)]
pub struct Groups {
    pub(crate) groups: Arc<RaftGroups>,
    /// The directory's changes (a group made or removed).
    pub(crate) admin: Administration,
    pub(crate) roster: Arc<Roster>,
    pub(crate) me: NodeId,
    /// The replica count a group gets when the directory names none.
    pub(crate) default_replicas: usize,
    /// Other nodes' transactions on the partitions this node leads.
    pub(crate) parts: Arc<PartServer>,
    /// Numbers this node's transactions on partitions other nodes lead.
    pub(crate) remote_ids: Arc<RemoteTxnIds>,
    /// The SQL sessions this node serves in each group it leads.
    pub(crate) sessions: SessionCounter,
    /// Whether a group's primary serves SQL sessions (for the manager).
    pub(crate) serves_sessions: Arc<OnceLock<GroupClassifier>>,
}

impl Groups {
    /// The replication layer's runtime (the SQL layer's sessions run on runtimes of their own).
    pub fn runtime(&self) -> tokio::runtime::Handle {
        self.groups.runtime.clone()
    }

    /// How many nodes have joined the cluster (as the directory lists them).
    pub fn node_count(&self) -> usize {
        self.admin.machine.directory().nodes.len()
    }

    /// The replica count of the system group, the default for a new one.
    pub fn default_replicas(&self) -> usize {
        self.admin.machine.directory().targets.get(&SYSTEM_GROUP).copied().unwrap_or(self.default_replicas).max(1)
    }

    /// The replica count group `id` keeps as it was made (0: the system
    /// group's, following it when it changes).
    pub fn replicas_target(&self, id: GroupId) -> usize {
        self.admin.machine.directory().targets.get(&id).copied().unwrap_or(0)
    }

    /// Creates data group `id` over `streams`, keeping `replicas` replicas
    /// (0: the system group's count, following it when it changes):
    /// hosted and formed here (this node its first voter), then recorded in
    /// the manager's directory, after which every node hosts it and the
    /// manager builds its other replicas.
    pub async fn create(&self, id: GroupId, streams: Vec<u32>, replicas: usize) -> Result<()> {
        if self.groups.is_hosted(id) {
            return Err(ReplicationError::Refused(format!("group {id} is already hosted here")));
        }
        self.groups.host(id, &streams).await?;
        let raft = self
            .groups
            .database_group(id)
            .ok_or_else(|| ReplicationError::Internal(format!("group {id} vanished")))?
            .raft
            .clone();
        let me = BTreeMap::from([(self.me, self.groups.settings.info.clone())]);
        raft.initialize(me).await.map_err(|e| ReplicationError::Raft(e.to_string()))?;
        self.admin.create_group(id, streams, replicas).await.map(|_| ())
    }

    /// Adds `stream` to data group `id`, hosted here, before anything is
    /// written to it (a keyed database's partition made by a split on the
    /// group's primary). The other replicas take it up from the group's
    /// log.
    pub fn adopt(&self, id: GroupId, stream: u32) -> Result<()> {
        self.groups.adopt(id, stream)
    }

    /// Removes data group `id` (its database was dropped): recorded in the
    /// manager's directory, then removed here at once; every other node
    /// removes its replica when it next hears from the manager (twice a
    /// second), a node that is away when it returns.
    pub async fn remove(&self, id: GroupId) -> Result<()> {
        self.admin.drop_group(id).await?;
        self.groups.forget(id).await
    }

    /// Tells the partition manager which groups' primaries serve SQL
    /// sessions (a database's home: moving its primary ends them), so
    /// that balancing moves the others' first (set once, by the server).
    pub fn classify_groups_with(&self, serves_sessions: GroupClassifier) {
        let _ = self.serves_sessions.set(serves_sessions);
    }

    /// How this node counts the SQL sessions it serves as a group's
    /// primary (set once, by the server).
    pub fn count_sessions_with(&self, count: Arc<dyn Fn(GroupId) -> usize + Send + Sync>) {
        let _ = self.sessions.set(count);
    }

    /// How many SQL sessions group `id`'s primary serves: counted here
    /// when this node leads it, asked of the primary otherwise; none while
    /// the group has no primary (a node that stops leading a group ends
    /// its sessions), so that a database that lost its quorum for good
    /// can still be dropped.
    pub async fn sessions_on(&self, id: GroupId) -> Result<usize> {
        let addr = match self.role_of(id).map(|r| r.borrow().clone()) {
            Some(Role::Primary) => return Ok(self.sessions.get().map_or(0, |count| count(id))),
            Some(Role::Secondary { info, .. }) => info.rpc_addr,
            Some(Role::Unavailable(_)) => return Ok(0),
            Some(Role::Starting) | None => match self.primary_of(id) {
                Some((_, info)) => info.rpc_addr,
                None => return Ok(0),
            },
        };
        match call(&self.groups.peers, &addr, &NodeMessage::Sessions(id)).await? {
            Ok(n) => Ok(n),
            Err(Refusal(e)) => Err(ReplicationError::Refused(e)),
        }
    }

    /// Waits (up to `within`) until this node serves as group `id`'s
    /// primary with at least `voters` voters, so that what is written to
    /// the group from now on is on that many nodes when acknowledged.
    pub async fn wait_serving(&self, id: GroupId, voters: usize, within: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + within;
        let raft = self
            .groups
            .database_group(id)
            .ok_or_else(|| ReplicationError::Refused(format!("group {id} is not hosted here")))?
            .raft
            .clone();
        loop {
            let serving = self.role_of(id).is_some_and(|r| *r.borrow() == Role::Primary);
            let m = raft.metrics().borrow_watched().clone();
            let have = m.membership_config.membership().voter_ids().count();
            if serving && have >= voters {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ReplicationError::Timeout(format!(
                    "the new group {id} has {have} of the {voters} voters it needs{}; not enough nodes took a replica in time",
                    if serving { "" } else { " and no primary here" }
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Hands group `id`'s primary (here) to the voter leading the fewest
    /// groups, when this node leads at least two more: what the manager's
    /// balancing would do a moment later, done before the group's first
    /// sessions arrive. Returns the node that leads it afterwards.
    pub async fn place(&self, id: GroupId) -> Result<NodeId> {
        let raft = self
            .groups
            .database_group(id)
            .ok_or_else(|| ReplicationError::Refused(format!("group {id} is not hosted here")))?
            .raft
            .clone();
        // Not while the manager is changing the group's replicas: a move
        // between the two steps of a change leaves it joint.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let m = loop {
            let m = raft.metrics().borrow_watched().clone();
            let membership = m.membership_config.membership();
            if membership.get_joint_config().len() == 1 && membership.learner_ids().next().is_none() {
                break m;
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(self.me);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        if m.current_leader != Some(self.me) {
            return m.current_leader.ok_or_else(|| ReplicationError::Refused(format!("group {id} has no primary")));
        }
        let mut leading: BTreeMap<NodeId, usize> =
            m.membership_config.membership().voter_ids().map(|v| (v, 0)).collect();
        for r in self.groups.hosts().read().values().map(|g| g.raft.clone()).collect::<Vec<_>>() {
            if let Some(l) = r.metrics().borrow_watched().current_leader
                && let Some(n) = leading.get_mut(&l)
            {
                *n += 1;
            }
        }
        let mine = leading.get(&self.me).copied().unwrap_or(0);
        // A drained node takes no primary (it leads none: it would look
        // like the least busy).
        let draining = self.roster.draining_nodes(self.me);
        let Some((&to, &fewest)) =
            (leading.iter()).filter(|(n, _)| **n != self.me && !draining.contains(n)).min_by_key(|(n, c)| (**c, **n))
        else {
            return Ok(self.me);
        };
        if fewest + 2 > mine {
            return Ok(self.me);
        }
        self.groups.hand_over(id, to).await?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let leader = raft.metrics().borrow_watched().current_leader;
            if leader == Some(to) || tokio::time::Instant::now() >= deadline {
                return Ok(leader.unwrap_or(self.me));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The data groups besides the system group that the manager's directory
    /// lists, as this node knows it (removed ones are not).
    pub fn listed(&self) -> Vec<GroupId> {
        let directory = self.admin.machine.directory();
        directory.streams.iter().filter(|(g, s)| **g != SYSTEM_GROUP && !s.is_empty()).map(|(g, _)| *g).collect()
    }

    /// Whether `stream` is replicated by the system group (no other claimed it).
    pub fn in_system_group(&self, stream: u32) -> bool {
        self.groups.in_system_group(stream)
    }

    /// Whether this node leads data group `id` with a lease at this moment
    /// (the rule its role watch applies every 25 ms, applied now): a
    /// statement on the primary checks it, so that none reads on a lease
    /// that has just lapsed.
    pub fn holds_lease(&self, id: GroupId) -> bool {
        self.groups.holds_lease(id)
    }

    /// Whether this node commits for group `id` now: it leads with a lease
    /// and serves (a hand-over stops serving just before the role moves).
    pub fn commits_for(&self, id: GroupId) -> bool {
        let serving = self.groups.get(id).is_some_and(|g| g.proposals.is_serving());
        serving && self.holds_lease(id)
    }

    /// Where data group `id`'s primary is, for work on one of its
    /// partitions: None here, when this node leads it with a lease.
    /// Refused while the group has no primary this node knows.
    pub fn partition_primary(&self, id: GroupId) -> Result<Option<(NodeId, NodeInfo)>> {
        let refused = |why: String| Err(ReplicationError::Refused(why));
        let role = self.role_of(id).map(|r| r.borrow().clone());
        let primary = match role {
            Some(Role::Primary) if self.holds_lease(id) => return Ok(None),
            Some(Role::Primary) => {
                return refused(format!("this node's lease as the primary of partition group {id} has lapsed"));
            }
            Some(Role::Secondary { primary, info }) => (primary, info),
            Some(Role::Unavailable(why)) => return refused(format!("partition group {id} has no primary: {why}")),
            Some(Role::Starting) | None => match self.primary_of(id) {
                Some(primary) => primary,
                None => return refused(format!("the primary of partition group {id} is not known on this node yet")),
            },
        };
        if primary.0 == self.me {
            return refused(format!("this node is becoming the primary of partition group {id}"));
        }
        Ok(Some(primary))
    }

    /// Where a transaction works on partition `stream` of data group `id`:
    /// None here, when this node leads the group with a lease; otherwise a
    /// transaction on the group's primary, begun with its first call
    /// (`begin`). Unavailable while the group has no primary this node knows.
    pub fn begin_remote(
        &self,
        id: GroupId,
        stream: u32,
        begin: Begin,
    ) -> std::result::Result<Option<PartCalls>, EngineError> {
        let primary = self.partition_primary(id).map_err(|e| EngineError::Unavailable(e.message()))?;
        let Some((_, info)) = primary else { return Ok(None) };
        let txn = self.remote_ids.next(self.me);
        let peers = self.groups.peers.clone();
        let groups = self.clone();
        let locate: Locate = Arc::new(move || Ok(groups.partition_primary(id)?.map(|(_, info)| info.rpc_addr)));
        Ok(Some(PartCalls::new((peers, locate), info.rpc_addr, id, stream, txn, begin)))
    }

    /// Makes a schema change on partition `stream` of data group `id` at
    /// its primary; false when this node leads the group (make it here).
    pub async fn change_schema(
        &self,
        id: GroupId,
        stream: u32,
        change: PartSchema,
    ) -> std::result::Result<bool, EngineError> {
        let primary = self.partition_primary(id).map_err(|e| EngineError::Unavailable(e.message()))?;
        let Some((_, info)) = primary else { return Ok(false) };
        change_schema(&self.groups.peers, &info.rpc_addr, id, stream, change).await?;
        Ok(true)
    }

    /// The group replicating `stream` (None: the system group, or no group
    /// this node knows).
    pub fn group_of_stream(&self, stream: u32) -> Option<GroupId> {
        // The groups hosted here know their streams first (a split's new
        // stream, a group just made); the directory knows the others.
        let hosted = self.groups.group_of_stream(stream);
        if hosted.is_some() {
            return hosted;
        }
        let directory = self.admin.machine.directory();
        directory.streams.iter().find(|(g, s)| **g != SYSTEM_GROUP && s.contains(&stream)).map(|(g, _)| *g)
    }

    /// How many other nodes' transactions are open on partitions this node leads.
    pub fn remote_transactions_here(&self) -> usize {
        self.parts.open_count()
    }

    /// This node's role in data group `id`, if it hosts the group.
    pub fn role_of(&self, id: GroupId) -> Option<watch::Receiver<Role>> {
        self.groups.role_of(id)
    }

    /// How sessions follow a planned move of group `id`'s primary role
    /// from this node, if it hosts the group.
    pub fn move_gate_of(&self, id: GroupId) -> Option<Arc<MoveGate>> {
        self.groups.get(id).map(|g| g.proposals.gate.clone())
    }

    /// [`Self::move_gate_of`] the system group (the cluster's catalog, and
    /// the databases without a group of their own).
    pub fn system_move_gate(&self) -> Option<Arc<MoveGate>> {
        self.move_gate_of(SYSTEM_GROUP)
    }

    /// How fresh this node's replica of group `id` is, if it hosts the group.
    pub fn freshness_of(&self, id: GroupId) -> Option<Arc<Freshness>> {
        self.groups.get(id).map(|g| g.freshness.clone())
    }

    /// Group `id`'s primary as the manager last saw it: for a node that
    /// holds no replica of the group, and so does not hear its primary.
    pub fn primary_of(&self, id: GroupId) -> Option<(NodeId, NodeInfo)> {
        self.roster.group_primaries().into_iter().find(|(g, _, _)| *g == id).map(|(_, n, info)| (n, info))
    }

    /// Group `id`'s replicas as its primary sees them, asked of it: for a
    /// node that is not in the group (a database keeping fewer replicas
    /// than the cluster has nodes), which knows the primary from the
    /// manager.
    /// (None for the system group, as from [`Self::replicas_of`]: its
    /// replicas are the nodes' roles.)
    pub async fn replicas_from_primary(&self, id: GroupId) -> Option<Vec<GroupReplica>> {
        if id == SYSTEM_GROUP {
            return None;
        }
        let (_, info) = self.primary_of(id)?;
        match call(&self.groups.peers, &info.rpc_addr, &ManagerMessage::GroupView(id)).await {
            Ok(Ok(ManagerReply::GroupView(view))) => Some(replicas_seen(&view)),
            _ => None,
        }
    }

    /// Whether this node leads group `id` (is its primary's node).
    pub fn leads(&self, id: GroupId) -> bool {
        let group = self.groups.database_group(id);
        group.is_some_and(|g| GroupView::of_leader(&g.raft, self.me, &|_| false).is_ok())
    }

    /// Group `id`'s replicas as this node knows them: every detail on its
    /// primary; the configuration and the primary elsewhere (as this node
    /// last heard it: a node removed from the group, by a move say, is not
    /// told, so ask the primary where it matters); None where the group is
    /// not hosted or this node is not in it.
    pub fn replicas_of(&self, id: GroupId) -> Option<Vec<GroupReplica>> {
        let group = self.groups.database_group(id)?;
        replicas_in(&group.raft, self.me, &|n| self.groups.quiet.answered(id, n))
    }
}
