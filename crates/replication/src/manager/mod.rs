//! The partition manager. It runs on the leader of the manager group
//! (`directory`: a Raft group of its own, on 3 nodes, 5 once the cluster
//! has 5 or more) and keeps every group at its replica count: each data
//! group (the system group's count in the directory, `--replicas` at
//! first; a database's group its own, or the system group's) and the
//! manager group itself. This layer imports `raft`, `wire`, `types` and
//! `error`; it knows nothing of `parts` or `node`.
//!
//! A cluster may have more nodes than a group has replicas. The nodes
//! outside a group's configuration are *spares* for it. Every node reports
//! to the manager's leader twice a second (`ManagerMessage::Report`; it
//! learns who that is from any node it can reach): that is how the
//! manager knows which nodes are alive, where they are and how busy. A
//! voter's liveness is the group leader's: whether it answers the leader's
//! heartbeats.
//!
//! Twice a second the manager's leader takes each group's view from the
//! group's leader (`GroupView`; a data group's primary answers over RPC
//! when it is another node), builds the cluster map from it (members with
//! their progress, the other nodes, failure domains, load) and asks the
//! decisions (`tessera_cluster::plan_repair`) what to do. The group's
//! leader carries each step out as a Raft membership change
//! (`ManagerMessage::Reconfigure` for a data group), one at a time:
//!
//! * **Downshift**: a voter unreachable for longer than `replace_after`
//!   leaves the configuration (N → N-1) — but only when a spare can take
//!   its place; otherwise it is kept, so that its return restores the
//!   quorum by log catch-up.
//! * **Build**: the new node joins as a learner (a non-voting member), gets
//!   the leader's snapshot when the log it needs is purged, then the log
//!   since; once it is within `CAUGHT_UP` entries of the leader it
//!   becomes a voter (a later round sees it caught up and promotes it).
//! * **Drop**: a learner that died while being built leaves the
//!   configuration; another is started elsewhere.
//! * **Readers**: every other live node is a learner of the system group
//!   and of the manager group while they have their voters (`add_reader`):
//!   it holds the catalog (databases' groups may keep replicas there) and
//!   the directory, and replaces a lost voter at once, being caught up.
//!
//! The manager keeps a database's group on nodes holding the catalog (the
//! system group's voters and readers), spreads the groups' primaries over
//! the nodes but never moves the system group's, evens out the databases'
//! replicas one move at a time, and settles a configuration left joint by
//! a move between the two steps of a change.
//!
//! Because the decisions live in replicated state (each configuration is a
//! Raft log entry of its group, the directory is the manager's) and the
//! liveness figures are rebuilt from reports within a second, a new
//! manager leader simply carries on: a build cut by a change of leader,
//! of either group, is resumed by the next round.
//!
//! - `directory`: the manager group's state machine — the nodes, the
//!   groups' replica counts and streams, the load figures;
//!   `directory_link` carries its Raft's messages over the node's RPC.
//! - `roster`: what the manager hears from the nodes (spares, loads,
//!   drains, each group's primary); `load`: a node's own load figures.
//! - `view`: a group as its leader sees it, and the replicas it shows;
//!   `roles`: the roles the status and the views show; `status`: the
//!   cluster map for `tessera status` and `tessera.nodes`.
//! - `leader`: the manager's round; `repair`: a group kept at its count;
//!   `reconfigure`: the membership steps; `balance`: primaries spread;
//!   `moves`: replicas evened out; `placement`: where replicas go.
//! - `admin`: administration — `tessera status`, `tessera node drain`,
//!   replica counts, and the directory's record of the data groups.
//! - `messages` and `service`: the manager's traffic between nodes and
//!   administration's requests, and the services that answer them.

pub mod admin;
mod balance;
pub mod directory;
pub mod directory_link;
pub mod leader;
pub mod load;
pub mod messages;
pub(crate) mod moves;
pub mod placement;
pub mod reconfigure;
mod repair;
pub mod roles;
pub mod roster;
pub mod service;
pub mod status;
pub mod view;
