//! `var_pop`, `var_samp`, `stddev_pop` and `stddev_samp` of floats,
//! computed as PostgreSQL computes them, bit for bit.
//!
//! PostgreSQL's `float8_accum` keeps the count N, the sum Sx and the sum
//! of squared differences Sxx, updated by the Youngs–Cramer recurrence
//! (`Sxx += (x·N − Sx)² / (N·(N−1))`), and `float8_combine` merges two
//! such states. DataFusion's accumulator uses Welford's recurrence, which
//! can differ in the last bit, and answers 0 for a single `Infinity` where
//! PostgreSQL's sums become NaN. This accumulator is PostgreSQL's: the same
//! operations in the same order, so the printed digits are the same, and
//! an overflow of finite values raises 22003 as `float_overflow_error`
//! does.
//!
//! The same state gives `avg` of floats in a window frame that slides.
//! PostgreSQL has no inverse transition for these aggregates: a window
//! frame that slides is recomputed from its rows (`frame_recompute`).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::Accumulator;

use crate::error::{SqlError, code};

/// Which statistic the moments finish as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Statistic {
    /// `avg`: Sx / N (PostgreSQL's `float8_avg` over the same state).
    Mean,
    /// A variance or standard deviation.
    Spread {
        /// Divide by N − 1 (`var_samp`, `stddev_samp`) rather than N.
        sample: bool,
        /// The square root (`stddev_*`).
        root: bool,
    },
}

/// PostgreSQL's `float8_accum` state: N, Sx, Sxx.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Moments {
    statistic: Statistic,
    n: f64,
    sx: f64,
    sxx: f64,
}

fn overflow() -> DataFusionError {
    DataFusionError::External(Box::new(SqlError::new(code::OUT_OF_RANGE, "value out of range: overflow")))
}

/// The state fields: N, Sx and Sxx, as `float8_accum`'s array holds them.
pub(crate) fn state_fields(name: &str) -> Vec<FieldRef> {
    ["n", "sx", "sxx"]
        .iter()
        .map(|part| Arc::new(Field::new(format!("{name}[{part}]"), DataType::Float64, true)))
        .collect()
}

impl Moments {
    pub(crate) fn new(statistic: Statistic) -> Self {
        Moments { statistic, n: 0.0, sx: 0.0, sxx: 0.0 }
    }

    /// `float8_accum` for one value.
    fn add(&mut self, x: f64) -> Result<()> {
        let (old_n, old_sx) = (self.n, self.sx);
        self.n += 1.0;
        self.sx += x;
        if old_n > 0.0 {
            let tmp = x * self.n - self.sx;
            self.sxx += tmp * tmp / (self.n * old_n);
            // Overflow check: only when no infinite input explains it.
            if self.sx.is_infinite() || self.sxx.is_infinite() {
                if !old_sx.is_infinite() && !x.is_infinite() {
                    return Err(overflow());
                }
                self.sxx = f64::NAN;
            }
        } else if x.is_nan() || x.is_infinite() {
            // A first input of Inf or NaN makes Sxx NaN, as later ones do.
            self.sxx = f64::NAN;
        }
        Ok(())
    }

    /// `float8_combine`: merges another state into this one.
    fn combine(&mut self, n2: f64, sx2: f64, sxx2: f64) -> Result<()> {
        if n2 == 0.0 {
            return Ok(());
        }
        if self.n == 0.0 {
            (self.n, self.sx, self.sxx) = (n2, sx2, sxx2);
            return Ok(());
        }
        let (n1, sx1, sxx1) = (self.n, self.sx, self.sxx);
        let n = n1 + n2;
        let sx = sx1 + sx2;
        if sx.is_infinite() && !sx1.is_infinite() && !sx2.is_infinite() {
            return Err(overflow());
        }
        let tmp = sx1 / n1 - sx2 / n2;
        let sxx = sxx1 + sxx2 + n1 * n2 * tmp * tmp / n;
        if sxx.is_infinite() && !sxx1.is_infinite() && !sxx2.is_infinite() {
            return Err(overflow());
        }
        (self.n, self.sx, self.sxx) = (n, sx, sxx);
        Ok(())
    }

    /// `float8_avg`, `float8_var_pop` / `float8_var_samp` / `float8_stddev_*`.
    fn result(&self) -> Option<f64> {
        let Statistic::Spread { sample, root } = self.statistic else {
            return (self.n > 0.0).then(|| self.sx / self.n);
        };
        let divisor = if sample { self.n - 1.0 } else { self.n };
        if divisor <= 0.0 {
            return None;
        }
        let var = self.sxx / divisor;
        Some(if root { var.sqrt() } else { var })
    }
}

impl Accumulator for Moments {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for x in values[0].as_primitive::<Float64Type>().iter().flatten() {
            self.add(x)?;
        }
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Float64(self.result()))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::Float64(Some(self.n)),
            ScalarValue::Float64(Some(self.sx)),
            ScalarValue::Float64(Some(self.sxx)),
        ])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let [n, sx, sxx] = states else {
            return Err(DataFusionError::Internal(format!("a float variance state of {} fields", states.len())));
        };
        let (n, sx, sxx) =
            (n.as_primitive::<Float64Type>(), sx.as_primitive::<Float64Type>(), sxx.as_primitive::<Float64Type>());
        for i in 0..n.len() {
            self.combine(n.value(i), sx.value(i), sxx.value(i))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(sample: bool, values: &[f64]) -> Option<f64> {
        let mut m = Moments::new(Statistic::Spread { sample, root: false });
        for v in values {
            m.add(*v).unwrap();
        }
        m.result()
    }

    #[test]
    fn youngs_cramer_as_postgres() {
        // PostgreSQL: var_pop of 600, 470, 170, 430, 300 is 21704.
        assert_eq!(var(false, &[600.0, 470.0, 170.0, 430.0, 300.0]), Some(21704.0));
        assert_eq!(var(true, &[1.0]), None);
        assert_eq!(var(false, &[]), None);
    }

    #[test]
    fn non_finite_values_make_nan() {
        assert!(var(false, &[f64::INFINITY]).unwrap().is_nan());
        assert!(var(false, &[1.0, f64::NAN]).unwrap().is_nan());
        assert!(var(true, &[1.0, f64::INFINITY]).unwrap().is_nan());
    }

    #[test]
    fn finite_overflow_raises() {
        let mut m = Moments::new(Statistic::Spread { sample: false, root: false });
        m.add(1e308).unwrap();
        assert!(m.add(1e308).is_err());
    }

    #[test]
    fn combining_halves_matches_postgres_formula() {
        let mut a = Moments::new(Statistic::Spread { sample: false, root: false });
        a.add(1.0).unwrap();
        a.add(2.0).unwrap();
        a.combine(2.0, 7.0, 0.5).unwrap();
        assert_eq!((a.n, a.sx), (4.0, 10.0));
        // 0.5 + 0.5 + 2·2·(1.5 − 3.5)²/4
        assert_eq!(a.sxx, 5.0);
    }
}
