//! What every node keeps doing in the background: forming the cluster
//! the first time (`bootstrap`), registering with the system group's
//! primary (`spare_watch`) and reporting to the manager's leader
//! (`report_loop`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;

use super::config::ReplicationConfig;
use crate::manager::directory::{DirectoryMachine, DirectoryRaft};
use crate::manager::leader::TICK;
use crate::manager::messages::{register, report};
use crate::manager::placement::{founding_voters, manager_size};
use crate::manager::roster::Roster;
use crate::raft::groups::RaftGroups;
use crate::raft::role_watch::{SpareState, SpareView};
use crate::raft::state_machine::Raft;
use crate::raft::transport::hello;
use crate::types::{GroupId, NodeId, NodeInfo};
use crate::wire::Peers;

/// Forms the cluster the first time: asks every `--join` address who it
/// is, and once all have answered, the node with the lowest id proposes the
/// memberships, spread across failure domains: first the manager group's
/// (3 of them, 5 when there are 5 or more), then the system group's
/// (`replicas` of them; the rest are spares). The manager group is formed
/// first, so a data group that exists always has one. The others wait to
/// hear from the leaders that emerge. A node joining a cluster already
/// formed does nothing here: it registers with the primary as a spare
/// (`spare_watch`) and reports to the manager (`report_loop`).
pub(super) async fn bootstrap(raft: Raft, directory: DirectoryRaft, peers: Peers, config: ReplicationConfig) {
    let mut members: BTreeMap<NodeId, NodeInfo> = BTreeMap::new();
    members.insert(config.id, config.info.clone());
    loop {
        if raft.is_initialized().await.unwrap_or(true) {
            return;
        }
        let mut missing = Vec::new();
        for addr in &config.join {
            if *addr == config.info.rpc_addr || members.values().any(|i| &i.rpc_addr == addr) {
                continue;
            }
            match hello(&peers, addr).await {
                Ok((_, _, true)) => {
                    tracing::info!("the cluster is already formed: this node joins it as a spare");
                    return;
                }
                Ok((id, info, false)) => {
                    members.insert(id, info);
                }
                Err(e) => missing.push(format!("{addr}: {e}")),
            }
        }
        if missing.is_empty() {
            if members.keys().next() == Some(&config.id) {
                let managers = founding_voters(&members, config.id, manager_size(members.len()));
                tracing::info!(voters = ?managers.keys().collect::<Vec<_>>(), "forming the manager group");
                if let Err(e) = directory.initialize(managers).await {
                    tracing::info!("manager group already formed: {e}");
                }
                let voters = founding_voters(&members, config.id, config.replicas.max(1));
                tracing::info!(
                    voters = ?voters.keys().collect::<Vec<_>>(),
                    nodes = ?members.keys().collect::<Vec<_>>(),
                    "forming the cluster"
                );
                if let Err(e) = raft.initialize(voters).await {
                    tracing::info!("cluster already formed: {e}");
                }
            }
            return;
        }
        tracing::info!(waiting_for = ?missing, "waiting for the other founding nodes");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Keeps every node but the leader in touch with the primary: twice a
/// second it registers (which tells the primary's manager that a spare is
/// alive and where) and records whom the cluster names primary and whether
/// it is a member. That is how a spare outside the configuration, a node
/// just started to join a formed cluster, or a voter replaced while it was
/// away finds the primary; members learn nothing new from it.
pub(super) async fn spare_watch(
    raft: Raft,
    peers: Peers,
    config: ReplicationConfig,
    spare: SpareState,
    roster: Arc<Roster>,
) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_primary: Option<String> = None;
    // A node the primary says is not a member must not call elections: its
    // stale configuration may still name it a voter, and its campaigns
    // would raise the term and unseat the primary when it is added back.
    let mut campaigns = true;
    loop {
        tick.tick().await;
        let m = raft.metrics().borrow_watched().clone();
        let membership = m.membership_config.membership();
        // Every node but the leader asks: a restarted node's Raft names the
        // leader it last voted for even when that leader has since removed it.
        if m.current_leader == Some(config.id) {
            *spare.lock() = None;
            if !campaigns {
                raft.runtime_config().elect(true);
                campaigns = true;
            }
            continue;
        }
        // Whom to ask: the primary last heard of, the founding nodes, the
        // members this node knows of.
        let mut candidates: Vec<String> = last_primary.iter().cloned().collect();
        candidates.extend(config.join.iter().cloned());
        candidates.extend(membership.nodes().filter(|(id, _)| **id != config.id).map(|(_, i)| i.rpc_addr.clone()));
        candidates.retain(|a| *a != config.info.rpc_addr);
        let mut seen = std::collections::HashSet::new();
        candidates.retain(|a| seen.insert(a.clone()));
        let mut i = 0;
        let mut hops = 0;
        while i < candidates.len() {
            let addr = candidates[i].clone();
            i += 1;
            match register(&peers, &addr, &config.info, roster.own_load()).await {
                Ok((Some((primary, info)), member, true)) => {
                    last_primary = Some(addr);
                    if member != campaigns {
                        raft.runtime_config().elect(member);
                        campaigns = member;
                    }
                    *spare.lock() = Some(SpareView { primary, info, member, at: std::time::Instant::now() });
                    break;
                }
                // Not the primary, but it names one: ask that one next.
                Ok((Some((_, info)), _, false)) if hops < 3 => {
                    hops += 1;
                    candidates.insert(i, info.rpc_addr);
                }
                _ => {}
            }
        }
    }
}

/// Keeps the manager's leader hearing from this node: twice a second it
/// reports where it is and its load figures (which is how the manager
/// knows it is alive), to the leader it last reached or, failing that, to
/// any node it knows of, which names the leader. A node the leader says is
/// outside the manager group's configuration does not call the group's
/// elections (its stale configuration may still name it a voter).
///
/// The answer also lists the data groups the directory holds: the node
/// hosts each (its Raft, idle unless the manager makes it a member).
pub(super) async fn report_loop(
    (directory, machine): (DirectoryRaft, DirectoryMachine),
    data: Raft,
    hosting: Arc<RaftGroups>,
    peers: Peers,
    config: ReplicationConfig,
    roster: Arc<Roster>,
) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_leader: Option<String> = None;
    let mut campaigns = true;
    let host = |groups: Vec<(GroupId, Vec<u32>)>| {
        let hosting = hosting.clone();
        async move {
            for (group, streams) in groups {
                if streams.is_empty() {
                    // Removed: whatever is left of it here goes.
                    if let Err(e) = hosting.forget(group).await {
                        tracing::warn!(group, "cannot remove data group {group}: {e}");
                    }
                } else if !hosting.is_hosted(group)
                    && let Err(e) = hosting.host(group, &streams).await
                {
                    tracing::warn!(group, "cannot host data group {group}: {e}");
                }
            }
        }
    };
    loop {
        // A drain asks for a report at once (`Roster::mark_draining`).
        tokio::select! {
            _ = tick.tick() => {}
            _ = roster.report_now.notified() => {}
        }
        let sent = std::time::Instant::now();
        let m = directory.metrics().borrow_watched().clone();
        if m.current_leader == Some(config.id) {
            if !campaigns {
                directory.runtime_config().elect(true);
                campaigns = true;
            }
            roster.leader_heard(sent);
            host(machine.directory().streams.into_iter().collect()).await;
            hosting.campaign_where_member(&roster.outside(config.id));
            continue;
        }
        let mut candidates: Vec<String> = last_leader.iter().cloned().collect();
        let membership = m.membership_config.membership();
        candidates.extend(m.current_leader.and_then(|l| membership.get_node(&l)).map(|i| i.rpc_addr.clone()));
        candidates.extend(config.join.iter().cloned());
        candidates.extend(membership.nodes().map(|(_, i)| i.rpc_addr.clone()));
        let d = data.metrics().borrow_watched().clone();
        candidates.extend(d.membership_config.membership().nodes().map(|(_, i)| i.rpc_addr.clone()));
        candidates.retain(|a| *a != config.info.rpc_addr);
        let mut seen = std::collections::HashSet::new();
        candidates.retain(|a| seen.insert(a.clone()));
        let load = roster.own_load();
        let draining = roster.draining();
        let (mut i, mut hops) = (0, 0);
        while i < candidates.len() {
            let addr = candidates[i].clone();
            i += 1;
            match report(&peers, &addr, &config.info, load, draining).await {
                Ok(r) if r.by_leader => {
                    roster.leader_heard(sent);
                    roster.set_manager_group(r.group, r.leader.map(|(_, info)| info));
                    roster.set_group_primaries(r.primaries);
                    roster.set_draining_nodes(r.draining);
                    last_leader = Some(addr);
                    if r.member != campaigns {
                        directory.runtime_config().elect(r.member);
                        campaigns = r.member;
                    }
                    host(r.groups).await;
                    hosting.campaign_where_member(&r.outside);
                    break;
                }
                // Not the leader, but it names one: ask that one next.
                Ok(r) if hops < 3 && r.leader.is_some() => {
                    hops += 1;
                    candidates.insert(i, r.leader.expect("checked").1.rpc_addr);
                }
                _ => {}
            }
        }
    }
}
