//! The caller's side of a transaction on a partition whose primary is
//! another node: [`PartCalls`], one call at a time.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tessera_engine::remote::PartSchema;
use tessera_engine::row_filter::FieldTest;
use tessera_engine::{EngineError, KeyRange, LogError, PutCondition, PutOutcome, RowVersion};

use super::messages::{Begin, PartAnswer, PartCall, PartMessage, PartOp, RemoteTxnId, RowPage};
use crate::error::Result;
use crate::types::{GroupId, NodeId};
use crate::wire::Peers;
use crate::wire::service::{self, Answer, Refusal};

/// Numbers this node's transactions on partitions other nodes lead.
pub struct RemoteTxnIds {
    /// This process's incarnation (random per start).
    incarnation: u64,
    seq: AtomicU64,
}

impl RemoteTxnIds {
    pub fn new() -> RemoteTxnIds {
        let mut bytes = [0u8; 8];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).expect("system randomness");
        RemoteTxnIds { incarnation: u64::from_le_bytes(bytes), seq: AtomicU64::new(0) }
    }

    /// A new transaction's identity, on node `node` (this one).
    pub fn next(&self, node: NodeId) -> RemoteTxnId {
        RemoteTxnId { node, incarnation: self.incarnation, seq: self.seq.fetch_add(1, Ordering::Relaxed) }
    }
}

impl Default for RemoteTxnIds {
    fn default() -> Self {
        RemoteTxnIds::new()
    }
}

type EResult<T> = std::result::Result<T, EngineError>;

/// Makes `change` on partition `stream` of group `id` at its primary
/// (`addr`). Nothing transactional: each change is the engine's own
/// atomic step, and a schema change's job repeats it where it is missing.
pub async fn change_schema(peers: &Peers, addr: &str, group: GroupId, stream: u32, change: PartSchema) -> EResult<()> {
    // A table's copy takes as long as its rows do.
    let limit = if matches!(change, PartSchema::CopyTable { .. }) { COPY_TIMEOUT } else { CALL_TIMEOUT };
    let body = service::request(&PartMessage::Schema { group, stream, change });
    let reply = match peers.client(addr).call(body, limit).await {
        Ok(bytes) => postcard::from_bytes::<Answer<PartAnswer>>(&bytes)
            .map_err(|e| EngineError::Internal(format!("a malformed answer from the partition's primary: {e}")))?,
        Err(e) => {
            return Err(EngineError::CommitFailed(LogError::OutcomeUnknown(format!(
                "the partition's primary did not answer a schema change: {e}"
            ))));
        }
    };
    match reply {
        Ok(PartAnswer::Done) => Ok(()),
        Ok(PartAnswer::Failed(e)) => Err(e.into_engine()),
        Err(Refusal(why)) => Err(EngineError::CommitFailed(LogError::NotReplicated(format!(
            "the partition's primary refused a schema change: {why}"
        )))),
        Ok(_) => Err(EngineError::Internal("an unexpected answer from the partition's primary".into())),
    }
}

/// How long a call may take before the caller gives up on it. Generous:
/// a write may wait for a row's holder, and a commit for its quorum.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a table's copy on a partition's primary may take.
const COPY_TIMEOUT: Duration = Duration::from_secs(600);

/// A transaction on a partition whose primary is another node (at `addr`),
/// from the caller's side. Calls are made one at a time, in order.
pub struct PartCalls {
    peers: Peers,
    addr: String,
    group: GroupId,
    stream: u32,
    id: RemoteTxnId,
    begin: Option<Begin>,
    read_only: bool,
    /// The remote side may hold an open transaction (a call was sent).
    open: bool,
    /// Taken with the next call: a fresh snapshot, and savepoints.
    refresh: bool,
    pending: Vec<u32>,
    next_savepoint: u32,
    /// The caller's current statement's deadline, sent with every call.
    deadline: Option<std::time::Instant>,
    /// Where the partition's primary is now (None: this node), for a
    /// first call that found the role moved.
    locate: Locate,
}

/// Finds the RPC address of a partition's primary (None: this node leads
/// it; an error while it has none).
pub type Locate = Arc<dyn Fn() -> Result<Option<String>> + Send + Sync>;

/// How long a transaction's first call follows a partition's primary
/// that is moving before it gives up.
const FOLLOW_MOVE: Duration = Duration::from_secs(3);

impl PartCalls {
    pub(crate) fn new(
        (peers, locate): (Peers, Locate),
        addr: String,
        group: GroupId,
        stream: u32,
        id: RemoteTxnId,
        begin: Begin,
    ) -> Self {
        PartCalls {
            locate,
            peers,
            addr,
            group,
            stream,
            id,
            begin: Some(begin),
            read_only: true,
            open: false,
            refresh: false,
            pending: Vec::new(),
            next_savepoint: 1,
            deadline: begin.deadline_ms.map(|ms| std::time::Instant::now() + Duration::from_millis(ms)),
        }
    }

    /// The deadline of the statement making the calls from now on: waits
    /// for a row's holder on the partition's primary end there.
    pub fn set_wait_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.deadline = deadline;
    }

    pub fn stream(&self) -> u32 {
        self.stream
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Sends one call and waits for its answer. A call that could not be
    /// sent or answered leaves the remote transaction to be aborted there
    /// (it expires); the caller's transaction cannot go on.
    async fn call(&mut self, op: PartOp) -> EResult<PartAnswer> {
        let Some(begin) = self.begin else { return self.call_once(op).await };
        let answer = self.call_once(op.clone()).await;
        if !matches!(answer, Ok(PartAnswer::Moved)) {
            return answer;
        }
        // The first call found the partition's primary moved: nothing was
        // done there; begin again where the role went.
        let deadline = tokio::time::Instant::now() + FOLLOW_MOVE;
        loop {
            match (self.locate)() {
                Ok(Some(addr)) if addr != self.addr => {
                    self.addr = addr;
                    self.begin = Some(begin);
                    match self.call_once(op.clone()).await {
                        Ok(PartAnswer::Moved) => {}
                        answer => return answer,
                    }
                }
                Ok(None) => {
                    return Err(EngineError::CommitFailed(LogError::NotReplicated(
                        "the partition's primary moved to this node while the transaction began there; nothing was done"
                            .into(),
                    )));
                }
                _ => {}
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(EngineError::CommitFailed(LogError::NotReplicated(
                    "the partition's primary was moving and its new one was not found in time; nothing was done".into(),
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn call_once(&mut self, op: PartOp) -> EResult<PartAnswer> {
        let committing = matches!(op, PartOp::Commit);
        let call = PartCall {
            group: self.group,
            stream: self.stream,
            txn: self.id,
            begin: self.begin.take(),
            refresh: std::mem::take(&mut self.refresh),
            savepoints: std::mem::take(&mut self.pending),
            deadline_ms: self
                .deadline
                .map(|d| d.saturating_duration_since(std::time::Instant::now()).as_millis() as u64),
            op,
        };
        self.open = true;
        let body = service::request(&PartMessage::Call(call));
        let reply = match self.peers.client(&self.addr).call(body, CALL_TIMEOUT).await {
            Ok(bytes) => postcard::from_bytes::<Answer<PartAnswer>>(&bytes)
                .map_err(|e| format!("a malformed answer from the partition's primary: {e}")),
            Err(e) => Err(e.to_string()),
        };
        match reply {
            Ok(Ok(PartAnswer::Failed(e))) => Err(e.into_engine()),
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(Refusal(why))) => Err(EngineError::CommitFailed(LogError::NotReplicated(format!(
                "the partition's primary refused the call: {why}"
            )))),
            Err(why) if committing => Err(EngineError::CommitFailed(LogError::OutcomeUnknown(format!(
                "the partition's primary did not answer the commit: {why}"
            )))),
            Err(why) => Err(EngineError::CommitFailed(LogError::NotReplicated(format!(
                "the partition's primary did not answer: {why}"
            )))),
        }
    }

    fn unexpected<T>(answer: PartAnswer) -> EResult<T> {
        Err(EngineError::Internal(format!("an unexpected answer from the partition's primary: {answer:?}")))
    }

    pub async fn get(&mut self, table: &str, key: &[u8]) -> EResult<Option<Vec<u8>>> {
        match self.call(PartOp::Get { table: table.into(), key: key.to_vec() }).await? {
            PartAnswer::Row(r) => Ok(r),
            other => Self::unexpected(other),
        }
    }

    pub async fn get_versioned(&mut self, table: &str, key: &[u8]) -> EResult<Option<(Vec<u8>, RowVersion)>> {
        match self.call(PartOp::GetVersioned { table: table.into(), key: key.to_vec() }).await? {
            PartAnswer::Versioned(r) => Ok(r.map(|(d, v)| (d, RowVersion(v)))),
            other => Self::unexpected(other),
        }
    }

    /// Claims the row with primary key `key` for this transaction and
    /// returns it (None: no such row): the first half of the engine's
    /// `update_with`, whose second is an `update` of the claimed row.
    pub async fn claim(&mut self, table: &str, key: &[u8]) -> EResult<Option<Vec<u8>>> {
        self.read_only = false;
        match self.call(PartOp::Claim { table: table.into(), key: key.to_vec() }).await? {
            PartAnswer::Row(r) => Ok(r),
            other => Self::unexpected(other),
        }
    }

    /// The first rows of `range` in `index` (None: the primary key) that
    /// pass `tests`, in order, with only `fields` (None: all; the others
    /// NULL), and whether more follow ([`Self::scan_more`]). The primary
    /// walks the index as the pages are asked for; any other call ends
    /// the scan.
    pub async fn scan_first(
        &mut self,
        table: &str,
        index: Option<&str>,
        range: &KeyRange,
        fields: Option<&[u32]>,
        tests: &[FieldTest],
    ) -> EResult<(RowPage, bool)> {
        let op = PartOp::Scan {
            table: table.into(),
            index: index.map(str::to_string),
            range: range.clone(),
            fields: fields.map(<[u32]>::to_vec),
            tests: tests.to_vec(),
        };
        Self::page(self.call(op).await?)
    }

    /// The next rows of the scan under way, and whether more follow.
    pub async fn scan_more(&mut self) -> EResult<(RowPage, bool)> {
        Self::page(self.call(PartOp::ScanMore).await?)
    }

    fn page(answer: PartAnswer) -> EResult<(RowPage, bool)> {
        match answer {
            PartAnswer::Rows { rows, more } => Ok((rows, more)),
            other => Self::unexpected(other),
        }
    }

    /// Every row of `range` in `index` (None: the primary key), in order,
    /// gathered here.
    pub async fn scan(&mut self, table: &str, index: Option<&str>, range: &KeyRange) -> EResult<Vec<Vec<u8>>> {
        let (rows, mut more) = self.scan_first(table, index, range, None, &[]).await?;
        let mut out = rows.to_rows();
        while more {
            let (rows, next) = self.scan_more().await?;
            out.extend(rows.iter().map(<[u8]>::to_vec));
            more = next;
        }
        Ok(out)
    }

    async fn write(&mut self, op: PartOp) -> EResult<PartAnswer> {
        self.read_only = false;
        self.call(op).await
    }

    pub async fn insert(&mut self, table: &str, data: Vec<u8>) -> EResult<()> {
        match self.write(PartOp::Insert { table: table.into(), data }).await? {
            PartAnswer::Done => Ok(()),
            other => Self::unexpected(other),
        }
    }

    pub async fn update(&mut self, table: &str, data: Vec<u8>) -> EResult<bool> {
        match self.write(PartOp::Update { table: table.into(), data }).await? {
            PartAnswer::Bool(b) => Ok(b),
            other => Self::unexpected(other),
        }
    }

    pub async fn delete(&mut self, table: &str, key: &[u8]) -> EResult<bool> {
        match self.write(PartOp::Delete { table: table.into(), key: key.to_vec() }).await? {
            PartAnswer::Bool(b) => Ok(b),
            other => Self::unexpected(other),
        }
    }

    pub async fn put(&mut self, table: &str, data: Vec<u8>, cond: PutCondition) -> EResult<PutOutcome> {
        let op = PartOp::Put { table: table.into(), data, cond };
        Self::outcome(self.write(op).await?)
    }

    pub async fn delete_if(&mut self, table: &str, key: &[u8], cond: PutCondition) -> EResult<PutOutcome> {
        let op = PartOp::DeleteIf { table: table.into(), key: key.to_vec(), cond };
        Self::outcome(self.write(op).await?)
    }

    fn outcome(answer: PartAnswer) -> EResult<PutOutcome> {
        match answer {
            PartAnswer::Put(None) => Ok(PutOutcome::Written),
            PartAnswer::Put(Some(current)) => Ok(PutOutcome::Rejected { current: current.map(RowVersion) }),
            other => Self::unexpected(other),
        }
    }

    /// A savepoint, taken on the primary with the next call (0 is the
    /// transaction's start).
    pub fn savepoint(&mut self) -> u32 {
        let n = self.next_savepoint;
        self.next_savepoint += 1;
        self.pending.push(n);
        n
    }

    pub async fn rollback_to(&mut self, savepoint: u32) -> EResult<()> {
        if savepoint == 0 && !self.open {
            return Ok(()); // Nothing was done yet.
        }
        if let Some(i) = self.pending.iter().position(|p| *p == savepoint) {
            // Taken after the last call: nothing was done since.
            self.pending.truncate(i + 1);
            return Ok(());
        }
        // Those taken after the last call mark a state being undone.
        self.pending.clear();
        match self.call(PartOp::RollbackTo(savepoint)).await? {
            PartAnswer::Done => Ok(()),
            other => Self::unexpected(other),
        }
    }

    /// A fresh snapshot from the next call on.
    pub fn refresh_snapshot(&mut self) {
        // Before the first call there is nothing to refresh: it begins anew.
        self.refresh = self.open;
    }

    /// Commits on the partition's primary, once its quorum has the commit.
    /// Whether the partition's primary can commit the transaction now (see
    /// `PartOp::Ready`).
    pub async fn ready(&mut self) -> EResult<()> {
        if !self.open {
            return Ok(());
        }
        match self.call(PartOp::Ready).await? {
            PartAnswer::Done => Ok(()),
            other => Self::unexpected(other),
        }
    }

    pub async fn commit(mut self) -> EResult<()> {
        if !self.open {
            return Ok(());
        }
        match self.call(PartOp::Commit).await? {
            PartAnswer::Done => Ok(()),
            other => Self::unexpected(other),
        }
    }

    /// Aborts on the partition's primary (best effort: an abandoned
    /// transaction expires there).
    pub async fn abort(mut self) {
        if self.open
            && let Err(e) = self.call(PartOp::Abort).await
        {
            tracing::debug!(stream = self.stream, "aborting a remote transaction: {e}");
        }
    }
}
