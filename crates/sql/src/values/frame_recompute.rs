//! Window frames over floats that slide: recomputed from their rows, as
//! PostgreSQL recomputes them, never retracted.
//!
//! DataFusion slides an aggregate's frame by retracting the rows that
//! leave it. For floats that is not exact: the frame `[1e20, 1]` summed
//! and then `1e20` retracted leaves 0, where the sum of the frame's one
//! row is 1 — a silent wrong answer. PostgreSQL gives the float aggregates
//! no inverse transition and recomputes each frame that lost rows from
//! the rows in it. [`FrameRecompute`] does the same: it keeps the frame's
//! values (as the slices DataFusion hands it, cheap to hold) and answers
//! with a fresh accumulator fed the frame's rows in order, so a frame's
//! answer is the plain aggregate's over the same rows. Like PostgreSQL's,
//! it costs work in proportion to the frame per row.

use std::collections::VecDeque;

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::Accumulator;

/// Makes the accumulator a frame's rows are fed to.
pub(crate) type Fresh = Box<dyn Fn() -> Box<dyn Accumulator> + Send + Sync>;

/// Past this many held slices they are joined into one, so a frame of
/// many one-row updates is fed in one call.
const MAX_PIECES: usize = 32;

/// A sliding frame's accumulator that recomputes (see the module's text).
pub(crate) struct FrameRecompute {
    fresh: Fresh,
    /// The frame's values, oldest first; `skip` rows of the first have left.
    pieces: VecDeque<ArrayRef>,
    skip: usize,
}

impl std::fmt::Debug for FrameRecompute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameRecompute").field("pieces", &self.pieces.len()).field("skip", &self.skip).finish()
    }
}

impl FrameRecompute {
    pub(crate) fn new(fresh: Fresh) -> Self {
        FrameRecompute { fresh, pieces: VecDeque::new(), skip: 0 }
    }

    /// The frame's values as one array, oldest first.
    fn joined(&mut self) -> Result<Option<ArrayRef>> {
        if let Some(first) = self.pieces.front_mut()
            && self.skip > 0
        {
            *first = first.slice(self.skip, first.len() - self.skip);
            self.skip = 0;
        }
        match self.pieces.len() {
            0 => Ok(None),
            1 => Ok(self.pieces.front().cloned()),
            _ => {
                let parts: Vec<&dyn Array> = self.pieces.iter().map(|p| p.as_ref()).collect();
                let one = datafusion::arrow::compute::concat(&parts)?;
                self.pieces = VecDeque::from([one.clone()]);
                Ok(Some(one))
            }
        }
    }
}

impl Accumulator for FrameRecompute {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let [values] = values else {
            return Err(DataFusionError::Internal("a recomputed frame of several arguments".into()));
        };
        if !values.is_empty() {
            self.pieces.push_back(values.clone());
        }
        if self.pieces.len() > MAX_PIECES {
            self.joined()?;
        }
        Ok(())
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let mut leaving = values.first().map_or(0, |v| v.len());
        while leaving > 0 {
            let Some(first) = self.pieces.front() else {
                return Err(DataFusionError::Internal("a frame retracted more rows than it held".into()));
            };
            let left = first.len() - self.skip;
            if leaving >= left {
                self.pieces.pop_front();
                self.skip = 0;
                leaving -= left;
            } else {
                self.skip += leaving;
                leaving = 0;
            }
        }
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let mut acc = (self.fresh)();
        if let Some(frame) = self.joined()? {
            acc.update_batch(&[frame])?;
        }
        acc.evaluate()
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.pieces.iter().map(|p| p.get_array_memory_size()).sum::<usize>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Err(DataFusionError::Internal("a window frame's accumulator has no partial state".into()))
    }

    fn merge_batch(&mut self, _states: &[ArrayRef]) -> Result<()> {
        Err(DataFusionError::Internal("a window frame's accumulator has no partial state".into()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::Float64Array;

    use super::*;

    /// A plain f64 sum, in order.
    #[derive(Debug, Default)]
    struct Sum(f64);

    impl Accumulator for Sum {
        fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
            let a = values[0].as_any().downcast_ref::<Float64Array>().unwrap();
            self.0 += a.iter().flatten().sum::<f64>();
            Ok(())
        }
        fn evaluate(&mut self) -> Result<ScalarValue> {
            Ok(ScalarValue::Float64(Some(self.0)))
        }
        fn size(&self) -> usize {
            8
        }
        fn state(&mut self) -> Result<Vec<ScalarValue>> {
            Ok(vec![])
        }
        fn merge_batch(&mut self, _: &[ArrayRef]) -> Result<()> {
            Ok(())
        }
    }

    fn col(v: &[f64]) -> ArrayRef {
        Arc::new(Float64Array::from(v.to_vec()))
    }

    #[test]
    fn a_slid_frame_is_summed_from_its_rows() {
        let mut f = FrameRecompute::new(Box::new(|| Box::new(Sum::default())));
        f.update_batch(&[col(&[1e20, 1.0])]).unwrap();
        f.retract_batch(&[col(&[1e20])]).unwrap();
        // Retracting would answer 0.
        assert_eq!(f.evaluate().unwrap(), ScalarValue::Float64(Some(1.0)));
    }

    #[test]
    fn many_pieces_and_partial_retracts() {
        let mut f = FrameRecompute::new(Box::new(|| Box::new(Sum::default())));
        for i in 0..100 {
            f.update_batch(&[col(&[f64::from(i)])]).unwrap();
        }
        f.retract_batch(&[col(&[0.0; 90])]).unwrap();
        assert_eq!(f.evaluate().unwrap(), ScalarValue::Float64(Some((90..100).sum::<i32>().into())));
        f.retract_batch(&[col(&[0.0; 10])]).unwrap();
        assert_eq!(f.evaluate().unwrap(), ScalarValue::Float64(Some(0.0)));
        assert!(f.retract_batch(&[col(&[0.0])]).is_err());
    }
}
