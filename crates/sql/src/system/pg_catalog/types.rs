//! The types in `pg_catalog`: `pg_type`, the built-in types (each with
//! its array type) and the database's own (enum types with `typtype`
//! 'e', domains with 'd' and their base type), and `pg_enum`, the labels
//! of enum types in order, which drivers and ORMs read to learn an enum's
//! values.

use super::{PG_CATALOG_NS, PUBLIC_NS};
use crate::scope::Resolver;
use crate::system::view::{View, view_row};
use crate::values::types::SqlType;
use crate::values::user_types::TypeKind;

/// The built-in types `pg_type` lists (each also with its array type).
const BUILT_IN: &[SqlType] = &[
    SqlType::Bool,
    SqlType::Bytea,
    SqlType::Int8,
    SqlType::Int2,
    SqlType::Int4,
    SqlType::Text,
    SqlType::Json,
    SqlType::Float4,
    SqlType::Float8,
    SqlType::Char(1),
    SqlType::Varchar(None),
    SqlType::Date,
    SqlType::Time,
    SqlType::Timestamp,
    SqlType::TimestampTz,
    SqlType::Interval,
    SqlType::NUMERIC_DEFAULT,
    SqlType::Uuid,
    SqlType::Jsonb,
];

/// A type's name in `pg_type` (an array type's is its element's with a
/// leading underscore).
pub fn typname(t: SqlType) -> String {
    if let Some(elem) = t.element() {
        return format!("_{}", typname(elem));
    }
    match t {
        SqlType::Bool => "bool",
        SqlType::Bytea => "bytea",
        SqlType::Int8 => "int8",
        SqlType::Int2 => "int2",
        SqlType::Int4 => "int4",
        SqlType::Text => "text",
        SqlType::Json => "json",
        SqlType::Float4 => "float4",
        SqlType::Float8 => "float8",
        SqlType::Char(_) => "bpchar",
        SqlType::Varchar(_) => "varchar",
        SqlType::Date => "date",
        SqlType::Time => "time",
        SqlType::Timestamp => "timestamp",
        SqlType::TimestampTz => "timestamptz",
        SqlType::Interval => "interval",
        SqlType::Numeric { .. } => "numeric",
        SqlType::Uuid => "uuid",
        SqlType::Jsonb => "jsonb",
        SqlType::Array { .. } => "_text",
        SqlType::Enum(_) => return t.name(),
    }
    .to_string()
}

/// Whether values of `t` are text, and so collatable.
pub(super) fn is_text(t: SqlType) -> bool {
    matches!(t, SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_))
}

/// PostgreSQL's type category letter, as the database's own types show
/// it (of their base type, for domains).
fn category(t: SqlType) -> &'static str {
    match t {
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Float4 | SqlType::Float8 | SqlType::Numeric { .. } => {
            "N"
        }
        SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_) => "S",
        SqlType::Bool => "B",
        SqlType::Date | SqlType::Time | SqlType::Timestamp | SqlType::TimestampTz => "D",
        SqlType::Interval => "T",
        SqlType::Enum(_) => "E",
        SqlType::Array { .. } => "A",
        _ => "U",
    }
}

/// The category letter the built-in types show: arrays, numbers and
/// strings theirs, every other type 'U'.
fn built_in_category(t: SqlType) -> &'static str {
    if t.element().is_some() {
        "A"
    } else if matches!(
        t,
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Float4 | SqlType::Float8 | SqlType::Numeric { .. }
    ) {
        "N"
    } else if is_text(t) {
        "S"
    } else {
        "U"
    }
}

view_row! {
    /// A row of `pg_type`: a type.
    pub struct PgType {
        oid: i64,
        typname: String,
        typnamespace: i64,
        typlen: i16,
        typtype: &'static str,
        typelem: i64,
        typbasetype: i64,
        typcategory: &'static str,
        typowner: i64,
        typisdefined: bool,
        typdelim: &'static str,
        typrelid: i64,
        typtypmod: i32,
        typnotnull: bool,
        typcollation: i64,
        typarray: i64,
        typinput: i64,
    }
}

pub static PG_TYPE: View<PgType> = View { name: "pg_type", rows: pg_type };

/// The built-in types, each followed by its array type (whose `typelem`
/// names the element), then the database's own.
fn pg_type(r: &Resolver) -> Vec<PgType> {
    let types = BUILT_IN.iter().flat_map(|t| [*t, SqlType::array_of(*t)]);
    let mut rows: Vec<PgType> = types
        .map(|t| PgType {
            oid: t.oid() as i64,
            typname: typname(t),
            typnamespace: PG_CATALOG_NS,
            typlen: t.typlen(),
            typtype: "b",
            typelem: t.element().map_or(0, |e| e.oid() as i64),
            typbasetype: 0,
            typcategory: built_in_category(t),
            typowner: 10,
            typisdefined: true,
            typdelim: ",",
            typrelid: 0,
            typtypmod: -1,
            typnotnull: false,
            // Text types (and their arrays) use the default collation.
            typcollation: if is_text(t.element().unwrap_or(t)) { 100 } else { 0 },
            typarray: if t.element().is_some() { 0 } else { SqlType::array_of(t).oid() as i64 },
            typinput: 0,
        })
        .collect();
    rows.extend(user_types(r));
    rows
}

/// The `pg_type` rows of the database's enum types and domains.
fn user_types(r: &Resolver) -> Vec<PgType> {
    let mut rows = Vec::new();
    for t in r.catalog.user_types(&r.db) {
        let (typtype, base, ty, not_null) = match &t.body {
            TypeKind::Enum { .. } => ("e", 0, SqlType::Enum(t.oid), false),
            TypeKind::Domain(d) => ("d", d.base.oid() as i64, d.base, d.not_null),
        };
        rows.push(PgType {
            oid: t.oid as i64,
            typname: t.name.clone(),
            typnamespace: PUBLIC_NS,
            typlen: ty.typlen(),
            typtype,
            typelem: 0,
            typbasetype: base,
            typcategory: category(ty),
            typowner: 10,
            typisdefined: true,
            typdelim: ",",
            typrelid: 0,
            typtypmod: if typtype == "d" { ty.typmod() } else { -1 },
            typnotnull: not_null,
            typcollation: if is_text(ty) { 100 } else { 0 },
            typarray: 0,
            typinput: 0,
        });
    }
    rows
}

view_row! {
    /// A row of `pg_enum`: a label of an enum type.
    pub struct PgEnum {
        oid: i64,
        enumtypid: i64,
        enumsortorder: f32,
        enumlabel: String,
    }
}

pub static PG_ENUM: View<PgEnum> = View { name: "pg_enum", rows: pg_enum };

/// Each enum type's labels in their order, numbered from 1. A label has
/// no OID of its own in Tessera's catalog: it shows 0.
fn pg_enum(r: &Resolver) -> Vec<PgEnum> {
    let mut rows = Vec::new();
    for t in r.catalog.user_types(&r.db) {
        let TypeKind::Enum { labels } = &t.body else { continue };
        for (k, label) in labels.iter().enumerate() {
            rows.push(PgEnum {
                oid: 0,
                enumtypid: t.oid as i64,
                enumsortorder: k as f32 + 1.0,
                enumlabel: label.clone(),
            });
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories() {
        assert_eq!(category(SqlType::Int4), "N");
        assert_eq!(category(SqlType::Enum(1)), "E");
        assert_eq!(built_in_category(SqlType::array_of(SqlType::Int4)), "A");
    }
}
