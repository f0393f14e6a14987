//! Transactions on partitions other nodes lead.

pub mod client;
pub mod messages;
pub mod server;

pub use client::{RemoteTxn, RemoteTxnIds, change_schema};
pub use messages::{Begin, SchemaChange, WireIndex, WireTable, durability_code, isolation_code};
