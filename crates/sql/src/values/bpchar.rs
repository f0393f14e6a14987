//! Casts to `char(n)`: PostgreSQL's `bpchar`, blank-padded.
//!
//! A `char(n)` value is kept without its trailing blanks, as a char(n)
//! column stores it (`text::enforce_text_type`), so that comparisons,
//! `length` and concatenation ignore them as PostgreSQL's do; it is padded
//! to n characters where it is shown (`text::pad_char`, told by the
//! field's SQL type). `x::char(n)` becomes `tessera_bpchar(x::text, n)`,
//! which cuts the value to n characters (an explicit cast cuts, an
//! assignment refuses), drops the trailing blanks and marks its result as
//! `character(n)`.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use crate::values::types::{PG_TYPE_KEY, SqlType};

/// Registers `tessera_bpchar`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(Bpchar { signature: Signature::any(2, Volatility::Immutable) }));
}

/// `x` as `char(n)`'s value: at most `n` characters, without trailing blanks.
pub fn bpchar_value(x: &str, n: usize) -> &str {
    let cut = x.char_indices().nth(n).map_or(x, |(i, _)| &x[..i]);
    cut.trim_end_matches(' ')
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Bpchar {
    signature: Signature,
}

/// The length argument, a constant.
fn length(arg: Option<&ScalarValue>) -> Result<usize> {
    let n = match arg {
        Some(ScalarValue::Int16(Some(n))) => i64::from(*n),
        Some(ScalarValue::Int32(Some(n))) => i64::from(*n),
        Some(ScalarValue::Int64(Some(n))) => *n,
        _ => return Err(DataFusionError::Plan("tessera_bpchar: the length must be an integer constant".into())),
    };
    usize::try_from(n).map_err(|_| DataFusionError::Plan(format!("length for type character must be at least 1: {n}")))
}

impl ScalarUDFImpl for Bpchar {
    fn name(&self) -> &str {
        "tessera_bpchar"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let n = length(args.scalar_arguments.get(1).copied().flatten())?;
        let nullable = args.arg_fields.first().is_none_or(|f| f.is_nullable());
        let meta = HashMap::from([(PG_TYPE_KEY.to_string(), SqlType::Char(n as u32).name())]);
        Ok(Arc::new(Field::new(self.name(), DataType::Utf8, nullable).with_metadata(meta)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = match &args.args[1] {
            ColumnarValue::Scalar(s) => length(Some(s))?,
            ColumnarValue::Array(_) => length(None)?,
        };
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let values = datafusion::arrow::compute::cast(&values, &DataType::Utf8)?;
        let out: StringArray = values.as_string::<i32>().iter().map(|v| v.map(|v| bpchar_value(v, n))).collect();
        let out: ArrayRef = Arc::new(out);
        crate::values::udf_values::columnar(out, scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_cut_and_lose_their_trailing_blanks() {
        assert_eq!(bpchar_value("abc  ", 5), "abc");
        assert_eq!(bpchar_value("abcdefg", 3), "abc");
        assert_eq!(bpchar_value("ab c d", 4), "ab c");
        assert_eq!(bpchar_value("ünï", 2), "ün");
        assert_eq!(bpchar_value("  ", 1), "");
    }
}
