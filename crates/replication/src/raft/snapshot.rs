//! Snapshots: the node's engines as of a Raft log index, as checkpoints.
//!
//! A snapshot is a directory `snapshots/<index>/` holding one engine
//! checkpoint per stream (`0/` for the system engine, `<stream>/` for each
//! partition: the manifest, data and delta files of `tessera-engine`'s
//! checkpoints) and a `META` file naming the last log entry it covers and
//! the membership then. It is built the way the engine builds checkpoints,
//! from the log alone, never from the live tables: the previous snapshot's
//! files (hard links: checkpoint files are never changed once written) plus
//! one checkpoint step per stream over the records of the entries after it.
//! The result is exact for its index on any node, primary or not, without
//! stopping writers or applying.
//!
//! A snapshot directory appears by renaming a finished temporary directory
//! (`tmp-…` when built, `recv-…` when received from the primary), after its
//! files and `META` are durable, so a crash leaves either the old snapshot
//! or the new one. The newest two are kept (one may be on its way to a
//! replica while the next is built).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::type_config::{C, SnapshotMeta};
use crate::error::{ReplicationError, Result};

const META: &str = "META";

/// Bytes of a snapshot file per message, when a snapshot is sent to a replica.
pub const SNAPSHOT_CHUNK: usize = 1 << 20;

/// A snapshot's files: openraft's snapshot data for a data group's state machine.
#[derive(Debug, Clone)]
pub struct SnapshotFiles {
    pub dir: PathBuf,
}

/// A data group's snapshot, as Raft hands it around.
pub type Snapshot = openraft::type_config::alias::SnapshotOf<C, SnapshotFiles>;

/// A snapshot being built (see [`SnapshotStore::begin`]).
#[derive(Debug, Clone)]
pub struct Building {
    tmp: PathBuf,
    done: PathBuf,
    index: u64,
}

/// The snapshots of one node, under `<data>/snapshots`.
#[derive(Debug, Clone)]
pub struct SnapshotStore {
    root: PathBuf,
}

fn io(what: impl std::fmt::Display, e: std::io::Error) -> ReplicationError {
    ReplicationError::Internal(format!("{what}: {e}"))
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir).and_then(|f| f.sync_all()).map_err(|e| io(format!("syncing {}", dir.display()), e))
}

/// The name of the snapshot covering the log up to `index`: every node's
/// snapshot at one index holds the same state (Raft's committed prefix).
fn name(index: u64) -> String {
    format!("{index:020}")
}

impl SnapshotStore {
    /// Opens (creating) the store; unfinished directories are removed.
    pub fn open(root: impl Into<PathBuf>) -> Result<SnapshotStore> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(|e| io(format!("creating {}", root.display()), e))?;
        for e in std::fs::read_dir(&root).map_err(|e| io(format!("listing {}", root.display()), e))?.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with("tmp-") || n.starts_with("recv-") {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
        Ok(SnapshotStore { root })
    }

    /// The newest finished snapshot, if any.
    pub fn latest(&self) -> Result<Option<(SnapshotMeta, PathBuf)>> {
        let mut names: Vec<String> = std::fs::read_dir(&self.root)
            .map_err(|e| io(format!("listing {}", self.root.display()), e))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.len() == 20 && n.bytes().all(|b| b.is_ascii_digit()))
            .collect();
        names.sort();
        match names.pop() {
            None => Ok(None),
            Some(n) => {
                let dir = self.root.join(n);
                Ok(Some((read_meta(&dir)?, dir)))
            }
        }
    }

    /// The directory of the finished snapshot covering the log up to `index`.
    pub fn dir_of(&self, index: u64) -> PathBuf {
        self.root.join(name(index))
    }

    /// Starts the snapshot covering the log up to `index` from `prev` (the
    /// newest snapshot, older than it); None if that snapshot exists.
    pub fn begin(&self, prev: Option<&Path>, index: u64) -> Result<Option<Building>> {
        let done = self.dir_of(index);
        if done.join(META).exists() {
            return Ok(None);
        }
        let tmp = self.root.join(format!("tmp-{}", name(index)));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).map_err(|e| io(format!("creating {}", tmp.display()), e))?;
        if let Some(prev) = prev {
            for stream in streams(prev)? {
                link_dir(&prev.join(stream.to_string()), &tmp.join(stream.to_string()))?;
            }
        }
        Ok(Some(Building { tmp, done, index }))
    }

    /// Adds the next entries' commit and DDL records, by stream, in log
    /// order: one checkpoint step per stream.
    pub fn extend(&self, b: &Building, records: BTreeMap<u32, Vec<Vec<u8>>>, merge_files: usize) -> Result<()> {
        for (stream, recs) in records {
            let n = recs.len();
            let stats =
                tessera_engine::checkpoint::extend_checkpoint(&b.tmp.join(stream.to_string()), recs, merge_files)
                    .map_err(|e| ReplicationError::Internal(format!("snapshot of stream {stream}: {e}")))?;
            tracing::debug!(stream, records = n, rows = stats.data_rows, "snapshot stream extended");
        }
        Ok(())
    }

    /// Finishes the snapshot `meta` describes and makes it the newest.
    pub fn complete(&self, b: Building, meta: &SnapshotMeta) -> Result<PathBuf> {
        write_meta(&b.tmp, meta)?;
        self.finish(&b.tmp, &b.done)?;
        tracing::info!(index = b.index, dir = %b.done.display(), "snapshot built");
        Ok(b.done)
    }

    /// Where a snapshot being received from the primary is written.
    pub fn receive_dir(&self, index: u64) -> PathBuf {
        self.root.join(format!("recv-{}", name(index)))
    }

    /// Takes a completely received snapshot in as this node's newest.
    pub fn adopt(&self, received: &Path, meta: &SnapshotMeta) -> Result<PathBuf> {
        let index = meta.last_log_id.as_ref().map_or(0, |l| l.index);
        let done = self.root.join(name(index));
        if received == done {
            return Ok(done);
        }
        for stream in streams(received)? {
            let dir = received.join(stream.to_string());
            for e in std::fs::read_dir(&dir).map_err(|e| io(format!("listing {}", dir.display()), e))?.flatten() {
                std::fs::File::open(e.path())
                    .and_then(|f| f.sync_all())
                    .map_err(|e| io(format!("syncing {}", dir.display()), e))?;
            }
            sync_dir(&dir)?;
        }
        write_meta(received, meta)?;
        if done.exists() {
            std::fs::remove_dir_all(&done).map_err(|e| io(format!("removing {}", done.display()), e))?;
        }
        self.finish(received, &done)?;
        Ok(done)
    }

    fn finish(&self, tmp: &Path, done: &Path) -> Result<()> {
        sync_dir(tmp)?;
        std::fs::rename(tmp, done).map_err(|e| io(format!("renaming {} to {}", tmp.display(), done.display()), e))?;
        sync_dir(&self.root)?;
        self.prune(done);
        Ok(())
    }

    /// Removes snapshots older than the two newest (`newest` among them).
    fn prune(&self, newest: &Path) {
        let Ok(entries) = std::fs::read_dir(&self.root) else { return };
        let mut names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.len() == 20 && n.bytes().all(|b| b.is_ascii_digit()))
            .collect();
        names.sort();
        let keep_from = names.len().saturating_sub(2);
        for n in &names[..keep_from] {
            let dir = self.root.join(n);
            if dir != newest {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}

/// The streams a snapshot holds (its numbered subdirectories).
pub fn streams(dir: &Path) -> Result<Vec<u32>> {
    let mut out: Vec<u32> = std::fs::read_dir(dir)
        .map_err(|e| io(format!("listing {}", dir.display()), e))?
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// Every file of a snapshot, as paths relative to its directory.
pub fn files(dir: &Path) -> Result<Vec<String>> {
    let mut out = vec![META.to_string()];
    for stream in streams(dir)? {
        let sub = dir.join(stream.to_string());
        let mut names: Vec<String> = std::fs::read_dir(&sub)
            .map_err(|e| io(format!("listing {}", sub.display()), e))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        out.extend(names.into_iter().map(|n| format!("{stream}/{n}")));
    }
    Ok(out)
}

/// Checks a relative path a peer sent (`META` or `<stream>/<file>`), so
/// that a received snapshot can only write inside its own directory.
pub fn valid_relative_path(path: &str) -> bool {
    let ok_name = |n: &str| {
        !n.is_empty() && n != "." && n != ".." && n.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    match path.split_once('/') {
        None => path == META,
        Some((stream, file)) => stream.parse::<u32>().is_ok() && ok_name(file),
    }
}

fn link_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| io(format!("creating {}", to.display()), e))?;
    for e in std::fs::read_dir(from).map_err(|e| io(format!("listing {}", from.display()), e))?.flatten() {
        let target = to.join(e.file_name());
        if std::fs::hard_link(e.path(), &target).is_err() {
            std::fs::copy(e.path(), &target).map_err(|err| io(format!("copying {}", e.path().display()), err))?;
        }
    }
    Ok(())
}

fn write_meta(dir: &Path, meta: &SnapshotMeta) -> Result<()> {
    let bytes = postcard::to_allocvec(meta).map_err(|e| ReplicationError::Codec(e.to_string()))?;
    let path = dir.join(META);
    let mut f = std::fs::File::create(&path).map_err(|e| io(format!("creating {}", path.display()), e))?;
    f.write_all(&bytes).and_then(|_| f.sync_all()).map_err(|e| io(format!("writing {}", path.display()), e))
}

pub fn read_meta(dir: &Path) -> Result<SnapshotMeta> {
    let path = dir.join(META);
    let bytes = std::fs::read(&path).map_err(|e| io(format!("reading {}", path.display()), e))?;
    postcard::from_bytes(&bytes).map_err(|e| ReplicationError::Codec(format!("{}: {e}", path.display())))
}

/// Writes one received piece of a snapshot file into `dir`, where the
/// snapshot is being received. Pieces of a file arrive in order; the first
/// piece of the snapshot's `META` (sent first) starts the directory afresh.
pub fn receive_chunk(dir: &Path, path: &str, offset: u64, data: &[u8]) -> Result<()> {
    if !valid_relative_path(path) {
        return Err(ReplicationError::Refused(format!("refusing snapshot file path {path:?}")));
    }
    if path == META && offset == 0 {
        let _ = std::fs::remove_dir_all(dir);
    }
    let target = dir.join(path);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io(format!("creating {}", parent.display()), e))?;
    }
    let len = std::fs::metadata(&target).map(|m| m.len()).unwrap_or(0);
    if len != offset {
        return Err(ReplicationError::Refused(format!(
            "snapshot file {path}: piece at {offset} but {len} bytes received so far"
        )));
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&target)
        .map_err(|e| io(format!("opening {}", target.display()), e))?;
    f.write_all(data).map_err(|e| io(format!("writing {}", target.display()), e))
}

/// Up to [`SNAPSHOT_CHUNK`] bytes of a file from `offset` on, to send.
pub fn read_piece(path: &Path, offset: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(offset))?;
    let mut data = Vec::with_capacity(SNAPSHOT_CHUNK);
    f.take(SNAPSHOT_CHUNK as u64).read_to_end(&mut data)?;
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_stay_inside_the_snapshot() {
        assert!(valid_relative_path("META"));
        assert!(valid_relative_path("0/MANIFEST-0000000001"));
        assert!(valid_relative_path("12/data-0000000003.ckpt"));
        for bad in ["../x", "0/../../etc/passwd", "/etc/passwd", "0/", "x/data", "0/a/b", "0/..", "meta", ""] {
            assert!(!valid_relative_path(bad), "{bad}");
        }
    }
}
