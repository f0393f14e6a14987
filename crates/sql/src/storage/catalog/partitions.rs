//! The catalog's keyed-database parts: opening partitions, the engines
//! holding a database's tables, new partitions' streams from the
//! cluster-wide counter, the writer gates, and schema-change jobs.

use std::sync::Arc;

use tessera_engine::Engine;

use super::{Catalog, DatabaseDef, Entry};
use crate::error::{Result, SqlError, code};
use crate::storage::jobs::{JobDef, JobState};
use crate::storage::partition::{PartitionDef, PartitionGate};
use crate::storage::remote::PartEngine;

impl Catalog {
    /// Opens (recovering) every keyed database's partitions; only then may
    /// the node truncate its shared log.
    pub(super) fn open_partitions(&self, maintains: &dyn Fn(u32) -> bool) -> Result<()> {
        let streams: Vec<u32> = self
            .state
            .read()
            .databases
            .values()
            .flat_map(|d| d.partitions.iter().map(|p| p.stream).chain(d.home))
            .collect();
        for &stream in &streams {
            self.node.open_partition(stream, false)?;
        }
        // Partitions whose creation was cut short before their database
        // entry was written belong to no one.
        // (On a cluster, only in this node's group: another group's
        // partitions are its primary's business.)
        for stray in self.node.partitions_on_disk()?.into_iter().filter(|s| !streams.contains(s) && maintains(*s)) {
            tracing::warn!(
                stream = stray,
                "removing a partition no database owns (interrupted CREATE DATABASE or split)"
            );
            self.node.drop_partition(stray)?;
        }
        self.node.all_partitions_open()?;
        Ok(())
    }

    /// The engines holding database `db`'s tables, for schema changes:
    /// its partitions' in key order (each changed on its primary, which
    /// may be another node), or its home for a keyless database.
    pub fn engines_of(&self, db: &DatabaseDef) -> Result<Vec<PartEngine>> {
        let routes = self.groups().and_then(|g| g.routes());
        if db.partitions.is_empty() {
            let home = self.local_engines_of(db)?;
            let stream = db.home.unwrap_or(tessera_engine::SYSTEM_STREAM);
            return Ok(home.into_iter().map(|engine| PartEngine { stream, engine, routes: None }).collect());
        }
        let engines = self.local_engines_of(db)?;
        Ok(db
            .partitions
            .iter()
            .zip(engines)
            .map(|(p, engine)| PartEngine { stream: p.stream, engine, routes: routes.clone() })
            .collect())
    }

    /// The engines on this node holding database `db`'s tables: its
    /// partitions' in key order, or its home for a keyless database.
    pub fn local_engines_of(&self, db: &DatabaseDef) -> Result<Vec<Arc<Engine>>> {
        if db.partitions.is_empty() {
            if db.partition_key.is_some() {
                // A keyed database whose home, with its layout, has not
                // reached this replica yet.
                return Err(SqlError::new(
                    code::CANNOT_CONNECT_NOW,
                    format!("the partitions of database \"{}\" have not reached this node yet", db.name),
                ));
            }
            return Ok(vec![self.home_of(&db.name)?.engine]);
        }
        db.partitions.iter().map(|p| self.partition_engine(db, p.stream)).collect()
    }

    /// The engines holding the tables of the database named `db`.
    pub fn engines_of_name(&self, db: &str) -> Result<Vec<PartEngine>> {
        let def = self
            .database(db)
            .ok_or_else(|| SqlError::new(code::UNDEFINED_DATABASE, format!("database \"{db}\" does not exist")))?;
        self.engines_of(&def)
    }

    /// Allocates streams for new partitions with these key ranges and opens
    /// them (empty). The caller records them in a database entry; a crash
    /// before that leaves only empty directories behind.
    pub fn create_partitions(&self, ranges: Vec<(Vec<u8>, Option<Vec<u8>>)>) -> Result<Vec<PartitionDef>> {
        let first = {
            let mut s = self.state.write();
            let first = s.next_stream;
            if first + ranges.len() as u32 >= super::layout::FIRST_BLOCK_STREAM {
                return Err(SqlError::new(
                    code::PROGRAM_LIMIT,
                    format!("this server cannot make more partitions: their streams are used up ({first})"),
                ));
            }
            s.next_stream += ranges.len() as u32;
            first
        };
        let next = first + ranges.len() as u32;
        self.write_entries(&[Entry::Streams { next }])?;
        let mut defs = Vec::with_capacity(ranges.len());
        for (i, (low, high)) in ranges.into_iter().enumerate() {
            let stream = first + i as u32;
            self.node.open_partition(stream, true)?;
            defs.push(PartitionDef { stream, low, high, schema_version: 0, dirty: false });
        }
        Ok(defs)
    }

    /// Every schema-change job, oldest first.
    pub fn jobs(&self) -> Vec<JobDef> {
        self.state.read().jobs.values().cloned().collect()
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

    /// Ends the process here if the node's crash points say so (fault
    /// tests; nothing otherwise).
    pub(crate) fn crash_point(&self, point: &str) {
        if let Some(crash) = self.crash_points.get() {
            crash(point);
        }
    }

    /// Sets the node's crash points (once).
    pub fn set_crash_points(&self, points: super::CrashPoints) {
        let _ = self.crash_points.set(points);
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

    /// The writer gate of partition `stream`.
    pub fn gate(&self, stream: u32) -> Arc<PartitionGate> {
        if let Some(g) = self.gates.read().get(&stream) {
            return g.clone();
        }
        self.gates.write().entry(stream).or_default().clone()
    }

    /// Deletes partitions for good (their database is gone).
    pub fn drop_partitions(&self, parts: &[PartitionDef]) -> Result<()> {
        for p in parts {
            self.node.drop_partition(p.stream)?;
        }
        Ok(())
    }
}
