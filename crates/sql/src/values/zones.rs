//! `AT TIME ZONE` as PostgreSQL computes it.
//!
//! - `timestamptz AT TIME ZONE z` is the wall-clock time in zone `z` of
//!   that instant, a `timestamp` (`'2024-01-01 12:00+00' AT TIME ZONE
//!   'America/New_York'` is `2024-01-01 07:00:00`). DataFusion gave the
//!   same instant labelled with the zone, which Tessera printed in UTC: the
//!   zone was silently ignored.
//! - `timestamp AT TIME ZONE z` is the instant at which zone `z`'s clocks
//!   show that time, a `timestamptz` (a time skipped by a change to summer
//!   time is read with the offset before the change; one shown twice, as
//!   the later instant: PostgreSQL's readings).
//!
//! Zones are IANA names (`Europe/Paris`) and `UTC`; others are refused
//! (0A000) rather than read otherwise than PostgreSQL reads them (its
//! POSIX `UTC+2` is two hours *west*).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

use crate::error::{SqlError, code};
use crate::values::types::SqlType;

pub fn register(ctx: &datafusion::execution::context::SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(AtTimeZone { signature: Signature::any(2, Volatility::Immutable) }));
}

/// Rewrites `x AT TIME ZONE z` into `tessera_at_time_zone(x, z)`.
pub fn rewrite(e: &mut datafusion::sql::sqlparser::ast::Expr) {
    use datafusion::sql::sqlparser::ast::Expr as Ast;
    if let Ast::AtTimeZone { timestamp, time_zone } = e {
        // An untyped literal is a timestamptz, as PostgreSQL resolves it.
        let literal = matches!(timestamp.as_ref(), Ast::Value(v)
            if matches!(v.value, datafusion::sql::sqlparser::ast::Value::SingleQuotedString(_)));
        let timestamp =
            if literal { format!("CAST({timestamp} AS timestamp with time zone)") } else { timestamp.to_string() };
        if let Ok(new) = crate::parser::parse_expr(&format!("tessera_at_time_zone({timestamp}, {time_zone})")) {
            *e = new;
        }
    }
}

fn refuse(code: &'static str, message: String) -> DataFusionError {
    DataFusionError::External(Box::new(SqlError::new(code, message)))
}

/// The zone a name names: UTC, an IANA zone, or an abbreviation of
/// PostgreSQL's default set (`EST`, `MSK`).
fn zone(name: &str) -> Result<crate::values::tz::Zone> {
    use crate::values::tz::Zone;
    match name.trim() {
        n if n.eq_ignore_ascii_case("utc") || n.eq_ignore_ascii_case("gmt") || n.eq_ignore_ascii_case("z") => {
            Ok(Zone::Utc)
        }
        n if let Some(z) = crate::values::timestamps::abbreviation_zone(n) => Ok(z),
        n => n.parse::<chrono_tz::Tz>().map(Zone::Named).map_err(|_| {
            let known = n.contains('/');
            refuse(
                if known { "22023" } else { code::FEATURE_NOT_SUPPORTED },
                if known {
                    format!("time zone \"{n}\" not recognized")
                } else {
                    format!("time zone \"{n}\" is not supported yet: name an IANA zone (Europe/Paris) or UTC")
                },
            )
        }),
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct AtTimeZone {
    signature: Signature,
}

impl ScalarUDFImpl for AtTimeZone {
    fn name(&self) -> &str {
        "tessera_at_time_zone"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match &args[0] {
            DataType::Timestamp(_, Some(_)) => Ok(SqlType::Timestamp.arrow_type()),
            DataType::Timestamp(_, None) | DataType::Date32 | DataType::Utf8 => Ok(SqlType::TimestampTz.arrow_type()),
            other => Err(refuse(code::UNDEFINED_FUNCTION, format!("AT TIME ZONE of a value of type {other}"))),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = match &args.args[1] {
            ColumnarValue::Scalar(ScalarValue::Utf8(Some(n)) | ScalarValue::Utf8View(Some(n))) => n.clone(),
            ColumnarValue::Scalar(s) if s.is_null() => {
                return Ok(ColumnarValue::Scalar(ScalarValue::try_from(
                    self.return_type(&[args.args[0].data_type()])?,
                )?));
            }
            _ => {
                return Err(refuse(
                    code::FEATURE_NOT_SUPPORTED,
                    "AT TIME ZONE with a zone that is not a constant is not supported yet".into(),
                ));
            }
        };
        let tz = zone(&name)?;
        // An abbreviation following a zone's history reads a skipped wall
        // time with the offset after the change.
        let after_gap = crate::values::timestamps::abbreviation_zone(name.trim()).is_some();
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let input = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let zoned = matches!(input.data_type(), DataType::Timestamp(_, Some(_)));
        // Both directions work on microseconds since the epoch: of the
        // instant (UTC), or of the wall time read as if it were UTC.
        // Text that is not a timestamp is an error, not NULL.
        let strict = datafusion::arrow::compute::CastOptions { safe: false, ..Default::default() };
        let micros = datafusion::arrow::compute::cast_with_options(
            &input,
            &DataType::Timestamp(TimeUnit::Microsecond, None),
            &strict,
        )?;
        let micros = micros.as_any().downcast_ref::<TimestampMicrosecondArray>().expect("microseconds");
        let out: TimestampMicrosecondArray = micros
            .iter()
            .map(|v| v.map(|v| if zoned { to_wall_time(v, tz) } else { to_instant(v, tz, after_gap) }).transpose())
            .collect::<Result<_>>()?;
        let out: ArrayRef = if zoned { Arc::new(out) } else { Arc::new(out.with_timezone("+00:00")) };
        let out = datafusion::arrow::compute::cast(&out, &self.return_type(&[input.data_type().clone()])?)?;
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
        } else {
            ColumnarValue::Array(out)
        })
    }
}

/// The wall-clock time in `tz` of the instant `micros`.
fn to_wall_time(micros: i64, tz: impl Into<crate::values::tz::Zone>) -> Result<i64> {
    Ok(tz.into().wall_time(micros))
}

/// The instant at which `tz`'s clocks show the wall time `micros` (see
/// `tz` for the times shown twice or skipped).
fn to_instant(micros: i64, tz: impl Into<crate::values::tz::Zone>, after_gap: bool) -> Result<i64> {
    Ok(tz.into().instant_with_gap(micros, after_gap))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDateTime;

    fn micros(text: &str) -> i64 {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").unwrap().and_utc().timestamp_micros()
    }

    #[test]
    fn wall_times_and_instants_in_a_zone() {
        let ny: chrono_tz::Tz = "America/New_York".parse().unwrap();
        assert_eq!(to_wall_time(micros("2024-01-01 12:00:00"), ny).unwrap(), micros("2024-01-01 07:00:00"));
        assert_eq!(to_wall_time(micros("2024-07-01 12:00:00"), ny).unwrap(), micros("2024-07-01 08:00:00"));
        assert_eq!(to_instant(micros("2024-01-01 12:00:00"), ny, false).unwrap(), micros("2024-01-01 17:00:00"));
        // 02:30 does not exist on 2024-03-10 in New York: read an hour later.
        assert_eq!(to_instant(micros("2024-03-10 02:30:00"), ny, false).unwrap(), micros("2024-03-10 07:30:00"));
        assert!(zone("Mars/Base").is_err() && zone("UTC+2").is_err() && zone("utc").is_ok());
    }
}
