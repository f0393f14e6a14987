//! `COPY … (FORMAT binary)`: PostgreSQL's binary COPY stream.
//!
//! The stream is an 11-byte signature (`PGCOPY\n\377\r\n\0`), a 32-bit
//! flags word (bit 16: OIDs included, which Tessera refuses), a header
//! extension (its length, then bytes to skip), then tuples: a 16-bit field
//! count and, per field, a 32-bit length (-1 for NULL) and the value in
//! its type's binary format (`pg_binary`); a field count of -1 ends it.
//! Drivers' bulk loads use it (pgx's `CopyFrom`, asyncpg's
//! `copy_records_to_table`, psycopg's binary `copy`).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, new_null_array};
use datafusion::common::ScalarValue;

use crate::error::{Result, SqlError, code};
use crate::values::pg_binary::ReadError;
use crate::values::types::SqlType;

const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// One tuple's fields (None for NULL), borrowed from the data.
pub type Tuple<'a> = Vec<Option<&'a [u8]>>;

fn bad(message: impl Into<String>) -> SqlError {
    SqlError::new(code::BAD_COPY_FORMAT, message.into())
}

/// The stream's header: signature, no flags, no extension.
pub fn header() -> Vec<u8> {
    let mut out = SIGNATURE.to_vec();
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes());
    out
}

/// Row `r` of `batch` as one tuple (`types`: each column's SQL type).
pub fn tuple(batch: &RecordBatch, r: usize, types: &[SqlType]) -> Result<Vec<u8>> {
    use datafusion::arrow::array::Array;
    let mut out = Vec::with_capacity(16 * batch.num_columns());
    out.extend_from_slice(&(batch.num_columns() as i16).to_be_bytes());
    for (ci, col) in batch.columns().iter().enumerate() {
        if col.is_null(r) {
            out.extend_from_slice(&(-1i32).to_be_bytes());
            continue;
        }
        let start = out.len();
        out.extend_from_slice(&0i32.to_be_bytes());
        crate::values::pg_binary::write_value(&mut out, col, r, types.get(ci).copied())?;
        let len = (out.len() - start - 4) as i32;
        out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    }
    Ok(out)
}

/// A cursor over the stream's bytes.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.data.len());
        let end = end.ok_or_else(|| bad("unexpected EOF in COPY data"))?;
        let out = &self.data[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn i16(&mut self) -> Result<i16> {
        Ok(i16::from_be_bytes(self.take(2)?.try_into().expect("two bytes")))
    }

    fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().expect("four bytes")))
    }
}

/// The tuples of a binary COPY stream of `columns` fields each.
pub fn tuples(data: &[u8], columns: usize) -> Result<Vec<Tuple<'_>>> {
    let mut r = Reader { data, pos: 0 };
    if data.len() < SIGNATURE.len() || r.take(SIGNATURE.len())? != SIGNATURE {
        return Err(bad("COPY file signature not recognized"));
    }
    let flags = r.i32()?;
    if flags & (1 << 16) != 0 {
        return Err(SqlError::unsupported("binary COPY data with OIDs"));
    }
    if flags & !(1 << 16) & 0xffff_0000u32 as i32 != 0 {
        return Err(bad("unrecognized critical flags in COPY file header"));
    }
    let extension = r.i32()?;
    r.take(usize::try_from(extension).map_err(|_| bad("invalid COPY file header (negative extension length)"))?)?;
    let mut out = Vec::new();
    // The trailer ends the data; so does its end at a tuple's boundary.
    while r.pos < data.len() {
        let count = r.i16()?;
        if count == -1 {
            break;
        }
        if count as usize != columns || count < 0 {
            return Err(bad(format!("row field count is {count}, expected {columns} (row {})", out.len() + 1)));
        }
        let mut fields = Vec::with_capacity(columns);
        for _ in 0..columns {
            let len = r.i32()?;
            fields.push(match len {
                -1 => None,
                n if n < 0 => return Err(bad(format!("invalid field size {n} (row {})", out.len() + 1))),
                n => Some(r.take(n as usize)?),
            });
        }
        out.push(fields);
    }
    Ok(out)
}

/// One column's binary fields as an array of column type `ty`; on failure,
/// the failing row (0-based) and the error.
pub fn column<'a>(
    ty: SqlType,
    name: &str,
    values: impl Iterator<Item = Option<&'a [u8]>>,
    zone: crate::values::tz::Zone,
) -> std::result::Result<ArrayRef, (usize, SqlError)> {
    let mut scalars: Vec<Option<ScalarValue>> = Vec::new();
    for (row, v) in values.enumerate() {
        scalars.push(match v {
            None => None,
            Some(raw) => Some(crate::values::pg_binary::read_value(ty.oid(), raw).map_err(|e| {
                let message = match e {
                    ReadError::Malformed => format!("incorrect binary data format for type {}", ty.name()),
                    ReadError::UnknownType => format!("binary COPY of type {} is not supported", ty.name()),
                };
                let code = if e == ReadError::Malformed { code::INVALID_BINARY } else { code::FEATURE_NOT_SUPPORTED };
                (row, SqlError::new(code, message))
            })?),
        });
    }
    let Some(read_type) = scalars.iter().flatten().next().map(ScalarValue::data_type) else {
        return Ok(new_null_array(&ty.arrow_type(), scalars.len()));
    };
    let typed_null = ScalarValue::try_from(&read_type).map_err(|e| (0, SqlError::from(e)))?;
    let array = ScalarValue::iter_to_array(scalars.into_iter().map(|v| v.unwrap_or_else(|| typed_null.clone())))
        .map_err(|e| (0, SqlError::from(e)))?;
    crate::values::assign::cast_to(&Arc::clone(&array), ty, name, zone)
        .map_err(|e| (first_failing(&array, ty, name, zone), e))
}

/// The first row of `array` that does not convert to `ty` (for the error).
fn first_failing(array: &ArrayRef, ty: SqlType, name: &str, zone: crate::values::tz::Zone) -> usize {
    (0..array.len()).find(|i| crate::values::assign::cast_to(&array.slice(*i, 1), ty, name, zone).is_err()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(tuples: &[&[Option<&[u8]>]], trailer: bool) -> Vec<u8> {
        let mut out = header();
        for t in tuples {
            out.extend_from_slice(&(t.len() as i16).to_be_bytes());
            for f in *t {
                match f {
                    None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                    Some(b) => {
                        out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                        out.extend_from_slice(b);
                    }
                }
            }
        }
        if trailer {
            out.extend_from_slice(&(-1i16).to_be_bytes());
        }
        out
    }

    #[test]
    fn reads_tuples_and_refuses_malformed_streams() {
        let one = 1i32.to_be_bytes();
        let data = stream(&[&[Some(&one), None], &[Some(&one), Some(b"x")]], true);
        let t = tuples(&data, 2).unwrap();
        assert_eq!(t, vec![vec![Some(&one[..]), None], vec![Some(&one[..]), Some(&b"x"[..])]]);
        assert_eq!(tuples(&stream(&[&[Some(&one)]], false), 1).unwrap().len(), 1);
        let err = tuples(&data, 3).unwrap_err();
        assert_eq!(err.code, code::BAD_COPY_FORMAT);
        assert!(err.message.contains("row field count is 2, expected 3"), "{}", err.message);
        assert_eq!(tuples(b"PGCOPY\n", 1).unwrap_err().code, code::BAD_COPY_FORMAT);
        assert_eq!(tuples(b"not a copy stream at all", 1).unwrap_err().code, code::BAD_COPY_FORMAT);
        // A field longer than the data, and a negative length.
        let mut cut = stream(&[&[Some(&one)]], true);
        cut.truncate(cut.len() - 4);
        assert_eq!(tuples(&cut, 1).unwrap_err().code, code::BAD_COPY_FORMAT);
        let mut neg = header();
        neg.extend_from_slice(&1i16.to_be_bytes());
        neg.extend_from_slice(&(-7i32).to_be_bytes());
        assert_eq!(tuples(&neg, 1).unwrap_err().code, code::BAD_COPY_FORMAT);
    }
}
