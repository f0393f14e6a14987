//! `pg_attribute` (the columns of tables and views) and `pg_attrdef`
//! (columns' defaults).

use crate::scope::Resolver;
use crate::storage::catalog::Identity;
use crate::system::view::{View, view_row};
use crate::system::visible;

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
/// the domain's OID.
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
                attislocal: false,
                attgenerated: "",
                attidentity: match c.identity {
                    Some(Identity::Always) => "a",
                    Some(_) => "d",
                    None => "",
                },
                attcompression: "",
                attlen: c.ty.typlen(),
                attcollation: 0,
                attndims: 0,
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
