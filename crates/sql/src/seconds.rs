//! `extract(second from …)` and `date_part('second', …)` with the
//! fraction of the second, as PostgreSQL gives them.
//!
//! DataFusion's `date_part('second', x)` is the whole seconds only, so the
//! seconds of `12:00:07.25` would silently read 7. PostgreSQL answers
//! 7.250000 (`extract`, a numeric of six places) and 7.25 (`date_part`, a
//! double). Before planning, both forms become this module's functions,
//! which read the microseconds within the minute of a timestamp, a time
//! or an interval (whose seconds keep their sign, as PostgreSQL's do).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Array, Float64Array};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, IntervalMonthDayNanoType, IntervalUnit, Time32MillisecondType, Time32SecondType,
    Time64MicrosecondType, Time64NanosecondType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::sql::sqlparser::ast::{
    DateTimeField, Expr as Ast, FunctionArg, FunctionArgExpr, FunctionArguments, Value,
};

const MINUTE_MICROS: i64 = 60_000_000;

/// Registers `tessera_extract_second` (numeric) and
/// `tessera_date_part_second` (double).
pub fn register(ctx: &SessionContext) {
    for numeric in [true, false] {
        ctx.register_udf(ScalarUDF::new_from_impl(SecondsOf {
            numeric,
            signature: Signature::any(1, Volatility::Immutable),
        }));
    }
}

/// Rewrites `EXTRACT(SECOND FROM x)` and `date_part('second', x)` (see the
/// module's text).
pub fn rewrite(e: &mut Ast) {
    let (function, arg) = match e {
        Ast::Extract { field: DateTimeField::Second | DateTimeField::Seconds, expr, .. } => {
            ("tessera_extract_second", expr.to_string())
        }
        Ast::Function(f) if f.name.to_string().eq_ignore_ascii_case("date_part") => {
            let FunctionArguments::List(list) = &f.args else { return };
            let [
                FunctionArg::Unnamed(FunctionArgExpr::Expr(Ast::Value(part))),
                FunctionArg::Unnamed(FunctionArgExpr::Expr(x)),
            ] = list.args.as_slice()
            else {
                return;
            };
            let Value::SingleQuotedString(part) = &part.value else { return };
            if !matches!(part.to_lowercase().as_str(), "second" | "seconds") {
                return;
            }
            ("tessera_date_part_second", x.to_string())
        }
        _ => return,
    };
    if let Ok(call) = crate::parsing::parse_expr(&format!("{function}({arg})")) {
        *e = call;
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SecondsOf {
    /// `extract`'s numeric(8, 6), or `date_part`'s double.
    numeric: bool,
    signature: Signature,
}

/// The microseconds within the minute of each value (None for NULL).
fn micros_in_minute(values: &ArrayRef) -> Result<Vec<Option<i64>>> {
    let of_instant = |micros: i64| micros.rem_euclid(MINUTE_MICROS);
    Ok(match values.data_type() {
        DataType::Timestamp(TimeUnit::Second, _) => {
            values.as_primitive::<TimestampSecondType>().iter().map(|v| v.map(|s| of_instant(s * 1_000_000))).collect()
        }
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            values.as_primitive::<TimestampMillisecondType>().iter().map(|v| v.map(|m| of_instant(m * 1000))).collect()
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            values.as_primitive::<TimestampMicrosecondType>().iter().map(|v| v.map(of_instant)).collect()
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => values
            .as_primitive::<TimestampNanosecondType>()
            .iter()
            .map(|v| v.map(|n| of_instant(n.div_euclid(1000))))
            .collect(),
        DataType::Time32(TimeUnit::Second) => values
            .as_primitive::<Time32SecondType>()
            .iter()
            .map(|v| v.map(|s| of_instant(i64::from(s) * 1_000_000)))
            .collect(),
        DataType::Time32(TimeUnit::Millisecond) => values
            .as_primitive::<Time32MillisecondType>()
            .iter()
            .map(|v| v.map(|m| of_instant(i64::from(m) * 1000)))
            .collect(),
        DataType::Time64(TimeUnit::Microsecond) => {
            values.as_primitive::<Time64MicrosecondType>().iter().map(|v| v.map(of_instant)).collect()
        }
        DataType::Time64(TimeUnit::Nanosecond) => {
            values.as_primitive::<Time64NanosecondType>().iter().map(|v| v.map(|n| of_instant(n / 1000))).collect()
        }
        // An interval's seconds keep its sign (PostgreSQL's `-7.25 sec`).
        DataType::Interval(IntervalUnit::MonthDayNano) => values
            .as_primitive::<IntervalMonthDayNanoType>()
            .iter()
            .map(|v| v.map(|i| (i.nanoseconds / 1000) % MINUTE_MICROS))
            .collect(),
        // A date is midnight.
        DataType::Date32 => values.as_primitive::<Date32Type>().iter().map(|v| v.map(|_| 0)).collect(),
        DataType::Date64 => values.as_primitive::<Date64Type>().iter().map(|v| v.map(|_| 0)).collect(),
        DataType::Null => vec![None; values.len()],
        other => {
            return Err(DataFusionError::External(Box::new(crate::error::SqlError::new(
                crate::error::code::UNDEFINED_FUNCTION,
                format!("extract(second from {other}) does not exist"),
            ))));
        }
    })
}

impl ScalarUDFImpl for SecondsOf {
    fn name(&self) -> &str {
        if self.numeric { "tessera_extract_second" } else { "tessera_date_part_second" }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(if self.numeric { DataType::Decimal128(8, 6) } else { DataType::Float64 })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let micros = micros_in_minute(&values)?;
        let out: ArrayRef = if self.numeric {
            let decimals: Decimal128Array = micros.into_iter().map(|m| m.map(i128::from)).collect();
            Arc::new(decimals.with_precision_and_scale(8, 6)?)
        } else {
            Arc::new(micros.into_iter().map(|m| m.map(|m| m as f64 / 1e6)).collect::<Float64Array>())
        };
        crate::udf_values::columnar(out, scalar)
    }
}
