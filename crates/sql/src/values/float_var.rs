//! `var_pop`, `var_samp`, `stddev_pop` and `stddev_samp` of floats with
//! PostgreSQL's answer for infinities and NaN: its running sums become NaN
//! once a non-finite value is seen, so the result is NaN (or NULL where
//! there are too few rows). DataFusion's accumulator, which this wraps,
//! answers 0 for a single `Infinity`. The wrapper counts the non-finite
//! values (in its state, so partial aggregates merge, and retractably, so
//! window frames slide).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type, Int64Type};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::Accumulator;

/// DataFusion's accumulator and the count of non-finite values.
#[derive(Debug)]
pub(crate) struct NonFinite {
    pub(crate) inner: Box<dyn Accumulator>,
    pub(crate) count: i64,
}

/// The extra state field the wrapper adds after the inner one's.
pub(crate) fn state_field(name: &str) -> FieldRef {
    Arc::new(Field::new(format!("{name}[non_finite]"), DataType::Int64, true))
}

fn non_finite(values: &ArrayRef) -> i64 {
    match values.data_type() {
        DataType::Float64 => {
            values.as_primitive::<Float64Type>().iter().flatten().filter(|v| !v.is_finite()).count() as i64
        }
        _ => 0,
    }
}

impl Accumulator for NonFinite {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.count += values.first().map_or(0, non_finite);
        self.inner.update_batch(values)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.count -= values.first().map_or(0, non_finite);
        self.inner.retract_batch(values)
    }

    fn supports_retract_batch(&self) -> bool {
        self.inner.supports_retract_batch()
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let v = self.inner.evaluate()?;
        Ok(match v {
            ScalarValue::Float64(Some(_)) if self.count > 0 => ScalarValue::Float64(Some(f64::NAN)),
            other => other,
        })
    }

    fn size(&self) -> usize {
        self.inner.size() + std::mem::size_of::<i64>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let mut s = self.inner.state()?;
        s.push(ScalarValue::Int64(Some(self.count)));
        Ok(s)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let Some((last, inner)) = states.split_last() else { return Ok(()) };
        let counts = last.as_primitive::<Int64Type>();
        self.count += counts.iter().flatten().sum::<i64>();
        self.inner.merge_batch(inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_non_finite_values() {
        let a: ArrayRef = Arc::new(datafusion::arrow::array::Float64Array::from(vec![1.0, f64::INFINITY, f64::NAN]));
        assert_eq!(non_finite(&a), 2);
    }
}
