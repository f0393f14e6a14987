//! Type names read as `regtype` (`to_regtype`, `'mood'::regtype`): how
//! drivers find a type's OID by its name, built in or the database's own.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType::{Int64 as I8, Utf8 as T};
use datafusion::common::ScalarValue as V;
use datafusion::error::Result as DfResult;

use crate::scope::Resolver;

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
