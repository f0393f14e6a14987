//! `pg_catalog` and `information_schema`: views of the Tessera catalog in
//! PostgreSQL's shapes, built when a query names them. OIDs are `bigint`.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::ScalarValue;
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::error::Result as DfResult;

use crate::scope::Resolver;
use crate::storage::catalog::{ColumnDef, IndexDef, IndexMethod, TableDef};
use crate::values::types::SqlType;

pub const PG_CATALOG_TABLES: &[&str] = &[
    "pg_namespace",
    "pg_class",
    "pg_attribute",
    "pg_type",
    "pg_enum",
    "pg_index",
    "pg_database",
    "pg_roles",
    "pg_user",
    "pg_tables",
    "pg_views",
    "pg_indexes",
    "pg_constraint",
    "pg_attrdef",
    "pg_am",
    "pg_settings",
    "pg_description",
    "pg_proc",
    "pg_sequence",
    "pg_sequences",
    "pg_stat_activity",
    "pg_inherits",
    "pg_auth_members",
    "pg_policy",
    "pg_trigger",
    "pg_rewrite",
    "pg_statistic_ext",
    "pg_publication",
    "pg_publication_rel",
    "pg_publication_namespace",
    "pg_foreign_table",
    "pg_partitioned_table",
    "pg_collation",
    "pg_tablespace",
];

pub const INFORMATION_SCHEMA_TABLES: &[&str] =
    &["tables", "columns", "views", "schemata", "table_constraints", "key_column_usage"];

pub const PG_CATALOG_NS: i64 = 11;
pub const PUBLIC_NS: i64 = 2200;
/// The namespace OID a session's temporary schema shows with.
pub const TEMP_NS: i64 = 16_300;
const INFO_NS: i64 = 13_000;

use ScalarValue as V;

pub(crate) fn s(v: impl Into<String>) -> V {
    V::Utf8(Some(v.into()))
}
pub(crate) fn i(v: i64) -> V {
    V::Int64(Some(v))
}
pub(crate) fn i32v(v: i32) -> V {
    V::Int32(Some(v))
}
pub(crate) fn i16v(v: i16) -> V {
    V::Int16(Some(v))
}
pub(crate) fn b(v: bool) -> V {
    V::Boolean(Some(v))
}
pub(crate) fn null_s() -> V {
    V::Utf8(None)
}

/// A table from column definitions and rows of scalars.
pub(crate) fn table(cols: &[(&str, DataType)], rows: Vec<Vec<V>>) -> DfResult<Arc<dyn TableProvider>> {
    let schema = Arc::new(Schema::new(cols.iter().map(|(n, t)| Field::new(*n, t.clone(), true)).collect::<Vec<_>>()));
    let mut arrays = Vec::with_capacity(cols.len());
    for (ci, (_, t)) in cols.iter().enumerate() {
        let values: Vec<V> = rows.iter().map(|r| r[ci].clone()).collect();
        let array = if values.is_empty() {
            datafusion::arrow::array::new_empty_array(t)
        } else {
            let a = V::iter_to_array(values)?;
            datafusion::arrow::compute::cast(&a, t)?
        };
        arrays.push(array);
    }
    let batch = RecordBatch::try_new(schema.clone(), arrays)?;
    Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
}

/// aclitem[] columns: always NULL (default privileges).
fn acl() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)))
}

use DataType::{Boolean as B, Float32 as F4, Int16 as I2, Int32 as I4, Int64 as I8, Utf8 as T};

/// The database's tables as this session sees them: its own temporary
/// tables under the names it gave them, other sessions' not at all.
fn visible_tables(r: &Resolver) -> Vec<Arc<TableDef>> {
    as_seen(r, r.catalog.tables(&r.db), |t| &t.name, |t| &mut t.name)
}

/// The database's views as this session sees them (as [`visible_tables`]).
fn visible_views(r: &Resolver) -> Vec<Arc<crate::storage::catalog::views::ViewDef>> {
    as_seen(r, r.catalog.views(&r.db), |v| &v.name, |v| &mut v.name)
}

/// Relations as this session sees them (see [`visible_name`]); `name`
/// and `name_mut` reach a relation's name (copied only to rename it).
fn as_seen<T: Clone>(
    r: &Resolver,
    relations: Vec<Arc<T>>,
    name: fn(&T) -> &String,
    name_mut: fn(&mut T) -> &mut String,
) -> Vec<Arc<T>> {
    relations
        .into_iter()
        .filter_map(|mut rel| {
            let shown = visible_name(r, name(&rel))?;
            if shown != *name(&rel) {
                *name_mut(Arc::make_mut(&mut rel)) = shown;
            }
            Some(rel)
        })
        .collect()
}

/// The name a relation shows this session: a temporary relation's own
/// name if it is the session's, None if it is another session's.
fn visible_name(r: &Resolver, stored: &str) -> Option<String> {
    match crate::storage::temp_names::split(stored) {
        Some((schema, own)) => (schema == r.info.temp_schema).then(|| own.to_string()),
        None => Some(stored.to_string()),
    }
}

/// The OIDs of the session's temporary tables and views.
fn temp_oids(r: &Resolver) -> std::collections::HashSet<u32> {
    let own = |n: &str| crate::storage::temp_names::split(n).is_some_and(|(schema, _)| schema == r.info.temp_schema);
    let tables = r.catalog.tables(&r.db).into_iter().filter(|t| own(&t.name)).map(|t| t.oid);
    tables.chain(r.catalog.views(&r.db).into_iter().filter(|v| own(&v.name)).map(|v| v.oid)).collect()
}

/// The schema (namespace OID and name) a relation is in.
fn schema_of(temp: &std::collections::HashSet<u32>, r: &Resolver, oid: u32) -> (i64, String) {
    if temp.contains(&oid) { (TEMP_NS, r.info.temp_schema.clone()) } else { (PUBLIC_NS, "public".to_string()) }
}

/// Each table's and view's OID and columns (a view's as columns without
/// defaults or constraints).
fn relation_columns(r: &Resolver, tables: &[Arc<TableDef>]) -> Vec<(u32, String, Vec<ColumnDef>)> {
    let mut out: Vec<(u32, String, Vec<ColumnDef>)> =
        tables.iter().map(|t| (t.oid, t.name.clone(), t.columns.clone())).collect();
    for v in visible_views(r) {
        let columns = v
            .columns
            .iter()
            .map(|c| ColumnDef {
                name: c.name.clone(),
                ty: c.ty,
                not_null: false,
                default: None,
                identity: None,
                field: 0,
                domain: None,
            })
            .collect();
        out.push((v.oid, v.name.clone(), columns));
    }
    out
}

const ALL_TYPES: &[SqlType] = &[
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

pub(crate) fn typname(t: SqlType) -> String {
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

pub fn index_def(t: &TableDef, ix: &IndexDef) -> String {
    format!(
        "CREATE {}INDEX {} ON public.{} USING {} ({})",
        if ix.unique { "UNIQUE " } else { "" },
        ix.name,
        t.name,
        if ix.method == IndexMethod::Hash { "hash" } else { "btree" },
        ix.columns.join(", ")
    )
}

/// Constraints get the OID of their index (unique/primary) or a derived one (check).
fn check_oid(t: &TableDef, k: usize) -> u32 {
    t.oid.wrapping_mul(64).wrapping_add(k as u32 + 1) | 0x4000_0000
}

pub fn constraint_def(tables: &[Arc<TableDef>], oid: u32) -> Option<String> {
    for t in tables {
        for ix in t.indexes.iter().filter(|i| i.constraint) {
            if ix.oid == oid {
                let kind = if ix.primary { "PRIMARY KEY" } else { "UNIQUE" };
                return Some(format!("{kind} ({})", ix.columns.join(", ")));
            }
        }
        for (k, c) in t.checks.iter().enumerate() {
            if check_oid(t, k) == oid {
                return Some(format!("CHECK ({})", c.expr));
            }
        }
    }
    None
}

pub fn pg_catalog_table(r: &Resolver, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
    let tables = visible_tables(r);
    let t = match name {
        "pg_namespace" => {
            let mut rows = vec![
                vec![i(PG_CATALOG_NS), s("pg_catalog"), i(10), null_s()],
                vec![i(PUBLIC_NS), s("public"), i(10), null_s()],
                vec![i(INFO_NS), s("information_schema"), i(10), null_s()],
            ];
            if !temp_oids(r).is_empty() {
                rows.push(vec![i(TEMP_NS), s(&r.info.temp_schema), i(10), null_s()]);
            }
            table(&[("oid", I8), ("nspname", T), ("nspowner", I8), ("nspacl", acl())], rows)?
        }
        "pg_class" => {
            let temp = temp_oids(r);
            let mut rows = Vec::new();
            for t in &tables {
                let stats = r.catalog.engine_table(t).ok().map(|e| e.stats());
                let live = stats.map(|s| s.rows as f64).unwrap_or(0.0);
                let (ns, persistence) = if temp.contains(&t.oid) { (TEMP_NS, "t") } else { (PUBLIC_NS, "p") };
                rows.push(vec![
                    i(t.oid as i64),
                    s(&t.name),
                    i(ns),
                    s("r"),
                    i(10),
                    V::Float32(Some(live as f32)),
                    b(!t.indexes.is_empty()),
                    s(persistence),
                    i(2),
                    i16v(t.columns.len() as i16),
                    i(t.oid as i64),
                    b(false),
                    b(false),
                    b(false),
                    b(false),
                    b(false),
                    s("d"),
                    null_s(),
                    i(0),
                    i(0),
                    b(true),
                    i16v(t.checks.len() as i16),
                    i32v(0),
                    null_s(),
                ]);
                for ix in &t.indexes {
                    rows.push(vec![
                        i(ix.oid as i64),
                        s(&ix.name),
                        i(PUBLIC_NS),
                        s("i"),
                        i(10),
                        V::Float32(Some(live as f32)),
                        b(false),
                        s("p"),
                        i(if ix.method == IndexMethod::Hash { 405 } else { 403 }),
                        i16v(ix.columns.len() as i16),
                        i(ix.oid as i64),
                        b(false),
                        b(false),
                        b(false),
                        b(false),
                        b(false),
                        s("n"),
                        null_s(),
                        i(0),
                        i(0),
                        b(true),
                        i16v(0),
                        i32v(0),
                        null_s(),
                    ]);
                }
            }
            for v in visible_views(r) {
                let (ns, persistence) = if temp.contains(&v.oid) { (TEMP_NS, "t") } else { (PUBLIC_NS, "p") };
                rows.push(vec![
                    i(v.oid as i64),
                    s(&v.name),
                    i(ns),
                    s("v"),
                    i(10),
                    V::Float32(Some(0.0)),
                    b(false),
                    s(persistence),
                    i(0),
                    i16v(v.columns.len() as i16),
                    i(0),
                    b(true),
                    b(false),
                    b(false),
                    b(false),
                    b(false),
                    s("n"),
                    null_s(),
                    i(0),
                    i(0),
                    b(true),
                    i16v(0),
                    i32v(0),
                    null_s(),
                ]);
            }
            for sq in r.catalog.sequences(&r.db).iter().filter(|s| !s.name.starts_with("__")) {
                rows.push(vec![
                    i(sq.oid as i64),
                    s(&sq.name),
                    i(PUBLIC_NS),
                    s("S"),
                    i(10),
                    V::Float32(Some(1.0)),
                    b(false),
                    s("p"),
                    i(0),
                    i16v(3),
                    i(sq.oid as i64),
                    b(false),
                    b(false),
                    b(false),
                    b(false),
                    b(false),
                    s("n"),
                    null_s(),
                    i(0),
                    i(0),
                    b(true),
                    i16v(0),
                    i32v(0),
                    null_s(),
                ]);
            }
            for row in rows.iter_mut() {
                // reltoastrelid, relpartbound, relisshared
                row.extend([i(0), null_s(), b(false)]);
            }
            table(
                &[
                    ("oid", I8),
                    ("relname", T),
                    ("relnamespace", I8),
                    ("relkind", T),
                    ("relowner", I8),
                    ("reltuples", F4),
                    ("relhasindex", B),
                    ("relpersistence", T),
                    ("relam", I8),
                    ("relnatts", I2),
                    ("relfilenode", I8),
                    ("relhasrules", B),
                    ("relhastriggers", B),
                    ("relrowsecurity", B),
                    ("relforcerowsecurity", B),
                    ("relispartition", B),
                    ("relreplident", T),
                    ("reloptions", acl()),
                    ("reltablespace", I8),
                    ("reloftype", I8),
                    ("relispopulated", B),
                    ("relchecks", I2),
                    ("relpages", I4),
                    ("relacl", acl()),
                    ("reltoastrelid", I8),
                    ("relpartbound", T),
                    ("relisshared", B),
                ],
                rows,
            )?
        }
        "pg_attribute" => {
            let mut rows = Vec::new();
            for (oid, _, columns) in relation_columns(r, &tables) {
                for (k, c) in columns.iter().enumerate() {
                    rows.push(vec![
                        i(oid as i64),
                        s(&c.name),
                        i(c.domain.unwrap_or(c.ty.oid()) as i64),
                        i16v(k as i16 + 1),
                        i32v(c.ty.typmod()),
                        b(c.not_null),
                        b(c.default.is_some()),
                        b(false),
                        b(false),
                        s(""),
                        s(if c.identity.is_some() {
                            if c.identity == Some(crate::storage::catalog::Identity::Always) { "a" } else { "d" }
                        } else {
                            ""
                        }),
                        s(""),
                        i16v(c.ty.typlen()),
                        i(0),
                        i32v(0),
                    ]);
                }
            }
            table(
                &[
                    ("attrelid", I8),
                    ("attname", T),
                    ("atttypid", I8),
                    ("attnum", I2),
                    ("atttypmod", I4),
                    ("attnotnull", B),
                    ("atthasdef", B),
                    ("attisdropped", B),
                    ("attislocal", B),
                    ("attgenerated", T),
                    ("attidentity", T),
                    ("attcompression", T),
                    ("attlen", I2),
                    ("attcollation", I8),
                    ("attndims", I4),
                ],
                rows,
            )?
        }
        "pg_type" => {
            // Each type and its array type (typelem names the element).
            let types = ALL_TYPES.iter().flat_map(|t| [*t, SqlType::array_of(*t)]);
            let mut rows: Vec<Vec<V>> = types
                .map(|t| {
                    vec![
                        i(t.oid() as i64),
                        s(typname(t)),
                        i(PG_CATALOG_NS),
                        i16v(t.typlen()),
                        s("b"),
                        i(t.element().map_or(0, |e| e.oid() as i64)),
                        i(0),
                        s(if t.element().is_some() {
                            "A"
                        } else if matches!(
                            t,
                            SqlType::Int2
                                | SqlType::Int4
                                | SqlType::Int8
                                | SqlType::Float4
                                | SqlType::Float8
                                | SqlType::Numeric { .. }
                        ) {
                            "N"
                        } else if matches!(t, SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_)) {
                            "S"
                        } else {
                            "U"
                        }),
                        i(10),
                        b(true),
                        s(","),
                        i(0),
                        i32v(-1),
                        b(false),
                        // typcollation: text types use the default collation (100).
                        i(
                            if matches!(
                                t.element().unwrap_or(t),
                                SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_)
                            ) {
                                100
                            } else {
                                0
                            },
                        ),
                        i(if t.element().is_some() { 0 } else { SqlType::array_of(t).oid() as i64 }),
                        i(0),
                    ]
                })
                .collect();
            rows.extend(crate::system::pg_types::user_type_rows(r));
            table(
                &[
                    ("oid", I8),
                    ("typname", T),
                    ("typnamespace", I8),
                    ("typlen", I2),
                    ("typtype", T),
                    ("typelem", I8),
                    ("typbasetype", I8),
                    ("typcategory", T),
                    ("typowner", I8),
                    ("typisdefined", B),
                    ("typdelim", T),
                    ("typrelid", I8),
                    ("typtypmod", I4),
                    ("typnotnull", B),
                    ("typcollation", I8),
                    ("typarray", I8),
                    ("typinput", I8),
                ],
                rows,
            )?
        }
        "pg_enum" => crate::system::pg_types::pg_enum(r)?,
        "pg_index" => {
            let mut rows = Vec::new();
            for t in &tables {
                for ix in &t.indexes {
                    let keys: Vec<String> =
                        ix.columns.iter().filter_map(|c| t.column_index(c)).map(|k| (k + 1).to_string()).collect();
                    rows.push(vec![
                        i(ix.oid as i64),
                        i(t.oid as i64),
                        i16v(ix.columns.len() as i16),
                        b(ix.unique),
                        b(ix.primary),
                        b(false),
                        b(true),
                        b(true),
                        b(false),
                        s(keys.join(" ")),
                        null_s(),
                        null_s(),
                        b(false),
                    ]);
                }
            }
            table(
                &[
                    ("indexrelid", I8),
                    ("indrelid", I8),
                    ("indnatts", I2),
                    ("indisunique", B),
                    ("indisprimary", B),
                    ("indisclustered", B),
                    ("indisvalid", B),
                    ("indisready", B),
                    ("indisreplident", B),
                    ("indkey", T),
                    ("indexprs", T),
                    ("indpred", T),
                    ("indisexclusion", B),
                ],
                rows,
            )?
        }
        "pg_database" => table(
            &[
                ("oid", I8),
                ("datname", T),
                ("datdba", I8),
                ("encoding", I4),
                ("datcollate", T),
                ("datctype", T),
                ("datistemplate", B),
                ("datallowconn", B),
                ("datconnlimit", I4),
                ("datacl", acl()),
                ("daticulocale", T),
                ("datlocprovider", T),
                ("dattablespace", I8),
                ("datcollversion", T),
                ("daticurules", T),
            ],
            r.catalog
                .databases()
                .iter()
                .map(|d| {
                    vec![
                        i(d.oid as i64),
                        s(&d.name),
                        i(10),
                        i32v(6),
                        s("C"),
                        s("C"),
                        b(false),
                        b(true),
                        i32v(-1),
                        null_s(),
                        null_s(),
                        s("c"),
                        i(1663),
                        null_s(),
                        null_s(),
                    ]
                })
                .collect(),
        )?,
        "pg_roles" | "pg_user" => {
            let rows = r
                .catalog
                .roles()
                .iter()
                .map(|ro| {
                    vec![
                        i(ro.oid as i64),
                        s(&ro.name),
                        b(ro.superuser),
                        b(true),
                        b(ro.superuser),
                        b(ro.create_db),
                        b(ro.login),
                        b(false),
                        i32v(-1),
                        s("********"),
                        null_s(),
                        b(false),
                        i(ro.oid as i64),
                        b(ro.superuser),
                        b(ro.create_db),
                    ]
                })
                .collect();
            table(
                &[
                    ("oid", I8),
                    ("rolname", T),
                    ("rolsuper", B),
                    ("rolinherit", B),
                    ("rolcreaterole", B),
                    ("rolcreatedb", B),
                    ("rolcanlogin", B),
                    ("rolreplication", B),
                    ("rolconnlimit", I4),
                    ("rolpassword", T),
                    ("rolvaliduntil", T),
                    ("rolbypassrls", B),
                    ("usesysid", I8),
                    ("usesuper", B),
                    ("usecreatedb", B),
                ],
                rows,
            )?
        }
        "pg_views" => table(
            &[("schemaname", T), ("viewname", T), ("viewowner", T), ("definition", T)],
            visible_views(r)
                .iter()
                .map(|v| vec![s("public"), s(&v.name), s("tessera"), s(format!(" {};", v.query))])
                .collect(),
        )?,
        "pg_tables" => table(
            &[
                ("schemaname", T),
                ("tablename", T),
                ("tableowner", T),
                ("tablespace", T),
                ("hasindexes", B),
                ("hasrules", B),
                ("hastriggers", B),
                ("rowsecurity", B),
            ],
            tables
                .iter()
                .map(|t| {
                    vec![
                        s("public"),
                        s(&t.name),
                        s("tessera"),
                        null_s(),
                        b(!t.indexes.is_empty()),
                        b(false),
                        b(false),
                        b(false),
                    ]
                })
                .collect(),
        )?,
        "pg_indexes" => table(
            &[("schemaname", T), ("tablename", T), ("indexname", T), ("tablespace", T), ("indexdef", T)],
            tables
                .iter()
                .flat_map(|t| t.indexes.iter().map(move |ix| (t, ix)))
                .map(|(t, ix)| vec![s("public"), s(&t.name), s(&ix.name), null_s(), s(index_def(t, ix))])
                .collect(),
        )?,
        "pg_constraint" => {
            let mut rows = Vec::new();
            for t in &tables {
                for ix in t.indexes.iter().filter(|i| i.constraint) {
                    let keys: Vec<String> =
                        ix.columns.iter().filter_map(|c| t.column_index(c)).map(|k| (k + 1).to_string()).collect();
                    rows.push(vec![
                        i(ix.oid as i64),
                        s(&ix.name),
                        i(PUBLIC_NS),
                        s(if ix.primary { "p" } else { "u" }),
                        i(t.oid as i64),
                        i(ix.oid as i64),
                        s(format!("{{{}}}", keys.join(","))),
                        b(false),
                        b(false),
                        b(true),
                        i(0),
                        null_s(),
                    ]);
                }
                for (k, c) in t.checks.iter().enumerate() {
                    rows.push(vec![
                        i(check_oid(t, k) as i64),
                        s(&c.name),
                        i(PUBLIC_NS),
                        s("c"),
                        i(t.oid as i64),
                        i(0),
                        null_s(),
                        b(false),
                        b(false),
                        b(true),
                        i(0),
                        s(&c.expr),
                    ]);
                }
            }
            table(
                &[
                    ("oid", I8),
                    ("conname", T),
                    ("connamespace", I8),
                    ("contype", T),
                    ("conrelid", I8),
                    ("conindid", I8),
                    ("conkey", T),
                    ("condeferrable", B),
                    ("condeferred", B),
                    ("convalidated", B),
                    ("confrelid", I8),
                    ("conbin", T),
                ],
                rows,
            )?
        }
        "pg_attrdef" => {
            let mut rows = Vec::new();
            for t in &tables {
                for (k, c) in t.columns.iter().enumerate() {
                    if let Some(d) = &c.default {
                        rows.push(vec![i(t.oid as i64 * 1000 + k as i64), i(t.oid as i64), i16v(k as i16 + 1), s(d)]);
                    }
                }
            }
            table(&[("oid", I8), ("adrelid", I8), ("adnum", I2), ("adbin", T)], rows)?
        }
        "pg_am" => table(
            &[("oid", I8), ("amname", T), ("amtype", T)],
            vec![vec![i(2), s("heap"), s("t")], vec![i(403), s("btree"), s("i")], vec![i(405), s("hash"), s("i")]],
        )?,
        "pg_settings" => {
            let all = r.info.settings.lock().all();
            table(
                &[("name", T), ("setting", T), ("short_desc", T), ("context", T), ("vartype", T), ("source", T)],
                all.into_iter().map(|(n, v, d)| vec![s(n), s(v), s(d), s("user"), s("string"), s("default")]).collect(),
            )?
        }
        "pg_description" => table(&[("objoid", I8), ("classoid", I8), ("objsubid", I4), ("description", T)], vec![])?,
        "pg_auth_members" => table(
            &[
                ("roleid", I8),
                ("member", I8),
                ("grantor", I8),
                ("admin_option", B),
                ("inherit_option", B),
                ("set_option", B),
            ],
            vec![],
        )?,
        "pg_policy" => table(
            &[
                ("oid", I8),
                ("polname", T),
                ("polrelid", I8),
                ("polcmd", T),
                ("polpermissive", B),
                ("polroles", T),
                ("polqual", T),
                ("polwithcheck", T),
            ],
            vec![],
        )?,
        "pg_trigger" => table(
            &[("oid", I8), ("tgrelid", I8), ("tgname", T), ("tgisinternal", B), ("tgenabled", T), ("tgparentid", I8)],
            vec![],
        )?,
        "pg_rewrite" => table(&[("oid", I8), ("rulename", T), ("ev_class", I8)], vec![])?,
        "pg_statistic_ext" => table(
            &[
                ("oid", I8),
                ("stxrelid", I8),
                ("stxname", T),
                ("stxnamespace", I8),
                ("stxkind", T),
                ("stxstattarget", I4),
            ],
            vec![],
        )?,
        "pg_publication" => table(&[("oid", I8), ("pubname", T), ("puballtables", B)], vec![])?,
        "pg_publication_rel" => table(&[("oid", I8), ("prpubid", I8), ("prrelid", I8)], vec![])?,
        "pg_publication_namespace" => table(&[("oid", I8), ("pnpubid", I8), ("pnnspid", I8)], vec![])?,
        "pg_foreign_table" => table(&[("ftrelid", I8), ("ftserver", I8)], vec![])?,
        "pg_partitioned_table" => table(&[("partrelid", I8), ("partstrat", T)], vec![])?,
        "pg_collation" => table(&[("oid", I8), ("collname", T), ("collnamespace", I8)], vec![])?,
        "pg_tablespace" => table(&[("oid", I8), ("spcname", T)], vec![vec![i(1663), s("pg_default")]])?,
        "pg_inherits" => {
            table(&[("inhrelid", I8), ("inhparent", I8), ("inhseqno", I4), ("inhdetachpending", B)], vec![])?
        }
        "pg_proc" => table(&[("oid", I8), ("proname", T), ("pronamespace", I8), ("prorettype", I8)], vec![])?,
        "pg_sequence" | "pg_sequences" => {
            let seqs = r.catalog.sequences(&r.db);
            table(
                &[
                    ("seqrelid", I8),
                    ("sequencename", T),
                    ("schemaname", T),
                    ("seqstart", I8),
                    ("seqincrement", I8),
                    ("seqmin", I8),
                    ("seqmax", I8),
                    ("last_value", I8),
                ],
                seqs.iter()
                    .filter(|q| !q.name.starts_with("__"))
                    .map(|q| {
                        vec![
                            i(q.oid as i64),
                            s(&q.name),
                            s("public"),
                            i(q.start),
                            i(q.increment),
                            i(q.min),
                            i(q.max),
                            V::Int64(r.catalog.last_value(q)),
                        ]
                    })
                    .collect(),
            )?
        }
        "pg_stat_activity" => table(
            &[("datname", T), ("pid", I4), ("usename", T), ("application_name", T), ("state", T), ("query", T)],
            vec![vec![
                s(&r.db),
                i32v(r.info.pid),
                s(&r.info.user),
                s(r.info.settings.lock().get("application_name")),
                s("active"),
                null_s(),
            ]],
        )?,
        _ => return Ok(None),
    };
    Ok(Some(t))
}

pub fn information_schema_table(r: &Resolver, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
    let tables = visible_tables(r);
    let t = match name {
        "tables" => table(&[("table_catalog", T), ("table_schema", T), ("table_name", T), ("table_type", T)], {
            let temp = temp_oids(r);
            let kind = |oid: u32, kind: &str| {
                if temp.contains(&oid) { "LOCAL TEMPORARY".to_string() } else { kind.to_string() }
            };
            tables
                .iter()
                .map(|t| vec![s(&r.db), s(schema_of(&temp, r, t.oid).1), s(&t.name), s(kind(t.oid, "BASE TABLE"))])
                .chain(
                    visible_views(r)
                        .iter()
                        .map(|v| vec![s(&r.db), s(schema_of(&temp, r, v.oid).1), s(&v.name), s(kind(v.oid, "VIEW"))]),
                )
                .collect()
        })?,
        "views" => table(
            &[
                ("table_catalog", T),
                ("table_schema", T),
                ("table_name", T),
                ("view_definition", T),
                ("check_option", T),
                ("is_updatable", T),
                ("is_insertable_into", T),
                ("is_trigger_updatable", T),
                ("is_trigger_deletable", T),
                ("is_trigger_insertable_into", T),
            ],
            visible_views(r)
                .iter()
                .map(|v| {
                    let mut row = vec![s(&r.db), s("public"), s(&v.name), s(format!(" {};", v.query)), s("NONE")];
                    row.extend((0..5).map(|_| s("NO")));
                    row
                })
                .collect(),
        )?,
        "schemata" => table(
            &[("catalog_name", T), ("schema_name", T), ("schema_owner", T)],
            ["public", "pg_catalog", "information_schema"]
                .iter()
                .map(|n| vec![s(&r.db), s(*n), s("tessera")])
                .collect(),
        )?,
        "columns" => {
            let mut rows = Vec::new();
            let temp = temp_oids(r);
            for (oid, name, columns) in relation_columns(r, &tables) {
                let schema = schema_of(&temp, r, oid).1;
                for (k, c) in columns.iter().enumerate() {
                    let (len, prec, scale) = match c.ty {
                        SqlType::Varchar(Some(n)) | SqlType::Char(n) => {
                            (V::Int64(Some(n as i64)), V::Int64(None), V::Int64(None))
                        }
                        SqlType::Numeric { precision, scale } if c.ty != SqlType::NUMERIC_DEFAULT => {
                            (V::Int64(None), i(precision as i64), i(scale as i64))
                        }
                        SqlType::Int2 => (V::Int64(None), i(16), i(0)),
                        SqlType::Int4 => (V::Int64(None), i(32), i(0)),
                        SqlType::Int8 => (V::Int64(None), i(64), i(0)),
                        _ => (V::Int64(None), V::Int64(None), V::Int64(None)),
                    };
                    let data_type = match c.ty {
                        SqlType::Array { .. } => "ARRAY".to_string(),
                        SqlType::Varchar(_) => "character varying".to_string(),
                        SqlType::Char(_) => "character".to_string(),
                        SqlType::Numeric { .. } => "numeric".to_string(),
                        other => other.name(),
                    };
                    rows.push(vec![
                        s(&r.db),
                        s(&schema),
                        s(&name),
                        s(&c.name),
                        i(k as i64 + 1),
                        c.default.clone().map(s).unwrap_or(null_s()),
                        s(if c.not_null { "NO" } else { "YES" }),
                        s(data_type),
                        len,
                        prec,
                        scale,
                        s(typname(c.ty)),
                        s(if c.identity.is_some() { "YES" } else { "NO" }),
                    ]);
                }
            }
            table(
                &[
                    ("table_catalog", T),
                    ("table_schema", T),
                    ("table_name", T),
                    ("column_name", T),
                    ("ordinal_position", I8),
                    ("column_default", T),
                    ("is_nullable", T),
                    ("data_type", T),
                    ("character_maximum_length", I8),
                    ("numeric_precision", I8),
                    ("numeric_scale", I8),
                    ("udt_name", T),
                    ("is_identity", T),
                ],
                rows,
            )?
        }
        "table_constraints" => {
            let mut rows = Vec::new();
            for t in &tables {
                for ix in t.indexes.iter().filter(|i| i.constraint) {
                    rows.push(vec![
                        s(&r.db),
                        s("public"),
                        s(&ix.name),
                        s("public"),
                        s(&t.name),
                        s(if ix.primary { "PRIMARY KEY" } else { "UNIQUE" }),
                    ]);
                }
                for c in &t.checks {
                    rows.push(vec![s(&r.db), s("public"), s(&c.name), s("public"), s(&t.name), s("CHECK")]);
                }
            }
            table(
                &[
                    ("constraint_catalog", T),
                    ("constraint_schema", T),
                    ("constraint_name", T),
                    ("table_schema", T),
                    ("table_name", T),
                    ("constraint_type", T),
                ],
                rows,
            )?
        }
        "key_column_usage" => {
            let mut rows = Vec::new();
            for t in &tables {
                for ix in t.indexes.iter().filter(|i| i.constraint) {
                    for (k, c) in ix.columns.iter().enumerate() {
                        rows.push(vec![
                            s(&r.db),
                            s("public"),
                            s(&ix.name),
                            s("public"),
                            s(&t.name),
                            s(c),
                            i(k as i64 + 1),
                        ]);
                    }
                }
            }
            table(
                &[
                    ("constraint_catalog", T),
                    ("constraint_schema", T),
                    ("constraint_name", T),
                    ("table_schema", T),
                    ("table_name", T),
                    ("column_name", T),
                    ("ordinal_position", I8),
                ],
                rows,
            )?
        }
        _ => return Ok(None),
    };
    Ok(Some(t))
}
