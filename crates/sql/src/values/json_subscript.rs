//! jsonb subscripting (`j['key']`, `j[0]`, `j['a'][1]`), which PostgreSQL
//! reads as `->` (a missing key or index is NULL): DataFusion would read it
//! as a struct field or a list element of text. A subscript of another type
//! or a slice is refused as in PostgreSQL.

use std::sync::Arc;

use datafusion::common::{DFSchema, DataFusionError, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawFieldAccessExpr};
use datafusion::logical_expr::{Expr, ExprSchemable, GetFieldAccess};

use crate::error::SqlError;

/// Plans a subscript of a jsonb value as `tessera_json_get`.
#[derive(Debug)]
pub struct JsonbSubscriptPlanner;

impl ExprPlanner for JsonbSubscriptPlanner {
    fn plan_field_access(
        &self,
        expr: RawFieldAccessExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawFieldAccessExpr>> {
        if !crate::values::json::is_jsonb_field(&expr.expr, schema) {
            return Ok(PlannerResult::Original(expr));
        }
        let key = match &expr.field_access {
            GetFieldAccess::NamedStructField { name } => Expr::Literal(name.clone(), None),
            GetFieldAccess::ListIndex { key } => {
                let t = key.get_type(schema)?;
                if !(t.is_integer() || t.is_null() || matches!(t, datafusion::arrow::datatypes::DataType::Utf8)) {
                    let e = SqlError::new("42804", format!("subscript type {} is not supported", type_name(&t)))
                        .with_hint("jsonb subscript must be coercible to either integer or text.".to_string());
                    return Err(DataFusionError::External(Box::new(e)));
                }
                (**key).clone()
            }
            GetFieldAccess::ListRange { .. } => {
                return Err(refuse("42804", "jsonb subscript does not support slices".into()));
            }
        };
        let get = Arc::new(crate::values::json::get_udf());
        Ok(PlannerResult::Planned(Expr::ScalarFunction(ScalarFunction::new_udf(get, vec![expr.expr, key]))))
    }
}

fn type_name(t: &datafusion::arrow::datatypes::DataType) -> String {
    let name = crate::values::types::SqlType::from_arrow(t).map_or_else(|| t.to_string(), |s| s.to_string());
    // The type without its modifiers, as PostgreSQL names it here.
    name.split('(').next().unwrap_or(&name).to_string()
}

fn refuse(code: &'static str, msg: String) -> DataFusionError {
    DataFusionError::External(Box::new(SqlError::new(code, msg)))
}
