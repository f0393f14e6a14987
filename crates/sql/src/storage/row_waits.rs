//! Writes that wait for a row's holder without holding a thread.
//!
//! A session runs on a runtime of one worker that it shares with other
//! sessions. A write that meets a row another transaction holds must wait
//! for that transaction to end, and a thread blocked on it is a thread the
//! holder's own session may need to reach its COMMIT: with a few such
//! waiters every worker is taken and nothing commits. So a session's writes
//! never wait inside the engine: the transaction is told not to wait
//! (`Txn::set_wait(false)`), a write that would have to answers
//! `WouldBlock` with the holder and changes nothing, and the session's task
//! awaits the holder's end ([`tessera_engine::RowWait`], woken by the
//! engine when the holder ends) and then does the write again.
//!
//! The wait keeps the engine's rules: the youngest member of a waits-for
//! cycle gives up with 40P01, and `lock_timeout` and the statement's
//! deadline (`statement_timeout`) end it; they are checked whenever the
//! wait is polled, and it is polled at least every `RECHECK`.

use std::time::Duration;

use tessera_engine::mvcc::TxnId;
use tessera_engine::{EngineError, RowWait};

use crate::error::{Result, SqlError};
use crate::storage::provider::TxnSlot;
use crate::storage::txn::Txn;

/// How often a pending wait looks for a deadlock and at its clocks.
const RECHECK: Duration = Duration::from_millis(100);

/// Why a step of writes stopped before it was done.
#[derive(Debug)]
pub(crate) enum Interrupted {
    /// A row is held by this transaction (of the part's engine, as the
    /// `Txn` remembers): wait for it, then run the step again.
    Wait(TxnId),
    /// The statement fails.
    Failed(SqlError),
}

impl From<EngineError> for Interrupted {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::WouldBlock { holder } => Interrupted::Wait(holder),
            e => Interrupted::Failed(e.into()),
        }
    }
}

impl Interrupted {
    /// The same interruption, with a failure's error passed through `f`
    /// (to say where it happened); a wait stays a wait.
    pub(crate) fn map_failed(self, f: impl FnOnce(SqlError) -> SqlError) -> Self {
        match self {
            Interrupted::Failed(e) => Interrupted::Failed(f(e)),
            wait => wait,
        }
    }
}

/// Takes a `WouldBlock` out of an engine result, for a step that handles
/// the engine's other errors itself.
pub(crate) fn lift_wait<T>(
    r: std::result::Result<T, EngineError>,
) -> std::result::Result<std::result::Result<T, EngineError>, Interrupted> {
    match r {
        Err(EngineError::WouldBlock { holder }) => Err(Interrupted::Wait(holder)),
        r => Ok(r),
    }
}

impl From<SqlError> for Interrupted {
    fn from(e: SqlError) -> Self {
        Interrupted::Failed(e)
    }
}

/// Runs `step` on the session's transaction until it is done, waiting (as
/// a task, not a thread) for each row's holder that interrupts it. A step
/// is run again from the start after each wait, so it must remember its
/// own progress: the write that answered `Wait` changed nothing, and the
/// writes before it stay done.
pub(crate) async fn write_waiting<R>(
    slot: &TxnSlot,
    mut step: impl FnMut(&mut Txn) -> std::result::Result<R, Interrupted>,
) -> Result<R> {
    loop {
        let wait = {
            let mut guard = slot.lock();
            let txn = guard.as_mut().ok_or_else(|| SqlError::internal("no transaction for a write"))?;
            txn.set_wait(false);
            let outcome = step(txn);
            txn.set_wait(true);
            match outcome {
                Ok(r) => return Ok(r),
                Err(Interrupted::Failed(e)) => return Err(e),
                Err(Interrupted::Wait(holder)) => txn.row_wait(holder),
            }
        };
        await_row(wait).await?;
    }
}

/// Awaits a row's holder. Deadlocks and timeouts are noticed when the wait
/// is polled, so it is polled again every `RECHECK` until it ends.
pub(crate) async fn await_row(mut wait: RowWait) -> Result<()> {
    loop {
        if let Ok(r) = tokio::time::timeout(RECHECK, &mut wait).await {
            return r.map_err(Into::into);
        }
    }
}
