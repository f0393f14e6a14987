//! `lead` and `lag` with a default of a wider type than their value.
//!
//! PostgreSQL resolves `lead(value, n, default)` to the common type of
//! `value` and `default`: `lead(int_col, 1, -1.4)` is numeric and answers
//! -1.4 past the partition's end. DataFusion casts the default to the
//! value's type instead, so it answered -1, a silent wrong answer. The
//! analyzer rule [`ShiftDefaults`] (before type coercion) casts the value
//! to the common type when the default's is wider; a default of a type
//! with no common type is left to DataFusion's error.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, ExprSchema, Result};
use datafusion::logical_expr::expr::WindowFunction;
use datafusion::logical_expr::{Cast, Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

/// The analyzer rule (see the module's text).
#[derive(Debug)]
pub struct ShiftDefaults;

impl AnalyzerRule for ShiftDefaults {
    fn name(&self) -> &str {
        "tessera_shift_defaults"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::values::exact_casts::rewrite_expressions(plan, widen_value)
    }
}

fn widen_value(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::WindowFunction(w) = &e else { return Ok(Transformed::no(e)) };
    let name = w.fun.name().to_lowercase();
    if !matches!(name.as_str(), "lead" | "lag") || w.params.args.len() != 3 {
        return Ok(Transformed::no(e));
    }
    let ty = |x: &Expr| x.get_type(schema as &dyn ExprSchema).ok();
    let (Some(value), Some(default)) = (ty(&w.params.args[0]), ty(&w.params.args[2])) else {
        return Ok(Transformed::no(e));
    };
    if value == default || default.is_null() {
        return Ok(Transformed::no(e));
    }
    let common = datafusion::logical_expr::type_coercion::binary::comparison_coercion(&value, &default);
    match common {
        Some(common) if common != value && (common.is_numeric() && value.is_numeric()) => {
            // Integers widened to a decimal become an unconstrained numeric,
            // which prints each value with its own places (2, and -1.4), as
            // PostgreSQL's numeric does.
            let common = if value.is_integer() && matches!(common, DataType::Decimal128(..) | DataType::Decimal256(..))
            {
                crate::values::numeric::UNCONSTRAINED
            } else {
                common
            };
            let Expr::WindowFunction(mut w) = e else { unreachable!("matched above") };
            let WindowFunction { params, .. } = w.as_mut();
            let v = std::mem::replace(&mut params.args[0], Expr::Literal(datafusion::common::ScalarValue::Null, None));
            params.args[0] = Expr::Cast(Cast::new(Box::new(v), common));
            Ok(Transformed::yes(Expr::WindowFunction(w)))
        }
        _ => Ok(Transformed::no(e)),
    }
}
