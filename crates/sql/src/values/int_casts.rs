//! Numbers made integers as PostgreSQL makes them, and `round` of a float.
//!
//! Arrow's cast from a decimal or a float to an integer truncates:
//! `3.7::int4` is 3, `(-2.5)::int4` is -2, `3.5::float8::int8` is 3.
//! PostgreSQL rounds, a numeric half away from zero (4, -3) and a float
//! to the nearest even integer (`rint`: 2.5 → 2, 3.5 → 4), and raises
//! 22003 when the result does not fit (NaN and infinities included). A
//! truncated value is a silent wrong answer, so every such cast becomes
//! `tessera_to_int2`/`…int4`/`…int8`, which computes PostgreSQL's
//! result: the analyzer rule [`IntegerCasts`] rewrites casts in queries
//! (before the simplifier folds constant ones with Arrow's kernel), and
//! `dml::cast_to` calls [`round_to_integer`] when a value is stored in an
//! integer column.
//!
//! `round(x)` of a float rounds half to even too (DataFusion's rounds half
//! away from zero); `round` of a numeric, and with a number of places, is
//! DataFusion's.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int64Array};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Float64Type};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, DataFusionError, ExprSchema, Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::optimizer::AnalyzerRule;

use crate::error::{SqlError, code};

/// Registers `tessera_to_int2/4/8` and the `round` that rounds floats half
/// to even (overriding DataFusion's).
pub fn register(ctx: &SessionContext) {
    for target in [DataType::Int16, DataType::Int32, DataType::Int64] {
        ctx.register_udf(to_int(target));
    }
    ctx.register_udf(ScalarUDF::new_from_impl(Round { inner: datafusion::functions::math::round() }));
}

fn to_int(target: DataType) -> ScalarUDF {
    ScalarUDF::new_from_impl(ToInt { target, signature: Signature::any(1, Volatility::Immutable) })
}

/// PostgreSQL's name of an integer type, for its out-of-range message.
fn type_name(target: &DataType) -> &'static str {
    match target {
        DataType::Int16 => "smallint",
        DataType::Int32 => "integer",
        _ => "bigint",
    }
}

/// Whether a cast from `from` to `to` must round (see the module's text).
pub fn rounds(from: &DataType, to: &DataType) -> bool {
    matches!(to, DataType::Int16 | DataType::Int32 | DataType::Int64)
        && matches!(
            from,
            DataType::Decimal128(..)
                | DataType::Decimal256(..)
                | DataType::Float16
                | DataType::Float32
                | DataType::Float64
        )
}

/// `values` (a decimal or float array) as the integer type `target`,
/// rounded as PostgreSQL rounds; 22003 for a value out of its range.
pub fn round_to_integer(values: &ArrayRef, target: &DataType) -> std::result::Result<ArrayRef, SqlError> {
    let out_of_range = || SqlError::new(code::OUT_OF_RANGE, format!("{} out of range", type_name(target)));
    let (min, max) = match target {
        DataType::Int16 => (i16::MIN as i128, i16::MAX as i128),
        DataType::Int32 => (i32::MIN as i128, i32::MAX as i128),
        _ => (i64::MIN as i128, i64::MAX as i128),
    };
    if let Some(special) = (0..values.len()).find_map(|i| crate::values::numeric_special::Special::at(values, i)) {
        let what = if special == crate::values::numeric_special::Special::NaN { "NaN" } else { "infinity" };
        // PostgreSQL's SQLSTATE for it is 0A000.
        return Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            format!("cannot convert {what} to {}", type_name(target)),
        ));
    }
    let rounded: Vec<Option<i64>> = match values.data_type() {
        DataType::Decimal128(_, scale) => {
            let unit = 10i128.checked_pow(u32::from(*scale as u8)).ok_or_else(out_of_range)?;
            let mut out = Vec::with_capacity(values.len());
            for v in values.as_primitive::<Decimal128Type>().iter() {
                out.push(match v {
                    None => None,
                    Some(v) => {
                        let r = half_away_from_zero(v, unit);
                        if r < min || r > max {
                            return Err(out_of_range());
                        }
                        Some(r as i64)
                    }
                });
            }
            out
        }
        DataType::Decimal256(_, scale) => {
            let mut out = Vec::with_capacity(values.len());
            for v in values.as_primitive::<datafusion::arrow::datatypes::Decimal256Type>().iter() {
                out.push(match v {
                    None => None,
                    Some(v) => {
                        let r = crate::values::numeric::round_to(v, *scale, 0)
                            .and_then(|r| r.to_i128())
                            .filter(|r| (min..=max).contains(r))
                            .ok_or_else(out_of_range)?;
                        Some(r as i64)
                    }
                });
            }
            out
        }
        _ => {
            let floats = datafusion::arrow::compute::cast(values, &DataType::Float64).map_err(SqlError::from)?;
            let mut out = Vec::with_capacity(values.len());
            for v in floats.as_primitive::<Float64Type>().iter() {
                out.push(match v {
                    None => None,
                    Some(v) => {
                        let r = v.round_ties_even();
                        // NaN fails both comparisons, and so is out of range too.
                        // The type's range is [min, -min) (exact as floats).
                        if !(r >= min as f64 && r < -(min as f64)) {
                            return Err(out_of_range());
                        }
                        Some(r as i64)
                    }
                });
            }
            out
        }
    };
    let wide: ArrayRef = Arc::new(Int64Array::from(rounded));
    // In range by the checks above, so the narrowing cast is exact.
    datafusion::arrow::compute::cast(&wide, target).map_err(SqlError::from)
}

/// `v / unit` rounded half away from zero, as PostgreSQL rounds a numeric.
fn half_away_from_zero(v: i128, unit: i128) -> i128 {
    let (q, r) = (v / unit, v % unit);
    if r.abs() * 2 >= unit { q + v.signum() } else { q }
}

/// `tessera_to_int2(x)`, `…int4`, `…int8`: `x` cast as PostgreSQL casts it.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ToInt {
    target: DataType,
    signature: Signature,
}

impl ScalarUDFImpl for ToInt {
    fn name(&self) -> &str {
        match self.target {
            DataType::Int16 => "tessera_to_int2",
            DataType::Int32 => "tessera_to_int4",
            _ => "tessera_to_int8",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(self.target.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let out = if rounds(values.data_type(), &self.target) {
            round_to_integer(&values, &self.target).map_err(|e| DataFusionError::External(Box::new(e)))?
        } else {
            datafusion::arrow::compute::cast(&values, &self.target)?
        };
        crate::values::udf_values::columnar(out, scalar)
    }
}

/// DataFusion's `round`, except that a float rounded to an integer value
/// rounds half to even, as PostgreSQL's `round(double precision)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Round {
    inner: Arc<ScalarUDF>,
}

impl ScalarUDFImpl for Round {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        self.inner.return_type(args)
    }

    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if args.args.len() != 1 || args.args[0].data_type() != DataType::Float64 {
            return self.inner.invoke_with_args(args);
        }
        Ok(match &args.args[0] {
            ColumnarValue::Scalar(ScalarValue::Float64(v)) => {
                ColumnarValue::Scalar(ScalarValue::Float64(v.map(f64::round_ties_even)))
            }
            ColumnarValue::Scalar(_) => return self.inner.invoke_with_args(args),
            ColumnarValue::Array(a) => {
                let out: Float64Array = a.as_primitive::<Float64Type>().unary(f64::round_ties_even);
                ColumnarValue::Array(Arc::new(out))
            }
        })
    }
}

/// The analyzer rule (see the module's text).
#[derive(Debug)]
pub struct IntegerCasts;

impl AnalyzerRule for IntegerCasts {
    fn name(&self) -> &str {
        "tessera_integer_casts"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::values::exact_casts::rewrite_expressions(plan, rounding_cast)
    }
}

/// A cast to an integer type that must round, as `tessera_to_int…`.
fn rounding_cast(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::Cast(cast) = &e else { return Ok(Transformed::no(e)) };
    let to = cast.field.data_type().clone();
    let Ok(from) = cast.expr.get_type(schema as &dyn ExprSchema) else { return Ok(Transformed::no(e)) };
    if !rounds(&from, &to) {
        return Ok(Transformed::no(e));
    }
    let Expr::Cast(cast) = e else { unreachable!() };
    Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(to_int(to)), vec![*cast.expr]))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Decimal128Array;
    use datafusion::arrow::datatypes::Int64Type;

    fn ints(a: &ArrayRef) -> Vec<Option<i64>> {
        let a = datafusion::arrow::compute::cast(a, &DataType::Int64).unwrap();
        a.as_primitive::<Int64Type>().iter().collect()
    }

    #[test]
    fn numerics_round_half_away_from_zero() {
        let d: ArrayRef = Arc::new(
            Decimal128Array::from(vec![Some(37), Some(25), Some(-25), Some(-24), None])
                .with_precision_and_scale(5, 1)
                .unwrap(),
        );
        assert_eq!(
            ints(&round_to_integer(&d, &DataType::Int32).unwrap()),
            vec![Some(4), Some(3), Some(-3), Some(-2), None]
        );
    }

    #[test]
    fn floats_round_half_to_even_and_refuse_what_does_not_fit() {
        let f: ArrayRef = Arc::new(Float64Array::from(vec![2.5, 3.5, -2.5, 0.4]));
        assert_eq!(ints(&round_to_integer(&f, &DataType::Int64).unwrap()), vec![Some(2), Some(4), Some(-2), Some(0)]);
        for bad in [f64::NAN, f64::INFINITY, 2147483647.5, -2147483649.0] {
            let a: ArrayRef = Arc::new(Float64Array::from(vec![bad]));
            let err = round_to_integer(&a, &DataType::Int32).unwrap_err();
            assert_eq!(err.code, code::OUT_OF_RANGE, "{bad}");
        }
        let edge: ArrayRef = Arc::new(Float64Array::from(vec![-2147483648.0, 2147483647.0]));
        assert_eq!(
            ints(&round_to_integer(&edge, &DataType::Int32).unwrap()),
            vec![Some(-2147483648), Some(2147483647)]
        );
        let big: ArrayRef = Arc::new(Float64Array::from(vec![9.3e18]));
        assert!(round_to_integer(&big, &DataType::Int64).is_err());
    }
}
