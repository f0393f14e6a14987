//! TODO layer essay

pub mod context;
pub mod functions;
pub mod views;
pub mod volatile;
