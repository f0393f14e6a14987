//! `tessera start --node-id …`: a node of a cluster, and `tessera demo`.
//!
//! A cluster node keeps its Raft log (`raft-log/` in its data directory,
//! with `NODE_ID` recording whose it is) and its snapshots (`snapshots/`:
//! checkpoints of its engines built from the log) on disk; its engines are
//! rebuilt at start from the newest snapshot and the log after it. The
//! first time, the nodes named by `--join` form the group together (each
//! must be reachable, and all must be given the same list): `--replicas`
//! of them vote, the others are spares. Afterwards a node rejoins by
//! itself, and a new node joins a formed cluster by naming any of its
//! nodes in `--join`: it starts as a spare.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use tessera_engine::EngineConfig;
use tessera_replication::{ClusterSecret, NodeInfo, ReplicationConfig, ReplicationNode};
use tessera_sql::storage::catalog::block_home;

#[derive(clap::Args, Debug, Clone)]
pub struct ClusterArgs {
    /// Run as node N of a cluster (a positive number, unique in the cluster).
    #[arg(long)]
    pub node_id: Option<u64>,
    /// TCP port for the other nodes (cluster RPC).
    #[arg(long, requires = "node_id", default_value_t = 7433)]
    pub rpc_port: u16,
    /// RPC addresses (HOST:RPCPORT, comma-separated) of the cluster's
    /// founding nodes; this node's own may be included.
    #[arg(long, requires = "node_id", value_delimiter = ',')]
    pub join: Vec<String>,
    /// The node's failure domain (e.g. its rack).
    #[arg(long, requires = "node_id", default_value = "")]
    pub failure_domain: String,
    /// The node's upgrade domain (nodes taken down together for maintenance).
    #[arg(long, requires = "node_id", default_value = "")]
    pub upgrade_domain: String,
    /// The secret every node of the cluster shares; a node without it is refused.
    #[arg(long, env = "TESSERA_CLUSTER_SECRET", hide_env_values = true)]
    pub cluster_secret: Option<String>,
    /// Take a snapshot after this many log entries (commits and DDL) since
    /// the last one, and purge the log below it (0: never).
    #[arg(long, requires = "node_id", default_value_t = 20_000)]
    pub snapshot_every: u64,
    /// Reach a node through another address: ADVERTISED=DIAL (HOST:PORT
    /// both; comma-separated for several), e.g. through a tunnel.
    #[arg(long, requires = "node_id", value_delimiter = ',')]
    pub rpc_route: Vec<String>,
    /// Replicas of the data (voting members of the group); the nodes
    /// beyond this many are spares, which serve clients as gateways and
    /// take the place of a lost replica. Give every node the same value.
    #[arg(long, requires = "node_id", default_value_t = 3)]
    pub replicas: usize,
    /// Seconds a replica's node may be unreachable before a spare is built
    /// in its place (a node that restarts sooner just catches up).
    #[arg(long, requires = "node_id", default_value_t = 30)]
    pub replace_after_secs: u64,
    /// For fault tests: die at the point a `crash-point` file in the data
    /// directory names (see `crash_point.rs`).
    #[arg(long, requires = "node_id", hide = true)]
    pub crash_points: bool,
}

/// How the administration commands reach a cluster.
#[derive(clap::Args, Debug, Clone)]
pub struct AdminArgs {
    /// RPC address (HOST:RPCPORT) of any node of the cluster.
    #[arg(long, default_value = "127.0.0.1:7433")]
    pub rpc_addr: String,
    /// The cluster's secret.
    #[arg(long, env = "TESSERA_CLUSTER_SECRET", hide_env_values = true)]
    pub cluster_secret: Option<String>,
}

impl AdminArgs {
    fn connect(&self) -> Result<(tessera_replication::Admin, tokio::runtime::Runtime), Box<dyn std::error::Error>> {
        let secret = self
            .cluster_secret
            .as_deref()
            .filter(|s| !s.is_empty())
            .ok_or("the cluster's secret is needed: --cluster-secret or TESSERA_CLUSTER_SECRET")?;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        Ok((tessera_replication::Admin::new(&self.rpc_addr, ClusterSecret::new(secret.as_bytes())), runtime))
    }
}

/// `tessera status`: the cluster map as a table.
pub fn status(args: AdminArgs) -> Result<(), Box<dyn std::error::Error>> {
    let (admin, runtime) = args.connect()?;
    let rows = runtime.block_on(admin.status()).map_err(|e| e.message())?;
    println!(
        "{:>4}  {:<11}  {:>5}  {:>7}  {:>6}  {:<21}  {:<21}  {:<8}  {:<8}  {:>5}  {:>4}  {:>6}  {:<7}  {:<8}",
        "node",
        "role",
        "epoch",
        "applied",
        "behind",
        "pg address",
        "rpc address",
        "failure",
        "upgrade",
        "conns",
        "cpu%",
        "rss_mb",
        "manager",
        "draining"
    );
    let show = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
    for r in rows {
        let load = |f: fn(&tessera_replication::Load) -> u32| show(r.load.as_ref().map(|l| f(l) as u64));
        println!(
            "{:>4}  {:<11}  {:>5}  {:>7}  {:>6}  {:<21}  {:<21}  {:<8}  {:<8}  {:>5}  {:>4}  {:>6}  {:<7}  {:<8}",
            r.id,
            r.role,
            r.epoch,
            show(r.matched),
            show(r.behind),
            r.info.pg_addr,
            r.info.rpc_addr,
            r.info.failure_domain,
            r.info.upgrade_domain,
            load(|l| l.connections),
            load(|l| l.cpu_percent),
            load(|l| l.rss_mb),
            r.manager.map_or("-", |m| m.as_str()),
            if r.draining { "yes" } else { "-" }
        );
    }
    // The databases' own groups (a group's id is its database's stream in
    // tessera.replicas), as the first group's primary knows them.
    let groups = runtime.block_on(admin.groups()).map_err(|e| e.message())?;
    if !groups.is_empty() {
        println!();
        println!("{:>5}  {:>4}  {:<11}  {:>5}  {:>6}", "group", "node", "role", "epoch", "behind");
        for (group, replicas) in groups {
            for r in replicas {
                println!("{:>5}  {:>4}  {:<11}  {:>5}  {:>6}", group, r.node, r.role, r.epoch, show(r.behind));
            }
        }
    }
    Ok(())
}

/// `tessera replicas N`.
pub fn set_replicas(args: AdminArgs, count: usize) -> Result<(), Box<dyn std::error::Error>> {
    let (admin, runtime) = args.connect()?;
    let message = runtime.block_on(admin.set_replicas(count)).map_err(|e| e.message())?;
    println!("tessera: {message}");
    Ok(())
}

/// `tessera node drain N`.
pub fn drain(args: AdminArgs, node: u64) -> Result<(), Box<dyn std::error::Error>> {
    let (admin, runtime) = args.connect()?;
    let message = runtime.block_on(admin.drain(node)).map_err(|e| e.message())?;
    println!("tessera: {message}");
    Ok(())
}

/// Records (or checks) which node a data directory belongs to, and locks it.
fn claim_data_dir(dir: &Path, id: u64) -> Result<std::fs::File, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create data directory {}: {e}", dir.display()))?;
    let lock_path = dir.join("LOCK");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
    lock.try_lock().map_err(|_| format!("data directory {} is in use by another Tessera process", dir.display()))?;
    let id_path = dir.join("NODE_ID");
    match std::fs::read_to_string(&id_path) {
        Ok(s) if s.trim() == id.to_string() => {}
        Ok(s) => return Err(format!("data directory {} belongs to node {}, not node {id}", dir.display(), s.trim())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if dir.join("log").exists() {
                return Err(format!(
                    "data directory {} holds a single-node database; a cluster node needs a directory of its own",
                    dir.display()
                ));
            }
            std::fs::write(&id_path, format!("{id}\n"))
                .map_err(|e| format!("cannot write {}: {e}", id_path.display()))?;
        }
        Err(e) => return Err(format!("cannot read {}: {e}", id_path.display())),
    }
    Ok(lock)
}

pub fn start(
    args: ClusterArgs,
    data_dir: PathBuf,
    listen: &str,
    port: u16,
    server_config: tessera_server::ServerConfig,
) -> Result<(), Box<dyn std::error::Error>> {
    let id = args.node_id.expect("cluster mode has a node id");
    if id == 0 {
        return Err("--node-id must be a positive number".into());
    }
    let secret = args
        .cluster_secret
        .filter(|s| !s.is_empty())
        .ok_or("a cluster node needs the cluster's secret: --cluster-secret or TESSERA_CLUSTER_SECRET")?;
    // Nodes vouch with it for the sessions they hand over when a primary moves.
    let mut server_config = server_config;
    server_config.cluster_secret = Some(ClusterSecret::new(secret.as_bytes()));
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let _lock = claim_data_dir(&data_dir, id)?;
    let crash = crate::crash_point::CrashPoints::new(args.crash_points, &data_dir);
    if let Some((cert, key)) = &server_config.tls {
        tessera_server::tls_acceptor(cert, key)?;
    }
    let pg =
        std::net::TcpListener::bind((listen, port)).map_err(|e| format!("cannot listen on {listen}:{port}: {e}"))?;
    let rpc = std::net::TcpListener::bind((listen, args.rpc_port))
        .map_err(|e| format!("cannot listen on {listen}:{} for the cluster: {e}", args.rpc_port))?;
    let info = NodeInfo {
        rpc_addr: rpc.local_addr()?.to_string(),
        pg_addr: pg.local_addr()?.to_string(),
        failure_domain: args.failure_domain,
        upgrade_domain: args.upgrade_domain,
    };
    let started = Instant::now();
    let mut config =
        ReplicationConfig::new(id, info.clone(), data_dir.join("raft-log"), ClusterSecret::new(secret.as_bytes()));
    config.join = args.join;
    config.connections = server_config.connections.clone();
    config.snapshot_every = args.snapshot_every;
    config.routes = args
        .rpc_route
        .iter()
        .map(|r| r.split_once('=').map(|(a, b)| (a.to_string(), b.to_string())))
        .collect::<Option<Vec<_>>>()
        .ok_or("--rpc-route takes ADVERTISED=DIAL pairs (HOST:PORT=HOST:PORT)")?;
    config.log_kept_below_snapshot = (args.snapshot_every / 4).max(10);
    if args.replicas == 0 {
        return Err("--replicas must be at least 1".into());
    }
    config.replicas = args.replicas;
    config.replace_after = std::time::Duration::from_secs(args.replace_after_secs);
    let group = ReplicationNode::start(config, EngineConfig::in_memory(), rpc)?;
    println!(
        "tessera: node {id} ready (data dir {}, log replayed in {} ms); cluster RPC on {}",
        data_dir.display(),
        started.elapsed().as_millis(),
        info.rpc_addr
    );
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    pg.set_nonblocking(true)?;
    let listener = {
        let _enter = runtime.enter();
        tokio::net::TcpListener::from_std(pg)?
    };
    println!("tessera: listening on {}", info.pg_addr);
    let node = group.node().clone();
    let status = group.status();
    let groups = group.groups();
    let view: Arc<View> = Arc::new(View(status.clone(), groups.clone()));
    // The primary of the first group serves the cluster's catalog (and
    // `tessera`, `postgres`); its CREATE DATABASE makes
    // each new database a group of its own.
    let open: tessera_server::OpenSql = {
        let (node, view, groups, crash) = (node.clone(), view.clone(), groups.clone(), crash.clone());
        Arc::new(move || {
            let first = groups.clone();
            let sql =
                tessera_sql::SqlEngine::open_maintaining(node.clone(), Arc::new(move |s| first.in_system_group(s)))
                    .map_err(|e| e.to_string())?;
            sql.catalog.set_cluster(view.clone());
            sql.catalog.set_groups(Arc::new(Homes::new(groups.clone(), crash.clone())));
            sql.catalog.set_crash_points(Arc::new(crash.clone()));
            // Its catalog is complete (a primary has applied everything
            // committed): the groups no database owns can go.
            let homes = sql.catalog.databases().into_iter().filter_map(|d| d.home).collect();
            groups.runtime().spawn(remove_orphan_groups(groups.clone(), homes, sql.catalog.next_stream()));
            Ok(sql)
        })
    };
    // A session reading on this node while it is a secondary gets an engine
    // of its own, whose catalog follows the DDL replicated to this node.
    let (freshness, role) = (group.freshness(), group.role());
    let open_secondary: tessera_server::OpenSql = {
        let (node, view) = (node.clone(), view.clone());
        Arc::new(move || {
            let state = Arc::new(Fresh(freshness.clone(), role.clone()));
            let sql = tessera_sql::SqlEngine::open_secondary(node.clone(), state).map_err(|e| e.to_string())?;
            sql.catalog.set_cluster(view.clone());
            Ok(sql)
        })
    };
    // The databases with groups of their own: served where their group's
    // primary is, read where a replica of it is.
    let open_follower: tessera_server::OpenSql = {
        let (node, view, groups, crash) = (node.clone(), view.clone(), groups.clone(), crash.clone());
        Arc::new(move || {
            let sql = tessera_sql::SqlEngine::open_follower(node.clone()).map_err(|e| e.to_string())?;
            sql.catalog.set_cluster(view.clone());
            // (A split on a database's primary adds a partition to its group.)
            sql.catalog.set_groups(Arc::new(Homes::new(groups.clone(), crash.clone())));
            sql.catalog.set_crash_points(Arc::new(crash.clone()));
            Ok(sql)
        })
    };
    let open_secondary_in: tessera_server::OpenSqlIn = {
        let (node, view, groups) = (node.clone(), view.clone(), groups.clone());
        Arc::new(move |g| {
            if groups.freshness_of(g).is_none() {
                return Err("this node holds no replica of the database".into());
            }
            let state = Arc::new(FreshAll(groups.clone(), g));
            let sql = tessera_sql::SqlEngine::open_secondary(node.clone(), state).map_err(|e| e.to_string())?;
            sql.catalog.set_cluster(view.clone());
            Ok(sql)
        })
    };
    let routing = tessera_server::DatabaseRouting::new(groups.clone(), open_follower, open_secondary_in);
    groups.count_sessions_with({
        let routing = routing.clone();
        Arc::new(move |group| routing.sessions_in(group))
    });
    // A keyed database's partitions are groups named by their streams, in
    // their home's block: their primaries serve no sessions (the home's
    // primary does, and the first group's).
    groups.classify_groups_with(Arc::new(|group| block_home(group).is_none()));
    let session_runtimes = server_config.session_runtimes.clone();
    let server = runtime.spawn(tessera_server::serve_cluster(
        listener,
        group.role(),
        open,
        open_secondary,
        Some(routing),
        server_config,
    ));
    crate::serve_until_signal(&mut signals, server, runtime, session_runtimes.as_deref());
    group.shutdown()?;
    println!("tessera: stopped cleanly");
    Ok(())
}

/// A secondary's freshness, as its read-only sessions check it (nothing is
/// staler than the primary's own data: zero while this node is primary).
struct Fresh(Arc<tessera_replication::Freshness>, tokio::sync::watch::Receiver<tessera_replication::Role>);

impl tessera_sql::storage::cluster_view::SecondaryState for Fresh {
    fn staleness(&self) -> Option<std::time::Duration> {
        if *self.1.borrow() == tessera_replication::Role::Primary {
            return Some(std::time::Duration::ZERO);
        }
        self.0.staleness()
    }
}

/// A database's replicas on this node, for a session reading them: its
/// home's group and each of its partitions' groups (named from the home's
/// block of streams). As stale as the stalest of them.
struct FreshAll(tessera_replication::Groups, u32);

impl tessera_sql::storage::cluster_view::SecondaryState for FreshAll {
    fn staleness(&self) -> Option<std::time::Duration> {
        let (groups, home) = (&self.0, self.1);
        let mut worst = std::time::Duration::ZERO;
        for g in std::iter::once(home).chain(groups.listed().into_iter().filter(|g| block_home(*g) == Some(home))) {
            let (Some(freshness), Some(role)) = (groups.freshness_of(g), groups.role_of(g)) else { return None };
            worst = worst.max(Fresh(freshness, role).staleness()?);
        }
        Some(worst)
    }
}

use tessera_sql::storage::cluster_view::GroupsError;

/// Makes each new database's home a replication group of its own (its
/// group id is the home's stream), and waits until this node is its
/// primary with a quorum of its replicas' voters.
struct Homes(
    tessera_replication::Groups,
    crate::crash_point::CrashPoints,
    Arc<dyn tessera_engine::remote::PartitionRoutes>,
);

impl Homes {
    fn new(groups: tessera_replication::Groups, crash: crate::crash_point::CrashPoints) -> Homes {
        let routes: Arc<dyn tessera_engine::remote::PartitionRoutes> = Arc::new(groups.clone());
        Homes(groups, crash, routes)
    }
}

impl tessera_sql::storage::cluster_view::DatabaseGroups for Homes {
    fn create(&self, each: &[Vec<u32>], replicas: Option<usize>) -> Result<(), GroupsError> {
        let nodes = self.0.node_count();
        if let Some(n) = replicas.filter(|n| *n > nodes) {
            return Err(GroupsError::Invalid(format!(
                "the cluster has {nodes} nodes: a database cannot keep {n} replicas"
            )));
        }
        // Every node holds the catalog (the first group's voters, and the
        // others as its readers), so every node can hold a replica.
        // None: the cluster's count, followed when it changes (recorded as 0).
        let quorum = replicas.unwrap_or_else(|| self.0.default_replicas()) / 2 + 1;
        let each = each.to_vec();
        self.wait_for(move |groups| async move {
            // The groups form side by side: the manager builds their
            // replicas in the same rounds.
            let made = futures::future::join_all(each.iter().map(|streams| {
                let (groups, streams) = (groups.clone(), streams.clone());
                async move {
                    let id = streams[0];
                    groups.create(id, streams, replicas.unwrap_or(0)).await?;
                    groups.wait_serving(id, quorum, std::time::Duration::from_secs(30)).await
                }
            }))
            .await;
            let failed = made.into_iter().find_map(|r| r.err());
            if let Some(e) = failed {
                // The database is not made: its groups go (best effort; a
                // group no database owns is otherwise left behind).
                for streams in &each {
                    if groups.listed().contains(&streams[0])
                        && let Err(e) = groups.remove(streams[0]).await
                    {
                        tracing::warn!(
                            group = streams[0],
                            "a group made for a database that failed stays: {}",
                            e.message()
                        );
                    }
                }
                return Err(e);
            }
            Ok(())
        })?;
        self.1.here("create-database-after-group");
        Ok(())
    }

    fn group_of(&self, stream: u32) -> Option<u32> {
        self.0.group_of_stream(stream)
    }

    fn place(&self, stream: u32) {
        match self.wait_for(move |groups| async move { groups.place(stream).await }) {
            Ok(node) => tracing::info!(group = stream, node, "the new group's primary is on node {node}"),
            Err(e) => tracing::warn!(group = stream, "the new group's primary stays here: {}", e.reason()),
        }
    }

    fn split_off(&self, parent: u32, partition: u32) -> Result<(), GroupsError> {
        let parent = self.0.group_of_stream(parent).unwrap_or(parent);
        let replicas = Some(self.0.replicas_target(parent)).filter(|n| *n > 0);
        self.create(&[vec![partition]], replicas)?;
        // `create` returns at a quorum, with this node one of its voters.
        // The split's rows are copied next: were this node to die before
        // the last replica was built, the partition would have no quorum
        // until it came back. So wait for every replica, but not for long
        // (a node that is down leaves the group at a quorum, and the
        // manager builds the rest when it can).
        let full = replicas.unwrap_or_else(|| self.0.default_replicas());
        let all = self.wait_for(move |groups| async move {
            groups.wait_serving(partition, full, std::time::Duration::from_secs(10)).await
        });
        if let Err(e) = all {
            tracing::warn!(group = partition, "the split goes on at a quorum of replicas: {}", e.reason());
        }
        Ok(())
    }

    fn partition_groups(&self, home: u32) -> Vec<u32> {
        // A partition's group is named by its stream, in its home's block.
        self.0.listed().into_iter().filter(|g| block_home(*g) == Some(home)).collect()
    }

    fn adopt(&self, group: u32, partition: u32) -> Result<(), GroupsError> {
        self.0.adopt(group, partition).map_err(|e| GroupsError::Unavailable(e.message()))
    }

    fn sessions_on(&self, stream: u32) -> Result<usize, GroupsError> {
        self.wait_for(move |groups| async move { groups.sessions_on(stream).await })
    }

    fn remove(&self, stream: u32) -> Result<(), GroupsError> {
        self.wait_for(move |groups| async move { groups.remove(stream).await })
    }

    fn routes(&self) -> Option<Arc<dyn tessera_engine::remote::PartitionRoutes>> {
        Some(self.2.clone())
    }
}

/// Removes the groups listed in the manager's directory that are no
/// database's home (`homes`, as the first group's new primary's catalog
/// has them), among those made before its catalog opened (ids below
/// `below`; a group made later may not have its database's entry yet). A
/// node that died between forming a new database's group and writing the
/// database's entry leaves one; so does a DROP DATABASE whose group
/// removal failed. Looked at again a little later, in case this node's
/// copy of the directory had not caught up yet.
async fn remove_orphan_groups(groups: tessera_replication::Groups, homes: std::collections::HashSet<u32>, below: u32) {
    for wait in [0, 5, 20] {
        tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
        // A partition's group is named by its stream, in its home's block.
        let home_of = |g: u32| block_home(g).unwrap_or(g);
        for group in groups.listed().into_iter().filter(|g| home_of(*g) < below && !homes.contains(&home_of(*g))) {
            tracing::warn!(group, "removing a group no database owns (a CREATE or DROP DATABASE cut short)");
            if let Err(e) = groups.remove(group).await {
                tracing::warn!(group, "the group no database owns stays for now: {}", e.message());
            }
        }
    }
}

impl Homes {
    /// Runs `work` on the replication layer's runtime and waits for its
    /// answer: the SQL layer calls the hook from a thread that may block.
    fn wait_for<T, F>(&self, work: impl FnOnce(tessera_replication::Groups) -> F) -> Result<T, GroupsError>
    where
        T: Send + 'static,
        F: std::future::Future<Output = tessera_replication::Result<T>> + Send + 'static,
    {
        let work = work(self.0.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        self.0.runtime().spawn(async move {
            let _ = tx.send(work.await.map_err(|e| e.message()));
        });
        rx.recv()
            .map_err(|_| GroupsError::Unavailable("the replication layer stopped".into()))?
            .map_err(GroupsError::Unavailable)
    }
}

/// The cluster map, as the SQL views show it.
struct View(tessera_replication::StatusSource, tessera_replication::Groups);

impl tessera_sql::storage::cluster_view::ClusterView for View {
    fn nodes(&self) -> Vec<tessera_sql::storage::cluster_view::NodeRow> {
        self.0
            .nodes()
            .into_iter()
            .map(|n| tessera_sql::storage::cluster_view::NodeRow {
                id: n.id,
                rpc_addr: n.info.rpc_addr,
                pg_addr: n.info.pg_addr,
                failure_domain: n.info.failure_domain,
                upgrade_domain: n.info.upgrade_domain,
                role: n.role.to_string(),
                epoch: n.epoch,
                applied: n.matched,
                behind: n.behind,
                load: n.load.map(|l| tessera_sql::storage::cluster_view::NodeLoad {
                    connections: l.connections,
                    cpu_percent: l.cpu_percent,
                    rss_mb: l.rss_mb,
                }),
                manager: n.manager.map(|m| m.to_string()),
                draining: n.draining,
            })
            .collect()
    }

    fn holds_lease(&self, home: Option<u32>) -> bool {
        // A home with a group of its own is that group; the rest is the
        // first group's.
        let group = home.filter(|h| !self.1.in_system_group(*h)).unwrap_or(tessera_replication::SYSTEM_GROUP);
        self.1.holds_lease(group)
    }

    fn stream_replicas(&self, stream: u32) -> Option<Vec<tessera_sql::storage::cluster_view::ReplicaRow>> {
        let group = self.1.group_of_stream(stream).unwrap_or(stream);
        // The group's primary knows its configuration; another node's may
        // be stale (a replica moved off it is not told), or it holds none
        // (a database keeping fewer replicas than the cluster has nodes):
        // it asks the primary, and falls back on what it knows.
        let local = self.1.replicas_of(group);
        let replicas = if self.1.leads(group) {
            local
        } else {
            let groups = self.1.clone();
            let (tx, rx) = std::sync::mpsc::channel();
            self.1.runtime().spawn(async move {
                let _ = tx.send(groups.replicas_from_primary(group).await);
            });
            rx.recv_timeout(std::time::Duration::from_secs(2)).ok().flatten().or(local)
        }?;
        Some(
            replicas
                .into_iter()
                .map(|r| tessera_sql::storage::cluster_view::ReplicaRow {
                    group,
                    node_id: r.node,
                    role: r.role.to_string(),
                    epoch: r.epoch,
                    behind: r.behind,
                })
                .collect(),
        )
    }
}

/// Starts `n` nodes as child processes on 127.0.0.1 and waits for Ctrl-C.
pub fn demo(n: u32, data_dir: &Path, port: u16, rpc_port: u16) -> Result<(), Box<dyn std::error::Error>> {
    if n == 0 {
        return Err("--nodes must be at least 1".into());
    }
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let exe = std::env::current_exe()?;
    let secret = std::env::var("TESSERA_CLUSTER_SECRET").unwrap_or_else(|_| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
        format!("demo-{:016x}", h.finish())
    });
    let join: Vec<String> = (0..n).map(|i| format!("127.0.0.1:{}", rpc_port + i as u16)).collect();
    let mut children = Vec::new();
    for i in 0..n {
        let dir = data_dir.join(format!("node{}", i + 1));
        let child = std::process::Command::new(&exe)
            .args(["start", "--node-id", &(i + 1).to_string(), "--data-dir"])
            .arg(&dir)
            .args(["--port", &(port + i as u16).to_string(), "--rpc-port", &(rpc_port + i as u16).to_string()])
            .args(["--join", &join.join(",")])
            .args(["--failure-domain", &format!("fd{}", i + 1), "--upgrade-domain", &format!("ud{}", i + 1)])
            .env("TESSERA_CLUSTER_SECRET", &secret)
            .stdout(std::process::Stdio::null())
            .spawn()?;
        children.push(child);
    }
    println!("tessera: started a {n}-node cluster (data under {})", data_dir.display());
    for i in 0..n {
        println!("  node {}: psql -h 127.0.0.1 -p {} -U tessera tessera", i + 1, port + i as u16);
    }
    println!("Any node accepts connections and reaches the primary. To read on a secondary instead:");
    let hosts = vec!["127.0.0.1"; n as usize].join(",");
    let ports: Vec<String> = (0..n).map(|i| (port + i as u16).to_string()).collect();
    println!(
        "  psql \"host={hosts} port={} user=tessera dbname=tessera options='-c tessera.read_from=secondary' target_session_attrs=prefer-standby\"",
        ports.join(",")
    );
    // The administration commands authenticate with the cluster's secret
    // (generated above unless given): a local demo shows it.
    println!("To see the cluster map, drain a node or change the replica count:");
    println!("  TESSERA_CLUSTER_SECRET={secret} tessera status --rpc-addr 127.0.0.1:{rpc_port}");
    println!("Press Ctrl-C to stop the cluster.");
    signals.forever().next();
    for child in &mut children {
        // SIGTERM: each node shuts down cleanly.
        let _ = std::process::Command::new("kill").arg(child.id().to_string()).status();
    }
    for mut child in children {
        let _ = child.wait();
    }
    println!("tessera: demo cluster stopped");
    Ok(())
}
