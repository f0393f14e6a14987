//! PostgreSQL's binary formats of values: result cells and parameters in
//! the binary wire format, and the fields of `COPY … (FORMAT binary)`.
//!
//! Drivers choose binary for speed (asyncpg, pgx, Npgsql and pgjdbc read
//! and write most types so); the bytes must be PostgreSQL's: big-endian
//! integers and floats, dates as days and timestamps as microseconds from
//! 2000-01-01, intervals as microseconds, days and months, numerics as
//! base-10000 digits with weight, sign and display scale, uuids as 16
//! bytes, jsonb as a version byte and the text.

use std::sync::Arc;

use bytes::BufMut;
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    IntervalMonthDayNanoType, Time64MicrosecondType, TimeUnit, TimestampMicrosecondType,
};
use datafusion::common::ScalarValue;

use crate::error::SqlError;
use crate::values::types::SqlType;

/// Microseconds between 1970-01-01 and PostgreSQL's epoch 2000-01-01.
pub const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;
/// Days between 1970-01-01 and 2000-01-01.
pub const PG_EPOCH_DAYS: i32 = 10_957;

/// Why binary bytes were not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// Not a value of the type they claim to be.
    Malformed,
    /// A type whose binary format Tessera does not read.
    UnknownType,
}

use ReadError::Malformed;

/// Writes value `r` of `col` (not NULL) in PostgreSQL's binary format of
/// its type (`ty`: the SQL type, where the Arrow type is ambiguous).
pub fn write_value(buf: &mut impl BufMut, col: &ArrayRef, r: usize, ty: Option<SqlType>) -> Result<(), SqlError> {
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
                Some(ty @ SqlType::Char(_)) => buf.put_slice(crate::values::text::pad_char(s, ty).as_bytes()),
                _ => buf.put_slice(s.as_bytes()),
            }
        }
        DataType::Utf8View => buf.put_slice(col.as_string_view().value(r).as_bytes()),
        DataType::LargeUtf8 => buf.put_slice(col.as_string::<i64>().value(r).as_bytes()),
        DataType::Binary => buf.put_slice(col.as_binary::<i32>().value(r)),
        DataType::Date32 => buf.put_i32(col.as_primitive::<Date32Type>().value(r) - PG_EPOCH_DAYS),
        DataType::Time64(TimeUnit::Microsecond) => buf.put_i64(col.as_primitive::<Time64MicrosecondType>().value(r)),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            buf.put_i64(timestamp_to_pg(col.as_primitive::<TimestampMicrosecondType>().value(r)))
        }
        DataType::Interval(_) => {
            let v = col.as_primitive::<IntervalMonthDayNanoType>().value(r);
            buf.put_i64(v.nanoseconds / 1000);
            buf.put_i32(v.days);
            buf.put_i32(v.months);
        }
        DataType::Duration(_) => {
            let (days, micros) = crate::values::text::duration_parts(col, r);
            buf.put_i64(micros);
            buf.put_i32(days);
            buf.put_i32(0);
        }
        DataType::Decimal128(..) | DataType::Decimal256(..)
            if let Some(special) = crate::values::numeric_special::Special::at(col, r) =>
        {
            // PostgreSQL's numeric header with no digits: the sign says which.
            let sign: u16 = match special {
                crate::values::numeric_special::Special::NaN => 0xC000,
                crate::values::numeric_special::Special::PosInf => 0xD000,
                crate::values::numeric_special::Special::NegInf => 0xF000,
            };
            for word in [0u16, 0, sign, 0] {
                buf.put_u16(word);
            }
        }
        DataType::Decimal128(_, scale) => {
            let v = col.as_primitive::<Decimal128Type>().value(r);
            let mut s = String::new();
            crate::values::text::write_decimal(&mut s, v.abs(), *scale);
            write_numeric(buf, v < 0, &s);
        }
        DataType::Decimal256(..) => {
            // The text form: an unconstrained numeric's scale is its value's.
            let s = crate::values::text::format_cell(col, r).unwrap_or_default();
            let neg = s.starts_with('-');
            write_numeric(buf, neg, s.trim_start_matches('-'));
        }
        DataType::List(field) => {
            let elem = ty.and_then(SqlType::element).or_else(|| SqlType::from_arrow(field.data_type()));
            write_array(buf, &col.as_list::<i32>().value(r), elem)?;
        }
        other => {
            return Err(SqlError::unsupported(format!("binary output of {other}")));
        }
    }
    Ok(())
}

/// PostgreSQL's binary numeric (base-10000 digits with weight, sign,
/// dscale) of the unsigned decimal text `s`.
fn write_numeric(buf: &mut impl BufMut, neg: bool, s: &str) {
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

/// Reads one binary value of the type with OID `oid`. Types whose text is
/// their value (text, json, numeric, uuid) come back as text, for the
/// caller's cast to the target type.
pub fn read_value(oid: u32, raw: &[u8]) -> Result<ScalarValue, ReadError> {
    let arr = |n: usize| -> Result<&[u8], ReadError> { if raw.len() == n { Ok(raw) } else { Err(Malformed) } };
    Ok(match oid {
        16 => ScalarValue::Boolean(Some(arr(1)?[0] != 0)),
        21 => ScalarValue::Int16(Some(i16::from_be_bytes(arr(2)?.try_into().unwrap()))),
        23 => ScalarValue::Int32(Some(i32::from_be_bytes(arr(4)?.try_into().unwrap()))),
        20 => ScalarValue::Int64(Some(i64::from_be_bytes(arr(8)?.try_into().unwrap()))),
        700 => ScalarValue::Float32(Some(f32::from_be_bytes(arr(4)?.try_into().unwrap()))),
        701 => ScalarValue::Float64(Some(f64::from_be_bytes(arr(8)?.try_into().unwrap()))),
        17 => ScalarValue::Binary(Some(raw.to_vec())),
        1082 => ScalarValue::Date32(Some(i32::from_be_bytes(arr(4)?.try_into().unwrap()) + PG_EPOCH_DAYS)),
        1083 => ScalarValue::Time64Microsecond(Some(i64::from_be_bytes(arr(8)?.try_into().unwrap()))),
        1186 => {
            let b = arr(16)?;
            let micros = i64::from_be_bytes(b[0..8].try_into().expect("eight bytes"));
            let days = i32::from_be_bytes(b[8..12].try_into().expect("four bytes"));
            let months = i32::from_be_bytes(b[12..16].try_into().expect("four bytes"));
            let nanos = micros.checked_mul(1000).ok_or(Malformed)?;
            ScalarValue::IntervalMonthDayNano(Some(datafusion::arrow::datatypes::IntervalMonthDayNano::new(
                months, days, nanos,
            )))
        }
        1114 => ScalarValue::TimestampMicrosecond(
            Some(timestamp_from_pg(i64::from_be_bytes(arr(8)?.try_into().unwrap()))?),
            None,
        ),
        1184 => ScalarValue::TimestampMicrosecond(
            Some(timestamp_from_pg(i64::from_be_bytes(arr(8)?.try_into().unwrap()))?),
            Some(Arc::from(crate::values::types::UTC)),
        ),
        2950 => {
            let b = arr(16)?;
            let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
            ScalarValue::Utf8(Some(format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])))
        }
        3802 => ScalarValue::Utf8(Some(String::from_utf8_lossy(raw.get(1..).unwrap_or_default()).into_owned())),
        1700 => ScalarValue::Utf8(Some(read_numeric(raw).ok_or(Malformed)?)),
        25 | 1043 | 1042 | 19 | 114 | 0 | 705 => ScalarValue::Utf8(Some(String::from_utf8_lossy(raw).into_owned())),
        oid if SqlType::from_oid(oid).is_some_and(|t| t.element().is_some()) => read_array(oid, raw)?,
        _ => return Err(ReadError::UnknownType),
    })
}

fn read_numeric(raw: &[u8]) -> Option<String> {
    if raw.len() < 8 {
        return None;
    }
    let n = u16::from_be_bytes([raw[0], raw[1]]) as usize;
    if raw.len() != 8 + 2 * n {
        return None;
    }
    let weight = i16::from_be_bytes([raw[2], raw[3]]) as i32;
    let sign = u16::from_be_bytes([raw[4], raw[5]]);
    let dscale = i16::from_be_bytes([raw[6], raw[7]]) as usize;
    match sign {
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        _ => {}
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

/// An array: dimensions (0 when empty, else 1), whether any element is
/// NULL, the element type's OID, the length and lower bound (1) of the
/// dimension, then each element as a length (-1 for NULL) and its bytes.
fn write_array(buf: &mut impl BufMut, values: &ArrayRef, elem: Option<SqlType>) -> Result<(), SqlError> {
    let elem = elem.ok_or_else(|| SqlError::unsupported(format!("binary output of {}", values.data_type())))?;
    buf.put_i32(i32::from(!values.is_empty()));
    buf.put_i32(i32::from(values.null_count() > 0));
    buf.put_u32(elem.oid());
    if !values.is_empty() {
        buf.put_i32(values.len() as i32);
        buf.put_i32(1);
    }
    let mut cell = Vec::new();
    for i in 0..values.len() {
        if values.is_null(i) {
            buf.put_i32(-1);
            continue;
        }
        cell.clear();
        write_value(&mut cell, values, i, Some(elem))?;
        buf.put_i32(cell.len() as i32);
        buf.put_slice(&cell);
    }
    Ok(())
}

/// Reads a one-dimensional array of the array type `oid`.
fn read_array(oid: u32, raw: &[u8]) -> Result<ScalarValue, ReadError> {
    let ty = SqlType::from_oid(oid).ok_or(ReadError::UnknownType)?;
    let elem = ty.element().ok_or(ReadError::UnknownType)?;
    let mut b = raw;
    let int = |b: &mut &[u8]| -> Result<i32, ReadError> {
        let (head, tail) = b.split_at_checked(4).ok_or(Malformed)?;
        *b = tail;
        Ok(i32::from_be_bytes(head.try_into().expect("four bytes")))
    };
    let (ndim, _has_null, elem_oid) = (int(&mut b)?, int(&mut b)?, int(&mut b)? as u32);
    if elem_oid != elem.oid() {
        return Err(Malformed);
    }
    let len = match ndim {
        0 => 0,
        1 => {
            let (len, _lower) = (int(&mut b)?, int(&mut b)?);
            usize::try_from(len).map_err(|_| Malformed)?
        }
        _ => return Err(ReadError::UnknownType),
    };
    let mut values = Vec::with_capacity(len.min(b.len() / 4 + 1));
    for _ in 0..len {
        let n = int(&mut b)?;
        values.push(if n < 0 {
            None
        } else {
            let (head, tail) = b.split_at_checked(n as usize).ok_or(Malformed)?;
            b = tail;
            Some(read_value(elem.oid(), head)?)
        });
    }
    if !b.is_empty() {
        return Err(Malformed);
    }
    // Elements come back in their wire form (text for numerics, uuids);
    // the column's assignment converts them.
    let read_type = values.iter().flatten().next().map_or(DataType::Utf8, ScalarValue::data_type);
    let null = ScalarValue::try_from(&read_type).map_err(|_| Malformed)?;
    let values: Vec<ScalarValue> = values.into_iter().map(|v| v.unwrap_or_else(|| null.clone())).collect();
    Ok(ScalarValue::List(ScalarValue::new_list(&values, &read_type, true)))
}

/// A timestamp as PostgreSQL's binary form counts it (from 2000-01-01);
/// the infinities are the same extreme values in both.
pub fn timestamp_to_pg(micros: i64) -> i64 {
    if crate::values::timestamp_in::is_infinite(micros) { micros } else { micros - PG_EPOCH_MICROS }
}

/// [`timestamp_to_pg`] reversed; a finite value outside the range is malformed.
fn timestamp_from_pg(pg: i64) -> Result<i64, ReadError> {
    if crate::values::timestamp_in::is_infinite(pg) {
        return Ok(pg);
    }
    pg.checked_add(PG_EPOCH_MICROS).filter(|v| crate::values::timestamp_in::in_range(*v)).ok_or(Malformed)
}
