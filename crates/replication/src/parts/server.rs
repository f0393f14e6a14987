//! The partition primary's side of remote transactions (`remote_part`):
//! the engine transactions other nodes' sessions hold open here, by their
//! [`RemoteTxnId`].
//!
//! Every call first checks that this node leads the partition's group with
//! a lease, the rule a local statement on a primary follows. The open
//! transactions of a group this node no longer leads are aborted within a
//! sweep (200 ms): a demoted primary's engine applies the next primary's
//! commits only once its own writers are gone. A transaction whose caller
//! node has closed its last connection to this node (it died: its kernel
//! closed its sockets) is aborted within a sweep too, so that the rows it
//! held do not keep other transactions waiting; one left idle for
//! `IDLE_LIMIT` (its caller vanished without a word, as behind a
//! network partition) is aborted at last.
//!
//! A scan is answered a page at a time without gathering its rows here
//! first: the transaction is lent to a thread that walks the index and
//! hands over a page whenever one is full, keeping at most one page ready
//! ahead of the caller (`Cursor`). The caller's next call other than
//! `ScanMore` ends the walk (the thread stops at its next page) and takes
//! the transaction back.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tessera_engine::row_filter::{FieldTest, passes};
use tessera_engine::tuple::{Tuple, TupleBuilder};
use tessera_engine::{CommitStart, Engine, EngineError, KeyRange, PRIMARY, PutOutcome, Table, Transaction};

use futures::future::BoxFuture;

use super::messages::{PartAnswer, PartCall, PartMessage, PartOp, RemoteTxnId, RowPage, WireError};
use crate::raft::commit_log::OpenWork;
use crate::raft::groups::RaftGroups;
use crate::types::{GroupId, NodeId};
use crate::wire::{Answer, Refusal, Service};
use tessera_engine::remote::PartSchema;

/// How long an open transaction may wait for its caller's next call.
pub(crate) const IDLE_LIMIT: Duration = Duration::from_secs(60);

struct Open {
    txn: Option<Transaction>,
    group: GroupId,
    engine: Arc<Engine>,
    /// By the caller's numbers (0: the start).
    savepoints: HashMap<u32, tessera_engine::Savepoint>,
    /// The scan under way, holding the transaction meanwhile.
    cursor: Option<Cursor>,
    last: Instant,
    /// When it began (a caller gone after that leaves it orphaned).
    begun: Instant,
    /// Counted by the group's move gate while open: a planned move of the
    /// partition's primary gives it a moment to commit first.
    _work: Option<OpenWork>,
}

/// A page of a scan's rows; `last`: the scan ended with it.
struct Page {
    rows: RowPage,
    last: bool,
}

/// A scan under way: `walker` holds the transaction and sends pages over
/// a channel of one (a page ready while the caller reads the previous).
struct Cursor {
    pages: std::sync::mpsc::Receiver<Result<Page, EngineError>>,
    walker: std::thread::JoinHandle<Transaction>,
}

impl Open {
    /// Ends the scan under way, if any, and takes its transaction back:
    /// with the channel gone the walker stops at its next page.
    fn settle(&mut self) {
        if let Some(Cursor { pages, walker }) = self.cursor.take() {
            drop(pages);
            match walker.join() {
                Ok(t) => self.txn = Some(t),
                Err(_) => tracing::error!(group = self.group, "a remote scan's thread panicked; its transaction ended"),
            }
        }
    }

    /// The transaction, for its end (commit or abort).
    fn take_txn(&mut self) -> Option<Transaction> {
        self.settle();
        self.txn.take()
    }

    /// The next page of the scan under way.
    fn next_page(&mut self) -> Result<PartAnswer, EngineError> {
        let Some(cursor) = &self.cursor else {
            return Err(EngineError::Internal("no scan is under way in the remote transaction".into()));
        };
        let page = cursor.pages.recv();
        let done = !matches!(page, Ok(Ok(Page { last: false, .. })));
        if done {
            self.settle();
        }
        match page {
            Ok(Ok(Page { rows, last })) => Ok(PartAnswer::Rows { rows, more: !last }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(EngineError::Internal("a remote scan ended without an answer".into())),
        }
    }
}

type Shared = Arc<parking_lot::Mutex<Open>>;

pub struct PartServer {
    groups: Arc<RaftGroups>,
    open: parking_lot::Mutex<HashMap<RemoteTxnId, Shared>>,
    /// Caller nodes whose last connection closed, and when.
    gone: parking_lot::Mutex<HashMap<u64, Instant>>,
}

fn failed(e: &EngineError) -> PartAnswer {
    PartAnswer::Failed(WireError::from_engine(e))
}

fn not_committed(why: String) -> PartAnswer {
    PartAnswer::Failed(WireError::NotCommitted(why))
}

impl PartServer {
    pub fn start(groups: Arc<RaftGroups>) -> Arc<PartServer> {
        let runtime = groups.runtime.clone();
        let server = Arc::new(PartServer { groups, open: Default::default(), gone: Default::default() });
        let weak = Arc::downgrade(&server);
        runtime.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            loop {
                tick.tick().await;
                let Some(server) = weak.upgrade() else { return };
                server.sweep();
            }
        });
        server
    }

    /// Partition `stream`'s engine here. A partition its group has not
    /// written yet has none on a replica (the group's log opens it with its
    /// first entry): this node leads the group and has applied everything
    /// committed, so it is empty, and opened so.
    fn engine(&self, stream: u32) -> Result<Arc<Engine>, EngineError> {
        match self.groups.node.partition(stream) {
            Some(e) => Ok(e),
            None => self.groups.node.open_partition(stream, true),
        }
    }

    /// How many remote transactions are open here.
    pub fn open_count(&self) -> usize {
        self.open.lock().len()
    }

    /// The caller node `node` closed its last connection to this node:
    /// the transactions it began here before now are aborted at the next
    /// sweep (those it begins after reconnecting are not).
    pub fn caller_gone(&self, node: u64) {
        self.gone.lock().insert(node, Instant::now());
    }

    /// Aborts the transactions of groups this node no longer leads, those
    /// whose caller is gone, and those idle too long. One being worked on
    /// is left to the next sweep.
    fn sweep(&self) {
        let ids: Vec<(RemoteTxnId, Shared)> = self.open.lock().iter().map(|(k, v)| (*k, v.clone())).collect();
        // Older departures can have left nothing still open.
        self.gone.lock().retain(|_, at| at.elapsed() < IDLE_LIMIT);
        let gone = self.gone.lock().clone();
        let mut leads: HashMap<GroupId, bool> = HashMap::new();
        for (id, open) in ids {
            let Some(mut o) = open.try_lock() else { continue };
            let leading = *leads.entry(o.group).or_insert_with(|| self.groups.holds_lease(o.group));
            let orphaned = gone.get(&id.node).is_some_and(|at| o.begun <= *at);
            if leading && !orphaned && o.last.elapsed() < IDLE_LIMIT {
                continue;
            }
            if let Some(t) = o.take_txn() {
                tracing::info!(
                    group = o.group,
                    caller = id.node,
                    "aborting a remote transaction: {}",
                    if !leading {
                        "this node no longer leads its partition"
                    } else if orphaned {
                        "its caller's node closed its connections"
                    } else {
                        "its caller went quiet"
                    }
                );
                t.abort();
            }
            drop(o);
            self.open.lock().remove(&id);
        }
    }

    /// While this node hands group `group`'s primary role over, a new
    /// transaction waits for the move (then begins at the new primary)
    /// rather than begin here and be refused at its commit.
    async fn await_hand_over(&self, group: GroupId) {
        let Some(gate) = self.groups.get(group).map(|h| h.proposals.gate.clone()) else { return };
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(4);
        while gate.is_handing_over() && self.groups.holds_lease(group) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// Answers one call.
    pub async fn handle(self: &Arc<Self>, call: PartCall) -> PartAnswer {
        let PartCall { group, stream, txn: id, begin, refresh, savepoints, deadline_ms, op } = call;
        if matches!(op, PartOp::Abort) {
            if let Some(open) = self.open.lock().remove(&id) {
                let taken = open.lock().take_txn();
                if let Some(t) = taken {
                    t.abort();
                }
            }
            return PartAnswer::Done;
        }
        if begin.is_some() {
            self.await_hand_over(group).await;
        }
        if !self.groups.holds_lease(group) {
            if begin.is_some() {
                return PartAnswer::Moved;
            }
            if let Some(open) = self.open.lock().remove(&id)
                && let Some(t) = open.lock().take_txn()
            {
                t.abort();
            }
            return not_committed(format!(
                "node {} is not the primary of this partition (group {group}) now; the transaction was rolled back there",
                self.groups.settings.id
            ));
        }
        let open = match begin {
            Some(b) => {
                let engine = match self.engine(stream) {
                    Ok(e) => e,
                    Err(e) => return failed(&e),
                };
                let mut t = match engine.begin(b.isolation) {
                    Ok(t) => t,
                    Err(e) => return failed(&e),
                };
                if let Some(d) = b.durability {
                    t.set_durability(d);
                }
                t.set_wait(true);
                t.set_wait_deadline(b.deadline_ms.map(|ms| Instant::now() + Duration::from_millis(ms)));
                // Savepoint 0 is the transaction's start.
                let start = t.savepoint();
                let work = self.groups.get(group).map(|h| h.proposals.gate.open_work());
                let open = Arc::new(parking_lot::Mutex::new(Open {
                    txn: Some(t),
                    group,
                    engine,
                    savepoints: HashMap::from([(0, start)]),
                    cursor: None,
                    last: Instant::now(),
                    begun: Instant::now(),
                    _work: work,
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
        if matches!(op, PartOp::Ready) {
            let serving = self.groups.get(group).is_some_and(|h| h.proposals.is_serving());
            let held = open.lock().txn.is_some();
            return match (serving, held) {
                (true, true) => PartAnswer::Done,
                (false, _) => not_committed("the partition's primary is handing its role to another node".into()),
                (_, false) => not_committed("the transaction already ended on the partition's primary".into()),
            };
        }
        if matches!(op, PartOp::Commit) {
            self.open.lock().remove(&id);
            let taken = open.lock().take_txn();
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
            let deadline = deadline_ms.map(|ms| Instant::now() + Duration::from_millis(ms));
            let answer = run(&mut o, refresh, savepoints, deadline, op);
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

impl PartServer {
    /// Makes a schema change on partition `stream`, which this node must
    /// lead (the engine replicates it through the partition's group).
    pub async fn change_schema(self: &Arc<Self>, group: GroupId, stream: u32, change: PartSchema) -> PartAnswer {
        if !self.groups.holds_lease(group) {
            return not_committed(format!(
                "node {} is not the primary of this partition (group {group}) now",
                self.groups.settings.id
            ));
        }
        let engine = match self.engine(stream) {
            Ok(e) => e,
            Err(e) => return failed(&e),
        };
        let done = tokio::task::spawn_blocking(move || match change {
            PartSchema::CreateTable(spec) => engine.create_table(spec).map(|_| ()),
            PartSchema::DropTable(name) => engine.drop_table(&name),
            PartSchema::CreateIndex { table, index } => engine.create_index(&table, index),
            PartSchema::DropIndex { table, index } => engine.drop_index(&table, &index),
            PartSchema::TruncateTable(name) => engine.truncate_table(&name).map(|_| ()),
            PartSchema::CopyTable { from, to } => engine.copy_table(&from, to).map(|_| ()),
            PartSchema::MatchTables(specs) => engine.match_tables(&specs).map(|changed| {
                for change in changed {
                    tracing::warn!(stream, "a partition behind its database's schema: {change}");
                }
            }),
        })
        .await;
        match done {
            Ok(Ok(())) => PartAnswer::Done,
            Ok(Err(e)) => failed(&e),
            Err(e) => PartAnswer::Failed(WireError::Other(format!("the schema change's task failed: {e}"))),
        }
    }
}

/// Answers [`PartMessage`]s for the partitions this node leads.
pub struct PartService {
    pub server: Arc<PartServer>,
}

impl Service for PartService {
    type Message = PartMessage;

    fn serve(self: &Arc<Self>, from: NodeId, message: PartMessage) -> BoxFuture<'static, Answer<PartAnswer>> {
        let server = self.server.clone();
        let group = match &message {
            PartMessage::Call(call) => call.group,
            PartMessage::Schema { group, .. } => *group,
        };
        if let Err(e) = server.groups.hosted(group) {
            return Box::pin(std::future::ready(Err(e.into())));
        }
        Box::pin(async move {
            match message {
                PartMessage::Call(call) if call.txn.node != from => {
                    Err(Refusal(format!("node {from} called for a transaction of node {}", call.txn.node)))
                }
                PartMessage::Call(call) => Ok(server.handle(call).await),
                PartMessage::Schema { group, stream, change } => Ok(server.change_schema(group, stream, change).await),
            }
        })
    }
}

fn table_of(engine: &Engine, name: &str) -> Result<Arc<Table>, EngineError> {
    engine.table(name).ok_or_else(|| EngineError::NoSuchTable(name.to_string()))
}

/// Runs one call (not a commit or an abort) on an open transaction.
fn run(o: &mut Open, refresh: bool, taken: Vec<u32>, deadline: Option<Instant>, op: PartOp) -> PartAnswer {
    if matches!(op, PartOp::ScanMore) {
        return o.next_page().unwrap_or_else(|e| failed(&e));
    }
    // Any other call ends the scan under way.
    o.settle();
    if let PartOp::Scan { table, index, range, fields, tests } = op {
        return scan(o, &table, index, range, fields, tests).unwrap_or_else(|e| failed(&e));
    }
    let Open { txn, engine, savepoints, .. } = o;
    let Some(t) = txn.as_mut() else { return not_committed("the transaction already ended".into()) };
    // The calling statement's deadline (a later statement's may differ
    // from the one the transaction began with).
    t.set_wait_deadline(deadline);
    if refresh {
        t.refresh_snapshot();
    }
    for n in taken {
        savepoints.insert(n, t.savepoint());
    }
    let result: Result<PartAnswer, EngineError> = (|| match op {
        PartOp::Get { table, key } => Ok(PartAnswer::Row(t.get(&table_of(engine, &table)?, &key)?)),
        PartOp::Claim { table, key } => {
            // The row rewritten as it is: claimed for this transaction
            // (the caller writes the new row next, or rolls back).
            let mut current = None;
            t.update_with(&table_of(engine, &table)?, &key, |row| {
                current = Some(row.to_vec());
                Some(row.to_vec())
            })?;
            Ok(PartAnswer::Row(current))
        }
        PartOp::GetVersioned { table, key } => {
            Ok(PartAnswer::Versioned(t.get_versioned(&table_of(engine, &table)?, &key)?.map(|(d, v)| (d, v.0))))
        }
        PartOp::Insert { table, data } => t.insert(&table_of(engine, &table)?, data).map(|()| PartAnswer::Done),
        PartOp::Update { table, data } => Ok(PartAnswer::Bool(t.update(&table_of(engine, &table)?, data)?)),
        PartOp::Delete { table, key } => Ok(PartAnswer::Bool(t.delete(&table_of(engine, &table)?, &key)?)),
        PartOp::Put { table, data, cond } => put_answer(t.put(&table_of(engine, &table)?, data, cond)?),
        PartOp::DeleteIf { table, key, cond } => put_answer(t.delete_if(&table_of(engine, &table)?, &key, cond)?),
        PartOp::RollbackTo(n) => {
            let sp = *savepoints
                .get(&n)
                .ok_or_else(|| EngineError::Internal(format!("no savepoint {n} in the remote transaction")))?;
            t.rollback_to(sp)?;
            // The later ones mark states undone.
            savepoints.retain(|k, _| *k <= n);
            Ok(PartAnswer::Done)
        }
        PartOp::Commit | PartOp::Abort | PartOp::Ready | PartOp::Scan { .. } | PartOp::ScanMore => {
            Err(EngineError::Internal("commits, aborts and scans are answered above".into()))
        }
    })();
    result.unwrap_or_else(|e| failed(&e))
}

/// How many bytes of rows one answer carries at most (besides one row).
const ROWS_PER_ANSWER_BYTES: usize = 4 << 20;

/// The first answer of a scan carries about this many bytes of rows, and
/// each next one twice as many as the last, up to `ROWS_PER_ANSWER_BYTES`:
/// a caller that stops early (a LIMIT, EXISTS) gets its few rows without
/// waiting for megabytes, while a long scan soon moves in large pages.
const FIRST_ANSWER_BYTES: usize = 32 << 10;

/// Starts a scan of `range` in `index` (None: the primary key) of `table`
/// on a thread of its own, and answers its first page. Only rows that pass
/// `tests` travel, and with `fields` only those fields of them (the others
/// NULL): a query reading two columns of a wide table does not ship the
/// rest, nor the rows its filter drops.
fn scan(
    o: &mut Open,
    table: &str,
    index: Option<String>,
    range: KeyRange,
    fields: Option<Vec<u32>>,
    tests: Vec<FieldTest>,
) -> Result<PartAnswer, EngineError> {
    let table = table_of(&o.engine, table)?;
    let index = match index {
        None => PRIMARY,
        Some(name) => table.spec().index_by_name(&name).ok_or(EngineError::NoSuchIndex(name.clone()))?.id,
    };
    let fields = fields.map(|mut f| {
        f.sort_unstable();
        f.dedup();
        f
    });
    let Some(mut t) = o.txn.take() else { return Ok(not_committed("the transaction already ended".into())) };
    let (send, pages) = std::sync::mpsc::sync_channel(1);
    let walker = std::thread::Builder::new().name("tessera-scan".into()).spawn(move || {
        let mut page = RowPage::default();
        let mut page_bytes = FIRST_ANSWER_BYTES;
        let walked = t.scan(&table, index, &range, |r| {
            if !passes(r, &tests) {
                return true;
            }
            match &fields {
                None => page.push(r),
                Some(fields) => page.push(&only_fields(r, fields)),
            }
            if page.bytes() < page_bytes {
                return true;
            }
            page_bytes = (page_bytes * 2).min(ROWS_PER_ANSWER_BYTES);
            // A caller gone (the channel dropped) ends the walk.
            send.send(Ok(Page { rows: std::mem::take(&mut page), last: false })).is_ok()
        });
        let _ = send.send(walked.map(|()| Page { rows: page, last: true }));
        t
    });
    let walker = walker.map_err(|e| EngineError::Internal(format!("cannot start a remote scan's thread: {e}")))?;
    o.cursor = Some(Cursor { pages, walker });
    o.next_page()
}

/// Row `r` with only `fields` (in increasing order), the others NULL. A
/// row the engine holds is well formed; one that is not goes whole.
fn only_fields(r: &[u8], fields: &[u32]) -> Vec<u8> {
    let Ok(t) = Tuple::parse(r) else { return r.to_vec() };
    let count = fields.last().map_or(0, |&f| f as usize + 1).min(t.len());
    let mut out = TupleBuilder::new();
    let mut keep = fields.iter().peekable();
    for i in 0..count {
        let kept = keep.next_if(|&&f| f as usize == i).is_some();
        out.push(if kept { t.field(i) } else { None });
    }
    out.finish()
}

fn put_answer(outcome: PutOutcome) -> Result<PartAnswer, EngineError> {
    Ok(PartAnswer::Put(match outcome {
        PutOutcome::Written => None,
        PutOutcome::Rejected { current } => Some(current.map(|v| v.0)),
    }))
}

#[cfg(test)]
mod tests {
    use tessera_engine::tuple::{Tuple, encode_tuple};

    use super::only_fields;

    #[test]
    fn a_scan_row_keeps_only_the_fields_asked_for() {
        let row = encode_tuple(&[Some(b"id"), Some(b"wide text"), None, Some(b"qty"), Some(b"tail")]);
        let fields = |r: &[u8]| {
            let t = Tuple::parse(r).unwrap();
            (0..t.len()).map(|i| t.field(i).map(<[u8]>::to_vec)).collect::<Vec<_>>()
        };
        let kept = only_fields(&row, &[0, 3]);
        assert_eq!(fields(&kept), [Some(b"id".to_vec()), None, None, Some(b"qty".to_vec())]);
        assert!(kept.len() < row.len());
        // A field past the row's end (a column added later) stays absent.
        assert_eq!(fields(&only_fields(&row, &[2, 9])), [None, None, None, None, None]);
        assert_eq!(fields(&only_fields(&row, &[])), Vec::<Option<Vec<u8>>>::new());
        assert_eq!(only_fields(b"x", &[0]), b"x", "a malformed row goes whole");
    }
}
