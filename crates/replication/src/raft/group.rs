//! One data group on this node: its Raft, its state machine over the
//! engines (streams) it replicates, its proposals, and this node's *role*
//! in it. A node hosts the first data group ([`DATA_GROUP`]), which
//! replicates every stream no other group claimed, and may host more
//! (`Group::host`), each over the streams it claims; they share the node's
//! engines, RPC listener and Raft log (`log_store::SharedLog`).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use openraft::Instant as _;
use openraft::async_runtime::WatchReceiver;
use openraft::{ReadPolicy, ServerState};
use tessera_engine::{Node, SYSTEM_STREAM};
use tokio::sync::{mpsc, watch};

use crate::error::{ReplicationError, Result};
use crate::node::{GroupConfig, Role};
use crate::raft::commit_log::{Outcome, Proposals, Router};
use crate::raft::log_store::{LogStore, SharedLog};
use crate::raft::network::{GroupPeers, Hosted, Hosts};
use crate::raft::snapshot::SnapshotStore;
use crate::raft::state_machine::{Owns, StateMachine};
use crate::raft::type_config::{Command, Raft};
use crate::types::{DATA_GROUP, GroupId, NodeId, NodeInfo};
use crate::wire::Peers;

/// What every data group of a node shares.
#[derive(Clone)]
pub(crate) struct GroupContext {
    pub config: GroupConfig,
    pub node: Arc<Node>,
    pub shared_log: Arc<SharedLog>,
    pub peers: Peers,
    pub raft_config: Arc<openraft::Config>,
    pub hosts: Hosts,
    pub runtime: tokio::runtime::Handle,
    /// The node's quiet groups (see `quiet`).
    pub quiet: Arc<crate::raft::quiet::Quiet>,
}

/// The data groups a node hosts besides the first, and what hosting
/// another needs. Shared by the node (`Group`) and the loop that hosts
/// the groups the manager's directory lists.
/// Tells something of a group by its id (see `Hosting::serves_sessions`).
pub type GroupClassifier = Arc<dyn Fn(GroupId) -> bool + Send + Sync>;

pub(crate) struct Hosting {
    pub context: GroupContext,
    pub router: Arc<Router>,
    /// The streams these groups claimed (the first group's are the rest).
    pub claimed: Arc<parking_lot::RwLock<HashSet<u32>>>,
    pub more: parking_lot::Mutex<BTreeMap<GroupId, DataGroup>>,
    /// One group is started at a time.
    starting: tokio::sync::Mutex<()>,
    /// The SQL sessions this node serves in each group it leads.
    pub sessions: crate::raft::network::SessionCounter,
    /// Whether a group's primary serves SQL sessions (set by the server;
    /// unset, every group's does): balancing moves the others first.
    pub serves_sessions: std::sync::OnceLock<GroupClassifier>,
    /// The groups removed from this node since it started (the directory
    /// keeps listing them; each is tidied once).
    forgotten: parking_lot::Mutex<HashSet<GroupId>>,
    /// The groups this node does not campaign in (`campaign_where_member`).
    silent: parking_lot::Mutex<HashSet<GroupId>>,
    /// Other nodes' transactions on the partitions this node leads.
    pub parts: Arc<crate::parts::server::PartServer>,
    /// This node's transactions on partitions other nodes lead: their
    /// numbers, and this process's incarnation (random per start).
    pub remote_seq: std::sync::atomic::AtomicU64,
    pub incarnation: u64,
}

impl Hosting {
    pub fn new(context: GroupContext, router: Arc<Router>, claimed: Arc<parking_lot::RwLock<HashSet<u32>>>) -> Self {
        let mut bytes = [0u8; 8];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).expect("system randomness");
        Hosting {
            parts: crate::parts::server::PartServer::start(context.clone()),
            context,
            router,
            claimed,
            more: Default::default(),
            starting: Default::default(),
            sessions: Default::default(),
            serves_sessions: Default::default(),
            forgotten: Default::default(),
            silent: Default::default(),
            remote_seq: Default::default(),
            incarnation: u64::from_le_bytes(bytes),
        }
    }

    pub fn is_hosted(&self, id: GroupId) -> bool {
        id == DATA_GROUP || self.more.lock().contains_key(&id)
    }

    /// Hosts data group `id` for `streams` (see `Group::host`); nothing
    /// if it is hosted already.
    pub async fn host(&self, id: GroupId, streams: &[u32]) -> Result<()> {
        let _one = self.starting.lock().await;
        if self.is_hosted(id) {
            return Ok(());
        }
        if id == crate::raft::log_store::MANAGER_LOG {
            return Err(ReplicationError::Refused(format!("group id {id} is the manager's")));
        }
        let (submit, submitted) = mpsc::unbounded_channel::<Command>();
        let proposals = Proposals::new(self.context.config.id, submit);
        let mine: Arc<parking_lot::RwLock<HashSet<u32>>> = Arc::default();
        let adopt: Adopt = {
            let (mine, claimed, router, proposals) =
                (mine.clone(), self.claimed.clone(), self.router.clone(), proposals.clone());
            Arc::new(move |stream| {
                // Claimed before it is ours: from here on the first group
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
        let mut group = self
            .context
            .start_group(id, proposals, submitted, owns, Some(adopt.clone()), SpareState::default())
            .await?;
        group.streams = mine;
        group.adopt = Some(adopt);
        tracing::info!(group = id, ?streams, "hosting data group {id}");
        self.more.lock().insert(id, group);
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
        if id == DATA_GROUP || id == crate::raft::log_store::MANAGER_LOG {
            return Err(ReplicationError::Refused(format!("group {id} cannot be removed")));
        }
        if self.forgotten.lock().contains(&id) {
            return Ok(());
        }
        let _one = self.starting.lock().await;
        let snapshots = self.context.config.snapshot_dir.with_file_name(format!("snapshots-{id}"));
        let group = self.more.lock().remove(&id);
        if group.is_none() && !self.context.shared_log.holds(id) && !snapshots.exists() {
            self.forgotten.lock().insert(id);
            return Ok(());
        }
        if let Some(group) = &group {
            let why = "the database was dropped";
            group.proposals.set_serving(false, why);
            group.proposals.tickets.fail_all(why);
            let _ = group.raft.shutdown().await;
            self.context.hosts.write().remove(&id);
        }
        let (node, log) = (self.context.node.clone(), self.context.shared_log.clone());
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
        let adopt = self.more.lock().get(&id).and_then(|g| g.adopt.clone());
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
        let hosted: Vec<(GroupId, Raft)> = self.more.lock().iter().map(|(g, h)| (*g, h.raft.clone())).collect();
        let mut silent = self.silent.lock();
        for (group, raft) in hosted {
            let out = outside.contains(&group);
            if out != silent.contains(&group) {
                raft.runtime_config().elect(!out);
                if out {
                    tracing::debug!(group, "this node is not in data group {group}: it does not campaign there");
                    silent.insert(group);
                } else {
                    silent.remove(&group);
                }
            }
        }
    }

    pub fn raft_of(&self, id: GroupId) -> Option<Raft> {
        self.more.lock().get(&id).map(|g| g.raft.clone())
    }

    pub fn role_of(&self, id: GroupId) -> Option<watch::Receiver<Role>> {
        self.more.lock().get(&id).map(|g| g.role.clone())
    }
}

/// A data group as this node takes part in it.
pub(crate) struct DataGroup {
    pub raft: Raft,
    pub proposals: Arc<Proposals>,
    pub role: watch::Receiver<Role>,
    pub freshness: Arc<crate::raft::freshness::Freshness>,
    /// Its log held nothing when the node started (a new node).
    pub fresh: bool,
    /// The streams it claimed (none for the first group, which has the
    /// rest); it adopts more as they appear in its log.
    pub streams: Arc<parking_lot::RwLock<HashSet<u32>>>,
    /// Makes a stream the group's (None for the first group).
    pub adopt: Option<Adopt>,
}

/// Makes a stream one of a group's: its commits are proposed to the group,
/// and the group replicates, snapshots and restores it.
pub(crate) type Adopt = Arc<dyn Fn(u32) + Send + Sync>;

impl GroupContext {
    /// Whether this node leads data group `id` with a lease at this moment
    /// (the rule the group's role watch applies every 25 ms, applied now).
    pub fn holds_lease(&self, id: GroupId) -> bool {
        let Some(raft) = self.hosts.read().get(&id).map(|h| h.raft.clone()) else { return false };
        let lease = primary_lease(&self.config);
        let metrics = raft.metrics();
        let m = metrics.borrow_watched();
        leads_with_lease(&m, self.config.id, lease, &self.quiet, id)
    }

    /// Starts this node's part in data group `id`: its Raft over its part
    /// of the shared log, its state machine over the streams `owns`
    /// accepts, the task feeding `submitted` proposals to Raft, and the
    /// watch on its role. `spare` is what registering with the primary
    /// tells a node outside the group (the first group only).
    pub async fn start_group(
        &self,
        id: GroupId,
        proposals: Arc<Proposals>,
        submitted: mpsc::UnboundedReceiver<Command>,
        owns: Owns,
        adopt: Option<Adopt>,
        spare: SpareState,
    ) -> Result<DataGroup> {
        let config = &self.config;
        let log = self.shared_log.group(id, config.log_cache_bytes);
        let fresh = log.is_empty();
        let snapshot_dir = if id == DATA_GROUP {
            config.snapshot_dir.clone()
        } else {
            config.snapshot_dir.with_file_name(format!("snapshots-{id}"))
        };
        let snapshots = SnapshotStore::open(&snapshot_dir)?;
        let sm = StateMachine::open(
            self.node.clone(),
            proposals.clone(),
            log.clone(),
            snapshots.clone(),
            owns.clone(),
            adopt,
        )?;
        let freshness = {
            let sm = sm.clone();
            Arc::new(crate::raft::freshness::Freshness::new(Arc::new(move || sm.last_applied())))
        };
        let network = GroupPeers { peers: self.peers.clone(), group: id };
        let raft = Raft::new(config.id, self.raft_config.clone(), network, log.clone(), sm)
            .await
            .map_err(|e| ReplicationError::Raft(e.to_string()))?;
        self.hosts.write().insert(
            id,
            Arc::new(Hosted {
                raft: raft.clone(),
                snapshots,
                freshness: freshness.clone(),
                sessions: Arc::default(),
                proposals: proposals.clone(),
            }),
        );
        // Raft accepts writes while a quorum answered within its lease
        // (the maximum election timeout).
        let lease = Duration::from_millis(config.election_timeout_ms.1);
        let wake = (id != DATA_GROUP).then(|| (self.quiet.clone(), id, lease));
        self.runtime.spawn(submit_loop(raft.clone(), proposals.clone(), submitted, wake));
        let (role_tx, role) = watch::channel(Role::Starting);
        let watcher = RoleWatch {
            group: id,
            raft: raft.clone(),
            node: self.node.clone(),
            log,
            proposals: proposals.clone(),
            peers: self.peers.clone(),
            config: config.clone(),
            spare,
            owns,
            quiet: self.quiet.clone(),
        };
        self.runtime.spawn(watcher.run(role_tx));
        Ok(DataGroup { raft, proposals, role, freshness, fresh, streams: Arc::default(), adopt: None })
    }
}

/// What a node outside the group's configuration (a spare, or a node that
/// was replaced while away) last heard from the primary when registering.
#[derive(Debug, Clone)]
pub(crate) struct SpareView {
    pub primary: NodeId,
    pub info: NodeInfo,
    /// The primary counts this node a member (a learner being built, or a voter).
    pub member: bool,
    pub at: std::time::Instant,
}

pub(crate) type SpareState = Arc<parking_lot::Mutex<Option<SpareView>>>;

/// Feeds proposals to Raft: whatever commits are queued when the loop
/// comes round go to Raft as one batch (one message to its core, one
/// append to the log), and a task per batch waits for their outcomes, so
/// many batches are in flight at once.
/// `quiet`: the node's quiet groups, this group's id and Raft's lease on
/// writes, for a group that may go quiet (its first write wakes it).
async fn submit_loop(
    raft: Raft,
    proposals: Arc<Proposals>,
    mut submitted: mpsc::UnboundedReceiver<Command>,
    quiet: Option<(Arc<crate::raft::quiet::Quiet>, GroupId, Duration)>,
) {
    let mut batch = Vec::new();
    while submitted.recv_many(&mut batch, SUBMIT_BATCH).await > 0 {
        if let Some((quiet, group, lease)) = &quiet {
            quiet.ready_to_write(*group, &raft, *lease).await;
        }
        let commands = std::mem::take(&mut batch);
        // (ticket, whole): one part of a split record decides nothing — the
        // record commits when all its parts have been applied.
        let tickets: Vec<(u64, bool)> = commands.iter().map(|c| (c.ticket, c.part.is_none())).collect();
        let unknown = |proposals: &Proposals, tickets: &[(u64, bool)], e: &dyn std::fmt::Display| {
            for (ticket, _) in tickets {
                proposals.tickets.decide(
                    *ticket,
                    Outcome::Unknown(format!("the primary changed while the commit waited for its quorum ({e})")),
                );
            }
        };
        match raft.client_write_many(commands).await {
            Ok(mut results) => {
                let proposals = proposals.clone();
                tokio::spawn(async move {
                    let mut decided = 0;
                    while let Some(result) = results.next().await {
                        let (ticket, whole) = tickets[decided];
                        decided += 1;
                        match result {
                            // Applying the entry decided the ticket already.
                            Ok(Ok(_)) if whole => {
                                proposals.tickets.decide(ticket, Outcome::Committed);
                            }
                            Ok(Ok(_)) => {}
                            Ok(Err(e)) => unknown(&proposals, &[(ticket, whole)], &e),
                            Err(e) => unknown(&proposals, &tickets[decided - 1..], &e),
                        }
                    }
                    // The stream ends early only after an error (decided above).
                });
            }
            Err(e) => unknown(&proposals, &tickets, &e),
        }
    }
}

/// How long after a quorum last answered a primary may still serve: no
/// other node can be elected before its followers have missed it for the
/// lease (the maximum election timeout) plus at least the minimum election
/// timeout; until then it may serve, even if a large entry delays the
/// quorum's answers.
pub(crate) fn primary_lease(config: &GroupConfig) -> Duration {
    let (min, max) = config.election_timeout_ms;
    Duration::from_millis(max + min - config.heartbeat_ms.min(min / 2))
}

/// Whether this node (`me`) leads the group whose metrics are `m` with a
/// lease: a group of one, a quorum that answered Raft within `lease`, or
/// (a quiet group) a quorum that confirmed it lately.
pub(crate) fn leads_with_lease(
    m: &openraft::RaftMetrics<crate::raft::type_config::C>,
    me: NodeId,
    lease: Duration,
    quiet: &crate::raft::quiet::Quiet,
    group: GroupId,
) -> bool {
    let leads = m.state == ServerState::Leader && m.current_leader == Some(me);
    let voters = m.membership_config.membership().voter_ids().count();
    leads
        && (voters <= 1
            || m.last_quorum_acked.as_ref().is_some_and(|t| t.elapsed() < lease)
            || quiet.lease_ok(group, m.current_term, voters))
}

/// At most this many queued commits go to Raft in one batch.
const SUBMIT_BATCH: usize = 256;

/// Follows Raft's metrics and turns them into this node's role. A node
/// becomes primary only once it leads with a quorum and has applied every
/// entry committed before its term (so its engines hold everything), and
/// its engines' clocks are above every timestamp in its log.
struct RoleWatch {
    group: GroupId,
    raft: Raft,
    node: Arc<Node>,
    log: LogStore,
    proposals: Arc<Proposals>,
    peers: Peers,
    config: GroupConfig,
    spare: SpareState,
    /// The streams the group replicates: a new primary raises their clocks.
    owns: Owns,
    /// A quiet group's primary holds its lease from its voters'
    /// confirmations, not from Raft's heartbeats.
    quiet: Arc<crate::raft::quiet::Quiet>,
}

impl RoleWatch {
    async fn run(self, role: watch::Sender<Role>) {
        let mut metrics = self.raft.metrics();
        let lease = primary_lease(&self.config);
        let mut tick = tokio::time::interval(Duration::from_millis(self.config.heartbeat_ms.max(20) / 2));
        // The primary's addresses as it reports them now (they may differ
        // from those recorded when the cluster formed).
        let mut resolved: Option<(NodeId, NodeInfo)> = None;
        loop {
            tokio::select! {
                changed = metrics.changed() => if changed.is_err() { return },
                _ = tick.tick() => {}
            }
            let m = metrics.borrow_and_update().clone();
            let me = self.config.id;
            let leads = m.state == ServerState::Leader && m.current_leader == Some(me);
            let voters = m.membership_config.membership().voter_ids().count();
            let quorum = leads_with_lease(&m, me, lease, &self.quiet, self.group);
            let current = role.borrow().clone();
            // Outside the configuration (a spare, or a node replaced while
            // away), or a member hearing no primary while the primary says
            // it is not one: a gateway to the primary it registered with.
            let spare = self.spare.lock().clone().filter(|s| {
                !s.member
                    && s.at.elapsed() < crate::manager::status::ALIVE
                    && s.primary != me
                    && (m.current_leader.is_none() || m.membership_config.membership().get_node(&me).is_none())
            });
            let next = if let Some(s) = spare.filter(|_| !leads) {
                Role::Secondary { primary: s.primary, info: s.info }
            } else if leads && quorum {
                if current == Role::Primary { Role::Primary } else { self.promote(m.current_term).await }
            } else if leads {
                // Name what is known: when a quorum last acknowledged this
                // leader, against the lease, not a guess at how many nodes
                // are down (a busy but live voter misses the lease too).
                let since = match m.last_quorum_acked.as_ref() {
                    Some(t) => format!("last acknowledged it {} ms ago", t.elapsed().as_millis()),
                    None => "has not acknowledged it yet".to_string(),
                };
                Role::Unavailable(format!(
                    "this node leads the group but a quorum of its voters ({} of {voters}) {since}, \
                     beyond its lease of {} ms: writes wait until a quorum answers or another node takes over",
                    voters / 2 + 1,
                    lease.as_millis()
                ))
            } else {
                let recorded = m
                    .current_leader
                    .and_then(|l| m.membership_config.membership().get_node(&l).map(|i| (l, i.clone())));
                match recorded {
                    Some((primary, info)) => {
                        if resolved.as_ref().is_none_or(|(id, _)| *id != primary) {
                            let live =
                                self.peers.hello(&info.rpc_addr).await.ok().filter(|(id, _, _)| *id == primary);
                            resolved = Some((primary, live.map_or(info, |(_, i, _)| i)));
                        }
                        let (primary, info) = resolved.clone().expect("resolved above");
                        Role::Secondary { primary, info }
                    }
                    None if voters == 0 => Role::Starting,
                    None => Role::Unavailable(
                        "the cluster has no primary: an election is under way, or fewer than a quorum of nodes is reachable"
                            .into(),
                    ),
                }
            };
            if next != Role::Primary && current == Role::Primary {
                let why = match &next {
                    Role::Unavailable(why) => why.clone(),
                    _ => "this node is no longer the primary".to_string(),
                };
                self.proposals.set_serving(false, &why);
                if !leads {
                    self.proposals.tickets.fail_all("the primary changed while the commit waited for its quorum");
                }
                tracing::warn!(group = self.group, "this node stopped serving as primary: {why}");
            }
            if next != current {
                self.quiet.set_serving(self.group, next == Role::Primary);
                let _ = role.send(next);
            }
        }
    }

    /// Catches up (everything committed before this term applied), lifts
    /// the engines' clocks above every timestamp in the log, and serves.
    async fn promote(&self, term: u64) -> Role {
        match self.raft.ensure_linearizable(ReadPolicy::ReadIndex).await {
            Ok(_) => {
                let ts = self.log.max_ts();
                if (self.owns)(SYSTEM_STREAM) {
                    self.node.system().raise_clock(ts);
                }
                for (stream, engine) in self.node.partitions() {
                    if (self.owns)(stream) {
                        engine.raise_clock(ts);
                    }
                }
                self.proposals.set_serving(true, "");
                self.proposals.gate.set_handing_over(false);
                tracing::info!(group = self.group, term, "this node is now the primary");
                Role::Primary
            }
            Err(e) => Role::Unavailable(format!("this node is becoming the primary ({e})")),
        }
    }
}
