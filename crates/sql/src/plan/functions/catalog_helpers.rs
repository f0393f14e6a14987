//! The catalog helpers psql and drivers call: role names, visibility,
//! type names, definitions of indexes, views and constraints, sizes,
//! and the fixed answers for what Tessera does not have (comments,
//! privileges).

use std::sync::Arc;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{ColumnarValue, Volatility, create_udf};

use super::{format_type, map_int, map_int_i64, map_text, scalar_i64, text};
use crate::scope::Resolver;

pub(super) fn register(ctx: &SessionContext, r: &Resolver) {
    register_role_names(ctx, r);
    register_visibility(ctx, r);
    register_format_type(ctx);
    register_fixed_answers(ctx);
    register_definitions(ctx, r);
    register_sizes(ctx, r);
}

fn register_role_names(ctx: &SessionContext, r: &Resolver) {
    let c = r.catalog.clone();
    ctx.register_udf(create_udf(
        "pg_get_userbyid",
        vec![DataType::Int64],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(move |args| {
            let roles = c.roles();
            map_int(&args[0], |oid| {
                Some(
                    roles
                        .iter()
                        .find(|r| r.oid as i64 == oid)
                        .map(|r| r.name.clone())
                        .unwrap_or_else(|| "unknown".into()),
                )
            })
        }),
    ));
}

/// `pg_table_is_visible` and `pg_type_is_visible`.
fn register_visibility(ctx: &SessionContext, r: &Resolver) {
    // A relation is visible unless one of the session's temporary relations
    // has its name (and so hides it).
    let (c, d, temp) = (r.catalog.clone(), r.db.clone(), r.info.temp_schema.clone());
    ctx.register_udf(create_udf(
        "pg_table_is_visible",
        vec![DataType::Int64],
        DataType::Boolean,
        Volatility::Stable,
        Arc::new(move |args| {
            let relations: Vec<(u32, String)> = c
                .tables(&d)
                .iter()
                .map(|t| (t.oid, t.name.clone()))
                .chain(c.views(&d).iter().map(|v| (v.oid, v.name.clone())))
                .collect();
            let own: std::collections::HashSet<&str> = relations
                .iter()
                .filter_map(|(_, n)| {
                    crate::storage::temp_names::split(n).filter(|(s, _)| *s == temp).map(|(_, own)| own)
                })
                .collect();
            let hidden: std::collections::HashSet<i64> = relations
                .iter()
                .filter(|(_, n)| !crate::storage::temp_names::is_temp(n) && own.contains(n.as_str()))
                .map(|(oid, _)| i64::from(*oid))
                .collect();
            let scalar = matches!(args[0], ColumnarValue::Scalar(_));
            let oids = datafusion::arrow::compute::cast(&args[0].to_array(1)?, &DataType::Int64)?;
            let out: datafusion::arrow::array::BooleanArray = oids
                .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
                .iter()
                .map(|oid| oid.map(|oid| !hidden.contains(&oid)))
                .collect();
            crate::values::udf_values::columnar(Arc::new(out), scalar)
        }),
    ));
    ctx.register_udf(create_udf(
        "pg_type_is_visible",
        vec![DataType::Int64],
        DataType::Boolean,
        Volatility::Stable,
        Arc::new(|_| Ok(ColumnarValue::Scalar(ScalarValue::Boolean(Some(true))))),
    ));
}

fn register_format_type(ctx: &SessionContext) {
    ctx.register_udf(create_udf(
        "format_type",
        vec![DataType::Int64, DataType::Int64],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(|args| {
            let typmod = match &args[1] {
                ColumnarValue::Scalar(s) => vec![scalar_i64(s)],
                ColumnarValue::Array(a) => {
                    let a = datafusion::arrow::compute::cast(a, &DataType::Int64)?;
                    a.as_primitive::<datafusion::arrow::datatypes::Int64Type>().iter().collect()
                }
            };
            let mut k = 0;
            map_int(&args[0], move |oid| {
                let m = typmod.get(k).copied().flatten().or(typmod.first().copied().flatten()).unwrap_or(-1);
                k += 1;
                Some(format_type(oid as u32, m as i32))
            })
        }),
    ));
}

/// What has one answer here: no comments, UTF8, every privilege.
fn register_fixed_answers(ctx: &SessionContext) {
    // No object has a comment (COMMENT ON is not built): NULL, as for
    // PostgreSQL's objects without one. The second argument names the
    // catalog (`'pg_class'`), or a column's number for col_description.
    for (name, second) in [
        ("obj_description", DataType::Utf8),
        ("col_description", DataType::Int64),
        ("shobj_description", DataType::Utf8),
    ] {
        ctx.register_udf(create_udf(
            name,
            vec![DataType::Int64, second],
            DataType::Utf8,
            Volatility::Stable,
            Arc::new(|_| Ok(ColumnarValue::Scalar(ScalarValue::Utf8(None)))),
        ));
    }
    ctx.register_udf(create_udf(
        "pg_encoding_to_char",
        vec![DataType::Int64],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(|_| text("UTF8")),
    ));
    for (name, argc) in [("has_table_privilege", 2), ("has_schema_privilege", 2), ("has_database_privilege", 2)] {
        ctx.register_udf(create_udf(
            name,
            vec![DataType::Utf8; argc],
            DataType::Boolean,
            Volatility::Stable,
            Arc::new(|_| Ok(ColumnarValue::Scalar(ScalarValue::Boolean(Some(true))))),
        ));
    }
}

/// The definitions of column defaults, indexes, views and constraints.
fn register_definitions(ctx: &SessionContext, r: &Resolver) {
    ctx.register_udf(create_udf(
        "pg_get_expr",
        vec![DataType::Utf8, DataType::Int64],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(|args| map_text(&args[0], DataType::Utf8, |s| Ok(Some(ScalarValue::Utf8(Some(s.to_string())))))),
    ));
    let (c, d) = (r.catalog.clone(), r.db.clone());
    ctx.register_udf(create_udf(
        "pg_get_indexdef",
        vec![DataType::Int64],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(move |args| {
            let tables = c.tables(&d);
            map_int(&args[0], |oid| {
                tables.iter().find_map(|t| {
                    t.indexes.iter().find(|i| i.oid as i64 == oid).map(|i| crate::system::pg_catalog::index_def(t, i))
                })
            })
        }),
    ));
    let (c, d) = (r.catalog.clone(), r.db.clone());
    ctx.register_udf(create_udf(
        "pg_get_viewdef",
        vec![DataType::Int64],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(move |args| {
            let views = c.views(&d);
            map_int(&args[0], |oid| views.iter().find(|v| v.oid as i64 == oid).map(|v| format!(" {};", v.query)))
        }),
    ));
    let (c, d) = (r.catalog.clone(), r.db.clone());
    ctx.register_udf(create_udf(
        "pg_get_constraintdef",
        vec![DataType::Int64],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(move |args| {
            let tables = c.tables(&d);
            map_int(&args[0], |oid| crate::system::pg_catalog::constraint_def(&tables, oid as u32))
        }),
    ));
}

/// Relations' sizes, and sizes for people to read.
fn register_sizes(ctx: &SessionContext, r: &Resolver) {
    let (c, d) = (r.catalog.clone(), r.db.clone());
    for name in ["pg_relation_size", "pg_total_relation_size", "pg_table_size"] {
        let (c, d) = (c.clone(), d.clone());
        ctx.register_udf(create_udf(
            name,
            vec![DataType::Int64],
            DataType::Int64,
            Volatility::Volatile,
            Arc::new(move |args| {
                let tables = c.tables(&d);
                map_int_i64(&args[0], |oid| {
                    tables
                        .iter()
                        .find(|t| t.oid as i64 == oid)
                        .and_then(|t| c.engine_table(t).ok())
                        .map(|t| t.stats().bytes)
                })
            }),
        ));
    }
    ctx.register_udf(create_udf(
        "pg_size_pretty",
        vec![DataType::Int64],
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(|args| {
            map_int(&args[0], |b| {
                Some(if b < 10 * 1024 {
                    format!("{b} bytes")
                } else if b < 10 * 1024 * 1024 {
                    format!("{} kB", (b + 512) / 1024)
                } else if b < 10 * 1024 * 1024 * 1024 {
                    format!("{} MB", (b + 512 * 1024) / (1024 * 1024))
                } else {
                    format!("{} GB", (b + 512 * 1024 * 1024) / (1024 * 1024 * 1024))
                })
            })
        }),
    ));
}
