//! The node group's Raft log, on disk.
//!
//! Raft's log is kept in a `tessera-log` log of its own (`raft-log/` in the
//! data directory): checksummed, segmented, group-committed frames. Every
//! change is a frame — an entry, a truncation of the uncommitted suffix, a
//! purge of the applied prefix, a vote, the commit index — and opening the
//! store replays the frames into memory. Appends return at once; the log's
//! flusher thread reports each batch to Raft right after the group fsync
//! that made it durable (`Log::on_durable`), which is when Raft may count
//! this node's copy toward a quorum.
//! A vote is durable before `save_vote` returns, as Raft requires.
//!
//! Memory holds an index (log index → id and LSN of its frame) and a cache
//! of the newest entries, at most [`CACHE_BYTES`] of them beyond those not
//! yet durable; older entries (a replica catching up from far behind) are
//! read back from the file. Entries a snapshot holds are purged, and the
//! log segments below the oldest entry kept are deleted.

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
/// The newest entries kept in memory (by record size).
pub const CACHE_BYTES: usize = 64 << 20;

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
    /// Every entry in the log: its id and where its frame starts and ends.
    index: BTreeMap<u64, (LogId, Lsn, Lsn)>,
    /// The newest entries, with their sizes.
    cache: BTreeMap<u64, (Entry, usize)>,
    cache_bytes: usize,
    /// The cache's budget in bytes.
    budget: usize,
    last_purged: Option<LogId>,
    vote: Option<Vote>,
    committed: Option<LogId>,
}

impl State {
    /// `end` is the frame's end LSN (as appending returns it).
    fn insert(&mut self, e: Entry, end: Lsn, size: usize) {
        let i = e.index();
        self.index.insert(i, (e.log_id(), end - tessera_log::frame_len(size), end));
        if let Some((_, old)) = self.cache.insert(i, (e, size)) {
            self.cache_bytes -= old;
        }
        self.cache_bytes += size;
    }

    fn truncate_from(&mut self, from: u64) {
        self.index.split_off(&from);
        for (_, (_, size)) in self.cache.split_off(&from) {
            self.cache_bytes -= size;
        }
    }

    fn purge_upto(&mut self, upto: u64) {
        self.index = self.index.split_off(&(upto + 1));
        let kept = self.cache.split_off(&(upto + 1));
        for (_, (_, size)) in std::mem::replace(&mut self.cache, kept) {
            self.cache_bytes -= size;
        }
    }

    /// Drops the oldest cached entries beyond the budget, keeping those
    /// not yet durable (only the cache can serve them).
    fn evict(&mut self, durable: Lsn) {
        while self.cache_bytes > self.budget {
            let Some((&i, _)) = self.cache.iter().next() else { break };
            if self.index.get(&i).is_none_or(|(_, _, end)| *end > durable) {
                break;
            }
            let (_, size) = self.cache.remove(&i).expect("present");
            self.cache_bytes -= size;
        }
    }
}

struct Shared {
    log: Arc<Log>,
    state: Mutex<State>,
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
    /// Opens (creating) the log under `dir` and replays its frames; at most
    /// `cache_bytes` of (durable) entries stay in memory.
    pub fn open(dir: &Path, cache_bytes: usize) -> Result<LogStore> {
        let (log, report) = Log::open(LogConfig::new(dir))?;
        if let Some(cut) = &report.cut_tail {
            tracing::warn!(file = %cut.file.display(), offset = cut.offset, reason = %cut.reason, "cut a torn Raft log tail");
        }
        let log = Arc::new(log);
        let mut state = State { budget: cache_bytes, ..State::default() };
        let mut max_ts = 0;
        for rec in log.read_from(log.start_lsn())? {
            let rec = rec?;
            match decode_frame(&rec.payload, rec.lsn)? {
                Frame::Entry(e) => {
                    max_ts = max_ts.max(entry_ts(&e));
                    state.insert(e, rec.end, rec.payload.len());
                    state.evict(Lsn::MAX);
                }
                Frame::TruncateAfter(last) => state.truncate_from(last.map_or(0, |l| l.index + 1)),
                Frame::Purge(upto) => {
                    state.purge_upto(upto.index);
                    state.last_purged = Some(upto);
                }
                Frame::Vote(v) => state.vote = Some(v),
                Frame::Committed(c) => state.committed = c,
            }
        }
        Ok(LogStore { shared: Arc::new(Shared { log, state: Mutex::new(state), max_ts: AtomicU64::new(max_ts) }) })
    }

    pub fn max_ts(&self) -> u64 {
        self.shared.max_ts.load(Ordering::SeqCst)
    }

    pub fn last_index(&self) -> Option<u64> {
        self.shared.state.lock().index.keys().next_back().copied()
    }

    /// Whether the log holds anything at all (a fresh node's is empty).
    pub fn is_empty(&self) -> bool {
        let s = self.shared.state.lock();
        s.index.is_empty() && s.vote.is_none() && s.last_purged.is_none()
    }

    /// Bytes of entries held in memory.
    pub fn cached_bytes(&self) -> usize {
        self.shared.state.lock().cache_bytes
    }

    /// The entries with these indexes (and frame start LSNs): from the
    /// cache, or read back from the file (which holds them durably: only
    /// durable ones leave the cache).
    fn entries(&self, wanted: Vec<(u64, Lsn)>) -> Result<Vec<Entry>> {
        let mut out = Vec::with_capacity(wanted.len());
        let mut missing = Vec::new();
        {
            let s = self.shared.state.lock();
            for (i, lsn) in &wanted {
                match s.cache.get(i) {
                    Some((e, _)) => out.push(Some(e.clone())),
                    None => {
                        out.push(None);
                        missing.push((*i, *lsn));
                    }
                }
            }
        }
        if !missing.is_empty() {
            let mut reader = self.shared.log.read_from(missing[0].1)?;
            let mut found = std::collections::HashMap::new();
            let mut next = missing.iter().peekable();
            while let Some(&&(i, lsn)) = next.peek() {
                let Some(rec) = reader.next() else { break };
                let rec = rec?;
                if rec.lsn < lsn {
                    continue;
                }
                if rec.lsn > lsn {
                    return Err(ReplicationError::Internal(format!("Raft log entry {i} is not at LSN {lsn}")));
                }
                match decode_frame(&rec.payload, rec.lsn)? {
                    Frame::Entry(e) if e.index() == i => {
                        found.insert(i, e);
                    }
                    _ => return Err(ReplicationError::Internal(format!("LSN {lsn} does not hold Raft log entry {i}"))),
                }
                next.next();
            }
            for (slot, (i, _)) in out.iter_mut().zip(&wanted) {
                if slot.is_none() {
                    *slot = Some(found.remove(i).ok_or_else(|| {
                        ReplicationError::Internal(format!("Raft log entry {i} could not be read back"))
                    })?);
                }
            }
        }
        Ok(out.into_iter().map(|e| e.expect("filled")).collect())
    }

    pub fn close(&self) -> Result<()> {
        self.shared.log.close()?;
        Ok(())
    }

    fn write(&self, frame: &Frame) -> io::Result<(Lsn, usize)> {
        let bytes = postcard::to_allocvec(frame).map_err(io_err)?;
        Ok((self.shared.log.append(STREAM, &bytes).map_err(io_err)?, bytes.len()))
    }
}

fn decode_frame(payload: &[u8], lsn: Lsn) -> Result<Frame> {
    postcard::from_bytes(payload).map_err(|e| ReplicationError::Codec(format!("Raft log frame at LSN {lsn}: {e}")))
}

impl RaftLogReader<C> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        let wanted: Vec<(u64, Lsn)> =
            self.shared.state.lock().index.range(range).map(|(i, (_, start, _))| (*i, *start)).collect();
        self.entries(wanted).map_err(io_err)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        Ok(self.shared.state.lock().vote)
    }
}

impl RaftLogStorage<C> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<C>, io::Error> {
        let s = self.shared.state.lock();
        let last = s.index.values().next_back().map(|(id, _, _)| *id);
        Ok(LogState { last_purged_log_id: s.last_purged, last_log_id: last.or_else(|| s.last_purged) })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), io::Error> {
        let (lsn, _) = self.write(&Frame::Vote(*vote))?;
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
                let (lsn, size) = self.write(&Frame::Entry(e.clone()))?;
                last = Some(lsn);
                max_ts = max_ts.max(entry_ts(&e));
                s.insert(e, lsn, size);
            }
            s.evict(self.shared.log.durable_lsn());
        }
        self.shared.max_ts.fetch_max(max_ts, Ordering::SeqCst);
        match last {
            // Reported from the log's flusher thread right after its fsync.
            Some(lsn) => self.shared.log.on_durable(lsn, Box::new(move |r| callback.io_completed(r.map_err(io_err)))),
            None => callback.io_completed(Ok(())),
        }
        Ok(())
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogId>) -> Result<(), io::Error> {
        let mut s = self.shared.state.lock();
        self.write(&Frame::TruncateAfter(last_log_id))?;
        s.truncate_from(last_log_id.map_or(0, |l| l.index + 1));
        Ok(())
    }

    /// Forgets the entries up to `log_id` (a snapshot holds them) and
    /// deletes the log segments that held nothing else: the frames there
    /// that still matter — the vote and the commit index — are written again
    /// first, durably, so that the newest of each is always in the log.
    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        let keep_from = {
            let mut s = self.shared.state.lock();
            self.write(&Frame::Purge(log_id))?;
            s.purge_upto(log_id.index);
            s.last_purged = Some(log_id);
            if let Some(v) = s.vote {
                self.write(&Frame::Vote(v))?;
            }
            let (end, _) = self.write(&Frame::Committed(s.committed))?;
            self.shared.log.wait_durable(end).map_err(io_err)?;
            s.index.values().next().map_or(end, |(_, start, _)| *start)
        };
        self.shared.log.truncate_before(keep_from).map_err(io_err)?;
        Ok(())
    }
}
