//! A node group: the nodes that replicate one Raft log, and this node's
//! part in it — its Raft, its log store, its state machine (the engines),
//! its RPC listener, and its *role*, which tells the SQL front end whether
//! to serve clients here, forward them to the primary, or refuse them.

pub mod groups;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;
use openraft::{Config, SnapshotPolicy};
use tessera_engine::{CommitLogSource, EngineConfig, Node};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::error::{ReplicationError, Result};
use crate::manager::directory::{DirectoryMachine, DirectoryRaft};
use crate::manager::directory_link::DirectoryPeers;
use crate::manager::leader::{Manager, Roster, manager_size};
use crate::raft::commit_log::{Proposals, Router};
use crate::raft::group::{DataGroup, GroupContext, Hosting, SpareState, SpareView};
use crate::raft::log_store::{MANAGER_LOG, SharedLog};
use crate::raft::network::{Hosts, Services, handler};
use crate::raft::state_machine::Owns;
use crate::raft::type_config::{Command, Raft};
use crate::types::{DATA_GROUP, GroupId, NodeId, NodeInfo};
use crate::wire::Peers;
use crate::wire::{self as rpc, ClusterSecret};

/// How this node takes part in the group, as the front end needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Not yet part of a working group (bootstrapping, or replaying its log).
    Starting,
    /// The primary: leader, caught up, with a quorum. Serve clients here.
    Primary,
    /// A secondary that knows the primary: forward clients there.
    Secondary { primary: NodeId, info: NodeInfo },
    /// No primary this node can name (an election is running, or the
    /// group lost its quorum): refuse clients, with this reason.
    Unavailable(String),
}

#[derive(Debug, Clone)]
pub struct GroupConfig {
    pub id: NodeId,
    pub info: NodeInfo,
    /// Where the Raft log lives.
    pub dir: PathBuf,
    /// RPC addresses of the group's founding members (may include this
    /// node's own); empty for a group of one.
    pub join: Vec<String>,
    pub secret: ClusterSecret,
    /// Raft timing, in milliseconds.
    pub heartbeat_ms: u64,
    pub election_timeout_ms: (u64, u64),
    /// Bytes of recent log entries kept in memory (older ones are read
    /// back from disk when a replica needs them).
    pub log_cache_bytes: usize,
    /// Where snapshots live.
    pub snapshot_dir: PathBuf,
    /// A snapshot is built after this many entries since the last one
    /// (0: never; the log then grows without bound).
    pub snapshot_every: u64,
    /// Entries kept in the log below the newest snapshot, so that a
    /// replica slightly behind catches up from the log rather than by a
    /// whole snapshot.
    pub log_kept_below_snapshot: u64,
    /// Dial the second address to reach the node that advertises the
    /// first (a tunnel, another interface; the fault tests put a proxy
    /// between every pair of nodes this way).
    pub routes: Vec<(String, String)>,
    /// Voting replicas the group keeps (the founding nodes beyond this
    /// many are spares; see `manager`).
    pub replicas: usize,
    /// A voter unreachable this long is replaced by a spare, if there is one.
    pub replace_after: Duration,
    /// The node's count of client connections (a load figure).
    pub connections: Arc<AtomicUsize>,
    /// When the databases' groups go quiet, and how their primaries keep
    /// their leases meanwhile (see `quiet`).
    pub quiet: crate::raft::quiet::QuietTiming,
}

impl GroupConfig {
    pub fn new(id: NodeId, info: NodeInfo, dir: PathBuf, secret: ClusterSecret) -> GroupConfig {
        GroupConfig {
            id,
            info,
            snapshot_dir: dir.with_file_name("snapshots"),
            dir,
            join: Vec::new(),
            secret,
            // A follower calls an election between 0.9 and 1.2 s after
            // the primary's last heartbeat (lease + timeout).
            heartbeat_ms: 50,
            election_timeout_ms: (300, 600),
            log_cache_bytes: crate::raft::log_store::CACHE_BYTES,
            snapshot_every: 20_000,
            log_kept_below_snapshot: 5_000,
            routes: Vec::new(),
            replicas: 3,
            replace_after: Duration::from_secs(30),
            connections: Arc::default(),
            quiet: crate::raft::quiet::QuietTiming::for_election_timeout(Duration::from_millis(600)),
        }
    }
}

pub struct Group {
    pub id: NodeId,
    node: Arc<Node>,
    raft: Raft,
    /// The manager group's Raft, and the log the node's groups share.
    directory: DirectoryRaft,
    shared_log: Arc<SharedLog>,
    machine: DirectoryMachine,
    proposals: Arc<Proposals>,
    role: watch::Receiver<Role>,
    freshness: Arc<crate::raft::freshness::Freshness>,
    roster: Arc<Roster>,
    /// The data groups hosted besides the first.
    hosting: Arc<Hosting>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Group {
    /// Opens the node's engines (empty, in memory: the Raft log is their
    /// durability), replays the log into them, starts Raft and the RPC
    /// listener on `rpc_listener`, and bootstraps the group from
    /// `config.join` if it has never been formed. `engine` gives the
    /// engines' settings (its directory is ignored).
    pub fn start(config: GroupConfig, engine: EngineConfig, rpc_listener: std::net::TcpListener) -> Result<Group> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tessera-raft")
            .enable_all()
            .build()
            .map_err(|e| ReplicationError::Internal(format!("starting the replication runtime: {e}")))?;
        let (submit, submitted) = mpsc::unbounded_channel::<Command>();
        let proposals = Proposals::new(config.id, submit);
        let router = Router::new(proposals.clone());
        let source = {
            let router = router.clone();
            CommitLogSource(Arc::new(move |stream| Box::new(router.commit_log(stream))))
        };
        let node = Arc::new(Node::open(EngineConfig { dir: None, commit_log: Some(source), ..engine })?);
        // One log for the node's groups: the data groups' and the manager's.
        let shared_log = SharedLog::open(&config.dir, config.log_cache_bytes)?;
        let peers = Peers::new(config.id, config.secret.clone()).with_routes(&config.routes);
        let raft_config = Arc::new(
            Config {
                cluster_name: "tessera".into(),
                heartbeat_interval: config.heartbeat_ms,
                election_timeout_min: config.election_timeout_ms.0,
                election_timeout_max: config.election_timeout_ms.1,
                // A snapshot (checkpoints built from the log) lets the log
                // be purged below it, bounds a restart's replay, and
                // rebuilds a replica too far behind for the log.
                snapshot_policy: match config.snapshot_every {
                    0 => SnapshotPolicy::Never,
                    n => SnapshotPolicy::LogsSinceLast(n),
                },
                max_in_snapshot_log_to_keep: config.log_kept_below_snapshot,
                // A node that was cut off does not inflate the term and
                // depose a healthy primary when it returns.
                enable_pre_vote: Some(true),
                ..Default::default()
            }
            .validate()
            .map_err(|e| ReplicationError::Internal(format!("Raft configuration: {e}")))?,
        );
        let context = GroupContext {
            config: config.clone(),
            node: node.clone(),
            shared_log: shared_log.clone(),
            peers: peers.clone(),
            raft_config: raft_config.clone(),
            hosts: Hosts::default(),
            runtime: runtime.handle().clone(),
            quiet: Arc::new(crate::raft::quiet::Quiet::new(config.id, {
                // A quiet secondary's refusal must not outlast Raft's own
                // lease on a follower (see `quiet`).
                let mut timing = config.quiet;
                timing.hold = timing.hold.min(Duration::from_millis(config.election_timeout_ms.1));
                timing
            })),
        };
        // The first data group replicates every stream no other group claims.
        let claimed: Arc<parking_lot::RwLock<HashSet<u32>>> = Arc::default();
        let owns: Owns = {
            let claimed = claimed.clone();
            Arc::new(move |stream| !claimed.read().contains(&stream))
        };
        let spare = SpareState::default();
        let first = runtime.block_on(context.start_group(
            DATA_GROUP,
            proposals.clone(),
            submitted,
            owns,
            None,
            spare.clone(),
        ))?;
        let raft = first.raft.clone();
        let hosting = Arc::new(Hosting::new(context, router, claimed));
        // The manager group: the same timing, its part of the node's log, a
        // snapshot of the whole directory every thousand entries.
        let directory_log = shared_log.group(MANAGER_LOG, DIRECTORY_CACHE_BYTES);
        let machine = DirectoryMachine::open(&config.dir.with_file_name("manager-snapshot"))?;
        let directory_config = Arc::new(
            Config {
                snapshot_policy: SnapshotPolicy::LogsSinceLast(1_000),
                max_in_snapshot_log_to_keep: 100,
                ..(*raft_config).clone()
            }
            .validate()
            .map_err(|e| ReplicationError::Internal(format!("Raft configuration: {e}")))?,
        );
        let directory = runtime
            .block_on(DirectoryRaft::new(
                config.id,
                directory_config,
                DirectoryPeers(peers.clone()),
                directory_log,
                machine.clone(),
            ))
            .map_err(|e| ReplicationError::Raft(e.to_string()))?;
        rpc_listener.set_nonblocking(true).map_err(|e| ReplicationError::Internal(e.to_string()))?;
        let listener = {
            let _enter = runtime.enter();
            TcpListener::from_std(rpc_listener).map_err(|e| ReplicationError::Internal(e.to_string()))?
        };
        let roster = Arc::new(Roster::new(crate::manager::load::LoadMeter::new(config.connections.clone())));
        // A caller node whose last connection closed has died: the
        // transactions its sessions held open on partitions led here end.
        let presence = Arc::new(rpc::Presence::default());
        let parts = Arc::downgrade(&hosting.parts);
        presence.on_gone(move |node| {
            if let Some(parts) = parts.upgrade() {
                parts.caller_gone(node);
            }
        });
        runtime.spawn(rpc::serve_tracked(
            listener,
            config.secret.clone(),
            handler(Services {
                hosts: hosting.context.hosts.clone(),
                id: config.id,
                info: config.info.clone(),
                peers: peers.clone(),
                roster: roster.clone(),
                directory: directory.clone(),
                machine: machine.clone(),
                sessions: hosting.sessions.clone(),
                quiet: hosting.context.quiet.clone(),
                parts: hosting.parts.clone(),
            }),
            presence,
        ));
        runtime.spawn(hosting.context.quiet.clone().run(hosting.context.hosts.clone(), peers.clone()));
        if first.fresh {
            runtime.spawn(bootstrap(raft.clone(), directory.clone(), peers.clone(), config.clone()));
        }
        runtime.spawn(report_loop(
            (directory.clone(), machine.clone()),
            raft.clone(),
            hosting.clone(),
            peers.clone(),
            config.clone(),
            roster.clone(),
        ));
        runtime.spawn(spare_watch(raft.clone(), peers.clone(), config.clone(), spare, roster.clone()));
        let role = first.role.clone();
        let manager = Manager {
            directory: directory.clone(),
            machine: machine.clone(),
            data: raft.clone(),
            role: role.clone(),
            hosting: hosting.clone(),
            peers: peers.clone(),
            me: config.id,
            info: config.info.clone(),
            roster: roster.clone(),
            replicas: config.replicas.max(1),
            replace_after: config.replace_after,
            primaries_seen: Default::default(),
            moves: Default::default(),
        };
        runtime.spawn(manager.run());
        Ok(Group {
            id: config.id,
            node,
            raft,
            directory,
            shared_log,
            machine,
            proposals,
            role,
            freshness: first.freshness,
            roster,
            hosting,
            runtime: Some(runtime),
        })
    }

    pub fn node(&self) -> &Arc<Node> {
        &self.node
    }

    /// Changes of this node's role.
    pub fn role(&self) -> watch::Receiver<Role> {
        self.role.clone()
    }

    pub fn raft(&self) -> &Raft {
        &self.raft
    }

    /// The manager group's Raft on this node.
    pub fn manager(&self) -> &DirectoryRaft {
        &self.directory
    }

    /// The manager's directory as this node has applied it (empty on a
    /// node outside the manager group).
    pub fn directory(&self) -> crate::manager::directory::Directory {
        self.machine.directory()
    }

    /// How far behind the primary this node's data may be (see `freshness`).
    pub fn freshness(&self) -> Arc<crate::raft::freshness::Freshness> {
        self.freshness.clone()
    }

    pub fn status(&self) -> crate::manager::status::StatusSource {
        crate::manager::status::StatusSource {
            raft: self.raft.clone(),
            roster: self.roster.clone(),
            directory: self.directory.clone(),
        }
    }

    /// Number of this node's commits waiting for their outcome.
    pub fn pending_commits(&self) -> usize {
        self.proposals.tickets.pending()
    }

    /// Hosts data group `id` on this node for `streams` (engines it opens
    /// on demand): their commits go to this group from now on, and its
    /// snapshots and log are its own (`snapshots-<id>/`, its frames in the
    /// shared log). Every node that is to hold a replica hosts the group;
    /// one of them then forms it ([`Group::form`]).
    pub fn host(&self, id: GroupId, streams: &[u32]) -> Result<()> {
        if self.hosting.is_hosted(id) {
            return Err(ReplicationError::Refused(format!("group {id} is already hosted here")));
        }
        self.hosting.context.runtime.block_on(self.hosting.host(id, streams))
    }

    /// Forms hosted data group `id` with these voters (call on one of them).
    pub fn form(&self, id: GroupId, voters: BTreeMap<NodeId, NodeInfo>) -> Result<()> {
        let raft =
            self.raft_of(id).ok_or_else(|| ReplicationError::Refused(format!("group {id} is not hosted here")))?;
        self.hosting
            .context
            .runtime
            .block_on(raft.initialize(voters))
            .map_err(|e| ReplicationError::Raft(e.to_string()))
    }

    /// Creates data group `id` over `streams`, keeping `replicas` replicas:
    /// hosted and formed here (this node its first voter and primary), then
    /// recorded in the manager's directory, after which every node hosts
    /// it and the manager builds its other replicas and may move its
    /// primary to spread primaries over the nodes.
    pub fn create_group(&self, id: GroupId, streams: &[u32], replicas: usize) -> Result<()> {
        self.hosting.context.runtime.block_on(self.groups().create(id, streams.to_vec(), replicas.max(1)))
    }

    /// Removes data group `id` from the cluster (see `Groups::remove`).
    pub fn remove_group(&self, id: GroupId) -> Result<()> {
        self.hosting.context.runtime.block_on(self.groups().remove(id))
    }

    /// Whether this node's Raft log holds anything of group `id`.
    pub fn log_holds(&self, id: GroupId) -> bool {
        self.hosting.context.shared_log.holds(id)
    }

    /// A handle on this node's data groups, for the layers above.
    pub fn groups(&self) -> crate::node::groups::Groups {
        crate::node::groups::Groups {
            hosting: self.hosting.clone(),
            directory: self.directory.clone(),
            machine: self.machine.clone(),
            roster: self.roster.clone(),
            me: self.id,
            first_role: self.role.clone(),
            first_freshness: self.freshness.clone(),
            default_replicas: self.hosting.context.config.replicas.max(1),
        }
    }

    /// Data group `id`'s Raft on this node, if it hosts the group.
    pub fn raft_of(&self, id: GroupId) -> Option<Raft> {
        if id == DATA_GROUP {
            return Some(self.raft.clone());
        }
        self.hosting.raft_of(id)
    }

    /// Whether data group `id` is quiet on this node (see `quiet`): its
    /// primary here, or a secondary of it here, keeps Raft's timers stopped.
    pub fn is_quiet(&self, id: GroupId) -> bool {
        let quiet = &self.hosting.context.quiet;
        quiet.is_quiet(id) || quiet.is_following(id)
    }

    /// This node's role in data group `id`, if it hosts the group.
    pub fn role_of(&self, id: GroupId) -> Option<watch::Receiver<Role>> {
        if id == DATA_GROUP {
            return Some(self.role.clone());
        }
        self.hosting.role_of(id)
    }

    /// Stops Raft and the listener; commits still waiting fail as unknown.
    pub fn shutdown(mut self) -> Result<()> {
        self.proposals.set_serving(false, "the node is shutting down");
        let more: Vec<DataGroup> = std::mem::take(&mut *self.hosting.more.lock()).into_values().collect();
        for g in &more {
            g.proposals.set_serving(false, "the node is shutting down");
        }
        if let Some(rt) = self.runtime.take() {
            for g in &more {
                let _ = rt.block_on(g.raft.shutdown());
                g.proposals.tickets.fail_all("the node shut down before the commit's outcome was known");
            }
            let _ = rt.block_on(self.raft.shutdown());
            let _ = rt.block_on(self.directory.shutdown());
            self.proposals.tickets.fail_all("the node shut down before the commit's outcome was known");
            rt.shutdown_timeout(Duration::from_secs(2));
        }
        self.shared_log.close()
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// The manager group's entries kept in memory (they are small and few).
const DIRECTORY_CACHE_BYTES: usize = 1 << 20;

/// Forms the cluster the first time: asks every `--join` address who it
/// is, and once all have answered, the node with the lowest id proposes the
/// memberships, spread across failure domains: first the manager group's
/// (3 of them, 5 when there are 5 or more), then the data group's
/// (`replicas` of them; the rest are spares). The manager group is formed
/// first, so a data group that exists always has one. The others wait to
/// hear from the leaders that emerge. A node joining a cluster already
/// formed does nothing here: it registers with the primary as a spare
/// (`spare_watch`) and reports to the manager (`report_loop`).
async fn bootstrap(raft: Raft, directory: DirectoryRaft, peers: Peers, config: GroupConfig) {
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
            match peers.hello(addr).await {
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
                let managers =
                    crate::manager::leader::founding_voters(&members, config.id, manager_size(members.len()));
                tracing::info!(voters = ?managers.keys().collect::<Vec<_>>(), "forming the manager group");
                if let Err(e) = directory.initialize(managers).await {
                    tracing::info!("manager group already formed: {e}");
                }
                let voters = crate::manager::leader::founding_voters(&members, config.id, config.replicas.max(1));
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
async fn spare_watch(raft: Raft, peers: Peers, config: GroupConfig, spare: SpareState, roster: Arc<Roster>) {
    let mut tick = tokio::time::interval(crate::manager::leader::TICK);
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
            match peers.register(&addr, &config.info, roster.own_load()).await {
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
async fn report_loop(
    (directory, machine): (DirectoryRaft, DirectoryMachine),
    data: Raft,
    hosting: Arc<Hosting>,
    peers: Peers,
    config: GroupConfig,
    roster: Arc<Roster>,
) {
    let mut tick = tokio::time::interval(crate::manager::leader::TICK);
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
            match peers.report(&addr, &config.info, load, draining).await {
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
