//! Engine rows <-> Arrow columns.
//!
//! A table row is an engine tuple with one field per column (at the column's
//! fixed field number, so dropped columns leave a gap and added ones go at
//! the end). Field bytes are order-preserving where the type can be indexed:
//! integers big-endian with the sign bit flipped, floats in IEEE total order,
//! decimals as sign-flipped i128 (or i256 beyond 38 digits), dates and times as their integer counts;
//! text and bytea are their bytes. Byte order therefore equals SQL order,
//! which is what the engine's ordered indexes need (docs/storage-contract.md).

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, BooleanBuilder, Date32Builder, Decimal128Builder, Decimal256Builder,
    Float32Builder, Float64Builder, Int16Builder, Int32Builder, Int64Builder, IntervalMonthDayNanoBuilder,
    StringBuilder, Time64MicrosecondBuilder, TimestampMicrosecondBuilder,
};
use datafusion::arrow::datatypes::{
    Date32Type, Decimal128Type, Decimal256Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    IntervalMonthDayNano, IntervalMonthDayNanoType, Time64MicrosecondType, TimestampMicrosecondType, i256,
};
use tessera_engine::tuple::Tuple;

use crate::error::{Result, SqlError};
use crate::values::types::{SqlType, UTC};

/// Encodes every value of `array` (already of `ty`'s Arrow type) as field bytes.
pub fn encode_column(ty: SqlType, array: &ArrayRef) -> Result<Vec<Option<Vec<u8>>>> {
    let n = array.len();
    let mut out = Vec::with_capacity(n);
    macro_rules! each {
        ($arr:expr, |$v:ident| $enc:expr) => {{
            let a = $arr;
            for i in 0..n {
                out.push(if a.is_null(i) {
                    None
                } else {
                    let $v = a.value(i);
                    Some($enc)
                });
            }
        }};
    }
    match ty {
        SqlType::Bool => each!(array.as_boolean(), |v| vec![v as u8]),
        SqlType::Int2 => each!(array.as_primitive::<Int16Type>(), |v| ((v as u16) ^ 0x8000).to_be_bytes().to_vec()),
        SqlType::Int4 => each!(array.as_primitive::<Int32Type>(), |v| enc_i32(v).to_vec()),
        SqlType::Int8 => each!(array.as_primitive::<Int64Type>(), |v| enc_i64(v).to_vec()),
        SqlType::Float4 => each!(array.as_primitive::<Float32Type>(), |v| enc_f32(v).to_vec()),
        SqlType::Float8 => each!(array.as_primitive::<Float64Type>(), |v| enc_f64(v).to_vec()),
        SqlType::Numeric { precision, .. } if precision <= 38 => {
            each!(array.as_primitive::<Decimal128Type>(), |v| ((v as u128) ^ (1u128 << 127)).to_be_bytes().to_vec())
        }
        SqlType::Numeric { .. } => each!(array.as_primitive::<Decimal256Type>(), |v| enc_i256(v).to_vec()),
        SqlType::Text
        | SqlType::Varchar(_)
        | SqlType::Char(_)
        | SqlType::Uuid
        | SqlType::Json
        | SqlType::Jsonb
        | SqlType::Enum(_) => {
            each!(array.as_string::<i32>(), |v| v.as_bytes().to_vec())
        }
        SqlType::Bytea => each!(array.as_binary::<i32>(), |v| v.to_vec()),
        SqlType::Date => each!(array.as_primitive::<Date32Type>(), |v| enc_i32(v).to_vec()),
        SqlType::Time => each!(array.as_primitive::<Time64MicrosecondType>(), |v| enc_i64(v).to_vec()),
        SqlType::Timestamp | SqlType::TimestampTz => {
            each!(array.as_primitive::<TimestampMicrosecondType>(), |v| enc_i64(v).to_vec())
        }
        SqlType::Array { .. } => {
            let elem = ty.element().ok_or_else(|| SqlError::internal(format!("no element type for {ty}")))?;
            let lists = array.as_list::<i32>();
            for i in 0..n {
                out.push(if lists.is_null(i) { None } else { Some(encode_array(elem, &lists.value(i))?) });
            }
        }
        SqlType::Interval => each!(array.as_primitive::<IntervalMonthDayNanoType>(), |v| {
            let mut b = Vec::with_capacity(16);
            b.extend_from_slice(&v.months.to_be_bytes());
            b.extend_from_slice(&v.days.to_be_bytes());
            b.extend_from_slice(&v.nanoseconds.to_be_bytes());
            b
        }),
    }
    Ok(out)
}

/// 256 bits big-endian with the sign bit flipped: byte order is value order.
pub fn enc_i256(v: i256) -> [u8; 32] {
    let mut b = v.to_be_bytes();
    b[0] ^= 0x80;
    b
}

fn dec_i256(mut b: [u8; 32]) -> i256 {
    b[0] ^= 0x80;
    i256::from_be_bytes(b)
}

pub fn enc_i32(v: i32) -> [u8; 4] {
    ((v as u32) ^ 0x8000_0000).to_be_bytes()
}

pub fn enc_i64(v: i64) -> [u8; 8] {
    ((v as u64) ^ (1 << 63)).to_be_bytes()
}

pub(crate) fn enc_f32(v: f32) -> [u8; 4] {
    let v = if v == 0.0 {
        0.0f32
    } else if v.is_nan() {
        f32::NAN
    } else {
        v
    };
    let b = v.to_bits();
    (if b >> 31 == 1 { !b } else { b | (1 << 31) }).to_be_bytes()
}

pub(crate) fn enc_f64(v: f64) -> [u8; 8] {
    let v = if v == 0.0 {
        0.0f64
    } else if v.is_nan() {
        f64::NAN
    } else {
        v
    };
    let b = v.to_bits();
    (if b >> 63 == 1 { !b } else { b | (1 << 63) }).to_be_bytes()
}

pub(crate) fn dec_f32(b: [u8; 4]) -> f32 {
    let u = u32::from_be_bytes(b);
    f32::from_bits(if u >> 31 == 1 { u & !(1 << 31) } else { !u })
}

pub(crate) fn dec_f64(b: [u8; 8]) -> f64 {
    let u = u64::from_be_bytes(b);
    f64::from_bits(if u >> 63 == 1 { u & !(1 << 63) } else { !u })
}

fn arr<const N: usize>(b: &[u8]) -> Result<[u8; N]> {
    b.try_into().map_err(|_| SqlError::internal(format!("stored value has {} bytes, expected {N}", b.len())))
}

/// Builds one Arrow column from field `field` of each row.
pub fn decode_column(ty: SqlType, field: usize, rows: &[&[u8]]) -> Result<ArrayRef> {
    let fields =
        rows.iter().map(|r| Tuple::parse(r).map(|t| t.field(field)).map_err(|e| SqlError::internal(e.to_string())));
    decode_values(ty, rows.len(), fields)
}

/// An array's elements as one field: their count, then each as a 32-bit
/// length (all ones for NULL) and its field bytes. Not order-preserving:
/// arrays are not indexable.
fn encode_array(elem: SqlType, values: &ArrayRef) -> Result<Vec<u8>> {
    let fields = encode_column(elem, values)?;
    let mut out = Vec::with_capacity(4 + fields.len() * 12);
    out.extend_from_slice(&(fields.len() as u32).to_be_bytes());
    for f in fields {
        match f {
            None => out.extend_from_slice(&u32::MAX.to_be_bytes()),
            Some(b) => {
                out.extend_from_slice(&(b.len() as u32).to_be_bytes());
                out.extend_from_slice(&b);
            }
        }
    }
    Ok(out)
}

/// Splits `n` bytes off the front of `b`.
fn take<'a>(n: usize, b: &mut &'a [u8]) -> Result<&'a [u8]> {
    let (head, tail) = b.split_at_checked(n).ok_or_else(|| SqlError::internal("stored array is malformed"))?;
    *b = tail;
    Ok(head)
}

/// The element fields of one stored array (see [`encode_array`]).
fn array_elements(mut b: &[u8]) -> Result<Vec<Option<&[u8]>>> {
    let count = u32::from_be_bytes(take(4, &mut b)?.try_into().expect("four bytes")) as usize;
    let mut out = Vec::with_capacity(count.min(b.len()));
    for _ in 0..count {
        let len = u32::from_be_bytes(take(4, &mut b)?.try_into().expect("four bytes"));
        out.push(if len == u32::MAX { None } else { Some(take(len as usize, &mut b)?) });
    }
    Ok(out)
}

/// Builds an array column from stored arrays.
fn decode_arrays<'a>(
    ty: SqlType,
    n: usize,
    fields: impl Iterator<Item = Result<Option<&'a [u8]>>>,
) -> Result<ArrayRef> {
    use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
    let elem = ty.element().ok_or_else(|| SqlError::internal(format!("no element type for {ty}")))?;
    let (mut elements, mut lengths, mut valid) = (Vec::new(), Vec::with_capacity(n), Vec::with_capacity(n));
    for f in fields {
        match f? {
            None => {
                lengths.push(0);
                valid.push(false);
            }
            Some(b) => {
                let items = array_elements(b)?;
                lengths.push(items.len());
                valid.push(true);
                elements.extend(items);
            }
        }
    }
    let values = decode_values(elem, elements.len(), elements.into_iter().map(Ok))?;
    let datafusion::arrow::datatypes::DataType::List(field) = ty.arrow_type() else {
        unreachable!("an array type is a List")
    };
    let list = datafusion::arrow::array::ListArray::try_new(
        field,
        OffsetBuffer::from_lengths(lengths),
        values,
        Some(NullBuffer::from(valid)),
    )?;
    Ok(Arc::new(list))
}

/// Builds one Arrow column of `n` values from their field bytes.
fn decode_values<'a>(
    ty: SqlType,
    n: usize,
    fields: impl Iterator<Item = Result<Option<&'a [u8]>>>,
) -> Result<ArrayRef> {
    if matches!(ty, SqlType::Array { .. }) {
        return decode_arrays(ty, n, fields);
    }
    macro_rules! build {
        ($builder:expr, |$b:ident| $dec:expr) => {{
            let mut builder = $builder;
            for f in fields {
                match f? {
                    None => builder.append_null(),
                    Some($b) => builder.append_value($dec),
                }
            }
            Arc::new(builder.finish()) as ArrayRef
        }};
    }
    Ok(match ty {
        SqlType::Bool => build!(BooleanBuilder::with_capacity(n), |b| b.first() == Some(&1)),
        SqlType::Int2 => build!(Int16Builder::with_capacity(n), |b| (u16::from_be_bytes(arr(b)?) ^ 0x8000) as i16),
        SqlType::Int4 => build!(Int32Builder::with_capacity(n), |b| (u32::from_be_bytes(arr(b)?) ^ 0x8000_0000) as i32),
        SqlType::Int8 => build!(Int64Builder::with_capacity(n), |b| (u64::from_be_bytes(arr(b)?) ^ (1 << 63)) as i64),
        SqlType::Float4 => build!(Float32Builder::with_capacity(n), |b| dec_f32(arr(b)?)),
        SqlType::Float8 => build!(Float64Builder::with_capacity(n), |b| dec_f64(arr(b)?)),
        SqlType::Numeric { precision, scale } if precision <= 38 => {
            let builder = Decimal128Builder::with_capacity(n).with_precision_and_scale(precision as u8, scale)?;
            build!(builder, |b| (u128::from_be_bytes(arr(b)?) ^ (1u128 << 127)) as i128)
        }
        SqlType::Numeric { scale, .. } => {
            let builder = Decimal256Builder::with_capacity(n).with_precision_and_scale(ty.stored_precision(), scale)?;
            build!(builder, |b| dec_i256(arr(b)?))
        }
        // char(n) is kept without its padding; values written padded (by
        // earlier versions) read the same.
        SqlType::Char(_) => build!(StringBuilder::with_capacity(n, n * 16), |b| std::str::from_utf8(b)
            .map_err(|_| SqlError::internal("stored text is not UTF-8"))?
            .trim_end_matches(' ')),
        SqlType::Text | SqlType::Varchar(_) | SqlType::Uuid | SqlType::Json | SqlType::Jsonb | SqlType::Enum(_) => {
            build!(StringBuilder::with_capacity(n, n * 16), |b| std::str::from_utf8(b)
                .map_err(|_| SqlError::internal("stored text is not UTF-8"))?)
        }
        SqlType::Bytea => build!(BinaryBuilder::with_capacity(n, n * 16), |b| b),
        SqlType::Date => {
            build!(Date32Builder::with_capacity(n), |b| (u32::from_be_bytes(arr(b)?) ^ 0x8000_0000) as i32)
        }
        SqlType::Time => {
            build!(Time64MicrosecondBuilder::with_capacity(n), |b| (u64::from_be_bytes(arr(b)?) ^ (1 << 63)) as i64)
        }
        SqlType::Timestamp => {
            build!(TimestampMicrosecondBuilder::with_capacity(n), |b| (u64::from_be_bytes(arr(b)?) ^ (1 << 63)) as i64)
        }
        SqlType::TimestampTz => build!(TimestampMicrosecondBuilder::with_capacity(n).with_timezone(UTC), |b| {
            (u64::from_be_bytes(arr(b)?) ^ (1 << 63)) as i64
        }),
        SqlType::Interval => build!(IntervalMonthDayNanoBuilder::with_capacity(n), |b| {
            let b: [u8; 16] = arr(b)?;
            IntervalMonthDayNano::new(
                i32::from_be_bytes(b[0..4].try_into().unwrap()),
                i32::from_be_bytes(b[4..8].try_into().unwrap()),
                i64::from_be_bytes(b[8..16].try_into().unwrap()),
            )
        }),
        SqlType::Array { .. } => unreachable!("decoded above"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Float64Array, Int32Array, StringArray};
    use tessera_engine::tuple::encode_tuple;

    fn roundtrip(ty: SqlType, a: ArrayRef) {
        let enc = encode_column(ty, &a).unwrap();
        let rows: Vec<Vec<u8>> = enc.iter().map(|f| encode_tuple(&[f.as_deref()])).collect();
        let refs: Vec<&[u8]> = rows.iter().map(|r| r.as_slice()).collect();
        let back = decode_column(ty, 0, &refs).unwrap();
        assert_eq!(&back, &a);
    }

    #[test]
    fn arrays_roundtrip() {
        use datafusion::arrow::array::ListArray;
        use datafusion::arrow::datatypes::Int32Type;
        let ty = SqlType::array_of(SqlType::Int4);
        let lists = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), None, Some(3)]),
            None,
            Some(vec![]),
            Some(vec![Some(-7)]),
        ]);
        roundtrip(ty, Arc::new(lists));
        let corrupt = encode_tuple(&[Some(&[0, 0, 0, 9, 0, 0][..])]);
        assert!(decode_column(ty, 0, &[&corrupt]).is_err(), "a malformed array is an error, not a panic");
    }

    #[test]
    fn values_roundtrip_and_order() {
        roundtrip(SqlType::Int4, Arc::new(Int32Array::from(vec![Some(-5), None, Some(7), Some(i32::MIN)])));
        roundtrip(SqlType::Float8, Arc::new(Float64Array::from(vec![Some(-1.5), Some(0.0), None, Some(1e300)])));
        roundtrip(SqlType::Text, Arc::new(StringArray::from(vec![Some("a"), None, Some("")])));
        let nums = [-3.5f64, -0.25, 0.0, 2.0, 1e10];
        let enc: Vec<[u8; 8]> = nums.iter().map(|v| enc_f64(*v)).collect();
        assert!(enc.windows(2).all(|w| w[0] < w[1]));
        let ints = [i64::MIN, -1, 0, 1, i64::MAX];
        let enc: Vec<[u8; 8]> = ints.iter().map(|v| enc_i64(*v)).collect();
        assert!(enc.windows(2).all(|w| w[0] < w[1]));
    }
}
