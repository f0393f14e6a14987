//! The catalog's schema-change jobs: a DDL statement on a keyed database
//! is a job, recorded with the database's raised schema version in one
//! write, applied partition by partition (`storage::jobs`), and ended with
//! every partition's version in another; a job a stopped or replaced
//! primary left is finished by the next one (`finish_left_work`), as is
//! the clean-up of a split it left.

use super::{Catalog, DatabaseDef, Entry};
use crate::error::{Result, SqlError, code};
use crate::storage::jobs::{JobDef, JobState};

impl Catalog {
    /// Every schema-change job, oldest first.
    pub fn jobs(&self) -> Vec<JobDef> {
        self.schema().jobs().cloned().collect()
    }

    /// Starts a schema-change job in keyed database `db`: records it and
    /// raises the database's schema version, in one write.
    pub fn begin_job(&self, db: &str, statement: String) -> Result<JobDef> {
        let mut def = self
            .database(db)
            .ok_or_else(|| SqlError::new(code::UNDEFINED_DATABASE, format!("database \"{db}\" does not exist")))?;
        def.schema_version += 1;
        let job = JobDef {
            id: self.alloc_oid_in(db)?,
            db: db.to_string(),
            statement,
            schema_version: def.schema_version,
            state: JobState::Running,
            done: 0,
            partitions: def.partitions.len() as u32,
            error: None,
            started_ms: crate::storage::jobs::now_ms(),
            finished_ms: None,
        };
        // (Waits while the jobs a former primary left are being finished.)
        self.jobs_here.lock().insert(job.id, db.to_string());
        let begun = self.write_entries(&[Entry::Database(def), Entry::Job(job.clone())]);
        if begun.is_err() {
            self.jobs_here.lock().remove(&job.id);
        }
        begun.map(|()| job)
    }

    /// On a database's own primary (a replica's catalog serving its
    /// sessions): finishes what a former primary left half done, as a
    /// node's opening does on one node — schema changes (partitions behind
    /// the database's schema version, jobs `running`: `jobs::recover`;
    /// nothing while a job of the database runs here) and the clean-up of
    /// a split (rows a split copied away and did not yet delete; nothing
    /// while a DDL statement runs here, which may be that split).
    pub fn finish_left_work(&self, db: &str) -> Result<()> {
        if !self.replica {
            return Ok(());
        }
        {
            let here = self.jobs_here.lock();
            let def = self.database(db);
            if let Some(def) = def.filter(|d| d.partitions.iter().any(|p| p.schema_version < d.schema_version))
                && !here.values().any(|d| d == db)
            {
                tracing::info!(db = def.name, "finishing the schema changes a former primary left");
                crate::storage::jobs::recover(self, &|d: &DatabaseDef| d.name == db)?;
            }
        }
        self.remove_groups_of_cut_splits(db);
        let Some(def) = self.database(db).filter(|d| d.partitions.iter().any(|p| p.dirty)) else { return Ok(()) };
        let Some(_ddl) = self.ddl.try_lock() else { return Ok(()) };
        for k in 0..def.partitions.len() {
            // (Where the partition is led, which may be another node.)
            if def.partitions[k].dirty {
                tracing::info!(db, stream = def.partitions[k].stream, "finishing a split a former primary left");
                crate::storage::split::clean(self, &def, k)?;
            }
        }
        Ok(())
    }

    /// Removes the groups of partitions that a split made but did not add
    /// to database `db`'s layout (the split failed, or its node died), on
    /// the primary of the database's home. Every stream its home's block
    /// gave out is a partition's unless a split was cut short, so only
    /// then are the cluster's groups looked at. Not while a split runs
    /// here (it holds the DDL lock); one on another node cannot add its
    /// partition to a layout this node's home leads.
    fn remove_groups_of_cut_splits(&self, db: &str) {
        let Some(groups) = self.groups() else { return };
        let Some(def) = self.database(db) else { return };
        let (Some(home), Some(_)) = (def.home, &def.partition_key) else { return };
        if (def.next_stream.saturating_sub(1) as usize) <= def.partitions.len() {
            return;
        }
        let Some(_ddl) = self.ddl.try_lock() else { return };
        let Some(def) = self.database(db) else { return };
        for group in groups.partition_groups(home) {
            if def.partitions.iter().all(|p| p.stream != group) {
                tracing::warn!(db, group, "removing the group of a partition no split finished");
                if let Err(e) = groups.remove(group) {
                    tracing::warn!(db, group, "the group of a partition no split finished stays: {}", e.reason());
                }
            }
        }
    }

    /// Ends a job: every partition is at its schema version (the statement
    /// applied the change to all, or undid it on all).
    pub fn end_job(&self, mut job: JobDef, error: Option<String>) -> Result<()> {
        self.jobs_here.lock().remove(&job.id);
        let Some(mut def) = self.database(&job.db) else { return Ok(()) };
        for p in &mut def.partitions {
            p.schema_version = p.schema_version.max(job.schema_version);
        }
        job.state = if error.is_some() { JobState::Failed } else { JobState::Done };
        job.done = job.partitions;
        job.error = error;
        job.finished_ms = Some(crate::storage::jobs::now_ms());
        self.finish_jobs(def, vec![job])
    }

    /// Writes a database's partition versions and its jobs' states together.
    pub fn finish_jobs(&self, db: DatabaseDef, jobs: Vec<JobDef>) -> Result<()> {
        let mut entries = vec![Entry::Database(db)];
        entries.extend(jobs.into_iter().map(Entry::Job));
        self.write_entries(&entries)
    }
}
