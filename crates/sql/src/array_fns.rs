//! Array functions under PostgreSQL's names with PostgreSQL's meaning.
//!
//! DataFusion's `array_remove` and `array_replace` act on the first
//! matching element only; PostgreSQL's on every one (`array_remove(ARRAY[1,
//! 2, 2, 3], 2)` is `{1,3}`), which DataFusion calls `array_remove_all` and
//! `array_replace_all`. The PostgreSQL names are registered here as those.
//! (`array_remove(a, NULL)` is still NULL, where PostgreSQL removes the
//! NULL elements.)

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::Result;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};

/// Registers `array_remove` and `array_replace`.
pub fn register(ctx: &SessionContext) {
    use datafusion::functions_nested::{remove::array_remove_all_udf, replace::array_replace_all_udf};
    ctx.register_udf(ScalarUDF::new_from_impl(Renamed { name: "array_remove", inner: array_remove_all_udf() }));
    ctx.register_udf(ScalarUDF::new_from_impl(Renamed { name: "array_replace", inner: array_replace_all_udf() }));
}

/// `inner` under another name.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Renamed {
    name: &'static str,
    inner: Arc<ScalarUDF>,
}

impl ScalarUDFImpl for Renamed {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        self.inner.return_type(args)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.inner.invoke_with_args(args)
    }
}
