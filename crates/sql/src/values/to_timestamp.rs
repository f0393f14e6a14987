//! `to_timestamp` and `to_date` as PostgreSQL's: seconds since the epoch
//! to a timestamptz, and text read with a PostgreSQL template.
//!
//! DataFusion's `to_timestamp(float)` saturated at its nanosecond range
//! (`to_timestamp('Infinity')` was a date in 2262, `'NaN'` the epoch), and
//! its `to_timestamp(text, format)` and `to_date` take chrono formats, so
//! `to_timestamp('2024-01-05', 'YYYY-MM-DD')` failed. Here:
//! - `to_timestamp(x)`: `x` seconds (rounded to microseconds) after
//!   1970-01-01 UTC; ±Infinity is ±infinity; NaN and values out of range
//!   are refused (22008), as in PostgreSQL.
//! - `to_timestamp(text, template)` and `to_date(text, template)`: the
//!   template's patterns `YYYY YYY YY Y MM DD DDD HH24 HH12 HH MI SS MS US
//!   AM PM A.M. P.M. (any case) Mon MON mon Month MONTH month Dy Day TZH
//!   TZM`, the `FM` prefix, quoted text (skipped in the input, a character
//!   for a character) and separators, read as PostgreSQL's `to_timestamp`
//!   reads them without `FX`: blanks around fields are skipped, a separator
//!   in the template matches one in the input or none, a number runs to
//!   its pattern's width unless a separator (or the end) follows it in the
//!   template, when it takes all its digits. The fields without an offset
//!   (`TZH`) are a wall time of the session's zone. Other patterns are
//!   refused (0A000) rather than misread.

use std::sync::Arc;

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use datafusion::arrow::array::{Array, AsArray, Date32Array, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

use crate::error::{SqlError, code};
use crate::values::tz::{Zone, ZoneSource};

/// Registers `to_timestamp` and `to_date`, reading `zone` for wall times.
pub fn register(ctx: &SessionContext, zone: ZoneSource) {
    for date in [false, true] {
        ctx.register_udf(ScalarUDF::new_from_impl(ToTimestamp {
            date,
            signature: Signature::user_defined(Volatility::Stable),
            zone: Holder(zone.clone()),
        }));
    }
}

/// The session's zone, compared by nothing (one per session context).
struct Holder(ZoneSource);

impl std::fmt::Debug for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("zone")
    }
}

impl PartialEq for Holder {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Holder {}

impl std::hash::Hash for Holder {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToTimestamp {
    /// `to_date` rather than `to_timestamp`.
    date: bool,
    signature: Signature,
    zone: Holder,
}

fn external(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

impl ScalarUDFImpl for ToTimestamp {
    fn name(&self) -> &str {
        if self.date { "to_date" } else { "to_timestamp" }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        match args.len() {
            1 if !self.date => Ok(vec![DataType::Float64]),
            2 => Ok(vec![DataType::Utf8, DataType::Utf8]),
            n => Err(DataFusionError::Plan(format!("function {}({n} arguments) does not exist", self.name()))),
        }
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(if self.date { DataType::Date32 } else { crate::values::types::SqlType::TimestampTz.arrow_type() })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let arrays = args.args.iter().map(|a| a.to_array(n)).collect::<Result<Vec<_>>>()?;
        if arrays.len() == 1 {
            let seconds = arrays[0].as_primitive::<Float64Type>();
            let out = seconds.iter().map(|s| s.map(epoch_seconds).transpose()).collect::<Result<Vec<_>>>()?;
            let out = TimestampMicrosecondArray::from(out).with_timezone(crate::values::types::UTC);
            return crate::values::udf_values::columnar(Arc::new(out), scalar);
        }
        let zone = (self.zone.0)();
        let (texts, templates) = (arrays[0].as_string::<i32>(), arrays[1].as_string::<i32>());
        let mut micros = Vec::with_capacity(n);
        for i in 0..n {
            micros.push(match texts.is_null(i) || templates.is_null(i) {
                true => None,
                false => Some(read(texts.value(i), templates.value(i), zone, self.date).map_err(external)?),
            });
        }
        let out: Arc<dyn Array> = if self.date {
            Arc::new(Date32Array::from(
                micros.iter().map(|m| m.map(|m| m.div_euclid(86_400_000_000) as i32)).collect::<Vec<_>>(),
            ))
        } else {
            Arc::new(TimestampMicrosecondArray::from(micros).with_timezone(crate::values::types::UTC))
        };
        crate::values::udf_values::columnar(out, scalar)
    }
}

/// `to_timestamp(seconds)` in microseconds.
fn epoch_seconds(s: f64) -> Result<i64> {
    use crate::values::timestamp_in::{INFINITY, NEG_INFINITY, in_range};
    if s.is_nan() {
        return Err(external(SqlError::new(code::DATETIME_OVERFLOW, "timestamp cannot be NaN")));
    }
    if s.is_infinite() {
        return Ok(if s > 0.0 { INFINITY } else { NEG_INFINITY });
    }
    // As PostgreSQL computes it: from its own epoch (2000-01-01), so the
    // product rounds the same way (`rint`, ties to even).
    const PG_EPOCH_SECONDS: f64 = 946_684_800.0;
    let micros = ((s - PG_EPOCH_SECONDS) * 1e6).round_ties_even();
    if micros.abs() < 9.2e18 && in_range(micros as i64 + 946_684_800_000_000) {
        Ok(micros as i64 + 946_684_800_000_000)
    } else {
        Err(external(SqlError::new(code::DATETIME_OVERFLOW, format!("timestamp out of range: \"{s}\""))))
    }
}

/// The fields a template read.
#[derive(Default)]
struct Fields {
    year: Option<i32>,
    month: Option<u32>,
    day: Option<u32>,
    day_of_year: Option<u32>,
    hour: Option<u32>,
    twelve_hour: bool,
    pm: Option<bool>,
    minute: u32,
    second: u32,
    micros: u32,
    /// `TZH`: the offset's sign and hours.
    offset_hours: Option<(i32, i32)>,
    /// `TZM`: the offset's minutes.
    offset_minutes: i32,
}

impl Fields {
    /// The offset east in seconds, if the text gave one.
    fn offset(&self) -> Option<i32> {
        match self.offset_hours {
            Some((sign, h)) => Some(sign * (h * 3600 + self.offset_minutes * 60)),
            None if self.offset_minutes != 0 => Some(self.offset_minutes * 60),
            None => None,
        }
    }
}

/// A pattern of the template.
#[derive(Clone, Copy)]
enum Pattern {
    /// A number of at most this many digits (when followed by more of the
    /// template), into the field named.
    Number(&'static str, usize),
    MonthName {
        full: bool,
    },
    DayName {
        full: bool,
    },
    Meridiem {
        dots: bool,
    },
    OffsetHours,
}

/// The patterns read, longest first.
const PATTERNS: &[(&str, Pattern)] = &[
    ("YYYY", Pattern::Number("year", 4)),
    ("YYY", Pattern::Number("year", 3)),
    ("YY", Pattern::Number("year", 2)),
    ("Y", Pattern::Number("year", 1)),
    ("HH24", Pattern::Number("hour", 2)),
    ("HH12", Pattern::Number("hour12", 2)),
    ("HH", Pattern::Number("hour12", 2)),
    ("MI", Pattern::Number("minute", 2)),
    ("SS", Pattern::Number("second", 2)),
    ("MS", Pattern::Number("ms", 3)),
    ("US", Pattern::Number("us", 6)),
    ("DDD", Pattern::Number("doy", 3)),
    ("DD", Pattern::Number("day", 2)),
    ("MM", Pattern::Number("month", 2)),
    ("TZH", Pattern::OffsetHours),
    ("TZM", Pattern::Number("tzm", 2)),
    ("MONTH", Pattern::MonthName { full: true }),
    ("MON", Pattern::MonthName { full: false }),
    ("DAY", Pattern::DayName { full: true }),
    ("DY", Pattern::DayName { full: false }),
    ("A.M.", Pattern::Meridiem { dots: true }),
    ("P.M.", Pattern::Meridiem { dots: true }),
    ("AM", Pattern::Meridiem { dots: false }),
    ("PM", Pattern::Meridiem { dots: false }),
];

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const DAYS: [&str; 7] = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];

fn invalid(what: &str, text: &str) -> SqlError {
    SqlError::new(code::DATETIME_FORMAT, format!("invalid value \"{text}\" for \"{what}\""))
}

fn is_separator(c: char) -> bool {
    !c.is_alphanumeric()
}

/// `text` read with `template`, as microseconds of a timestamptz (or of
/// the date, `date`, at midnight UTC).
fn read(text: &str, template: &str, zone: Zone, date: bool) -> std::result::Result<i64, SqlError> {
    let fields = parse(text, template)?;
    let out_of_range =
        || SqlError::new(code::DATETIME_OVERFLOW, format!("date/time field value out of range: \"{text}\""));
    let year = fields.year.unwrap_or(1);
    let day = match fields.day_of_year {
        Some(doy) if fields.month.is_none() => NaiveDate::from_yo_opt(year, doy),
        _ => NaiveDate::from_ymd_opt(year, fields.month.unwrap_or(1), fields.day.unwrap_or(1)),
    }
    .ok_or_else(out_of_range)?;
    let mut hour = fields.hour.unwrap_or(0);
    if fields.twelve_hour || fields.pm.is_some() {
        if !(1..=12).contains(&hour) && fields.hour.is_some() {
            return Err(SqlError::new(
                code::DATETIME_FORMAT,
                format!("hour \"{hour}\" is invalid for the 12-hour clock"),
            ));
        }
        hour = match (hour, fields.pm == Some(true)) {
            (12, false) => 0,
            (12, true) => 12,
            (h, true) => h + 12,
            (h, false) => h,
        };
    }
    let time =
        NaiveTime::from_hms_micro_opt(hour, fields.minute, fields.second, fields.micros).ok_or_else(out_of_range)?;
    let wall = NaiveDateTime::new(day, time).and_utc().timestamp_micros();
    if date {
        return Ok(wall - wall.rem_euclid(86_400_000_000));
    }
    Ok(match fields.offset() {
        Some(east) => wall - i64::from(east) * 1_000_000,
        None => zone.instant(wall),
    })
}

/// The fields of `text` by `template` (see the module's text).
fn parse(text: &str, template: &str) -> std::result::Result<Fields, SqlError> {
    let mut f = Fields::default();
    let mut input = text;
    let mut rest = template;
    let mut fill = false;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("FM") {
            fill = true;
            rest = &rest[2..];
            continue;
        }
        if c == '"' {
            let end = rest[1..].find('"').map_or(rest.len(), |i| i + 2);
            let literal = rest[1..end.min(rest.len())].trim_end_matches('"');
            for _ in literal.chars() {
                let mut chars = input.chars();
                chars.next();
                input = chars.as_str();
            }
            rest = &rest[end.min(rest.len())..];
            continue;
        }
        let upper = rest.to_ascii_uppercase();
        if upper.starts_with("SSSS") || upper.starts_with("Y,YYY") {
            let word: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == ',').collect();
            return Err(SqlError::unsupported(format!("the to_timestamp template pattern at \"{word}\"")));
        }
        let Some((name, pattern)) = PATTERNS.iter().find(|(p, _)| upper.starts_with(p)) else {
            if c.is_alphanumeric() {
                let word: String = rest.chars().take_while(|c| c.is_alphanumeric()).collect();
                return Err(SqlError::unsupported(format!("the to_timestamp template pattern at \"{word}\"")));
            }
            // A separator: one in the input, or none; blanks any number.
            if c.is_whitespace() {
                input = input.trim_start();
            } else if let Some(i) = input.chars().next().filter(|i| is_separator(*i) && !i.is_whitespace()) {
                input = &input[i.len_utf8()..];
            }
            rest = &rest[c.len_utf8()..];
            continue;
        };
        let pattern_text = &rest[..name.len()];
        rest = &rest[name.len()..];
        input = input.trim_start();
        match *pattern {
            Pattern::Number(field, width) => {
                let unlimited = fill || rest.chars().next().is_none_or(is_separator);
                let digits: String =
                    input.chars().take_while(char::is_ascii_digit).take(if unlimited { 18 } else { width }).collect();
                if digits.is_empty() {
                    let found: String = input.chars().take(width.max(2)).collect();
                    return Err(invalid(pattern_text, &found));
                }
                input = &input[digits.len()..];
                let v: i64 = digits.parse().map_err(|_| invalid(pattern_text, &digits))?;
                let small = || u32::try_from(v).map_err(|_| invalid(pattern_text, &digits));
                match field {
                    // Two digits mean 1970–2069; three, 1100–2099 (as PostgreSQL).
                    "year" => {
                        let y = i32::try_from(v).map_err(|_| invalid(pattern_text, &digits))?;
                        f.year = Some(match digits.len() {
                            1 => 2000 + y,
                            2 if y < 70 => 2000 + y,
                            2 => 1900 + y,
                            3 if y < 100 => 2000 + y,
                            3 => 1000 + y,
                            _ => y,
                        });
                    }
                    "hour" => f.hour = Some(small()?),
                    "hour12" => {
                        f.hour = Some(small()?);
                        f.twelve_hour = true;
                    }
                    "minute" => f.minute = small()?,
                    "second" => f.second = small()?,
                    "ms" => f.micros = small()? * 10u32.pow(3 - digits.len().min(3) as u32) * 1000,
                    "us" => f.micros = small()? * 10u32.pow(6 - digits.len().min(6) as u32),
                    "doy" => f.day_of_year = Some(small()?),
                    "day" => f.day = Some(small()?),
                    "month" => f.month = Some(small()?),
                    _ => f.offset_minutes = i32::try_from(v).map_err(|_| invalid(pattern_text, &digits))?,
                }
            }
            Pattern::OffsetHours => {
                let sign = match input.chars().next() {
                    Some('-') => -1,
                    Some('+') => 1,
                    _ => 1,
                };
                input = input.trim_start_matches(['+', '-']);
                let digits: String = input.chars().take_while(char::is_ascii_digit).take(2).collect();
                let h: i32 = digits.parse().map_err(|_| invalid(pattern_text, input))?;
                input = &input[digits.len()..];
                f.offset_hours = Some((sign, h));
            }
            Pattern::MonthName { full } => f.month = Some(name_at(&mut input, &MONTHS, full, pattern_text)? + 1),
            Pattern::DayName { full } => {
                name_at(&mut input, &DAYS, full, pattern_text)?;
            }
            Pattern::Meridiem { dots } => {
                let lower = input.to_ascii_lowercase();
                let (am, pm) = if dots { ("a.m.", "p.m.") } else { ("am", "pm") };
                f.pm = Some(if lower.starts_with(pm) {
                    true
                } else if lower.starts_with(am) {
                    false
                } else {
                    return Err(invalid(pattern_text, &input.chars().take(4).collect::<String>()));
                });
                input = &input[am.len()..];
            }
        }
    }
    Ok(f)
}

/// A month or day name (in full, or its first three letters) at the start
/// of `input`, consumed; its index in `names`.
fn name_at(input: &mut &str, names: &[&str], full: bool, pattern: &str) -> std::result::Result<u32, SqlError> {
    let lower = input.to_ascii_lowercase();
    for (i, n) in names.iter().enumerate() {
        let candidates: &[&str] = if full { &[n, &n[..3]] } else { &[&n[..3]] };
        if let Some(c) = candidates.iter().find(|c| lower.starts_with(**c)) {
            *input = &input[c.len()..];
            return Ok(i as u32);
        }
    }
    Err(invalid(pattern, &input.chars().take(9).collect::<String>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(text: &str, template: &str) -> String {
        let mut s = String::new();
        crate::values::text::write_timestamptz(&mut s, read(text, template, Zone::Utc, false).unwrap(), Zone::Utc);
        s
    }

    #[test]
    fn reads_postgres_templates() {
        assert_eq!(ts("2024-01-05", "YYYY-MM-DD"), "2024-01-05 00:00:00+00");
        assert_eq!(ts("05 Jan 2024 10:30:15.25 PM", "DD Mon YYYY HH:MI:SS.MS AM"), "2024-01-05 22:30:15.25+00");
        assert_eq!(ts("20240105103000", "YYYYMMDDHH24MISS"), "2024-01-05 10:30:00+00");
        assert_eq!(ts("January 5, 99", "Month DD, YY"), "1999-01-05 00:00:00+00");
        assert_eq!(ts("2024-01-05 10:00 +02", "YYYY-MM-DD HH24:MI TZH"), "2024-01-05 08:00:00+00");
        assert_eq!(ts("2024/1/5", "YYYY-MM-DD"), "2024-01-05 00:00:00+00");
        assert_eq!(read("2024-13-05", "YYYY-MM-DD", Zone::Utc, false).unwrap_err().code, code::DATETIME_OVERFLOW);
        assert_eq!(read("x", "YYYY", Zone::Utc, false).unwrap_err().code, code::DATETIME_FORMAT);
        assert_eq!(read("2024 Q1", "YYYY Q", Zone::Utc, false).unwrap_err().code, code::FEATURE_NOT_SUPPORTED);
        assert_eq!(ts("2024-01-05 10:00 -05 30", "YYYY-MM-DD HH24:MI TZH TZM"), "2024-01-05 15:30:00+00");
    }

    #[test]
    fn epoch_seconds_keep_the_infinities_and_refuse_nan() {
        assert_eq!(epoch_seconds(1.5).unwrap(), 1_500_000);
        assert_eq!(epoch_seconds(1262349296.7890123).unwrap() % 1_000_000, 789_012);
        assert_eq!(epoch_seconds(f64::INFINITY).unwrap(), crate::values::timestamp_in::INFINITY);
        assert!(epoch_seconds(f64::NAN).is_err());
        assert!(epoch_seconds(1e20).is_err());
    }
}
