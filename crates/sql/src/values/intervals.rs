//! `interval` as PostgreSQL reads, compares and multiplies it.
//!
//! - **Input:** Arrow's interval parser takes `1 day 2 hours` but not the
//!   forms PostgreSQL prints and dumps (`01:00:00`, `1 day 02:30:00`,
//!   `-01:30`), nor `ago`, and spreads a fractional week over hours (`1.5
//!   weeks` is `7 days 84:00:00`, where PostgreSQL has `10 days
//!   12:00:00`), nor ISO 8601 (`P1Y2M3DT4H`, `P0002-10-15T10:30:20`) or
//!   SQL's year-month and day-time forms (`1-2`, `1 2:03:04`).
//!   [`normalize_text`] rewrites such text into units Arrow
//!   reads the same way PostgreSQL does: for literals (`INTERVAL '…'`,
//!   `'…'::interval`) before planning, and for values stored into an
//!   interval column (`dml::cast_to`: INSERT, UPDATE, COPY).
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

const INTERVAL: DataType = DataType::Interval(IntervalUnit::MonthDayNano);
const DAY_NANOS: i128 = 86_400_000_000_000;

/// Registers `tessera_interval_span` and `tessera_interval_mul`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(udf(Kind::Span));
    ctx.register_udf(udf(Kind::Mul));
}

/// Interval text in the units Arrow reads as PostgreSQL does; None when it
/// needs no change.
pub fn normalize_text(text: &str) -> Option<String> {
    if let Some(iso) = iso8601(text) {
        return Some(iso);
    }
    let mut tokens: Vec<String> = Vec::new();
    let words: Vec<&str> = text.trim().trim_start_matches('@').split_whitespace().collect();
    let mut changed = text.trim_start().starts_with('@');
    let mut ago = false;
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let unit = words.get(i + 1).map(|u| u.to_ascii_lowercase());
        if w.eq_ignore_ascii_case("ago") {
            ago = true;
            changed = true;
        } else if let Some(parts) = clock(w) {
            tokens.extend(parts);
            changed = true;
        } else if let Some((sign, y, m)) = year_month(w) {
            // SQL's year-month form: `1-2` is 1 year 2 months.
            tokens.extend([format!("{sign}{y}"), "years".into(), format!("{sign}{m}"), "months".into()]);
            changed = true;
        } else if w.parse::<i64>().is_ok() && words.get(i + 1).is_some_and(|next| clock(next).is_some()) {
            // A number before a time of day counts days (`1 2:03:04`).
            tokens.extend([w.trim_start_matches('+').to_string(), "days".into()]);
            changed = true;
        } else if let (Ok(n), Some(u)) = (w.parse::<f64>(), &unit)
            && (u.starts_with("week") || u == "w")
        {
            tokens.push(format!("{}", n * 7.0));
            tokens.push("days".into());
            i += 1;
            changed = true;
        } else {
            tokens.push(w.to_string());
        }
        i += 1;
    }
    if !changed {
        return None;
    }
    if ago {
        for t in &mut tokens {
            if t.parse::<f64>().is_ok() {
                *t = match t.strip_prefix('-') {
                    Some(positive) => positive.to_string(),
                    None => format!("-{}", t.trim_start_matches('+')),
                };
            }
        }
    }
    Some(tokens.join(" "))
}

/// `[±]Y-M`: the sign and the two numbers.
fn year_month(w: &str) -> Option<(&'static str, u32, u32)> {
    let (sign, rest) = match w.as_bytes().first()? {
        b'-' => ("-", &w[1..]),
        b'+' => ("", &w[1..]),
        _ => ("", w),
    };
    let (y, m) = rest.split_once('-')?;
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if !digits(y) || !digits(m) {
        return None;
    }
    Some((sign, y.parse().ok()?, m.parse().ok()?))
}

/// An ISO 8601 duration (`P1Y2M3DT4H5M6S`, `P1W`, `P0002-10-15T10:30:20`,
/// `P00021015T103020`) in units Arrow reads as PostgreSQL does.
fn iso8601(text: &str) -> Option<String> {
    let t = text.trim();
    let rest = t.strip_prefix(['P', 'p'])?;
    if rest.is_empty() {
        return None;
    }
    let (date, time) = match rest.find(['T', 't']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let designated = |part: &str, units: &[(char, &str)]| -> Option<Vec<String>> {
        let mut out = Vec::new();
        let mut number = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' || c == '-' || c == '+' {
                number.push(c);
                continue;
            }
            let (_, unit) = units.iter().find(|(u, _)| c.eq_ignore_ascii_case(u))?;
            let n: f64 = number.parse().ok()?;
            number.clear();
            if *unit == "weeks" {
                out.extend([format!("{}", n * 7.0), "days".to_string()]);
            } else {
                out.extend([format!("{n}"), unit.to_string()]);
            }
        }
        number.is_empty().then_some(out)
    };
    let alternative = date.bytes().all(|b| b.is_ascii_digit() || b == b'-')
        && time.is_none_or(|t| t.bytes().all(|b| b.is_ascii_digit() || b == b':' || b == b'.'));
    let mut tokens = Vec::new();
    if alternative {
        // `YYYY-MM-DD` or `YYYYMMDD`, then `hh:mm:ss` or `hhmmss`.
        let fields: Vec<&str> = if date.contains('-') {
            date.split('-').collect()
        } else {
            [0..4, 4..6, 6..8].iter().filter_map(|r| date.get(r.clone())).collect()
        };
        for (f, unit) in fields.iter().zip(["years", "months", "days"]) {
            tokens.extend([f.parse::<i64>().ok()?.to_string(), unit.to_string()]);
        }
        if let Some(time) = time {
            let fields: Vec<&str> = if time.contains(':') {
                time.split(':').collect()
            } else {
                [0..2, 2..4, 4..time.len()]
                    .iter()
                    .filter_map(|r| time.get(r.clone()))
                    .filter(|f| !f.is_empty())
                    .collect()
            };
            for (f, unit) in fields.iter().zip(["hours", "minutes", "seconds"]) {
                tokens.extend([format!("{}", f.parse::<f64>().ok()?), unit.to_string()]);
            }
        }
    } else {
        tokens.extend(designated(date, &[('Y', "years"), ('M', "months"), ('W', "weeks"), ('D', "days")])?);
        if let Some(time) = time {
            tokens.extend(designated(time, &[('H', "hours"), ('M', "minutes"), ('S', "seconds")])?);
        }
    }
    if tokens.is_empty() {
        return Some("0 seconds".into());
    }
    Some(tokens.join(" "))
}

/// `[-]H:MM[:SS[.f]]` as hours, minutes and seconds, each with the sign.
fn clock(w: &str) -> Option<Vec<String>> {
    let (sign, rest) = match w.as_bytes().first()? {
        b'-' => ("-", &w[1..]),
        b'+' => ("", &w[1..]),
        _ => ("", w),
    };
    let mut parts = rest.split(':');
    let h = parts.next()?;
    let m = parts.next()?;
    let s = parts.next().unwrap_or("0");
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let seconds = s.split_once('.').map_or(digits(s), |(a, b)| digits(a) && digits(b));
    if parts.next().is_some() || !digits(h) || !digits(m) || !seconds {
        return None;
    }
    Some(vec![
        format!("{sign}{h}"),
        "hours".into(),
        format!("{sign}{m}"),
        "minutes".into(),
        format!("{sign}{s}"),
        "seconds".into(),
    ])
}

/// Rewrites, before planning, an interval literal's text (see
/// [`normalize_text`]) and the product or quotient of a written interval
/// (`INTERVAL '…'`, `x::interval`) and a number, which DataFusion's
/// planner refuses, into `tessera_interval_mul`.
pub fn rewrite(e: &mut datafusion::sql::sqlparser::ast::Expr) {
    use datafusion::sql::sqlparser::ast::{BinaryOperator, DataType as AstType, Expr as Ast, Value};
    let written = |x: &Ast| matches!(x, Ast::Interval(_) | Ast::Cast { data_type: AstType::Interval { .. }, .. });
    if let Ast::BinaryOp { left, op: op @ (BinaryOperator::Multiply | BinaryOperator::Divide), right } = e {
        let (interval, factor) = match (written(left), written(right), &op) {
            (true, false, BinaryOperator::Multiply) => (left.to_string(), format!("CAST({right} AS double precision)")),
            (false, true, BinaryOperator::Multiply) => (right.to_string(), format!("CAST({left} AS double precision)")),
            (true, false, BinaryOperator::Divide) => {
                (left.to_string(), format!("1.0::double precision / CAST({right} AS double precision)"))
            }
            _ => return,
        };
        if let Ok(call) = crate::parser::parse_expr(&format!("tessera_interval_mul({interval}, {factor})")) {
            *e = call;
        }
        return;
    }
    let text = match e {
        Ast::Interval(iv) if iv.leading_field.is_none() && iv.last_field.is_none() => match iv.value.as_mut() {
            Ast::Value(v) => match &mut v.value {
                Value::SingleQuotedString(t) => t,
                _ => return,
            },
            _ => return,
        },
        Ast::Cast { expr, data_type: AstType::Interval { .. }, .. } => match expr.as_mut() {
            Ast::Value(v) => match &mut v.value {
                Value::SingleQuotedString(t) => t,
                _ => return,
            },
            _ => return,
        },
        _ => return,
    };
    if let Some(normal) = normalize_text(text) {
        *text = normal;
    }
}

/// PostgreSQL's length of an interval, in nanoseconds.
fn span(v: IntervalMonthDayNano) -> i128 {
    (i128::from(v.months) * 30 + i128::from(v.days)) * DAY_NANOS + i128::from(v.nanoseconds)
}

/// `iv * factor` as PostgreSQL's `interval_mul`: fractional months carried
/// into days (30 each), fractional days into time, each rounded to the
/// microsecond.
fn multiply(v: IntervalMonthDayNano, factor: f64) -> Option<IntervalMonthDayNano> {
    let round_micros = |x: f64| (x * 1e6).round_ties_even() / 1e6;
    let (month_f, day_f) = (f64::from(v.months) * factor, f64::from(v.days) * factor);
    let (months, mut days) = (month_f.trunc(), day_f.trunc());
    let month_remainder_days = round_micros((month_f - months) * 30.0);
    let mut seconds = round_micros((day_f - days + month_remainder_days - month_remainder_days.trunc()) * 86_400.0);
    if seconds.abs() >= 86_400.0 {
        let whole = (seconds / 86_400.0).trunc();
        days += whole;
        seconds -= whole * 86_400.0;
    }
    days += month_remainder_days.trunc();
    let micros = ((v.nanoseconds / 1000) as f64 * factor + seconds * 1e6).round_ties_even();
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
}

/// `tessera_interval_span(iv)`: an interval's length as PostgreSQL
/// compares it (nanoseconds, a month counted as 30 days).
pub fn span_udf() -> ScalarUDF {
    udf(Kind::Span)
}

fn udf(kind: Kind) -> ScalarUDF {
    let arity = if kind == Kind::Span { 1 } else { 2 };
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
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::Span => DataType::Decimal128(38, 0),
            Kind::Mul => INTERVAL,
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
            Kind::Mul => {
                let factors = datafusion::arrow::compute::cast(&args.args[1].to_array(n)?, &DataType::Float64)?;
                let factors = factors.as_primitive::<Float64Type>();
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    if intervals.is_null(i) || factors.is_null(i) {
                        out.push(None);
                        continue;
                    }
                    let v = multiply(intervals.value(i), factors.value(i)).ok_or_else(|| {
                        DataFusionError::External(Box::new(SqlError::new(
                            code::DATETIME_OVERFLOW,
                            "interval out of range",
                        )))
                    })?;
                    out.push(Some(v));
                }
                Arc::new(IntervalMonthDayNanoArray::from(out))
            }
        };
        crate::values::udf_values::columnar(out, scalar)
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
    fn interval_text_in_arrows_units() {
        assert_eq!(normalize_text("01:00").as_deref(), Some("01 hours 00 minutes 0 seconds"));
        assert_eq!(normalize_text("1 day 02:30:15.5").as_deref(), Some("1 day 02 hours 30 minutes 15.5 seconds"));
        assert_eq!(normalize_text("-01:30").as_deref(), Some("-01 hours -30 minutes -0 seconds"));
        assert_eq!(normalize_text("1.5 weeks").as_deref(), Some("10.5 days"));
        assert_eq!(normalize_text("2 hours 30 minutes ago").as_deref(), Some("-2 hours -30 minutes"));
        assert_eq!(normalize_text("1 day 2 hours"), None);
    }

    #[test]
    fn lengths_and_products_as_postgres_computes_them() {
        assert_eq!(span(IntervalMonthDayNano::new(1, 0, 0)), span(IntervalMonthDayNano::new(0, 30, 0)));
        assert!(
            span(IntervalMonthDayNano::new(0, 1, 0)) > span(IntervalMonthDayNano::new(0, 0, 23 * 3_600_000_000_000))
        );
        let day_and_half = multiply(IntervalMonthDayNano::new(0, 1, 0), 1.5).unwrap();
        assert_eq!(day_and_half, IntervalMonthDayNano::new(0, 1, 12 * 3_600_000_000_000));
        assert_eq!(
            multiply(IntervalMonthDayNano::new(1, 0, 0), 1.0 / 3.0).unwrap(),
            IntervalMonthDayNano::new(0, 10, 0)
        );
    }
}
