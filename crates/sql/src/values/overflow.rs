//! Integer arithmetic that overflows is an error (22003), as in PostgreSQL.
//!
//! DataFusion's `+`, `-` and `*` wrap around by default; its binary
//! expression can check instead. This physical optimizer rule switches the
//! check on in the expressions of projections and filters, where arithmetic
//! in SELECT lists, WHERE clauses and UPDATE … SET lives.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::error::Result;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::BinaryExpr;
use datafusion::physical_expr::{PhysicalExpr, projection::ProjectionExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::filter::{FilterExec, FilterExecBuilder};
use datafusion::physical_plan::projection::ProjectionExec;

#[derive(Debug)]
pub struct CheckedArithmetic;

fn checked(expr: &Arc<dyn PhysicalExpr>) -> Result<Transformed<Arc<dyn PhysicalExpr>>> {
    expr.clone().transform_up(|e| {
        if let Some(b) = e.downcast_ref::<BinaryExpr>()
            && matches!(b.op(), Operator::Plus | Operator::Minus | Operator::Multiply)
        {
            let new = BinaryExpr::new(b.left().clone(), *b.op(), b.right().clone()).with_fail_on_overflow(true);
            return Ok(Transformed::yes(Arc::new(new) as Arc<dyn PhysicalExpr>));
        }
        Ok(Transformed::no(e))
    })
}

impl PhysicalOptimizerRule for CheckedArithmetic {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            if let Some(p) = node.downcast_ref::<ProjectionExec>() {
                let mut changed = false;
                let mut exprs = Vec::with_capacity(p.expr().len());
                for pe in p.expr() {
                    let t = checked(&pe.expr)?;
                    changed |= t.transformed;
                    exprs.push(ProjectionExpr { expr: t.data, alias: pe.alias.clone() });
                }
                if changed {
                    let new = ProjectionExec::try_new(exprs, p.input().clone())?;
                    return Ok(Transformed::yes(Arc::new(new) as Arc<dyn ExecutionPlan>));
                }
            } else if let Some(f) = node.downcast_ref::<FilterExec>() {
                let t = checked(f.predicate())?;
                if t.transformed {
                    // Keep everything else the filter had (projection, selectivity, batch size).
                    let new = FilterExecBuilder::from(f).with_predicate(t.data).build()?;
                    return Ok(Transformed::yes(Arc::new(new) as Arc<dyn ExecutionPlan>));
                }
            }
            Ok(Transformed::no(node))
        })
        .data()
    }

    fn name(&self) -> &str {
        "tessera_checked_arithmetic"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
