//! A replica's catalog follows what replication does to the engines under
//! it: DDL applied entry by entry, and snapshots that replace an engine's
//! contents wholesale.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tessera_engine::checkpoint::extend_checkpoint;
use tessera_engine::{CommitLog, CommitLogSource, EngineConfig, LogError, Node, SYSTEM_STREAM};

use super::Catalog;
use crate::SqlEngine;

/// Every record each stream's engine hands its commit log, as a
/// replicated log would carry them.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<BTreeMap<u32, Vec<Vec<u8>>>>>);

struct StreamLog {
    stream: u32,
    all: Captured,
}

impl CommitLog for StreamLog {
    fn append(&self, record: &[u8]) -> Result<u64, LogError> {
        let mut all = self.all.0.lock();
        let records = all.entry(self.stream).or_default();
        records.push(record.to_vec());
        Ok(records.len() as u64)
    }
    fn wait_durable(&self, _ticket: u64) -> Result<(), LogError> {
        Ok(())
    }
    fn poll_durable(&self, _ticket: u64, _cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), LogError>> {
        std::task::Poll::Ready(Ok(()))
    }
}

impl Captured {
    fn records(&self, stream: u32) -> Vec<Vec<u8>> {
        self.0.lock().get(&stream).cloned().unwrap_or_default()
    }
}

fn run(session: &mut crate::Session, sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (_, err) = rt.block_on(session.execute_sql(sql));
    assert!(err.is_none(), "{sql}: {err:?}");
}

fn tables(catalog: &Catalog, db: &str) -> Vec<String> {
    catalog.tables(db).iter().map(|t| t.name.clone()).collect()
}

/// A replica restarted (or rebuilt) from its group's snapshot: the
/// catalog, which may have looked at the database's home before or while
/// the snapshot was loaded into it, must show the snapshot's tables, even
/// though no DDL arrives afterwards to tell it something changed.
#[test]
fn a_replica_catalog_sees_the_tables_a_snapshot_brought() {
    let captured = Captured::default();
    let source = {
        let all = captured.clone();
        CommitLogSource(Arc::new(move |stream| Box::new(StreamLog { stream, all: all.clone() }) as Box<dyn CommitLog>))
    };
    let primary = Arc::new(Node::open(EngineConfig { commit_log: Some(source), ..EngineConfig::in_memory() }).unwrap());
    let sql = SqlEngine::open(primary).unwrap();
    let mut admin = sql.session("tessera", "tessera").unwrap();
    run(&mut admin, "CREATE DATABASE shop");
    let home = sql.catalog.database("shop").unwrap().home.expect("a keyless database has a home");
    let home_before_tables = captured.records(home).len();
    let mut s = sql.session("tessera", "shop").unwrap();
    run(&mut s, "CREATE TABLE orders (id int PRIMARY KEY, item text)");
    run(&mut s, "INSERT INTO orders VALUES (1, 'tea'), (2, 'cake')");

    let dir = tempfile::tempdir().unwrap();
    let snapshot = |name: &str, stream: u32, upto: usize| {
        let at = dir.path().join(name);
        extend_checkpoint(&at, captured.records(stream)[..upto].to_vec(), 8).unwrap();
        at
    };
    let system = snapshot("system", SYSTEM_STREAM, captured.records(SYSTEM_STREAM).len());
    let early = snapshot("early", home, home_before_tables);
    let full = snapshot("full", home, captured.records(home).len());

    // The replica holds the cluster's catalog and an early state of the
    // home (its catalog tables, no table of the database yet) when its
    // catalog is opened.
    let replica = Arc::new(Node::open(EngineConfig::in_memory()).unwrap());
    replica.system().restore_checkpoint(&system).unwrap();
    replica.open_partition(home, true).unwrap().restore_checkpoint(&early).unwrap();
    let catalog = Catalog::open_replica(replica.clone()).unwrap();
    assert!(tables(&catalog, "shop").is_empty());

    // The group's newest snapshot replaces the home's contents.
    replica.partition(home).unwrap().restore_checkpoint(&full).unwrap();
    let version = catalog.version();
    catalog.refresh_if_changed().unwrap();
    assert_eq!(tables(&catalog, "shop"), ["orders"]);
    assert!(catalog.version() > version, "sessions are told the catalog changed");

    // So does one of the system engine (the cluster's catalog).
    run(&mut admin, "CREATE DATABASE more");
    let system = snapshot("system2", SYSTEM_STREAM, captured.records(SYSTEM_STREAM).len());
    assert!(catalog.database("more").is_none());
    replica.system().restore_checkpoint(&system).unwrap();
    catalog.refresh_if_changed().unwrap();
    assert!(catalog.database("more").is_some(), "the newer catalog is read");
    assert_eq!(tables(&catalog, "shop"), ["orders"]);
}

/// A reload (a replica following DDL) must not hand out again an oid
/// handed out before it and not yet written: the DDL that took it is
/// still under way.
#[test]
fn a_reload_does_not_give_an_oid_twice() {
    let node = Arc::new(Node::open(EngineConfig::in_memory()).unwrap());
    let sql = SqlEngine::open(node.clone()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut admin = sql.session("tessera", "tessera").unwrap();
    let (_, err) = rt.block_on(admin.execute_sql("CREATE DATABASE x"));
    assert!(err.is_none(), "{err:?}");
    let catalog = Catalog::open_replica(node).unwrap();
    let (taken, cluster_wide) = (catalog.alloc_oid_in("x").unwrap(), catalog.alloc_oid());
    catalog.load().unwrap();
    assert!(catalog.alloc_oid_in("x").unwrap() > taken, "the database's oid was given twice");
    assert!(catalog.alloc_oid() > cluster_wide, "a cluster-wide oid was given twice");
}
