//! Administration over the cluster RPC: `tessera status` and
//! `tessera node drain`. Any node answers; a drain is carried out by the
//! primary (a secondary passes the request on), which builds the cluster
//! map from what Raft knows and lets the partition manager's decisions
//! (`tessera-cluster`) say whether the drain is safe and what moves.

use std::time::{Duration, Instant};

use openraft::async_runtime::WatchReceiver;
use tessera_cluster::{Action, ClusterMap, plan_drain};

use std::sync::Arc;

use crate::error::{ReplicationError, Result};
use crate::manager::directory::DirectoryRaft;
use crate::manager::leader::Roster;
use crate::manager::status::{NodeStatus, StatusSource};
use crate::raft::network::{Reply, Request};
use crate::raft::type_config::Raft;
use crate::types::NodeId;
use crate::wire::Peers;

fn status_rows(raft: &Raft, roster: &Arc<Roster>, directory: &DirectoryRaft) -> Vec<NodeStatus> {
    StatusSource { raft: raft.clone(), roster: roster.clone(), directory: directory.clone() }.nodes()
}

/// The cluster map the manager's decisions work on: every member with its
/// domains and liveness, and the group's log as one partition whose
/// replicas are the voters.
fn cluster_map(rows: &[NodeStatus]) -> ClusterMap {
    let mut map = ClusterMap::default();
    for r in rows {
        crate::manager::leader::add_node(&mut map, r.id, &r.info, !r.role.starts_with("unreachable"));
    }
    // The voters (an unreachable member counts as one: a drain then errs
    // on the side of refusing). Spares and learners hold no vote.
    let mut order: Vec<NodeId> = rows.iter().filter(|r| r.role == "primary").map(|r| r.id).collect();
    order.extend(rows.iter().filter(|r| matches!(r.role.as_str(), "secondary" | "unreachable")).map(|r| r.id));
    map.add_partition(0, &order);
    if let Some(p) = map.partitions.get_mut(&0) {
        for replica in &mut p.replicas {
            replica.applied = rows.iter().find(|r| r.id == replica.node).and_then(|r| r.matched).unwrap_or(0);
        }
    }
    map
}

/// The primary's RPC address when it is another node (None: this node
/// leads); an error when there is no primary.
async fn primary_elsewhere(raft: &Raft, me: NodeId) -> Result<Option<String>> {
    let Some(leader) = raft.current_leader().await else {
        return Err(ReplicationError::Refused("the cluster has no primary at the moment".into()));
    };
    if leader == me {
        return Ok(None);
    }
    let m = raft.metrics().borrow_watched().clone();
    match m.membership_config.membership().get_node(&leader) {
        Some(info) => Ok(Some(info.rpc_addr.clone())),
        None => Err(ReplicationError::Internal(format!("the primary, node {leader}, is not in the membership"))),
    }
}

/// The cluster map, from the primary (which tracks every member).
pub(crate) async fn status(
    raft: &Raft,
    roster: &Arc<Roster>,
    directory: &DirectoryRaft,
    peers: &Peers,
    me: NodeId,
) -> Result<Vec<NodeStatus>> {
    match primary_elsewhere(raft, me).await {
        Ok(None) => Ok(status_rows(raft, roster, directory)),
        Ok(Some(addr)) => match call(peers, &addr, &Request::Status).await {
            Ok(Reply::Status(rows)) => Ok(rows),
            // The primary is out of reach: what this node knows is better than nothing.
            _ => Ok(status_rows(raft, roster, directory)),
        },
        Err(_) => Ok(status_rows(raft, roster, directory)),
    }
}

/// Carries out a drain of `node` on the primary: refuses if the group
/// would lose its quorum without it, else moves the primary role off it.
pub(crate) async fn drain(
    raft: &Raft,
    (hosts, quiet): (&crate::raft::network::Hosts, &crate::raft::quiet::Quiet),
    (roster, directory): (&Arc<Roster>, &DirectoryRaft),
    peers: &Peers,
    me: NodeId,
    node: NodeId,
) -> Result<String> {
    if let Some(addr) = primary_elsewhere(raft, me).await? {
        return match call(peers, &addr, &Request::Drain(node)).await? {
            Reply::Drained(msg) => Ok(msg),
            Reply::Failed(e) => Err(ReplicationError::Refused(e)),
            _ => Err(ReplicationError::Codec("unexpected reply to drain".into())),
        };
    }
    let rows = status_rows(raft, roster, directory);
    if !rows.iter().any(|r| r.id == node) {
        return Err(ReplicationError::Refused(format!("node {node} is not a member of the cluster")));
    }
    let up_after = rows.iter().filter(|r| matches!(r.role.as_str(), "primary" | "secondary") && r.id != node).count();
    let actions = plan_drain(&cluster_map(&rows), node).map_err(|e| {
        ReplicationError::Refused(format!(
            "draining node {node} would cost the cluster its quorum: without it {up_after} of its {} nodes would be up, and {} are needed",
            e.voters, e.quorum
        ))
    })?;
    refuse_costing_a_group(hosts, node)?;
    // The node stays drained until it restarts: the manager moves no
    // primary back to it, as spreading primaries would (it leads none).
    // A node that is down leads nothing, and returns undrained.
    let mut done = Vec::new();
    let manager_moved = if node == me {
        mark_draining(roster, directory, me).await?
    } else if let Some(row) = rows.iter().find(|r| r.id == node && !r.role.starts_with("unreachable")) {
        match call(peers, &row.info.rpc_addr, &Request::Draining).await? {
            Reply::Done(moved) => moved,
            Reply::Failed(e) => return Err(ReplicationError::Refused(format!("node {node}: {e}"))),
            _ => return Err(ReplicationError::Codec("unexpected reply to a drain mark".into())),
        }
    } else {
        String::new()
    };
    for action in actions {
        if let Action::TransferLeadership { to, .. } = action {
            // Gently, as a database's group is moved (`Hosted::hand_over`):
            // commits in flight get their answers first.
            let first = hosts.read().get(&crate::types::DATA_GROUP).cloned();
            match first {
                Some(hosted) => {
                    hosted.hand_over(crate::types::DATA_GROUP, quiet, me, to).await.map_err(ReplicationError::Raft)?
                }
                None => raft.trigger().transfer_leader(to).await.map_err(|e| ReplicationError::Raft(e.to_string()))?,
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while raft.current_leader().await != Some(to) {
                if Instant::now() > deadline {
                    return Err(ReplicationError::Timeout(format!("node {to} did not take over as primary")));
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            done.push(format!("the primary moved from node {node} to node {to}"));
        }
    }
    done.extend(drain_groups((hosts, quiet), peers, me, node).await?);
    if !manager_moved.is_empty() {
        done.push(manager_moved);
    }
    Ok(if done.is_empty() {
        format!("node {node} holds no primary; it can be taken down without costing any partition its quorum")
    } else {
        format!("{}; node {node} can be taken down", done.join(", "))
    })
}

/// Marks this node as being drained (`Request::Draining`), once the
/// manager's leader knows; and if this node leads the manager group, hands
/// that on too, so that taking the node down costs the manager no election
/// (and its repairs no pause). Says where the manager's leadership went,
/// or nothing when it was elsewhere.
pub(crate) async fn mark_draining(roster: &Roster, directory: &DirectoryRaft, me: NodeId) -> Result<String> {
    roster.mark_draining().await.map_err(ReplicationError::Timeout)?;
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
    roster.leader_hears(Instant::now()).await.map_err(ReplicationError::Timeout)?;
    Ok(format!("the manager's leader moved from node {me} to node {to}"))
}

/// Every database group's replicas, as the first group's primary knows
/// them (asked there).
pub(crate) async fn groups(
    raft: &Raft,
    (hosts, quiet): (&crate::raft::network::Hosts, &crate::raft::quiet::Quiet),
    peers: &Peers,
    me: NodeId,
) -> Result<Vec<(crate::types::GroupId, Vec<crate::node::groups::GroupReplica>)>> {
    if let Some(addr) = primary_elsewhere(raft, me).await? {
        return match call(peers, &addr, &Request::Groups).await? {
            Reply::Groups(groups) => Ok(groups),
            Reply::Failed(e) => Err(ReplicationError::Refused(e)),
            _ => Err(ReplicationError::Codec("unexpected reply to a status of the groups".into())),
        };
    }
    let mut groups: Vec<_> = other_groups(hosts)
        .into_iter()
        .filter_map(|(g, raft)| crate::node::groups::replicas_in(&raft, me, &|n| quiet.answered(g, n)).map(|r| (g, r)))
        .collect();
    groups.sort_by_key(|(g, _)| *g);
    Ok(groups)
}

/// The databases' own groups this node hosts, with their Raft.
fn other_groups(hosts: &crate::raft::network::Hosts) -> Vec<(crate::types::GroupId, Raft)> {
    let hosts = hosts.read();
    hosts.iter().filter(|(g, _)| **g != crate::types::DATA_GROUP).map(|(g, h)| (*g, h.raft.clone())).collect()
}

/// Refuses a drain of `node` when one of the databases' own groups would
/// lose its quorum without it (a group of one or two voters).
fn refuse_costing_a_group(hosts: &crate::raft::network::Hosts, node: NodeId) -> Result<()> {
    for (group, raft) in other_groups(hosts) {
        let m = raft.metrics().borrow_watched().clone();
        let voters = m.membership_config.membership().voter_ids().count();
        let member = m.membership_config.membership().voter_ids().any(|v| v == node);
        if member && voters - 1 < voters / 2 + 1 {
            return Err(ReplicationError::Refused(format!(
                "draining node {node} would cost data group {group} its quorum: it has {voters} voters, node {node} among them"
            )));
        }
    }
    Ok(())
}

/// Moves the primaries of the databases' own groups off `node`, each to
/// the voter of its group leading the fewest groups (asked of `node`, the
/// group's primary, as the manager asks).
async fn drain_groups(
    (hosts, quiet): (&crate::raft::network::Hosts, &crate::raft::quiet::Quiet),
    peers: &Peers,
    me: NodeId,
    node: NodeId,
) -> Result<Vec<String>> {
    let mut leading: std::collections::BTreeMap<NodeId, usize> = Default::default();
    let rafts: Vec<Raft> = hosts.read().values().map(|h| h.raft.clone()).collect();
    for raft in &rafts {
        if let Some(l) = raft.metrics().borrow_watched().current_leader {
            *leading.entry(l).or_default() += 1;
        }
    }
    let mut done = Vec::new();
    for (group, raft) in other_groups(hosts) {
        let m = raft.metrics().borrow_watched().clone();
        if m.current_leader != Some(node) {
            continue;
        }
        let membership = m.membership_config.membership();
        let Some(to) =
            membership.voter_ids().filter(|v| *v != node).min_by_key(|v| (leading.get(v).copied().unwrap_or(0), *v))
        else {
            continue;
        };
        if node == me {
            let hosted = hosts.read().get(&group).cloned();
            let hosted =
                hosted.ok_or_else(|| ReplicationError::Refused(format!("group {group} is not hosted here")))?;
            hosted.hand_over(group, quiet, me, to).await.map_err(ReplicationError::Raft)?;
        } else {
            let addr = membership.get_node(&node).map(|i| i.rpc_addr.clone()).unwrap_or_default();
            match call(peers, &addr, &Request::Lead { group, to }).await? {
                Reply::Done(_) => {}
                Reply::Failed(e) => return Err(ReplicationError::Refused(e)),
                _ => return Err(ReplicationError::Codec("unexpected reply to a move of a primary".into())),
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

/// Sets the data group's replica count: on the manager's leader, records
/// it in the directory (the manager then builds or sheds replicas to
/// match); elsewhere, passes the request on to the leader.
pub(crate) async fn set_replicas(
    directory: &DirectoryRaft,
    machine: &crate::manager::directory::DirectoryMachine,
    roster: &Arc<Roster>,
    peers: &Peers,
    me: NodeId,
    replicas: usize,
) -> Result<String> {
    if let Some(answer) = on_manager_leader(directory, roster, peers, me, &Request::SetReplicas(replicas)).await {
        return answer;
    }
    // The nodes the directory lists, and any heard from but not recorded yet.
    let mut known: std::collections::BTreeSet<NodeId> = machine.directory().nodes.into_keys().collect();
    known.extend(roster.spares().into_iter().map(|(id, _, _)| id));
    known.insert(me);
    let nodes = known.len();
    if replicas == 0 || replicas > nodes {
        return Err(ReplicationError::Refused(format!(
            "the cluster has {nodes} nodes: it can keep between 1 and {nodes} replicas, not {replicas} (add nodes first)"
        )));
    }
    let command = crate::manager::directory::DirectoryCommand::Target { group: crate::types::DATA_GROUP, replicas };
    directory.client_write(command.to_entry(me)).await.map_err(|e| ReplicationError::Raft(e.to_string()))?;
    Ok(format!(
        "the data group keeps {replicas} replicas from now on: the partition manager builds or removes replicas to match"
    ))
}

/// Passes `request` on to the manager's leader when this node is not it
/// (None: it is; answer here).
async fn on_manager_leader(
    directory: &DirectoryRaft,
    roster: &Arc<Roster>,
    peers: &Peers,
    me: NodeId,
    request: &Request,
) -> Option<Result<String>> {
    use openraft::async_runtime::WatchReceiver;
    let m = directory.metrics().borrow_watched().clone();
    if m.current_leader == Some(me) && m.state == openraft::ServerState::Leader {
        return None;
    }
    let known = m.current_leader.and_then(|l| m.membership_config.membership().get_node(&l).cloned());
    let Some(leader) = known.or_else(|| roster.manager_leader()) else {
        return Some(Err(ReplicationError::Refused(
            "the partition manager has no leader at the moment (an election, or fewer than a quorum of its nodes is up)"
                .into(),
        )));
    };
    Some(match call(peers, &leader.rpc_addr, request).await {
        Ok(Reply::Done(msg)) => Ok(msg),
        Ok(Reply::Failed(e)) => Err(ReplicationError::Refused(e)),
        Ok(_) => Err(ReplicationError::Codec("unexpected reply from the manager's leader".into())),
        Err(e) => Err(e),
    })
}

/// Records a new data group in the directory (on the manager's leader):
/// every node then hosts it, and the manager builds its replicas.
pub(crate) async fn create_group(
    directory: &DirectoryRaft,
    roster: &Arc<Roster>,
    peers: &Peers,
    me: NodeId,
    group: crate::types::GroupId,
    streams: Vec<u32>,
    replicas: usize,
) -> Result<String> {
    let request = Request::CreateGroup { group, streams: streams.clone(), replicas };
    if let Some(answer) = on_manager_leader(directory, roster, peers, me, &request).await {
        return answer;
    }
    let command = crate::manager::directory::DirectoryCommand::Group { group, streams, replicas };
    directory.client_write(command.to_entry(me)).await.map_err(|e| ReplicationError::Raft(e.to_string()))?;
    Ok(format!("data group {group} keeps {replicas} replicas"))
}

/// Records in the directory (on the manager's leader) that data group
/// `group` was removed: every node then removes what it holds of it.
pub(crate) async fn drop_group(
    directory: &DirectoryRaft,
    roster: &Arc<Roster>,
    peers: &Peers,
    me: NodeId,
    group: crate::types::GroupId,
) -> Result<String> {
    if group == crate::types::DATA_GROUP {
        return Err(ReplicationError::Refused("the first data group cannot be removed".into()));
    }
    let request = Request::DropGroup(group);
    if let Some(answer) = on_manager_leader(directory, roster, peers, me, &request).await {
        return answer;
    }
    let command = crate::manager::directory::DirectoryCommand::Drop { group };
    directory.client_write(command.to_entry(me)).await.map_err(|e| ReplicationError::Raft(e.to_string()))?;
    Ok(format!("data group {group} was removed"))
}

pub(crate) async fn call(peers: &Peers, addr: &str, request: &Request) -> Result<Reply> {
    let bytes = postcard::to_allocvec(request).map_err(|e| ReplicationError::Codec(e.to_string()))?;
    let reply = peers.client(addr).call(bytes, Duration::from_secs(20)).await?;
    postcard::from_bytes(&reply).map_err(|e| ReplicationError::Codec(e.to_string()))
}

/// An administrator's connection to a cluster (the CLI's side).
pub struct Admin {
    peers: Peers,
    addr: String,
}

impl Admin {
    pub fn new(addr: &str, secret: crate::wire::ClusterSecret) -> Admin {
        // Node id 0: not a member, an administrator.
        Admin { peers: Peers::new(0, secret), addr: addr.to_string() }
    }

    pub async fn status(&self) -> Result<Vec<NodeStatus>> {
        match call(&self.peers, &self.addr, &Request::Status).await? {
            Reply::Status(rows) => Ok(rows),
            Reply::Failed(e) => Err(ReplicationError::Raft(e)),
            _ => Err(ReplicationError::Codec("unexpected reply to status".into())),
        }
    }

    /// Every database group's replicas (by group id, which is its home's stream).
    pub async fn groups(&self) -> Result<Vec<(crate::types::GroupId, Vec<crate::node::groups::GroupReplica>)>> {
        match call(&self.peers, &self.addr, &Request::Groups).await? {
            Reply::Groups(groups) => Ok(groups),
            Reply::Failed(e) => Err(ReplicationError::Raft(e)),
            _ => Err(ReplicationError::Codec("unexpected reply to a status of the groups".into())),
        }
    }

    pub async fn set_replicas(&self, replicas: usize) -> Result<String> {
        match call(&self.peers, &self.addr, &Request::SetReplicas(replicas)).await? {
            Reply::Done(msg) => Ok(msg),
            Reply::Failed(e) => Err(ReplicationError::Refused(e)),
            _ => Err(ReplicationError::Codec("unexpected reply to set replicas".into())),
        }
    }

    pub async fn drain(&self, node: NodeId) -> Result<String> {
        match call(&self.peers, &self.addr, &Request::Drain(node)).await? {
            Reply::Drained(msg) => Ok(msg),
            Reply::Failed(e) => Err(ReplicationError::Refused(e)),
            _ => Err(ReplicationError::Codec("unexpected reply to drain".into())),
        }
    }
}
