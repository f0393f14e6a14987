//! `interval` as PostgreSQL reads, compares and multiplies it.
//!
//! - **Input:** interval text is read by `interval_in` exactly as
//!   PostgreSQL reads it (its units, `1 2:03:04`, `1-2`, ISO 8601, `ago`,
//!   field restrictions such as `INTERVAL '1 2' DAY TO HOUR`, and its
//!   errors), for literals (`INTERVAL '…'`, `'…'::interval`, before
//!   planning, in [`rewrite`]) and for values stored into an interval
//!   column (`assign::cast_to_styled`: INSERT, UPDATE, COPY); Arrow then
//!   receives months, days and microseconds it reads without rounding. A
//!   cast of a value to a restricted interval type becomes
//!   `tessera_interval_restrict`. Output is `interval_out`'s.
//! - **Comparison and order:** PostgreSQL compares intervals by their
//!   length, a month counted as 30 days and a day as 24 hours (`'1
//!   month' = '30 days'` is true); DataFusion compares months, then days,
//!   then nanoseconds. The analyzer rule [`IntervalRules`] compares and
//!   sorts by `tessera_interval_span(x)`, PostgreSQL's length.
//! - **Multiplication and division by a number** (`interval '1 day' *
//!   1.5`), which DataFusion's planner refuses: a written interval times a
//!   number becomes `tessera_interval_mul` before planning ([`rewrite`]),
//!   with PostgreSQL's carrying of fractional months into days (30 each)
//!   and fractional days into time. (An interval column times a number is
//!   still refused.)
//!
//! GROUP BY, DISTINCT and `count(DISTINCT …)` go by the same length
//! (`interval_groups.rs`); window PARTITION BY still tells `1 month` from
//! `30 days`.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Array, IntervalMonthDayNanoArray};
use datafusion::arrow::datatypes::{
    DataType, Float64Type, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit,
};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, DataFusionError, ExprSchema, Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::expr::{ScalarFunction, Sort};
use datafusion::logical_expr::{
    BinaryExpr, Cast, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

use crate::error::{SqlError, code};
use crate::values::interval_in::{self, Restriction};

const INTERVAL: DataType = DataType::Interval(IntervalUnit::MonthDayNano);
const DAY_NANOS: i128 = 86_400_000_000_000;

/// Registers `tessera_interval_span` and `tessera_interval_mul`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(udf(Kind::Span));
    ctx.register_udf(udf(Kind::Mul));
    ctx.register_udf(udf(Kind::Div));
    ctx.register_udf(udf(Kind::Restrict));
}

/// Rewrites, before planning, a written interval: its text read as
/// PostgreSQL reads it (`interval_in::parse`, with the literal's field
/// restriction: `INTERVAL '1 2' DAY TO HOUR`) into units Arrow reads
/// exactly; a cast of another value to a restricted interval
/// (`x::interval day to minute`) into `tessera_interval_restrict`; and the
/// product or quotient of a written interval (`INTERVAL '…'`,
/// `x::interval`) and a number, which DataFusion's planner refuses, into
/// `tessera_interval_mul`.
pub fn rewrite(e: &mut datafusion::sql::sqlparser::ast::Expr, sql_standard: bool) -> std::result::Result<(), SqlError> {
    use datafusion::sql::sqlparser::ast::{BinaryOperator, DataType as AstType, Expr as Ast, Value};
    let written = |x: &Ast| matches!(x, Ast::Interval(_) | Ast::Cast { data_type: AstType::Interval { .. }, .. });
    let text_of = |x: &Ast| match x {
        Ast::Value(v) => match &v.value {
            Value::SingleQuotedString(t) => Some(t.clone()),
            _ => None,
        },
        _ => None,
    };
    if let Ast::BinaryOp { left, op: op @ (BinaryOperator::Multiply | BinaryOperator::Divide), right } = e {
        let (interval, factor) = match (written(left), written(right), &op) {
            (true, false, BinaryOperator::Multiply) => (left.to_string(), format!("CAST({right} AS double precision)")),
            (false, true, BinaryOperator::Multiply) => (right.to_string(), format!("CAST({left} AS double precision)")),
            (true, false, BinaryOperator::Divide) => (left.to_string(), format!("CAST({right} AS double precision)")),
            _ => return Ok(()),
        };
        let name = if matches!(op, BinaryOperator::Divide) { "tessera_interval_div" } else { "tessera_interval_mul" };
        if let Ok(call) = crate::parser::parse_expr(&format!("{name}({interval}, {factor})")) {
            *e = call;
        }
        return Ok(());
    }
    // `- INTERVAL '…'`: DataFusion would put the minus before the text,
    // negating its first field only. (Its operand is already in the form
    // written below: expressions are rewritten inside out.)
    if let Ast::UnaryOp { op: datafusion::sql::sqlparser::ast::UnaryOperator::Minus, expr } = e
        && let Ast::Interval(iv) = expr.as_ref()
        && iv.leading_field.is_none()
        && iv.last_field.is_none()
        && let Some(text) = text_of(&iv.value)
    {
        let v = interval_in::parse(&text, Restriction::default(), false)?;
        let neg = |x: Option<i64>| x.ok_or_else(interval_in::out_of_range);
        let v = interval_in::PgInterval {
            months: neg(v.months.checked_neg().map(i64::from))? as i32,
            days: neg(v.days.checked_neg().map(i64::from))? as i32,
            micros: neg(v.micros.checked_neg())?,
        };
        *e = crate::parser::parse_expr(&format!("INTERVAL '{}'", interval_in::to_arrow_text(v)?))?;
        return Ok(());
    }
    let bad_fields =
        |what: &dyn std::fmt::Display| SqlError::syntax(format!("syntax error: invalid interval fields {what}"));
    let (text, restriction) = match e {
        Ast::Interval(iv) => {
            let Some(text) = text_of(&iv.value) else { return Ok(()) };
            let leading = iv.leading_field.as_ref().map(|f| f.to_string());
            let last = iv.last_field.as_ref().map(|f| f.to_string());
            // `SECOND(p)` alone: p is the fractional precision.
            let precision = match (&leading, &last) {
                (Some(l), None) if l.eq_ignore_ascii_case("second") => iv.leading_precision,
                _ => iv.fractional_seconds_precision,
            };
            let r = Restriction::new(leading.as_deref(), last.as_deref(), precision).ok_or_else(|| bad_fields(&iv))?;
            (text, r)
        }
        Ast::Cast { expr: _, data_type: AstType::Interval { fields, precision }, .. } => {
            let restriction = restriction_of(fields.as_ref(), *precision).ok_or_else(|| bad_fields(&e.to_string()))?;
            let Ast::Cast { expr, data_type, .. } = e else { unreachable!("matched above") };
            match text_of(expr) {
                Some(text) => (text, restriction),
                None if restriction.is_full() => return Ok(()),
                None => {
                    // A value cast to a restricted interval: its fields
                    // dropped and its seconds rounded at run time.
                    *data_type = AstType::Interval { fields: None, precision: None };
                    let (range, precision) = restriction.parts();
                    let call = format!("tessera_interval_restrict({e}, {range}, {precision})");
                    *e = crate::parser::parse_expr(&call)?;
                    return Ok(());
                }
            }
        }
        // `interval(2) '…'`.
        Ast::TypedString(ts) if matches!(ts.data_type, AstType::Interval { .. }) => {
            let AstType::Interval { fields, precision } = &ts.data_type else { unreachable!("matched above") };
            let Value::SingleQuotedString(text) = &ts.value.value else { return Ok(()) };
            let r = restriction_of(fields.as_ref(), *precision).ok_or_else(|| bad_fields(&ts.data_type))?;
            (text.clone(), r)
        }
        _ => return Ok(()),
    };
    let value = interval_in::parse(&text, restriction, sql_standard)?;
    *e = crate::parser::parse_expr(&format!("INTERVAL '{}'", interval_in::to_arrow_text(value)?))?;
    Ok(())
}

/// The restriction a type's fields name (`DAY TO MINUTE`).
fn restriction_of(
    fields: Option<&datafusion::sql::sqlparser::ast::IntervalFields>,
    precision: Option<u64>,
) -> Option<Restriction> {
    let text = fields.map(|f| f.to_string());
    let (leading, last) = match text.as_deref().map(|t| t.split_once(" TO ")) {
        None => (None, None),
        Some(None) => (text.as_deref(), None),
        Some(Some((a, b))) => (Some(a), Some(b)),
    };
    Restriction::new(leading, last, precision)
}

/// PostgreSQL's length of an interval, in nanoseconds.
fn span(v: IntervalMonthDayNano) -> i128 {
    (i128::from(v.months) * 30 + i128::from(v.days)) * DAY_NANOS + i128::from(v.nanoseconds)
}

/// `iv * factor` as PostgreSQL's `interval_mul`: fractional months carried
/// into days (30 each), fractional days into time, each rounded to the
/// microsecond.
/// PostgreSQL's `interval_mul` and `interval_div` (which divides each
/// field, not multiplies by the inverse).
fn scale(v: IntervalMonthDayNano, factor: f64, divide: bool) -> Option<IntervalMonthDayNano> {
    let op = |x: f64| if divide { x / factor } else { x * factor };
    let round_micros = |x: f64| (x * 1e6).round_ties_even() / 1e6;
    let (month_f, day_f) = (op(f64::from(v.months)), op(f64::from(v.days)));
    let (months, mut days) = (month_f.trunc(), day_f.trunc());
    let month_remainder_days = round_micros((month_f - months) * 30.0);
    let mut seconds = round_micros((day_f - days + month_remainder_days - month_remainder_days.trunc()) * 86_400.0);
    if seconds.abs() >= 86_400.0 {
        let whole = (seconds / 86_400.0).trunc();
        days += whole;
        seconds -= whole * 86_400.0;
    }
    days += month_remainder_days.trunc();
    let micros = (op((v.nanoseconds / 1000) as f64) + seconds * 1e6).round_ties_even();
    let fits = |x: f64, max: f64| x.is_finite() && x.abs() <= max;
    if !fits(months, f64::from(i32::MAX)) || !fits(days, f64::from(i32::MAX)) || !fits(micros, 9.2e15) {
        return None;
    }
    Some(IntervalMonthDayNano::new(months as i32, days as i32, micros as i64 * 1000))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// `tessera_interval_span(iv)`: its length, a Decimal128(38, 0) of nanoseconds.
    Span,
    /// `tessera_interval_mul(iv, factor)`.
    Mul,
    /// `tessera_interval_div(iv, divisor)`.
    Div,
    /// `tessera_interval_restrict(iv, range, precision)`: a cast to a
    /// restricted interval type (`Restriction::parts`).
    Restrict,
}

/// `tessera_interval_span(iv)`: an interval's length as PostgreSQL
/// compares it (nanoseconds, a month counted as 30 days).
pub fn span_udf() -> ScalarUDF {
    udf(Kind::Span)
}

fn udf(kind: Kind) -> ScalarUDF {
    let arity = match kind {
        Kind::Span => 1,
        Kind::Mul | Kind::Div => 2,
        Kind::Restrict => 3,
    };
    ScalarUDF::new_from_impl(IntervalFn { kind, signature: Signature::any(arity, Volatility::Immutable) })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalFn {
    kind: Kind,
    signature: Signature,
}

impl ScalarUDFImpl for IntervalFn {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Span => "tessera_interval_span",
            Kind::Mul => "tessera_interval_mul",
            Kind::Div => "tessera_interval_div",
            Kind::Restrict => "tessera_interval_restrict",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::Span => DataType::Decimal128(38, 0),
            Kind::Mul | Kind::Div | Kind::Restrict => INTERVAL,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let intervals = datafusion::arrow::compute::cast(&args.args[0].to_array(n)?, &INTERVAL)?;
        let intervals = intervals.as_primitive::<IntervalMonthDayNanoType>();
        let out: ArrayRef = match self.kind {
            Kind::Span => Arc::new(
                intervals.iter().map(|v| v.map(span)).collect::<Decimal128Array>().with_precision_and_scale(38, 0)?,
            ),
            Kind::Mul | Kind::Div => {
                let divide = self.kind == Kind::Div;
                let factors = datafusion::arrow::compute::cast(&args.args[1].to_array(n)?, &DataType::Float64)?;
                let factors = factors.as_primitive::<Float64Type>();
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    if intervals.is_null(i) || factors.is_null(i) {
                        out.push(None);
                        continue;
                    }
                    if divide && factors.value(i) == 0.0 {
                        return Err(DataFusionError::External(Box::new(SqlError::new(
                            code::DIVISION_BY_ZERO,
                            "division by zero",
                        ))));
                    }
                    let v = scale(intervals.value(i), factors.value(i), divide).ok_or_else(|| {
                        DataFusionError::External(Box::new(SqlError::new(
                            code::DATETIME_OVERFLOW,
                            "interval out of range",
                        )))
                    })?;
                    out.push(Some(v));
                }
                Arc::new(IntervalMonthDayNanoArray::from(out))
            }
            Kind::Restrict => {
                let int = |i: usize| match &args.args[i] {
                    ColumnarValue::Scalar(v) => v.cast_to(&DataType::Int64).ok().and_then(|v| match v {
                        ScalarValue::Int64(Some(n)) => Some(n),
                        _ => None,
                    }),
                    ColumnarValue::Array(_) => None,
                };
                let (Some(range), Some(precision)) = (int(1), int(2)) else {
                    return Err(DataFusionError::Internal(
                        "tessera_interval_restrict: constant fields expected".into(),
                    ));
                };
                let r = Restriction::from_parts(range, precision);
                let out: IntervalMonthDayNanoArray = intervals
                    .iter()
                    .map(|v| {
                        v.map(|v| {
                            let pg = interval_in::PgInterval {
                                months: v.months,
                                days: v.days,
                                micros: v.nanoseconds.div_euclid(1000),
                            };
                            let pg = interval_in::restrict(pg, r);
                            IntervalMonthDayNano::new(pg.months, pg.days, pg.micros * 1000)
                        })
                    })
                    .collect();
                Arc::new(out)
            }
        };
        crate::values::udf_values::columnar(out, scalar)
    }
}

/// An interval times or divided by a number (`span * 0.3`, `span / 10`),
/// which DataFusion refuses when it plans the operator, as PostgreSQL's
/// `interval_mul` / `interval_div` of a float8.
#[derive(Debug)]
pub struct IntervalArithmeticPlanner;

impl datafusion::logical_expr::planner::ExprPlanner for IntervalArithmeticPlanner {
    fn plan_binary_op(
        &self,
        expr: datafusion::logical_expr::planner::RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<datafusion::logical_expr::planner::PlannerResult<datafusion::logical_expr::planner::RawBinaryExpr>>
    {
        use datafusion::logical_expr::planner::PlannerResult;
        use datafusion::sql::sqlparser::ast::BinaryOperator;
        let (Ok(lt), Ok(rt)) = (expr.left.get_type(schema), expr.right.get_type(schema)) else {
            return Ok(PlannerResult::Original(expr));
        };
        let interval = |t: &DataType| matches!(t, DataType::Interval(_));
        let as_float = |x: Expr| Expr::Cast(Cast::new(Box::new(x), DataType::Float64));
        let planned = match (&expr.op, interval(&lt), interval(&rt)) {
            (BinaryOperator::Multiply, true, false) if rt.is_numeric() => {
                call(Kind::Mul, vec![expr.left, as_float(expr.right)])
            }
            (BinaryOperator::Multiply, false, true) if lt.is_numeric() => {
                call(Kind::Mul, vec![expr.right, as_float(expr.left)])
            }
            (BinaryOperator::Divide, true, false) if rt.is_numeric() => {
                call(Kind::Div, vec![expr.left, as_float(expr.right)])
            }
            _ => return Ok(PlannerResult::Original(expr)),
        };
        Ok(PlannerResult::Planned(planned))
    }
}

/// The analyzer rule (see the module's text); it runs before type
/// coercion, which would cast a text constant compared with an interval
/// its own way.
#[derive(Debug)]
pub struct IntervalRules;

impl AnalyzerRule for IntervalRules {
    fn name(&self) -> &str {
        "tessera_interval_rules"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        sort_by_length(crate::values::exact_casts::rewrite_expressions(plan, by_length)?)
    }
}

fn call(kind: Kind, args: Vec<Expr>) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(udf(kind)), args))
}

fn by_length(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let type_of = |x: &Expr| x.get_type(schema as &dyn ExprSchema).ok();
    let is_interval = |t: &Option<DataType>| matches!(t, Some(DataType::Interval(_)));
    let is_text_literal = |x: &Expr| matches!(x, Expr::Literal(ScalarValue::Utf8(Some(_)), _));
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (lt, rt) = (type_of(&left), type_of(&right));
            let comparison = matches!(
                op,
                Operator::Eq | Operator::NotEq | Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq
            );
            if comparison
                && (is_interval(&lt) || is_interval(&rt))
                && (is_interval(&lt) || is_text_literal(&left))
                && (is_interval(&rt) || is_text_literal(&right))
            {
                let as_interval = |x: Expr| Expr::Cast(Cast::new(Box::new(x), INTERVAL));
                let (l, r) = (call(Kind::Span, vec![as_interval(*left)]), call(Kind::Span, vec![as_interval(*right)]));
                return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(Box::new(l), op, Box::new(r)))));
            }
            Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr { left, op, right })))
        }
        other => Ok(Transformed::no(other)),
    }
}

/// Sort keys of an interval type, as their length.
fn sort_by_length(plan: LogicalPlan) -> Result<LogicalPlan> {
    use datafusion::common::tree_node::TransformedResult;
    plan.transform_up_with_subqueries(|node| {
        let LogicalPlan::Sort(sort) = &node else { return Ok(Transformed::no(node)) };
        let schema = sort.input.schema().clone();
        if !sort
            .expr
            .iter()
            .any(|s| matches!(s.expr.get_type(schema.as_ref() as &dyn ExprSchema), Ok(DataType::Interval(_))))
        {
            return Ok(Transformed::no(node));
        }
        let LogicalPlan::Sort(mut sort) = node else { unreachable!() };
        sort.expr = sort
            .expr
            .into_iter()
            .map(|s| match s.expr.get_type(schema.as_ref() as &dyn ExprSchema) {
                Ok(DataType::Interval(_)) => Sort { expr: call(Kind::Span, vec![s.expr]), ..s },
                _ => s,
            })
            .collect();
        Ok(Transformed::yes(LogicalPlan::Sort(sort)))
    })
    .data()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_products_as_postgres_computes_them() {
        assert_eq!(span(IntervalMonthDayNano::new(1, 0, 0)), span(IntervalMonthDayNano::new(0, 30, 0)));
        assert!(
            span(IntervalMonthDayNano::new(0, 1, 0)) > span(IntervalMonthDayNano::new(0, 0, 23 * 3_600_000_000_000))
        );
        let day_and_half = scale(IntervalMonthDayNano::new(0, 1, 0), 1.5, false).unwrap();
        assert_eq!(day_and_half, IntervalMonthDayNano::new(0, 1, 12 * 3_600_000_000_000));
        assert_eq!(scale(IntervalMonthDayNano::new(1, 0, 0), 3.0, true).unwrap(), IntervalMonthDayNano::new(0, 10, 0));
    }
}
