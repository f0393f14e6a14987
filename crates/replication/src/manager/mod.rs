//! The partition manager.

pub mod admin;
pub mod directory;
pub(crate) mod directory_link;
pub mod leader;
pub mod load;
pub(crate) mod moves;
pub mod status;
