//! Tessera's storage engine: one partition's rows, in memory, multiversioned,
//! with optimistic transactions, a redo-only log and checkpoints.
//!
//! This crate is the product's core, modeled on SQL Server's Hekaton. It has
//! no SQL, no network and no async runtime; the SQL layer above talks to it
//! through [`Engine`], [`Transaction`] and the row contract in [`mod@tuple`].
//!
//! ```text
//!            Transaction ──get/scan──▶ Table ──▶ row directory (hash, lock-free reads)
//!                 │                     │        primary ordered index (skip list)
//!                 │                     │        secondary indexes (hash | skip list)
//!                 │                     ▼
//!                 │                    Row ──▶ Version(begin,end,data) ─▶ older ─▶ …
//!                 │ commit
//!                 ▼
//!   Sequencer (one atomic counter) ─▶ validate ─▶ CommitLog (group commit) ─▶ stamp ─▶ visible
//!                                                     │
//!                              checkpoint (from the log) ─▶ data + delta files + manifest
//! ```
//!
//! **Rows and versions** ([`mvcc`]). A row is the history of one primary key:
//! a chain of versions, newest first, each with `[begin, end)` timestamps.
//! Readers pick the version whose range holds their read time and never wait.
//! A version's header and its row bytes share one allocation, and short
//! primary keys live inside the directory's hash entry (`key.rs`): a point
//! lookup costs the hash bucket, the entry, the row and the version — the
//! cache misses, not the instructions, are what a lookup pays for. Every
//! walk down a chain goes through one iterator (`chain.rs`), the only place
//! where the chain's pointers become references; its opening comment is the
//! safety argument (who may free a version, and why none is freed under a
//! walk) that the rest of the crate relies on.
//!
//! **Transactions** ([`txn`], `commit.rs`). Writers claim a row's newest
//! version by compare-and-swap (first writer wins). At commit, a
//! timestamp comes from one atomic counter; repeatable read re-checks that
//! every version read is still current, serializable also repeats its scans
//! to catch phantoms; snapshot isolation validates nothing; read committed
//! takes a new snapshot per statement. Writers are the one place where
//! anything waits: like PostgreSQL, a write to a row another transaction
//! holds waits for it (with deadlock detection over the waits-for chain and
//! a lock timeout); then read committed works on the newest version, while
//! the snapshot levels go on if the holder aborted and get a retryable
//! [`EngineError::Conflict`] (SQLSTATE 40001) if it committed. (Hekaton fails
//! the second writer at once; on a hot row that lets writers abort each
//! other over and over, none committing.) The after-images then go to the
//! [`CommitLog`]; once durable (or at once, for lazy durability) the
//! transaction's markers are replaced by its timestamp, and the *visible
//! watermark* (`clock.rs`) moves past it when all earlier timestamps are
//! done. [`Transaction::commit`] blocks for this; an event loop calls
//! [`Transaction::commit_start`] and awaits the [`PendingCommit`] instead,
//! which holds no thread while the fsync runs: the log's flusher, through
//! the commit's own waker, stamps it the moment it is durable (`pending.rs`). New snapshots read at the watermark, so readers never meet a change
//! whose fate is undecided and never see undurable synchronous commits.
//!
//! **Indexes** ([`index`], `table.rs`). Every table has a row directory
//! (`scc::HashIndex`, lock-free reads, per-bucket locks for writers) keyed by
//! primary key; an ordered primary key adds a lock-free skip list
//! (`crossbeam-skiplist`). Secondary indexes, unique or not, are hash maps or
//! skip lists pointing at rows; readers re-check the key of the version they
//! see. So: lock-free for readers everywhere, fine-grained (one bucket) for
//! hash-map writers, lock-free for skip-list writers.
//!
//! **Garbage collection** (`gc.rs`) is cooperative: committing transactions
//! queue the rows they changed and collect a small batch of rows whose old
//! versions no snapshot can see any more. The queues are sharded by
//! transaction slot, so a thread mostly collects what it wrote itself, while
//! it is still in its cache. Memory is reclaimed through epochs.
//!
//! **Durability**: redo only. Aborted transactions write nothing; a commit
//! record holds the after-images of the rows it changed (`record.rs`). The
//! log (crate `tessera-log`) group-commits concurrent transactions into one
//! fsync. [`Durability::Synchronous`] acknowledges after the fsync,
//! [`Durability::Lazy`] at once with a bounded flush delay. If the log fails
//! (disk full, I/O error) the failing commit is rolled back and reported, and
//! the engine turns **read-only**: it keeps serving reads and refuses writes
//! until restarted, when recovery rebuilds exactly the durable state.
//!
//! **A node** ([`Node`], `node.rs`) is several engines on one log: the
//! system engine (stream 0, in the data directory itself) and one engine per
//! partition (`partitions/<stream>/`), each writing its own stream of the
//! node's [`SharedLog`], so all partitions share each group fsync while each
//! keeps its own clock, checkpoints and recovery. A partition created empty
//! opens with `fresh_stream` and skips reading the log at recovery.
//!
//! **Partitions led elsewhere** ([`remote`]). The interface a transaction
//! uses on a partition whose primary is another node
//! ([`remote::RemotePart`], the same versioned key-value calls as a
//! [`Transaction`]) and the one that says where partitions' primaries are
//! ([`remote::PartitionRoutes`]) are defined here, beside the transaction
//! they mirror: the SQL layer calls them, the replication layer implements
//! them, and neither depends on the other. The `serde` feature makes the
//! schema and call types serializable, so that they travel between nodes
//! as they are.
//!
//! **Checkpoints and recovery** (`checkpoint.rs`, `recovery.rs`) follow
//! Hekaton: checkpoints are built from the log stream alone, as data files
//! (rows inserted in a timestamp range) and delta files (ids of rows deleted
//! since), merged when they grow past the live data; recovery loads the
//! newest checkpoint's files in parallel and replays the log tail through the
//! same apply path (`apply.rs`) a replica will use.

mod apply;
mod chain;
pub mod checkpoint;
pub mod clock;
mod codec;
mod commit;
mod copy;
mod engine;
mod error;
mod gc;
pub mod index;
mod key;
pub mod mvcc;
pub mod node;
mod pending;
pub mod record;
mod recovery;
pub mod remote;
pub mod row_filter;
pub mod schema;
pub mod shared_log;
mod table;
pub mod tuple;
pub mod txn;
mod waiters;

pub use checkpoint::CheckpointStats;
pub use commit::CommitInfo;
pub use engine::{CommitLog, CommitLogSource, Engine, EngineConfig, EngineStats, LocalCommitLog};
pub use error::{ConflictReason, EngineError, ErrorClass, Result};
pub use node::{Node, SYSTEM_STREAM};
pub use pending::{CommitStart, PendingCommit};
pub use schema::{IndexId, IndexKind, IndexSpec, PRIMARY, TableId, TableSpec};
pub use shared_log::SharedLog;
pub use table::{Table, TableStats};
pub use tessera_log::LogError;
pub use txn::{Durability, Isolation, KeyRange, PutCondition, PutOutcome, RowVersion, RowWait, Savepoint, Transaction};
