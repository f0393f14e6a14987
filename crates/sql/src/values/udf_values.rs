//! What Tessera's scalar functions share: handing a computed array back
//! as DataFusion expects it.

use datafusion::arrow::array::ArrayRef;
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::ColumnarValue;

/// `out` as a function's result: one value if every argument was one
/// (`scalar`), the array otherwise.
pub(crate) fn columnar(out: ArrayRef, scalar: bool) -> Result<ColumnarValue> {
    Ok(if scalar { ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?) } else { ColumnarValue::Array(out) })
}
