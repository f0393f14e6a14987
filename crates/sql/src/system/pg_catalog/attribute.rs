//! `pg_attribute` (the columns of tables and views) and `pg_attrdef`
//! (columns' defaults).

use crate::scope::Resolver;
use crate::storage::catalog::Identity;
use crate::system::view::{View, view_row};
use crate::system::visible;

use super::types::is_text;

view_row! {
    /// A row of `pg_attribute`: a column of a table or view.
    pub struct PgAttribute {
        attrelid: i64,
        attname: String,
        atttypid: i64,
        attnum: i16,
        atttypmod: i32,
        attnotnull: bool,
        atthasdef: bool,
        attisdropped: bool,
        attislocal: bool,
        attgenerated: &'static str,
        attidentity: &'static str,
        attcompression: &'static str,
        attlen: i16,
        attcollation: i64,
        attndims: i32,
    }
}

pub static PG_ATTRIBUTE: View<PgAttribute> = View { name: "pg_attribute", rows: pg_attribute };

/// The tables' columns, then the views'. A column of a domain type shows
/// the domain's OID. Every column is the relation's own (`attislocal`:
/// Tessera has no inheritance); text columns (and arrays of text) have
/// the default collation (100), as PostgreSQL's do; a table's array column
/// declares one dimension, a view's none (PostgreSQL's `attndims`).
fn pg_attribute(r: &Resolver) -> Vec<PgAttribute> {
    let mut rows = Vec::new();
    for relation in visible::relation_columns(r, &visible::tables(r)) {
        for (k, c) in relation.columns.iter().enumerate() {
            rows.push(PgAttribute {
                attrelid: relation.oid as i64,
                attname: c.name.clone(),
                atttypid: c.domain.unwrap_or(c.ty.oid()) as i64,
                attnum: k as i16 + 1,
                atttypmod: c.ty.typmod(),
                attnotnull: c.not_null,
                atthasdef: c.default.is_some(),
                attisdropped: false,
                attislocal: true,
                attgenerated: "",
                attidentity: match c.identity {
                    Some(Identity::Always) => "a",
                    Some(_) => "d",
                    None => "",
                },
                attcompression: "",
                attlen: c.ty.typlen(),
                attcollation: if is_text(c.ty.element().unwrap_or(c.ty)) { 100 } else { 0 },
                attndims: i32::from(c.ty.element().is_some() && !relation.is_view),
            });
        }
    }
    rows
}

view_row! {
    /// A row of `pg_attrdef`: a column's default.
    pub struct PgAttrdef {
        oid: i64,
        adrelid: i64,
        adnum: i16,
        adbin: String,
    }
}

pub static PG_ATTRDEF: View<PgAttrdef> = View { name: "pg_attrdef", rows: pg_attrdef };

/// The defaults of the tables' columns. A default has no OID of its own
/// in Tessera's catalog: it shows one made of its table's and its
/// column's.
fn pg_attrdef(r: &Resolver) -> Vec<PgAttrdef> {
    let mut rows = Vec::new();
    for t in visible::tables(r) {
        for (k, c) in t.columns.iter().enumerate() {
            if let Some(d) = &c.default {
                rows.push(PgAttrdef {
                    oid: t.oid as i64 * 1000 + k as i64,
                    adrelid: t.oid as i64,
                    adnum: k as i16 + 1,
                    adbin: d.clone(),
                });
            }
        }
    }
    rows
}
