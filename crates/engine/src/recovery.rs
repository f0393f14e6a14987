//! Recovery: newest checkpoint, then the log tail.
//!
//! 1. Read the newest manifest; create its tables and indexes (empty).
//! 2. Load the delete set from every delta file, then load the data files in
//!    parallel (one thread per file, up to `recovery_threads`), skipping rows
//!    the delete set names. Indexes fill as rows go in.
//! 3. Replay the log from the manifest's `replay_from`, skipping records the
//!    checkpoint already holds (timestamp <= its `ckpt_ts`).
//! 4. Restart the clock after the largest timestamp seen.
//!
//! Any damage to a checkpoint file, or to the log before its tail, stops
//! recovery with a corruption error that names the file; a torn log tail was
//! already cut by `Log::open`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::apply::{apply_entry, load_row};
use crate::checkpoint::{Manifest, checkpoint_dir, for_each_data_row, load_deltas, read_latest_manifest};
use crate::engine::EngineInner;
use crate::error::{EngineError, Result};
use crate::record::{DdlOp, decode};

pub(crate) fn recover(inner: &Arc<EngineInner>) -> Result<()> {
    let started = std::time::Instant::now();
    let log = inner.local_log.clone().expect("recovery needs a log");
    let dir = checkpoint_dir(inner).expect("recovery needs a directory");
    let manifest = read_latest_manifest(&dir)?;
    let mut max_ts = 0;
    let mut replay_from = log.start_lsn();
    let mut loaded_rows = 0usize;
    if let Some(m) = &manifest {
        loaded_rows = load_checkpoint(inner, &dir, m)?;
        max_ts = m.ckpt_ts;
        replay_from = m.replay_from.max(log.start_lsn());
        if m.replay_from < log.start_lsn() {
            return Err(EngineError::CorruptCheckpoint {
                file: dir.join(crate::checkpoint::manifest_name(m.seq)),
                reason: format!("replay starts at LSN {} but the log begins at {}", m.replay_from, log.start_lsn()),
            });
        }
    }
    let log_dir = || inner.config.dir.as_ref().map(|d| d.join("log")).unwrap_or_default();
    // (In a shared log other partitions' checkpoints move the start, so a
    // partition without a checkpoint may legitimately begin later.)
    if manifest.is_none() && log.start_lsn() != 0 && inner.config.shared_log.is_none() {
        return Err(EngineError::Log(tessera_log::LogError::Corrupt {
            file: log_dir(),
            offset: log.start_lsn(),
            reason: format!(
                "the log starts at LSN {} but there is no checkpoint holding what came before",
                log.start_lsn()
            ),
        }));
    }
    if replay_from > log.durable_lsn() {
        // The checkpoint says the log was durable up to here, but the log
        // (after cutting a damaged tail) ends earlier: records once durable
        // were damaged, and appending here would leave a gap.
        let last_segment = std::fs::read_dir(log_dir())
            .ok()
            .and_then(|entries| {
                entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "log")).max()
            })
            .unwrap_or_else(log_dir);
        return Err(EngineError::Log(tessera_log::LogError::Corrupt {
            file: last_segment,
            offset: log.durable_lsn(),
            reason: format!(
                "the checkpoint replays from LSN {replay_from} but the log ends at LSN {}; damage at the end of the log reached records the checkpoint relies on",
                log.durable_lsn()
            ),
        }));
    }
    if manifest.is_none() && inner.config.fresh_stream {
        // A stream allocated just now has no records anywhere in the log.
        replay_from = log.durable_lsn();
    }
    let ckpt_ts = manifest.as_ref().map_or(0, |m| m.ckpt_ts);
    let mut replayed = 0u64;
    for rec in log.read_from(replay_from)? {
        let rec = rec?;
        if rec.stream != inner.config.stream {
            continue;
        }
        let entry = decode(&rec.payload, rec.lsn)?;
        let ts = entry.ts();
        if ts <= ckpt_ts {
            continue;
        }
        apply_entry(inner, &entry)?;
        max_ts = max_ts.max(ts);
        replayed += 1;
    }
    inner.seq.reset(max_ts);
    {
        let mut st = inner.checkpoint.lock();
        st.current = manifest;
        st.log_end_at_checkpoint = replay_from;
    }
    inner.gc.drain(inner);
    tracing::info!(
        loaded_rows,
        replayed,
        max_ts,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "recovery complete"
    );
    Ok(())
}

/// Creates the manifest's tables and loads its data files (in parallel,
/// skipping the rows its delta files delete) into an engine that has none
/// of them. Returns the number of rows loaded.
pub(crate) fn load_checkpoint(inner: &EngineInner, dir: &std::path::Path, m: &Manifest) -> Result<usize> {
    for spec in &m.catalog {
        inner.apply_ddl(&DdlOp::CreateTable(spec.clone()))?;
    }
    inner.catalog.write().next_table_id = m.next_table_id;
    let deleted = load_deltas(dir, m)?;
    let next_file = AtomicUsize::new(0);
    let rows = AtomicUsize::new(0);
    let threads = inner.config.recovery_threads.clamp(1, m.data.len().max(1));
    let results: Vec<Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| -> Result<()> {
                    loop {
                        let i = next_file.fetch_add(1, Ordering::Relaxed);
                        let Some(f) = m.data.get(i) else { return Ok(()) };
                        let mut guard = crossbeam_epoch::pin();
                        // Rows of a file come grouped by table: look each table up once.
                        let mut current: Option<(u32, Option<Arc<crate::table::Table>>)> = None;
                        let mut n = 0usize;
                        for_each_data_row(&dir.join(&f.name), |table, ts, key, row| {
                            if !deleted.is_empty() && deleted.contains(&(table, ts, key.to_vec())) {
                                return Ok(());
                            }
                            if current.as_ref().is_none_or(|(id, _)| *id != table) {
                                current = Some((table, inner.table_by_id(table)));
                            }
                            if let Some((_, Some(t))) = &current {
                                load_row(inner, t, key, ts, row, &guard)?;
                                n += 1;
                                if n.is_multiple_of(4096) {
                                    guard.repin();
                                }
                            }
                            Ok(())
                        })?;
                        rows.fetch_add(n, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(EngineError::Internal("a recovery thread panicked".into()))))
            .collect()
    });
    for r in results {
        r?;
    }
    Ok(rows.into_inner())
}
