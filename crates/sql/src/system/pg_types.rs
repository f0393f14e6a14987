//! The users' types in `pg_catalog`: their `pg_type` rows (enum types
//! with `typtype` 'e', domains with 'd' and their base type) and
//! `pg_enum`, the labels in order, which drivers and ORMs read to learn
//! an enum's values; and type names read as `regtype` (`to_regtype`,
//! `'mood'::regtype`), how drivers find a type's OID by its name.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType::{Float32 as F4, Int64 as I8, Utf8 as T};
use datafusion::common::ScalarValue as V;
use datafusion::datasource::TableProvider;
use datafusion::error::Result as DfResult;

use crate::scope::Resolver;
use crate::system::pg_catalog::{PUBLIC_NS, b, i, i16v, i32v, s, table};
use crate::values::types::SqlType;
use crate::values::user_types::TypeKind;

/// PostgreSQL's type category letter.
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

/// `pg_type` rows of the database's enum types and domains, in the
/// columns `pg_catalog::pg_catalog_table` lays out for `pg_type`.
pub fn user_type_rows(r: &Resolver) -> Vec<Vec<V>> {
    let mut rows = Vec::new();
    for t in r.catalog.user_types(&r.db) {
        let (typtype, base, ty, not_null) = match &t.body {
            TypeKind::Enum { .. } => ("e", 0, SqlType::Enum(t.oid), false),
            TypeKind::Domain(d) => ("d", d.base.oid() as i64, d.base, d.not_null),
        };
        let text = matches!(ty, SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_));
        rows.push(vec![
            i(t.oid as i64),
            s(&t.name),
            i(PUBLIC_NS),
            i16v(ty.typlen()),
            s(typtype),
            i(0),
            i(base),
            s(category(ty)),
            i(10),
            b(true),
            s(","),
            i(0),
            i32v(if typtype == "d" { ty.typmod() } else { -1 }),
            b(not_null),
            i(if text { 100 } else { 0 }),
            i(0),
            i(0),
        ]);
    }
    rows
}

/// `pg_enum`: each enum type's labels with their sort order.
pub fn pg_enum(r: &Resolver) -> DfResult<Arc<dyn TableProvider>> {
    let mut rows = Vec::new();
    for t in r.catalog.user_types(&r.db) {
        let TypeKind::Enum { labels } = &t.body else { continue };
        for (k, label) in labels.iter().enumerate() {
            rows.push(vec![i(0), i(t.oid as i64), V::Float32(Some(k as f32 + 1.0)), s(label)]);
        }
    }
    table(&[("oid", I8), ("enumtypid", I8), ("enumsortorder", F4), ("enumlabel", T)], rows)
}

/// The OID of the type named `name` (built in, or the database's own).
pub fn regtype(catalog: &crate::storage::catalog::Catalog, db: &str, name: &str) -> Option<i64> {
    if let Ok(oid) = name.trim().parse::<i64>() {
        return Some(oid);
    }
    let plain = name.trim().trim_start_matches("pg_catalog.");
    match catalog.resolve_type(db, plain) {
        Ok(r) => Some(r.domain.map_or(r.ty.oid(), |d| d.oid) as i64),
        Err(_) => None,
    }
}

/// Registers `to_regtype(text)` (NULL for an unknown name) and
/// `tessera_to_regtype(text)`, the cast (42704 for an unknown name).
pub fn register(ctx: &datafusion::execution::context::SessionContext, r: &Resolver) {
    use datafusion::arrow::array::{Array, AsArray, Int64Array};
    use datafusion::logical_expr::{ColumnarValue, Volatility, create_udf};
    for (name, strict) in [("to_regtype", false), ("tessera_to_regtype", true)] {
        let (catalog, db) = (r.catalog.clone(), r.db.clone());
        let f = move |args: &[ColumnarValue]| -> DfResult<ColumnarValue> {
            let scalar = matches!(args[0], ColumnarValue::Scalar(_));
            let names = args[0].to_array(1)?;
            let names = datafusion::arrow::compute::cast(&names, &datafusion::arrow::datatypes::DataType::Utf8)?;
            let mut out = Vec::with_capacity(names.len());
            for n in names.as_string::<i32>().iter() {
                let oid = n.and_then(|n| regtype(&catalog, &db, n));
                if let (Some(n), None, true) = (n, oid, strict) {
                    let e = crate::error::SqlError::new(
                        crate::error::code::UNDEFINED_OBJECT,
                        format!("type \"{n}\" does not exist"),
                    );
                    return Err(datafusion::error::DataFusionError::External(Box::new(e)));
                }
                out.push(oid);
            }
            let out = Int64Array::from(out);
            Ok(if scalar {
                ColumnarValue::Scalar(V::Int64(out.iter().next().flatten()))
            } else {
                ColumnarValue::Array(Arc::new(out))
            })
        };
        ctx.register_udf(create_udf(name, vec![T], I8, Volatility::Stable, Arc::new(f)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories() {
        assert_eq!(category(SqlType::Int4), "N");
        assert_eq!(category(SqlType::Enum(1)), "E");
    }
}
