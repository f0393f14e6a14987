//! `timestamptz` operations that depend on the session's time zone.
//!
//! Inside DataFusion a `timestamptz` is an instant labelled UTC, so its
//! conversions and calendar functions work in UTC. PostgreSQL works in the
//! session's `TimeZone` (see `tz`): `'2024-07-01 23:30+00'::timestamptz::
//! date` is 2024-07-02 in Paris, `date_trunc('day', …)` is the zone's
//! midnight, `+ interval '1 day'` keeps the wall time across a change to
//! summer time. When the session's zone is not UTC, the analyzer rule
//! [`SessionTimeZone`] (after type coercion) rewrites, for a timestamptz
//! `x`:
//! - casts to `timestamp`, `date` and `time` as casts of `x`'s wall time
//!   in the zone (`tessera_wall_time`); casts from `timestamp` and `date`
//!   as the instant of that wall time (`tessera_instant`); casts to text
//!   as its text in the zone; casts from text as the zone's wall time
//!   (text with an offset keeps it);
//! - `date_trunc(unit, x)` as the instant of the truncated wall time;
//!   `extract`/`date_part` of a field other than `epoch` as the field of
//!   the wall time; `current_date` as today's date in the zone;
//! - `x ± interval` as PostgreSQL computes it: months and days added to the
//!   wall time, the rest to the instant (`tessera_tstz_plus`);
//! - `to_char(x, …)` on the wall time; with the zone's patterns (`TZ`,
//!   `OF`, `TZH`, `TZM`), each value with its own offset and abbreviation
//!   (`tessera_to_char_in_zone`).
//!
//! In UTC the rule changes nothing, so the default costs nothing.

use std::sync::Arc;

use chrono::{Months, NaiveDateTime};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, IntervalMonthDayNanoArray, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, DataFusionError, ExprSchema, Result, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    BinaryExpr, Cast, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

use crate::error::{SqlError, code};
use crate::values::tz::{Zone, ZoneSource};

/// Registers the functions the rule calls.
pub fn register(ctx: &SessionContext) {
    for kind in [Kind::WallTime, Kind::Instant, Kind::Text, Kind::FromText, Kind::Plus, Kind::ToChar] {
        ctx.register_udf(udf(kind));
    }
}

/// The analyzer rule (see the module's text).
pub struct SessionTimeZone {
    pub zone: ZoneSource,
}

impl std::fmt::Debug for SessionTimeZone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionTimeZone")
    }
}

impl AnalyzerRule for SessionTimeZone {
    fn name(&self) -> &str {
        "tessera_session_time_zone"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let zone = (self.zone)();
        if zone.is_utc() {
            return Ok(plan);
        }
        let name = zone.setting_name();
        crate::values::exact_casts::rewrite_expressions(plan, |e, schema| in_zone(e, schema, &name))
    }
}

fn is_tstz(t: &DataType) -> bool {
    matches!(t, DataType::Timestamp(_, Some(_)))
}

const WALL: DataType = DataType::Timestamp(TimeUnit::Microsecond, None);

fn call(kind: Kind, mut args: Vec<Expr>, zone: &str) -> Expr {
    args.push(Expr::Literal(ScalarValue::Utf8(Some(zone.to_string())), None));
    Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(udf(kind)), args))
}

/// `e` (text) read as a timestamptz, a wall time of the zone named `zone`
/// when it has no offset.
pub(crate) fn text_to_tstz(e: Expr, zone: &str) -> Expr {
    call(Kind::FromText, vec![e], zone)
}

fn cast(e: Expr, to: DataType) -> Expr {
    Expr::Cast(Cast::new(Box::new(e), to))
}

/// `e` rewritten to work in the zone named `zone` (see the module's text).
fn in_zone(e: Expr, schema: &DFSchema, zone: &str) -> Result<Transformed<Expr>> {
    let type_of = |x: &Expr| x.get_type(schema as &dyn ExprSchema).ok();
    match e {
        Expr::Cast(c) => {
            let (Some(from), to) = (type_of(&c.expr), c.field.data_type().clone()) else {
                return Ok(Transformed::no(Expr::Cast(c)));
            };
            let new = match (is_tstz(&from), &to) {
                (true, DataType::Timestamp(_, None) | DataType::Date32 | DataType::Time64(_)) => {
                    cast(call(Kind::WallTime, vec![*c.expr], zone), to)
                }
                (true, DataType::Utf8) => call(Kind::Text, vec![*c.expr], zone),
                (false, DataType::Timestamp(_, Some(_))) => match from {
                    DataType::Timestamp(_, None) | DataType::Date32 => {
                        cast(call(Kind::Instant, vec![cast(*c.expr, WALL)], zone), to)
                    }
                    DataType::Utf8 => cast(call(Kind::FromText, vec![*c.expr], zone), to),
                    _ => return Ok(Transformed::no(Expr::Cast(c))),
                },
                _ => return Ok(Transformed::no(Expr::Cast(c))),
            };
            Ok(Transformed::yes(new))
        }
        Expr::ScalarFunction(f) => {
            let tstz_arg = f.args.get(1).and_then(type_of).is_some_and(|t| is_tstz(&t));
            let first = match f.args.first() {
                Some(Expr::Literal(ScalarValue::Utf8(Some(s)), _)) => Some(s.to_lowercase()),
                _ => None,
            };
            match f.func.name() {
                "date_trunc" if tstz_arg => {
                    let ty = type_of(&f.args[1]).unwrap_or(WALL);
                    let mut args = f.args;
                    args[1] = call(Kind::WallTime, vec![args[1].clone()], zone);
                    let truncated = Expr::ScalarFunction(ScalarFunction::new_udf(f.func, args));
                    Ok(Transformed::yes(cast(call(Kind::Instant, vec![cast(truncated, WALL)], zone), ty)))
                }
                "date_part" if tstz_arg && first.as_deref() != Some("epoch") => {
                    let mut args = f.args;
                    args[1] = call(Kind::WallTime, vec![args[1].clone()], zone);
                    Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(f.func, args))))
                }
                // `x::text`, which `functions::rewrite_casts` made a call.
                "tessera_to_text" if f.args.first().and_then(type_of).is_some_and(|t| is_tstz(&t)) => {
                    Ok(Transformed::yes(call(Kind::Text, vec![f.args[0].clone()], zone)))
                }
                "current_date" => {
                    let now = datafusion::functions::datetime::expr_fn::now();
                    Ok(Transformed::yes(cast(call(Kind::WallTime, vec![now], zone), DataType::Date32)))
                }
                "to_char" if f.args.first().and_then(type_of).is_some_and(|t| is_tstz(&t)) => {
                    if let Some(Expr::Literal(ScalarValue::Utf8(Some(t)), _)) = f.args.get(1)
                        && ["TZ", "tz", "OF", "of"].iter().any(|p| t.contains(p))
                    {
                        // The zone's fields change from row to row (summer time).
                        let args = vec![f.args[0].clone(), f.args[1].clone()];
                        return Ok(Transformed::yes(call(Kind::ToChar, args, zone)));
                    }
                    let mut args = f.args;
                    args[0] = call(Kind::WallTime, vec![args[0].clone()], zone);
                    Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(f.func, args))))
                }
                _ => Ok(Transformed::no(Expr::ScalarFunction(f))),
            }
        }
        Expr::BinaryExpr(BinaryExpr { left, op: op @ (Operator::Plus | Operator::Minus), right }) => {
            let (lt, rt) = (type_of(&left), type_of(&right));
            let interval = |t: &Option<DataType>| matches!(t, Some(DataType::Interval(_)));
            let tstz = |t: &Option<DataType>| t.as_ref().is_some_and(is_tstz);
            let sign = Expr::Literal(ScalarValue::Int64(Some(if op == Operator::Minus { -1 } else { 1 })), None);
            if tstz(&lt) && interval(&rt) {
                let ty = lt.unwrap_or(WALL);
                return Ok(Transformed::yes(cast(call(Kind::Plus, vec![*left, *right, sign], zone), ty)));
            }
            if interval(&lt) && tstz(&rt) && op == Operator::Plus {
                let ty = rt.unwrap_or(WALL);
                return Ok(Transformed::yes(cast(call(Kind::Plus, vec![*right, *left, sign], zone), ty)));
            }
            Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr { left, op, right })))
        }
        other => Ok(Transformed::no(other)),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// `tessera_wall_time(tstz, zone)`: a `timestamp`.
    WallTime,
    /// `tessera_instant(timestamp, zone)`: a `timestamptz`.
    Instant,
    /// `tessera_tstz_text(tstz, zone)`: its text in the zone.
    Text,
    /// `tessera_text_to_tstz(text, zone)`: text read in the zone.
    FromText,
    /// `tessera_tstz_plus(tstz, interval, sign, zone)`.
    Plus,
    /// `tessera_to_char_in_zone(tstz, template, zone)`: `to_char` with the
    /// zone's patterns.
    ToChar,
}

fn udf(kind: Kind) -> ScalarUDF {
    let arity = match kind {
        Kind::Plus => 4,
        Kind::ToChar => 3,
        _ => 2,
    };
    ScalarUDF::new_from_impl(ZoneFn { kind, signature: Signature::any(arity, Volatility::Immutable) })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ZoneFn {
    kind: Kind,
    signature: Signature,
}

impl ScalarUDFImpl for ZoneFn {
    fn name(&self) -> &str {
        match self.kind {
            Kind::WallTime => "tessera_wall_time",
            Kind::Instant => "tessera_instant",
            Kind::Text => "tessera_tstz_text",
            Kind::FromText => "tessera_text_to_tstz",
            Kind::Plus => "tessera_tstz_plus",
            Kind::ToChar => "tessera_to_char_in_zone",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::WallTime => WALL,
            Kind::Text | Kind::ToChar => DataType::Utf8,
            Kind::Instant | Kind::FromText | Kind::Plus => crate::values::types::SqlType::TimestampTz.arrow_type(),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let zone = match args.args.last() {
            Some(ColumnarValue::Scalar(ScalarValue::Utf8(Some(z)))) => Zone::of_setting(z),
            _ => return Err(DataFusionError::Internal(format!("{}: the zone must be a constant", self.name()))),
        };
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let input = args.args[0].to_array(n)?;
        let out: ArrayRef = match self.kind {
            Kind::WallTime => Arc::new(map_micros(&input, |v| Some(zone.wall_time(v)))?),
            Kind::Instant => {
                Arc::new(map_micros(&input, |v| Some(zone.instant(v)))?.with_timezone(crate::values::types::UTC))
            }
            Kind::Text => {
                let micros = micros_of(&input)?;
                let texts: StringArray = micros
                    .iter()
                    .map(|v| {
                        v.map(|v| {
                            let mut s = String::new();
                            crate::values::text::write_timestamptz(&mut s, v, zone);
                            s
                        })
                    })
                    .collect();
                Arc::new(texts)
            }
            Kind::FromText => Arc::new(crate::values::timestamp_units::read_texts(&input, true, zone)?),
            Kind::ToChar => Arc::new(to_char_in_zone(&input, &args.args[1].to_array(n)?, zone)?),
            Kind::Plus => {
                let intervals = args.args[1].to_array(n)?;
                let sign = match &args.args[2] {
                    ColumnarValue::Scalar(ScalarValue::Int64(Some(s))) => *s,
                    _ => 1,
                };
                Arc::new(plus(&input, &intervals, sign, zone)?.with_timezone(crate::values::types::UTC))
            }
        };
        crate::values::udf_values::columnar(out, scalar)
    }
}

/// `to_char(x, template)` of instants in `zone`, its zone patterns (`TZ`,
/// `OF`, `TZH`, `TZM`) those of each value's own offset.
fn to_char_in_zone(values: &ArrayRef, templates: &ArrayRef, zone: Zone) -> Result<StringArray> {
    let micros = micros_of(values)?;
    let templates = datafusion::arrow::compute::cast(templates, &DataType::Utf8)?;
    let templates = templates.as_string::<i32>();
    let mut out = Vec::with_capacity(micros.len());
    for i in 0..micros.len() {
        if micros.is_null(i) || templates.is_null(i) || crate::values::timestamp_in::is_infinite(micros.value(i)) {
            out.push(None);
            continue;
        }
        let utc = micros.value(i);
        let template = crate::values::to_char::with_zone_fields(
            templates.value(i),
            &zone.abbreviation_at(utc),
            zone.offset_at(utc),
        );
        let format = crate::values::to_char::strftime_of(&template, false)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let wall = chrono::DateTime::from_timestamp_micros(zone.wall_time(utc))
            .ok_or_else(|| {
                DataFusionError::External(Box::new(SqlError::new(code::DATETIME_OVERFLOW, "timestamp out of range")))
            })?
            .naive_utc();
        let mut text = String::new();
        std::fmt::Write::write_fmt(&mut text, format_args!("{}", wall.format(&format)))
            .map_err(|_| DataFusionError::Execution(format!("to_char: bad template \"{}\"", templates.value(i))))?;
        out.push(Some(text));
    }
    Ok(StringArray::from(out))
}

/// Microseconds of a timestamp array of any unit.
fn micros_of(a: &ArrayRef) -> Result<TimestampMicrosecondArray> {
    let us = datafusion::arrow::compute::cast(a, &WALL)?;
    Ok(us.as_primitive::<TimestampMicrosecondType>().clone())
}

fn map_micros(a: &ArrayRef, f: impl Fn(i64) -> Option<i64>) -> Result<TimestampMicrosecondArray> {
    Ok(micros_of(a)?.iter().map(|v| v.and_then(&f)).collect())
}

/// `ts ± interval` as PostgreSQL's `timestamptz_pl_interval`: months (the
/// day clamped to the month's end) and days added to the wall time in
/// `zone`, then the time part to the instant.
fn plus(ts: &ArrayRef, intervals: &ArrayRef, sign: i64, zone: Zone) -> Result<TimestampMicrosecondArray> {
    let micros = micros_of(ts)?;
    let intervals = datafusion::arrow::compute::cast(
        intervals,
        &DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano),
    )?;
    let intervals: &IntervalMonthDayNanoArray = intervals.as_primitive();
    let overflow = || refuse_overflow();
    let mut out = Vec::with_capacity(micros.len());
    for i in 0..micros.len() {
        if micros.is_null(i) || intervals.is_null(i) {
            out.push(None);
            continue;
        }
        let (t, iv) = (micros.value(i), intervals.value(i));
        let (months, days) = (i64::from(iv.months) * sign, i64::from(iv.days) * sign);
        let mut at = t;
        if months != 0 || days != 0 {
            let wall = chrono::DateTime::from_timestamp_micros(zone.wall_time(t)).ok_or_else(overflow)?.naive_utc();
            let wall = add_months(wall, months).ok_or_else(overflow)?;
            let wall = wall.checked_add_signed(chrono::Duration::days(days)).ok_or_else(overflow)?;
            at = zone.instant(wall.and_utc().timestamp_micros());
        }
        out.push(Some(at.checked_add(iv.nanoseconds / 1000 * sign).ok_or_else(overflow)?));
    }
    Ok(TimestampMicrosecondArray::from(out))
}

fn add_months(t: NaiveDateTime, months: i64) -> Option<NaiveDateTime> {
    let n = u32::try_from(months.unsigned_abs()).ok()?;
    if months >= 0 { t.checked_add_months(Months::new(n)) } else { t.checked_sub_months(Months::new(n)) }
}

fn refuse_overflow() -> DataFusionError {
    DataFusionError::External(Box::new(SqlError::new(code::DATETIME_OVERFLOW, "timestamp out of range")))
}
