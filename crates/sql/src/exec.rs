//! TODO layer essay

pub mod copy;
pub mod dml;
pub mod dml_params;
pub mod explain;
