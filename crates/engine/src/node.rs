//! A node's storage: its system engine and its partitions, on one log.
//!
//! Every engine of a node writes into the node's one [`SharedLog`] under its
//! own stream id, so the commits of all partitions share each group fsync
//! (the Cloud SQL Server paper's one log per node), while each engine keeps
//! its own rows, clock, checkpoints and recovery — the unit that can later be
//! replicated, moved and failed over.
//!
//! Stream 0 is the *system* engine: its directory is the node's data
//! directory, as it was before partitions existed, so a data directory from
//! a single-engine node opens unchanged. It holds the catalog and the data of
//! keyless databases. Partition `s` lives in `partitions/<s>/` and writes
//! stream `s`. Which partitions exist is the catalog's business (stored in
//! the system engine); the node only opens, closes and deletes them.
//!
//! Stream ids must never be reused while the log may still hold records of
//! an earlier owner: the catalog allocates them from a counter that only
//! grows.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::RwLock;
use tessera_log::LogConfig;

use crate::engine::{Engine, EngineConfig};
use crate::error::{EngineError, Result};
use crate::shared_log::SharedLog;

/// The system engine's stream.
pub const SYSTEM_STREAM: u32 = 0;

pub struct Node {
    template: EngineConfig,
    shared: Option<Arc<SharedLog>>,
    system: Arc<Engine>,
    partitions: RwLock<HashMap<u32, Arc<Engine>>>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut streams: Vec<u32> = self.partitions.read().keys().copied().collect();
        streams.sort_unstable();
        f.debug_struct("Node").field("dir", &self.template.dir).field("partitions", &streams).finish()
    }
}

impl Node {
    /// Opens (recovering) the node's log and system engine. `config`
    /// describes the system engine; partitions inherit its settings. A
    /// config without a directory makes an in-memory node.
    pub fn open(mut config: EngineConfig) -> Result<Node> {
        let shared = match &config.dir {
            None => None,
            Some(dir) => {
                let mut log = LogConfig::new(dir.join("log"));
                log.lazy_flush_interval = config.lazy_flush_interval;
                log.segment_bytes = config.segment_bytes;
                log.faults = config.log_faults.clone();
                Some(SharedLog::open(log)?)
            }
        };
        config.shared_log = shared.clone();
        config.stream = SYSTEM_STREAM;
        config.fresh_stream = false;
        let system = Arc::new(Engine::open(config.clone())?);
        Ok(Node { template: config, shared, system, partitions: RwLock::new(HashMap::new()) })
    }

    pub fn system(&self) -> &Arc<Engine> {
        &self.system
    }

    pub fn is_durable(&self) -> bool {
        self.shared.is_some()
    }

    /// Opens partition `stream` (recovering it), or returns it if open.
    /// `fresh`: the stream was just allocated and has never been written.
    pub fn open_partition(&self, stream: u32, fresh: bool) -> Result<Arc<Engine>> {
        if stream == SYSTEM_STREAM {
            return Err(EngineError::Internal("stream 0 belongs to the system engine".into()));
        }
        if let Some(e) = self.partitions.read().get(&stream) {
            return Ok(e.clone());
        }
        let mut partitions = self.partitions.write();
        if let Some(e) = partitions.get(&stream) {
            return Ok(e.clone());
        }
        let mut config = self.template.clone();
        config.stream = stream;
        config.fresh_stream = fresh;
        config.dir = self.partition_dir(stream);
        if fresh && let Some(dir) = &config.dir {
            // Leftovers of an earlier owner of this directory (a partition
            // whose deletion was cut short) must not be recovered as ours.
            remove_dir_if_present(dir)?;
        }
        let engine = Arc::new(Engine::open(config)?);
        partitions.insert(stream, engine.clone());
        Ok(engine)
    }

    pub fn partition(&self, stream: u32) -> Option<Arc<Engine>> {
        if stream == SYSTEM_STREAM {
            return Some(self.system.clone());
        }
        self.partitions.read().get(&stream).cloned()
    }

    /// Every open partition, by stream.
    pub fn partitions(&self) -> Vec<(u32, Arc<Engine>)> {
        let mut v: Vec<(u32, Arc<Engine>)> = self.partitions.read().iter().map(|(s, e)| (*s, e.clone())).collect();
        v.sort_by_key(|(s, _)| *s);
        v
    }

    /// The streams of the partition directories on disk (open or not).
    pub fn partitions_on_disk(&self) -> Result<Vec<u32>> {
        let Some(dir) = self.template.dir.as_ref().map(|d| d.join("partitions")) else {
            return Ok(self.partitions().into_iter().map(|(s, _)| s).collect());
        };
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(EngineError::io(format!("listing {}", dir.display()), e)),
        };
        let mut out: Vec<u32> =
            entries.flatten().filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok())).collect();
        out.sort_unstable();
        Ok(out)
    }

    /// Deletes a partition for good: closes it, releases its hold on the
    /// log and removes its files.
    pub fn drop_partition(&self, stream: u32) -> Result<()> {
        let engine = self.partitions.write().remove(&stream);
        if let Some(engine) = engine {
            engine.close()?;
            drop(engine);
        }
        if let Some(shared) = &self.shared {
            shared.forget_stream(stream)?;
        }
        if let Some(dir) = self.partition_dir(stream) {
            remove_dir_if_present(&dir)?;
        }
        Ok(())
    }

    /// Call once every partition the catalog knows is open: only then may
    /// the log be truncated (a closed partition's needs are unknown).
    pub fn all_partitions_open(&self) -> Result<()> {
        match &self.shared {
            Some(shared) => shared.allow_truncation(),
            None => Ok(()),
        }
    }

    /// Checkpoints every engine of the node.
    pub fn checkpoint(&self) -> Result<()> {
        self.system.checkpoint()?;
        for (_, e) in self.partitions() {
            e.checkpoint()?;
        }
        Ok(())
    }

    /// Closes the partitions, then the system engine, then the log.
    pub fn close(&self) -> Result<()> {
        for (_, e) in self.partitions() {
            e.close()?;
        }
        self.system.close()?;
        if let Some(shared) = &self.shared {
            shared.log().close()?;
        }
        Ok(())
    }

    fn partition_dir(&self, stream: u32) -> Option<PathBuf> {
        self.template.dir.as_ref().map(|d| d.join("partitions").join(stream.to_string()))
    }
}

fn remove_dir_if_present(dir: &std::path::Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(EngineError::io(format!("removing {}", dir.display()), e)),
    }
}
