//! [`Groups`]: the node's data groups as the layers above use them. The
//! SQL layer creates a database's group through it (`create`, then
//! `wait_serving` before anything is written to the group's streams), and
//! the gateway asks it where each group's primary is (`role_of` on a
//! node hosting the group, `primary_of` elsewhere: the manager's word) and
//! how fresh this node's replica is (`freshness_of`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;
use tokio::sync::watch;

use crate::error::{ReplicationError, Result};
use crate::manager::directory::{DirectoryMachine, DirectoryRaft};
use crate::manager::leader::{GroupView, Roster};
use crate::node::Role;
use crate::raft::group::Hosting;
use crate::types::{DATA_GROUP, GroupId, NodeId, NodeInfo};

/// A cheap handle on the node's data groups.
#[derive(Clone)]
pub struct Groups {
    pub(crate) hosting: Arc<Hosting>,
    pub(crate) directory: DirectoryRaft,
    pub(crate) machine: DirectoryMachine,
    pub(crate) roster: Arc<Roster>,
    pub(crate) me: NodeId,
    /// The first group's role and freshness (it is not in `hosting.more`).
    pub(crate) first_role: watch::Receiver<Role>,
    pub(crate) first_freshness: Arc<crate::raft::freshness::Freshness>,
    /// The replica count a group gets when the directory names none.
    pub(crate) default_replicas: usize,
}

/// One replica of a group, as this node knows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GroupReplica {
    pub node: NodeId,
    /// `primary`, `secondary`, `building` (a learner being built) or
    /// `unreachable` (a voter that did not answer the primary lately).
    pub role: String,
    pub epoch: u64,
    /// Entries it lacks compared with the primary's log (known on the primary).
    pub behind: Option<u64>,
}

impl Groups {
    /// The replication layer's runtime (the SQL layer's sessions run on runtimes of their own).
    pub fn runtime(&self) -> tokio::runtime::Handle {
        self.hosting.context.runtime.clone()
    }

    /// How many nodes have joined the cluster (as the directory lists them).
    pub fn node_count(&self) -> usize {
        self.machine.directory().nodes.len()
    }

    /// The replica count of the first group, the default for a new one.
    pub fn default_replicas(&self) -> usize {
        self.machine.directory().targets.get(&DATA_GROUP).copied().unwrap_or(self.default_replicas).max(1)
    }

    /// The replica count group `id` keeps as it was made (0: the first
    /// group's, following it when it changes).
    pub fn replicas_target(&self, id: GroupId) -> usize {
        self.machine.directory().targets.get(&id).copied().unwrap_or(0)
    }

    /// Creates data group `id` over `streams`, keeping `replicas` replicas
    /// (0: the first group's count, following it when it changes):
    /// hosted and formed here (this node its first voter), then recorded in
    /// the manager's directory, after which every node hosts it and the
    /// manager builds its other replicas.
    pub async fn create(&self, id: GroupId, streams: Vec<u32>, replicas: usize) -> Result<()> {
        if self.hosting.is_hosted(id) {
            return Err(ReplicationError::Refused(format!("group {id} is already hosted here")));
        }
        self.hosting.host(id, &streams).await?;
        let raft =
            self.hosting.raft_of(id).ok_or_else(|| ReplicationError::Internal(format!("group {id} vanished")))?;
        let me = BTreeMap::from([(self.me, self.hosting.context.config.info.clone())]);
        raft.initialize(me).await.map_err(|e| ReplicationError::Raft(e.to_string()))?;
        let peers = &self.hosting.context.peers;
        crate::manager::admin::create_group(&self.directory, &self.roster, peers, self.me, id, streams, replicas)
            .await
            .map(|_| ())
    }

    /// Adds `stream` to data group `id`, hosted here, before anything is
    /// written to it (a keyed database's partition made by a split on the
    /// group's primary). The other replicas take it up from the group's
    /// log.
    pub fn adopt(&self, id: GroupId, stream: u32) -> Result<()> {
        self.hosting.adopt(id, stream)
    }

    /// Removes data group `id` (its database was dropped): recorded in the
    /// manager's directory, then removed here at once; every other node
    /// removes its replica when it next hears from the manager (twice a
    /// second), a node that is away when it returns.
    pub async fn remove(&self, id: GroupId) -> Result<()> {
        let peers = &self.hosting.context.peers;
        crate::manager::admin::drop_group(&self.directory, &self.roster, peers, self.me, id).await?;
        self.hosting.forget(id).await
    }

    /// Tells the partition manager which groups' primaries serve SQL
    /// sessions (a database's home: moving its primary ends them), so
    /// that balancing moves the others' first (set once, by the server).
    pub fn classify_groups_with(&self, serves_sessions: crate::raft::group::GroupClassifier) {
        let _ = self.hosting.serves_sessions.set(serves_sessions);
    }

    /// How this node counts the SQL sessions it serves as a group's
    /// primary (set once, by the server).
    pub fn count_sessions_with(&self, count: Arc<dyn Fn(GroupId) -> usize + Send + Sync>) {
        let _ = self.hosting.sessions.set(count);
    }

    /// How many SQL sessions group `id`'s primary serves: counted here
    /// when this node leads it, asked of the primary otherwise; none while
    /// the group has no primary (a node that stops leading a group ends
    /// its sessions), so that a database that lost its quorum for good
    /// can still be dropped.
    pub async fn sessions_on(&self, id: GroupId) -> Result<usize> {
        let addr = match self.role_of(id).map(|r| r.borrow().clone()) {
            Some(Role::Primary) => return Ok(self.hosting.sessions.get().map_or(0, |count| count(id))),
            Some(Role::Secondary { info, .. }) => info.rpc_addr,
            Some(Role::Unavailable(_)) => return Ok(0),
            Some(Role::Starting) | None => match self.primary_of(id) {
                Some((_, info)) => info.rpc_addr,
                None => return Ok(0),
            },
        };
        let request = crate::raft::network::Request::Sessions(id);
        match crate::manager::admin::call(&self.hosting.context.peers, &addr, &request).await? {
            crate::raft::network::Reply::Count(n) => Ok(n),
            crate::raft::network::Reply::Failed(e) => Err(ReplicationError::Refused(e)),
            _ => Err(ReplicationError::Codec("unexpected reply to a count of sessions".into())),
        }
    }

    /// Waits (up to `within`) until this node serves as group `id`'s
    /// primary with at least `voters` voters, so that what is written to
    /// the group from now on is on that many nodes when acknowledged.
    pub async fn wait_serving(&self, id: GroupId, voters: usize, within: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + within;
        let raft = self
            .hosting
            .raft_of(id)
            .ok_or_else(|| ReplicationError::Refused(format!("group {id} is not hosted here")))?;
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
            .hosting
            .raft_of(id)
            .ok_or_else(|| ReplicationError::Refused(format!("group {id} is not hosted here")))?;
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
        let rafts: Vec<crate::raft::type_config::Raft> =
            self.hosting.context.hosts.read().values().map(|h| h.raft.clone()).collect();
        for r in rafts {
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
        let hosted = self.hosting.context.hosts.read().get(&id).cloned();
        let hosted = hosted.ok_or_else(|| ReplicationError::Refused(format!("group {id} is not hosted here")))?;
        hosted.hand_over(id, &self.hosting.context.quiet, self.me, to).await.map_err(ReplicationError::Raft)?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let leader = raft.metrics().borrow_watched().current_leader;
            if leader == Some(to) || tokio::time::Instant::now() >= deadline {
                return Ok(leader.unwrap_or(self.me));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The data groups besides the first that the manager's directory
    /// lists, as this node knows it (removed ones are not).
    pub fn listed(&self) -> Vec<GroupId> {
        let directory = self.machine.directory();
        directory.streams.iter().filter(|(g, s)| **g != DATA_GROUP && !s.is_empty()).map(|(g, _)| *g).collect()
    }

    /// Whether `stream` is replicated by the first group (no other claimed it).
    pub fn in_first_group(&self, stream: u32) -> bool {
        !self.hosting.claimed.read().contains(&stream)
    }

    /// Whether this node leads data group `id` with a lease at this moment
    /// (the rule its role watch applies every 25 ms, applied now): a
    /// statement on the primary checks it, so that none reads on a lease
    /// that has just lapsed.
    pub fn holds_lease(&self, id: GroupId) -> bool {
        self.hosting.context.holds_lease(id)
    }

    /// Whether this node commits for group `id` now: it leads with a lease
    /// and serves (a hand-over stops serving just before the role moves).
    pub fn commits_for(&self, id: GroupId) -> bool {
        let serving = self.hosting.context.hosts.read().get(&id).is_some_and(|h| h.proposals.is_serving());
        serving && self.holds_lease(id)
    }

    /// Where data group `id`'s primary is, for work on one of its
    /// partitions: None here, when this node leads it with a lease.
    /// Refused while the group has no primary this node knows.
    pub fn partition_primary(&self, id: GroupId) -> std::result::Result<Option<(NodeId, NodeInfo)>, String> {
        let role = self.role_of(id).map(|r| r.borrow().clone());
        let primary = match role {
            Some(Role::Primary) if self.holds_lease(id) => return Ok(None),
            Some(Role::Primary) => {
                return Err(format!("this node's lease as the primary of partition group {id} has lapsed"));
            }
            Some(Role::Secondary { primary, info }) => (primary, info),
            Some(Role::Unavailable(why)) => return Err(format!("partition group {id} has no primary: {why}")),
            Some(Role::Starting) | None => self
                .primary_of(id)
                .ok_or_else(|| format!("the primary of partition group {id} is not known on this node yet"))?,
        };
        if primary.0 == self.me {
            return Err(format!("this node is becoming the primary of partition group {id}"));
        }
        Ok(Some(primary))
    }

    /// Where a transaction works on partition `stream` of data group `id`:
    /// None here, when this node leads the group with a lease; otherwise a
    /// transaction on the group's primary, begun with its first call
    /// (`begin`).
    pub fn begin_remote(
        &self,
        id: GroupId,
        stream: u32,
        begin: crate::parts::client::Begin,
    ) -> std::result::Result<Option<crate::parts::client::RemoteTxn>, String> {
        let Some((_, info)) = self.partition_primary(id)? else { return Ok(None) };
        let seq = self.hosting.remote_seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let txn = crate::parts::client::RemoteTxnId { node: self.me, incarnation: self.hosting.incarnation, seq };
        let peers = self.hosting.context.peers.clone();
        let groups = self.clone();
        let locate: crate::parts::client::Locate =
            Arc::new(move || Ok(groups.partition_primary(id)?.map(|(_, info)| info.rpc_addr)));
        Ok(Some(crate::parts::client::RemoteTxn::new((peers, locate), info.rpc_addr, id, stream, txn, begin)))
    }

    /// Makes a schema change on partition `stream` of data group `id` at
    /// its primary; false when this node leads the group (make it here).
    pub async fn change_schema(
        &self,
        id: GroupId,
        stream: u32,
        change: crate::parts::client::SchemaChange,
    ) -> std::result::Result<bool, tessera_engine::EngineError> {
        let primary = self.partition_primary(id).map_err(tessera_engine::EngineError::Unavailable)?;
        let Some((_, info)) = primary else { return Ok(false) };
        crate::parts::client::change_schema(&self.hosting.context.peers, &info.rpc_addr, id, stream, change).await?;
        Ok(true)
    }

    /// The group replicating `stream` (None: the first group, or no group
    /// this node knows).
    pub fn group_of_stream(&self, stream: u32) -> Option<GroupId> {
        // The groups hosted here know their streams first (a split's new
        // stream, a group just made); the directory knows the others.
        let hosted =
            self.hosting.more.lock().iter().find(|(_, g)| g.streams.read().contains(&stream)).map(|(id, _)| *id);
        if hosted.is_some() {
            return hosted;
        }
        let directory = self.machine.directory();
        directory.streams.iter().find(|(g, s)| **g != DATA_GROUP && s.contains(&stream)).map(|(g, _)| *g)
    }

    /// How many other nodes' transactions are open on partitions this node leads.
    pub fn remote_transactions_here(&self) -> usize {
        self.hosting.parts.open_count()
    }

    /// This node's role in data group `id`, if it hosts the group.
    pub fn role_of(&self, id: GroupId) -> Option<watch::Receiver<Role>> {
        if id == DATA_GROUP {
            return Some(self.first_role.clone());
        }
        self.hosting.role_of(id)
    }

    /// How sessions follow a planned move of group `id`'s primary role
    /// from this node, if it hosts the group.
    pub fn move_gate_of(&self, id: GroupId) -> Option<Arc<crate::raft::commit_log::MoveGate>> {
        self.hosting.context.hosts.read().get(&id).map(|h| h.proposals.gate.clone())
    }

    /// [`Self::move_gate_of`] the first group (the cluster's catalog, and
    /// the databases without a group of their own).
    pub fn first_move_gate(&self) -> Option<Arc<crate::raft::commit_log::MoveGate>> {
        self.move_gate_of(DATA_GROUP)
    }

    /// How fresh this node's replica of group `id` is, if it hosts the group.
    pub fn freshness_of(&self, id: GroupId) -> Option<Arc<crate::raft::freshness::Freshness>> {
        if id == DATA_GROUP {
            return Some(self.first_freshness.clone());
        }
        self.hosting.context.hosts.read().get(&id).map(|h| h.freshness.clone())
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
    /// (None for the first group, as from [`Self::replicas_of`]: its
    /// replicas are the nodes' roles.)
    pub async fn replicas_from_primary(&self, id: GroupId) -> Option<Vec<GroupReplica>> {
        if id == DATA_GROUP {
            return None;
        }
        let (_, info) = self.primary_of(id)?;
        let request = crate::raft::network::Request::GroupView(id);
        match crate::manager::admin::call(&self.hosting.context.peers, &info.rpc_addr, &request).await {
            Ok(crate::raft::network::Reply::GroupView(view)) => Some(replicas_seen(&view)),
            _ => None,
        }
    }

    /// Whether this node leads group `id` (is its primary's node).
    pub fn leads(&self, id: GroupId) -> bool {
        let raft = if id == DATA_GROUP { None } else { self.hosting.raft_of(id) };
        raft.is_some_and(|r| GroupView::of_leader(&r, self.me, &|_| false).is_ok())
    }

    /// Group `id`'s replicas as this node knows them: every detail on its
    /// primary; the configuration and the primary elsewhere (as this node
    /// last heard it: a node removed from the group, by a move say, is not
    /// told, so ask the primary where it matters); None where the group is
    /// not hosted or this node is not in it.
    pub fn replicas_of(&self, id: GroupId) -> Option<Vec<GroupReplica>> {
        let raft = if id == DATA_GROUP { None } else { self.hosting.raft_of(id) }?;
        replicas_in(&raft, self.me, &|n| self.hosting.context.quiet.answered(id, n))
    }
}

/// A group's replicas as its primary sees them (`view`).
fn replicas_seen(view: &GroupView) -> Vec<GroupReplica> {
    view.members
        .iter()
        .map(|m| GroupReplica {
            node: m.id,
            role: if m.id == view.leader {
                "primary"
            } else if !m.voter {
                "building"
            } else if m.answered {
                "secondary"
            } else {
                "unreachable"
            }
            .to_string(),
            epoch: view.term,
            behind: m.matched.map(|i| view.last_index.saturating_sub(i)),
        })
        .collect()
}

/// A group's replicas as node `me` knows them from its `raft`: every
/// detail on the group's primary; the configuration and the primary
/// elsewhere; None where `me` is not in the group.
/// `quiet_answered`: see `GroupView::of_leader`.
pub(crate) fn replicas_in(
    raft: &crate::raft::type_config::Raft,
    me: NodeId,
    quiet_answered: &dyn Fn(NodeId) -> bool,
) -> Option<Vec<GroupReplica>> {
    if let Ok(view) = GroupView::of_leader(raft, me, quiet_answered) {
        return Some(replicas_seen(&view));
    }
    let m = raft.metrics().borrow_watched().clone();
    let membership = m.membership_config.membership();
    membership.get_node(&me)?;
    let voters: Vec<NodeId> = membership.voter_ids().collect();
    Some(
        membership
            .nodes()
            .map(|(id, _)| GroupReplica {
                node: *id,
                role: if m.current_leader == Some(*id) {
                    "primary"
                } else if voters.contains(id) {
                    "secondary"
                } else {
                    "building"
                }
                .to_string(),
                epoch: m.current_term,
                behind: None,
            })
            .collect(),
    )
}
