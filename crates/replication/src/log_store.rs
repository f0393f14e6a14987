//! The node group's Raft log, on disk.
//!
//! Raft's log is kept in a `tessera-log` log of its own (`raft-log/` in the
//! data directory): checksummed, segmented, group-committed frames. Every
//! change is a frame — an entry, a truncation of the uncommitted suffix, a
//! purge of the applied prefix, a vote, the commit index — and opening the
//! store replays the frames into memory. Appends return at once; a flusher
//! thread reports each batch to Raft when the log's group fsync has made it
//! durable, which is when Raft may count this node's copy toward a quorum.
//! A vote is durable before `save_vote` returns, as Raft requires.
//!
//! Entries stay in memory too (the log is read back only at start), and
//! nothing is purged yet: purging comes with snapshots (see the crate notes).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io;
use std::ops::RangeBounds;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use openraft::entry::RaftEntry;
use openraft::storage::{IOFlushed, RaftLogStorage};
use openraft::{EntryPayload, LogState, OptionalSend, RaftLogReader};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tessera_log::{Log, LogConfig, Lsn};

use crate::error::{ReplicationError, Result};
use crate::types::{C, Entry, LogId, Vote};

const STREAM: u32 = 0;

#[derive(Serialize, Deserialize)]
enum Frame {
    Entry(Entry),
    TruncateAfter(Option<LogId>),
    Purge(LogId),
    Vote(Vote),
    Committed(Option<LogId>),
}

#[derive(Default)]
struct State {
    entries: BTreeMap<u64, Entry>,
    last_purged: Option<LogId>,
    vote: Option<Vote>,
    committed: Option<LogId>,
}

struct Shared {
    log: Arc<Log>,
    state: Mutex<State>,
    flusher: std::sync::mpsc::Sender<(Lsn, IOFlushed<C>)>,
    /// The highest commit timestamp of any entry ever appended: a new
    /// primary starts its engines' clocks above it.
    max_ts: AtomicU64,
}

/// The Raft log store (also its reader: clones share everything).
#[derive(Clone)]
pub struct LogStore {
    shared: Arc<Shared>,
}

fn entry_ts(e: &Entry) -> u64 {
    match &e.payload {
        EntryPayload::Normal(cmd) => cmd.ts(),
        _ => 0,
    }
}

fn io_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

impl LogStore {
    /// Opens (creating) the log under `dir` and replays its frames.
    pub fn open(dir: &Path) -> Result<LogStore> {
        let (log, report) = Log::open(LogConfig::new(dir))?;
        if let Some(cut) = &report.cut_tail {
            tracing::warn!(file = %cut.file.display(), offset = cut.offset, reason = %cut.reason, "cut a torn Raft log tail");
        }
        let log = Arc::new(log);
        let mut state = State::default();
        let mut max_ts = 0;
        for rec in log.read_from(log.start_lsn())? {
            let rec = rec?;
            let frame: Frame = postcard::from_bytes(&rec.payload)
                .map_err(|e| ReplicationError::Codec(format!("Raft log frame at LSN {}: {e}", rec.lsn)))?;
            match frame {
                Frame::Entry(e) => {
                    max_ts = max_ts.max(entry_ts(&e));
                    state.entries.insert(e.index(), e);
                }
                Frame::TruncateAfter(last) => {
                    let from = last.map_or(0, |l| l.index + 1);
                    state.entries.split_off(&from);
                }
                Frame::Purge(upto) => {
                    state.entries = state.entries.split_off(&(upto.index + 1));
                    state.last_purged = Some(upto);
                }
                Frame::Vote(v) => state.vote = Some(v),
                Frame::Committed(c) => state.committed = c,
            }
        }
        let (tx, rx) = std::sync::mpsc::channel::<(Lsn, IOFlushed<C>)>();
        let flush_log = log.clone();
        std::thread::Builder::new()
            .name("tessera-raft-flush".into())
            .spawn(move || {
                // In order: durability is a prefix of the log.
                for (lsn, callback) in rx {
                    callback.io_completed(flush_log.wait_durable(lsn).map_err(io_err));
                }
            })
            .map_err(|e| ReplicationError::Internal(format!("starting the Raft log flusher: {e}")))?;
        Ok(LogStore {
            shared: Arc::new(Shared { log, state: Mutex::new(state), flusher: tx, max_ts: AtomicU64::new(max_ts) }),
        })
    }

    pub fn max_ts(&self) -> u64 {
        self.shared.max_ts.load(Ordering::SeqCst)
    }

    pub fn last_index(&self) -> Option<u64> {
        self.shared.state.lock().entries.keys().next_back().copied()
    }

    /// Whether the log holds anything at all (a fresh node's is empty).
    pub fn is_empty(&self) -> bool {
        let s = self.shared.state.lock();
        s.entries.is_empty() && s.vote.is_none() && s.last_purged.is_none()
    }

    pub fn close(&self) -> Result<()> {
        self.shared.log.close()?;
        Ok(())
    }

    fn write(&self, frame: &Frame) -> io::Result<Lsn> {
        let bytes = postcard::to_allocvec(frame).map_err(io_err)?;
        self.shared.log.append(STREAM, &bytes).map_err(io_err)
    }
}

impl RaftLogReader<C> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        Ok(self.shared.state.lock().entries.range(range).map(|(_, e)| e.clone()).collect())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        Ok(self.shared.state.lock().vote)
    }
}

impl RaftLogStorage<C> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<C>, io::Error> {
        let s = self.shared.state.lock();
        let last = s.entries.values().next_back().map(|e| e.log_id());
        Ok(LogState { last_purged_log_id: s.last_purged, last_log_id: last.or_else(|| s.last_purged) })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), io::Error> {
        let lsn = self.write(&Frame::Vote(*vote))?;
        self.shared.log.wait_durable(lsn).map_err(io_err)?;
        self.shared.state.lock().vote = Some(*vote);
        Ok(())
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), io::Error> {
        // A hint for restart (apply up to here before hearing from a
        // leader); it need not be durable at once.
        self.write(&Frame::Committed(committed))?;
        self.shared.state.lock().committed = committed;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, io::Error> {
        Ok(self.shared.state.lock().committed)
    }

    async fn append<I>(&mut self, entries: I, callback: IOFlushed<C>) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut last = None;
        let mut max_ts = 0;
        {
            // Frames go to the log in index order, and the entries become
            // readable at once (Raft may read them before they are durable).
            let mut s = self.shared.state.lock();
            for e in entries {
                last = Some(self.write(&Frame::Entry(e.clone()))?);
                max_ts = max_ts.max(entry_ts(&e));
                s.entries.insert(e.index(), e);
            }
        }
        self.shared.max_ts.fetch_max(max_ts, Ordering::SeqCst);
        match last {
            Some(lsn) => {
                self.shared.flusher.send((lsn, callback)).map_err(|_| io_err("the Raft log flusher stopped"))?
            }
            None => callback.io_completed(Ok(())),
        }
        Ok(())
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogId>) -> Result<(), io::Error> {
        let mut s = self.shared.state.lock();
        self.write(&Frame::TruncateAfter(last_log_id))?;
        let from = last_log_id.map_or(0, |l| l.index + 1);
        s.entries.split_off(&from);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        let mut s = self.shared.state.lock();
        self.write(&Frame::Purge(log_id))?;
        s.entries = s.entries.split_off(&(log_id.index + 1));
        s.last_purged = Some(log_id);
        Ok(())
    }
}
