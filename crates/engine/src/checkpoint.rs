//! Checkpoints in the spirit of Hekaton: built from the log stream alone.
//!
//! A checkpoint covers the commit timestamps `(previous C, C]`. It reads the
//! log records of that range and writes
//!
//! * a **data file**: the rows inserted (or updated: an update is a new
//!   version) in the range and still alive at `C`, as `(table, key, ts, row)`;
//! * a **delta file**: the identities `(table, key, ts)` of rows in *older*
//!   data files that the range deleted or replaced;
//! * a **manifest** naming every live data and delta file, the catalog as of
//!   `C`, and the log position recovery replays from.
//!
//! It never touches the in-memory tables, so writers never stop. Log records
//! are appended in an order that may differ slightly from timestamp order
//! (commits overlap), so the checkpoint takes `C` = the visible watermark
//! (every transaction up to `C` has appended), flushes the log, and keeps
//! `replay_from` at the first record it had to leave for the next checkpoint.
//! Log segments before `replay_from` are deleted.
//!
//! When there are too many data files, or the files hold far more than the
//! live data, they are **merged**: all data files minus all deltas are
//! rewritten as one data file covering `(0, C]`, so the on-disk size tracks
//! the live data. Data files are sorted by (table, key), so the merge is a
//! streaming k-way merge holding one row per file in memory.
//!
//! File formats are `tessera-log` checked files (magic, version, per-record
//! CRC, trailer), kinds `DATA`, `DLTA` and `MANI`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashSet};
use std::path::{Path, PathBuf};

use tessera_log::{CheckedFileReader, CheckedFileWriter, Lsn};

use crate::codec::{Decoder, Encoder};
use crate::engine::EngineInner;
use crate::error::{EngineError, Result};
use crate::mvcc::Timestamp;
use crate::record::{DdlOp, LogEntry, decode};
use crate::schema::{TableId, TableSpec};

pub const DATA: [u8; 4] = *b"DATA";
pub const DELTA: [u8; 4] = *b"DLTA";
pub const MANIFEST: [u8; 4] = *b"MANI";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileMeta {
    pub name: String,
    pub records: u64,
    pub bytes: u64,
}

/// The durable description of a checkpoint.
#[derive(Debug, Clone, Default)]
pub struct Manifest {
    pub seq: u64,
    pub ckpt_ts: Timestamp,
    pub replay_from: Lsn,
    pub next_table_id: TableId,
    pub catalog: Vec<TableSpec>,
    pub data: Vec<FileMeta>,
    pub deltas: Vec<FileMeta>,
}

/// What the engine remembers between checkpoints.
#[derive(Default)]
pub struct CheckpointState {
    pub current: Option<Manifest>,
    /// Log end when the current checkpoint was taken.
    pub log_end_at_checkpoint: Lsn,
}

#[derive(Debug, Clone, Default)]
pub struct CheckpointStats {
    pub seq: u64,
    pub ckpt_ts: Timestamp,
    pub records_read: u64,
    pub data_rows: u64,
    pub delta_rows: u64,
    pub merged: bool,
    pub data_files: usize,
    pub total_bytes: u64,
    pub replay_from: Lsn,
}

pub(crate) fn checkpoint_dir(inner: &EngineInner) -> Option<PathBuf> {
    inner.config.dir.as_ref().map(|d| d.join("checkpoint"))
}

pub(crate) fn log_bytes_since_checkpoint(inner: &EngineInner) -> u64 {
    let Some(log) = &inner.local_log else { return 0 };
    let last = inner.checkpoint.lock().log_end_at_checkpoint;
    log.end_lsn().saturating_sub(last)
}

type BatchKey = (TableId, Vec<u8>);

pub(crate) fn checkpoint(inner: &EngineInner) -> Result<Option<CheckpointStats>> {
    let (Some(log), Some(dir)) = (&inner.local_log, checkpoint_dir(inner)) else { return Ok(None) };
    let mut state = inner.checkpoint.lock();
    if !dir.exists() {
        std::fs::create_dir_all(&dir).map_err(|e| EngineError::io(format!("creating {}", dir.display()), e))?;
        // The directory entry itself must survive a power loss.
        if let Some(parent) = dir.parent() {
            sync_dir(parent)?;
        }
    }
    let prev = state.current.clone().unwrap_or_else(|| Manifest {
        replay_from: log.start_lsn(),
        next_table_id: 1,
        ..Default::default()
    });

    let c = inner.seq.visible();
    let end = log.flush()?;

    // Gather the records of (prev.ckpt_ts, c], in timestamp order.
    let mut included: Vec<(Timestamp, Lsn, Vec<u8>)> = Vec::new();
    let mut replay_from = end;
    let mut records_read = 0u64;
    for rec in log.read_from(prev.replay_from)? {
        let rec = rec?;
        if rec.stream != inner.config.stream {
            continue;
        }
        records_read += 1;
        let ts = decode(&rec.payload, rec.lsn)?.ts();
        if ts <= prev.ckpt_ts {
            continue;
        }
        if ts > c {
            replay_from = replay_from.min(rec.lsn);
            continue;
        }
        included.push((ts, rec.lsn, rec.payload));
    }
    included.sort_by_key(|(ts, _, _)| *ts);
    let step = write_step(&dir, prev, included, c, replay_from, inner.config.checkpoint_merge_files)?;
    let next = step.manifest;
    let (data_rows, delta_rows, merged) = (step.data_rows, step.delta_rows, step.merged);
    match &inner.config.shared_log {
        Some(shared) => shared.release_before(inner.config.stream, next.replay_from)?,
        None => log.truncate_before(next.replay_from)?,
    }

    let stats = CheckpointStats {
        seq: next.seq,
        ckpt_ts: next.ckpt_ts,
        records_read,
        data_rows,
        delta_rows,
        merged,
        data_files: next.data.len(),
        total_bytes: next.data.iter().chain(next.deltas.iter()).map(|f| f.bytes).sum(),
        replay_from: next.replay_from,
    };
    tracing::info!(?stats, "checkpoint written");
    state.current = Some(next);
    state.log_end_at_checkpoint = end;
    Ok(Some(stats))
}

/// Extends the checkpoint in `dir` (creating both) with `records`, commit
/// and DDL records of one engine taken from a log kept elsewhere — a
/// replicated log, whose snapshots are checkpoints built this way from its
/// committed entries — in that log's order. The result is what recovery
/// and [`crate::Engine::restore_checkpoint`] load.
pub fn extend_checkpoint(dir: &Path, records: Vec<Vec<u8>>, merge_files: usize) -> Result<CheckpointStats> {
    if !dir.exists() {
        std::fs::create_dir_all(dir).map_err(|e| EngineError::io(format!("creating {}", dir.display()), e))?;
        if let Some(parent) = dir.parent() {
            sync_dir(parent)?;
        }
    }
    let prev = read_latest_manifest(dir)?.unwrap_or_else(|| Manifest { next_table_id: 1, ..Default::default() });
    let records_read = records.len() as u64;
    let mut included = Vec::with_capacity(records.len());
    for (i, payload) in records.into_iter().enumerate() {
        let ts = decode(&payload, i as Lsn)?.ts();
        included.push((ts, i as Lsn, payload));
    }
    // Stable: records of one timestamp (a DDL record and its commit) keep their order.
    included.sort_by_key(|(ts, _, _)| *ts);
    let top = included.last().map_or(0, |(ts, _, _)| *ts);
    let step = write_step(dir, prev, included, top, 0, merge_files)?;
    let next = &step.manifest;
    sync_dir(dir)?;
    Ok(CheckpointStats {
        seq: next.seq,
        ckpt_ts: next.ckpt_ts,
        records_read,
        data_rows: step.data_rows,
        delta_rows: step.delta_rows,
        merged: step.merged,
        data_files: next.data.len(),
        total_bytes: next.data.iter().chain(next.deltas.iter()).map(|f| f.bytes).sum(),
        replay_from: 0,
    })
}

struct Step {
    manifest: Manifest,
    data_rows: u64,
    delta_rows: u64,
    merged: bool,
}

/// Writes the checkpoint that follows `prev` in `dir`: `included` are the
/// new records (commit and DDL payloads with their timestamps and log
/// positions), sorted by timestamp. Each key's newest version in the range
/// goes to a new data file; versions of older files that the range replaced
/// or deleted go to a new delta file.
fn write_step(
    dir: &Path,
    prev: Manifest,
    included: Vec<(Timestamp, Lsn, Vec<u8>)>,
    c: Timestamp,
    replay_from: Lsn,
    merge_files: usize,
) -> Result<Step> {
    let mut catalog: BTreeMap<TableId, TableSpec> = prev.catalog.iter().map(|t| (t.id, t.clone())).collect();
    let mut next_table_id = prev.next_table_id;
    let mut batch: BTreeMap<BatchKey, (Timestamp, Vec<u8>)> = BTreeMap::new();
    let mut deltas: Vec<(TableId, Timestamp, Vec<u8>)> = Vec::new();
    for (ts, lsn, payload) in &included {
        match decode(payload, *lsn)? {
            LogEntry::Commit { writes, .. } => {
                for w in writes {
                    let k = (w.table, w.key.to_vec());
                    // The version replaced is in this range (then it never
                    // reaches a file) or in an older file (then a delta
                    // names it). Ask the batch rather than compare with the
                    // previous checkpoint's timestamp: records taken from a
                    // replicated log come in log order, and a range of it
                    // may hold timestamps below the previous range's top.
                    if batch.get(&k).is_some_and(|(ts, _)| *ts == w.prev_ts) {
                        batch.remove(&k);
                    } else if w.prev_ts != 0 {
                        deltas.push((w.table, w.prev_ts, w.key.to_vec()));
                    }
                    if let Some(row) = w.row {
                        batch.insert(k, (*ts, row.to_vec()));
                    }
                }
            }
            LogEntry::Ddl { op, .. } => match op {
                DdlOp::CreateTable(spec) => {
                    next_table_id = next_table_id.max(spec.id + 1);
                    catalog.insert(spec.id, spec);
                }
                DdlOp::DropTable(id) => {
                    catalog.remove(&id);
                    batch.retain(|(t, _), _| *t != id);
                    deltas.retain(|(t, _, _)| *t != id);
                }
                DdlOp::TruncateTable { old, new } => {
                    if let Some(mut spec) = catalog.remove(&old) {
                        spec.id = new;
                        catalog.insert(new, spec);
                    }
                    next_table_id = next_table_id.max(new + 1);
                    batch.retain(|(t, _), _| *t != old);
                    deltas.retain(|(t, _, _)| *t != old);
                }
                DdlOp::CreateIndex(t, ix) => {
                    if let Some(spec) = catalog.get_mut(&t) {
                        spec.next_index_id = spec.next_index_id.max(ix.id + 1);
                        spec.secondary.push(ix);
                    }
                }
                DdlOp::DropIndex(t, ix) => {
                    if let Some(spec) = catalog.get_mut(&t) {
                        spec.secondary.retain(|i| i.id != ix);
                    }
                }
            },
        }
    }

    let seq = prev.seq + 1;
    let mut next = Manifest {
        seq,
        ckpt_ts: c.max(prev.ckpt_ts),
        replay_from,
        next_table_id,
        catalog: catalog.into_values().collect(),
        data: prev.data.clone(),
        deltas: prev.deltas.clone(),
    };
    let (data_rows, delta_rows) = (batch.len() as u64, deltas.len() as u64);
    if !batch.is_empty() {
        let name = format!("data-{seq:010}.ckpt");
        let mut w = CheckedFileWriter::create(dir.join(&name), DATA)?;
        for ((table, key), (ts, row)) in &batch {
            w.append(&encode_data_row(*table, *ts, key, row))?;
        }
        let s = w.finish()?;
        next.data.push(FileMeta { name, records: s.records, bytes: s.bytes });
    }
    if !deltas.is_empty() {
        let name = format!("delta-{seq:010}.ckpt");
        let mut w = CheckedFileWriter::create(dir.join(&name), DELTA)?;
        for (table, ts, key) in &deltas {
            w.append(&encode_delta(*table, *ts, key))?;
        }
        let s = w.finish()?;
        next.deltas.push(FileMeta { name, records: s.records, bytes: s.bytes });
    }
    let mut merged = false;
    if needs_merge(&next, merge_files) {
        next = merge(dir, next)?;
        merged = true;
    }
    write_manifest(dir, &next)?;
    remove_unreferenced(dir, &next);

    Ok(Step { manifest: next, data_rows, delta_rows, merged })
}

fn needs_merge(m: &Manifest, max_files: usize) -> bool {
    if m.data.len() > max_files.max(1) {
        return true;
    }
    // More deleted than live entries: the files are mostly dead weight.
    let data: u64 = m.data.iter().map(|f| f.records).sum();
    let deleted: u64 = m.deltas.iter().map(|f| f.records).sum();
    m.data.len() > 1 && deleted * 2 > data
}

/// Rewrites all data files minus all deltas as one data file, streaming: each
/// data file is sorted by (table, key), so a k-way merge holds one row per
/// file in memory, not the whole checkpoint.
fn merge(dir: &Path, m: Manifest) -> Result<Manifest> {
    let live_tables: HashSet<TableId> = m.catalog.iter().map(|t| t.id).collect();
    let deleted = load_deltas(dir, &m)?;
    let seq = m.seq + 1;
    let name = format!("data-{seq:010}.ckpt");
    let mut cursors = Vec::with_capacity(m.data.len());
    for f in &m.data {
        let path = dir.join(&f.name);
        let reader = CheckedFileReader::open(&path, DATA).map_err(|e| log_to_ckpt_error(&path, e))?;
        let mut c = DataCursor { reader, path, current: None };
        c.advance()?;
        cursors.push(c);
    }
    let mut heap = BinaryHeap::new();
    for (i, c) in cursors.iter().enumerate() {
        if let Some(r) = &c.current {
            heap.push(Reverse((r.table, r.key.clone(), i)));
        }
    }
    let mut w = CheckedFileWriter::create(dir.join(&name), DATA)?;
    while let Some(Reverse((_, _, i))) = heap.pop() {
        let r = cursors[i].current.take().expect("a cursor in the heap has a row");
        if live_tables.contains(&r.table) && !deleted.contains(&(r.table, r.ts, r.key.clone())) {
            w.append(&encode_data_row(r.table, r.ts, &r.key, &r.row))?;
        }
        cursors[i].advance()?;
        if let Some(next) = &cursors[i].current {
            heap.push(Reverse((next.table, next.key.clone(), i)));
        }
    }
    let s = w.finish()?;
    Ok(Manifest { seq, data: vec![FileMeta { name, records: s.records, bytes: s.bytes }], deltas: Vec::new(), ..m })
}

struct DataRow {
    table: TableId,
    ts: Timestamp,
    key: Vec<u8>,
    row: Vec<u8>,
}

struct DataCursor {
    reader: CheckedFileReader,
    path: PathBuf,
    current: Option<DataRow>,
}

impl DataCursor {
    fn advance(&mut self) -> Result<()> {
        self.current = match self.reader.next_record().map_err(|e| log_to_ckpt_error(&self.path, e))? {
            None => None,
            Some(rec) => {
                let (table, ts, key, row) = decode_data_row(rec, &self.path)?;
                Some(DataRow { table, ts, key: key.to_vec(), row: row.to_vec() })
            }
        };
        Ok(())
    }
}

fn decode_data_row<'a>(rec: &'a [u8], path: &Path) -> Result<(TableId, Timestamp, &'a [u8], &'a [u8])> {
    let mut d = Decoder::new(rec, 0);
    let bad = |e: EngineError| corrupt(path, e.to_string());
    let table = d.u32().map_err(bad)?;
    let ts = d.u64().map_err(bad)?;
    let key = d.bytes().map_err(bad)?;
    let row = d.bytes().map_err(bad)?;
    Ok((table, ts, key, row))
}

fn remove_unreferenced(dir: &Path, m: &Manifest) {
    let keep: HashSet<String> =
        m.data.iter().chain(m.deltas.iter()).map(|f| f.name.clone()).chain([manifest_name(m.seq)]).collect();
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let ours = name.ends_with(".ckpt") || name.ends_with(".tmp") || name.starts_with("MANIFEST-");
        if !keep.contains(&name) && ours {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| EngineError::io(format!("syncing directory {}", dir.display()), e))
}

pub(crate) fn manifest_name(seq: u64) -> String {
    format!("MANIFEST-{seq:010}")
}

fn write_manifest(dir: &Path, m: &Manifest) -> Result<()> {
    let mut e = Encoder::with_capacity(256);
    e.u64(m.seq);
    e.u64(m.ckpt_ts);
    e.u64(m.replay_from);
    e.u32(m.next_table_id);
    e.u32(m.catalog.len() as u32);
    for t in &m.catalog {
        t.encode(&mut e);
    }
    for files in [&m.data, &m.deltas] {
        e.u32(files.len() as u32);
        for f in files {
            e.str(&f.name);
            e.u64(f.records);
            e.u64(f.bytes);
        }
    }
    let mut w = CheckedFileWriter::create(dir.join(manifest_name(m.seq)), MANIFEST)?;
    w.append(&e.buf)?;
    w.finish()?;
    Ok(())
}

fn corrupt(path: &Path, reason: impl Into<String>) -> EngineError {
    EngineError::CorruptCheckpoint { file: path.to_path_buf(), reason: reason.into() }
}

fn log_to_ckpt_error(path: &Path, e: tessera_log::LogError) -> EngineError {
    match e {
        tessera_log::LogError::Corrupt { reason, offset, .. } => corrupt(path, format!("{reason} (offset {offset})")),
        tessera_log::LogError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            corrupt(path, "the file is missing")
        }
        other => EngineError::Log(other),
    }
}

/// Reads the newest manifest in `dir`, if any.
pub(crate) fn read_latest_manifest(dir: &Path) -> Result<Option<Manifest>> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(None) };
    let mut seqs: Vec<u64> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_prefix("MANIFEST-")).and_then(|s| s.parse().ok()))
        .collect();
    seqs.sort_unstable();
    let Some(seq) = seqs.pop() else { return Ok(None) };
    let path = dir.join(manifest_name(seq));
    let records = CheckedFileReader::read_all(&path, MANIFEST).map_err(|e| log_to_ckpt_error(&path, e))?;
    let [payload] = records.as_slice() else { return Err(corrupt(&path, "a manifest holds exactly one record")) };
    let mut d = Decoder::new(payload, 0);
    let bad = |e: EngineError| corrupt(&path, e.to_string());
    let (seq, ckpt_ts, replay_from, next_table_id) =
        (d.u64().map_err(bad)?, d.u64().map_err(bad)?, d.u64().map_err(bad)?, d.u32().map_err(bad)?);
    let n = d.u32().map_err(bad)?;
    let mut catalog = Vec::new();
    for _ in 0..n {
        catalog.push(TableSpec::decode(&mut d).map_err(bad)?);
    }
    let mut lists = [Vec::new(), Vec::new()];
    for list in lists.iter_mut() {
        for _ in 0..d.u32().map_err(bad)? {
            list.push(FileMeta {
                name: d.string().map_err(bad)?,
                records: d.u64().map_err(bad)?,
                bytes: d.u64().map_err(bad)?,
            });
        }
    }
    let [data, deltas] = lists;
    Ok(Some(Manifest { seq, ckpt_ts, replay_from, next_table_id, catalog, data, deltas }))
}

fn encode_data_row(table: TableId, ts: Timestamp, key: &[u8], row: &[u8]) -> Vec<u8> {
    let mut e = Encoder::with_capacity(24 + key.len() + row.len());
    e.u32(table);
    e.u64(ts);
    e.bytes(key);
    e.bytes(row);
    e.buf
}

fn encode_delta(table: TableId, ts: Timestamp, key: &[u8]) -> Vec<u8> {
    let mut e = Encoder::with_capacity(20 + key.len());
    e.u32(table);
    e.u64(ts);
    e.bytes(key);
    e.buf
}

/// Calls `f(table, ts, key, row)` for every row of a data file.
pub(crate) fn for_each_data_row(
    path: &Path,
    mut f: impl FnMut(TableId, Timestamp, &[u8], &[u8]) -> Result<()>,
) -> Result<()> {
    // Records are checked as they are read, and the trailer at the end; a
    // damaged file fails the whole recovery, so rows loaded before the
    // damage was found never serve anyone.
    let mut r = CheckedFileReader::open(path, DATA).map_err(|e| log_to_ckpt_error(path, e))?;
    while let Some(rec) = r.next_record().map_err(|e| log_to_ckpt_error(path, e))? {
        let (table, ts, key, row) = decode_data_row(rec, path)?;
        f(table, ts, key, row)?;
    }
    Ok(())
}

pub(crate) type DeletedSet = HashSet<(TableId, Timestamp, Vec<u8>)>;

pub(crate) fn load_deltas(dir: &Path, m: &Manifest) -> Result<DeletedSet> {
    let mut set = HashSet::new();
    for f in &m.deltas {
        let path = dir.join(&f.name);
        for rec in CheckedFileReader::read_all(&path, DELTA).map_err(|e| log_to_ckpt_error(&path, e))? {
            let mut d = Decoder::new(&rec, 0);
            let bad = |e: EngineError| corrupt(&path, e.to_string());
            set.insert((d.u32().map_err(bad)?, d.u64().map_err(bad)?, d.bytes().map_err(bad)?.to_vec()));
        }
    }
    Ok(set)
}
