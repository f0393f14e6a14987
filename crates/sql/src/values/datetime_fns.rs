//! PostgreSQL's date and time constructors and adjusters that DataFusion
//! lacks: `make_interval` (with named arguments, `make_interval(days =>
//! 10)`), `justify_days`, `justify_hours`, `justify_interval`,
//! `make_date`, `make_timestamp` and `make_timestamptz` (in the session's
//! time zone, or the one given; a negative year is BC, as PostgreSQL reads
//! it, where DataFusion's `make_date` took it as astronomical).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, IntervalMonthDayNanoArray, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::{
    DataType, Float64Type, Int64Type, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit, TimeUnit,
};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

use crate::error::{SqlError, code};

const DAY_NANOS: i64 = 86_400_000_000_000;
const INTERVAL: DataType = DataType::Interval(IntervalUnit::MonthDayNano);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    MakeInterval,
    JustifyDays,
    JustifyHours,
    JustifyInterval,
    MakeDate,
    MakeTimestamp,
    MakeTimestampTz,
}

/// Registers this module's functions; `zone` is the session's time zone.
pub fn register(ctx: &SessionContext, zone: crate::values::tz::ZoneSource) {
    let functions = [
        ("make_interval", Op::MakeInterval, Volatility::Immutable),
        ("justify_days", Op::JustifyDays, Volatility::Immutable),
        ("justify_hours", Op::JustifyHours, Volatility::Immutable),
        ("justify_interval", Op::JustifyInterval, Volatility::Immutable),
        ("make_date", Op::MakeDate, Volatility::Immutable),
        ("make_timestamp", Op::MakeTimestamp, Volatility::Immutable),
        ("make_timestamptz", Op::MakeTimestampTz, Volatility::Stable),
    ];
    for (name, op, volatility) in functions {
        let signature = Signature::user_defined(volatility);
        ctx.register_udf(ScalarUDF::new_from_impl(DateTimeFn { name, op, signature, zone: ZoneHolder(zone.clone()) }));
    }
}

/// `make_interval`'s parameters, in order, each 0 when omitted.
const INTERVAL_PARAMETERS: [(&str, Option<&str>); 7] = [
    ("years", Some("0")),
    ("months", Some("0")),
    ("weeks", Some("0")),
    ("days", Some("0")),
    ("hours", Some("0")),
    ("mins", Some("0")),
    ("secs", Some("0.0::float8")),
];

/// `make_interval(days => 10)`, `make_interval(years := 2)`: named
/// arguments become positional ones, the missing ones 0, as PostgreSQL's
/// defaults are.
pub fn rewrite(e: &mut datafusion::sql::sqlparser::ast::Expr) {
    let datafusion::sql::sqlparser::ast::Expr::Function(f) = e else { return };
    if f.name.to_string().eq_ignore_ascii_case("make_interval") {
        crate::parser::positional_args(f, &INTERVAL_PARAMETERS);
    }
}

/// The session's zone source, compared by identity (a UDF must be `Eq`).
#[derive(Clone)]
struct ZoneHolder(crate::values::tz::ZoneSource);

impl std::fmt::Debug for ZoneHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ZoneSource")
    }
}

impl PartialEq for ZoneHolder {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ZoneHolder {}

impl std::hash::Hash for ZoneHolder {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.0) as *const () as usize).hash(state);
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct DateTimeFn {
    name: &'static str,
    op: Op,
    signature: Signature,
    zone: ZoneHolder,
}

fn external(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

fn out_of_range() -> DataFusionError {
    external(SqlError::new(code::DATETIME_OVERFLOW, "interval out of range"))
}

/// PostgreSQL's `justify_hours`: whole days of the time part into days.
pub fn justify_hours(v: IntervalMonthDayNano) -> Option<IntervalMonthDayNano> {
    let mut days = i64::from(v.days).checked_add(v.nanoseconds / DAY_NANOS)?;
    let mut time = v.nanoseconds % DAY_NANOS;
    if days > 0 && time < 0 {
        time += DAY_NANOS;
        days -= 1;
    } else if days < 0 && time > 0 {
        time -= DAY_NANOS;
        days += 1;
    }
    Some(IntervalMonthDayNano::new(v.months, i32::try_from(days).ok()?, time))
}

/// PostgreSQL's `justify_days`: 30 days into a month.
pub fn justify_days(v: IntervalMonthDayNano) -> Option<IntervalMonthDayNano> {
    let mut months = v.months.checked_add(v.days / 30)?;
    let mut days = v.days % 30;
    if months > 0 && days < 0 {
        days += 30;
        months -= 1;
    } else if months < 0 && days > 0 {
        days -= 30;
        months += 1;
    }
    Some(IntervalMonthDayNano::new(months, days, v.nanoseconds))
}

/// PostgreSQL's `justify_interval`: both, with one sign throughout.
pub fn justify_interval(v: IntervalMonthDayNano) -> Option<IntervalMonthDayNano> {
    let mut days = i64::from(v.days).checked_add(v.nanoseconds / DAY_NANOS)?;
    let mut time = v.nanoseconds % DAY_NANOS;
    let mut months = i64::from(v.months) + days / 30;
    days %= 30;
    if months > 0 && (days < 0 || (days == 0 && time < 0)) {
        days += 30;
        months -= 1;
    } else if months < 0 && (days > 0 || (days == 0 && time > 0)) {
        days -= 30;
        months += 1;
    }
    if days > 0 && time < 0 {
        time += DAY_NANOS;
        days -= 1;
    } else if days < 0 && time > 0 {
        time -= DAY_NANOS;
        days += 1;
    }
    Some(IntervalMonthDayNano::new(i32::try_from(months).ok()?, i32::try_from(days).ok()?, time))
}

/// `make_interval(years, months, weeks, days, hours, mins, secs)`.
fn make_interval(f: [i64; 6], secs: f64) -> Option<IntervalMonthDayNano> {
    let months = f[0].checked_mul(12)?.checked_add(f[1])?;
    let days = f[2].checked_mul(7)?.checked_add(f[3])?;
    let micros = (secs * 1e6).round();
    if !micros.is_finite() || micros.abs() > 9.2e18 {
        return None;
    }
    let nanos = f[4]
        .checked_mul(3_600_000_000_000)?
        .checked_add(f[5].checked_mul(60_000_000_000)?)?
        .checked_add((micros as i64).checked_mul(1000)?)?;
    Some(IntervalMonthDayNano::new(i32::try_from(months).ok()?, i32::try_from(days).ok()?, nanos))
}

/// Microseconds of the wall time `y-m-d h:mi:s`, or PostgreSQL's error.
fn wall_micros(y: i32, m: i32, d: i32, h: i32, mi: i32, s: f64) -> Result<i64> {
    let bad_date = || {
        external(SqlError::new(code::DATETIME_OVERFLOW, format!("date field value out of range: {y}-{m:02}-{d:02}")))
    };
    let date =
        chrono::NaiveDate::from_ymd_opt(if y < 0 { y + 1 } else { y }, m as u32, d as u32).ok_or_else(bad_date)?;
    if y == 0 {
        return Err(bad_date());
    }
    if !(0..=23).contains(&h) || !(0..=59).contains(&mi) || !(0.0..61.0).contains(&s) {
        return Err(external(SqlError::new(
            code::DATETIME_OVERFLOW,
            format!("time field value out of range: {h}:{mi:02}:{s:02}"),
        )));
    }
    let micros = (s * 1e6).round() as i64;
    let day = date.and_hms_opt(0, 0, 0).ok_or_else(bad_date)?.and_utc().timestamp_micros();
    Ok(day + (i64::from(h) * 3600 + i64::from(mi) * 60) * 1_000_000 + micros)
}

impl ScalarUDFImpl for DateTimeFn {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        let wanted: &[DataType] = match self.op {
            Op::MakeInterval => &[
                DataType::Int64,
                DataType::Int64,
                DataType::Int64,
                DataType::Int64,
                DataType::Int64,
                DataType::Int64,
                DataType::Float64,
            ],
            Op::JustifyDays | Op::JustifyHours | Op::JustifyInterval => &[INTERVAL],
            Op::MakeDate => &[DataType::Int64, DataType::Int64, DataType::Int64],
            Op::MakeTimestamp => &[
                DataType::Int64,
                DataType::Int64,
                DataType::Int64,
                DataType::Int64,
                DataType::Int64,
                DataType::Float64,
            ],
            Op::MakeTimestampTz => &[
                DataType::Int64,
                DataType::Int64,
                DataType::Int64,
                DataType::Int64,
                DataType::Int64,
                DataType::Float64,
                DataType::Utf8,
            ],
        };
        let fixed = matches!(self.op, Op::MakeTimestamp | Op::MakeDate)
            || matches!(self.op, Op::JustifyDays | Op::JustifyHours | Op::JustifyInterval);
        let fits = if fixed {
            args.len() == wanted.len()
        } else if self.op == Op::MakeTimestampTz {
            (6..=7).contains(&args.len())
        } else {
            args.len() <= wanted.len()
        };
        if !fits {
            return Err(DataFusionError::Plan(format!(
                "function {}({} arguments) does not exist",
                self.name,
                args.len()
            )));
        }
        Ok(wanted[..args.len()].to_vec())
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match self.op {
            Op::MakeDate => DataType::Date32,
            Op::MakeTimestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
            Op::MakeTimestampTz => {
                DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from(crate::values::types::UTC)))
            }
            _ => INTERVAL,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let arrays: Vec<ArrayRef> = args.args.iter().map(|a| a.to_array(n)).collect::<Result<_>>()?;
        let null = |i: usize| arrays.iter().any(|a| a.is_null(i));
        let out: ArrayRef = match self.op {
            Op::JustifyDays | Op::JustifyHours | Op::JustifyInterval => {
                let values = arrays[0].as_primitive::<IntervalMonthDayNanoType>();
                let justify = match self.op {
                    Op::JustifyDays => justify_days,
                    Op::JustifyHours => justify_hours,
                    _ => justify_interval,
                };
                let out: IntervalMonthDayNanoArray = values
                    .iter()
                    .map(|v| v.map(|v| justify(v).ok_or_else(out_of_range)).transpose())
                    .collect::<Result<_>>()?;
                Arc::new(out)
            }
            Op::MakeInterval => {
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    if null(i) {
                        out.push(None);
                        continue;
                    }
                    let mut f = [0i64; 6];
                    for (k, a) in arrays.iter().take(6).enumerate() {
                        f[k] = a.as_primitive::<Int64Type>().value(i);
                    }
                    let secs = arrays.get(6).map_or(0.0, |a| a.as_primitive::<Float64Type>().value(i));
                    out.push(Some(make_interval(f, secs).ok_or_else(out_of_range)?));
                }
                Arc::new(IntervalMonthDayNanoArray::from(out))
            }
            Op::MakeDate => {
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let int = |k: usize| {
                        i32::try_from(arrays[k].as_primitive::<Int64Type>().value(i))
                            .map_err(|_| external(SqlError::new(code::OUT_OF_RANGE, "integer out of range")))
                    };
                    out.push(match null(i) {
                        true => None,
                        // A negative year is BC, as in make_timestamp.
                        false => Some((wall_micros(int(0)?, int(1)?, int(2)?, 0, 0, 0.0)? / 86_400_000_000) as i32),
                    });
                }
                Arc::new(datafusion::arrow::array::Date32Array::from(out))
            }
            Op::MakeTimestamp | Op::MakeTimestampTz => {
                let mut out = Vec::with_capacity(n);
                let session = (self.zone.0)();
                for i in 0..n {
                    if null(i) {
                        out.push(None);
                        continue;
                    }
                    let int = |k: usize| {
                        i32::try_from(arrays[k].as_primitive::<Int64Type>().value(i))
                            .map_err(|_| external(SqlError::new(code::OUT_OF_RANGE, "integer out of range")))
                    };
                    let s = arrays[5].as_primitive::<Float64Type>().value(i);
                    let wall = wall_micros(int(0)?, int(1)?, int(2)?, int(3)?, int(4)?, s)?;
                    out.push(Some(match self.op {
                        Op::MakeTimestamp => wall,
                        _ => {
                            let zone = match arrays.get(6) {
                                Some(z) => {
                                    crate::values::tz::Zone::parse(z.as_string::<i32>().value(i)).map_err(external)?.0
                                }
                                None => session,
                            };
                            zone.instant(wall)
                        }
                    }));
                }
                let out = TimestampMicrosecondArray::from(out);
                Arc::new(match self.op {
                    Op::MakeTimestampTz => out.with_timezone(crate::values::types::UTC),
                    _ => out,
                })
            }
        };
        crate::values::udf_values::columnar(out, scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn justifies_as_postgres() {
        let iv = |m, d, h: i64| IntervalMonthDayNano::new(m, d, h * 3_600_000_000_000);
        assert_eq!(justify_hours(iv(0, 0, 27)), Some(iv(0, 1, 3)));
        assert_eq!(justify_days(iv(0, 35, 0)), Some(iv(1, 5, 0)));
        assert_eq!(justify_interval(iv(1, -1, 0)), Some(iv(0, 29, 0)));
        assert_eq!(justify_interval(iv(0, 0, -25)), Some(iv(0, -1, -1)));
        assert_eq!(make_interval([1, 2, 1, 3, 4, 5], 6.5), Some(IntervalMonthDayNano::new(14, 10, 14_706_500_000_000)));
    }
}
