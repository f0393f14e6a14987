//! Tessera's replication: the nodes' Raft groups and the engines they feed.
//!
//! A cluster's nodes replicate their engines through Raft groups
//! ([openraft]). Every node holds the *system group* ([`SYSTEM_GROUP`]),
//! whose log carries the catalog's stream (stream 0: the catalog,
//! `tessera` and `postgres`) and every stream no other group claims; each
//! database's home, and each partition of a keyed database, is a data
//! group of its own on some of the nodes. In a group, the primary is the
//! Raft leader, the epoch is the Raft term, and a commit's sequence number
//! is its log index. The log carries the engines' own records — the
//! after-images of committed transactions and DDL, exactly what a single
//! node writes to its local log — each tagged with its engine's stream. A
//! database's group replicates its home's stream and its partitions', and
//! takes up a stream new in its log (a split's partition). A second kind
//! of Raft group, the *manager group*, keeps the partition manager's
//! directory.
//!
//! ```text
//!  primary                                      secondary (× N-1)
//!  Transaction::commit_start
//!    └─ ReplicatedCommitLog::append ─ ticket
//!         └─ Raft::client_write ──── AppendEntries (rpc) ──▶ LogStore::append (fsync)
//!            LogStore::append (fsync)                       │
//!            quorum ◀──────────────────── ack ──────────────┘
//!            StateMachine::apply: own entry ─▶ ticket decided ─▶ engine stamps the versions
//!                                                          StateMachine::apply ─▶ Engine::apply_committed
//! ```
//!
//! # Layout
//!
//! The crate is built in layers, each a module; a layer imports only from
//! the layers below it, never from one above or beside it, and the files
//! of a layer import each other without a circle:
//!
//! ```text
//!  node                 ReplicationNode: the layers assembled; Groups, the handle above
//!  manager │ parts      the partition manager │ transactions on partitions led elsewhere
//!  raft                 the data groups: Raft, its log, its state machine, roles, quiet groups
//!  wire                 RPC between nodes: framing, authentication, calls, peers, services
//!  types · error        the crate's names, and its one error type
//! ```
//!
//! - `types` and `error` import nothing of the crate: the names every
//!   layer uses (`NodeId`, `GroupId`, [`SYSTEM_GROUP`], `NodeInfo`,
//!   `Load`) and [`ReplicationError`], which says what a caller can do
//!   about it ([`error::ErrorKind`]: refused, retryable, internal).
//! - `wire` imports `types` and `error`: authenticated (cluster secret,
//!   HMAC challenge–response both ways), multiplexed request/response over
//!   TCP (`rpc`, `auth`, `frame`); the node's clients of its peers
//!   (`peers`); and `service`, which gives requests their meaning without
//!   knowing any: a request is its subsystem's tag and that subsystem's
//!   message, and the node's listener hands it to the subsystem's
//!   [`wire::Service`].
//! - `raft` imports `wire` and below: a data group's Raft type
//!   configuration, its log in the node's shared log (`log_store`), its
//!   state machine over the engines, snapshots, the engines' commit log,
//!   pipelined replication (`append_stream`), the client and server sides
//!   of its messages (`transport`, `service`), quiet groups, and this
//!   node's [`Role`] in each group (`role_watch`); `groups` holds the
//!   node's data groups ([`raft::groups::RaftGroups`]).
//! - `manager` and `parts` import `raft` and below, and not each other.
//!   `manager` is the partition manager: the manager group and its
//!   directory, the roster of what nodes report, status and the views,
//!   replica repairs and moves, the spreading of primaries, and
//!   administration (`tessera status`, `tessera node drain`). `parts`
//!   carries a transaction on a partition whose primary is another node:
//!   the caller's side ([`parts::RemoteTxn`], the engine's
//!   `remote::RemotePart`) and the primary's. `node` makes [`Groups`] the
//!   engine's `remote::PartitionRoutes`.
//! - `node` imports every layer and nothing imports it: it opens the
//!   engines and the shared log, starts the system group and the manager
//!   group, serves every subsystem on the node's RPC listener, runs the
//!   node's background loops (bootstrap, registrations, reports) and the
//!   partition manager, and hands the layers above [`Groups`].
//!
//! Each subsystem owns its messages and the service that answers them:
//! `raft::messages` (a data group's Raft, and who a node is),
//! `raft::quiet` (quiet groups' confirmations), `manager::directory_link`
//! (the manager group's Raft), `manager::messages` (the manager's traffic,
//! and administration), `parts::messages` (partition calls) and
//! `node::service` (the sessions a node's primaries serve).
//!
//! # Rules
//!
//! Safety of a change of primary rests on three rules. A node serves as
//! primary only once it leads with a quorum and has applied everything
//! committed before its term (`role_watch`). Its engines' clocks then start
//! above every timestamp in its log, so version chains stay ordered across
//! primaries. And a replica applies an entry only when no local
//! transaction is active in that engine: a demoted primary first unwinds
//! its sessions' open transactions (the sessions themselves follow the
//! role: the server's `handoff`).
//!
//! A commit is durable when a quorum has it; a node that is not the
//! serving primary refuses commits (`NotReplicated`, certainly not
//! committed); a commit cut off by a change of primary fails as
//! `OutcomeUnknown` — it may still commit under the next primary, and then
//! reaches this node as a replicated entry like any other (`commit_log`).
//!
//! A *planned* move of a primary role (`RaftGroups::hand_over`: a drain, a
//! balancing move) is announced before it happens, through the group's
//! [`MoveGate`]: sessions hold their next transaction, a new remote
//! transaction on one of its partitions waits (and its first call, should
//! it reach the old primary after the move, is answered `Moved` and begins
//! again at the new one), and the transactions under way — the sessions',
//! local partition work and remote ones, each counted by an [`OpenWork`] —
//! get up to 2 s to commit. Only then are new commits refused and Raft's
//! leadership transferred, so that short transactions cross a drain
//! without an error.
//!
//! A database's group with nothing to write goes *quiet* (`raft::quiet`):
//! Raft's timers stop on every replica, and one message per pair of nodes
//! every 150 ms keeps its primary's lease. Idle tenants then cost their
//! nodes almost nothing.

pub mod error;
pub mod manager;
pub mod node;
pub mod parts;
pub mod raft;
pub mod types;
pub mod wire;

pub use error::{ReplicationError, Result};
pub use manager::admin::Admin;
pub use manager::roles::{ManagerRole, ReplicaRole};
pub use manager::status::{NodeStatus, StatusSource};
pub use manager::view::GroupReplica;
pub use node::{Groups, ReplicationConfig, ReplicationNode};
pub use raft::commit_log::{MoveGate, OpenWork};
pub use raft::freshness::Freshness;
pub use raft::role::Role;
pub use types::{GroupId, Load, NodeId, NodeInfo, SYSTEM_GROUP};
pub use wire::ClusterSecret;
