//! One physical log shared by the partitions of a node.
//!
//! Every partition (engine) writes its commit records into the node's log
//! under its own stream id, so that concurrent commits of all partitions share
//! each group fsync (the Cloud SQL Server paper's one log per node). Each
//! partition checkpoints on its own schedule and then may release the log
//! before its `replay_from`; a segment is deleted only when *every* partition
//! has released it.
//!
//! Partition floors live in memory, so after a restart the node must open
//! every partition before any log is released: truncation stays off until the
//! node calls [`SharedLog::allow_truncation`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tessera_log::{Log, LogConfig, Lsn};

use crate::error::{EngineError, Result};

pub struct SharedLog {
    log: Arc<Log>,
    /// Per stream: the lowest LSN its recovery still needs.
    floors: Mutex<HashMap<u32, Lsn>>,
    truncation_allowed: AtomicBool,
}

impl std::fmt::Debug for SharedLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedLog").field("floors", &*self.floors.lock()).finish_non_exhaustive()
    }
}

impl SharedLog {
    /// Opens (recovering the file level: torn tail, corruption) the node's log.
    pub fn open(config: LogConfig) -> Result<Arc<SharedLog>> {
        let (log, report) = Log::open(config)?;
        if let Some(cut) = &report.cut_tail {
            tracing::warn!(file = %cut.file.display(), offset = cut.offset, reason = %cut.reason, "cut a torn log tail");
        }
        Ok(Arc::new(SharedLog {
            log: Arc::new(log),
            floors: Mutex::new(HashMap::new()),
            truncation_allowed: AtomicBool::new(false),
        }))
    }

    pub fn open_dir(dir: impl Into<PathBuf>) -> Result<Arc<SharedLog>> {
        Self::open(LogConfig::new(dir))
    }

    pub fn log(&self) -> &Arc<Log> {
        &self.log
    }

    /// Call once every partition of the node is open.
    pub fn allow_truncation(&self) -> Result<()> {
        self.truncation_allowed.store(true, Ordering::SeqCst);
        self.truncate()
    }

    /// Registers a stream (at partition open) with the first LSN it needs.
    pub(crate) fn register(&self, stream: u32, floor: Lsn) -> Result<()> {
        let mut floors = self.floors.lock();
        if floors.contains_key(&stream) {
            return Err(EngineError::Internal(format!("log stream {stream} is already open")));
        }
        floors.insert(stream, floor);
        Ok(())
    }

    /// A partition no longer needs the log before `lsn`.
    pub(crate) fn release_before(&self, stream: u32, lsn: Lsn) -> Result<()> {
        self.floors.lock().insert(stream, lsn);
        self.truncate()
    }

    /// A partition that is deleted for good (not merely closed) stops holding
    /// the log back.
    pub fn forget_stream(&self, stream: u32) -> Result<()> {
        self.floors.lock().remove(&stream);
        self.truncate()
    }

    fn truncate(&self) -> Result<()> {
        if !self.truncation_allowed.load(Ordering::SeqCst) {
            return Ok(());
        }
        let min = self.floors.lock().values().copied().min();
        if let Some(min) = min {
            self.log.truncate_before(min)?;
        }
        Ok(())
    }
}
