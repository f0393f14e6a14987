//! TODO layer essay

pub(crate) mod pg_catalog;
pub(crate) mod pg_types;
pub(crate) mod tessera_views;
