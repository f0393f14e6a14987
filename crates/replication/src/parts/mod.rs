//! Transactions on partitions other nodes lead.

pub mod client;
pub(crate) mod server;
