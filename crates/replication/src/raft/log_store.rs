//! The Raft logs of a node's groups, on disk, in one shared log.
//!
//! Every Raft group on a node (the data groups, the manager's group) keeps
//! its log in one `tessera-log` log (`raft-log/` in the data directory):
//! checksummed, segmented, group-committed frames, each tagged with its
//! group (the log's stream), so one fsync makes every group's appends
//! durable — the paper's shared log. Every change is a frame — an entry, a
//! truncation of the uncommitted suffix, a purge of the applied prefix, a
//! vote, the commit index — and opening the log replays each group's
//! frames into that group's memory ([`SharedLog::group`] hands a group its
//! [`LogStore`]). Appends return at once; the log's
//! flusher thread reports each batch to Raft right after the group fsync
//! that made it durable (`Log::on_durable`), which is when Raft may count
//! this node's copy toward a quorum.
//! A vote is durable before `save_vote` returns, as Raft requires.
//!
//! Memory holds an index (log index → id and LSN of its frame) and a cache
//! of the newest entries, at most [`CACHE_BYTES`] of them beyond those not
//! yet durable; older entries (a replica catching up from far behind) are
//! read back from the file. Entries a snapshot holds are purged, and the
//! log segments below every group's oldest entry kept are deleted: a
//! group's vote, commit index and purge mark that lie below are written
//! again first, so each group's newest of each is always in the log.

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
use crate::raft::type_config::{C, Entry, LogId, Vote};

/// The system group's frames in the shared log (its stream; a
/// database's group's are tagged with its id).
pub const SYSTEM_LOG: u32 = 0;
/// The manager group's.
pub const MANAGER_LOG: u32 = u32::MAX;
/// The newest entries kept in memory (by record size).
pub const CACHE_BYTES: usize = 64 << 20;

#[derive(Serialize, Deserialize)]
enum Frame {
    Entry(Entry),
    TruncateAfter(Option<LogId>),
    Purge(LogId),
    Vote(Vote),
    Committed(Option<LogId>),
    /// The group was removed (its database dropped): replay forgets every
    /// frame of it before this one, and it writes no more.
    Forget,
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
    /// Where the newest purge, vote and commit-index frames end: the log
    /// may not be truncated above them before they are written again.
    purged_at: Option<Lsn>,
    vote_at: Option<Lsn>,
    committed_at: Option<Lsn>,
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

    /// The oldest position of the log this group's entries need (None:
    /// it holds none).
    fn first_entry_at(&self) -> Option<Lsn> {
        self.index.values().next().map(|(_, start, _)| *start)
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

/// One group's part of the shared log.
struct Shared {
    log: Arc<Log>,
    state: Mutex<State>,
    /// The highest commit timestamp of any entry ever appended: a new
    /// primary starts its engines' clocks above it.
    max_ts: AtomicU64,
    /// [`SharedLog::forget`] removed the group: nothing more is written.
    forgotten: std::sync::atomic::AtomicBool,
}

/// A node's log, shared by its Raft groups.
pub struct SharedLog {
    log: Arc<Log>,
    groups: Mutex<BTreeMap<u32, Arc<Shared>>>,
    /// One truncation at a time.
    truncating: Mutex<()>,
}

/// One group's Raft log store (also its reader: clones share everything).
#[derive(Clone)]
pub struct LogStore {
    shared: Arc<Shared>,
    home: Arc<SharedLog>,
    group: u32,
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

impl SharedLog {
    /// Opens (creating) the log under `dir` and replays every group's
    /// frames; at most `cache_bytes` of a group's (durable) entries stay in
    /// memory until the group says otherwise.
    pub fn open(dir: &Path, cache_bytes: usize) -> Result<Arc<SharedLog>> {
        SharedLog::open_with(LogConfig::new(dir), cache_bytes)
    }

    /// The same, with the log's own settings (segment size).
    pub fn open_with(config: LogConfig, cache_bytes: usize) -> Result<Arc<SharedLog>> {
        let (log, report) = Log::open(config)?;
        if let Some(cut) = &report.cut_tail {
            tracing::warn!(file = %cut.file.display(), offset = cut.offset, reason = %cut.reason, "cut a torn Raft log tail");
        }
        let log = Arc::new(log);
        let mut states: BTreeMap<u32, (State, u64)> = BTreeMap::new();
        for rec in log.read_from(log.start_lsn())? {
            let rec = rec?;
            let (state, max_ts) =
                states.entry(rec.stream).or_insert_with(|| (State { budget: cache_bytes, ..State::default() }, 0));
            match decode_frame(&rec.payload, rec.lsn)? {
                Frame::Entry(e) => {
                    *max_ts = (*max_ts).max(entry_ts(&e));
                    state.insert(e, rec.end, rec.payload.len());
                    state.evict(Lsn::MAX);
                }
                Frame::TruncateAfter(last) => state.truncate_from(last.map_or(0, |l| l.index + 1)),
                Frame::Purge(upto) => {
                    state.purge_upto(upto.index);
                    state.last_purged = Some(upto);
                    state.purged_at = Some(rec.end);
                }
                Frame::Vote(v) => {
                    state.vote = Some(v);
                    state.vote_at = Some(rec.end);
                }
                Frame::Committed(c) => {
                    state.committed = c;
                    state.committed_at = Some(rec.end);
                }
                Frame::Forget => {
                    states.remove(&rec.stream);
                }
            }
        }
        let groups = states
            .into_iter()
            .map(|(g, (state, max_ts))| {
                let shared = Shared {
                    log: log.clone(),
                    state: Mutex::new(state),
                    max_ts: AtomicU64::new(max_ts),
                    forgotten: Default::default(),
                };
                (g, Arc::new(shared))
            })
            .collect();
        Ok(Arc::new(SharedLog { log, groups: Mutex::new(groups), truncating: Mutex::new(()) }))
    }

    /// Group `group`'s log store, keeping at most `cache_bytes` of its
    /// durable entries in memory.
    pub fn group(self: &Arc<Self>, group: u32, cache_bytes: usize) -> LogStore {
        let shared = self
            .groups
            .lock()
            .entry(group)
            .or_insert_with(|| {
                Arc::new(Shared {
                    log: self.log.clone(),
                    state: Mutex::new(State { budget: cache_bytes, ..State::default() }),
                    max_ts: AtomicU64::new(0),
                    forgotten: Default::default(),
                })
            })
            .clone();
        {
            let mut s = shared.state.lock();
            s.budget = cache_bytes;
            s.evict(self.log.durable_lsn());
        }
        LogStore { shared, home: self.clone(), group }
    }

    pub fn close(&self) -> Result<()> {
        self.log.close()?;
        Ok(())
    }

    /// Whether the log holds anything of group `group`.
    pub fn holds(&self, group: u32) -> bool {
        self.groups.lock().contains_key(&group)
    }

    /// Removes group `group` (whose Raft has stopped for good): a durable
    /// frame tells replay to forget everything of it written before, its
    /// log stores write nothing more, and its entries no longer keep the
    /// log's segments from being deleted.
    pub fn forget(&self, group: u32) -> Result<()> {
        let Some(shared) = self.groups.lock().remove(&group) else { return Ok(()) };
        shared.forgotten.store(true, Ordering::SeqCst);
        let bytes = postcard::to_allocvec(&Frame::Forget).map_err(|e| ReplicationError::Codec(e.to_string()))?;
        let lsn = self.log.append(group, &bytes)?;
        self.log.wait_durable(lsn)?;
        let mut s = shared.state.lock();
        *s = State { budget: s.budget, ..State::default() };
        Ok(())
    }

    /// Deletes the segments below every group's oldest entry. A group's
    /// vote, commit-index and purge frames below that point are written
    /// again first (durably), so replay still finds the newest of each.
    fn truncate(&self) -> io::Result<()> {
        let _one = self.truncating.lock();
        let groups: Vec<(u32, Arc<Shared>)> = self.groups.lock().iter().map(|(g, s)| (*g, s.clone())).collect();
        let end = self.log.end_lsn();
        let keep_from = groups.iter().filter_map(|(_, s)| s.state.lock().first_entry_at()).min().unwrap_or(end);
        for (group, shared) in &groups {
            let mut s = shared.state.lock();
            let write = |frame: &Frame| -> io::Result<Lsn> {
                let bytes = postcard::to_allocvec(frame).map_err(io_err)?;
                self.log.append(*group, &bytes).map_err(io_err)
            };
            if let (Some(upto), Some(at)) = (s.last_purged, s.purged_at)
                && at <= keep_from
            {
                s.purged_at = Some(write(&Frame::Purge(upto))?);
            }
            if let (Some(v), Some(at)) = (s.vote, s.vote_at)
                && at <= keep_from
            {
                s.vote_at = Some(write(&Frame::Vote(v))?);
            }
            if s.committed_at.is_some_and(|at| at <= keep_from) {
                s.committed_at = Some(write(&Frame::Committed(s.committed))?);
            }
        }
        // Everything written so far — the purge mark that asked for this,
        // the frames written again — is durable before anything goes.
        self.log.wait_durable(self.log.end_lsn()).map_err(io_err)?;
        self.log.truncate_before(keep_from).map_err(io_err)
    }
}

impl LogStore {
    /// A log of one group alone, under `dir` (tests, tools).
    pub fn open(dir: &Path, cache_bytes: usize) -> Result<LogStore> {
        Ok(SharedLog::open(dir, cache_bytes)?.group(SYSTEM_LOG, cache_bytes))
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

    fn write(&self, frame: &Frame) -> io::Result<(Lsn, usize)> {
        if self.shared.forgotten.load(Ordering::SeqCst) {
            return Err(io::Error::other(format!("group {} was removed from this node", self.group)));
        }
        let bytes = postcard::to_allocvec(frame).map_err(io_err)?;
        Ok((self.shared.log.append(self.group, &bytes).map_err(io_err)?, bytes.len()))
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
        let lsn = {
            let mut s = self.shared.state.lock();
            let (lsn, _) = self.write(&Frame::Vote(*vote))?;
            s.vote = Some(*vote);
            s.vote_at = Some(lsn);
            lsn
        };
        self.shared.log.wait_durable(lsn).map_err(io_err)?;
        Ok(())
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), io::Error> {
        // A hint for restart (apply up to here before hearing from a
        // leader); it need not be durable at once.
        let mut s = self.shared.state.lock();
        let (lsn, _) = self.write(&Frame::Committed(committed))?;
        s.committed = committed;
        s.committed_at = Some(lsn);
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
    /// deletes the log segments that held nothing any group still needs
    /// (`SharedLog::truncate`).
    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        {
            let mut s = self.shared.state.lock();
            let (lsn, _) = self.write(&Frame::Purge(log_id))?;
            s.purge_upto(log_id.index);
            s.last_purged = Some(log_id);
            s.purged_at = Some(lsn);
        }
        self.home.truncate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::entry::RaftEntry;

    fn log_id(term: u64, index: u64) -> LogId {
        LogId::new(openraft::vote::leader_id_adv::LeaderId { term, node_id: 1 }, index)
    }

    fn entry(term: u64, index: u64, bytes: usize) -> Entry {
        let cmd = crate::raft::type_config::Command {
            origin: 1,
            incarnation: 0,
            ticket: index,
            stream: 0,
            part: None,
            record: bytes::Bytes::from(vec![7u8; bytes]),
        };
        Entry::new_normal(log_id(term, index), cmd)
    }

    fn small(dir: &Path) -> Arc<SharedLog> {
        let mut config = LogConfig::new(dir);
        config.segment_bytes = 4096;
        SharedLog::open_with(config, 1 << 20).unwrap()
    }

    fn block<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    async fn append(store: &mut LogStore, entries: Vec<Entry>) {
        store.append(entries, IOFlushed::<C>::noop()).await.unwrap();
        let log = &store.shared.log;
        log.wait_durable(log.end_lsn()).unwrap();
    }

    #[test]
    fn groups_share_one_log_and_truncation_keeps_what_each_still_needs() {
        let dir = tempfile::tempdir().unwrap();
        let shared = small(dir.path());
        let mut data = shared.group(SYSTEM_LOG, 1 << 20);
        let mut manager = shared.group(MANAGER_LOG, 1 << 20);
        block(async {
            // The manager votes once, early; then both groups append,
            // interleaved, over many segments.
            let vote = Vote::new(3, 2);
            manager.save_vote(&vote).await.unwrap();
            append(&mut manager, vec![entry(3, 1, 10)]).await;
            for i in 1..=200 {
                append(&mut data, vec![entry(1, i, 300)]).await;
            }
            append(&mut manager, vec![entry(3, 2, 10)]).await;
            data.save_committed(Some(log_id(1, 190))).await.unwrap();
            manager.save_committed(Some(log_id(3, 2))).await.unwrap();
            // The data group purges most of its log; the manager's entries
            // (one of them written before everything the data group purged)
            // keep the segments they are in.
            let before = std::fs::read_dir(dir.path()).unwrap().count();
            data.purge(log_id(1, 150)).await.unwrap();
            let after = std::fs::read_dir(dir.path()).unwrap().count();
            assert_eq!(before, after, "the manager's first entry pins the oldest segment");
            // Once the manager purges too, the segments go: its vote,
            // written before all of it, is written again first.
            manager.purge(log_id(3, 1)).await.unwrap();
            let after = std::fs::read_dir(dir.path()).unwrap().count();
            assert!(after < before, "segments below both groups' entries are deleted: {before} -> {after}");
            shared.close().unwrap();
        });
        // Reopened, each group finds its own state.
        let shared = small(dir.path());
        let mut data = shared.group(SYSTEM_LOG, 1 << 20);
        let mut manager = shared.group(MANAGER_LOG, 1 << 20);
        block(async {
            assert_eq!(manager.read_vote().await.unwrap(), Some(Vote::new(3, 2)));
            assert_eq!(data.read_vote().await.unwrap(), None);
            let state = data.get_log_state().await.unwrap();
            assert_eq!(state.last_purged_log_id, Some(log_id(1, 150)));
            assert_eq!(state.last_log_id, Some(log_id(1, 200)));
            let entries = data.try_get_log_entries(151..=200).await.unwrap();
            assert_eq!(entries.len(), 50);
            assert_eq!(data.read_committed().await.unwrap(), Some(log_id(1, 190)));
            let state = manager.get_log_state().await.unwrap();
            assert_eq!((state.last_purged_log_id, state.last_log_id), (Some(log_id(3, 1)), Some(log_id(3, 2))));
            assert_eq!(manager.try_get_log_entries(2..3).await.unwrap().len(), 1);
            assert_eq!(manager.read_committed().await.unwrap(), Some(log_id(3, 2)));
        });
    }
}
