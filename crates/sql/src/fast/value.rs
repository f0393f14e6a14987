//! Values on the fast path: decoded from engine fields, computed by
//! expressions, encoded back into fields or handed to the result encoder.
//!
//! Integers of every width travel as `i64`, so arithmetic needs no boxing;
//! the static [`SqlType`] an expression was compiled with says which width
//! a result must fit.

use datafusion::common::ScalarValue;

use crate::values::rowcodec::{enc_f32, enc_f64, enc_i32, enc_i64};
use crate::values::types::SqlType;

/// A computed value. `Text` owns its string: only text-valued expressions
/// allocate.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    /// Days since 1970-01-01.
    Date(i32),
    /// Microseconds since 1970-01-01 00:00 UTC.
    Timestamp(i64),
}

/// The fast path declines: the general path runs the statement instead
/// (and produces whatever error PostgreSQL's semantics call for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decline;

pub type Eval<T> = std::result::Result<T, Decline>;

/// The types the fast path computes with. Other column types may still be
/// copied or returned as stored bytes, but not used in expressions.
pub fn supported(ty: SqlType) -> bool {
    matches!(
        ty,
        SqlType::Bool
            | SqlType::Int2
            | SqlType::Int4
            | SqlType::Int8
            | SqlType::Float4
            | SqlType::Float8
            | SqlType::Text
            | SqlType::Varchar(_)
            | SqlType::Date
            | SqlType::Timestamp
            | SqlType::TimestampTz
    )
}

pub fn is_int(ty: SqlType) -> bool {
    matches!(ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8)
}

pub fn is_float(ty: SqlType) -> bool {
    matches!(ty, SqlType::Float4 | SqlType::Float8)
}

pub fn is_text(ty: SqlType) -> bool {
    matches!(ty, SqlType::Text | SqlType::Varchar(_))
}

/// The range an integer of `ty` must lie in.
pub fn int_range(ty: SqlType) -> (i64, i64) {
    match ty {
        SqlType::Int2 => (i16::MIN as i64, i16::MAX as i64),
        SqlType::Int4 => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    }
}

fn be<const N: usize>(b: &[u8]) -> Eval<[u8; N]> {
    b.try_into().map_err(|_| Decline)
}

/// Decodes a stored field of a column of type `ty`.
pub fn decode(ty: SqlType, field: Option<&[u8]>) -> Eval<Value> {
    let Some(b) = field else { return Ok(Value::Null) };
    Ok(match ty {
        SqlType::Bool => Value::Bool(b.first() == Some(&1)),
        SqlType::Int2 => Value::Int((u16::from_be_bytes(be(b)?) ^ 0x8000) as i16 as i64),
        SqlType::Int4 => Value::Int((u32::from_be_bytes(be(b)?) ^ 0x8000_0000) as i32 as i64),
        SqlType::Int8 => Value::Int((u64::from_be_bytes(be(b)?) ^ (1 << 63)) as i64),
        SqlType::Float4 => Value::Float(crate::values::rowcodec::dec_f32(be(b)?) as f64),
        SqlType::Float8 => Value::Float(crate::values::rowcodec::dec_f64(be(b)?)),
        SqlType::Text | SqlType::Varchar(_) => Value::Text(String::from_utf8(b.to_vec()).map_err(|_| Decline)?),
        SqlType::Date => Value::Date((u32::from_be_bytes(be(b)?) ^ 0x8000_0000) as i32),
        SqlType::Timestamp | SqlType::TimestampTz => Value::Timestamp((u64::from_be_bytes(be(b)?) ^ (1 << 63)) as i64),
        _ => return Err(Decline),
    })
}

/// Converts `v` to a column of type `ty` as an assignment would, and
/// appends its stored bytes to `out`. Returns false for NULL (nothing
/// appended). Values that do not fit decline, so the general path raises
/// its error.
pub fn encode_into(ty: SqlType, v: &Value, out: &mut Vec<u8>) -> Eval<bool> {
    match (ty, v) {
        (_, Value::Null) => return Ok(false),
        (SqlType::Bool, Value::Bool(b)) => out.push(*b as u8),
        (SqlType::Int2 | SqlType::Int4 | SqlType::Int8, Value::Int(i)) => {
            let (lo, hi) = int_range(ty);
            if *i < lo || *i > hi {
                return Err(Decline);
            }
            match ty {
                SqlType::Int2 => out.extend_from_slice(&((*i as i16 as u16) ^ 0x8000).to_be_bytes()),
                SqlType::Int4 => out.extend_from_slice(&enc_i32(*i as i32)),
                _ => out.extend_from_slice(&enc_i64(*i)),
            }
        }
        (SqlType::Float4, Value::Float(f)) => out.extend_from_slice(&enc_f32(*f as f32)),
        (SqlType::Float8, Value::Float(f)) => out.extend_from_slice(&enc_f64(*f)),
        (SqlType::Float4, Value::Int(i)) => out.extend_from_slice(&enc_f32(*i as f32)),
        (SqlType::Float8, Value::Int(i)) => out.extend_from_slice(&enc_f64(*i as f64)),
        (SqlType::Text, Value::Text(s)) => out.extend_from_slice(s.as_bytes()),
        (SqlType::Varchar(limit), Value::Text(s)) => {
            // Over-long values (even ones PostgreSQL would trim) go to the general path.
            if limit.is_some_and(|n| s.chars().count() > n as usize) {
                return Err(Decline);
            }
            out.extend_from_slice(s.as_bytes());
        }
        (SqlType::Date, Value::Date(d)) => out.extend_from_slice(&enc_i32(*d)),
        (SqlType::Timestamp | SqlType::TimestampTz, Value::Timestamp(t)) => out.extend_from_slice(&enc_i64(*t)),
        _ => return Err(Decline),
    }
    Ok(true)
}

/// A bound parameter (extended protocol) as a value of `ty`.
pub fn from_scalar(ty: SqlType, v: &ScalarValue) -> Eval<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    let int = |i: i64| -> Eval<Value> {
        if is_int(ty) {
            Ok(Value::Int(i))
        } else if is_float(ty) {
            Ok(Value::Float(i as f64))
        } else {
            Err(Decline)
        }
    };
    match v {
        ScalarValue::Int8(Some(i)) => int(*i as i64),
        ScalarValue::Int16(Some(i)) => int(*i as i64),
        ScalarValue::Int32(Some(i)) => int(*i as i64),
        ScalarValue::Int64(Some(i)) => int(*i),
        ScalarValue::UInt8(Some(i)) => int(*i as i64),
        ScalarValue::UInt16(Some(i)) => int(*i as i64),
        ScalarValue::UInt32(Some(i)) => int(*i as i64),
        ScalarValue::Float32(Some(f)) if is_float(ty) => Ok(Value::Float(*f as f64)),
        ScalarValue::Float64(Some(f)) if is_float(ty) => Ok(Value::Float(*f)),
        ScalarValue::Boolean(Some(b)) if ty == SqlType::Bool => Ok(Value::Bool(*b)),
        ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => {
            from_text(ty, s)
        }
        ScalarValue::Date32(Some(d)) if ty == SqlType::Date => Ok(Value::Date(*d)),
        ScalarValue::TimestampMicrosecond(Some(t), _) if matches!(ty, SqlType::Timestamp | SqlType::TimestampTz) => {
            Ok(Value::Timestamp(*t))
        }
        _ => Err(Decline),
    }
}

/// A string given where a value of `ty` is expected (a quoted literal, a
/// parameter sent as text). Only the unambiguous forms are read here.
pub fn from_text(ty: SqlType, s: &str) -> Eval<Value> {
    match ty {
        SqlType::Text | SqlType::Varchar(_) => Ok(Value::Text(s.to_string())),
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 => {
            let i: i64 = s.trim().parse().map_err(|_| Decline)?;
            let (lo, hi) = int_range(ty);
            if i < lo || i > hi {
                return Err(Decline);
            }
            Ok(Value::Int(i))
        }
        SqlType::Bool => match s.trim().to_ascii_lowercase().as_str() {
            "t" | "true" | "on" | "yes" | "1" => Ok(Value::Bool(true)),
            "f" | "false" | "off" | "no" | "0" => Ok(Value::Bool(false)),
            _ => Err(Decline),
        },
        _ => Err(Decline),
    }
}

/// The value as a DataFusion scalar of `ty`'s Arrow type (for result rows).
pub fn to_scalar(ty: SqlType, v: &Value) -> Eval<ScalarValue> {
    let null = matches!(v, Value::Null);
    Ok(match (ty, v) {
        (SqlType::Bool, Value::Bool(b)) => ScalarValue::Boolean(Some(*b)),
        (SqlType::Bool, _) if null => ScalarValue::Boolean(None),
        (SqlType::Int2, Value::Int(i)) => ScalarValue::Int16(Some(i16::try_from(*i).map_err(|_| Decline)?)),
        (SqlType::Int2, _) if null => ScalarValue::Int16(None),
        (SqlType::Int4, Value::Int(i)) => ScalarValue::Int32(Some(i32::try_from(*i).map_err(|_| Decline)?)),
        (SqlType::Int4, _) if null => ScalarValue::Int32(None),
        (SqlType::Int8, Value::Int(i)) => ScalarValue::Int64(Some(*i)),
        (SqlType::Int8, _) if null => ScalarValue::Int64(None),
        (SqlType::Float4, Value::Float(f)) => ScalarValue::Float32(Some(*f as f32)),
        (SqlType::Float4, _) if null => ScalarValue::Float32(None),
        (SqlType::Float8, Value::Float(f)) => ScalarValue::Float64(Some(*f)),
        (SqlType::Float8, _) if null => ScalarValue::Float64(None),
        (SqlType::Text | SqlType::Varchar(_), Value::Text(s)) => ScalarValue::Utf8(Some(s.clone())),
        (SqlType::Text | SqlType::Varchar(_), _) if null => ScalarValue::Utf8(None),
        (SqlType::Date, Value::Date(d)) => ScalarValue::Date32(Some(*d)),
        (SqlType::Date, _) if null => ScalarValue::Date32(None),
        (SqlType::Timestamp, Value::Timestamp(t)) => ScalarValue::TimestampMicrosecond(Some(*t), None),
        (SqlType::Timestamp, _) if null => ScalarValue::TimestampMicrosecond(None, None),
        (SqlType::TimestampTz, Value::Timestamp(t)) => {
            ScalarValue::TimestampMicrosecond(Some(*t), Some(crate::values::types::UTC.into()))
        }
        (SqlType::TimestampTz, _) if null => {
            ScalarValue::TimestampMicrosecond(None, Some(crate::values::types::UTC.into()))
        }
        _ => return Err(Decline),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_roundtrip_through_the_stored_encoding() {
        for (ty, v) in [
            (SqlType::Int2, Value::Int(-7)),
            (SqlType::Int4, Value::Int(i32::MIN as i64)),
            (SqlType::Int8, Value::Int(i64::MAX)),
            (SqlType::Float8, Value::Float(-2.5)),
            (SqlType::Text, Value::Text("héllo".into())),
            (SqlType::Bool, Value::Bool(true)),
            (SqlType::Date, Value::Date(19000)),
            (SqlType::TimestampTz, Value::Timestamp(1_700_000_000_000_000)),
        ] {
            let mut b = Vec::new();
            assert!(encode_into(ty, &v, &mut b).unwrap());
            assert_eq!(decode(ty, Some(&b)).unwrap(), v, "{ty:?}");
        }
    }

    #[test]
    fn values_that_do_not_fit_decline() {
        let mut b = Vec::new();
        assert_eq!(encode_into(SqlType::Int4, &Value::Int(1 << 40), &mut b), Err(Decline));
        assert_eq!(encode_into(SqlType::Varchar(Some(2)), &Value::Text("abc".into()), &mut b), Err(Decline));
        assert_eq!(from_text(SqlType::Int4, "12a"), Err(Decline));
        assert_eq!(from_text(SqlType::Int2, "40000"), Err(Decline));
        assert_eq!(encode_into(SqlType::Int4, &Value::Null, &mut b), Ok(false));
    }
}
