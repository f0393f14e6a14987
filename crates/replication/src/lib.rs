//! Tessera's replication: a node group's Raft log and the engines it feeds.
//!
//! A cluster's nodes form a *group* that replicates one Raft log
//! ([openraft]): the primary is the Raft leader, the epoch is the Raft term,
//! and a commit's sequence number is its log index. The log carries the
//! engines' own records — the after-images of committed transactions and
//! DDL, exactly what a single node writes to its local log — each tagged
//! with its engine's stream (stream 0: the catalog, `tessera` and
//! `postgres`; one stream per database home and per keyed partition). A
//! database's group replicates its home's stream and its partitions', and
//! takes up a stream new in its log (a split's partition).
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
//! - `types`: what an entry carries; a record over `RECORD_CHUNK` (1 MiB)
//!   travels as several entries and is applied when whole.
//! - `commit_log`: the engine's [`CommitLog`](tessera_engine::CommitLog) on a
//!   replicated node. A commit is durable when a quorum has it; a node that
//!   is not the serving primary refuses commits (`NotReplicated`, certainly
//!   not committed); a commit cut off by a change of primary fails as
//!   `OutcomeUnknown` — it may still commit under the next primary, and then
//!   reaches this node as a replicated entry like any other.
//! - `log_store`: Raft's logs on disk, in one `tessera-log` log the node's
//!   groups share (checksummed frames tagged by group, one group commit).
//! - `state_machine`: applies committed entries to the node's engines through
//!   their replica path; the engines live in memory, and a restarted node
//!   loads its newest snapshot and replays the log after it.
//! - `snapshot`: snapshots are engine checkpoints built from the log (never
//!   from the live tables, so they are exact for their index on any node);
//!   the log is purged below them, and a replica too far behind is sent the
//!   primary's.
//! - `rpc`: authenticated (cluster secret, HMAC challenge–response both ways),
//!   multiplexed request/response over TCP; `network` carries Raft's
//!   messages over it, and `append_stream` pipelines replication: several
//!   AppendEntries in flight per secondary, which appends each as it comes
//!   and answers each, in order, once it is durable.
//! - `group`: starts all of it for the node; `data_group`: one data group
//!   on the node — its Raft over its part of the shared log, its state
//!   machine over the streams it replicates, its proposals — and this
//!   node's [`Role`] in it: primary (serve clients), secondary (forward
//!   clients to the primary), unavailable (no primary, or no quorum:
//!   refuse, with the reason). Every node hosts the first data group, which
//!   replicates every stream no other group claims; `Group::host` adds a
//!   group for given streams (its messages carry its id, its commits are
//!   routed to it by stream, its snapshots touch only its streams).
//!
//! - `remote_part` and `part_server`: transactions on a partition whose
//!   group another node leads — each engine call one RPC to that primary,
//!   which holds the engine transaction between calls, checks its lease on
//!   every call and aborts what it holds once it stops leading, or once
//!   the caller's node has closed its last connection (`rpc::Presence`:
//!   a node that dies frees the rows its sessions held at once) — and
//!   schema changes made there. The SQL layer's sessions of a keyed
//!   database run on its home's primary and reach its partitions so.
//!
//! Safety of a change of primary rests on three rules. A node serves as
//! primary only once it leads with a quorum and has applied everything
//! committed before its term. Its engines' clocks then start above every
//! timestamp in its log, so version chains stay ordered across primaries.
//! And a replica applies an entry only when no local transaction is active
//! in that engine: a demoted primary first unwinds its sessions' open
//! transactions (the sessions themselves follow the role: the server's
//! `handoff`).
//!
//! A *planned* move of a primary role (`Hosted::hand_over`: a drain, a
//! balancing move) is announced before it happens, through the group's
//! `commit_log::MoveGate`: sessions hold their next transaction, a new
//! remote transaction on one of its partitions waits (and its first call,
//! should it reach the old primary after the move, is answered `Moved` and
//! begins again at the new one), and the transactions under way — the
//! sessions', local partition work and remote ones, each counted by an
//! `OpenWork` — get up to 2 s to commit. Only then are new commits
//! refused and Raft's leadership transferred, so that short transactions
//! cross a drain without an error.
//!
//! - `directory`: the partition manager is a Raft group of its own (3
//!   nodes, 5 once there are 5 or more), whose state machine is the
//!   directory of nodes, groups' replica counts and load figures;
//!   `directory_link` carries its messages over the same RPC.
//! - `manager`: the partition manager at work on the manager group's
//!   leader: every group keeps its replica count; a voter lost for longer
//!   than a grace period is replaced by a spare (a node outside the
//!   configuration; every node reports to the manager's leader), built as
//!   a learner from the snapshot and the log, then promoted, by the group's
//!   leader at the manager's request. The decisions are
//!   `tessera-cluster`'s.
//! - `moves`: replica moves that even out the databases' replicas over
//!   the nodes (a node that joins gets its share), one at a time, each
//!   built before the replica it replaces leaves; a node moved out of a
//!   group learns it from the manager's answers to its reports and stops
//!   campaigning there.
//! - `load`: a node's load figures (connections, CPU, memory), sent with
//!   its registration; the manager places replicas on the less busy of
//!   otherwise equal nodes, and `tessera.nodes` shows them.
//!
//! - `groups`: the handle the layers above use — each keyless database's
//!   home is a data group of its own (`Groups::create`, then
//!   `wait_serving` before the home is written, then `place` to hand its
//!   primary to the node leading the fewest groups); the gateway asks it
//!   where each group's primary is (`role_of`, `primary_of`: the manager's
//!   word, sent with the report answers) and how fresh this node's
//!   replica is (`freshness_of`). The manager keeps a database's group on
//!   nodes holding the catalog its sessions read: the first group's
//!   voters and its *readers* (every other node, a learner of it),
//!   follows the first group's replica count unless the group has its
//!   own, spreads the groups' primaries but never moves the first group's,
//!   and settles a configuration left joint by a move between the two
//!   steps of a change. `freshness` tells the gateway how far behind the
//!   primary a secondary is, for reads served there.
//! - `quiet`: a database's group with nothing to write stops Raft's timers
//!   on every replica; one message per pair of nodes every 150 ms keeps
//!   its primary's lease (a quorum of secondaries confirming it refuse
//!   votes meanwhile), and its first write, a silent primary node or a
//!   voter that stops confirming wakes it. Idle tenants then cost their
//!   nodes almost nothing.

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
