//! [`RemoteTxn`]: the engine's [`RemotePart`] over [`PartCalls`], for the
//! layer that runs transactions.
//!
//! That layer calls from a session's thread and expects an answer; the
//! calls travel on the replication layer's runtime, and the session's
//! thread waits for each answer ([`wait_on`]: on a multi-threaded runtime
//! it hands its other work to another thread meanwhile, as any blocking
//! engine call does).

use std::time::Instant;

use tessera_engine::remote::{CommitFuture, RemotePart};
use tessera_engine::row_filter::FieldTest;
use tessera_engine::{EngineError, KeyRange, PutCondition, PutOutcome, RowVersion};
use tokio::runtime::Handle;

use super::client::PartCalls;

type EResult<T> = tessera_engine::Result<T>;

/// Runs `work` on `runtime` and waits for it on this thread.
pub fn wait_on<T: Send + 'static>(runtime: &Handle, work: impl Future<Output = T> + Send + 'static) -> EResult<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    runtime.spawn(async move {
        let _ = tx.send(work.await);
    });
    let recv = || rx.recv();
    let got = match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(recv),
        _ => recv(),
    };
    got.map_err(|_| stopped())
}

fn stopped() -> EngineError {
    EngineError::Unavailable("this node's replication layer stopped".into())
}

/// A transaction on a partition whose primary is another node, as the
/// engine's [`RemotePart`]: each call is one [`PartCalls`] call, made on
/// the replication runtime and waited for.
pub struct RemoteTxn {
    /// Taken while a call is under way; None after a call that never
    /// came back (the runtime stopped), which ends the transaction.
    calls: Option<PartCalls>,
    runtime: Handle,
}

impl RemoteTxn {
    pub fn new(calls: PartCalls, runtime: Handle) -> RemoteTxn {
        RemoteTxn { calls: Some(calls), runtime }
    }

    /// Makes one call and waits for it.
    fn call<T, F>(&mut self, f: impl FnOnce(PartCalls) -> F) -> EResult<T>
    where
        T: Send + 'static,
        F: Future<Output = (PartCalls, EResult<T>)> + Send + 'static,
    {
        let calls =
            self.calls.take().ok_or_else(|| EngineError::Internal("a remote call after a failed one".into()))?;
        let (calls, result) = wait_on(&self.runtime, f(calls))?;
        self.calls = Some(calls);
        result
    }

    fn calls(&mut self) -> &mut PartCalls {
        self.calls.as_mut().expect("no call under way")
    }
}

impl RemotePart for RemoteTxn {
    fn is_read_only(&self) -> bool {
        self.calls.as_ref().is_none_or(|t| t.is_read_only())
    }

    fn get(&mut self, table: &str, key: &[u8]) -> EResult<Option<Vec<u8>>> {
        let (table, key) = (table.to_string(), key.to_vec());
        self.call(move |mut t| async move {
            let r = t.get(&table, &key).await;
            (t, r)
        })
    }

    fn get_versioned(&mut self, table: &str, key: &[u8]) -> EResult<Option<(Vec<u8>, RowVersion)>> {
        let (table, key) = (table.to_string(), key.to_vec());
        self.call(move |mut t| async move {
            let r = t.get_versioned(&table, &key).await;
            (t, r)
        })
    }

    fn claim(&mut self, table: &str, key: &[u8]) -> EResult<Option<Vec<u8>>> {
        let (table, key) = (table.to_string(), key.to_vec());
        self.call(move |mut t| async move {
            let r = t.claim(&table, &key).await;
            (t, r)
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
        let (mut rows, mut more) = self.call(move |mut t| async move {
            let r = t.scan_first(&table, index.as_deref(), &range, fields.as_deref(), &tests).await;
            (t, r)
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
            (rows, more) = self.call(|mut t| async move {
                let r = t.scan_more().await;
                (t, r)
            })?;
        }
    }

    fn insert(&mut self, table: &str, data: Vec<u8>) -> EResult<()> {
        let table = table.to_string();
        self.call(move |mut t| async move {
            let r = t.insert(&table, data).await;
            (t, r)
        })
    }

    fn update(&mut self, table: &str, data: Vec<u8>) -> EResult<bool> {
        let table = table.to_string();
        self.call(move |mut t| async move {
            let r = t.update(&table, data).await;
            (t, r)
        })
    }

    fn delete(&mut self, table: &str, key: &[u8]) -> EResult<bool> {
        let (table, key) = (table.to_string(), key.to_vec());
        self.call(move |mut t| async move {
            let r = t.delete(&table, &key).await;
            (t, r)
        })
    }

    fn put(&mut self, table: &str, data: Vec<u8>, cond: PutCondition) -> EResult<PutOutcome> {
        let table = table.to_string();
        self.call(move |mut t| async move {
            let r = t.put(&table, data, cond).await;
            (t, r)
        })
    }

    fn delete_if(&mut self, table: &str, key: &[u8], cond: PutCondition) -> EResult<PutOutcome> {
        let (table, key) = (table.to_string(), key.to_vec());
        self.call(move |mut t| async move {
            let r = t.delete_if(&table, &key, cond).await;
            (t, r)
        })
    }

    fn savepoint(&mut self) -> u32 {
        self.calls().savepoint()
    }

    fn rollback_to(&mut self, savepoint: u32) -> EResult<()> {
        self.call(move |mut t| async move {
            let r = t.rollback_to(savepoint).await;
            (t, r)
        })
    }

    fn refresh_snapshot(&mut self) {
        self.calls().refresh_snapshot();
    }

    fn set_wait_deadline(&mut self, deadline: Option<Instant>) {
        self.calls().set_wait_deadline(deadline);
    }

    fn ready(&mut self) -> EResult<()> {
        self.call(move |mut t| async move {
            let r = t.ready().await;
            (t, r)
        })
    }

    fn commit(mut self: Box<Self>) -> CommitFuture {
        let (tx, rx) = tokio::sync::oneshot::channel();
        match self.calls.take() {
            Some(calls) => {
                self.runtime.spawn(async move {
                    let _ = tx.send(calls.commit().await);
                });
            }
            None => {
                let _ = tx.send(Err(EngineError::Internal("a commit after a failed remote call".into())));
            }
        }
        Box::pin(async move { rx.await.unwrap_or_else(|_| Err(stopped())) })
    }

    fn abort(self: Box<Self>) {
        // Dropping it aborts it.
    }
}

impl Drop for RemoteTxn {
    /// A transaction ended without a commit (rolled back, or its session
    /// gone) is aborted on the partition's primary at once: its writes
    /// would otherwise hold their rows there until it expires.
    fn drop(&mut self) {
        if let Some(calls) = self.calls.take() {
            self.runtime.spawn(calls.abort());
        }
    }
}
