//! Schema changes in keyed databases, as jobs over their partitions.
//!
//! A keyed database's schema lives once, in the catalog; each partition
//! holds engine tables that must match it. A schema change (CREATE, DROP or
//! ALTER TABLE, CREATE or DROP INDEX, TRUNCATE) therefore runs as a *job*:
//!
//! 1. One catalog write records the job (`running`) and raises the
//!    database's schema version.
//! 2. The statement runs, applying the change to every partition (undoing
//!    it on all of them when one fails).
//! 3. One catalog write sets every partition's schema version to the new
//!    one and the job to `done` (or `failed`, with the error).
//!
//! A partition whose schema version is behind its database's — one that
//! was not reached because the node stopped in the middle of a job — is
//! brought up to date when the node opens: [`reconcile`] makes its engine
//! tables match the catalog (the catalog is always written so that it is
//! the truth: tables are created in the partitions before their entry
//! exists, and entries are removed before the tables are dropped). Making a
//! partition match is idempotent, so a job can be finished any number of
//! times. `tessera.jobs` shows every job and its progress.

use serde::{Deserialize, Serialize};
use tessera_engine::TableSpec;

use crate::error::Result;
use crate::storage::catalog::{Catalog, DatabaseDef};
use crate::storage::remote::PartEngine;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobState {
    Running,
    Done,
    Failed,
    /// Interrupted by a stop of the node, finished when it opened again.
    Recovered,
}

impl JobState {
    pub fn name(self) -> &'static str {
        match self {
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Recovered => "recovered",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobDef {
    pub id: u32,
    pub db: String,
    /// The statement, as SQL.
    pub statement: String,
    /// The database's schema version once the job is done.
    pub schema_version: u64,
    pub state: JobState,
    /// Partitions at the new schema version, of `partitions`.
    pub done: u32,
    pub partitions: u32,
    pub error: Option<String>,
    /// Unix time in milliseconds.
    pub started_ms: i64,
    pub finished_ms: Option<i64>,
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Whether `stmt` changes the schema of the tables of the database it runs in.
pub fn is_schema_change(stmt: &datafusion::sql::sqlparser::ast::Statement) -> bool {
    use datafusion::sql::sqlparser::ast::{ObjectType, Statement};
    match stmt {
        Statement::CreateTable(_) | Statement::CreateIndex(_) | Statement::AlterTable(_) | Statement::Truncate(_) => {
            true
        }
        Statement::Drop { object_type, .. } => matches!(object_type, ObjectType::Table | ObjectType::Index),
        _ => false,
    }
}

/// Makes partition `engine` of database `db` match the catalog: every
/// table of the database exists with exactly the catalog's indexes, and no
/// other table does (on the partition's primary, wherever it is).
pub fn reconcile(catalog: &Catalog, db: &DatabaseDef, engine: &PartEngine) -> Result<()> {
    let specs: Vec<TableSpec> = catalog
        .tables(&db.name)
        .iter()
        .map(|def| crate::storage::catalog::engine_spec(def, &def.engine_name))
        .collect::<Result<_>>()?;
    engine.match_tables(&specs)?;
    Ok(())
}

/// Finishes the jobs a stop interrupted and brings every partition behind
/// its database's schema version up to date (at open).
/// Only in the databases `mine` accepts.
pub fn recover(catalog: &Catalog, mine: &dyn Fn(&DatabaseDef) -> bool) -> Result<()> {
    for db in catalog.databases().into_iter().filter(|d| mine(d)) {
        let behind: Vec<usize> =
            (0..db.partitions.len()).filter(|&k| db.partitions[k].schema_version < db.schema_version).collect();
        if behind.is_empty() {
            continue;
        }
        let engines = catalog.engines_of(&db)?;
        for &k in &behind {
            // (A replica's partition the group never wrote is opened empty.)
            reconcile(catalog, &db, &engines[k])?;
        }
        let mut caught_up = db.clone();
        for p in &mut caught_up.partitions {
            p.schema_version = db.schema_version;
        }
        let jobs: Vec<JobDef> = catalog
            .jobs()
            .into_iter()
            .filter(|j| j.db == db.name && j.state == JobState::Running)
            .map(|mut j| {
                j.state = JobState::Recovered;
                j.done = j.partitions;
                j.finished_ms = Some(now_ms());
                j
            })
            .collect();
        tracing::info!(db = %db.name, partitions = behind.len(), jobs = jobs.len(), "caught partitions up with the schema");
        catalog.finish_jobs(caught_up, jobs)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tessera_engine::{EngineConfig, IndexKind, IndexSpec, Node, TableSpec};

    use super::*;
    use crate::SqlEngine;

    fn run(session: &mut crate::Session, sql: &str) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (_, err) = rt.block_on(session.execute_sql(sql));
        assert!(err.is_none(), "{sql}: {err:?}");
    }

    /// A node with keyed database `shop` (two partitions) and its table
    /// `t`, and a session of `shop`.
    fn shop() -> (Arc<Node>, Arc<SqlEngine>, crate::Session) {
        let node = Arc::new(Node::open(EngineConfig::in_memory()).unwrap());
        let sql = SqlEngine::open(node.clone()).unwrap();
        let mut admin = sql.session("tessera", "tessera").unwrap();
        run(&mut admin, "CREATE DATABASE shop WITH (partition_key = 'k int', partitions = 2)");
        let mut s = sql.session("tessera", "shop").unwrap();
        run(&mut s, "CREATE TABLE t (k int PRIMARY KEY, v int)");
        (node, sql, s)
    }

    /// A stop in the middle of a job leaves one partition behind: an index
    /// missing, a table the catalog no longer has. Opening finishes the job.
    #[test]
    fn an_interrupted_job_is_finished_when_the_node_opens() {
        let (node, sql, mut s) = shop();
        run(&mut s, "CREATE INDEX t_v ON t (v)");
        let catalog = sql.catalog.clone();
        let jobs = catalog.jobs();
        assert_eq!(jobs.len(), 2);
        assert!(jobs.iter().all(|j| j.state == JobState::Done && j.done == 2 && j.partitions == 2), "{jobs:?}");
        let db = catalog.database("shop").unwrap();
        assert_eq!(db.schema_version, 2);
        assert!(db.partitions.iter().all(|p| p.schema_version == 2));

        // What a stop half-way through two schema changes leaves behind.
        let def = catalog.table("shop", "t").unwrap();
        let second = node.partition(db.partitions[1].stream).unwrap();
        second.drop_index(&def.engine_name, "t_v").unwrap();
        second.create_table(TableSpec::new("t999", vec![0], IndexKind::Hash)).unwrap();
        let extra = IndexSpec::new("t_gone", IndexKind::Ordered, false, vec![1]);
        node.partition(db.partitions[0].stream).unwrap().create_index(&def.engine_name, extra).unwrap();
        let job = catalog.begin_job("shop", "CREATE INDEX t_v ON t (v)".into()).unwrap();
        assert_eq!(catalog.database("shop").unwrap().schema_version, 3);

        recover(&catalog, &|_| true).unwrap();
        let db = catalog.database("shop").unwrap();
        assert!(db.partitions.iter().all(|p| p.schema_version == 3), "{:?}", db.partitions);
        let ended = catalog.jobs().into_iter().find(|j| j.id == job.id).unwrap();
        assert_eq!((ended.state, ended.done), (JobState::Recovered, 2));
        for p in &db.partitions {
            let engine = node.partition(p.stream).unwrap();
            let spec = engine.table(&def.engine_name).unwrap().spec();
            let names: Vec<&str> = spec.secondary.iter().map(|i| i.name.as_str()).collect();
            assert_eq!(names, ["t_v"], "partition {}", p.stream);
            assert!(engine.table("t999").is_none());
        }
        // Nothing is behind any more: recovering again changes nothing.
        recover(&catalog, &|_| true).unwrap();
        assert_eq!(catalog.jobs().len(), 3);
    }

    /// A database's primary that died in the middle of a schema change
    /// leaves it to the next: that one's catalog (a replica's, serving the
    /// database's sessions) finishes it when a session of the database
    /// starts, but not a job running there.
    #[test]
    fn a_job_a_former_primary_left_is_finished_by_the_next() {
        let (node, sql, _shop) = shop();
        let def = sql.catalog.table("shop", "t").unwrap();
        // The former primary began a CREATE INDEX and reached one partition.
        let left = sql.catalog.begin_job("shop", "CREATE INDEX t_v ON t (v)".into()).unwrap();
        let db = sql.catalog.database("shop").unwrap();
        let extra = IndexSpec::new("t_half", IndexKind::Ordered, false, vec![1]);
        node.partition(db.partitions[0].stream).unwrap().create_index(&def.engine_name, extra).unwrap();

        // The next primary's replica of the second partition was never
        // written to (no engine yet).
        node.drop_partition(db.partitions[1].stream).unwrap();

        let next = SqlEngine::open_follower(node.clone()).unwrap();
        let _ = next.session("tessera", "shop").unwrap();
        let job = |c: &Catalog, id: u32| c.jobs().into_iter().find(|j| j.id == id).unwrap();
        assert_eq!(job(&next.catalog, left.id).state, JobState::Recovered);
        let db = next.catalog.database("shop").unwrap();
        assert!(db.partitions.iter().all(|p| p.schema_version == db.schema_version), "{:?}", db.partitions);
        for p in &db.partitions {
            let engine = node.partition(p.stream).expect("every partition open");
            let spec = engine.table(&def.engine_name).expect("the table in every partition").spec();
            assert!(spec.secondary.is_empty(), "partition {} keeps the half-made index", p.stream);
        }

        // A job of its own in progress is left alone by its sessions.
        let mine = next.catalog.begin_job("shop", "CREATE INDEX t_w ON t (v)".into()).unwrap();
        let _ = next.session("tessera", "shop").unwrap();
        assert_eq!(job(&next.catalog, mine.id).state, JobState::Running);
        next.catalog.end_job(mine.clone(), None).unwrap();
        assert_eq!(job(&next.catalog, mine.id).state, JobState::Done);
    }
}
