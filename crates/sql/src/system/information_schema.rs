//! `information_schema`: the SQL standard's views of the catalog (tables,
//! columns, views, schemas, and unique, primary key and CHECK
//! constraints), as tools that are not PostgreSQL's own read them.
//! [`INFORMATION_SCHEMA`] lists them.

use crate::scope::Resolver;
use crate::system::pg_catalog::types::typname;
use crate::system::view::{self, View, view_row};
use crate::system::visible;
use crate::values::types::SqlType;

/// The views of `information_schema`, in the order the schema lists them.
pub static INFORMATION_SCHEMA: view::Views =
    view::Views(&[&TABLES, &COLUMNS, &VIEWS, &SCHEMATA, &TABLE_CONSTRAINTS, &KEY_COLUMN_USAGE]);

view_row! {
    /// A row of `tables`: a table or view.
    pub struct Tables {
        table_catalog: String,
        table_schema: String,
        table_name: String,
        table_type: &'static str,
    }
}

pub static TABLES: View<Tables> = View { name: "tables", rows: tables };

/// The tables, then the views; the session's temporary ones in its
/// temporary schema.
fn tables(r: &Resolver) -> Vec<Tables> {
    let temp = visible::temp_oids(r);
    let row = |oid: u32, name: &str, kind: &'static str| Tables {
        table_catalog: r.db.clone(),
        table_schema: visible::schema_name(&temp, r, oid),
        table_name: name.to_string(),
        table_type: if temp.contains(&oid) { "LOCAL TEMPORARY" } else { kind },
    };
    let tables = visible::tables(r).into_iter().map(|t| row(t.oid, &t.name, "BASE TABLE"));
    tables.chain(visible::views(r).into_iter().map(|v| row(v.oid, &v.name, "VIEW"))).collect()
}

view_row! {
    /// A row of `views`: a view and its query.
    pub struct Views {
        table_catalog: String,
        table_schema: String,
        table_name: String,
        view_definition: String,
        check_option: &'static str,
        is_updatable: &'static str,
        is_insertable_into: &'static str,
        is_trigger_updatable: &'static str,
        is_trigger_deletable: &'static str,
        is_trigger_insertable_into: &'static str,
    }
}

pub static VIEWS: View<Views> = View { name: "views", rows: views };

/// The views; none can be written to.
fn views(r: &Resolver) -> Vec<Views> {
    let temp = visible::temp_oids(r);
    visible::views(r)
        .iter()
        .map(|v| Views {
            table_catalog: r.db.clone(),
            table_schema: visible::schema_name(&temp, r, v.oid),
            table_name: v.name.clone(),
            view_definition: format!(" {};", v.query),
            check_option: "NONE",
            is_updatable: "NO",
            is_insertable_into: "NO",
            is_trigger_updatable: "NO",
            is_trigger_deletable: "NO",
            is_trigger_insertable_into: "NO",
        })
        .collect()
}

view_row! {
    /// A row of `schemata`: a schema.
    pub struct Schemata {
        catalog_name: String,
        schema_name: &'static str,
        schema_owner: &'static str,
    }
}

pub static SCHEMATA: View<Schemata> = View { name: "schemata", rows: schemata };

fn schemata(r: &Resolver) -> Vec<Schemata> {
    ["public", "pg_catalog", "information_schema"]
        .into_iter()
        .map(|schema_name| Schemata { catalog_name: r.db.clone(), schema_name, schema_owner: "tessera" })
        .collect()
}

view_row! {
    /// A row of `columns`: a column of a table or view.
    pub struct Columns {
        table_catalog: String,
        table_schema: String,
        table_name: String,
        column_name: String,
        ordinal_position: i64,
        column_default: Option<String>,
        is_nullable: &'static str,
        data_type: String,
        character_maximum_length: Option<i64>,
        numeric_precision: Option<i64>,
        numeric_scale: Option<i64>,
        udt_name: String,
        is_identity: &'static str,
    }
}

pub static COLUMNS: View<Columns> = View { name: "columns", rows: columns };

/// The tables' columns, then the views'.
fn columns(r: &Resolver) -> Vec<Columns> {
    let temp = visible::temp_oids(r);
    let mut rows = Vec::new();
    for relation in visible::relation_columns(r, &visible::tables(r)) {
        let schema = visible::schema_name(&temp, r, relation.oid);
        for (k, c) in relation.columns.iter().enumerate() {
            let (length, precision, scale) = size(c.ty);
            rows.push(Columns {
                table_catalog: r.db.clone(),
                table_schema: schema.clone(),
                table_name: relation.name.clone(),
                column_name: c.name.clone(),
                ordinal_position: k as i64 + 1,
                column_default: c.default.clone(),
                is_nullable: if c.not_null { "NO" } else { "YES" },
                data_type: data_type(c.ty),
                character_maximum_length: length,
                numeric_precision: precision,
                numeric_scale: scale,
                udt_name: typname(c.ty),
                is_identity: if c.identity.is_some() { "YES" } else { "NO" },
            });
        }
    }
    rows
}

/// A column type's `character_maximum_length`, `numeric_precision` (in
/// bits for integers) and `numeric_scale`, where it has them.
fn size(ty: SqlType) -> (Option<i64>, Option<i64>, Option<i64>) {
    match ty {
        SqlType::Varchar(Some(n)) | SqlType::Char(n) => (Some(n as i64), None, None),
        SqlType::Numeric { precision, scale } if ty != SqlType::NUMERIC_DEFAULT => {
            (None, Some(precision as i64), Some(scale as i64))
        }
        SqlType::Int2 => (None, Some(16), Some(0)),
        SqlType::Int4 => (None, Some(32), Some(0)),
        SqlType::Int8 => (None, Some(64), Some(0)),
        _ => (None, None, None),
    }
}

/// A column type's name in the standard's spelling.
fn data_type(ty: SqlType) -> String {
    match ty {
        SqlType::Array { .. } => "ARRAY".to_string(),
        SqlType::Varchar(_) => "character varying".to_string(),
        SqlType::Char(_) => "character".to_string(),
        SqlType::Numeric { .. } => "numeric".to_string(),
        other => other.name(),
    }
}

view_row! {
    /// A row of `table_constraints`: a unique, primary key or CHECK
    /// constraint.
    pub struct TableConstraints {
        constraint_catalog: String,
        constraint_schema: String,
        constraint_name: String,
        table_schema: String,
        table_name: String,
        constraint_type: &'static str,
    }
}

pub static TABLE_CONSTRAINTS: View<TableConstraints> = View { name: "table_constraints", rows: table_constraints };

/// Each table's unique and primary key constraints, then its CHECKs.
fn table_constraints(r: &Resolver) -> Vec<TableConstraints> {
    let temp = visible::temp_oids(r);
    let mut rows = Vec::new();
    for t in visible::tables(r) {
        let schema = visible::schema_name(&temp, r, t.oid);
        let row = |constraint_name: &str, constraint_type| TableConstraints {
            constraint_catalog: r.db.clone(),
            constraint_schema: schema.clone(),
            constraint_name: constraint_name.to_string(),
            table_schema: schema.clone(),
            table_name: t.name.clone(),
            constraint_type,
        };
        for ix in t.indexes.iter().filter(|i| i.constraint) {
            rows.push(row(&ix.name, if ix.primary { "PRIMARY KEY" } else { "UNIQUE" }));
        }
        for c in &t.checks {
            rows.push(row(&c.name, "CHECK"));
        }
    }
    rows
}

view_row! {
    /// A row of `key_column_usage`: a column of a unique or primary key
    /// constraint.
    pub struct KeyColumnUsage {
        constraint_catalog: String,
        constraint_schema: String,
        constraint_name: String,
        table_schema: String,
        table_name: String,
        column_name: String,
        ordinal_position: i64,
    }
}

pub static KEY_COLUMN_USAGE: View<KeyColumnUsage> = View { name: "key_column_usage", rows: key_column_usage };

fn key_column_usage(r: &Resolver) -> Vec<KeyColumnUsage> {
    let temp = visible::temp_oids(r);
    let mut rows = Vec::new();
    for t in visible::tables(r) {
        let schema = visible::schema_name(&temp, r, t.oid);
        for ix in t.indexes.iter().filter(|i| i.constraint) {
            for (k, c) in ix.columns.iter().enumerate() {
                rows.push(KeyColumnUsage {
                    constraint_catalog: r.db.clone(),
                    constraint_schema: schema.clone(),
                    constraint_name: ix.name.clone(),
                    table_schema: schema.clone(),
                    table_name: t.name.clone(),
                    column_name: c.clone(),
                    ordinal_position: k as i64 + 1,
                });
            }
        }
    }
    rows
}
