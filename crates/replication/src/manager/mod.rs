//! The partition manager.

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
