//! The data groups' Raft: the system group and the databases' groups a
//! node hosts, each its Raft over its part of the node's shared log, its
//! state machine over the streams it replicates, its proposals, and this
//! node's [`role::Role`] in it. This layer imports `wire`, `types` and
//! `error` only.
//!
//! - `type_config`: the Raft type configuration and what an entry carries;
//!   a record over `RECORD_CHUNK` (1 MiB) travels as several entries and is
//!   applied when whole. `settings`: what the groups need to know of the
//!   node.
//! - `log_store`: Raft's logs on disk, in one `tessera-log` log the node's
//!   groups share (checksummed frames tagged by group, one group commit).
//! - `state_machine`: applies committed entries to the node's engines
//!   through their replica path; the engines live in memory, and a
//!   restarted node loads its newest snapshot and replays the log after it.
//! - `snapshot`: snapshots are engine checkpoints built from the log (never
//!   from the live tables, so they are exact for their index on any node);
//!   the log is purged below them, and a replica too far behind is sent the
//!   primary's, a file at a time.
//! - `commit_log`: the engine's [`CommitLog`](tessera_engine::CommitLog) on
//!   a replicated node, routed by stream to the group that replicates it;
//!   `submit` feeds a group's proposals to its Raft and decides their
//!   tickets; `priority` runs work of seconds of CPU below Raft's threads.
//! - `messages`: what a group's nodes say to each other; `transport` sends
//!   them (Raft's network, the client's side) and `service` answers them
//!   with the group's Raft here; `append_stream` pipelines replication:
//!   several AppendEntries in flight per secondary, which appends each as
//!   it comes and answers each, in order, once it is durable.
//! - `freshness`: how far behind the primary a secondary's data is, for
//!   reads served there; `metrics`: what a leader knows of its members.
//! - `quiet`: a database's group with nothing to write stops Raft's timers
//!   on every replica; one message per pair of nodes every 150 ms keeps
//!   its primary's lease (a quorum of secondaries confirming it refuse
//!   votes meanwhile), and its first write, a silent primary node or a
//!   voter that stops confirming wakes it.
//! - `role` and `role_watch`: this node's role in a group — primary (serve
//!   clients), secondary (forward clients to the primary), unavailable (no
//!   primary, or no quorum: refuse, with the reason) — as Raft's metrics
//!   and the primary's lease decide it.
//! - `group` and `groups`: one group on this node ([`group::RaftGroup`]),
//!   and the node's groups ([`groups::RaftGroups`]): the system group,
//!   which replicates every stream no other group claims, and the groups
//!   hosted for the streams they claim (their messages carry their id,
//!   their commits are routed to them by stream, their snapshots touch
//!   only their streams); a gentle hand-over of a group's primary role.

pub mod append_stream;
pub mod commit_log;
pub mod freshness;
pub mod group;
pub mod groups;
pub mod log_store;
pub mod messages;
pub mod metrics;
pub(crate) mod priority;
pub mod quiet;
pub mod role;
pub mod role_watch;
pub mod service;
pub mod settings;
pub mod snapshot;
pub mod state_machine;
pub mod submit;
pub mod transport;
pub mod type_config;
