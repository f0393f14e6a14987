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
//! PostgreSQL (`'Infinity'::float8 + 1` is Infinity).

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

/// Registers `tessera_float_op`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(float_op());
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
        crate::exact_casts::rewrite_expressions(plan, checked_float_op)
    }
}

fn checked_float_op(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
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

/// A value as an Arrow datum: a scalar stays one value, broadcast by the kernels.
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
