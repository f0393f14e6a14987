//! Spreading the data groups' primaries over the nodes.

use std::collections::HashMap;

use tessera_cluster::{Action, ClusterMap, PartitionInfo, Replica, balance_primaries};

use super::leader::Manager;
use super::messages::{ManagerMessage, ManagerReply};
use super::placement::add_node;
use super::view::{CAUGHT_UP, GroupView};
use crate::error::ReplicationError;
use crate::types::{GroupId, NodeId, SYSTEM_GROUP};

/// A primary that changed within this long is not moved to spread
/// primaries: it was just elected, or put there on purpose (a split makes
/// the node running it its partition's primary), and moving it back at
/// once would undo that work.
const STAY: std::time::Duration = std::time::Duration::from_secs(10);

impl Manager {
    /// Spreads the data groups' primaries over the nodes (the paper's
    /// Fig. 2): when some node leads at least two groups more than another
    /// node holding an up-to-date replica of one of them, that group's
    /// primary moves there. One move per round, so each is seen through;
    /// returns whether one was asked for.
    pub(super) async fn balance(&self, views: &[(GroupId, GroupView)]) -> bool {
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
                // The system group's primary (the cluster's catalog, and
                // the sessions of `tessera`, `postgres` and keyed
                // databases) stays where it is: only the databases' own
                // groups move, as they are small and their sessions few.
                let role = if m.id == view.leader {
                    tessera_cluster::Role::Primary
                } else if m.voter && m.answered && *group != SYSTEM_GROUP && !stays {
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
                serves_sessions: self.serves_sessions.get().is_none_or(|serves| serves(*group)),
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
            self.groups.hand_over(group, to).await
        } else {
            match self.call(&leader.info.rpc_addr, ManagerMessage::Lead { group, to }).await {
                Ok(ManagerReply::Done(_)) => Ok(()),
                Ok(_) => Err(ReplicationError::Codec("unexpected reply to a move of the primary".into())),
                Err(e) => Err(e),
            }
        };
        if let Err(e) = moved {
            tracing::warn!(group, "moving data group {group}'s primary to node {to} did not work: {e}");
        }
        true
    }
}
