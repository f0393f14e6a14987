//! A data group's state machine: the node's engines of the streams the
//! group replicates.
//!
//! Applying a committed entry installs its record into the engine of its
//! stream (opening a partition the first time its stream appears) through
//! the engine's replica path — unless the entry is this node's own proposal
//! still waiting in its engine, which is then only told that it committed
//! (`commit_log`). The engines live in memory; their durability is the
//! newest snapshot (checkpoints built from the log: `snapshot`) plus the
//! Raft log after it. A restarted node loads the snapshot, then replays the
//! log after it, up to the commit index it saved, before it serves or
//! votes. Installing a snapshot received from the primary replaces the
//! engines' contents the same way.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::Path;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use openraft::storage::{EntryResponder, RaftStateMachine};
use openraft::{EntryPayload, OptionalSend, RaftLogReader, RaftSnapshotBuilder};
use parking_lot::Mutex;
use tessera_engine::{Engine, Node, SYSTEM_STREAM};

use super::commit_log::Proposals;
use super::log_store::LogStore;
use super::priority::{LOW_PRIORITY_BYTES, lower_this_threads_priority};
use super::snapshot::{Snapshot, SnapshotFiles, SnapshotStore};
use super::type_config::{C, Command, LogId, SnapshotMeta, StoredMembership};

/// A data group's Raft.
pub type Raft = openraft::Raft<C, StateMachine>;

/// Whether a group replicates a stream.
pub type Owns = Arc<dyn Fn(u32) -> bool + Send + Sync>;

/// Makes a stream one of a group's: its commits are proposed to the group,
/// and the group replicates, snapshots and restores it.
pub type Adopt = Arc<dyn Fn(u32) + Send + Sync>;

#[derive(Default)]
struct Applied {
    last: Option<LogId>,
    membership: StoredMembership,
    /// The last applied position with no split record incomplete (and the
    /// membership there): snapshots are taken there, so that a node
    /// starting from one finds every part of a split record in the log.
    clean: (Option<LogId>, StoredMembership),
}

/// The parts of split records (see `types::RECORD_CHUNK`) seen so far.
#[derive(Default)]
pub(crate) struct Pending {
    records: HashMap<(u64, u64, u64), Parts>,
}

struct Parts {
    count: u32,
    pieces: BTreeMap<u32, bytes::Bytes>,
}

impl Pending {
    /// Takes one part; the whole record once its last part is in.
    pub(crate) fn add(&mut self, cmd: &Command) -> Option<Command> {
        let (index, count) = cmd.part?;
        let key = (cmd.origin, cmd.incarnation, cmd.ticket);
        let parts = self.records.entry(key).or_insert_with(|| Parts { count, pieces: BTreeMap::new() });
        parts.pieces.insert(index, cmd.record.clone());
        if parts.pieces.len() < parts.count as usize {
            return None;
        }
        let parts = self.records.remove(&key)?;
        let mut record = Vec::with_capacity(parts.pieces.values().map(|p| p.len()).sum());
        for piece in parts.pieces.into_values() {
            record.extend_from_slice(&piece);
        }
        Some(Command { part: None, record: record.into(), ..cmd.clone() })
    }

    /// A new primary's first entry: parts of records not complete by now
    /// were proposed by an earlier primary and lost with it (the rest of
    /// such a record would be in the log before this entry). Returns how
    /// many records were dropped.
    pub(crate) fn clear(&mut self) -> usize {
        let n = self.records.len();
        self.records.clear();
        n
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

/// Cheap to clone; clones share the node and the applied position.
#[derive(Clone)]
pub struct StateMachine {
    node: Arc<Node>,
    proposals: Arc<Proposals>,
    applied: Arc<Mutex<Applied>>,
    pending: Arc<Mutex<Pending>>,
    log: LogStore,
    snapshots: SnapshotStore,
    /// One snapshot is built at a time.
    building: Arc<tokio::sync::Mutex<()>>,
    /// The streams (engines) this group replicates; a snapshot it installs
    /// replaces those and leaves other groups' alone.
    owns: Owns,
    /// Makes a stream the group's when one of its entries, or a snapshot,
    /// brings a stream it did not have (a keyed database's partition made
    /// by a split on the primary). None for the system group, which has
    /// every stream no other group claimed.
    adopt: Option<Adopt>,
}

/// Records below this size, with no local writer in their engine, are
/// applied without leaving the task.
const SMALL_RECORD_BYTES: usize = 64 << 10;
/// Merge a stream's checkpoint files when a snapshot holds more than this many.
const SNAPSHOT_MERGE_FILES: usize = 4;
/// Records held in memory before a snapshot writes a checkpoint step.
const SNAPSHOT_STEP_BYTES: usize = 64 << 20;

/// Runs file work of a snapshot on a blocking thread.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> crate::error::Result<T> + Send + 'static,
) -> Result<T, io::Error> {
    tokio::task::spawn_blocking(f).await.map_err(io::Error::other)?.map_err(io::Error::other)
}

impl StateMachine {
    /// Loads the newest snapshot, if there is one, into the node's (empty)
    /// engines: the log replays from the entry after it.
    pub fn open(
        node: Arc<Node>,
        proposals: Arc<Proposals>,
        log: LogStore,
        snapshots: SnapshotStore,
        owns: Owns,
        adopt: Option<Adopt>,
    ) -> crate::error::Result<StateMachine> {
        let sm = StateMachine {
            node,
            proposals,
            applied: Arc::default(),
            pending: Arc::default(),
            log,
            snapshots,
            building: Arc::default(),
            owns,
            adopt,
        };
        if let Some((meta, dir)) = sm.snapshots.latest()? {
            sm.load_snapshot(&dir, &meta, "loaded the newest snapshot")
                .map_err(|e| crate::error::ReplicationError::Internal(e.to_string()))?;
        }
        Ok(sm)
    }

    /// Replaces the engines' contents with the snapshot in `dir`, which
    /// `meta` describes, and takes its position as the applied one.
    fn load_snapshot(&self, dir: &Path, meta: &SnapshotMeta, what: &'static str) -> io::Result<()> {
        let started = std::time::Instant::now();
        let rows = self.restore(dir)?;
        tracing::info!(
            index = meta.last_log_id.as_ref().map_or(0, |l| l.index),
            rows,
            ms = started.elapsed().as_millis() as u64,
            "{what}"
        );
        // A snapshot is taken where no split record is incomplete.
        self.pending.lock().clear();
        let mut a = self.applied.lock();
        a.last = meta.last_log_id;
        a.membership = meta.last_membership.clone();
        a.clean = (a.last, a.membership.clone());
        Ok(())
    }

    /// Replaces the contents of the group's engines with the snapshot in `dir`.
    fn restore(&self, dir: &Path) -> io::Result<usize> {
        let streams = super::snapshot::streams(dir).map_err(io::Error::other)?;
        for &stream in &streams {
            self.adopt_if_new(stream);
        }
        let mut rows = 0;
        for (stream, _) in self.node.partitions() {
            if (self.owns)(stream) && !streams.contains(&stream) {
                self.node.drop_partition(stream).map_err(io::Error::other)?;
            }
        }
        if (self.owns)(SYSTEM_STREAM) && !streams.contains(&SYSTEM_STREAM) {
            rows += self.node.system().restore_checkpoint(&dir.join("0")).map_err(io::Error::other)?;
        }
        for stream in streams {
            let engine = self.engine(stream).map_err(io::Error::other)?;
            rows += engine.restore_checkpoint(&dir.join(stream.to_string())).map_err(io::Error::other)?;
        }
        Ok(rows)
    }

    pub fn last_applied(&self) -> Option<u64> {
        self.applied.lock().last.as_ref().map(|l| l.index)
    }

    /// Makes `stream` the group's if it was not (see `adopt`).
    fn adopt_if_new(&self, stream: u32) {
        if let Some(adopt) = &self.adopt
            && !(self.owns)(stream)
        {
            tracing::info!(stream, "the group replicates a new stream (a partition its primary made)");
            adopt(stream);
        }
    }

    fn engine(&self, stream: u32) -> tessera_engine::Result<Arc<Engine>> {
        if stream == SYSTEM_STREAM {
            return Ok(self.node.system().clone());
        }
        match self.node.partition(stream) {
            Some(e) => Ok(e),
            None => self.node.open_partition(stream, true),
        }
    }

    fn apply_command(&self, cmd: &Command) -> io::Result<()> {
        if cmd.origin == self.proposals.me
            && cmd.incarnation == self.proposals.incarnation
            && self.proposals.tickets.claim_applied(cmd.ticket)
        {
            return Ok(());
        }
        self.adopt_if_new(cmd.stream);
        let engine = self.engine(cmd.stream).map_err(io::Error::other)?;
        let started = std::time::Instant::now();
        if cmd.record.len() < SMALL_RECORD_BYTES && !engine.has_local_writers() {
            // The common case on a secondary: microseconds of work, done on
            // this task (handing the runtime's core to another thread for it
            // would cost more than the apply).
            engine.apply_committed(&cmd.record).map_err(io::Error::other)?;
            return Ok(());
        }
        // The engine may wait for a demoted primary's sessions to unwind.
        tokio::task::block_in_place(|| {
            if cmd.record.len() < LOW_PRIORITY_BYTES {
                return engine.apply_committed(&cmd.record);
            }
            // A large record takes seconds of CPU: apply it on a thread of
            // lower priority, so that this node keeps answering heartbeats
            // on time where it shares its cores.
            std::thread::scope(|s| {
                std::thread::Builder::new()
                    .name("tessera-apply".into())
                    .spawn_scoped(s, || {
                        lower_this_threads_priority();
                        engine.apply_committed(&cmd.record)
                    })
                    .map_err(|e| tessera_engine::EngineError::Internal(format!("starting an apply thread: {e}")))?
                    .join()
                    .unwrap_or_else(|_| Err(tessera_engine::EngineError::Internal("the apply thread panicked".into())))
            })
        })
        .map_err(io::Error::other)?;
        if started.elapsed() > std::time::Duration::from_millis(200) {
            tracing::info!(
                stream = cmd.stream,
                bytes = cmd.record.len(),
                ms = started.elapsed().as_millis() as u64,
                "applied a large commit"
            );
        }
        Ok(())
    }
}

/// Builds a snapshot of the state as of the entry applied last when Raft
/// asked for it (later entries may be applied meanwhile: the snapshot is
/// made from the log, not from the engines).
pub struct Builder {
    sm: StateMachine,
    last: Option<LogId>,
    membership: StoredMembership,
}

impl RaftSnapshotBuilder<C> for Builder {
    type SnapshotData = SnapshotFiles;

    async fn build_snapshot(&mut self) -> Result<Snapshot, io::Error> {
        let _one = self.sm.building.lock().await;
        let meta = SnapshotMeta { last_log_id: self.last, last_membership: self.membership.clone() };
        let prev = self.sm.snapshots.latest().map_err(io::Error::other)?;
        let from = match &prev {
            Some((m, dir)) if m.last_log_id >= self.last => {
                return Ok(Snapshot { meta: m.clone(), snapshot: SnapshotFiles { dir: dir.clone() } });
            }
            Some((m, _)) => m.last_log_id.as_ref().map_or(0, |l| l.index + 1),
            None => 0,
        };
        let to = self.last.as_ref().map_or(0, |l| l.index);
        let store = self.sm.snapshots.clone();
        let prev_dir = prev.map(|(_, d)| d);
        let building = blocking({
            let store = store.clone();
            move || store.begin(prev_dir.as_deref(), to)
        })
        .await?;
        let Some(building) = building else {
            return Ok(Snapshot { meta, snapshot: SnapshotFiles { dir: store.dir_of(to) } });
        };
        // The entries after the previous snapshot, by stream, in log order,
        // one checkpoint step per `SNAPSHOT_STEP_BYTES` of records (usually
        // one step: a bound on memory for a long stretch of large commits).
        let mut records: BTreeMap<u32, Vec<Vec<u8>>> = BTreeMap::new();
        // The range starts and ends where no split record is incomplete.
        let mut split = Pending::default();
        let mut bytes = 0usize;
        let mut next = from;
        while next <= to && self.last.is_some() {
            let end = (next + 1024).min(to + 1);
            let entries = self.sm.log.clone().try_get_log_entries(next..end).await?;
            if entries.len() as u64 != end - next {
                // A snapshot installed from the primary meanwhile purged
                // them: it covers this one (an error here would stop Raft).
                if let Some((m, dir)) = self.sm.snapshots.latest().map_err(io::Error::other)?
                    && m.last_log_id >= self.last
                {
                    return Ok(Snapshot { meta: m, snapshot: SnapshotFiles { dir } });
                }
                return Err(io::Error::other(format!(
                    "the Raft log no longer holds entries {next}..{end} needed for a snapshot"
                )));
            }
            for e in entries {
                match e.payload {
                    EntryPayload::Normal(cmd) if cmd.part.is_none() => {
                        bytes += cmd.record.len();
                        records.entry(cmd.stream).or_default().push(cmd.record.to_vec());
                    }
                    EntryPayload::Normal(cmd) => {
                        if let Some(whole) = split.add(&cmd) {
                            bytes += whole.record.len();
                            records.entry(whole.stream).or_default().push(whole.record.to_vec());
                        }
                    }
                    EntryPayload::Blank => {
                        split.clear();
                    }
                    EntryPayload::Membership(_) => {}
                }
            }
            next = end;
            if bytes >= SNAPSHOT_STEP_BYTES {
                let (store, b, step) = (store.clone(), building.clone(), std::mem::take(&mut records));
                blocking(move || store.extend(&b, step, SNAPSHOT_MERGE_FILES)).await?;
                bytes = 0;
            }
        }
        let built = meta.clone();
        let dir = blocking(move || {
            store.extend(&building, records, SNAPSHOT_MERGE_FILES)?;
            store.complete(building, &built)
        })
        .await?;
        Ok(Snapshot { meta, snapshot: SnapshotFiles { dir } })
    }
}

impl RaftStateMachine<C> for StateMachine {
    type SnapshotData = SnapshotFiles;
    type SnapshotBuilder = Builder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), io::Error> {
        let a = self.applied.lock();
        Ok((a.last, a.membership.clone()))
    }

    async fn apply<S>(&mut self, mut entries: S) -> Result<(), io::Error>
    where
        S: Stream<Item = Result<EntryResponder<C>, io::Error>> + Unpin + OptionalSend,
    {
        while let Some(item) = entries.next().await {
            let (entry, responder) = item?;
            let index = entry.log_id.index;
            match &entry.payload {
                EntryPayload::Blank => {
                    let dropped = self.pending.lock().clear();
                    if dropped > 0 {
                        tracing::warn!(dropped, "dropped the parts of large commits an earlier primary did not finish");
                    }
                }
                EntryPayload::Normal(cmd) if cmd.part.is_none() => self.apply_command(cmd)?,
                EntryPayload::Normal(cmd) => {
                    let whole = self.pending.lock().add(cmd);
                    if let Some(whole) = whole {
                        self.apply_command(&whole)?;
                    }
                }
                EntryPayload::Membership(m) => {
                    self.applied.lock().membership = StoredMembership::new(Some(entry.log_id), m.clone());
                }
            }
            let clean = self.pending.lock().is_empty();
            let mut a = self.applied.lock();
            a.last = Some(entry.log_id);
            if clean {
                a.clean = (a.last, a.membership.clone());
            }
            drop(a);
            if let Some(r) = responder {
                r.send(index);
            }
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        // At the last position with no split record incomplete: usually the
        // last applied entry.
        let a = self.applied.lock();
        Builder { sm: self.clone(), last: a.clean.0, membership: a.clean.1.clone() }
    }

    async fn install_snapshot(&mut self, meta: &SnapshotMeta, snapshot: SnapshotFiles) -> Result<(), io::Error> {
        // Not while a snapshot is being built from the log this replaces.
        let _one = self.building.lock().await;
        let dir = self.snapshots.adopt(&snapshot.dir, meta).map_err(io::Error::other)?;
        tokio::task::block_in_place(|| self.load_snapshot(&dir, meta, "installed a snapshot from the primary"))
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, io::Error> {
        Ok(self
            .snapshots
            .latest()
            .map_err(io::Error::other)?
            .map(|(meta, dir)| Snapshot { meta, snapshot: SnapshotFiles { dir } }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(ticket: u64, index: u32, count: u32, piece: &[u8]) -> Command {
        Command {
            origin: 1,
            incarnation: 7,
            ticket,
            stream: 3,
            part: Some((index, count)),
            record: bytes::Bytes::copy_from_slice(piece),
        }
    }

    #[test]
    fn split_records_are_whole_once_every_part_is_in_whatever_the_order() {
        let mut p = Pending::default();
        assert!(p.add(&part(1, 2, 3, b"ef")).is_none());
        assert!(p.add(&part(2, 0, 2, b"xy")).is_none());
        assert!(p.add(&part(1, 0, 3, b"ab")).is_none());
        let whole = p.add(&part(1, 1, 3, b"cd")).expect("all three parts");
        assert_eq!((whole.record.as_ref(), whole.part, whole.stream, whole.ticket), (&b"abcdef"[..], None, 3, 1));
        assert!(!p.is_empty(), "ticket 2 still waits for a part");
        // A new primary's first entry: ticket 2's other part can no longer come.
        assert_eq!(p.clear(), 1);
        assert!(p.is_empty());
    }
}
