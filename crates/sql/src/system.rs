//! TODO layer essay

pub mod pg_catalog;
pub mod pg_types;
pub mod tessera_views;
