//! The data groups of a node: [`RaftGroups`]. A node hosts the system
//! group ([`SYSTEM_GROUP`]), which replicates every stream no other group
//! claimed, and may host more (a database's home, a keyed database's
//! partition), each over the streams it claims; they share the node's
//! engines, RPC listener and Raft log (`log_store::SharedLog`).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;
use tessera_engine::Node;
use tokio::sync::{mpsc, watch};

use super::commit_log::{Proposals, Router};
use super::freshness::Freshness;
use super::group::{Hosts, RaftGroup, Streams};
use super::log_store::{MANAGER_LOG, SharedLog};
use super::quiet::Quiet;
use super::role::Role;
use super::role_watch::{RoleWatch, SpareState, leads_with_lease, primary_lease};
use super::settings::RaftSettings;
use super::snapshot::SnapshotStore;
use super::state_machine::{Adopt, Owns, Raft, StateMachine};
use super::submit::submit_loop;
use super::transport::GroupNetwork;
use super::type_config::Command;
use crate::error::{ReplicationError, Result};
use crate::types::{GroupId, NodeId, SYSTEM_GROUP};
use crate::wire::Peers;

/// What a group's start needs besides its id (see [`RaftGroups::start_group`]).
pub(crate) struct GroupStart {
    pub proposals: Arc<Proposals>,
    pub submitted: mpsc::UnboundedReceiver<Command>,
    /// The streams it replicates.
    pub owns: Owns,
    /// Makes a stream the group's (None for the system group).
    pub adopt: Option<Adopt>,
    pub streams: Streams,
    /// What registering with the primary tells a node outside the group
    /// (the system group only).
    pub spare: SpareState,
}

/// The data groups a node hosts, and what hosting another needs: shared by
/// the node, its services, the partition manager and the loop that hosts
/// the groups the manager's directory lists.
pub struct RaftGroups {
    pub settings: RaftSettings,
    pub node: Arc<Node>,
    pub shared_log: Arc<SharedLog>,
    pub peers: Peers,
    pub raft_config: Arc<openraft::Config>,
    pub runtime: tokio::runtime::Handle,
    /// The node's quiet groups (see `quiet`).
    pub quiet: Arc<Quiet>,
    hosts: Hosts,
    /// Which group's proposals each engine's commits go to.
    router: Arc<Router>,
    /// The streams the databases' groups claimed (the system group's are the rest).
    claimed: Streams,
    /// One group is started (or removed) at a time.
    starting: tokio::sync::Mutex<()>,
    /// The groups removed from this node since it started (the directory
    /// keeps listing them; each is tidied once).
    forgotten: parking_lot::Mutex<HashSet<GroupId>>,
    /// The groups this node does not campaign in (`campaign_where_member`).
    silent: parking_lot::Mutex<HashSet<GroupId>>,
}

/// What [`RaftGroups::new`] is made of.
pub struct RaftGroupsParts {
    pub settings: RaftSettings,
    pub node: Arc<Node>,
    pub shared_log: Arc<SharedLog>,
    pub peers: Peers,
    pub raft_config: Arc<openraft::Config>,
    pub runtime: tokio::runtime::Handle,
    pub quiet: Arc<Quiet>,
    pub router: Arc<Router>,
}

impl RaftGroups {
    pub fn new(parts: RaftGroupsParts) -> Arc<RaftGroups> {
        let RaftGroupsParts { settings, node, shared_log, peers, raft_config, runtime, quiet, router } = parts;
        Arc::new(RaftGroups {
            settings,
            node,
            shared_log,
            peers,
            raft_config,
            runtime,
            quiet,
            hosts: Hosts::default(),
            router,
            claimed: Streams::default(),
            starting: Default::default(),
            forgotten: Default::default(),
            silent: Default::default(),
        })
    }

    /// Starts the system group, which replicates every stream no other
    /// group claims: `proposals` are those the node's router sends the
    /// commits of every such stream to.
    pub(crate) async fn start_system(
        &self,
        proposals: Arc<Proposals>,
        submitted: mpsc::UnboundedReceiver<Command>,
        spare: SpareState,
    ) -> Result<Arc<RaftGroup>> {
        let owns: Owns = {
            let claimed = self.claimed.clone();
            Arc::new(move |stream| !claimed.read().contains(&stream))
        };
        let start = GroupStart { proposals, submitted, owns, adopt: None, streams: Streams::default(), spare };
        self.start_group(SYSTEM_GROUP, start).await
    }

    /// Any hosted group, the system group included.
    pub fn get(&self, id: GroupId) -> Option<Arc<RaftGroup>> {
        self.hosts.read().get(&id).cloned()
    }

    /// Group `id`, refused when this node does not host it.
    pub fn hosted(&self, id: GroupId) -> Result<Arc<RaftGroup>> {
        self.get(id)
            .ok_or_else(|| ReplicationError::Refused(format!("node {} does not host group {id}", self.settings.id)))
    }

    /// The hosted groups, by id (the system group among them).
    pub fn hosts(&self) -> &Hosts {
        &self.hosts
    }

    /// A database's group hosted here (None for the system group).
    pub fn database_group(&self, id: GroupId) -> Option<Arc<RaftGroup>> {
        self.get(id).filter(|_| id != SYSTEM_GROUP)
    }

    /// The databases' groups hosted here, by id.
    pub fn database_groups(&self) -> Vec<Arc<RaftGroup>> {
        let mut groups: Vec<_> = self.hosts.read().values().filter(|g| g.id != SYSTEM_GROUP).cloned().collect();
        groups.sort_by_key(|g| g.id);
        groups
    }

    pub fn is_hosted(&self, id: GroupId) -> bool {
        id == SYSTEM_GROUP || self.hosts.read().contains_key(&id)
    }

    /// Group `id`'s Raft on this node, if it hosts the group.
    pub fn raft_of(&self, id: GroupId) -> Option<Raft> {
        self.get(id).map(|g| g.raft.clone())
    }

    /// This node's role in group `id`, if it hosts the group.
    pub fn role_of(&self, id: GroupId) -> Option<watch::Receiver<Role>> {
        self.get(id).map(|g| g.role.clone())
    }

    /// Whether `stream` is replicated by the system group (no other claimed it).
    pub fn in_system_group(&self, stream: u32) -> bool {
        !self.claimed.read().contains(&stream)
    }

    /// The database group hosted here that replicates `stream`, if any.
    pub fn group_of_stream(&self, stream: u32) -> Option<GroupId> {
        let hosts = self.hosts.read();
        hosts.values().find(|g| g.id != SYSTEM_GROUP && g.streams.read().contains(&stream)).map(|g| g.id)
    }

    /// Whether this node leads data group `id` with a lease at this moment
    /// (the rule the group's role watch applies every 25 ms, applied now).
    pub fn holds_lease(&self, id: GroupId) -> bool {
        let Some(raft) = self.raft_of(id) else { return false };
        let lease = primary_lease(&self.settings);
        let metrics = raft.metrics();
        let m = metrics.borrow_watched();
        leads_with_lease(&m, self.settings.id, lease, &self.quiet, id)
    }

    fn snapshot_dir(&self, id: GroupId) -> PathBuf {
        if id == SYSTEM_GROUP {
            self.settings.snapshot_dir.clone()
        } else {
            self.settings.snapshot_dir.with_file_name(format!("snapshots-{id}"))
        }
    }

    /// Starts this node's part in data group `id`: its Raft over its part
    /// of the shared log, its state machine over the streams `start.owns`
    /// accepts, the task feeding its proposals to Raft, and the watch on
    /// its role.
    async fn start_group(&self, id: GroupId, start: GroupStart) -> Result<Arc<RaftGroup>> {
        let GroupStart { proposals, submitted, owns, adopt, streams, spare } = start;
        let settings = &self.settings;
        let log = self.shared_log.group(id, settings.log_cache_bytes);
        let fresh = log.is_empty();
        let snapshots = SnapshotStore::open(self.snapshot_dir(id))?;
        let sm = StateMachine::open(
            self.node.clone(),
            proposals.clone(),
            log.clone(),
            snapshots.clone(),
            owns.clone(),
            adopt.clone(),
        )?;
        let freshness = {
            let sm = sm.clone();
            Arc::new(Freshness::new(Arc::new(move || sm.last_applied())))
        };
        let network = GroupNetwork { peers: self.peers.clone(), group: id };
        let raft = Raft::new(settings.id, self.raft_config.clone(), network, log.clone(), sm)
            .await
            .map_err(|e| ReplicationError::Raft(e.to_string()))?;
        let (role_tx, role) = watch::channel(Role::Starting);
        let group = Arc::new(RaftGroup {
            id,
            raft: raft.clone(),
            proposals: proposals.clone(),
            role,
            freshness,
            snapshots,
            appends: Arc::default(),
            fresh,
            streams,
            adopt,
        });
        self.hosts.write().insert(id, group.clone());
        // Raft accepts writes while a quorum answered within its lease
        // (the maximum election timeout).
        let lease = Duration::from_millis(settings.election_timeout_ms.1);
        let wake = (id != SYSTEM_GROUP).then(|| (self.quiet.clone(), id, lease));
        self.runtime.spawn(submit_loop(raft.clone(), proposals.clone(), submitted, wake));
        let watcher = RoleWatch {
            group: id,
            raft,
            node: self.node.clone(),
            log,
            proposals,
            peers: self.peers.clone(),
            settings: settings.clone(),
            spare,
            owns,
            quiet: self.quiet.clone(),
        };
        self.runtime.spawn(watcher.run(role_tx));
        Ok(group)
    }

    /// Hosts data group `id` for `streams` (see `ReplicationNode::host`);
    /// nothing if it is hosted already.
    pub async fn host(&self, id: GroupId, streams: &[u32]) -> Result<()> {
        let _one = self.starting.lock().await;
        if self.is_hosted(id) {
            return Ok(());
        }
        if id == MANAGER_LOG {
            return Err(ReplicationError::Refused(format!("group id {id} is the manager's")));
        }
        let (submit, submitted) = mpsc::unbounded_channel::<Command>();
        let proposals = Proposals::new(self.settings.id, submit);
        let mine = Streams::default();
        let adopt: Adopt = {
            let (mine, claimed, router, proposals) =
                (mine.clone(), self.claimed.clone(), self.router.clone(), proposals.clone());
            Arc::new(move |stream| {
                // Claimed before it is ours: from here on the system group
                // neither replicates nor restores it.
                claimed.write().insert(stream);
                router.claim(&[stream], &proposals);
                if mine.write().insert(stream) {
                    tracing::debug!(group = id, stream, "the group replicates stream {stream}");
                }
            })
        };
        for &stream in streams {
            adopt(stream);
        }
        let owns: Owns = {
            let mine = mine.clone();
            Arc::new(move |stream| mine.read().contains(&stream))
        };
        let start =
            GroupStart { proposals, submitted, owns, adopt: Some(adopt), streams: mine, spare: SpareState::default() };
        self.start_group(id, start).await?;
        tracing::info!(group = id, ?streams, "hosting data group {id}");
        Ok(())
    }

    /// Removes data group `id` from this node for good (its database was
    /// dropped): its Raft stops, commits still waiting fail, its engines
    /// are dropped, its snapshots deleted, and the shared log forgets it.
    /// Its streams stay claimed by the stopped group, so nothing written
    /// to them can reach another group (a stream is never reused). Also
    /// tidies what a node that was away when the group was dropped still
    /// holds of it; nothing when there is nothing of it here.
    pub async fn forget(&self, id: GroupId) -> Result<()> {
        if id == SYSTEM_GROUP || id == MANAGER_LOG {
            return Err(ReplicationError::Refused(format!("group {id} cannot be removed")));
        }
        if self.forgotten.lock().contains(&id) {
            return Ok(());
        }
        let _one = self.starting.lock().await;
        let snapshots = self.snapshot_dir(id);
        let group = self.get(id);
        if group.is_none() && !self.shared_log.holds(id) && !snapshots.exists() {
            self.forgotten.lock().insert(id);
            return Ok(());
        }
        if let Some(group) = &group {
            let why = "the database was dropped";
            group.proposals.set_serving(false, why);
            group.proposals.tickets.fail_all(why);
            let _ = group.raft.shutdown().await;
            self.hosts.write().remove(&id);
        }
        let (node, log) = (self.node.clone(), self.shared_log.clone());
        let streams: Vec<u32> = group.map(|g| g.streams.read().iter().copied().collect()).unwrap_or_default();
        tokio::task::spawn_blocking(move || -> Result<()> {
            for stream in streams {
                node.drop_partition(stream).map_err(|e| ReplicationError::Internal(e.to_string()))?;
            }
            log.forget(id)?;
            match std::fs::remove_dir_all(&snapshots) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(ReplicationError::Internal(format!("removing {}: {e}", snapshots.display())))
                }
                _ => Ok(()),
            }
        })
        .await
        .map_err(|e| ReplicationError::Internal(e.to_string()))??;
        self.forgotten.lock().insert(id);
        tracing::info!(group = id, "removed data group {id} from this node");
        Ok(())
    }

    /// Makes `stream` one of group `id`'s (a keyed database's new
    /// partition) before anything is written to it: its commits go to the
    /// group, which replicates it from then on. The other replicas adopt it
    /// when they apply its first entry (see `StateMachine`), or find it in
    /// a snapshot.
    pub fn adopt(&self, id: GroupId, stream: u32) -> Result<()> {
        let adopt = self.database_group(id).and_then(|g| g.adopt.clone());
        let adopt = adopt.ok_or_else(|| ReplicationError::Refused(format!("group {id} is not hosted here")))?;
        adopt(stream);
        Ok(())
    }

    /// Lets this node campaign in every hosted database group except those
    /// in `outside`, whose configuration (as the manager last saw it from
    /// their primaries) leaves it out: a replica moved off this node is not
    /// told by Raft, and its elections would only be refused. Added back
    /// (the group's next member list names it), it campaigns again.
    pub fn campaign_where_member(&self, outside: &[GroupId]) {
        let hosted = self.database_groups();
        let mut silent = self.silent.lock();
        for g in hosted {
            let (group, out) = (g.id, outside.contains(&g.id));
            if out != silent.contains(&group) {
                g.raft.runtime_config().elect(!out);
                if out {
                    tracing::debug!(group, "this node is not in data group {group}: it does not campaign there");
                    silent.insert(group);
                } else {
                    silent.remove(&group);
                }
            }
        }
    }

    /// Takes the databases' groups off this node's hosts, for its shutdown.
    pub(crate) fn take_database_groups(&self) -> Vec<Arc<RaftGroup>> {
        let mut hosts = self.hosts.write();
        let ids: Vec<GroupId> = hosts.keys().copied().filter(|g| *g != SYSTEM_GROUP).collect();
        ids.into_iter().filter_map(|id| hosts.remove(&id)).collect()
    }

    /// Hands group `id`'s primary role (held here) to node `to`, gently:
    /// new commits are refused at once (nothing written, so the client may
    /// retry) and those in flight get their answers before the role moves,
    /// so that a planned move costs a client a retry rather than a commit
    /// of unknown outcome. If the role has not moved within 3 s, this node
    /// serves again.
    pub async fn hand_over(&self, id: GroupId, to: NodeId) -> Result<()> {
        let group = self.get(id).ok_or_else(|| ReplicationError::Refused(format!("group {id} is not hosted here")))?;
        let me = self.settings.id;
        self.quiet.hand_over(id, &group.raft);
        let serving = group.proposals.is_serving();
        if serving {
            settle_before_hand_over(id, &group.proposals).await;
        }
        let moved = group.raft.trigger().transfer_leader(to).await.map_err(|e| ReplicationError::Raft(e.to_string()));
        if serving {
            let (raft, proposals) = (group.raft.clone(), group.proposals.clone());
            tokio::spawn(async move {
                let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
                loop {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let m = raft.metrics().borrow_watched().clone();
                    if m.current_leader != Some(me) || m.state != openraft::ServerState::Leader {
                        return; // It moved: the role watch takes it from here.
                    }
                    if tokio::time::Instant::now() >= deadline {
                        tracing::warn!(group = id, to, "the primary's role did not move; this node serves again");
                        proposals.set_serving(true, "");
                        proposals.gate.set_handing_over(false);
                        return;
                    }
                }
            });
        }
        moved
    }
}

/// How long a hand-over waits for the transactions under way on the
/// primary to end before it refuses their commits.
const SETTLE: Duration = Duration::from_secs(2);

/// The first steps of a hand-over of group `id`'s primary role: sessions
/// hold their next transaction from now on, the ones under way get a
/// moment to end (committing here), then new commits are refused and
/// those in flight get up to a second for their answers.
async fn settle_before_hand_over(id: GroupId, proposals: &Proposals) {
    proposals.gate.set_handing_over(true);
    let left = proposals.gate.settle(SETTLE).await;
    if left > 0 {
        tracing::info!(group = id, left, "handing the primary role over with transactions still open");
    }
    proposals.set_serving(false, "the primary is handing its role to another node");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
    while proposals.tickets.pending() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
