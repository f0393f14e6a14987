//! Values on the wire: result rows in text or binary format, and parameter
//! values from Bind messages.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    IntervalMonthDayNanoType, Time64MicrosecondType, TimeUnit, TimestampMicrosecondType,
};
use datafusion::common::ScalarValue;
use pgwire::api::Type;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::messages::data::DataRow;
use tessera_sql::SqlType;
use tessera_sql::error::{SqlError, code};
use tessera_sql::text::write_cell_in;
use tessera_sql::tz::Zone;

/// Microseconds between 1970-01-01 and PostgreSQL's epoch 2000-01-01.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;
const PG_EPOCH_DAYS: i32 = 10_957;

pub fn pg_type(ty: SqlType) -> Type {
    Type::from_oid(ty.oid()).unwrap_or(Type::TEXT)
}

/// Row description for a result schema.
pub fn fields(schema: &datafusion::arrow::datatypes::Schema, formats: &dyn Fn(usize) -> FieldFormat) -> Vec<FieldInfo> {
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let ty = SqlType::of_field(f);
            FieldInfo::new(f.name().clone(), None, None, pg_type(ty), formats(i)).with_type_modifier(ty.typmod())
        })
        .collect()
}

/// Encodes the rows of a batch.
pub fn encode_batch(
    batch: &RecordBatch,
    binary: &[bool],
    types: &[SqlType],
    zone: Zone,
    out: &mut Vec<DataRow>,
) -> Result<(), SqlError> {
    let mut text = String::new();
    for r in 0..batch.num_rows() {
        let mut buf = BytesMut::with_capacity(64);
        write_cells(batch, r, binary, types, zone, &mut text, &mut buf)?;
        out.push(DataRow::new(buf, batch.num_columns() as i16));
    }
    Ok(())
}

/// Writes the rows of a batch as complete DataRow messages (type byte,
/// length, column count, cells): what pgwire's `DataRow` encodes to, without
/// a message object per row.
pub fn write_data_rows(
    batch: &RecordBatch,
    binary: &[bool],
    types: &[SqlType],
    zone: Zone,
    out: &mut BytesMut,
) -> Result<(), SqlError> {
    let mut text = String::new();
    for r in 0..batch.num_rows() {
        out.put_u8(b'D');
        let start = out.len();
        out.put_i32(0);
        out.put_i16(batch.num_columns() as i16);
        write_cells(batch, r, binary, types, zone, &mut text, out)?;
        let len = (out.len() - start) as i32;
        out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    }
    Ok(())
}

/// The cells of row `r`, each as its length (-1 for NULL) and its bytes.
fn write_cells(
    batch: &RecordBatch,
    r: usize,
    binary: &[bool],
    types: &[SqlType],
    zone: Zone,
    text: &mut String,
    buf: &mut BytesMut,
) -> Result<(), SqlError> {
    for (ci, col) in batch.columns().iter().enumerate() {
        if col.is_null(r) || col.data_type() == &DataType::Null {
            buf.put_i32(-1);
            continue;
        }
        let start = buf.len();
        buf.put_i32(0);
        if binary.get(ci).copied().unwrap_or(false) {
            write_binary(buf, col, r, types.get(ci).copied())?;
        } else {
            text.clear();
            write_cell_in(text, col, r, zone);
            match types.get(ci) {
                Some(ty @ SqlType::Char(_)) => buf.put_slice(tessera_sql::text::pad_char(text, *ty).as_bytes()),
                _ => buf.put_slice(text.as_bytes()),
            }
        }
        let len = (buf.len() - start - 4) as i32;
        buf[start..start + 4].copy_from_slice(&len.to_be_bytes());
    }
    Ok(())
}

fn write_binary(buf: &mut BytesMut, col: &ArrayRef, r: usize, ty: Option<SqlType>) -> Result<(), SqlError> {
    match col.data_type() {
        DataType::Boolean => buf.put_u8(col.as_boolean().value(r) as u8),
        DataType::Int16 => buf.put_i16(col.as_primitive::<Int16Type>().value(r)),
        DataType::Int32 => buf.put_i32(col.as_primitive::<Int32Type>().value(r)),
        DataType::Int64 => buf.put_i64(col.as_primitive::<Int64Type>().value(r)),
        DataType::Float32 => buf.put_f32(col.as_primitive::<Float32Type>().value(r)),
        DataType::Float64 => buf.put_f64(col.as_primitive::<Float64Type>().value(r)),
        DataType::Utf8 => {
            let s = col.as_string::<i32>().value(r);
            // uuid and jsonb have their own binary layouts.
            match ty {
                Some(SqlType::Uuid) => {
                    let hex: String = s.chars().filter(|c| *c != '-').collect();
                    for k in 0..16 {
                        buf.put_u8(u8::from_str_radix(hex.get(2 * k..2 * k + 2).unwrap_or("00"), 16).unwrap_or(0));
                    }
                }
                Some(SqlType::Jsonb) => {
                    buf.put_u8(1);
                    buf.put_slice(s.as_bytes());
                }
                Some(ty @ SqlType::Char(_)) => buf.put_slice(tessera_sql::text::pad_char(s, ty).as_bytes()),
                _ => buf.put_slice(s.as_bytes()),
            }
        }
        DataType::Utf8View => buf.put_slice(col.as_string_view().value(r).as_bytes()),
        DataType::LargeUtf8 => buf.put_slice(col.as_string::<i64>().value(r).as_bytes()),
        DataType::Binary => buf.put_slice(col.as_binary::<i32>().value(r)),
        DataType::Date32 => buf.put_i32(col.as_primitive::<Date32Type>().value(r) - PG_EPOCH_DAYS),
        DataType::Time64(TimeUnit::Microsecond) => buf.put_i64(col.as_primitive::<Time64MicrosecondType>().value(r)),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            buf.put_i64(col.as_primitive::<TimestampMicrosecondType>().value(r) - PG_EPOCH_MICROS)
        }
        DataType::Interval(_) => {
            let v = col.as_primitive::<IntervalMonthDayNanoType>().value(r);
            buf.put_i64(v.nanoseconds / 1000);
            buf.put_i32(v.days);
            buf.put_i32(v.months);
        }
        DataType::Duration(_) => {
            let (days, micros) = tessera_sql::text::duration_parts(col, r);
            buf.put_i64(micros);
            buf.put_i32(days);
            buf.put_i32(0);
        }
        DataType::Decimal128(_, scale) => {
            let v = col.as_primitive::<Decimal128Type>().value(r);
            let mut s = String::new();
            tessera_sql::text::write_decimal(&mut s, v.abs(), *scale);
            write_numeric(buf, v < 0, &s);
        }
        DataType::Decimal256(..) => {
            // The text form: an unconstrained numeric's scale is its value's.
            let s = tessera_sql::text::format_cell(col, r).unwrap_or_default();
            let neg = s.starts_with('-');
            write_numeric(buf, neg, s.trim_start_matches('-'));
        }
        other => {
            return Err(SqlError::unsupported(format!("binary output of {other}")));
        }
    }
    Ok(())
}

/// PostgreSQL's binary numeric (base-10000 digits with weight, sign,
/// dscale) of the unsigned decimal text `s`.
fn write_numeric(buf: &mut BytesMut, neg: bool, s: &str) {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let dscale = frac.len() as i16;
    let int = int.trim_start_matches('0');
    let pad_int = (4 - int.len() % 4) % 4;
    let int_p = format!("{}{int}", "0".repeat(pad_int));
    let pad_frac = (4 - frac.len() % 4) % 4;
    let frac_p = format!("{frac}{}", "0".repeat(pad_frac));
    let mut digits: Vec<i16> = Vec::new();
    for c in int_p.as_bytes().chunks(4) {
        digits.push(std::str::from_utf8(c).unwrap().parse().unwrap_or(0));
    }
    let weight = digits.len() as i16 - 1;
    for c in frac_p.as_bytes().chunks(4) {
        digits.push(std::str::from_utf8(c).unwrap().parse().unwrap_or(0));
    }
    // Strip leading and trailing zero digits.
    let mut weight = weight;
    while digits.first() == Some(&0) {
        digits.remove(0);
        weight -= 1;
    }
    while digits.last() == Some(&0) {
        digits.pop();
    }
    if digits.is_empty() {
        weight = 0;
    }
    buf.put_i16(digits.len() as i16);
    buf.put_i16(weight);
    buf.put_u16(if neg && !digits.is_empty() { 0x4000 } else { 0 });
    buf.put_i16(dscale);
    for d in digits {
        buf.put_i16(d);
    }
}

fn bad_param(i: usize, ty: &Type) -> SqlError {
    SqlError::new(
        code::INVALID_PARAMETER_VALUE,
        format!("invalid binary value for parameter ${} of type {}", i + 1, ty.name()),
    )
}

/// Decodes a Bind parameter sent as `ty` (the client's declared type, or the
/// one Tessera inferred) into a value of the Arrow type the plan expects.
pub fn decode_param(
    i: usize,
    raw: Option<&[u8]>,
    binary: bool,
    ty: &Type,
    want: Option<&DataType>,
    zone: Zone,
) -> Result<ScalarValue, SqlError> {
    let Some(raw) = raw else {
        return Ok(match want {
            Some(dt) => ScalarValue::try_from(dt).unwrap_or(ScalarValue::Null),
            None => ScalarValue::Utf8(None),
        });
    };
    let value = if binary {
        let arr =
            |n: usize| -> Result<&[u8], SqlError> { if raw.len() == n { Ok(raw) } else { Err(bad_param(i, ty)) } };
        match ty.oid() {
            16 => ScalarValue::Boolean(Some(arr(1)?[0] != 0)),
            21 => ScalarValue::Int16(Some(i16::from_be_bytes(arr(2)?.try_into().unwrap()))),
            23 => ScalarValue::Int32(Some(i32::from_be_bytes(arr(4)?.try_into().unwrap()))),
            20 => ScalarValue::Int64(Some(i64::from_be_bytes(arr(8)?.try_into().unwrap()))),
            700 => ScalarValue::Float32(Some(f32::from_be_bytes(arr(4)?.try_into().unwrap()))),
            701 => ScalarValue::Float64(Some(f64::from_be_bytes(arr(8)?.try_into().unwrap()))),
            17 => ScalarValue::Binary(Some(raw.to_vec())),
            1082 => ScalarValue::Date32(Some(i32::from_be_bytes(arr(4)?.try_into().unwrap()) + PG_EPOCH_DAYS)),
            1083 => ScalarValue::Time64Microsecond(Some(i64::from_be_bytes(arr(8)?.try_into().unwrap()))),
            1114 => ScalarValue::TimestampMicrosecond(
                Some(i64::from_be_bytes(arr(8)?.try_into().unwrap()) + PG_EPOCH_MICROS),
                None,
            ),
            1184 => ScalarValue::TimestampMicrosecond(
                Some(i64::from_be_bytes(arr(8)?.try_into().unwrap()) + PG_EPOCH_MICROS),
                Some(Arc::from(tessera_sql::types::UTC)),
            ),
            2950 => {
                let b = arr(16)?;
                let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
                ScalarValue::Utf8(Some(format!(
                    "{}-{}-{}-{}-{}",
                    &h[0..8],
                    &h[8..12],
                    &h[12..16],
                    &h[16..20],
                    &h[20..32]
                )))
            }
            3802 => ScalarValue::Utf8(Some(String::from_utf8_lossy(raw.get(1..).unwrap_or_default()).into_owned())),
            1700 => ScalarValue::Utf8(Some(read_numeric(raw).ok_or_else(|| bad_param(i, ty))?)),
            25 | 1043 | 1042 | 19 | 114 | 0 | 705 => ScalarValue::Utf8(Some(String::from_utf8_lossy(raw).into_owned())),
            _ => return Err(SqlError::unsupported(format!("binary parameters of type {}", ty.name()))),
        }
    } else {
        let s = std::str::from_utf8(raw)
            .map_err(|_| SqlError::new(code::INVALID_TEXT, format!("parameter ${} is not valid UTF-8", i + 1)))?;
        match want {
            Some(DataType::Boolean) => match tessera_sql::copy::parse_bool(s) {
                Some(b) => ScalarValue::Boolean(Some(b)),
                None => {
                    return Err(SqlError::new(
                        code::INVALID_TEXT,
                        format!("invalid input syntax for type boolean: \"{s}\""),
                    ));
                }
            },
            // Integers, the most common parameters, parse directly (the cast
            // below goes through Arrow arrays); anything unusual still takes
            // the cast, which reports PostgreSQL's error.
            Some(DataType::Int64) if let Ok(v) = s.trim().parse::<i64>() => return Ok(ScalarValue::Int64(Some(v))),
            Some(DataType::Int32) if let Ok(v) = s.trim().parse::<i32>() => return Ok(ScalarValue::Int32(Some(v))),
            Some(DataType::Int16) if let Ok(v) = s.trim().parse::<i16>() => return Ok(ScalarValue::Int16(Some(v))),
            Some(DataType::Binary) => ScalarValue::Binary(Some(tessera_sql::text::parse_bytea(s)?)),
            // pgjdbc sends dates as "2024-02-29 +00"; PostgreSQL ignores the zone.
            Some(DataType::Date32) => ScalarValue::Utf8(Some(s.split_whitespace().next().unwrap_or(s).to_string())),
            // Without an offset, a wall time of the session's zone.
            Some(DataType::Timestamp(_, Some(_))) if !zone.is_utc() => ScalarValue::Utf8(Some(
                tessera_sql::tz::canonical_timestamptz(s, zone).unwrap_or_else(|| s.to_string()),
            )),
            _ => ScalarValue::Utf8(Some(s.to_string())),
        }
    };
    match want {
        Some(dt) if &value.data_type() != dt => value.cast_to(dt).map_err(|_| {
            SqlError::new(code::INVALID_TEXT, format!("invalid input syntax for parameter ${}: \"{value}\"", i + 1))
        }),
        _ => Ok(value),
    }
}

fn read_numeric(raw: &[u8]) -> Option<String> {
    if raw.len() < 8 {
        return None;
    }
    let n = i16::from_be_bytes([raw[0], raw[1]]) as usize;
    let weight = i16::from_be_bytes([raw[2], raw[3]]) as i32;
    let sign = u16::from_be_bytes([raw[4], raw[5]]);
    let dscale = i16::from_be_bytes([raw[6], raw[7]]) as usize;
    if sign == 0xC000 {
        return Some("NaN".into());
    }
    let digits: Vec<i32> = (0..n).map(|k| i16::from_be_bytes([raw[8 + 2 * k], raw[9 + 2 * k]]) as i32).collect();
    let mut int = String::new();
    for w in 0..=weight.max(-1) {
        let d = digits.get(w as usize).copied().unwrap_or(0);
        if int.is_empty() {
            int = d.to_string();
        } else {
            int.push_str(&format!("{d:04}"));
        }
    }
    if int.is_empty() {
        int = "0".into();
    }
    let mut frac = String::new();
    let mut k = weight + 1;
    while frac.len() < dscale {
        let d = if k < 0 { 0 } else { digits.get(k as usize).copied().unwrap_or(0) };
        frac.push_str(&format!("{d:04}"));
        k += 1;
    }
    frac.truncate(dscale);
    let sign = if sign == 0x4000 { "-" } else { "" };
    Some(if dscale > 0 { format!("{sign}{int}.{frac}") } else { format!("{sign}{int}") })
}
