//! The `tessera` command.
//!
//! `tessera start` opens (recovering if needed) the storage engine under
//! `--data-dir` (default `./tessera-data`), loads the SQL catalog, listens
//! for PostgreSQL clients on `--listen` (127.0.0.1) port `--port` (5433; 0
//! picks a free port) and prints `tessera: listening on ADDR`. It runs until
//! SIGINT or SIGTERM, when it stops background work, flushes the log and
//! exits cleanly.
//!
//! With `--node-id` it starts a cluster node instead (`cluster.rs`): it
//! joins the nodes named by `--join` (their `--rpc-port` addresses), and
//! serves, forwards or refuses clients as its role in the group says.
//! `tessera demo --nodes 3` starts a local three-node cluster.

mod cluster;
mod crash_point;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use tessera_engine::{Durability, EngineConfig, Node};

// The engine allocates a version per write and frees it from whichever
// thread collects it; mimalloc handles that pattern far better than glibc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "tessera", version, about = "Tessera: a distributed SQL database")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once; the size difference between the variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Start a single node on the embedded default, or (with --node-id) a
    /// node of a cluster.
    Start {
        /// Where the node keeps its log and checkpoints.
        #[arg(long, default_value = "./tessera-data")]
        data_dir: PathBuf,
        /// Acknowledge commits before their log record reaches the disk
        /// (flushed within a few milliseconds).
        #[arg(long)]
        lazy_commit: bool,
        /// TCP port for PostgreSQL clients (0 picks a free one).
        #[arg(long, default_value_t = 5433)]
        port: u16,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1")]
        listen: String,
        /// Most concurrent client connections.
        #[arg(long, default_value_t = 100)]
        max_connections: usize,
        /// Client authentication on this listen address: `auto` (SCRAM-SHA-256
        /// for roles with a password, trust for the others), `scram` (always
        /// SCRAM) or `trust`.
        #[arg(long, default_value = "auto", value_parser = ["auto", "scram", "trust"])]
        auth: String,
        /// PEM certificate chain for TLS (with --tls-key).
        #[arg(long, requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// PEM private key for TLS (with --tls-cert).
        #[arg(long, requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Threads that run client sessions, each a runtime of its own that
        /// its sessions stay on (default: one per core; 0 runs sessions on
        /// the node's shared runtime).
        #[arg(long)]
        session_threads: Option<usize>,
        #[command(flatten)]
        cluster: cluster::ClusterArgs,
    },
    /// Show the cluster map: every node, its role, epoch and how far behind
    /// the primary it is.
    Status {
        #[command(flatten)]
        admin: cluster::AdminArgs,
    },
    /// Change how many replicas the cluster keeps of its data (the
    /// partition manager builds or removes replicas to match).
    Replicas {
        /// The replica count, between 1 and the number of nodes.
        count: usize,
        #[command(flatten)]
        admin: cluster::AdminArgs,
    },
    /// Planned maintenance of a node.
    Node {
        #[command(subcommand)]
        action: NodeAction,
    },
    /// Start a local cluster of several nodes (child processes) for trying
    /// Tessera out; stops them on Ctrl-C.
    Demo {
        /// How many nodes.
        #[arg(long, default_value_t = 3)]
        nodes: u32,
        /// Parent of the nodes' data directories.
        #[arg(long, default_value = "./tessera-demo")]
        data_dir: PathBuf,
        /// PostgreSQL port of the first node (the others follow).
        #[arg(long, default_value_t = 5433)]
        port: u16,
        /// RPC port of the first node (the others follow).
        #[arg(long, default_value_t = 7433)]
        rpc_port: u16,
    },
}

#[derive(Subcommand)]
enum NodeAction {
    /// Move primaries off node N before taking it down; refused when its
    /// absence would cost some partition its quorum.
    Drain {
        /// The node to drain.
        node: u64,
        #[command(flatten)]
        admin: cluster::AdminArgs,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TESSERA_LOG").unwrap_or_else(|_| "info,openraft=warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Status { admin } => report(cluster::status(admin)),
        Command::Node { action: NodeAction::Drain { node, admin } } => report(cluster::drain(admin, node)),
        Command::Replicas { count, admin } => report(cluster::set_replicas(admin, count)),
        Command::Demo { nodes, data_dir, port, rpc_port } => match cluster::demo(nodes, &data_dir, port, rpc_port) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("tessera: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Start {
            data_dir,
            lazy_commit,
            port,
            listen,
            max_connections,
            auth,
            tls_cert,
            tls_key,
            session_threads,
            cluster,
        } => {
            let auth = match auth.as_str() {
                "trust" => tessera_server::AuthMode::Trust,
                "scram" => tessera_server::AuthMode::Scram,
                _ => tessera_server::AuthMode::Auto,
            };
            let tls = tls_cert.zip(tls_key);
            let session_runtimes = match session_threads {
                Some(0) => None,
                Some(n) => Some(tessera_server::ConnectionRuntimes::new(n)),
                None => Some(tessera_server::ConnectionRuntimes::per_core()),
            };
            let session_runtimes = match session_runtimes.transpose() {
                Ok(r) => r.map(std::sync::Arc::new),
                Err(e) => {
                    eprintln!("tessera: cannot start the session threads: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let server = tessera_server::ServerConfig {
                max_connections,
                auth,
                tls,
                session_runtimes,
                connections: Default::default(),
                cluster_secret: None,
            };
            let result = if cluster.node_id.is_some() {
                cluster::start(cluster, data_dir, &listen, port, server)
            } else {
                start(data_dir, lazy_commit, format!("{listen}:{port}"), server)
            };
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("tessera: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn report(result: Result<(), Box<dyn std::error::Error>>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tessera: {e}");
            ExitCode::FAILURE
        }
    }
}

fn start(
    data_dir: PathBuf,
    lazy_commit: bool,
    addr: String,
    server_config: tessera_server::ServerConfig,
) -> Result<(), Box<dyn std::error::Error>> {
    // Install the handlers before opening, so a signal during recovery is not lost.
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    std::fs::create_dir_all(&data_dir)
        .map_err(|e| format!("cannot create data directory {}: {e}", data_dir.display()))?;
    let started = Instant::now();
    let mut config = EngineConfig::durable(&data_dir);
    if lazy_commit {
        config.durability = Durability::Lazy;
    }
    let node = std::sync::Arc::new(Node::open(config)?);
    let stats = node.system().stats();
    println!(
        "tessera: engine ready (data dir {}, {} tables, last commit {}, opened in {} ms)",
        data_dir.display(),
        stats.tables,
        stats.last_commit_ts,
        started.elapsed().as_millis()
    );
    if let Some((cert, key)) = &server_config.tls {
        tessera_server::tls_acceptor(cert, key)?;
    }
    // Opens the catalog and, through it, every partition of the node.
    let sql = tessera_sql::SqlEngine::open(node.clone())?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let listener =
        runtime.block_on(tokio::net::TcpListener::bind(&addr)).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    println!("tessera: listening on {}", listener.local_addr()?);
    let session_runtimes = server_config.session_runtimes.clone();
    let server = runtime.spawn(tessera_server::serve(listener, sql, server_config));
    serve_until_signal(&mut signals, server, runtime, session_runtimes.as_deref());
    node.close()?;
    println!("tessera: stopped cleanly");
    Ok(())
}

/// Lets `server` run until SIGINT or SIGTERM, then stops it: the listener
/// and the node's own tasks first, then the sessions, which roll back what
/// they left open. The caller closes the node's engines afterwards.
pub(crate) fn serve_until_signal<T>(
    signals: &mut Signals,
    server: tokio::task::JoinHandle<T>,
    runtime: tokio::runtime::Runtime,
    sessions: Option<&tessera_server::ConnectionRuntimes>,
) {
    if let Some(signal) = signals.forever().next() {
        let name = if signal == SIGINT { "SIGINT" } else { "SIGTERM" };
        println!("tessera: received {name}, shutting down");
    }
    server.abort();
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    if let Some(sessions) = sessions {
        sessions.shutdown(std::time::Duration::from_secs(5));
    }
}
