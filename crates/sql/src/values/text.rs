//! PostgreSQL's text representation of values: output formatting (for the
//! wire's text format and COPY TO) and the checks text-like types need on
//! input (varchar length, char padding, uuid and json syntax).

use crate::values::interval_out::{IntervalStyle, write_interval_styled};
use crate::values::tz::Zone;
use std::fmt::Write;
use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, NaiveTime};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Decimal256Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, IntervalMonthDayNanoType, IntervalUnit, Time64MicrosecondType, Time64NanosecondType, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

use crate::error::{Result, SqlError, code};
use crate::values::types::SqlType;

/// The session settings that shape text output: the `TimeZone` a
/// timestamptz is shown in and the `IntervalStyle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextStyle {
    pub zone: Zone,
    pub interval: IntervalStyle,
    /// `extra_float_digits`: above 0, floats print their shortest exact
    /// digits; at or below, 15 (real: 6) significant digits plus it.
    pub float_digits: i8,
    /// `bytea_output = escape`: bytea in PostgreSQL's escape format.
    pub bytea_escape: bool,
}

impl Default for TextStyle {
    fn default() -> Self {
        TextStyle { zone: Zone::Utc, interval: IntervalStyle::default(), float_digits: 1, bytea_escape: false }
    }
}

impl From<Zone> for TextStyle {
    fn from(zone: Zone) -> Self {
        TextStyle { zone, ..TextStyle::default() }
    }
}

/// Formats one value as PostgreSQL's text output would; None for NULL.
pub fn format_cell(array: &ArrayRef, row: usize) -> Option<String> {
    format_cell_in(array, row, TextStyle::default())
}

/// [`format_cell`] for a session's output settings.
pub fn format_cell_in(array: &ArrayRef, row: usize, style: TextStyle) -> Option<String> {
    // A NullArray reports no nulls through `is_null`.
    if array.is_null(row) || array.data_type() == &DataType::Null {
        return None;
    }
    let mut s = String::new();
    write_cell_in(&mut s, array, row, style);
    Some(s)
}

/// Appends the text form of a non-null value (a timestamptz in UTC).
pub fn write_cell(out: &mut String, array: &ArrayRef, row: usize) {
    write_cell_in(out, array, row, TextStyle::default())
}

/// Appends the text form of a non-null value, a timestamptz shown in
/// the session's `TimeZone`, an interval in its `IntervalStyle`.
pub fn write_cell_in(out: &mut String, array: &ArrayRef, row: usize, style: TextStyle) {
    let zone = style.zone;
    match array.data_type() {
        DataType::Boolean => out.push(if array.as_boolean().value(row) { 't' } else { 'f' }),
        DataType::Int8 => write!(out, "{}", array.as_primitive::<Int8Type>().value(row)).unwrap(),
        DataType::Int16 => write!(out, "{}", array.as_primitive::<Int16Type>().value(row)).unwrap(),
        DataType::Int32 => write!(out, "{}", array.as_primitive::<Int32Type>().value(row)).unwrap(),
        DataType::Int64 => write!(out, "{}", array.as_primitive::<Int64Type>().value(row)).unwrap(),
        DataType::UInt8 => write!(out, "{}", array.as_primitive::<UInt8Type>().value(row)).unwrap(),
        DataType::UInt16 => write!(out, "{}", array.as_primitive::<UInt16Type>().value(row)).unwrap(),
        DataType::UInt32 => write!(out, "{}", array.as_primitive::<UInt32Type>().value(row)).unwrap(),
        DataType::UInt64 => write!(out, "{}", array.as_primitive::<UInt64Type>().value(row)).unwrap(),
        DataType::Float32 => {
            write_float(out, array.as_primitive::<Float32Type>().value(row) as f64, true, style.float_digits)
        }
        DataType::Float64 => {
            write_float(out, array.as_primitive::<Float64Type>().value(row), false, style.float_digits)
        }
        DataType::Decimal128(..) | DataType::Decimal256(..)
            if let Some(special) = crate::values::numeric_special::Special::at(array, row) =>
        {
            out.push_str(special.text())
        }
        DataType::Decimal128(_, scale) => write_decimal(out, array.as_primitive::<Decimal128Type>().value(row), *scale),
        DataType::Decimal256(_, scale) => crate::values::numeric::write(
            out,
            array.as_primitive::<Decimal256Type>().value(row),
            *scale,
            crate::values::numeric::is_unconstrained(array.data_type()),
        ),
        DataType::Utf8 => out.push_str(array.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => out.push_str(array.as_string::<i64>().value(row)),
        DataType::Utf8View => out.push_str(array.as_string_view().value(row)),
        DataType::Binary => write_bytea(out, array.as_binary::<i32>().value(row), style.bytea_escape),
        DataType::LargeBinary => write_bytea(out, array.as_binary::<i64>().value(row), style.bytea_escape),
        DataType::BinaryView => write_bytea(out, array.as_binary_view().value(row), style.bytea_escape),
        DataType::Date32 => write_date(out, array.as_primitive::<Date32Type>().value(row)),
        DataType::Time64(TimeUnit::Microsecond) => {
            write_time(out, array.as_primitive::<Time64MicrosecondType>().value(row))
        }
        DataType::Time64(TimeUnit::Nanosecond) => {
            write_time(out, array.as_primitive::<Time64NanosecondType>().value(row) / 1000)
        }
        DataType::Timestamp(unit, tz) => {
            let v = match unit {
                TimeUnit::Second => array.as_primitive::<TimestampSecondType>().value(row) * 1_000_000,
                TimeUnit::Millisecond => array.as_primitive::<TimestampMillisecondType>().value(row) * 1000,
                TimeUnit::Microsecond => array.as_primitive::<TimestampMicrosecondType>().value(row),
                TimeUnit::Nanosecond => array.as_primitive::<TimestampNanosecondType>().value(row).div_euclid(1000),
            };
            if tz.is_some() { write_timestamptz(out, v, zone) } else { write_timestamp(out, v, false) }
        }
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let v = array.as_primitive::<IntervalMonthDayNanoType>().value(row);
            write_interval_styled(out, v.months, v.days, v.nanoseconds / 1000, style.interval)
        }
        // A difference of timestamps: an interval of days and time, as
        // PostgreSQL makes it (`59 days 14:00:00`, not `PT5148000S`).
        DataType::Duration(_) => {
            let (days, micros) = duration_parts(array, row);
            write_interval_styled(out, 0, days, micros, style.interval)
        }
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) => write_array(out, array, row, style),
        DataType::Struct(_) => write_record(out, array.as_struct(), row, style),
        _ => {
            let opts = FormatOptions::default().with_null("NULL");
            match ArrayFormatter::try_new(array.as_ref(), &opts) {
                Ok(f) => write!(out, "{}", f.value(row)).unwrap(),
                Err(_) => out.push('?'),
            }
        }
    }
}

fn write_float(out: &mut String, v: f64, single: bool, extra_digits: i8) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
    } else if extra_digits <= 0 {
        let digits = if single { 6 } else { 15 } + i32::from(extra_digits);
        write_float_g(out, if single { f64::from(v as f32) } else { v }, digits.max(1) as usize);
    } else if single {
        let f = v as f32;
        write_short_float(out, format!("{f}"), f.abs() as f64);
    } else {
        write_short_float(out, format!("{v}"), v.abs());
    }
}

/// PostgreSQL prints the shortest exact digits, switching to exponent form
/// outside 1e-4 .. 1e15 (or 1e6 for real).
fn write_short_float(out: &mut String, plain: String, abs: f64) {
    if abs != 0.0 && !(1e-4..1e15).contains(&abs) {
        let e = format!("{:e}", plain.parse::<f64>().unwrap_or(0.0));
        // Rust: 1.5e20 -> PostgreSQL: 1.5e+20
        let (m, exp) = e.split_once('e').unwrap_or((&e, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        write!(out, "{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs()).unwrap();
    } else {
        out.push_str(&plain);
    }
}

/// C's `%.*g`, as PostgreSQL prints floats when `extra_float_digits` is 0
/// or less: `digits` significant digits, trailing zeros dropped, exponent
/// form when the exponent is below -4 or at least `digits`.
fn write_float_g(out: &mut String, v: f64, digits: usize) {
    if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    let sci = format!("{:.*e}", digits - 1, v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s.to_string() }
    };
    if exp < -4 || exp >= digits as i32 {
        write!(out, "{}e{}{:02}", trim(mantissa), if exp < 0 { '-' } else { '+' }, exp.abs()).unwrap();
    } else {
        let decimals = (digits as i32 - 1 - exp).max(0) as usize;
        out.push_str(&trim(&format!("{v:.decimals$}")));
    }
}

pub fn write_decimal(out: &mut String, v: i128, scale: i8) {
    if scale <= 0 {
        // A negative scale (`1e100` as a literal) is trailing zeros, written
        // out rather than multiplied (which would overflow).
        write!(out, "{v}").unwrap();
        if v != 0 {
            out.extend(std::iter::repeat_n('0', scale.unsigned_abs() as usize));
        }
        return;
    }
    let neg = v < 0;
    let digits = v.unsigned_abs().to_string();
    let scale = scale as usize;
    let (int, frac) = if digits.len() > scale {
        (digits[..digits.len() - scale].to_string(), digits[digits.len() - scale..].to_string())
    } else {
        ("0".to_string(), format!("{digits:0>scale$}"))
    };
    if neg {
        out.push('-');
    }
    write!(out, "{int}.{frac}").unwrap();
}

/// bytea as `bytea_output` says: hex (`\xdeadbeef`), or escape (printable
/// ASCII as itself, a backslash doubled, other bytes `\ooo` in octal).
fn write_bytea(out: &mut String, b: &[u8], escape: bool) {
    if escape {
        for byte in b {
            match byte {
                b'\\' => out.push_str("\\\\"),
                0x20..=0x7e => out.push(char::from(*byte)),
                _ => write!(out, "\\{byte:03o}").unwrap(),
            }
        }
        return;
    }
    out.push_str("\\x");
    for byte in b {
        write!(out, "{byte:02x}").unwrap();
    }
}

/// A date as PostgreSQL prints it (`1999-01-08`, `2040-04-10 BC`).
pub fn write_date(out: &mut String, days: i32) {
    match NaiveDate::from_num_days_from_ce_opt(days + 719_163) {
        Some(d) => {
            let bc = crate::values::dates::write_year(out, d.year());
            write!(out, "-{:02}-{:02}", d.month(), d.day()).unwrap();
            if bc {
                out.push_str(" BC");
            }
        }
        None => write!(out, "{days}").unwrap(),
    }
}

pub fn write_time(out: &mut String, micros: i64) {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let t = NaiveTime::from_num_seconds_from_midnight_opt(secs as u32, 0).unwrap_or_default();
    write!(out, "{}", t.format("%H:%M:%S")).unwrap();
    write_fraction(out, frac);
}

fn write_fraction(out: &mut String, frac: i64) {
    if frac != 0 {
        let s = format!("{frac:06}");
        write!(out, ".{}", s.trim_end_matches('0')).unwrap();
    }
}

pub fn write_timestamp(out: &mut String, micros: i64, tz: bool) {
    if write_infinity(out, micros) {
        return;
    }
    let bc = write_wall_time(out, micros);
    if tz {
        out.push_str("+00");
    }
    if bc {
        out.push_str(" BC");
    }
}

/// `infinity` or `-infinity` for those timestamps; whether it wrote one.
fn write_infinity(out: &mut String, micros: i64) -> bool {
    match micros {
        crate::values::timestamp_in::INFINITY => out.push_str("infinity"),
        crate::values::timestamp_in::NEG_INFINITY => out.push_str("-infinity"),
        _ => return false,
    }
    true
}

/// A timestamp's date and time (`1999-01-08 04:05:06.5`); whether it is
/// before year 1 (PostgreSQL then writes ` BC` after the whole value).
fn write_wall_time(out: &mut String, micros: i64) -> bool {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let bc = match DateTime::from_timestamp(secs, 0) {
        Some(dt) => {
            let dt = dt.naive_utc();
            let bc = crate::values::dates::write_year(out, dt.year());
            write!(out, "-{:02}-{:02} {}", dt.month(), dt.day(), dt.format("%H:%M:%S")).unwrap();
            bc
        }
        None => {
            write!(out, "{micros}").unwrap();
            false
        }
    };
    write_fraction(out, frac);
    bc
}

/// An array as PostgreSQL prints it: `{1,2,3}`, `{a,"b c",NULL}`,
/// `{{1,2},{3,4}}`.
fn write_array(out: &mut String, array: &ArrayRef, row: usize, style: TextStyle) {
    let items = match array.data_type() {
        DataType::List(_) => array.as_list::<i32>().value(row),
        DataType::LargeList(_) => array.as_list::<i64>().value(row),
        _ => array.as_fixed_size_list().value(row),
    };
    out.push('{');
    let mut cell = String::new();
    for i in 0..items.len() {
        if i > 0 {
            out.push(',');
        }
        if items.is_null(i) || items.data_type() == &DataType::Null {
            out.push_str("NULL");
            continue;
        }
        cell.clear();
        write_cell_in(&mut cell, &items, i, style);
        let nested =
            matches!(items.data_type(), DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..));
        let quote = !nested
            && (cell.is_empty()
                || cell.eq_ignore_ascii_case("null")
                || cell.chars().any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace()));
        write_quoted(out, &cell, quote, '\\');
    }
    out.push('}');
}

/// A record as PostgreSQL prints it: `(1,"a b",)`, NULL as nothing.
fn write_record(out: &mut String, record: &datafusion::arrow::array::StructArray, row: usize, style: TextStyle) {
    out.push('(');
    let mut cell = String::new();
    for (i, column) in record.columns().iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if column.is_null(row) || column.data_type() == &DataType::Null {
            continue;
        }
        cell.clear();
        write_cell_in(&mut cell, column, row, style);
        let quote =
            cell.is_empty() || cell.chars().any(|c| matches!(c, '(' | ')' | ',' | '"' | '\\') || c.is_whitespace());
        write_quoted(out, &cell, quote, '"');
    }
    out.push(')');
}

/// `cell`, in double quotes if `quote`, its `"` and `\` escaped with
/// `escape` (a backslash in arrays; in records a quote is doubled).
fn write_quoted(out: &mut String, cell: &str, quote: bool, escape: char) {
    if !quote {
        out.push_str(cell);
        return;
    }
    out.push('"');
    for c in cell.chars() {
        if c == '"' || c == '\\' {
            out.push(if c == '\\' { '\\' } else { escape });
        }
        out.push(c);
    }
    out.push('"');
}

/// An instant as `zone` shows it: its wall time and offset
/// (`2024-07-01 08:00:00-04`).
pub fn write_timestamptz(out: &mut String, utc: i64, zone: Zone) {
    if write_infinity(out, utc) {
        return;
    }
    let offset = zone.offset_at(utc);
    let bc = write_wall_time(out, utc.saturating_add(i64::from(offset) * 1_000_000));
    crate::values::tz::write_offset(out, offset);
    if bc {
        out.push_str(" BC");
    }
}

/// A duration value as an interval's days and microseconds (each day 24
/// hours, signs alike, as PostgreSQL's timestamp subtraction gives).
pub fn duration_parts(array: &ArrayRef, row: usize) -> (i32, i64) {
    use datafusion::arrow::datatypes::{
        DurationMicrosecondType, DurationMillisecondType, DurationNanosecondType, DurationSecondType,
    };
    let micros = match array.data_type() {
        DataType::Duration(TimeUnit::Second) => array.as_primitive::<DurationSecondType>().value(row) * 1_000_000,
        DataType::Duration(TimeUnit::Millisecond) => array.as_primitive::<DurationMillisecondType>().value(row) * 1000,
        DataType::Duration(TimeUnit::Microsecond) => array.as_primitive::<DurationMicrosecondType>().value(row),
        DataType::Duration(TimeUnit::Nanosecond) => array.as_primitive::<DurationNanosecondType>().value(row) / 1000,
        _ => 0,
    };
    const DAY: i64 = 86_400_000_000;
    ((micros / DAY) as i32, micros % DAY)
}

/// An interval in PostgreSQL's default IntervalStyle (`postgres`).
pub fn write_interval(out: &mut String, months: i32, days: i32, micros: i64) {
    write_interval_styled(out, months, days, micros, IntervalStyle::Postgres)
}

/// A char(n) value as it is shown: padded with blanks to n characters.
pub fn pad_char(v: &str, ty: SqlType) -> std::borrow::Cow<'_, str> {
    match ty {
        SqlType::Char(n) => {
            let len = v.chars().count();
            if len < n as usize { format!("{v}{}", " ".repeat(n as usize - len)).into() } else { v.into() }
        }
        _ => v.into(),
    }
}

/// Checks and normalizes values of text-backed types: length limits of
/// varchar(n) and char(n) (kept without its padding, see `pad_char`), uuid syntax (stored
/// in canonical lower case), json and jsonb syntax. Returns the fixed array
/// when anything changed.
pub fn enforce_text_type(ty: SqlType, array: &ArrayRef) -> Result<Option<ArrayRef>> {
    let limit = match ty {
        SqlType::Varchar(Some(n)) | SqlType::Char(n) => Some(n as usize),
        SqlType::Uuid | SqlType::Json | SqlType::Jsonb => None,
        _ => return Ok(None),
    };
    let Some(strings) = array.as_string_opt::<i32>() else { return Ok(None) };
    let mut changed = false;
    let mut out: Vec<Option<String>> = Vec::with_capacity(strings.len());
    for v in strings.iter() {
        let Some(v) = v else {
            out.push(None);
            continue;
        };
        let fixed = match ty {
            SqlType::Uuid => Some(canonical_uuid(v)?),
            SqlType::Json => {
                serde_json::from_str::<serde_json::Value>(v).map_err(|e| invalid_json(v, &e))?;
                None
            }
            SqlType::Jsonb => {
                let parsed: serde_json::Value = serde_json::from_str(v).map_err(|e| invalid_json(v, &e))?;
                let mut s = String::new();
                write_jsonb(&mut s, &parsed);
                Some(s)
            }
            _ => {
                let n = limit.unwrap_or(usize::MAX);
                let len = v.chars().count();
                if len > n {
                    // PostgreSQL allows trailing spaces beyond the limit and trims them.
                    let trimmed = v.trim_end_matches(' ');
                    if trimmed.chars().count() > n {
                        return Err(SqlError::new(
                            code::STRING_TOO_LONG,
                            format!("value too long for type {}", ty.name()),
                        ));
                    }
                    let cut: String = v.chars().take(n).collect();
                    match ty {
                        SqlType::Char(_) => Some(cut.trim_end_matches(' ').to_string()),
                        _ => Some(cut),
                    }
                } else if matches!(ty, SqlType::Char(_)) && v.ends_with(' ') {
                    // A char(n) value is kept without its padding, which is
                    // insignificant (comparisons, length, ||, LIKE, as in
                    // PostgreSQL's bpchar) and put back on output.
                    Some(v.trim_end_matches(' ').to_string())
                } else {
                    None
                }
            }
        };
        match fixed {
            Some(f) if f != v => {
                changed = true;
                out.push(Some(f));
            }
            _ => out.push(Some(v.to_string())),
        }
    }
    Ok(changed.then(|| Arc::new(StringArray::from(out)) as ArrayRef))
}

fn invalid_json(v: &str, e: &serde_json::Error) -> SqlError {
    SqlError::new(code::INVALID_TEXT, "invalid input syntax for type json")
        .with_detail(format!("{e} in \"{}\"", v.chars().take(60).collect::<String>()))
}

pub fn canonical_uuid(v: &str) -> Result<String> {
    let hex: String = v.trim().trim_start_matches('{').trim_end_matches('}').chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(SqlError::new(code::INVALID_TEXT, format!("invalid input syntax for type uuid: \"{v}\"")));
    }
    let h = hex.to_lowercase();
    Ok(format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32]))
}

/// jsonb's output: keys sorted (shorter first, then bytewise, as PostgreSQL
/// stores them), one space after ':' and ','.
pub(crate) fn write_jsonb(out: &mut String, v: &serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.len().cmp(&b.len()).then(a.cmp(b)));
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&serde_json::Value::String((*k).clone()).to_string());
                out.push_str(": ");
                write_jsonb(out, &map[*k]);
            }
            out.push('}');
        }
        serde_json::Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_jsonb(out, item);
            }
            out.push(']');
        }
        serde_json::Value::Number(n) => out.push_str(&json_number(&n.to_string())),
        other => out.push_str(&other.to_string()),
    }
}

/// A JSON number's text as PostgreSQL's jsonb keeps it, a numeric: every
/// digit, the scale it was written with, no exponent (`1.50`, `1e2` is
/// `100`, `1.3e-3` is `0.0013`). Numbers are kept exactly (serde_json's
/// `arbitrary_precision`): a 20-digit id is not rounded to a double.
pub(crate) fn json_number(text: &str) -> String {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (mantissa, exponent) = match rest.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().unwrap_or(0)),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = format!("{int}{frac}");
    let scale = (frac.len() as i64 - exponent).max(0) as usize;
    // The value is digits × 10^(exponent - frac.len()).
    let shift = exponent - frac.len() as i64;
    let mut plain = digits.trim_start_matches('0').to_string();
    if shift > 0 {
        plain.push_str(&"0".repeat(shift as usize));
    }
    if plain.len() <= scale {
        plain = format!("{}{plain}", "0".repeat(scale + 1 - plain.len()));
    }
    let (whole, fraction) = plain.split_at(plain.len() - scale);
    let body = if scale > 0 { format!("{whole}.{fraction}") } else { whole.to_string() };
    let zero = body.bytes().all(|b| b == b'0' || b == b'.');
    if negative && !zero { format!("-{body}") } else { body }
}

/// Decodes bytea text input: `\x` hex or the escape format.
pub fn parse_bytea(s: &str) -> Result<Vec<u8>> {
    if let Some(hex) = s.strip_prefix("\\x") {
        let hex: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        // PostgreSQL reports a bad digit before an odd count, both 22023.
        if let Some(bad) = hex.iter().find(|b| !b.is_ascii_hexdigit()) {
            let shown = String::from_utf8_lossy(std::slice::from_ref(bad)).into_owned();
            return Err(SqlError::new(code::INVALID_PARAMETER, format!("invalid hexadecimal digit: \"{shown}\"")));
        }
        if !hex.len().is_multiple_of(2) {
            return Err(SqlError::new(code::INVALID_PARAMETER, "invalid hexadecimal data: odd number of digits"));
        }
        return hex
            .chunks(2)
            .map(|c| {
                u8::from_str_radix(std::str::from_utf8(c).unwrap_or("zz"), 16)
                    .map_err(|_| SqlError::new(code::INVALID_PARAMETER, "invalid hexadecimal digit"))
            })
            .collect();
    }
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            if i + 1 < b.len() && b[i + 1] == b'\\' {
                out.push(b'\\');
                i += 2;
            } else if i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
                out.push(u8::from_str_radix(&s[i + 1..i + 4], 8).unwrap_or(0));
                i += 4;
            } else {
                return Err(SqlError::new(code::INVALID_TEXT, "invalid input syntax for type bytea"));
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_with_extra_float_digits_zero_as_printf_g() {
        let g = |v: f64, single: bool| {
            let mut s = String::new();
            write_float(&mut s, v, single, 0);
            s
        };
        assert_eq!(g(131.10703231895047, false), "131.10703231895");
        assert_eq!(g(431.7726, true), "431.773");
        assert_eq!(g(1.5, false), "1.5");
        assert_eq!(g(1e20, false), "1e+20");
        assert_eq!(g(-1.2345678901234567e-5, false), "-1.23456789012346e-05");
        assert_eq!(g(123456.0, true), "123456");
        assert_eq!(g(1234567.0, true), "1.23457e+06");
        assert_eq!(g(-0.0, false), "-0");
        assert_eq!(g(0.0001, false), "0.0001");
    }

    #[test]
    fn formats_like_postgres() {
        let mut s = String::new();
        write_interval(&mut s, 14, 3, 4 * 3_600_000_000 + 5 * 60_000_000 + 6_000_000);
        assert_eq!(s, "1 year 2 mons 3 days 04:05:06");
        for (months, days, micros, text) in [
            (-18, 208, 1_000_000, "-1 years -6 mons +208 days 00:00:01"),
            (0, -3, 5_000_000, "-3 days +00:00:05"),
            (-1, 0, -5_000_000, "-1 mons -00:00:05"),
            (1, -1, 0, "1 mon -1 days"),
        ] {
            let mut s = String::new();
            write_interval(&mut s, months, days, micros);
            assert_eq!(s, text);
        }
        s.clear();
        write_decimal(&mut s, -1205, 2);
        assert_eq!(s, "-12.05");
        s.clear();
        write_decimal(&mut s, 5, 3);
        assert_eq!(s, "0.005");
        s.clear();
        write_timestamp(&mut s, 1_500_000, true);
        assert_eq!(s, "1970-01-01 00:00:01.5+00");
        s.clear();
        write_float(&mut s, 1e20, false, 1);
        assert_eq!(s, "1e+20");
        assert_eq!(
            canonical_uuid("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11").unwrap(),
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
        );
        assert_eq!(parse_bytea("\\x0aff").unwrap(), vec![10, 255]);
    }
}
