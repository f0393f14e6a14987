//! TODO layer essay

pub mod copy;
pub mod create_as;
pub mod dml;
pub mod dml_params;
pub mod explain;
pub mod fast;
