//! Administration over the cluster RPC: `tessera status` and
//! `tessera node drain`, the replica counts, and the directory's record of
//! the data groups. Any node answers; a drain is carried out by the
//! primary (a secondary passes the request on), which builds the cluster
//! map from what Raft knows and lets the partition manager's decisions
//! (`tessera-cluster`) say whether the drain is safe and what moves. The
//! directory's changes are made on the manager's leader (another node
//! passes them on).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::async_runtime::WatchReceiver;
use tessera_cluster::{Action, ClusterMap, plan_drain};

use super::directory::{DirectoryCommand, DirectoryMachine, DirectoryRaft};
use super::messages::{AdminMessage, AdminReply, ManagerMessage, ManagerReply};
use super::placement::add_node;
use super::roles::ReplicaRole;
use super::roster::Roster;
use super::status::{NodeStatus, StatusSource};
use super::view::{GroupReplica, replicas_in};
use crate::error::{ReplicationError, Result};
use crate::raft::groups::RaftGroups;
use crate::raft::state_machine::Raft;
use crate::types::{GroupId, NodeId, SYSTEM_GROUP};
use crate::wire::service::{self, Answer, Message, Refusal};
use crate::wire::{ClusterSecret, Peers};

/// How long an administrative request to another node may take.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(20);

/// Sends `request` to the node at `addr` and waits for its answer.
pub(crate) async fn call<M: Message>(peers: &Peers, addr: &str, request: &M) -> Result<Answer<M::Reply>> {
    service::call(&peers.client(addr), request, ADMIN_TIMEOUT).await
}

/// What administration works with on a node.
#[derive(Clone)]
pub(crate) struct Administration {
    /// The system group's Raft: the primary tracks every member.
    pub raft: Raft,
    pub groups: Arc<RaftGroups>,
    pub roster: Arc<Roster>,
    pub directory: DirectoryRaft,
    pub machine: DirectoryMachine,
    pub peers: Peers,
    pub me: NodeId,
}

/// The cluster map the manager's decisions work on: every member with its
/// domains and liveness, and the group's log as one partition whose
/// replicas are the voters.
fn cluster_map(rows: &[NodeStatus]) -> ClusterMap {
    let mut map = ClusterMap::default();
    for r in rows {
        add_node(&mut map, r.id, &r.info, !r.role.is_unreachable());
    }
    // The voters (an unreachable member counts as one: a drain then errs
    // on the side of refusing). Spares and learners hold no vote.
    let mut order: Vec<NodeId> = rows.iter().filter(|r| r.role == ReplicaRole::Primary).map(|r| r.id).collect();
    order.extend(
        rows.iter().filter(|r| matches!(r.role, ReplicaRole::Secondary | ReplicaRole::Unreachable)).map(|r| r.id),
    );
    map.add_partition(0, &order);
    if let Some(p) = map.partitions.get_mut(&0) {
        for replica in &mut p.replicas {
            replica.applied = rows.iter().find(|r| r.id == replica.node).and_then(|r| r.matched).unwrap_or(0);
        }
    }
    map
}

impl Administration {
    fn status_rows(&self) -> Vec<NodeStatus> {
        StatusSource { raft: self.raft.clone(), roster: self.roster.clone(), directory: self.directory.clone() }.nodes()
    }

    /// The primary's RPC address when it is another node (None: this node
    /// leads); an error when there is no primary.
    async fn primary_elsewhere(&self) -> Result<Option<String>> {
        let Some(leader) = self.raft.current_leader().await else {
            return Err(ReplicationError::Refused("the cluster has no primary at the moment".into()));
        };
        if leader == self.me {
            return Ok(None);
        }
        let m = self.raft.metrics().borrow_watched().clone();
        match m.membership_config.membership().get_node(&leader) {
            Some(info) => Ok(Some(info.rpc_addr.clone())),
            None => Err(ReplicationError::Internal(format!("the primary, node {leader}, is not in the membership"))),
        }
    }

    /// The cluster map, from the primary (which tracks every member).
    pub async fn status(&self) -> Result<Vec<NodeStatus>> {
        match self.primary_elsewhere().await {
            Ok(None) => Ok(self.status_rows()),
            Ok(Some(addr)) => match call(&self.peers, &addr, &AdminMessage::Status).await {
                Ok(Ok(AdminReply::Status(rows))) => Ok(rows),
                // The primary is out of reach: what this node knows is better than nothing.
                _ => Ok(self.status_rows()),
            },
            Err(_) => Ok(self.status_rows()),
        }
    }

    /// Carries out a drain of `node` on the primary: refuses if the group
    /// would lose its quorum without it, else moves the primary role off it.
    pub async fn drain(&self, node: NodeId) -> Result<String> {
        if let Some(addr) = self.primary_elsewhere().await? {
            return match call(&self.peers, &addr, &AdminMessage::Drain(node)).await? {
                Ok(AdminReply::Done(msg)) => Ok(msg),
                Err(Refusal(e)) => Err(ReplicationError::Refused(e)),
                Ok(_) => Err(ReplicationError::Codec("unexpected reply to drain".into())),
            };
        }
        let rows = self.status_rows();
        if !rows.iter().any(|r| r.id == node) {
            return Err(ReplicationError::Refused(format!("node {node} is not a member of the cluster")));
        }
        let up_after = rows
            .iter()
            .filter(|r| matches!(r.role, ReplicaRole::Primary | ReplicaRole::Secondary) && r.id != node)
            .count();
        let actions = plan_drain(&cluster_map(&rows), node).map_err(|e| {
            ReplicationError::Refused(format!(
                "draining node {node} would cost the cluster its quorum: without it {up_after} of its {} nodes would be up, and {} are needed",
                e.voters, e.quorum
            ))
        })?;
        self.refuse_costing_a_group(node)?;
        // The node stays drained until it restarts: the manager moves no
        // primary back to it, as spreading primaries would (it leads none).
        // A node that is down leads nothing, and returns undrained.
        let manager_moved = self.mark_drained(node, &rows).await?;
        let mut done = Vec::new();
        for action in actions {
            if let Action::TransferLeadership { to, .. } = action {
                self.move_system_primary(to).await?;
                done.push(format!("the primary moved from node {node} to node {to}"));
            }
        }
        done.extend(self.drain_groups(node).await?);
        if !manager_moved.is_empty() {
            done.push(manager_moved);
        }
        Ok(if done.is_empty() {
            format!("node {node} holds no primary; it can be taken down without costing any partition its quorum")
        } else {
            format!("{}; node {node} can be taken down", done.join(", "))
        })
    }

    /// Marks `node` as being drained: here, or by asking it (a node that
    /// is down is not asked). Says where the manager's leadership went.
    async fn mark_drained(&self, node: NodeId, rows: &[NodeStatus]) -> Result<String> {
        if node == self.me {
            return self.mark_draining().await;
        }
        let Some(row) = rows.iter().find(|r| r.id == node && !r.role.is_unreachable()) else {
            return Ok(String::new());
        };
        match call(&self.peers, &row.info.rpc_addr, &AdminMessage::Draining).await? {
            Ok(AdminReply::Done(moved)) => Ok(moved),
            Err(Refusal(e)) => Err(ReplicationError::Refused(format!("node {node}: {e}"))),
            Ok(_) => Err(ReplicationError::Codec("unexpected reply to a drain mark".into())),
        }
    }

    /// Moves the system group's primary role (held here) to node `to`,
    /// gently, as a database's group is moved (`RaftGroups::hand_over`):
    /// commits in flight get their answers first.
    async fn move_system_primary(&self, to: NodeId) -> Result<()> {
        self.groups.hand_over(SYSTEM_GROUP, to).await?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.raft.current_leader().await != Some(to) {
            if Instant::now() > deadline {
                return Err(ReplicationError::Timeout(format!("node {to} did not take over as primary")));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }

    /// Marks this node as being drained (`AdminMessage::Draining`), once
    /// the manager's leader knows; and if this node leads the manager
    /// group, hands that on too, so that taking the node down costs the
    /// manager no election (and its repairs no pause). Says where the
    /// manager's leadership went, or nothing when it was elsewhere.
    pub async fn mark_draining(&self) -> Result<String> {
        let (roster, directory, me) = (&self.roster, &self.directory, self.me);
        roster.mark_draining().await?;
        let m = directory.metrics().borrow_watched().clone();
        if m.state != openraft::ServerState::Leader || m.current_leader != Some(me) {
            return Ok(String::new());
        }
        // The voter furthest along, among those not being drained themselves.
        let draining = roster.draining_nodes(me);
        let matched = |v: &NodeId| m.replication.as_ref().and_then(|r| r.get(v).cloned().flatten()).map(|l| l.index);
        let Some(to) = m
            .membership_config
            .membership()
            .voter_ids()
            .filter(|v| *v != me && !draining.contains(v))
            .filter(|v| matched(v).is_some())
            .max_by_key(|v| (matched(v), std::cmp::Reverse(*v)))
        else {
            return Ok(format!("the manager's leader stays on node {me}: no other voter of it can take over"));
        };
        directory.trigger().transfer_leader(to).await.map_err(|e| ReplicationError::Raft(e.to_string()))?;
        let deadline = Instant::now() + Duration::from_secs(5);
        while directory.metrics().borrow_watched().current_leader != Some(to) {
            if Instant::now() > deadline {
                return Ok(format!("the manager's leader stays on node {me}: node {to} did not take over"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The new leader learns of the drain from this node's next report.
        roster.leader_hears(Instant::now()).await?;
        Ok(format!("the manager's leader moved from node {me} to node {to}"))
    }

    /// Every database group's replicas, as the system group's primary knows
    /// them (asked there).
    pub async fn groups(&self) -> Result<Vec<(GroupId, Vec<GroupReplica>)>> {
        if let Some(addr) = self.primary_elsewhere().await? {
            return match call(&self.peers, &addr, &AdminMessage::Groups).await? {
                Ok(AdminReply::Groups(groups)) => Ok(groups),
                Err(Refusal(e)) => Err(ReplicationError::Refused(e)),
                Ok(_) => Err(ReplicationError::Codec("unexpected reply to a status of the groups".into())),
            };
        }
        let quiet = &self.groups.quiet;
        let mut groups: Vec<_> = self
            .groups
            .database_groups()
            .into_iter()
            .filter_map(|g| replicas_in(&g.raft, self.me, &|n| quiet.answered(g.id, n)).map(|r| (g.id, r)))
            .collect();
        groups.sort_by_key(|(g, _)| *g);
        Ok(groups)
    }

    /// Refuses a drain of `node` when one of the databases' own groups would
    /// lose its quorum without it (a group of one or two voters).
    fn refuse_costing_a_group(&self, node: NodeId) -> Result<()> {
        for g in self.groups.database_groups() {
            let m = g.raft.metrics().borrow_watched().clone();
            let voters = m.membership_config.membership().voter_ids().count();
            let member = m.membership_config.membership().voter_ids().any(|v| v == node);
            if member && voters - 1 < voters / 2 + 1 {
                return Err(ReplicationError::Refused(format!(
                    "draining node {node} would cost data group {} its quorum: it has {voters} voters, node {node} among them",
                    g.id
                )));
            }
        }
        Ok(())
    }

    /// Moves the primaries of the databases' own groups off `node`, each to
    /// the voter of its group leading the fewest groups (asked of `node`,
    /// the group's primary, as the manager asks).
    async fn drain_groups(&self, node: NodeId) -> Result<Vec<String>> {
        let mut leading: BTreeMap<NodeId, usize> = Default::default();
        let rafts: Vec<Raft> = self.groups.hosts().read().values().map(|g| g.raft.clone()).collect();
        for raft in &rafts {
            if let Some(l) = raft.metrics().borrow_watched().current_leader {
                *leading.entry(l).or_default() += 1;
            }
        }
        let mut done = Vec::new();
        for g in self.groups.database_groups() {
            let (group, raft) = (g.id, &g.raft);
            let m = raft.metrics().borrow_watched().clone();
            if m.current_leader != Some(node) {
                continue;
            }
            let membership = m.membership_config.membership();
            let Some(to) = membership
                .voter_ids()
                .filter(|v| *v != node)
                .min_by_key(|v| (leading.get(v).copied().unwrap_or(0), *v))
            else {
                continue;
            };
            if node == self.me {
                self.groups.hand_over(group, to).await?;
            } else {
                let addr = membership.get_node(&node).map(|i| i.rpc_addr.clone()).unwrap_or_default();
                match call(&self.peers, &addr, &ManagerMessage::Lead { group, to }).await? {
                    Ok(ManagerReply::Done(_)) => {}
                    Err(Refusal(e)) => return Err(ReplicationError::Refused(e)),
                    Ok(_) => return Err(ReplicationError::Codec("unexpected reply to a move of a primary".into())),
                }
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while raft.metrics().borrow_watched().current_leader != Some(to) {
                if Instant::now() > deadline {
                    return Err(ReplicationError::Timeout(format!("node {to} did not take over data group {group}")));
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            *leading.entry(to).or_default() += 1;
            done.push(format!("data group {group}'s primary moved from node {node} to node {to}"));
        }
        Ok(done)
    }

    /// Sets the system group's replica count: on the manager's leader,
    /// records it in the directory (the manager then builds or sheds
    /// replicas to match); elsewhere, passes the request on to the leader.
    pub async fn set_replicas(&self, replicas: usize) -> Result<String> {
        if let Some(answer) = self.on_manager_leader(&AdminMessage::SetReplicas(replicas)).await {
            return answer;
        }
        // The nodes the directory lists, and any heard from but not recorded yet.
        let mut known: BTreeSet<NodeId> = self.machine.directory().nodes.into_keys().collect();
        known.extend(self.roster.spares().into_iter().map(|(id, _, _)| id));
        known.insert(self.me);
        let nodes = known.len();
        if replicas == 0 || replicas > nodes {
            return Err(ReplicationError::Refused(format!(
                "the cluster has {nodes} nodes: it can keep between 1 and {nodes} replicas, not {replicas} (add nodes first)"
            )));
        }
        self.record(DirectoryCommand::Target { group: SYSTEM_GROUP, replicas }).await?;
        Ok(format!(
            "the data group keeps {replicas} replicas from now on: the partition manager builds or removes replicas to match"
        ))
    }

    /// Writes `command` to the directory (on the manager's leader).
    async fn record(&self, command: DirectoryCommand) -> Result<()> {
        self.directory
            .client_write(command.to_entry(self.me))
            .await
            .map_err(|e| ReplicationError::Raft(e.to_string()))?;
        Ok(())
    }

    /// Passes `request` on to the manager's leader when this node is not it
    /// (None: it is; answer here).
    async fn on_manager_leader(&self, request: &AdminMessage) -> Option<Result<String>> {
        let m = self.directory.metrics().borrow_watched().clone();
        if m.current_leader == Some(self.me) && m.state == openraft::ServerState::Leader {
            return None;
        }
        let known = m.current_leader.and_then(|l| m.membership_config.membership().get_node(&l).cloned());
        let Some(leader) = known.or_else(|| self.roster.manager_leader()) else {
            return Some(Err(ReplicationError::Refused(
                "the partition manager has no leader at the moment (an election, or fewer than a quorum of its nodes is up)"
                    .into(),
            )));
        };
        Some(match call(&self.peers, &leader.rpc_addr, request).await {
            Ok(Ok(AdminReply::Done(msg))) => Ok(msg),
            Ok(Err(Refusal(e))) => Err(ReplicationError::Refused(e)),
            Ok(Ok(_)) => Err(ReplicationError::Codec("unexpected reply from the manager's leader".into())),
            Err(e) => Err(e),
        })
    }

    /// Records a new data group in the directory (on the manager's leader):
    /// every node then hosts it, and the manager builds its replicas.
    pub async fn create_group(&self, group: GroupId, streams: Vec<u32>, replicas: usize) -> Result<String> {
        let request = AdminMessage::CreateGroup { group, streams: streams.clone(), replicas };
        if let Some(answer) = self.on_manager_leader(&request).await {
            return answer;
        }
        self.record(DirectoryCommand::Group { group, streams, replicas }).await?;
        Ok(format!("data group {group} keeps {replicas} replicas"))
    }

    /// Records in the directory (on the manager's leader) that data group
    /// `group` was removed: every node then removes what it holds of it.
    pub async fn drop_group(&self, group: GroupId) -> Result<String> {
        if group == SYSTEM_GROUP {
            return Err(ReplicationError::Refused("the first data group cannot be removed".into()));
        }
        if let Some(answer) = self.on_manager_leader(&AdminMessage::DropGroup(group)).await {
            return answer;
        }
        self.record(DirectoryCommand::Drop { group }).await?;
        Ok(format!("data group {group} was removed"))
    }
}

/// An administrator's connection to a cluster (the CLI's side).
pub struct Admin {
    peers: Peers,
    addr: String,
}

impl Admin {
    pub fn new(addr: &str, secret: ClusterSecret) -> Admin {
        // Node id 0: not a member, an administrator.
        Admin { peers: Peers::new(0, secret), addr: addr.to_string() }
    }

    pub async fn status(&self) -> Result<Vec<NodeStatus>> {
        match call(&self.peers, &self.addr, &AdminMessage::Status).await? {
            Ok(AdminReply::Status(rows)) => Ok(rows),
            Err(Refusal(e)) => Err(ReplicationError::Raft(e)),
            Ok(_) => Err(ReplicationError::Codec("unexpected reply to status".into())),
        }
    }

    /// Every database group's replicas (by group id, which is its home's stream).
    pub async fn groups(&self) -> Result<Vec<(GroupId, Vec<GroupReplica>)>> {
        match call(&self.peers, &self.addr, &AdminMessage::Groups).await? {
            Ok(AdminReply::Groups(groups)) => Ok(groups),
            Err(Refusal(e)) => Err(ReplicationError::Raft(e)),
            Ok(_) => Err(ReplicationError::Codec("unexpected reply to a status of the groups".into())),
        }
    }

    pub async fn set_replicas(&self, replicas: usize) -> Result<String> {
        match call(&self.peers, &self.addr, &AdminMessage::SetReplicas(replicas)).await? {
            Ok(AdminReply::Done(msg)) => Ok(msg),
            Err(Refusal(e)) => Err(ReplicationError::Refused(e)),
            Ok(_) => Err(ReplicationError::Codec("unexpected reply to set replicas".into())),
        }
    }

    pub async fn drain(&self, node: NodeId) -> Result<String> {
        match call(&self.peers, &self.addr, &AdminMessage::Drain(node)).await? {
            Ok(AdminReply::Done(msg)) => Ok(msg),
            Err(Refusal(e)) => Err(ReplicationError::Refused(e)),
            Ok(_) => Err(ReplicationError::Codec("unexpected reply to drain".into())),
        }
    }
}
