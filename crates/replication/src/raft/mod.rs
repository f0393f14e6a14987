//! The data groups' Raft.

pub mod append_stream;
pub mod commit_log;
pub mod freshness;
pub mod group;
pub mod log_store;
pub mod network;
pub(crate) mod priority;
pub mod quiet;
pub mod snapshot;
pub mod state_machine;
pub mod type_config;
