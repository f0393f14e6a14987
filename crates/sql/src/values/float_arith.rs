//! Float arithmetic with PostgreSQL's errors.
//!
//! DataFusion computes `x / 0.0` of a float as ±Infinity (or NaN) and lets
//! `1e308 * 10` overflow to Infinity and `1e-300 * 1e-300` underflow to 0;
//! PostgreSQL raises 22012 "division by zero" and 22003 "value out of
//! range: overflow" / "…: underflow", by the checks of its `float.h`: an
//! infinite result from finite operands overflowed, a zero result from
//! non-zero operands underflowed. The analyzer rule [`FloatArithmetic`]
//! runs after type coercion and puts `+`, `-`, `*` and `/` of floats in
//! `tessera_float_op`, which computes with Arrow's kernels and then makes
//! those checks. Infinity and NaN given as operands stay allowed, as in
//! PostgreSQL (`'Infinity'::float8 + 1` is Infinity). `power(x, y)` (and
//! `x ^ y`) of doubles goes there too, with `float8pow`'s errors (2201F
//! for a zero base and negative exponent or a negative base and
//! fractional exponent, 22003 for overflow and underflow).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Datum};
use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, DataFusionError, ExprSchema, Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

use crate::error::{SqlError, code};

/// Registers `tessera_float_op` and the casts.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(float_op());
    ctx.register_udf(float_cast(FloatCast::ToNumeric));
    ctx.register_udf(float_cast(FloatCast::ToFloat4));
}

fn float_op() -> ScalarUDF {
    ScalarUDF::new_from_impl(FloatOp { signature: Signature::any(3, Volatility::Immutable) })
}

/// The analyzer rule (see the module's text).
#[derive(Debug)]
pub struct FloatArithmetic;

impl AnalyzerRule for FloatArithmetic {
    fn name(&self) -> &str {
        "tessera_float_arithmetic"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::values::exact_casts::rewrite_expressions(plan, checked_float_op)
    }
}

fn checked_float_op(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    if let Expr::Cast(c) = &e
        && let Ok(from @ (DataType::Float32 | DataType::Float64)) = c.expr.get_type(schema as &dyn ExprSchema)
    {
        let to = c.field.data_type().clone();
        let kind = match (&from, &to) {
            (_, DataType::Decimal128(..) | DataType::Decimal256(..)) => FloatCast::ToNumeric,
            (DataType::Float64, DataType::Float32) => FloatCast::ToFloat4,
            _ => return Ok(Transformed::no(e)),
        };
        let Expr::Cast(c) = e else { unreachable!() };
        let target = Expr::Literal(ScalarValue::try_from(&to)?, None);
        let call = ScalarFunction::new_udf(Arc::new(float_cast(kind)), vec![*c.expr, target]);
        return Ok(Transformed::yes(Expr::ScalarFunction(call)));
    }
    // `power(x, y)` (and `x ^ y`) of doubles, with PostgreSQL's errors.
    if let Expr::ScalarFunction(f) = &e
        && matches!(f.func.name(), "power" | "pow")
        && f.args.len() == 2
        && f.args.iter().all(|a| matches!(a.get_type(schema as &dyn ExprSchema), Ok(DataType::Float64)))
    {
        let Expr::ScalarFunction(f) = e else { unreachable!("a function") };
        let mut args = vec![Expr::Literal(ScalarValue::Utf8(Some("^".into())), None)];
        args.extend(f.args);
        return Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(float_op()), args))));
    }
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &e else { return Ok(Transformed::no(e)) };
    let symbol = match op {
        Operator::Plus => "+",
        Operator::Minus => "-",
        Operator::Multiply => "*",
        Operator::Divide => "/",
        _ => return Ok(Transformed::no(e)),
    };
    let float = |x: &Expr| matches!(x.get_type(schema as &dyn ExprSchema), Ok(DataType::Float32 | DataType::Float64));
    // After coercion both sides have the same type; a float on one side
    // only is an interval or temporal operation, not ours.
    if !(float(left) && float(right)) {
        return Ok(Transformed::no(e));
    }
    let args = vec![Expr::Literal(ScalarValue::Utf8(Some(symbol.into())), None), (**left).clone(), (**right).clone()];
    Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(float_op()), args))))
}

/// `tessera_float_op(op, a, b)`: `a op b` of two floats of one type, with
/// PostgreSQL's errors.
#[derive(Debug, PartialEq, Eq, Hash)]
struct FloatOp {
    signature: Signature,
}

impl ScalarUDFImpl for FloatOp {
    fn name(&self) -> &str {
        "tessera_float_op"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args.get(1).cloned().unwrap_or(DataType::Float64))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let ColumnarValue::Scalar(ScalarValue::Utf8(Some(op))) = &args.args[0] else {
            return Err(DataFusionError::Internal("tessera_float_op: the operator must be a constant".into()));
        };
        let (a, b) = (&args.args[1], &args.args[2]);
        let both_scalar = matches!((a, b), (ColumnarValue::Scalar(_), ColumnarValue::Scalar(_)));
        if op == "^" {
            let n = if both_scalar { 1 } else { args.number_rows };
            let (xs, ys) = (a.to_array(n)?, b.to_array(n)?);
            let (xs, ys) = (xs.as_primitive::<Float64Type>(), ys.as_primitive::<Float64Type>());
            let out = (0..n)
                .map(|i| match (xs.is_valid(i), ys.is_valid(i)) {
                    (true, true) => float_pow(xs.value(i), ys.value(i)).map(Some),
                    _ => Ok(None),
                })
                .collect::<Result<datafusion::arrow::array::Float64Array, SqlError>>()
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            let out: ArrayRef = Arc::new(out);
            return Ok(if both_scalar {
                ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
            } else {
                ColumnarValue::Array(out)
            });
        }
        let (da, db) = (datum(a)?, datum(b)?);
        let (da, db): (&dyn Datum, &dyn Datum) = (da.as_ref(), db.as_ref());
        let result = match op.as_str() {
            "+" => numeric::add(da, db)?,
            "-" => numeric::sub(da, db)?,
            "*" => numeric::mul(da, db)?,
            _ => numeric::div(da, db)?,
        };
        check(op, a, b, &result).map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(if both_scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&result, 0)?)
        } else {
            ColumnarValue::Array(result)
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum FloatCast {
    /// `tessera_float_to_numeric(x, target)`: PostgreSQL reads a float as
    /// its text of 15 significant digits (6 for a `real`), so
    /// `56.7::float4::numeric` is 56.7, not 56.7000007629.
    ToNumeric,
    /// `tessera_float8_to_float4(x, target)`: 22003 for a value out of
    /// `real`'s range, where Arrow gives Infinity or 0.
    ToFloat4,
}

fn float_cast(kind: FloatCast) -> ScalarUDF {
    ScalarUDF::new_from_impl(FloatCastFn { kind, signature: Signature::any(2, Volatility::Immutable) })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct FloatCastFn {
    kind: FloatCast,
    signature: Signature,
}

impl ScalarUDFImpl for FloatCastFn {
    fn name(&self) -> &str {
        match self.kind {
            FloatCast::ToNumeric => "tessera_float_to_numeric",
            FloatCast::ToFloat4 => "tessera_float8_to_float4",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[1].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let target = args.args[1].data_type();
        let out = float_to(&values, &target).map_err(|e| DataFusionError::External(Box::new(e)))?;
        crate::values::udf_values::columnar(out, scalar)
    }
}

/// A float array as `target` (a decimal, or `real` from `double`), as
/// PostgreSQL casts it; other targets are Arrow's cast.
pub fn float_to(values: &ArrayRef, target: &DataType) -> Result<ArrayRef, SqlError> {
    let single = values.data_type() == &DataType::Float32;
    let floats = datafusion::arrow::compute::cast(values, &DataType::Float64).map_err(SqlError::from)?;
    let floats = floats.as_primitive::<Float64Type>();
    match target {
        DataType::Decimal128(p, s) => {
            let mut out = Vec::with_capacity(floats.len());
            for v in floats.iter() {
                out.push(match v {
                    None => None,
                    Some(v) if v.is_nan() => Some(crate::values::numeric_special::Special::NaN.i128()),
                    Some(v) if !v.is_finite() => return Err(crate::values::numeric_special::infinite_overflow(*p, *s)),
                    Some(v) => Some(
                        float_as_decimal(v, if single { 6 } else { 15 }, *p, *s)
                            .ok_or_else(|| SqlError::new(code::OUT_OF_RANGE, "numeric field overflow"))?,
                    ),
                });
            }
            let out = datafusion::arrow::array::Decimal128Array::from(out)
                .with_precision_and_scale(*p, *s)
                .map_err(SqlError::from)?;
            Ok(Arc::new(out))
        }
        DataType::Decimal256(p, s) => {
            crate::values::numeric_ops::to_decimal256(values, *p, *s, crate::values::numeric::is_unconstrained(target))
        }
        DataType::Float32 if !single => {
            for v in floats.iter().flatten() {
                let f = v as f32;
                if f.is_infinite() && v.is_finite() {
                    return Err(SqlError::new(code::OUT_OF_RANGE, "value out of range: overflow"));
                }
                if f == 0.0 && v != 0.0 {
                    return Err(SqlError::new(code::OUT_OF_RANGE, "value out of range: underflow"));
                }
            }
            datafusion::arrow::compute::cast(values, target).map_err(SqlError::from)
        }
        _ => datafusion::arrow::compute::cast(values, target).map_err(SqlError::from),
    }
}

/// `v` at `digits` significant digits, as a decimal of precision `p` and
/// scale `s` rounded half away from zero; None if it does not fit.
fn float_as_decimal(v: f64, digits: usize, p: u8, s: i8) -> Option<i128> {
    // `d.ddd…e±x`: the mantissa's digits and the exponent.
    let text = format!("{:.*e}", digits - 1, v.abs());
    let (mantissa, exponent) = text.split_once('e')?;
    let exponent: i32 = exponent.parse().ok()?;
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    // The value is 0.digits × 10^(exponent + 1); at scale s, the integer
    // is digits × 10^(exponent + 1 + s - len).
    let shift = exponent + 1 + i32::from(s) - digits.len() as i32;
    let mut n: i128 = digits.parse().ok()?;
    if shift >= 0 {
        n = n.checked_mul(10i128.checked_pow(shift as u32)?)?;
    } else {
        let unit = 10i128.checked_pow(shift.unsigned_abs()).unwrap_or(i128::MAX);
        let (q, r) = (n / unit, n % unit);
        n = if r * 2 >= unit { q + 1 } else { q };
    }
    if n >= 10i128.pow(u32::from(p)) {
        return None;
    }
    Some(if v < 0.0 { -n } else { n })
}

/// A value as an Arrow datum: a scalar stays one value, broadcast by the kernels.
/// PostgreSQL's `float8pow`: its errors for a zero or negative base, NaN
/// and the infinities as it treats them, overflow and underflow.
fn float_pow(x: f64, y: f64) -> Result<f64, SqlError> {
    let undefined = |m: &str| SqlError::new("2201F", m.to_string());
    if x.is_nan() {
        return Ok(if y == 0.0 { 1.0 } else { f64::NAN });
    }
    if y.is_nan() {
        return Ok(if x == 1.0 { 1.0 } else { f64::NAN });
    }
    if x == 0.0 && y < 0.0 {
        return Err(undefined("zero raised to a negative power is undefined"));
    }
    if x < 0.0 && y.floor() != y {
        return Err(undefined("a negative number raised to a non-integer power yields a complex result"));
    }
    let r = x.powf(y);
    if x.is_finite() && y.is_finite() {
        if r.is_infinite() {
            return Err(SqlError::new(code::OUT_OF_RANGE, "value out of range: overflow"));
        }
        if r == 0.0 && x != 0.0 {
            return Err(SqlError::new(code::OUT_OF_RANGE, "value out of range: underflow"));
        }
    }
    Ok(r)
}

fn datum(v: &ColumnarValue) -> Result<Box<dyn Datum>> {
    Ok(match v {
        ColumnarValue::Array(a) => Box::new(a.clone()),
        ColumnarValue::Scalar(s) => Box::new(s.to_scalar()?),
    })
}

/// PostgreSQL's checks of a float operation's result (its `float.h`).
fn check(op: &str, a: &ColumnarValue, b: &ColumnarValue, result: &ArrayRef) -> Result<(), SqlError> {
    let as_f64 = |v: &ColumnarValue| -> Result<ArrayRef, SqlError> {
        let array = v.to_array(1).map_err(SqlError::from)?;
        datafusion::arrow::compute::cast(&array, &DataType::Float64).map_err(SqlError::from)
    };
    let (a, b) = (as_f64(a)?, as_f64(b)?);
    let r = datafusion::arrow::compute::cast(result, &DataType::Float64).map_err(SqlError::from)?;
    let (a, b, r) = (a.as_primitive::<Float64Type>(), b.as_primitive::<Float64Type>(), r.as_primitive::<Float64Type>());
    // A scalar operand is one value for every row.
    let at = |x: &datafusion::arrow::array::Float64Array, i: usize| {
        let i = if x.len() == 1 { 0 } else { i };
        x.is_valid(i).then(|| x.value(i))
    };
    let overflow = || SqlError::new(code::OUT_OF_RANGE, "value out of range: overflow");
    let underflow = || SqlError::new(code::OUT_OF_RANGE, "value out of range: underflow");
    for i in 0..r.len() {
        let (Some(x), Some(y), Some(z)) = (at(a, i), at(b, i), at(r, i)) else { continue };
        match op {
            "/" => {
                if y == 0.0 && !x.is_nan() {
                    return Err(SqlError::new(code::DIVISION_BY_ZERO, "division by zero"));
                }
                if z.is_infinite() && !x.is_infinite() {
                    return Err(overflow());
                }
                if z == 0.0 && x != 0.0 && !y.is_infinite() {
                    return Err(underflow());
                }
            }
            "*" => {
                if z.is_infinite() && !x.is_infinite() && !y.is_infinite() {
                    return Err(overflow());
                }
                if z == 0.0 && x != 0.0 && y != 0.0 {
                    return Err(underflow());
                }
            }
            _ => {
                if z.is_infinite() && !x.is_infinite() && !y.is_infinite() {
                    return Err(overflow());
                }
            }
        }
    }
    Ok(())
}

/// Reads `text` as PostgreSQL's float input does: decimal or exponent
/// notation, `Infinity`/`-Infinity`/`NaN` in any case, surrounding blanks
/// allowed; a finite value too large, or too small to be told from zero,
/// is out of range.
pub fn parse_float(text: &str, single: bool) -> std::result::Result<f64, SqlError> {
    let type_name = if single { "real" } else { "double precision" };
    let t = text.trim();
    let invalid =
        || SqlError::new(code::INVALID_TEXT, format!("invalid input syntax for type {type_name}: \"{text}\""));
    let special = match t.to_ascii_lowercase().as_str() {
        "infinity" | "+infinity" | "inf" | "+inf" => Some(f64::INFINITY),
        "-infinity" | "-inf" => Some(f64::NEG_INFINITY),
        "nan" => Some(f64::NAN),
        _ => None,
    };
    if let Some(v) = special {
        return Ok(v);
    }
    if !t.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')) {
        return Err(invalid());
    }
    // A real is read as one (as strtof reads it): through a double, the
    // value would be rounded twice and could miss by its last bit.
    let v: f64 =
        if single { f64::from(t.parse::<f32>().map_err(|_| invalid())?) } else { t.parse().map_err(|_| invalid())? };
    let mantissa = t.split(['e', 'E']).next().unwrap_or("");
    let nonzero = mantissa.bytes().any(|b| matches!(b, b'1'..=b'9'));
    if v.is_infinite() || (nonzero && v == 0.0) {
        return Err(SqlError::new(code::OUT_OF_RANGE, format!("\"{text}\" is out of range for type {type_name}")));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Float64Array;

    fn run(op: &str, a: f64, b: f64) -> Result<f64, SqlError> {
        let (a, b) = (
            ColumnarValue::Array(Arc::new(Float64Array::from(vec![a]))),
            ColumnarValue::Scalar(ScalarValue::Float64(Some(b))),
        );
        let r = match op {
            "+" => numeric::add(datum(&a).unwrap().as_ref(), datum(&b).unwrap().as_ref()).unwrap(),
            "*" => numeric::mul(datum(&a).unwrap().as_ref(), datum(&b).unwrap().as_ref()).unwrap(),
            _ => numeric::div(datum(&a).unwrap().as_ref(), datum(&b).unwrap().as_ref()).unwrap(),
        };
        check(op, &a, &b, &r)?;
        Ok(r.as_primitive::<Float64Type>().value(0))
    }

    #[test]
    fn floats_become_numerics_through_their_significant_digits() {
        assert_eq!(float_as_decimal(56.7f32 as f64, 6, 38, 10), Some(567_000_000_000));
        assert_eq!(float_as_decimal(0.1 + 0.2, 15, 38, 2), Some(30));
        assert_eq!(float_as_decimal(-2.5, 15, 10, 0), Some(-3));
        assert_eq!(float_as_decimal(1e-5, 15, 10, 3), Some(0));
        assert_eq!(float_as_decimal(1e20, 15, 10, 0), None);
    }

    #[test]
    fn float_errors_are_postgres_errors() {
        assert_eq!(run("/", 1.0, 0.0).unwrap_err().code, code::DIVISION_BY_ZERO);
        assert_eq!(run("/", 0.0, 0.0).unwrap_err().code, code::DIVISION_BY_ZERO);
        assert!(run("/", f64::NAN, 0.0).unwrap().is_nan());
        assert_eq!(run("*", 1e308, 10.0).unwrap_err().message, "value out of range: overflow");
        assert_eq!(run("*", 1e-300, 1e-300).unwrap_err().message, "value out of range: underflow");
        assert_eq!(run("+", f64::INFINITY, 1.0).unwrap(), f64::INFINITY);
        assert_eq!(run("/", 1.0, f64::INFINITY).unwrap(), 0.0);
        assert_eq!(run("/", 7.0, 2.0).unwrap(), 3.5);
    }
}
