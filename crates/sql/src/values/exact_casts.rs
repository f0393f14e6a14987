//! Comparisons through a cast that merges values keep their cast.
//!
//! DataFusion's expression simplifier rewrites `CAST(x AS t) op constant`
//! into `x op CAST(constant AS type of x)` (its "unwrap cast"), which is
//! faster but right only when the cast keeps distinct values distinct.
//! Through a cast that merges values it is wrong: `numeric_col::int = 1`
//! becomes `numeric_col = 1.00` and misses 1.01, which PostgreSQL returns;
//! `int_col::text = '0123'` becomes `int_col = 123` and finds a row where
//! PostgreSQL finds none (apache/datafusion issues 22142 and 23095).
//!
//! This analyzer rule runs before the simplifier and wraps such a cast, in
//! a filter's comparisons and IN lists, in `tessera_cast_kept`, a function
//! that returns its argument: the simplifier does not look through it, so
//! the comparison is computed as written. Casts that only widen (an
//! integer to a larger one, a decimal given room, text as text) are left
//! alone, and still unwrapped; so are the casts DataFusion already refuses
//! to unwrap. EXPLAIN shows the wrapper.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::optimizer::AnalyzerRule;

/// The analyzer rule (see the module's text).
#[derive(Debug)]
pub struct KeepMergingCasts;

impl AnalyzerRule for KeepMergingCasts {
    fn name(&self) -> &str {
        "tessera_keep_merging_casts"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        rewrite_filters(plan, keep_casts)
    }
}

/// Rewrites every filter's predicate in `plan` (subqueries included),
/// bottom up, with `rewrite`, which sees the filter's input schema.
pub(crate) fn rewrite_filters(
    plan: LogicalPlan,
    rewrite: impl Fn(Expr, &DFSchema) -> Result<Transformed<Expr>>,
) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|node| {
        let LogicalPlan::Filter(filter) = &node else {
            return Ok(Transformed::no(node));
        };
        let schema = filter.input.schema().clone();
        let predicate = filter.predicate.clone().transform_up(|e| rewrite(e, &schema))?;
        if !predicate.transformed {
            return Ok(Transformed::no(node));
        }
        let LogicalPlan::Filter(filter) = node else { unreachable!() };
        let new = datafusion::logical_expr::Filter::try_new(predicate.data, filter.input)?;
        Ok(Transformed::yes(LogicalPlan::Filter(new)))
    })
    .data()
}

/// Rewrites every expression of every node in `plan` (subqueries
/// included), bottom up, with `rewrite`, which sees the schema the node's
/// expressions are read against (its inputs' together). Expressions keep
/// their names, so the nodes above still find them.
pub(crate) fn rewrite_expressions(
    plan: LogicalPlan,
    rewrite: impl Fn(Expr, &DFSchema) -> Result<Transformed<Expr>>,
) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|node| {
        let mut has_expressions = false;
        node.apply_expressions(|_| {
            has_expressions = true;
            Ok(TreeNodeRecursion::Stop)
        })?;
        if !has_expressions {
            return Ok(Transformed::no(node));
        }
        let mut schema = DFSchema::empty();
        for input in node.inputs() {
            schema.merge(input.schema());
        }
        let names = NamePreserver::new(&node);
        node.map_expressions(|e| {
            let saved = names.save(&e);
            let new = e.transform_up(|e| rewrite(e, &schema))?;
            Ok(if new.transformed { Transformed::yes(saved.restore(new.data)) } else { new })
        })
    })
    .data()
}

/// [`rewrite_expressions`] for rewrites that may change an expression's
/// type (a cast retargeted): each rewritten node's schema is computed
/// again (a VALUES list keeps its own, which its rows' types made).
pub(crate) fn rewrite_expressions_retyped(
    plan: LogicalPlan,
    rewrite: impl Fn(Expr, &DFSchema) -> Result<Transformed<Expr>>,
) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|node| {
        if matches!(node, LogicalPlan::TableScan(_)) {
            return Ok(Transformed::no(node));
        }
        let values = matches!(node, LogicalPlan::Values(_));
        let mut schema = DFSchema::empty();
        for input in node.inputs() {
            schema.merge(input.schema());
        }
        let names = NamePreserver::new(&node);
        let node = node.map_expressions(|e| {
            let saved = names.save(&e);
            let new = e.transform_up(|e| rewrite(e, &schema))?;
            Ok(if new.transformed { Transformed::yes(saved.restore(new.data)) } else { new })
        })?;
        if node.transformed && !values { node.map_data(|n| n.recompute_schema()) } else { Ok(node) }
    })
    .data()
}

/// Wraps the merging casts compared with something in `e`.
fn keep_casts(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    match e {
        Expr::BinaryExpr(mut b) if is_comparison(&b) => {
            let (left, l) = wrap_if_merging(*b.left, schema)?;
            let (right, r) = wrap_if_merging(*b.right, schema)?;
            b.left = Box::new(left);
            b.right = Box::new(right);
            Ok(if l || r { Transformed::yes(Expr::BinaryExpr(b)) } else { Transformed::no(Expr::BinaryExpr(b)) })
        }
        Expr::InList(mut list) => {
            let (expr, wrapped) = wrap_if_merging(*list.expr, schema)?;
            list.expr = Box::new(expr);
            Ok(if wrapped { Transformed::yes(Expr::InList(list)) } else { Transformed::no(Expr::InList(list)) })
        }
        other => Ok(Transformed::no(other)),
    }
}

fn is_comparison(b: &datafusion::logical_expr::BinaryExpr) -> bool {
    use datafusion::logical_expr::Operator::*;
    matches!(b.op, Eq | NotEq | Lt | LtEq | Gt | GtEq | IsDistinctFrom | IsNotDistinctFrom)
}

/// Wraps `e` if it is a cast, or casts of casts, of which one merges
/// values (type coercion often adds a widening around the written one:
/// `CAST(CAST(n AS Int32) AS Int64) = 1`, which the simplifier unwraps
/// layer by layer).
fn wrap_if_merging(e: Expr, schema: &DFSchema) -> Result<(Expr, bool)> {
    let mut layer = &e;
    let mut merges = false;
    loop {
        let (inner, to) = match layer {
            Expr::Cast(c) => (c.expr.as_ref(), c.field.data_type()),
            Expr::TryCast(c) => (c.expr.as_ref(), c.field.data_type()),
            _ => break,
        };
        match inner.get_type(schema) {
            Ok(from) => merges |= !keeps_values_apart(&from, to),
            Err(_) => return Ok((e, false)),
        }
        layer = inner;
    }
    if !merges {
        return Ok((e, false));
    }
    Ok((cast_kept().call(vec![e]), true))
}

/// Whether every two distinct values of `from` stay distinct, and in the
/// same order, as `to`: the casts DataFusion may unwrap without changing a
/// comparison's answer.
pub(crate) fn keeps_values_apart(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    /// Decimal digits an integer type needs.
    fn digits(t: &DataType) -> Option<i16> {
        Some(match t {
            Int8 | UInt8 => 3,
            Int16 | UInt16 => 5,
            Int32 | UInt32 => 10,
            Int64 => 19,
            UInt64 => 20,
            _ => return None,
        })
    }
    fn int_rank(t: &DataType) -> Option<(bool, u8)> {
        Some(match t {
            Int8 => (true, 1),
            Int16 => (true, 2),
            Int32 => (true, 4),
            Int64 => (true, 8),
            UInt8 => (false, 1),
            UInt16 => (false, 2),
            UInt32 => (false, 4),
            UInt64 => (false, 8),
            _ => return None,
        })
    }
    if from == to {
        return true;
    }
    match (from, to) {
        (Utf8 | LargeUtf8 | Utf8View, Utf8 | LargeUtf8 | Utf8View) => true,
        (Float32, Float64) => true,
        (Int8 | Int16 | Int32 | UInt8 | UInt16 | UInt32, Float64) | (Int8 | Int16 | UInt8 | UInt16, Float32) => true,
        (Decimal128(p1, s1) | Decimal256(p1, s1), Decimal128(p2, s2) | Decimal256(p2, s2)) => {
            s2 >= s1 && (*p2 as i16 - *s2 as i16) >= (*p1 as i16 - *s1 as i16)
        }
        // (A negative scale rounds to tens, hundreds…: it merges integers.)
        (f, Decimal128(p, s) | Decimal256(p, s)) => *s >= 0 && digits(f).is_some_and(|d| *p as i16 - *s as i16 >= d),
        (f, t) => match (int_rank(f), int_rank(t)) {
            (Some((fs, fw)), Some((ts, tw))) => (fs == ts && tw >= fw) || (!fs && ts && tw > fw),
            _ => false,
        },
    }
}

/// `tessera_cast_kept(x)`: `x` itself.
fn cast_kept() -> Arc<ScalarUDF> {
    static UDF: std::sync::OnceLock<Arc<ScalarUDF>> = std::sync::OnceLock::new();
    UDF.get_or_init(|| {
        Arc::new(ScalarUDF::new_from_impl(CastKept { signature: Signature::any(1, Volatility::Immutable) }))
    })
    .clone()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct CastKept {
    signature: Signature,
}

impl ScalarUDFImpl for CastKept {
    fn name(&self) -> &str {
        "tessera_cast_kept"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[0].clone())
    }

    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(args.args.swap_remove(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widenings_keep_values_apart_and_narrowings_do_not() {
        use DataType::*;
        for (from, to) in [
            (Int32, Int64),
            (UInt16, Int32),
            (Int32, Float64),
            (Int32, Decimal128(12, 2)),
            (Decimal128(5, 2), Decimal128(7, 3)),
            (Utf8, LargeUtf8),
        ] {
            assert!(keeps_values_apart(&from, &to), "{from} -> {to}");
        }
        for (from, to) in [
            (Decimal128(5, 2), Int32),
            (Decimal128(5, 2), Decimal128(4, 1)),
            (Int64, Int32),
            (Int64, Float64),
            (Float64, Int64),
            (Int32, Utf8),
            (Utf8, Int32),
            (Int64, Decimal128(10, 2)),
            (Int16, Decimal128(10, -2)),
            (Int32, UInt32),
        ] {
            assert!(!keeps_values_apart(&from, &to), "{from} -> {to}");
        }
    }
}
