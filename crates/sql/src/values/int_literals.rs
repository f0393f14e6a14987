//! Integer constants typed as PostgreSQL types them: `integer` when the
//! value fits in 32 bits, `bigint` otherwise.
//!
//! DataFusion's planner makes every integer constant an Int64, so
//! `int4_col + 1` is computed in 64 bits: `2147483647 + 1` returns
//! 2147483648 where PostgreSQL raises 22003 ("integer out of range"), and
//! the result is reported as `bigint` where PostgreSQL says `integer`.
//! This analyzer rule runs before type coercion and gives such constants
//! the type PostgreSQL gives them, so that coercion and the checked
//! arithmetic (`overflow::CheckedArithmetic`, `strict::CheckedConstants`)
//! work in PostgreSQL's types: `int4 + 1` is an `integer` and overflows
//! where PostgreSQL's does, `int8 + 1` is still a `bigint`.
//!
//! Only the expressions of projections, filters, aggregates, sorts, joins
//! and windows are retyped. `LIMIT`/`OFFSET` (which DataFusion wants as
//! Int64), `VALUES` lists (whose rows are typed together, as an INSERT's
//! target column decides) and everything else keep DataFusion's typing,
//! as do whole statements with a recursive query.

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

/// The analyzer rule (see the module's text).
#[derive(Debug)]
pub struct IntegerLiterals;

impl AnalyzerRule for IntegerLiterals {
    fn name(&self) -> &str {
        "tessera_integer_literals"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        // A recursive query's work table was typed from its first term when
        // the query was planned; retyping that term would part the two.
        let mut recursive = false;
        plan.apply_with_subqueries(|node| {
            recursive |= matches!(node, LogicalPlan::RecursiveQuery(_));
            Ok(if recursive { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
        })?;
        if recursive {
            return Ok(plan);
        }
        // Once a constant below has changed type, every node above it
        // describes its input anew.
        let changed = std::cell::Cell::new(false);
        plan.transform_up_with_subqueries(|node| {
            let node = if retypes(&node) {
                let names = NamePreserver::new(&node);
                let node = node.map_expressions(|e| {
                    let saved = names.save(&e);
                    let new = e.transform_down(|e| match e {
                        // `count(*)` is `count(1)`: a constant argument of an
                        // aggregate names it, and means nothing more.
                        Expr::AggregateFunction(ref f)
                            if f.params.args.iter().all(|a| matches!(a, Expr::Literal(..))) =>
                        {
                            Ok(Transformed::new(e, false, TreeNodeRecursion::Jump))
                        }
                        e => as_integer(e),
                    })?;
                    Ok(if new.transformed { Transformed::yes(saved.restore(new.data)) } else { new })
                })?;
                changed.set(changed.get() || node.transformed);
                node.data
            } else {
                node
            };
            if changed.get() { Ok(Transformed::yes(node.recompute_schema()?)) } else { Ok(Transformed::no(node)) }
        })
        .data()
    }
}

/// Whether the rule retypes the constants of `node`'s own expressions.
fn retypes(node: &LogicalPlan) -> bool {
    matches!(
        node,
        LogicalPlan::Projection(_)
            | LogicalPlan::Filter(_)
            | LogicalPlan::Aggregate(_)
            | LogicalPlan::Sort(_)
            | LogicalPlan::Join(_)
            | LogicalPlan::Window(_)
    )
}

/// An Int64 constant that fits in 32 bits, as an Int32.
fn as_integer(e: Expr) -> Result<Transformed<Expr>> {
    match e {
        Expr::Literal(ScalarValue::Int64(Some(v)), meta) if i32::try_from(v).is_ok() => {
            Ok(Transformed::yes(Expr::Literal(ScalarValue::Int32(Some(v as i32)), meta)))
        }
        other => Ok(Transformed::no(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_that_fit_in_32_bits_become_integers() {
        let small = as_integer(Expr::Literal(ScalarValue::Int64(Some(-2147483648)), None)).unwrap();
        assert_eq!(small.data, Expr::Literal(ScalarValue::Int32(Some(i32::MIN)), None));
        let large = as_integer(Expr::Literal(ScalarValue::Int64(Some(2147483648)), None)).unwrap();
        assert!(!large.transformed);
        assert_eq!(large.data, Expr::Literal(ScalarValue::Int64(Some(2147483648)), None));
    }
}
