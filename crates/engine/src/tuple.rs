//! The row contract between the SQL layer and the engine.
//!
//! The engine stores a row as an opaque byte string whose *layout* it knows just
//! well enough to pull index keys out of it: a row is a tuple of fields, each a
//! byte string or NULL. What the bytes of a field mean is the SQL layer's
//! business (it encodes its values as it likes), with one rule: a field that
//! takes part in an *ordered* index must be encoded so that comparing the bytes
//! lexicographically orders the values as SQL does (for example big-endian
//! integers with the sign bit flipped).
//!
//! Layout: `u16 field count`, then one `u32` end offset per field (little
//! endian; the high bit set means NULL), then the field bytes back to back.
//!
//! An index key is the concatenation of the *escaped* key fields
//! ([`encode_key`]): a present field is `0x01`, its bytes with `0x00` written as
//! `0x00 0xFF`, then the terminator `0x00 0x01`; NULL is the single byte `0x02`,
//! so NULLs sort after every value, as in PostgreSQL's default ordering.
//! Escaping makes composite keys compare field by field and makes every key
//! self-delimiting, so a secondary index can append the primary key to its own
//! key to keep entries distinct.

use crate::error::{EngineError, Result};

const NULL_FLAG: u32 = 1 << 31;

/// Builds a row from fields.
#[derive(Default)]
pub struct TupleBuilder {
    ends: Vec<u32>,
    data: Vec<u8>,
}

impl TupleBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, field: Option<&[u8]>) -> &mut Self {
        match field {
            Some(bytes) => {
                self.data.extend_from_slice(bytes);
                self.ends.push(self.data.len() as u32);
            }
            None => self.ends.push(self.data.len() as u32 | NULL_FLAG),
        }
        self
    }

    pub fn finish(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(2 + 4 * self.ends.len() + self.data.len());
        out.extend_from_slice(&(self.ends.len() as u16).to_le_bytes());
        for end in &self.ends {
            out.extend_from_slice(&end.to_le_bytes());
        }
        out.extend_from_slice(&self.data);
        out
    }
}

/// Encodes a whole row from its fields.
pub fn encode_tuple(fields: &[Option<&[u8]>]) -> Vec<u8> {
    let mut b = TupleBuilder::new();
    for f in fields {
        b.push(*f);
    }
    b.finish()
}

/// A borrowed, validated view of a row.
#[derive(Clone, Copy)]
pub struct Tuple<'a> {
    bytes: &'a [u8],
    count: usize,
}

impl<'a> Tuple<'a> {
    /// Checks the layout once so that field access cannot go out of bounds.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        if bytes.len() < 2 {
            return Err(EngineError::MalformedRow("row shorter than its header".into()));
        }
        let count = u16::from_le_bytes([bytes[0], bytes[1]]) as usize;
        let data_start = 2 + 4 * count;
        if bytes.len() < data_start {
            return Err(EngineError::MalformedRow(format!(
                "row declares {count} fields but has no room for their offsets"
            )));
        }
        let mut prev = 0usize;
        for i in 0..count {
            let end = (read_u32(bytes, 2 + 4 * i) & !NULL_FLAG) as usize;
            if end < prev || data_start + end > bytes.len() {
                return Err(EngineError::MalformedRow(format!("field {i} out of bounds")));
            }
            prev = end;
        }
        Ok(Tuple { bytes, count })
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Field `i`, `None` for NULL or for a field past the end (a column added
    /// later reads as NULL in older rows).
    pub fn field(&self, i: usize) -> Option<&'a [u8]> {
        if i >= self.count {
            return None;
        }
        let raw = read_u32(self.bytes, 2 + 4 * i);
        if raw & NULL_FLAG != 0 {
            return None;
        }
        let start = if i == 0 { 0 } else { (read_u32(self.bytes, 2 + 4 * (i - 1)) & !NULL_FLAG) as usize };
        let data_start = 2 + 4 * self.count;
        Some(&self.bytes[data_start + start..data_start + raw as usize])
    }
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Appends one escaped key field (see the module docs).
pub fn push_key_field(out: &mut Vec<u8>, field: Option<&[u8]>) {
    match field {
        None => out.push(0x02),
        Some(bytes) => {
            out.push(0x01);
            for &b in bytes {
                if b == 0 {
                    out.extend_from_slice(&[0x00, 0xFF]);
                } else {
                    out.push(b);
                }
            }
            out.extend_from_slice(&[0x00, 0x01]);
        }
    }
}

/// Encodes a (possibly composite) index key from raw field values.
pub fn encode_key(fields: &[Option<&[u8]>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(fields.iter().map(|f| f.map_or(1, |b| b.len() + 3)).sum());
    for f in fields {
        push_key_field(&mut out, *f);
    }
    out
}

/// The raw bytes of field `pos` of an escaped key (None: NULL, or the key
/// has fewer fields or is malformed). The inverse of [`push_key_field`].
pub fn key_field(key: &[u8], pos: usize) -> Option<Vec<u8>> {
    let mut i = 0;
    let mut n = 0;
    loop {
        match *key.get(i)? {
            0x02 => {
                if n == pos {
                    return None;
                }
                i += 1;
            }
            0x01 => {
                i += 1;
                let mut out = Vec::new();
                loop {
                    match *key.get(i)? {
                        0x00 => match *key.get(i + 1)? {
                            0xFF => {
                                out.push(0);
                                i += 2;
                            }
                            0x01 => {
                                i += 2;
                                break;
                            }
                            _ => return None,
                        },
                        b => {
                            out.push(b);
                            i += 1;
                        }
                    }
                }
                if n == pos {
                    return Some(out);
                }
            }
            _ => return None,
        }
        n += 1;
    }
}

/// The smallest key greater than every key that starts with `prefix`, or
/// `None` when there is none. Use it as the exclusive upper bound of a prefix scan.
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Order-preserving encoding of a signed 64-bit integer (for keys and fields
/// of ordered indexes).
pub fn encode_i64(v: i64) -> [u8; 8] {
    ((v as u64) ^ (1 << 63)).to_be_bytes()
}

pub fn decode_i64(b: &[u8]) -> Option<i64> {
    let arr: [u8; 8] = b.try_into().ok()?;
    Some((u64::from_be_bytes(arr) ^ (1 << 63)) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_field_inverts_the_key_encoding() {
        let key = encode_key(&[Some(&[0, 7, 0]), None, Some(b""), Some(&encode_i64(-3))]);
        assert_eq!(key_field(&key, 0), Some(vec![0, 7, 0]));
        assert_eq!(key_field(&key, 1), None);
        assert_eq!(key_field(&key, 2), Some(vec![]));
        assert_eq!(key_field(&key, 3), Some(encode_i64(-3).to_vec()));
        assert_eq!(key_field(&key, 4), None);
        assert_eq!(key_field(&[0x01, 0x05], 0), None, "truncated");
    }

    #[test]
    fn tuple_round_trip_with_nulls() {
        let row = encode_tuple(&[Some(b"abc"), None, Some(b""), Some(&[0, 1, 2])]);
        let t = Tuple::parse(&row).unwrap();
        assert_eq!(t.len(), 4);
        assert_eq!(t.field(0), Some(&b"abc"[..]));
        assert_eq!(t.field(1), None);
        assert_eq!(t.field(2), Some(&b""[..]));
        assert_eq!(t.field(3), Some(&[0u8, 1, 2][..]));
        assert_eq!(t.field(9), None);
    }

    #[test]
    fn malformed_rows_are_rejected() {
        assert!(Tuple::parse(&[]).is_err());
        assert!(Tuple::parse(&[5, 0, 1]).is_err());
        let mut row = encode_tuple(&[Some(b"abc")]);
        row.truncate(row.len() - 1);
        assert!(Tuple::parse(&row).is_err());
    }

    #[test]
    fn keys_sort_field_by_field() {
        let k = |a: &[u8], b: &[u8]| encode_key(&[Some(a), Some(b)]);
        assert!(k(b"a", b"z") < k(b"ab", b"a"));
        assert!(k(b"a", b"z") < k(b"a\0", b"a"));
        assert!(encode_key(&[Some(b"zzz")]) < encode_key(&[None]));
        let ints: Vec<_> = [-5i64, -1, 0, 1, 300].iter().map(|v| encode_key(&[Some(&encode_i64(*v))])).collect();
        assert!(ints.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(decode_i64(&encode_i64(-42)), Some(-42));
    }

    #[test]
    fn prefix_end_bounds_prefix() {
        let p = encode_key(&[Some(b"a")]);
        let end = prefix_end(&p).unwrap();
        assert!(encode_key(&[Some(b"a"), Some(b"zz")]) < end);
        assert!(encode_key(&[Some(b"b")]) >= end);
        assert_eq!(prefix_end(&[0xFF, 0xFF]), None);
    }
}
