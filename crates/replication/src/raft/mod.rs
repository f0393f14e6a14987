//! The data groups' Raft.

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
pub mod snapshot;
pub mod state_machine;
pub mod submit;
pub mod transport;
pub mod type_config;
