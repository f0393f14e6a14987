//! TODO layer essay

pub mod catalog;
pub mod cluster_view;
pub mod field_tests;
pub mod jobs;
pub mod keyed;
pub mod partition;
pub mod provider;
pub mod remote;
pub mod row_waits;
pub mod split;
pub mod txn;
