//! The `tessera` command.
//!
//! `tessera start` opens (recovering if needed) the storage engine under
//! `--data-dir` (default `./tessera-data`), reports that it is ready, and runs
//! until SIGINT or SIGTERM, when it stops background work, flushes the log
//! and exits cleanly. The SQL server will listen here once it exists.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use tessera_engine::{Durability, Engine, EngineConfig};

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

#[derive(Subcommand)]
enum Command {
    /// Start a single node on the embedded default.
    Start {
        /// Where the node keeps its log and checkpoints.
        #[arg(long, default_value = "./tessera-data")]
        data_dir: PathBuf,
        /// Acknowledge commits before their log record reaches the disk
        /// (flushed within a few milliseconds).
        #[arg(long)]
        lazy_commit: bool,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("TESSERA_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Start { data_dir, lazy_commit } => match start(data_dir, lazy_commit) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("tessera: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

fn start(data_dir: PathBuf, lazy_commit: bool) -> Result<(), Box<dyn std::error::Error>> {
    // Install the handlers before opening, so a signal during recovery is not lost.
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    std::fs::create_dir_all(&data_dir)
        .map_err(|e| format!("cannot create data directory {}: {e}", data_dir.display()))?;
    let started = Instant::now();
    let mut config = EngineConfig::durable(&data_dir);
    if lazy_commit {
        config.durability = Durability::Lazy;
    }
    let engine = Engine::open(config)?;
    let stats = engine.stats();
    println!(
        "tessera: engine ready (data dir {}, {} tables, last commit {}, opened in {} ms)",
        data_dir.display(),
        stats.tables,
        stats.last_commit_ts,
        started.elapsed().as_millis()
    );
    if let Some(signal) = signals.forever().next() {
        let name = if signal == SIGINT { "SIGINT" } else { "SIGTERM" };
        println!("tessera: received {name}, shutting down");
    }
    engine.close()?;
    println!("tessera: stopped cleanly");
    Ok(())
}
