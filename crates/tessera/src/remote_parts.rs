//! The SQL layer's partitions led by other nodes (`tessera_sql::storage::remote`),
//! over the replication layer's remote transactions
//! (`tessera_replication::parts`).
//!
//! The SQL layer calls from a session's thread and expects an answer; the
//! calls travel on the replication layer's runtime, and the session's
//! thread waits for the answer (handing its runtime's other work to another
//! thread meanwhile, as any blocking engine call does).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tessera_engine::row_filter::FieldTest;
use tessera_engine::{EngineError, KeyRange, PutCondition, PutOutcome, RowVersion, TableSpec};
use tessera_replication::Groups;
use tessera_replication::parts::{
    Begin, RemoteTxn, SchemaChange, WireIndex, WireTable, durability_code, isolation_code,
};
use tessera_sql::storage::remote::{EResult, PartSchema, PartitionRoutes, RemoteBegin, RemotePart};

/// Where the partitions' primaries are: the replication layer's word.
pub struct Routes(pub Groups);

/// Runs `work` on the replication layer's runtime and waits for it.
/// How long a transaction waits to begin on a partition whose primary is
/// moving, or has none for the moment.
const FOLLOW_MOVE: Duration = Duration::from_secs(4);

fn wait<T: Send + 'static>(groups: &Groups, work: impl Future<Output = T> + Send + 'static) -> EResult<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    groups.runtime().spawn(async move {
        let _ = tx.send(work.await);
    });
    let recv = || rx.recv();
    let got = match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(recv),
        _ => recv(),
    };
    got.map_err(|_| EngineError::Unavailable("this node's replication layer stopped".into()))
}

fn change_of(change: &PartSchema) -> SchemaChange {
    let table = |spec: &TableSpec| WireTable::of(spec);
    match change {
        PartSchema::CreateTable(spec) => SchemaChange::CreateTable(table(spec)),
        PartSchema::DropTable(name) => SchemaChange::DropTable(name.clone()),
        PartSchema::CreateIndex { table, index } => {
            SchemaChange::CreateIndex { table: table.clone(), index: WireIndex::of(index) }
        }
        PartSchema::DropIndex { table, index } => {
            SchemaChange::DropIndex { table: table.clone(), index: index.clone() }
        }
        PartSchema::TruncateTable(name) => SchemaChange::TruncateTable(name.clone()),
        PartSchema::MatchTables(specs) => SchemaChange::MatchTables(specs.iter().map(table).collect()),
        PartSchema::CopyTable { from, to } => SchemaChange::CopyTable { from: from.clone(), to: table(to) },
    }
}

impl PartitionRoutes for Routes {
    fn begin(&self, stream: u32, how: RemoteBegin) -> EResult<Option<Box<dyn RemotePart>>> {
        // A stream of no group of its own is the first group's, whose
        // primary serves the sessions that reach it.
        let Some(group) = self.0.group_of_stream(stream) else { return Ok(None) };
        let begin = Begin {
            isolation: isolation_code(how.isolation),
            durability: durability_code(how.durability),
            deadline_ms: how.deadline.map(|d| d.saturating_duration_since(Instant::now()).as_millis() as u64),
        };
        // While this node hands the partition's role over, the transaction
        // waits to begin where the role goes (rather than be refused at
        // its commit); a partition between primaries is waited for too.
        let handing_over =
            move |g: &Groups| g.move_gate_of(group).is_some_and(|g| g.is_handing_over()) && g.holds_lease(group);
        let settled = match handing_over(&self.0) {
            // The usual case, without a trip to the replication runtime.
            false => self.0.begin_remote(group, stream, begin),
            true => Err(EngineError::Unavailable(String::new())),
        };
        let groups = self.0.clone();
        let settled = if settled.is_ok() {
            settled
        } else {
            wait(&self.0, async move {
                let deadline = tokio::time::Instant::now() + FOLLOW_MOVE;
                loop {
                    if !handing_over(&groups) {
                        match groups.begin_remote(group, stream, begin) {
                            Err(_) if tokio::time::Instant::now() < deadline => {}
                            begun => return begun,
                        }
                    } else if tokio::time::Instant::now() >= deadline {
                        return groups.begin_remote(group, stream, begin);
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })?
        };
        match settled {
            Ok(None) => Ok(None),
            Ok(Some(txn)) => Ok(Some(Box::new(Remote { txn: Some(txn), groups: self.0.clone() }))),
            Err(e) => Err(e),
        }
    }

    fn ready_here(&self, stream: u32) -> bool {
        let Some(group) = self.0.group_of_stream(stream) else { return true };
        self.0.commits_for(group)
    }

    fn local_work(&self, stream: u32) -> Option<Box<dyn std::any::Any + Send>> {
        let group = self.0.group_of_stream(stream)?;
        Some(Box::new(self.0.move_gate_of(group)?.open_work()))
    }

    fn schema(&self, stream: u32, change: &PartSchema) -> EResult<bool> {
        let Some(group) = self.0.group_of_stream(stream) else { return Ok(false) };
        let groups = self.0.clone();
        let change = change_of(change);
        wait(&self.0, async move { groups.change_schema(group, stream, change).await })?
    }

    fn leader_elsewhere(&self, stream: u32) -> bool {
        self.0.group_of_stream(stream).is_some_and(|group| !matches!(self.0.partition_primary(group), Ok(None)))
    }
}

/// A transaction on a partition led by another node.
struct Remote {
    /// Taken while a call is under way.
    txn: Option<RemoteTxn>,
    groups: Groups,
}

impl Remote {
    /// Makes one call and waits for it.
    fn call<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(RemoteTxn) -> BoxFuture<'static, (RemoteTxn, EResult<T>)> + Send + 'static,
    ) -> EResult<T> {
        let txn = self.txn.take().ok_or_else(|| EngineError::Internal("a remote call after a failed one".into()))?;
        let (txn, result) = wait(&self.groups, f(txn))?;
        self.txn = Some(txn);
        result
    }

    fn txn(&mut self) -> &mut RemoteTxn {
        self.txn.as_mut().expect("no call under way")
    }
}

impl RemotePart for Remote {
    fn is_read_only(&self) -> bool {
        self.txn.as_ref().is_none_or(|t| t.is_read_only())
    }

    fn get(&mut self, table: &str, key: &[u8]) -> EResult<Option<Vec<u8>>> {
        let (table, key) = (table.to_string(), key.to_vec());
        self.call(move |mut t| {
            Box::pin(async move {
                let r = t.get(&table, &key).await;
                (t, r)
            })
        })
    }

    fn get_versioned(&mut self, table: &str, key: &[u8]) -> EResult<Option<(Vec<u8>, RowVersion)>> {
        let (table, key) = (table.to_string(), key.to_vec());
        self.call(move |mut t| {
            Box::pin(async move {
                let r = t.get_versioned(&table, &key).await;
                (t, r)
            })
        })
    }

    fn claim(&mut self, table: &str, key: &[u8]) -> EResult<Option<Vec<u8>>> {
        let (table, key) = (table.to_string(), key.to_vec());
        self.call(move |mut t| {
            Box::pin(async move {
                let r = t.claim(&table, &key).await;
                (t, r)
            })
        })
    }

    fn scan(
        &mut self,
        table: &str,
        index: Option<&str>,
        range: &KeyRange,
        fields: Option<&[u32]>,
        tests: &[FieldTest],
        visit: &mut dyn FnMut(&[u8]) -> bool,
    ) -> EResult<()> {
        let (table, index, range) = (table.to_string(), index.map(str::to_string), range.clone());
        let (fields, tests) = (fields.map(<[u32]>::to_vec), tests.to_vec());
        let (mut rows, mut more) = self.call(move |mut t| {
            Box::pin(async move {
                let r = t.scan_first(&table, index.as_deref(), &range, fields.as_deref(), &tests).await;
                (t, r)
            })
        })?;
        loop {
            for row in rows.iter() {
                if !visit(row) {
                    // (The next call ends the scan on the primary.)
                    return Ok(());
                }
            }
            if !more {
                return Ok(());
            }
            (rows, more) = self.call(|mut t| {
                Box::pin(async move {
                    let r = t.scan_more().await;
                    (t, r)
                })
            })?;
        }
    }

    fn insert(&mut self, table: &str, data: Vec<u8>) -> EResult<()> {
        let table = table.to_string();
        self.call(move |mut t| {
            Box::pin(async move {
                let r = t.insert(&table, data).await;
                (t, r)
            })
        })
    }

    fn update(&mut self, table: &str, data: Vec<u8>) -> EResult<bool> {
        let table = table.to_string();
        self.call(move |mut t| {
            Box::pin(async move {
                let r = t.update(&table, data).await;
                (t, r)
            })
        })
    }

    fn delete(&mut self, table: &str, key: &[u8]) -> EResult<bool> {
        let (table, key) = (table.to_string(), key.to_vec());
        self.call(move |mut t| {
            Box::pin(async move {
                let r = t.delete(&table, &key).await;
                (t, r)
            })
        })
    }

    fn put(&mut self, table: &str, data: Vec<u8>, cond: PutCondition) -> EResult<PutOutcome> {
        let table = table.to_string();
        self.call(move |mut t| {
            Box::pin(async move {
                let r = t.put(&table, data, cond).await;
                (t, r)
            })
        })
    }

    fn delete_if(&mut self, table: &str, key: &[u8], cond: PutCondition) -> EResult<PutOutcome> {
        let (table, key) = (table.to_string(), key.to_vec());
        self.call(move |mut t| {
            Box::pin(async move {
                let r = t.delete_if(&table, &key, cond).await;
                (t, r)
            })
        })
    }

    fn savepoint(&mut self) -> u32 {
        self.txn().savepoint()
    }

    fn rollback_to(&mut self, savepoint: u32) -> EResult<()> {
        self.call(move |mut t| {
            Box::pin(async move {
                let r = t.rollback_to(savepoint).await;
                (t, r)
            })
        })
    }

    fn refresh_snapshot(&mut self) {
        self.txn().refresh_snapshot();
    }

    fn set_wait_deadline(&mut self, deadline: Option<Instant>) {
        self.txn().set_wait_deadline(deadline);
    }

    fn ready(&mut self) -> EResult<()> {
        self.call(move |mut t| {
            Box::pin(async move {
                let r = t.ready().await;
                (t, r)
            })
        })
    }

    fn commit(mut self: Box<Self>) -> BoxFuture<'static, EResult<()>> {
        let (txn, groups) = (self.txn.take(), self.groups.clone());
        let (tx, rx) = tokio::sync::oneshot::channel();
        match txn {
            Some(txn) => {
                groups.runtime().spawn(async move {
                    let _ = tx.send(txn.commit().await);
                });
            }
            None => {
                let _ = tx.send(Err(EngineError::Internal("a commit after a failed remote call".into())));
            }
        }
        Box::pin(async move {
            rx.await.unwrap_or_else(|_| Err(EngineError::Unavailable("this node's replication layer stopped".into())))
        })
    }

    fn abort(self: Box<Self>) {
        // Dropping it aborts it.
    }
}

impl Drop for Remote {
    /// A transaction ended without a commit (rolled back, or its session
    /// gone) is aborted on the partition's primary at once: its writes
    /// would otherwise hold their rows there until it expires.
    fn drop(&mut self) {
        if let Some(txn) = self.txn.take() {
            self.groups.runtime().spawn(txn.abort());
        }
    }
}

/// The routes, as the SQL layer takes them.
pub fn routes(groups: Groups) -> Arc<dyn PartitionRoutes> {
    Arc::new(Routes(groups))
}
