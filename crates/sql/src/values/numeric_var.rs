//! `var_pop`, `var_samp` (`variance`), `stddev_pop` and `stddev_samp`
//! (`stddev`) of integers and numerics, as PostgreSQL computes them: in
//! numeric, exactly.
//!
//! DataFusion computes these in double precision, so the variance of the
//! integers 600, 470, 170 is 11266.666666666662 where PostgreSQL answers
//! 11266.666666666667: wrong last digits, silently. PostgreSQL keeps the
//! count N, the sum and the sum of squares exactly and ends with
//! `numeric_stddev_internal`: (N·Σx² − (Σx)²) / (N·(N−1)) — or N·N for the
//! population — divided at the places `select_div_scale` picks for those
//! two values, and for a standard deviation the square root of that at
//! the same places. This module's aggregates do the same, in 256-bit
//! integers, with a retractable state (window frames slide). Float
//! arguments stay double precision, as in PostgreSQL, with its recurrence
//! (`float_var`), and a sliding frame of them is recomputed
//! (`frame_recompute`).
//!
//! The result is an unconstrained numeric, which prints without trailing
//! zeros (`numeric.rs`).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Decimal256Type, Field, FieldRef, Int64Type, i256};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility};

use crate::error::{SqlError, code};
use crate::values::float_var;
use crate::values::frame_recompute::FrameRecompute;
use crate::values::numeric::{self, MAX_DIGITS, UNCONSTRAINED_SCALE};

/// The type integers are accumulated as (any 64-bit integer fits).
const INTEGER_AS_DECIMAL: DataType = DataType::Decimal128(20, 0);

/// Registers the four aggregates (under DataFusion's names and aliases,
/// and PostgreSQL's `variance`).
pub fn register(ctx: &SessionContext) {
    use datafusion::functions_aggregate::{stddev, variance};
    let kinds = [
        (variance::var_pop_udaf(), Kind { sample: false, root: false }, vec![]),
        (variance::var_samp_udaf(), Kind { sample: true, root: false }, vec!["variance".to_string()]),
        (stddev::stddev_pop_udaf(), Kind { sample: false, root: true }, vec![]),
        (stddev::stddev_udaf(), Kind { sample: true, root: true }, vec![]),
    ];
    for (inner, kind, extra) in kinds {
        let mut aliases = inner.aliases().to_vec();
        aliases.extend(extra);
        ctx.register_udaf(AggregateUDF::new_from_impl(ExactVariance {
            inner,
            kind,
            aliases,
            signature: Signature::user_defined(Volatility::Immutable),
        }));
    }
}

/// Which of the four: sample or population, variance or its root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Kind {
    sample: bool,
    root: bool,
}

impl Kind {
    fn statistic(self) -> float_var::Statistic {
        float_var::Statistic::Spread { sample: self.sample, root: self.root }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ExactVariance {
    inner: Arc<AggregateUDF>,
    kind: Kind,
    aliases: Vec<String>,
    signature: Signature,
}

fn decimal_scale(t: &DataType) -> Option<i8> {
    match t {
        DataType::Decimal128(_, s) | DataType::Decimal256(_, s) => Some(*s),
        _ => None,
    }
}

fn external(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

impl AggregateUDFImpl for ExactVariance {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        let [t] = args else {
            return Err(external(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("{} takes one argument", self.name()),
            )));
        };
        Ok(vec![match t {
            t if t.is_integer() => INTEGER_AS_DECIMAL,
            DataType::Decimal128(..) | DataType::Decimal256(..) => t.clone(),
            t if t.is_numeric() || t.is_null() => DataType::Float64,
            other => {
                return Err(external(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {}({other}) does not exist", self.name()),
                )));
            }
        }])
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args.first().and_then(decimal_scale) {
            Some(_) => Ok(numeric::UNCONSTRAINED),
            None => self.inner.return_type(args),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        match args.input_fields.first().and_then(|f| decimal_scale(f.data_type())) {
            Some(s) if !args.is_distinct => Ok(vec![
                Arc::new(Field::new(format!("{}[n]", args.name), DataType::Int64, true)),
                Arc::new(Field::new(format!("{}[sum]", args.name), DataType::Decimal256(MAX_DIGITS, s), true)),
                Arc::new(Field::new(format!("{}[sumsq]", args.name), DataType::Decimal256(MAX_DIGITS, 2 * s), true)),
                Arc::new(Field::new(format!("{}[dscale]", args.name), DataType::Int64, true)),
            ]),
            Some(_) => self.inner.inner().state_fields(args),
            None => Ok(float_var::state_fields(args.name)),
        }
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let input = args.expr_fields.first().map(|f| f.data_type().clone());
        match input.as_ref().and_then(decimal_scale) {
            Some(_) if args.is_distinct => {
                Err(external(SqlError::unsupported(format!("{}(DISTINCT …) of an integer or numeric", self.name()))))
            }
            Some(scale) => Ok(Box::new(Moments {
                kind: self.kind,
                unconstrained: input.as_ref().is_some_and(numeric::is_unconstrained),
                scale,
                n: 0,
                sum: i256::ZERO,
                sumsq: i256::ZERO,
                dscale: 0,
            })),
            // Floats: PostgreSQL's own recurrence (float_var).
            None => Ok(Box::new(float_var::Moments::new(self.kind.statistic()))),
        }
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        match args.expr_fields.first().and_then(|f| decimal_scale(f.data_type())) {
            // Exact sums retract exactly.
            Some(_) => self.accumulator(args),
            None => {
                let statistic = self.kind.statistic();
                Ok(Box::new(FrameRecompute::new(Box::new(move || Box::new(float_var::Moments::new(statistic))))))
            }
        }
    }
}

/// The count, sum and sum of squares of the values seen (at scales
/// `scale` and twice it), and the most places a value showed.
#[derive(Debug)]
struct Moments {
    kind: Kind,
    unconstrained: bool,
    scale: i8,
    n: i64,
    sum: i256,
    sumsq: i256,
    dscale: i8,
}

fn too_wide() -> DataFusionError {
    external(SqlError::unsupported("a variance whose sums need more digits than Tessera's numeric holds"))
}

impl Moments {
    fn add(&mut self, values: &ArrayRef, sign: i64) -> Result<()> {
        let wide = datafusion::arrow::compute::cast(values, &DataType::Decimal256(MAX_DIGITS, self.scale))?;
        for v in wide.as_primitive::<Decimal256Type>().iter().flatten() {
            let square = v.checked_mul(v).ok_or_else(too_wide)?;
            if sign > 0 {
                self.sum = self.sum.checked_add(v).ok_or_else(too_wide)?;
                self.sumsq = self.sumsq.checked_add(square).ok_or_else(too_wide)?;
                let shown = if self.unconstrained { numeric::trimmed_scale(v, self.scale) } else { self.scale };
                self.dscale = self.dscale.max(shown);
            } else {
                self.sum = self.sum.checked_sub(v).ok_or_else(too_wide)?;
                self.sumsq = self.sumsq.checked_sub(square).ok_or_else(too_wide)?;
            }
            self.n += sign;
        }
        Ok(())
    }

    /// PostgreSQL's `numeric_stddev_internal` (see the module's text).
    fn result(&self) -> Result<Option<i256>> {
        if self.n == 0 || (self.kind.sample && self.n == 1) {
            return Ok(None);
        }
        let n = i256::from_i128(i128::from(self.n));
        let s2 = 2 * self.scale;
        let numerator = n
            .checked_mul(self.sumsq)
            .and_then(|a| self.sum.checked_mul(self.sum).and_then(|b| a.checked_sub(b)))
            .ok_or_else(too_wide)?;
        if numerator <= i256::ZERO {
            return Ok(Some(i256::ZERO));
        }
        let denominator = if self.kind.sample { n * (n - i256::ONE) } else { n * n };
        let rscale = numeric::quotient_scale(numerator, s2, 2 * self.dscale, denominator, 0, 0);
        if rscale > i32::from(UNCONSTRAINED_SCALE) {
            return Err(too_wide());
        }
        let mut value = numeric::divide(numerator, s2, denominator, 0, rscale).ok_or_else(too_wide)?;
        if self.kind.root {
            value = numeric::sqrt(value, rscale as i8, rscale).ok_or_else(too_wide)?;
        }
        numeric::rescale(value, rscale as i8, UNCONSTRAINED_SCALE).map(Some).ok_or_else(too_wide)
    }
}

impl Accumulator for Moments {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[0], 1)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[0], -1)
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Decimal256(self.result()?, MAX_DIGITS, UNCONSTRAINED_SCALE))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::Int64(Some(self.n)),
            ScalarValue::Decimal256(Some(self.sum), MAX_DIGITS, self.scale),
            ScalarValue::Decimal256(Some(self.sumsq), MAX_DIGITS, 2 * self.scale),
            ScalarValue::Int64(Some(i64::from(self.dscale))),
        ])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (n, sum, sumsq, dscale) = (
            states[0].as_primitive::<Int64Type>(),
            states[1].as_primitive::<Decimal256Type>(),
            states[2].as_primitive::<Decimal256Type>(),
            states[3].as_primitive::<Int64Type>(),
        );
        for i in 0..n.len() {
            if n.is_null(i) {
                continue;
            }
            self.n += n.value(i);
            self.sum = self.sum.checked_add(sum.value(i)).ok_or_else(too_wide)?;
            self.sumsq = self.sumsq.checked_add(sumsq.value(i)).ok_or_else(too_wide)?;
            self.dscale = self.dscale.max(dscale.value(i) as i8);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(kind: Kind, values: &[i128]) -> Moments {
        let mut m =
            Moments { kind, unconstrained: false, scale: 0, n: 0, sum: i256::ZERO, sumsq: i256::ZERO, dscale: 0 };
        let array: ArrayRef = Arc::new(
            datafusion::arrow::array::Decimal128Array::from(values.to_vec()).with_precision_and_scale(20, 0).unwrap(),
        );
        m.add(&array, 1).unwrap();
        m
    }

    fn text(v: Option<i256>) -> String {
        let mut t = String::new();
        numeric::write(&mut t, v.unwrap(), UNCONSTRAINED_SCALE, true);
        t
    }

    #[test]
    fn variances_of_integers_are_postgres_digits() {
        let pop = Kind { sample: false, root: false };
        // PostgreSQL: var_pop of 470, 170, 430, 300 = 13868.750000000000.
        assert_eq!(text(moments(pop, &[470, 170, 430, 300]).result().unwrap()), "13868.75");
        // var_pop of 600, 470, 170, 430, 300 → 11266.666666666667 is
        // var_pop of the last three + … : checked end to end in the .slt.
        let samp = Kind { sample: true, root: false };
        assert_eq!(text(moments(samp, &[1, 2, 3, 4]).result().unwrap()), "1.6666666666666667");
        let sd = Kind { sample: true, root: true };
        assert_eq!(text(moments(sd, &[1, 2, 3, 4]).result().unwrap()), "1.2909944487358056");
        assert_eq!(moments(samp, &[5]).result().unwrap(), None);
        assert_eq!(moments(pop, &[5, 5]).result().unwrap(), Some(i256::ZERO));
    }
}
