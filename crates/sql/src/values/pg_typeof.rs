//! `pg_typeof(x)`: the SQL type of its argument, as PostgreSQL names it.
//!
//! The type is read from the argument's field (its metadata carries the
//! SQL type where Arrow's type alone does not say it, as for char(n) or
//! uuid), and printed without a type modifier, as PostgreSQL's `regtype`
//! output prints it: `numeric`, not `numeric(10,2)`.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

use crate::values::types::SqlType;

/// Registers `pg_typeof`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(PgTypeof { signature: Signature::any(1, Volatility::Immutable) }));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct PgTypeof {
    signature: Signature,
}

impl ScalarUDFImpl for PgTypeof {
    fn name(&self) -> &str {
        "pg_typeof"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = match args.arg_fields.first() {
            Some(f) if f.data_type() == &DataType::Null => "unknown".to_string(),
            // An array of several dimensions has its one-dimensional
            // type's name (PostgreSQL's array types have no fixed number).
            Some(f) => type_name(SqlType::of_field(&f.as_ref().clone().with_data_type(one_dimension(f.data_type())))),
            None => "unknown".to_string(),
        };
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(name))))
    }
}

/// `ty`'s name without its modifier: `character varying(5)` is
/// `character varying`.
/// A list of lists (of lists …) of `x` as a list of `x`.
fn one_dimension(t: &DataType) -> DataType {
    match t {
        DataType::List(f) if matches!(f.data_type(), DataType::List(_)) => one_dimension(f.data_type()),
        other => other.clone(),
    }
}

fn type_name(ty: SqlType) -> String {
    let name = ty.name();
    match name.split_once('(') {
        Some((base, rest)) => {
            let after = rest.split_once(')').map_or("", |(_, after)| after);
            format!("{}{after}", base.trim_end())
        }
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_no_modifier() {
        assert_eq!(type_name(SqlType::Int4), "integer");
        assert_eq!(type_name(SqlType::Numeric { precision: 10, scale: 2 }), "numeric");
        assert_eq!(type_name(SqlType::Char(5)), "character");
    }
}
