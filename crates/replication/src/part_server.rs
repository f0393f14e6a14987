//! The partition primary's side of remote transactions (`remote_part`):
//! the engine transactions other nodes' sessions hold open here, by their
//! [`RemoteTxnId`].
//!
//! Every call first checks that this node leads the partition's group with
//! a lease, the rule a local statement on a primary follows. The open
//! transactions of a group this node no longer leads are aborted within a
//! sweep (200 ms): a demoted primary's engine applies the next primary's
//! commits only once its own writers are gone. A transaction left idle for
//! [`IDLE_LIMIT`] (its caller vanished) is aborted too.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tessera_engine::{CommitStart, Engine, EngineError, KeyRange, PRIMARY, PutOutcome, Table, Transaction};

use crate::data_group::GroupContext;
use crate::remote_part::{
    PartAnswer, PartCall, PartOp, RemoteTxnId, WireError, bound_of_wire, condition_of_wire, durability_of, isolation_of,
};
use crate::types::GroupId;

/// How long an open transaction may wait for its caller's next call.
pub(crate) const IDLE_LIMIT: Duration = Duration::from_secs(60);

struct Open {
    txn: Option<Transaction>,
    group: GroupId,
    engine: Arc<Engine>,
    savepoints: Vec<tessera_engine::Savepoint>,
    last: Instant,
}

type Shared = Arc<parking_lot::Mutex<Open>>;

pub(crate) struct PartServer {
    context: GroupContext,
    open: parking_lot::Mutex<HashMap<RemoteTxnId, Shared>>,
}

fn failed(e: &EngineError) -> PartAnswer {
    PartAnswer::Failed(WireError::from_engine(e))
}

fn not_committed(why: String) -> PartAnswer {
    PartAnswer::Failed(WireError::NotCommitted(why))
}

impl PartServer {
    pub fn start(context: GroupContext) -> Arc<PartServer> {
        let server = Arc::new(PartServer { context: context.clone(), open: Default::default() });
        let weak = Arc::downgrade(&server);
        context.runtime.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            loop {
                tick.tick().await;
                let Some(server) = weak.upgrade() else { return };
                server.sweep();
            }
        });
        server
    }

    /// How many remote transactions are open here.
    pub fn open_count(&self) -> usize {
        self.open.lock().len()
    }

    /// Aborts the transactions of groups this node no longer leads, and
    /// those idle too long. One being worked on is left to the next sweep.
    fn sweep(&self) {
        let ids: Vec<(RemoteTxnId, Shared)> = self.open.lock().iter().map(|(k, v)| (*k, v.clone())).collect();
        let mut leads: HashMap<GroupId, bool> = HashMap::new();
        for (id, open) in ids {
            let Some(mut o) = open.try_lock() else { continue };
            let leading = *leads.entry(o.group).or_insert_with(|| self.context.holds_lease(o.group));
            if leading && o.last.elapsed() < IDLE_LIMIT {
                continue;
            }
            if let Some(t) = o.txn.take() {
                tracing::info!(
                    group = o.group,
                    caller = id.node,
                    "aborting a remote transaction: {}",
                    if leading { "its caller went quiet" } else { "this node no longer leads its partition" }
                );
                t.abort();
            }
            drop(o);
            self.open.lock().remove(&id);
        }
    }

    /// Answers one call.
    pub async fn handle(self: &Arc<Self>, call: PartCall) -> PartAnswer {
        let PartCall { group, stream, txn: id, begin, op } = call;
        if matches!(op, PartOp::Abort) {
            if let Some(open) = self.open.lock().remove(&id) {
                let taken = open.lock().txn.take();
                if let Some(t) = taken {
                    t.abort();
                }
            }
            return PartAnswer::Done;
        }
        if !self.context.holds_lease(group) {
            if let Some(open) = self.open.lock().remove(&id)
                && let Some(t) = open.lock().txn.take()
            {
                t.abort();
            }
            return not_committed(format!(
                "node {} is not the primary of this partition (group {group}) now; the transaction was rolled back there",
                self.context.config.id
            ));
        }
        let open = match begin {
            Some(b) => {
                let Some(engine) = self.context.node.partition(stream) else {
                    return not_committed(format!(
                        "partition stream {stream} is not open on node {}",
                        self.context.config.id
                    ));
                };
                let mut t = match engine.begin(isolation_of(b.isolation)) {
                    Ok(t) => t,
                    Err(e) => return failed(&e),
                };
                if let Some(d) = durability_of(b.durability) {
                    t.set_durability(d);
                }
                t.set_wait(true);
                t.set_wait_deadline(b.deadline_ms.map(|ms| Instant::now() + Duration::from_millis(ms)));
                let open = Arc::new(parking_lot::Mutex::new(Open {
                    txn: Some(t),
                    group,
                    engine,
                    savepoints: Vec::new(),
                    last: Instant::now(),
                }));
                self.open.lock().insert(id, open.clone());
                open
            }
            None => match self.open.lock().get(&id).cloned() {
                Some(open) => open,
                None => {
                    return not_committed(
                        "the transaction ended on the partition's primary (its primary changed, or it waited too long)"
                            .into(),
                    );
                }
            },
        };
        if matches!(op, PartOp::Commit) {
            self.open.lock().remove(&id);
            let taken = open.lock().txn.take();
            let Some(t) = taken else { return not_committed("the transaction already ended".into()) };
            let started = tokio::task::spawn_blocking(move || t.commit_start()).await;
            return match started {
                Ok(Ok(CommitStart::Pending(pending))) => match pending.await {
                    Ok(_) => PartAnswer::Done,
                    Err(e) => failed(&e),
                },
                Ok(Ok(_)) => PartAnswer::Done,
                Ok(Err(e)) => failed(&e),
                Err(e) => not_committed(format!("the commit's task failed: {e}")),
            };
        }
        let worked = tokio::task::spawn_blocking(move || {
            let mut o = open.lock();
            o.last = Instant::now();
            let answer = run(&mut o, op);
            o.last = Instant::now();
            answer
        })
        .await;
        match worked {
            Ok(answer) => answer,
            Err(e) => PartAnswer::Failed(WireError::Other(format!("the call's task failed: {e}"))),
        }
    }
}

fn table_of(engine: &Engine, name: &str) -> Result<Arc<Table>, EngineError> {
    engine.table(name).ok_or_else(|| EngineError::NoSuchTable(name.to_string()))
}

/// Runs one call (not a commit or an abort) on an open transaction.
fn run(o: &mut Open, op: PartOp) -> PartAnswer {
    let Open { txn, engine, savepoints, .. } = o;
    let Some(t) = txn.as_mut() else { return not_committed("the transaction already ended".into()) };
    let result: Result<PartAnswer, EngineError> = (|| match op {
        PartOp::Get { table, key } => Ok(PartAnswer::Row(t.get(&table_of(engine, &table)?, &key)?)),
        PartOp::GetVersioned { table, key } => {
            Ok(PartAnswer::Versioned(t.get_versioned(&table_of(engine, &table)?, &key)?.map(|(d, v)| (d, v.0))))
        }
        PartOp::Scan { table, index, lower, upper } => {
            let table = table_of(engine, &table)?;
            let index = match index {
                None => PRIMARY,
                Some(name) => table.spec().index_by_name(&name).ok_or(EngineError::NoSuchIndex(name.clone()))?.id,
            };
            let range = KeyRange { lower: bound_of_wire(lower), upper: bound_of_wire(upper) };
            Ok(PartAnswer::Rows(t.scan_collect(&table, index, &range)?))
        }
        PartOp::Insert { table, data } => t.insert(&table_of(engine, &table)?, data).map(|()| PartAnswer::Done),
        PartOp::Update { table, data } => Ok(PartAnswer::Bool(t.update(&table_of(engine, &table)?, data)?)),
        PartOp::Delete { table, key } => Ok(PartAnswer::Bool(t.delete(&table_of(engine, &table)?, &key)?)),
        PartOp::Put { table, data, cond } => {
            put_answer(t.put(&table_of(engine, &table)?, data, condition_of_wire(cond))?)
        }
        PartOp::DeleteIf { table, key, cond } => {
            put_answer(t.delete_if(&table_of(engine, &table)?, &key, condition_of_wire(cond))?)
        }
        PartOp::Savepoint => {
            savepoints.push(t.savepoint());
            Ok(PartAnswer::Savepoint((savepoints.len() - 1) as u32))
        }
        PartOp::RollbackTo(n) => {
            let sp = *savepoints
                .get(n as usize)
                .ok_or_else(|| EngineError::Internal(format!("no savepoint {n} in the remote transaction")))?;
            t.rollback_to(sp)?;
            savepoints.truncate(n as usize + 1);
            Ok(PartAnswer::Done)
        }
        PartOp::RefreshSnapshot => {
            t.refresh_snapshot();
            Ok(PartAnswer::Done)
        }
        PartOp::Commit | PartOp::Abort => Err(EngineError::Internal("commit and abort are answered above".into())),
    })();
    result.unwrap_or_else(|e| failed(&e))
}

fn put_answer(outcome: PutOutcome) -> Result<PartAnswer, EngineError> {
    Ok(PartAnswer::Put(match outcome {
        PutOutcome::Written => None,
        PutOutcome::Rejected { current } => Some(current.map(|v| v.0)),
    }))
}
