//! TODO layer essay

pub mod naming;
pub mod query_checks;
pub mod strict;
pub mod using_joins;
pub mod window_defaults;
pub mod windows;
