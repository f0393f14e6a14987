//! PostgreSQL's `encode(bytea, format)` and `decode(text, format)`, in
//! place of DataFusion's: `base64` broken into lines of 76 characters
//! (and read ignoring whitespace), `hex`, and `escape` (zero bytes and
//! bytes with the high bit set as `\nnn`, backslashes doubled), with
//! PostgreSQL's errors; and `text::bytea` as PostgreSQL reads bytea input
//! (`\x` hex or the escape format), where DataFusion's cast would take the
//! text's own bytes (`tessera_text_to_bytea`); and `chr(int)` as
//! PostgreSQL's in a UTF8 database, which refuses negative codes (22023),
//! the NUL character, surrogates and code points past U+10FFFF (54000)
//! where DataFusion's returns a NUL character in the text.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryArray, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

use crate::error::{SqlError, code};

/// Registers `encode`, `decode`, `chr` and `tessera_text_to_bytea`.
pub fn register(ctx: &SessionContext) {
    for decode in [false, true] {
        ctx.register_udf(ScalarUDF::new_from_impl(Codec {
            decode,
            signature: Signature::user_defined(Volatility::Immutable),
        }));
    }
    ctx.register_udf(ScalarUDF::new_from_impl(TextToBytea { signature: Signature::any(1, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::new_from_impl(Chr {
        signature: Signature::uniform(1, vec![DataType::Int64], Volatility::Immutable),
    }));
}

/// `chr(code)`: the character with that code point.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Chr {
    signature: Signature,
}

/// PostgreSQL's `chr` of one code point, with its errors in their order.
fn chr(code: i64) -> std::result::Result<char, SqlError> {
    let refused = |message: String| SqlError::new(code::PROGRAM_LIMIT, message);
    if code < 0 {
        return Err(SqlError::new(code::INVALID_PARAMETER, "character number must be positive"));
    }
    if code == 0 {
        return Err(refused("null character not permitted".into()));
    }
    if code > 0x10ffff {
        return Err(refused(format!("requested character too large for encoding: {code}")));
    }
    char::from_u32(code as u32).ok_or_else(|| refused(format!("requested character not valid for encoding: {code}")))
}

impl ScalarUDFImpl for Chr {
    fn name(&self) -> &str {
        "chr"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let codes = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let codes = datafusion::arrow::compute::cast(&codes, &DataType::Int64)?;
        let mut out = Vec::with_capacity(codes.len());
        for code in codes.as_primitive::<datafusion::arrow::datatypes::Int64Type>().iter() {
            out.push(match code {
                Some(code) => Some(chr(code).map_err(|e| DataFusionError::External(Box::new(e)))?.to_string()),
                None => None,
            });
        }
        let out: ArrayRef = Arc::new(StringArray::from(out));
        Ok(if scalar {
            ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(&out, 0)?)
        } else {
            ColumnarValue::Array(out)
        })
    }
}

/// `tessera_text_to_bytea(x)`: text read as bytea input (binary passes).
#[derive(Debug, PartialEq, Eq, Hash)]
struct TextToBytea {
    signature: Signature,
}

impl ScalarUDFImpl for TextToBytea {
    fn name(&self) -> &str {
        "tessera_text_to_bytea"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Binary)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let out: ArrayRef = match values.data_type() {
            DataType::Binary => values,
            DataType::Null => Arc::new(BinaryArray::new_null(values.len())),
            _ => {
                let text = datafusion::arrow::compute::cast(&values, &DataType::Utf8)?;
                let mut out = Vec::with_capacity(text.len());
                for t in text.as_string::<i32>().iter() {
                    out.push(match t {
                        Some(t) => Some(
                            crate::values::text::parse_bytea(t).map_err(|e| DataFusionError::External(Box::new(e)))?,
                        ),
                        None => None,
                    });
                }
                Arc::new(BinaryArray::from_iter(out))
            }
        };
        crate::values::udf_values::columnar(out, scalar)
    }
}

fn bad(message: impl Into<String>) -> SqlError {
    SqlError::new(code::INVALID_PARAMETER, message)
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn encode(bytes: &[u8], format: &str) -> std::result::Result<String, SqlError> {
    let mut out = String::with_capacity(bytes.len() * 2);
    match format.to_ascii_lowercase().as_str() {
        "hex" => {
            for b in bytes {
                out.push_str(&format!("{b:02x}"));
            }
        }
        "escape" => {
            for &b in bytes {
                match b {
                    b'\\' => out.push_str("\\\\"),
                    0 | 0x80.. => out.push_str(&format!("\\{b:03o}")),
                    _ => out.push(b as char),
                }
            }
        }
        "base64" => {
            let mut line = 0;
            for chunk in bytes.chunks(3) {
                if line == 76 {
                    out.push('\n');
                    line = 0;
                }
                let n = (u32::from(chunk[0]) << 16)
                    | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
                    | u32::from(*chunk.get(2).unwrap_or(&0));
                for k in 0..4 {
                    if k <= chunk.len() {
                        out.push(BASE64[(n >> (18 - 6 * k) & 63) as usize] as char);
                    } else {
                        out.push('=');
                    }
                }
                line += 4;
            }
        }
        _ => return Err(bad(format!("unrecognized encoding: \"{format}\""))),
    }
    Ok(out)
}

pub fn decode(text: &str, format: &str) -> std::result::Result<Vec<u8>, SqlError> {
    match format.to_ascii_lowercase().as_str() {
        "hex" => {
            let digits: Vec<u8> = text.bytes().filter(|b| !b" \t\n\r".contains(b)).collect();
            let value = |d: u8| -> std::result::Result<u8, SqlError> {
                (d as char)
                    .to_digit(16)
                    .map(|v| v as u8)
                    .ok_or_else(|| bad(format!("invalid hexadecimal digit: \"{}\"", d as char)))
            };
            if !digits.len().is_multiple_of(2) {
                if let Some(d) = digits.iter().find(|d| !(**d as char).is_ascii_hexdigit()) {
                    return Err(bad(format!("invalid hexadecimal digit: \"{}\"", *d as char)));
                }
                return Err(bad("invalid hexadecimal data: odd number of digits"));
            }
            digits.chunks(2).map(|p| Ok(value(p[0])? << 4 | value(p[1])?)).collect()
        }
        "escape" => {
            let b = text.as_bytes();
            let (mut out, mut i) = (Vec::with_capacity(b.len()), 0);
            let invalid = || SqlError::new(code::INVALID_TEXT, "invalid input syntax for type bytea");
            while i < b.len() {
                if b[i] != b'\\' {
                    out.push(b[i]);
                    i += 1;
                } else if b.get(i + 1) == Some(&b'\\') {
                    out.push(b'\\');
                    i += 2;
                } else {
                    let octal = b
                        .get(i + 1..i + 4)
                        .filter(|d| (b'0'..=b'3').contains(&d[0]) && d[1..].iter().all(|x| (b'0'..=b'7').contains(x)));
                    let d = octal.ok_or_else(invalid)?;
                    out.push((d[0] - b'0') << 6 | (d[1] - b'0') << 3 | (d[2] - b'0'));
                    i += 4;
                }
            }
            Ok(out)
        }
        "base64" => {
            let (mut out, mut acc, mut bits, mut padding) = (Vec::new(), 0u32, 0u32, 0usize);
            for c in text.chars() {
                if c.is_ascii_whitespace() {
                    continue;
                }
                if c == '=' {
                    padding += 1;
                    continue;
                }
                let v = BASE64
                    .iter()
                    .position(|x| *x as char == c)
                    .filter(|_| padding == 0)
                    .ok_or_else(|| bad(format!("invalid symbol \"{c}\" found while decoding base64 sequence")))?;
                acc = acc << 6 | v as u32;
                bits += 6;
                if bits >= 8 {
                    bits -= 8;
                    out.push((acc >> bits) as u8);
                    acc &= (1 << bits) - 1;
                }
            }
            // Whole groups of four, the last perhaps padded.
            let symbols = text.chars().filter(|c| !c.is_ascii_whitespace()).count();
            if !symbols.is_multiple_of(4) || padding > 2 {
                return Err(bad("invalid base64 end sequence")
                    .with_hint("Input data is missing padding, is truncated, or is otherwise corrupted."));
            }
            Ok(out)
        }
        _ => Err(bad(format!("unrecognized encoding: \"{format}\""))),
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Codec {
    decode: bool,
    signature: Signature,
}

impl ScalarUDFImpl for Codec {
    fn name(&self) -> &str {
        if self.decode { "decode" } else { "encode" }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        if args.len() != 2 {
            return Err(DataFusionError::Plan(format!("{}() takes two arguments", self.name())));
        }
        Ok(vec![if self.decode { DataType::Utf8 } else { DataType::Binary }, DataType::Utf8])
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(if self.decode { DataType::Binary } else { DataType::Utf8 })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if scalar { 1 } else { args.number_rows };
        let values = args.args[0].to_array(n)?;
        let formats = args.args[1].to_array(n)?;
        let formats = formats.as_string::<i32>();
        let fail = |e: SqlError| DataFusionError::External(Box::new(e));
        let out: ArrayRef = if self.decode {
            let texts = values.as_string::<i32>();
            let mut out: Vec<Option<Vec<u8>>> = Vec::with_capacity(n);
            for i in 0..n {
                out.push(match (texts.is_null(i), formats.is_null(i)) {
                    (false, false) => Some(decode(texts.value(i), formats.value(i)).map_err(fail)?),
                    _ => None,
                });
            }
            Arc::new(BinaryArray::from_iter(out))
        } else {
            let bytes = values.as_binary::<i32>();
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                out.push(match (bytes.is_null(i), formats.is_null(i)) {
                    (false, false) => Some(encode(bytes.value(i), formats.value(i)).map_err(fail)?),
                    _ => None,
                });
            }
            Arc::new(StringArray::from(out))
        };
        crate::values::udf_values::columnar(out, scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_as_postgres() {
        let long = "abcdefghij".repeat(10);
        let b64 = encode(long.as_bytes(), "base64").unwrap();
        assert_eq!(b64.lines().next().map(str::len), Some(76));
        assert_eq!(decode(&b64, "base64").unwrap(), long.as_bytes());
        assert_eq!(encode(b"abc", "base64").unwrap(), "YWJj");
        assert_eq!(encode(b"ab", "base64").unwrap(), "YWI=");
        assert_eq!(decode("YWI=", "base64").unwrap(), b"ab");
        assert!(decode("abc", "base64").is_err());
        assert_eq!(encode(&[0, 1, b'a', 0xff, b'\\', b'\''], "escape").unwrap(), "\\000\u{1}a\\377\\\\'");
        assert_eq!(decode("a\\000b\\\\c", "escape").unwrap(), b"a\0b\\c");
        assert_eq!(encode(&[0x4a, 0x4b], "hex").unwrap(), "4a4b");
        assert_eq!(decode("4A4b", "hex").unwrap(), vec![0x4a, 0x4b]);
        assert_eq!(decode("4A4", "hex").unwrap_err().message, "invalid hexadecimal data: odd number of digits");
        assert_eq!(encode(b"x", "foo").unwrap_err().message, "unrecognized encoding: \"foo\"");
    }
}
