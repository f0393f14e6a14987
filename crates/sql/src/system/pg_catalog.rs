//! `pg_catalog`: the Tessera catalog in the shapes of PostgreSQL's system
//! catalogs and their convenience views, as psql's `\d` commands,
//! drivers and ORMs read them. OIDs are `bigint`. Each view is declared
//! in the file of its subject; [`PG_CATALOG`] lists them.

mod attribute;
mod constraints;
mod listings;
mod namespace_class;
mod server;
mod stubs;
pub mod types;

pub use constraints::{constraint_def, index_def};

use crate::system::view::Views;

/// The namespace OIDs PostgreSQL gives its schemas.
pub const PG_CATALOG_NS: i64 = 11;
pub const PUBLIC_NS: i64 = 2200;
pub const INFORMATION_SCHEMA_NS: i64 = 13_000;
/// The namespace OID a session's temporary schema shows with.
pub const TEMP_NS: i64 = 16_300;

/// The views of `pg_catalog`, in the order the schema lists them.
pub static PG_CATALOG: Views = Views(&[
    &namespace_class::PG_NAMESPACE,
    &namespace_class::PG_CLASS,
    &attribute::PG_ATTRIBUTE,
    &types::PG_TYPE,
    &types::PG_ENUM,
    &constraints::PG_INDEX,
    &server::PG_DATABASE,
    &server::PG_ROLES,
    &server::PG_USER,
    &listings::PG_TABLES,
    &listings::PG_VIEWS,
    &listings::PG_INDEXES,
    &constraints::PG_CONSTRAINT,
    &attribute::PG_ATTRDEF,
    &server::PG_AM,
    &server::PG_SETTINGS,
    &stubs::PG_DESCRIPTION,
    &stubs::PG_PROC,
    &listings::PG_SEQUENCE,
    &listings::PG_SEQUENCES,
    &server::PG_STAT_ACTIVITY,
    &stubs::PG_INHERITS,
    &stubs::PG_AUTH_MEMBERS,
    &stubs::PG_POLICY,
    &stubs::PG_TRIGGER,
    &stubs::PG_REWRITE,
    &stubs::PG_STATISTIC_EXT,
    &stubs::PG_PUBLICATION,
    &stubs::PG_PUBLICATION_REL,
    &stubs::PG_PUBLICATION_NAMESPACE,
    &stubs::PG_FOREIGN_TABLE,
    &stubs::PG_PARTITIONED_TABLE,
    &stubs::PG_COLLATION,
    &server::PG_TABLESPACE,
]);
