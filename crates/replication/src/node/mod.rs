//! A node's replication, assembled: [`ReplicationNode`] opens the node's
//! engines and shared Raft log, starts the system group and the manager
//! group, serves every subsystem on the node's RPC listener, and runs the
//! partition manager and the node's background loops (`background`).
//! [`Groups`] is the handle the layers above use; `config` says how the
//! node's replication is set up, and `service` answers what only the node
//! as a whole knows. This layer imports every other; none imports it.

mod background;
pub mod config;
pub mod groups;
mod part_routes;
pub mod service;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use openraft::{Config, SnapshotPolicy};
use tessera_engine::{CommitLogSource, EngineConfig, Node};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

pub use self::config::ReplicationConfig;
pub use self::groups::Groups;
use self::service::{NodeService, SessionCounter};
use crate::error::{ReplicationError, Result};
use crate::manager::admin::Administration;
use crate::manager::directory::{Directory, DirectoryMachine, DirectoryRaft};
use crate::manager::directory_link::{DirectoryNetwork, DirectoryService};
use crate::manager::leader::{GroupClassifier, Manager};
use crate::manager::load::LoadMeter;
use crate::manager::roster::Roster;
use crate::manager::service::{AdminService, ManagerService};
use crate::manager::status::StatusSource;
use crate::parts::client::RemoteTxnIds;
use crate::parts::server::{PartServer, PartService};
use crate::raft::commit_log::{Proposals, Router};
use crate::raft::freshness::Freshness;
use crate::raft::group::RaftGroup;
use crate::raft::groups::{RaftGroups, RaftGroupsParts};
use crate::raft::log_store::{MANAGER_LOG, SharedLog};
use crate::raft::quiet::{Quiet, QuietService};
use crate::raft::role::Role;
use crate::raft::role_watch::SpareState;
use crate::raft::service::RaftService;
use crate::raft::state_machine::Raft;
use crate::raft::type_config::Command;
use crate::types::{GroupId, NodeId, NodeInfo};
use crate::wire::{ClusterSecret, Peers, Presence, Services, serve_tracked};

/// A node's replication: its engines, its data groups (the system group
/// and the databases' groups it hosts), its part in the manager group,
/// and the RPC listener its peers reach.
pub struct ReplicationNode {
    pub id: NodeId,
    node: Arc<Node>,
    /// The system group on this node.
    system: Arc<RaftGroup>,
    groups: Arc<RaftGroups>,
    /// The manager group's Raft, and the directory it keeps.
    directory: DirectoryRaft,
    machine: DirectoryMachine,
    /// The log the node's groups share.
    shared_log: Arc<SharedLog>,
    roster: Arc<Roster>,
    /// Other nodes' transactions on the partitions this node leads.
    parts: Arc<PartServer>,
    /// This node's transactions on partitions other nodes lead.
    remote_ids: Arc<RemoteTxnIds>,
    /// The SQL sessions this node serves in each group it leads.
    sessions: SessionCounter,
    /// Whether a group's primary serves SQL sessions (see `Manager`).
    serves_sessions: Arc<OnceLock<GroupClassifier>>,
    /// The replica count a group gets when the directory names none.
    default_replicas: usize,
    runtime: Option<tokio::runtime::Runtime>,
}

/// The manager group's entries kept in memory (they are small and few).
const DIRECTORY_CACHE_BYTES: usize = 1 << 20;

/// The replication layer's runtime: two threads, named for Raft.
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("tessera-raft")
        .enable_all()
        .build()
        .map_err(|e| ReplicationError::Internal(format!("starting the replication runtime: {e}")))
}

/// The data groups' Raft configuration.
fn raft_config(config: &ReplicationConfig) -> Result<Arc<Config>> {
    let config = Config {
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
    };
    Ok(Arc::new(config.validate().map_err(|e| ReplicationError::Internal(format!("Raft configuration: {e}")))?))
}

/// The node's quiet groups. A quiet secondary's refusal must not outlast
/// Raft's own lease on a follower (see `quiet`).
fn quiet(config: &ReplicationConfig) -> Arc<Quiet> {
    let mut timing = config.quiet;
    timing.hold = timing.hold.min(Duration::from_millis(config.election_timeout_ms.1));
    Arc::new(Quiet::new(config.id, timing))
}

/// The manager group: the same timing as the data groups, its part of
/// the node's log, a snapshot of the whole directory every thousand
/// entries.
fn start_directory(
    runtime: &tokio::runtime::Runtime,
    config: &ReplicationConfig,
    raft_config: &Config,
    shared_log: &Arc<SharedLog>,
    peers: &Peers,
) -> Result<(DirectoryRaft, DirectoryMachine)> {
    let log = shared_log.group(MANAGER_LOG, DIRECTORY_CACHE_BYTES);
    let machine = DirectoryMachine::open(&config.dir.with_file_name("manager-snapshot"))?;
    let directory_config = Arc::new(
        Config {
            snapshot_policy: SnapshotPolicy::LogsSinceLast(1_000),
            max_in_snapshot_log_to_keep: 100,
            ..raft_config.clone()
        }
        .validate()
        .map_err(|e| ReplicationError::Internal(format!("Raft configuration: {e}")))?,
    );
    let raft = DirectoryRaft::new(config.id, directory_config, DirectoryNetwork(peers.clone()), log, machine.clone());
    let directory = runtime.block_on(raft).map_err(|e| ReplicationError::Raft(e.to_string()))?;
    Ok((directory, machine))
}

impl ReplicationNode {
    /// Opens the node's engines (empty, in memory: the Raft log is their
    /// durability), replays the log into them, starts Raft and the RPC
    /// listener on `rpc_listener`, and bootstraps the cluster from
    /// `config.join` if it has never been formed. `engine` gives the
    /// engines' settings (its directory is ignored).
    pub fn start(
        config: ReplicationConfig,
        engine: EngineConfig,
        rpc_listener: std::net::TcpListener,
    ) -> Result<ReplicationNode> {
        let runtime = runtime()?;
        // The system group's proposals; the router sends the commits of a
        // stream some other group claims to that group instead.
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
        let raft_config = raft_config(&config)?;
        let groups = RaftGroups::new(RaftGroupsParts {
            settings: config.raft_settings(),
            node: node.clone(),
            shared_log: shared_log.clone(),
            peers: peers.clone(),
            raft_config: raft_config.clone(),
            runtime: runtime.handle().clone(),
            quiet: quiet(&config),
            router,
        });
        let spare = SpareState::default();
        let system = runtime.block_on(groups.start_system(proposals, submitted, spare.clone()))?;
        let (directory, machine) = start_directory(&runtime, &config, &raft_config, &shared_log, &peers)?;
        rpc_listener.set_nonblocking(true).map_err(|e| ReplicationError::Internal(e.to_string()))?;
        let listener = {
            let _enter = runtime.enter();
            TcpListener::from_std(rpc_listener).map_err(|e| ReplicationError::Internal(e.to_string()))?
        };
        let this = ReplicationNode {
            id: config.id,
            node,
            system,
            roster: Arc::new(Roster::new(LoadMeter::new(config.connections.clone()))),
            parts: PartServer::start(groups.clone()),
            groups,
            directory,
            machine,
            shared_log,
            remote_ids: Arc::default(),
            sessions: SessionCounter::default(),
            serves_sessions: Arc::default(),
            default_replicas: config.replicas.max(1),
            runtime: Some(runtime),
        };
        this.serve(listener, config.secret.clone());
        this.spawn_background(&config, spare);
        Ok(this)
    }

    fn runtime(&self) -> &tokio::runtime::Handle {
        &self.groups.runtime
    }

    fn administration(&self) -> Administration {
        Administration {
            raft: self.system.raft.clone(),
            groups: self.groups.clone(),
            roster: self.roster.clone(),
            directory: self.directory.clone(),
            machine: self.machine.clone(),
            peers: self.groups.peers.clone(),
            me: self.id,
        }
    }

    /// Serves every subsystem's requests on `listener`. A caller node whose
    /// last connection closed has died: the transactions its sessions held
    /// open on partitions led here end.
    fn serve(&self, listener: TcpListener, secret: ClusterSecret) {
        let presence = Arc::new(Presence::default());
        let parts = Arc::downgrade(&self.parts);
        presence.on_gone(move |node| {
            if let Some(parts) = parts.upgrade() {
                parts.caller_gone(node);
            }
        });
        let groups = &self.groups;
        let services = Services::default()
            .with(Arc::new(RaftService { groups: groups.clone() }))
            .with(Arc::new(QuietService { quiet: groups.quiet.clone(), hosts: groups.hosts().clone() }))
            .with(Arc::new(DirectoryService { raft: self.directory.clone() }))
            .with(Arc::new(ManagerService {
                groups: groups.clone(),
                roster: self.roster.clone(),
                directory: self.directory.clone(),
                machine: self.machine.clone(),
            }))
            .with(Arc::new(AdminService { admin: self.administration() }))
            .with(Arc::new(PartService { server: self.parts.clone() }))
            .with(Arc::new(NodeService { groups: groups.clone(), sessions: self.sessions.clone() }));
        self.runtime().spawn(serve_tracked(listener, secret, services.handler(), presence));
    }

    /// Starts the node's loops: quiet groups' rounds, the cluster's
    /// formation (a new node), registrations and reports, and the
    /// partition manager.
    fn spawn_background(&self, config: &ReplicationConfig, spare: SpareState) {
        let (groups, peers, raft) = (&self.groups, &self.groups.peers, &self.system.raft);
        let runtime = self.runtime();
        runtime.spawn(groups.quiet.clone().run(groups.hosts().clone(), peers.clone()));
        if self.system.fresh {
            runtime.spawn(background::bootstrap(raft.clone(), self.directory.clone(), peers.clone(), config.clone()));
        }
        runtime.spawn(background::report_loop(
            (self.directory.clone(), self.machine.clone()),
            raft.clone(),
            groups.clone(),
            peers.clone(),
            config.clone(),
            self.roster.clone(),
        ));
        runtime.spawn(background::spare_watch(raft.clone(), peers.clone(), config.clone(), spare, self.roster.clone()));
        let manager = Manager {
            directory: self.directory.clone(),
            machine: self.machine.clone(),
            system: raft.clone(),
            system_role: self.system.role.clone(),
            groups: groups.clone(),
            peers: peers.clone(),
            me: config.id,
            info: config.info.clone(),
            roster: self.roster.clone(),
            replicas: config.replicas.max(1),
            replace_after: config.replace_after,
            primaries_seen: Default::default(),
            moves: Default::default(),
            serves_sessions: self.serves_sessions.clone(),
        };
        runtime.spawn(manager.run());
    }

    pub fn node(&self) -> &Arc<Node> {
        &self.node
    }

    /// Changes of this node's role in the system group.
    pub fn role(&self) -> watch::Receiver<Role> {
        self.system.role.clone()
    }

    /// The system group's Raft on this node.
    pub fn raft(&self) -> &Raft {
        &self.system.raft
    }

    /// The manager group's Raft on this node.
    pub fn manager(&self) -> &DirectoryRaft {
        &self.directory
    }

    /// The manager's directory as this node has applied it (empty on a
    /// node outside the manager group).
    pub fn directory(&self) -> Directory {
        self.machine.directory()
    }

    /// How far behind the system group's primary this node's data may be
    /// (see `freshness`).
    pub fn freshness(&self) -> Arc<Freshness> {
        self.system.freshness.clone()
    }

    pub fn status(&self) -> StatusSource {
        StatusSource { raft: self.system.raft.clone(), roster: self.roster.clone(), directory: self.directory.clone() }
    }

    /// Number of this node's commits to the system group waiting for their outcome.
    pub fn pending_commits(&self) -> usize {
        self.system.proposals.tickets.pending()
    }

    /// Hosts data group `id` on this node for `streams` (engines it opens
    /// on demand): their commits go to this group from now on, and its
    /// snapshots and log are its own (`snapshots-<id>/`, its frames in the
    /// shared log). Every node that is to hold a replica hosts the group;
    /// one of them then forms it ([`ReplicationNode::form`]).
    pub fn host(&self, id: GroupId, streams: &[u32]) -> Result<()> {
        if self.groups.is_hosted(id) {
            return Err(ReplicationError::Refused(format!("group {id} is already hosted here")));
        }
        self.runtime().block_on(self.groups.host(id, streams))
    }

    /// Forms hosted data group `id` with these voters (call on one of them).
    pub fn form(&self, id: GroupId, voters: BTreeMap<NodeId, NodeInfo>) -> Result<()> {
        let raft =
            self.raft_of(id).ok_or_else(|| ReplicationError::Refused(format!("group {id} is not hosted here")))?;
        self.runtime().block_on(raft.initialize(voters)).map_err(|e| ReplicationError::Raft(e.to_string()))
    }

    /// Creates data group `id` over `streams`, keeping `replicas` replicas:
    /// hosted and formed here (this node its first voter and primary), then
    /// recorded in the manager's directory, after which every node hosts
    /// it and the manager builds its other replicas and may move its
    /// primary to spread primaries over the nodes.
    pub fn create_group(&self, id: GroupId, streams: &[u32], replicas: usize) -> Result<()> {
        self.runtime().block_on(self.groups().create(id, streams.to_vec(), replicas.max(1)))
    }

    /// Removes data group `id` from the cluster (see `Groups::remove`).
    pub fn remove_group(&self, id: GroupId) -> Result<()> {
        self.runtime().block_on(self.groups().remove(id))
    }

    /// Whether this node's Raft log holds anything of group `id`.
    pub fn log_holds(&self, id: GroupId) -> bool {
        self.shared_log.holds(id)
    }

    /// A handle on this node's data groups, for the layers above.
    pub fn groups(&self) -> Groups {
        Groups {
            groups: self.groups.clone(),
            admin: self.administration(),
            roster: self.roster.clone(),
            me: self.id,
            default_replicas: self.default_replicas,
            parts: self.parts.clone(),
            remote_ids: self.remote_ids.clone(),
            sessions: self.sessions.clone(),
            serves_sessions: self.serves_sessions.clone(),
        }
    }

    /// Data group `id`'s Raft on this node, if it hosts the group.
    pub fn raft_of(&self, id: GroupId) -> Option<Raft> {
        self.groups.raft_of(id)
    }

    /// Whether data group `id` is quiet on this node (see `quiet`): its
    /// primary here, or a secondary of it here, keeps Raft's timers stopped.
    pub fn is_quiet(&self, id: GroupId) -> bool {
        let quiet = &self.groups.quiet;
        quiet.is_quiet(id) || quiet.is_following(id)
    }

    /// This node's role in data group `id`, if it hosts the group.
    pub fn role_of(&self, id: GroupId) -> Option<watch::Receiver<Role>> {
        self.groups.role_of(id)
    }

    /// Stops Raft and the listener; commits still waiting fail as unknown.
    pub fn shutdown(mut self) -> Result<()> {
        let shutting_down = "the node is shutting down";
        let unknown = "the node shut down before the commit's outcome was known";
        self.system.proposals.set_serving(false, shutting_down);
        let more = self.groups.take_database_groups();
        for g in &more {
            g.proposals.set_serving(false, shutting_down);
        }
        if let Some(rt) = self.runtime.take() {
            for g in &more {
                let _ = rt.block_on(g.raft.shutdown());
                g.proposals.tickets.fail_all(unknown);
            }
            let _ = rt.block_on(self.system.raft.shutdown());
            let _ = rt.block_on(self.directory.shutdown());
            self.system.proposals.tickets.fail_all(unknown);
            rt.shutdown_timeout(Duration::from_secs(2));
        }
        self.shared_log.close()
    }
}

impl Drop for ReplicationNode {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}
