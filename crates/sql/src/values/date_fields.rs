//! The fields of `extract(… from x)` and `date_part('…', x)` whose
//! DataFusion value differs from PostgreSQL's, computed as PostgreSQL's
//! `timestamp_part` does:
//! - `second`: DataFusion's is the whole seconds only, so the seconds of
//!   `12:00:07.25` would silently read 7. PostgreSQL answers 7.250000
//!   (`extract`, a numeric of six places) and 7.25 (`date_part`, a double).
//!   This module's functions read the microseconds within the minute of a
//!   timestamp, a time or an interval (whose seconds keep their sign).
//! - `year` before year 1: DataFusion counts astronomically (1 BC is year
//!   0), PostgreSQL has no year 0 (1 BC is -1); and `decade`, `century`
//!   and `millennium`, which DataFusion lacks, follow from the year with
//!   PostgreSQL's rules for eras. They are computed from DataFusion's
//!   astronomical year (`date_part('years', x)`, which the session's time
//!   zone still applies to), keeping its type.
//!
//! - a time-of-day field (`hour`, `minute`, `second`, `milliseconds`,
//!   `microseconds`) of a `date`: `EXTRACT` refuses it (0A000), as
//!   PostgreSQL 15's does, where DataFusion answers 0 (`date_part`, which
//!   reads the date as a timestamp, still answers 0, as PostgreSQL's
//!   does). `tessera_not_date(field, x)` is `x`, refused at planning when
//!   it is a date.
//!
//! Before planning, both spellings become this module's functions.

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

/// Registers `tessera_extract_second` (numeric),
/// `tessera_date_part_second` (double) and `tessera_year_field`.
pub fn register(ctx: &SessionContext) {
    for numeric in [true, false] {
        ctx.register_udf(ScalarUDF::new_from_impl(SecondsOf {
            numeric,
            signature: Signature::any(1, Volatility::Immutable),
        }));
    }
    ctx.register_udf(ScalarUDF::new_from_impl(YearField { signature: Signature::any(3, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::new_from_impl(NotDate { signature: Signature::any(2, Volatility::Immutable) }));
}

/// `tessera_not_date('field', x)`: `x`, unless it is a date, whose
/// time-of-day fields `EXTRACT` refuses.
#[derive(Debug, PartialEq, Eq, Hash)]
struct NotDate {
    signature: Signature,
}

impl ScalarUDFImpl for NotDate {
    fn name(&self) -> &str {
        "tessera_not_date"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[1].clone())
    }

    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        let ty = args.arg_fields[1].data_type();
        if matches!(ty, DataType::Date32 | DataType::Date64) {
            let field = match args.scalar_arguments[0] {
                Some(datafusion::common::ScalarValue::Utf8(Some(f))) => f.clone(),
                _ => "this".to_string(),
            };
            return Err(DataFusionError::External(Box::new(crate::error::SqlError::new(
                crate::error::code::FEATURE_NOT_SUPPORTED,
                format!("unit \"{field}\" not supported for type date"),
            ))));
        }
        Ok(Arc::new(datafusion::arrow::datatypes::Field::new(self.name(), ty.clone(), true)))
    }

    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(args.args.swap_remove(1))
    }
}

/// The name PostgreSQL gives a time-of-day field of `EXTRACT` in its
/// error for a date (None: a field a date has).
fn time_of_day_field(field: &DateTimeField) -> Option<&'static str> {
    Some(match field {
        DateTimeField::Hour | DateTimeField::Hours => "hour",
        DateTimeField::Minute | DateTimeField::Minutes => "minute",
        DateTimeField::Second | DateTimeField::Seconds => "second",
        DateTimeField::Millisecond | DateTimeField::Milliseconds => "milliseconds",
        DateTimeField::Microsecond | DateTimeField::Microseconds => "microseconds",
        _ => return None,
    })
}

/// The year-derived fields `date_part` may name (see the module's text).
const YEAR_FIELDS: &[&str] =
    &["year", "years", "isoyear", "decade", "decades", "century", "centuries", "millennium", "millennia"];

/// Rewrites `EXTRACT(field FROM x)` and `date_part('field', x)` of the
/// fields this module computes (see the module's text).
pub fn rewrite(e: &mut Ast) {
    if let Ast::Extract { field, expr, .. } = e
        && let Some(unit) = time_of_day_field(field)
        && let Ok(guarded) = crate::parser::parse_expr(&format!("tessera_not_date('{unit}', {expr})"))
    {
        **expr = guarded;
    }
    let (field, arg, extract) = match e {
        Ast::Extract { field, expr, .. } => {
            let field = match field {
                DateTimeField::Second | DateTimeField::Seconds => "second",
                DateTimeField::Year | DateTimeField::Years => "year",
                DateTimeField::Isoyear => "isoyear",
                DateTimeField::Decade => "decade",
                DateTimeField::Century => "century",
                DateTimeField::Millenium | DateTimeField::Millennium => "millennium",
                _ => return,
            };
            (field.to_string(), expr.to_string(), true)
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
            let part = part.to_lowercase();
            if !(part == "second" || part == "seconds" || YEAR_FIELDS.contains(&part.as_str())) {
                return;
            }
            (part, x.to_string(), false)
        }
        _ => return,
    };
    let call = match (field.as_str(), extract) {
        ("second" | "seconds", true) => format!("tessera_extract_second({arg})"),
        ("second" | "seconds", false) => format!("tessera_date_part_second({arg})"),
        (f, _) => {
            // DataFusion's own year, which the session's time zone applies to.
            let unit = if f == "isoyear" { "isoyear" } else { "years" };
            let year =
                if extract { format!("extract({unit} from {arg})") } else { format!("date_part('{unit}', {arg})") };
            format!("tessera_year_field('{}', {year}, {arg})", canonical_field(f))
        }
    };
    if let Ok(call) = crate::parser::parse_expr(&call) {
        *e = call;
    }
}

/// A year-derived field's name without its plural.
fn canonical_field(f: &str) -> &'static str {
    match f {
        "year" | "years" => "year",
        "isoyear" => "isoyear",
        "decade" | "decades" => "decade",
        "century" | "centuries" => "century",
        _ => "millennium",
    }
}

/// A year-derived field from the astronomical year, by PostgreSQL's
/// `timestamp_part` (C division truncates toward zero, as Rust's does).
pub fn year_field(field: &str, year: i64) -> Option<i64> {
    Some(match field {
        "year" | "isoyear" if year > 0 => year,
        "year" | "isoyear" => year - 1,
        "decade" if year >= 0 => year / 10,
        "decade" => -((8 - (year - 1)) / 10),
        "century" if year > 0 => (year + 99) / 100,
        "century" => -((99 - (year - 1)) / 100),
        "millennium" if year > 0 => (year + 999) / 1000,
        "millennium" => -((999 - (year - 1)) / 1000),
        _ => return None,
    })
}

/// A year-derived field of an interval's years.
fn interval_year_field(field: &str, years: i64) -> Option<i64> {
    Some(match field {
        "year" | "isoyear" => years,
        "decade" => years / 10,
        "century" => years / 100,
        "millennium" => years / 1000,
        _ => return None,
    })
}

/// `tessera_year_field(field, astronomical year, x)`, of the year's type;
/// when `x` is an interval its years have no era: the decade, century and
/// millennium are the years divided, truncating (`-99 years` is decade
/// -9, century 0).
#[derive(Debug, PartialEq, Eq, Hash)]
struct YearField {
    signature: Signature,
}

impl ScalarUDFImpl for YearField {
    fn name(&self) -> &str {
        "tessera_year_field"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[1].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let ColumnarValue::Scalar(datafusion::common::ScalarValue::Utf8(Some(field))) = &args.args[0] else {
            return Err(DataFusionError::Internal("tessera_year_field of a field that is not a constant".into()));
        };
        let field = field.clone();
        let interval = matches!(args.args.get(2).map(|a| a.data_type()), Some(DataType::Interval(_)));
        let scalar = matches!(args.args[1], ColumnarValue::Scalar(_));
        let years = args.args[1].to_array(if scalar { 1 } else { args.number_rows })?;
        let target = years.data_type().clone();
        let as_i64 = datafusion::arrow::compute::cast(&years, &DataType::Int64)?;
        let out: datafusion::arrow::array::Int64Array = as_i64
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
            .iter()
            .map(|y| y.and_then(|y| if interval { interval_year_field(&field, y) } else { year_field(&field, y) }))
            .collect();
        let out = datafusion::arrow::compute::cast(&(Arc::new(out) as ArrayRef), &target)?;
        crate::values::udf_values::columnar(out, scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::year_field;

    #[test]
    fn year_fields_follow_postgres_eras() {
        // Astronomical year 0 is 1 BC, -2019 is 2020 BC.
        assert_eq!(year_field("year", 2020), Some(2020));
        assert_eq!(year_field("year", 0), Some(-1));
        assert_eq!(year_field("year", -2019), Some(-2020));
        assert_eq!(year_field("century", 2000), Some(20));
        assert_eq!(year_field("century", 2001), Some(21));
        assert_eq!(year_field("century", 1), Some(1));
        assert_eq!(year_field("century", 0), Some(-1));
        assert_eq!(year_field("century", -99), Some(-1));
        assert_eq!(year_field("century", -100), Some(-2));
        assert_eq!(year_field("decade", 1999), Some(199));
        assert_eq!(year_field("decade", 0), Some(0));
        // 2 BC through 11 BC are decade -1 (PostgreSQL's answers).
        assert_eq!(year_field("decade", -1), Some(-1));
        assert_eq!(year_field("decade", -10), Some(-1));
        assert_eq!(year_field("decade", -11), Some(-2));
        assert_eq!(year_field("millennium", 2000), Some(2));
        assert_eq!(year_field("millennium", 2001), Some(3));
        assert_eq!(year_field("millennium", 0), Some(-1));
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
        crate::values::udf_values::columnar(out, scalar)
    }
}
