//! Crash points, for fault tests of what a node leaves behind when it dies
//! in the middle of a step that spans several writes (a CREATE DATABASE
//! that has formed its group but not yet written the database's entry).
//!
//! Off unless the node is started with `--crash-points` (a hidden flag).
//! Then, at each named point, the node looks for a file `crash-point` in
//! its data directory; if it names this point, the file is removed (so the
//! restarted node goes on) and the process aborts at once: nothing is
//! flushed or closed, as with `kill -9`.

use std::path::{Path, PathBuf};

/// Where this node looks for the point to die at (None: never).
#[derive(Clone, Debug)]
pub struct CrashPoints {
    file: Option<PathBuf>,
}

impl CrashPoints {
    pub fn new(enabled: bool, data_dir: &Path) -> CrashPoints {
        CrashPoints { file: enabled.then(|| data_dir.join("crash-point")) }
    }

    /// Dies here if the data directory's `crash-point` names `point`.
    pub fn here(&self, point: &str) {
        let Some(file) = &self.file else { return };
        let Ok(named) = std::fs::read_to_string(file) else { return };
        if named.trim() == point {
            let _ = std::fs::remove_file(file);
            eprintln!("tessera: crash point {point}: aborting");
            std::process::abort();
        }
    }
}

/// The SQL layer's catalog asks them at its steps.
impl tessera_sql::storage::catalog::FaultHooks for CrashPoints {
    fn crash_point(&self, point: &str) {
        self.here(point);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_not_named_or_not_enabled_passes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("crash-point"), "elsewhere").unwrap();
        CrashPoints::new(true, dir.path()).here("here");
        CrashPoints::new(false, dir.path()).here("elsewhere");
        assert!(dir.path().join("crash-point").exists(), "the file stays for the point it names");
    }
}
