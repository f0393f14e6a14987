//! `sum(real)` is `real`, added in single precision, as in PostgreSQL.
//!
//! DataFusion sums `Float32` values as `Float64`, so `sum(1.1::real)`
//! prints `1.100000023841858` where PostgreSQL prints `1.1` (its `float4pl`
//! adds in single precision and the result is `real`). Tessera's `sum`
//! ([`Sum`]) is DataFusion's for every other type; for `real` it adds in
//! `f32`, raising 22003 when finite values overflow to infinity.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float32Type, Float64Type};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, GroupsAccumulator, Signature};

use crate::error::{SqlError, code};
use crate::values::frame_recompute::FrameRecompute;

/// Registers the `sum` that keeps `real` single precision.
pub fn register(ctx: &SessionContext) {
    let signature = Signature::user_defined(datafusion::logical_expr::Volatility::Immutable);
    ctx.register_udaf(AggregateUDF::new_from_impl(Sum {
        inner: datafusion::functions_aggregate::sum::sum_udaf(),
        signature,
    }));
}

/// DataFusion's `sum`, except over `real` (see the module's text).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Sum {
    inner: Arc<AggregateUDF>,
    /// Coercion is ours: DataFusion's signature widens `real` to `double`.
    signature: Signature,
}

fn is_real(fields: &[FieldRef]) -> bool {
    fields.first().is_some_and(|f| f.data_type() == &DataType::Float32)
}

impl AggregateUDFImpl for Sum {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        match args {
            [DataType::Float32] => Ok(vec![DataType::Float32]),
            _ => {
                let fields: Vec<FieldRef> = args.iter().map(|t| Arc::new(Field::new("arg", t.clone(), true))).collect();
                let coerced =
                    datafusion::logical_expr::type_coercion::functions::fields_with_udf(&fields, &*self.inner)?;
                Ok(coerced.iter().map(|f| f.data_type().clone()).collect())
            }
        }
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args {
            [DataType::Float32] => Ok(DataType::Float32),
            _ => self.inner.return_type(args),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        if is_real(args.input_fields) {
            return Ok(vec![Arc::new(Field::new(format!("{}[sum]", args.name), DataType::Float32, true))]);
        }
        self.inner.inner().state_fields(args)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if is_real(args.expr_fields) && !args.is_distinct {
            return Ok(Box::new(RealSum { sum: None }));
        }
        self.inner.accumulator(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        !is_real(args.expr_fields) && self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        self.inner.create_groups_accumulator(args)
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        // PostgreSQL recomputes a float sum per frame (frame_recompute).
        match args.expr_fields.first().map(|f| f.data_type()) {
            Some(DataType::Float32) => Ok(Box::new(FrameRecompute::new(Box::new(|| Box::new(RealSum { sum: None }))))),
            Some(DataType::Float64) => {
                Ok(Box::new(FrameRecompute::new(Box::new(|| Box::new(DoubleSum { sum: None })))))
            }
            _ => self.inner.create_sliding_accumulator(args),
        }
    }

    fn reverse_expr(&self) -> datafusion::logical_expr::ReversedUDAF {
        self.inner.inner().reverse_expr()
    }
}

/// `before + v` as `float4pl`/`float8pl` add: 22003 when two finite values
/// overflow to infinity.
fn add_checked<T: Copy + std::ops::Add<Output = T>>(before: T, v: T, is_finite: fn(T) -> bool) -> Result<T> {
    let after = before + v;
    if !is_finite(after) && is_finite(before) && is_finite(v) {
        return Err(DataFusionError::External(Box::new(SqlError::new(
            code::OUT_OF_RANGE,
            "value out of range: overflow",
        ))));
    }
    Ok(after)
}

/// A running single-precision sum (None until a value arrives).
#[derive(Debug)]
struct RealSum {
    sum: Option<f32>,
}

impl RealSum {
    fn add(&mut self, values: &ArrayRef) -> Result<()> {
        for v in values.as_primitive::<Float32Type>().iter().flatten() {
            self.sum = Some(add_checked(self.sum.unwrap_or(0.0), v, f32::is_finite)?);
        }
        Ok(())
    }
}

impl Accumulator for RealSum {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[0])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Float32(self.sum))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Float32(self.sum)])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.add(&states[0])
    }
}

/// `float8pl` run over a frame: a double-precision sum, 22003 when finite
/// values overflow to infinity.
#[derive(Debug)]
struct DoubleSum {
    sum: Option<f64>,
}

impl Accumulator for DoubleSum {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for v in values[0].as_primitive::<Float64Type>().iter().flatten() {
            self.sum = Some(add_checked(self.sum.unwrap_or(0.0), v, f64::is_finite)?);
        }
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Float64(self.sum))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.evaluate()?])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Float32Array;

    #[test]
    fn adds_in_single_precision_and_refuses_overflow() {
        let mut s = RealSum { sum: None };
        assert_eq!(s.evaluate().unwrap(), ScalarValue::Float32(None));
        s.update_batch(&[Arc::new(Float32Array::from(vec![Some(1.1f32), None, Some(2.2)]))]).unwrap();
        assert_eq!(s.evaluate().unwrap(), ScalarValue::Float32(Some(1.1f32 + 2.2f32)));
        let mut big = RealSum { sum: None };
        let err = big.update_batch(&[Arc::new(Float32Array::from(vec![f32::MAX, f32::MAX]))]).unwrap_err();
        assert!(err.to_string().contains("overflow"), "{err}");
    }
}
