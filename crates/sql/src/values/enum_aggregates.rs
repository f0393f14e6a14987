//! `min` and `max` of enum values: the first and last label in the type's
//! order (DataFusion's would compare the labels as text). `enums.rs`
//! puts these in place of `min`/`max` over an enum-typed argument.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility};

use crate::values::types::{PG_TYPE_KEY, SqlType};
use crate::values::user_types::EnumType;

/// `min` (or `max`, when `max`) over values of enum type `oid`.
pub fn extreme(oid: u32, max: bool) -> Arc<AggregateUDF> {
    Arc::new(AggregateUDF::new_from_impl(EnumExtreme { signature: Signature::any(1, Volatility::Immutable), oid, max }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct EnumExtreme {
    signature: Signature,
    oid: u32,
    max: bool,
}

impl AggregateUDFImpl for EnumExtreme {
    fn name(&self) -> &str {
        if self.max { "tessera_enum_max" } else { "tessera_enum_min" }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field(&self, _arg_fields: &[FieldRef]) -> Result<FieldRef> {
        let meta = HashMap::from([(PG_TYPE_KEY.to_string(), SqlType::Enum(self.oid).meta_name())]);
        Ok(Arc::new(Field::new(self.name(), DataType::Utf8, true).with_metadata(meta)))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(format!("{}[best]", args.name), DataType::Utf8, true))])
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let t =
            crate::values::user_types::require_enum(self.oid).map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(Box::new(Extreme { t, max: self.max, best: None }))
    }
}

#[derive(Debug)]
struct Extreme {
    t: Arc<EnumType>,
    max: bool,
    /// The best label so far, with its position.
    best: Option<(usize, String)>,
}

impl Accumulator for Extreme {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let strings = datafusion::arrow::compute::cast(&values[0], &DataType::Utf8)?;
        for v in strings.as_string::<i32>().iter().flatten() {
            let p = self.t.require(v).map_err(|e| DataFusionError::External(Box::new(e)))?;
            let better = match &self.best {
                None => true,
                Some((b, _)) => (self.max && p > *b) || (!self.max && p < *b),
            };
            if better {
                self.best = Some((p, v.to_string()));
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.evaluate()?])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Utf8(self.best.as_ref().map(|(_, l)| l.clone())))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.best.as_ref().map_or(0, |(_, l)| l.capacity())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::StringArray;

    #[test]
    fn extremes_follow_the_label_order() {
        crate::values::user_types::publish_enum(999_201, "level", &["low".into(), "mid".into(), "high".into()]);
        let t = crate::values::user_types::enum_type(999_201).unwrap();
        let values: ArrayRef = Arc::new(StringArray::from(vec![Some("mid"), None, Some("high"), Some("low")]));
        for (max, want) in [(true, "high"), (false, "low")] {
            let mut acc = Extreme { t: t.clone(), max, best: None };
            acc.update_batch(std::slice::from_ref(&values)).unwrap();
            assert_eq!(acc.evaluate().unwrap(), ScalarValue::Utf8(Some(want.into())));
        }
    }
}
