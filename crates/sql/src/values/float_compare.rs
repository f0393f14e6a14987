//! Comparisons of a `numeric` with a float, in float8 as PostgreSQL makes
//! them.
//!
//! PostgreSQL has no operator comparing `numeric` with `float8`; it casts
//! the numeric to float8 (the implicit cast, float8 being the category's
//! preferred type), so `1.000000000000000000001::numeric = 1::float8` is
//! true and such a row joins, matches `IN (SELECT float_col …)` and
//! passes `WHERE num_col = 1e0`. DataFusion's type coercion casts the
//! float to a decimal instead, which gives other answers. The analyzer
//! rule [`NumericFloatComparisons`] runs before that coercion and casts the
//! numeric side of such a comparison (`=`, `<>`, `<`, `<=`, `>`, `>=`, IN
//! lists, IN subqueries, BETWEEN and join keys) to float8.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, ExprSchema, Result};
use datafusion::logical_expr::expr::InSubquery;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Operator, cast};
use datafusion::optimizer::AnalyzerRule;

/// The analyzer rule (see the module's text).
#[derive(Debug)]
pub struct NumericFloatComparisons;

impl AnalyzerRule for NumericFloatComparisons {
    fn name(&self) -> &str {
        "tessera_numeric_float_comparisons"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let plan = plan
            .transform_up_with_subqueries(|node| match node {
                LogicalPlan::Join(mut join) => {
                    let (left, right) = (join.left.schema().clone(), join.right.schema().clone());
                    let mut changed = false;
                    for (l, r) in join.on.iter_mut() {
                        let (lt, rt) = (l.get_type(left.as_ref())?, r.get_type(right.as_ref())?);
                        if is_decimal(&lt) && is_float(&rt) {
                            *l = cast(l.clone(), DataType::Float64);
                            changed = true;
                        } else if is_float(&lt) && is_decimal(&rt) {
                            *r = cast(r.clone(), DataType::Float64);
                            changed = true;
                        }
                    }
                    let node = LogicalPlan::Join(join);
                    Ok(if changed { Transformed::yes(node) } else { Transformed::no(node) })
                }
                other => Ok(Transformed::no(other)),
            })?
            .data;
        crate::values::exact_casts::rewrite_expressions(plan, compare_as_floats)
    }
}

fn is_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..))
}

fn is_float(t: &DataType) -> bool {
    matches!(t, DataType::Float32 | DataType::Float64)
}

fn is_comparison(op: Operator) -> bool {
    matches!(op, Operator::Eq | Operator::NotEq | Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq)
}

/// `e` cast to float8 when it is a numeric.
fn float_if_decimal(e: Expr, schema: &DFSchema) -> Result<(Expr, bool)> {
    if is_decimal(&e.get_type(schema as &dyn ExprSchema)?) {
        Ok((cast(e, DataType::Float64), true))
    } else {
        Ok((e, false))
    }
}

fn compare_as_floats(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let ty = |e: &Expr| e.get_type(schema as &dyn ExprSchema);
    match e {
        Expr::BinaryExpr(mut b) if is_comparison(b.op) => {
            let (lt, rt) = (ty(&b.left)?, ty(&b.right)?);
            if (is_decimal(&lt) && is_float(&rt)) || (is_float(&lt) && is_decimal(&rt)) {
                let (left, _) = float_if_decimal(*b.left, schema)?;
                let (right, _) = float_if_decimal(*b.right, schema)?;
                b.left = Box::new(left);
                b.right = Box::new(right);
                return Ok(Transformed::yes(Expr::BinaryExpr(b)));
            }
            Ok(Transformed::no(Expr::BinaryExpr(b)))
        }
        Expr::InList(mut list) => {
            let mut types = vec![ty(&list.expr)?];
            for item in &list.list {
                types.push(ty(item)?);
            }
            if !(types.iter().any(is_decimal) && types.iter().any(is_float)) {
                return Ok(Transformed::no(Expr::InList(list)));
            }
            list.expr = Box::new(float_if_decimal(*list.expr, schema)?.0);
            list.list =
                list.list.into_iter().map(|i| float_if_decimal(i, schema).map(|r| r.0)).collect::<Result<_>>()?;
            Ok(Transformed::yes(Expr::InList(list)))
        }
        Expr::Between(mut b) => {
            let types = [ty(&b.expr)?, ty(&b.low)?, ty(&b.high)?];
            if !(types.iter().any(is_decimal) && types.iter().any(is_float)) {
                return Ok(Transformed::no(Expr::Between(b)));
            }
            b.expr = Box::new(float_if_decimal(*b.expr, schema)?.0);
            b.low = Box::new(float_if_decimal(*b.low, schema)?.0);
            b.high = Box::new(float_if_decimal(*b.high, schema)?.0);
            Ok(Transformed::yes(Expr::Between(b)))
        }
        Expr::InSubquery(InSubquery { expr, mut subquery, negated }) => {
            let inner = subquery.subquery.schema().field(0).data_type().clone();
            let outer = ty(&expr)?;
            if is_decimal(&outer) && is_float(&inner) {
                let expr = Box::new(cast(*expr, DataType::Float64));
                return Ok(Transformed::yes(Expr::InSubquery(InSubquery { expr, subquery, negated })));
            }
            if is_float(&outer) && is_decimal(&inner) {
                let plan = subquery.subquery.as_ref().clone();
                let (qualifier, field) = plan.schema().qualified_field(0);
                let column = Expr::Column(datafusion::common::Column::new(qualifier.cloned(), field.name()));
                let name = field.name().clone();
                let projected = LogicalPlanBuilder::from(plan)
                    .project(vec![cast(column, DataType::Float64).alias(name)])?
                    .build()?;
                subquery.subquery = Arc::new(projected);
                return Ok(Transformed::yes(Expr::InSubquery(InSubquery { expr, subquery, negated })));
            }
            Ok(Transformed::no(Expr::InSubquery(InSubquery { expr, subquery, negated })))
        }
        other => Ok(Transformed::no(other)),
    }
}
