//! The threads client sessions run on.
//!
//! A session's work is a short burst per round trip: read a message, run a
//! point read or write, send the reply, wait for the next message. On one
//! work-stealing runtime every such burst costs a second thread too: the
//! worker whose poll of the sockets woke the session wakes an idle worker
//! to take its other work, and on a machine whose cores are shared with the
//! clients that wake-up and the context switches after it cost more than
//! the statement (bench/README.md, "What the profiles showed" 13–14).
//!
//! So sessions are pinned: there is one runtime of one worker per core,
//! each with its own socket poller, and a new connection goes to the one
//! serving the fewest. Little is lost that the runtime's stealing gave: a
//! general-path query's DataFusion work already runs on the query pool of
//! its own (`tessera_sql`), a durable commit awaits its fsync without
//! holding a thread, and a write that must wait for a row's holder awaits
//! it as a task (`tessera_sql::storage::row_waits`): with one worker per runtime, a
//! thread held by a waiter would be the thread the holder's own session
//! needs to reach its COMMIT. What is lost is balance between sessions: two busy
//! sessions on one runtime share a core while another runtime may idle.
//! The node's own background work (accepting, replication, the cluster's
//! RPC) stays on the main runtime. `tessera start --session-threads`
//! chooses how many (0: sessions share the main runtime, as before).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::runtime::{Builder, Handle, Runtime};

/// One runtime per connection thread; connections are assigned to the least
/// loaded.
pub struct ConnectionRuntimes {
    shards: Vec<Shard>,
    /// Owned here so that `shutdown` can wait for the sessions to end.
    runtimes: Mutex<Vec<Runtime>>,
}

struct Shard {
    handle: Handle,
    sessions: Arc<AtomicUsize>,
}

/// A session's place on its runtime, given back when it ends.
pub(crate) struct Seat(Arc<AtomicUsize>);

impl Drop for Seat {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ConnectionRuntimes {
    /// `threads` runtimes of one worker each (at least one).
    pub fn new(threads: usize) -> std::io::Result<ConnectionRuntimes> {
        let mut shards = Vec::new();
        let mut runtimes = Vec::new();
        for i in 0..threads.max(1) {
            let runtime = Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name(format!("tessera-sessions-{i}"))
                .enable_all()
                .build()?;
            shards.push(Shard { handle: runtime.handle().clone(), sessions: Arc::new(AtomicUsize::new(0)) });
            runtimes.push(runtime);
        }
        Ok(ConnectionRuntimes { shards, runtimes: Mutex::new(runtimes) })
    }

    /// One runtime per core of this machine.
    pub fn per_core() -> std::io::Result<ConnectionRuntimes> {
        ConnectionRuntimes::new(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// The runtime for a new session: the one with the fewest sessions.
    pub(crate) fn seat(&self) -> (Handle, Seat) {
        let shard =
            self.shards.iter().min_by_key(|s| s.sessions.load(Ordering::Acquire)).expect("at least one runtime");
        shard.sessions.fetch_add(1, Ordering::AcqRel);
        (shard.handle.clone(), Seat(shard.sessions.clone()))
    }

    /// How many sessions each runtime serves.
    pub fn sessions(&self) -> Vec<usize> {
        self.shards.iter().map(|s| s.sessions.load(Ordering::Acquire)).collect()
    }

    /// Ends every session (their open transactions roll back), waiting up to
    /// `timeout` per runtime. Call it outside any runtime.
    pub fn shutdown(&self, timeout: Duration) {
        for runtime in self.runtimes.lock().drain(..) {
            runtime.shutdown_timeout(timeout);
        }
    }
}

impl Drop for ConnectionRuntimes {
    fn drop(&mut self) {
        // Not shut down by its owner (dropped inside a runtime, say): stop
        // without waiting, which is allowed anywhere.
        for runtime in self.runtimes.get_mut().drain(..) {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_go_to_the_least_loaded_runtime() {
        let runtimes = ConnectionRuntimes::new(2).unwrap();
        let (_, a) = runtimes.seat();
        let (_, b) = runtimes.seat();
        assert_eq!(runtimes.sessions(), [1, 1]);
        drop(a);
        let (_, c) = runtimes.seat();
        assert_eq!(runtimes.sessions(), [1, 1]);
        let (_, d) = runtimes.seat();
        assert_eq!(runtimes.sessions().iter().sum::<usize>(), 3);
        drop((b, c, d));
        assert_eq!(runtimes.sessions(), [0, 0]);
        runtimes.shutdown(Duration::from_secs(1));
    }

    #[test]
    fn a_session_runs_on_its_runtime_and_may_block_in_place() {
        let runtimes = ConnectionRuntimes::new(1).unwrap();
        let (handle, seat) = runtimes.seat();
        let name = std::sync::mpsc::channel();
        let tx = name.0;
        handle.spawn(async move {
            let _seat = seat;
            let on = std::thread::current().name().map(str::to_owned);
            // A blocking section hands the worker role over instead of panicking.
            let blocked = tokio::task::block_in_place(|| 7);
            tx.send((on, blocked)).unwrap();
        });
        let (on, blocked) = name.1.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(on.as_deref(), Some("tessera-sessions-0"));
        assert_eq!(blocked, 7);
        runtimes.shutdown(Duration::from_secs(1));
        assert_eq!(runtimes.sessions(), [0]);
    }
}
