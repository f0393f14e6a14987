//! Small PostgreSQL functions DataFusion lacks, each a few lines over the
//! value representations of `values`:
//! - `min_scale(numeric)`: the places a numeric needs (its scale without
//!   trailing zeros); NULL for NaN and the infinities.
//! - `trim_scale(numeric)`: the value without trailing zeros, an
//!   unconstrained numeric (which prints so, see `numeric.rs`).
//! - `float4send(real)`, `float8send(double precision)`: the value's
//!   binary wire form (IEEE 754, big-endian) as a bytea.
//! - `unistr(text)`: the text with its Unicode escapes decoded.
//! - `pg_sleep(seconds)`: waits, and answers `void` (empty text). It holds
//!   a query thread while it waits, as a long computation would.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryArray, Decimal256Array, Int32Array};
use datafusion::arrow::datatypes::{DataType, Decimal256Type, Float32Type, Float64Type};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

use crate::values::numeric::{MAX_DIGITS, UNCONSTRAINED, UNCONSTRAINED_SCALE, trimmed_scale};
use crate::values::numeric_special::Special;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    MinScale,
    TrimScale,
    Float4Send,
    Float8Send,
    PgSleep,
    Unistr,
}

/// Registers the functions.
pub fn register(ctx: &SessionContext) {
    for kind in [Kind::MinScale, Kind::TrimScale, Kind::Float4Send, Kind::Float8Send, Kind::Unistr] {
        ctx.register_udf(ScalarUDF::new_from_impl(SmallFn {
            kind,
            signature: Signature::user_defined(Volatility::Immutable),
        }));
    }
    ctx.register_udf(ScalarUDF::new_from_impl(SmallFn {
        kind: Kind::PgSleep,
        signature: Signature::user_defined(Volatility::Volatile),
    }));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SmallFn {
    kind: Kind,
    signature: Signature,
}

impl ScalarUDFImpl for SmallFn {
    fn name(&self) -> &str {
        match self.kind {
            Kind::MinScale => "min_scale",
            Kind::TrimScale => "trim_scale",
            Kind::Float4Send => "float4send",
            Kind::Float8Send => "float8send",
            Kind::PgSleep => "pg_sleep",
            Kind::Unistr => "unistr",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        let [t] = args else {
            return Err(DataFusionError::Plan(format!("{} takes one argument", self.name())));
        };
        let numeric = t.is_numeric() || t.is_null() || t == &DataType::Utf8;
        // A literal such as 1e100 is a decimal of negative scale: more than
        // the 76 digits Tessera's numeric holds once it has 38 places.
        if let DataType::Decimal128(_, s) | DataType::Decimal256(_, s) = t
            && *s < 0
            && matches!(self.kind, Kind::MinScale | Kind::TrimScale)
        {
            if self.kind == Kind::MinScale {
                return Ok(vec![t.clone()]);
            }
            return Err(DataFusionError::External(Box::new(crate::error::SqlError::unsupported(
                "trim_scale of a numeric beyond 38 digits before the point",
            ))));
        }
        match self.kind {
            Kind::MinScale | Kind::TrimScale if numeric => Ok(vec![UNCONSTRAINED]),
            Kind::Float4Send if numeric => Ok(vec![DataType::Float32]),
            Kind::Float8Send | Kind::PgSleep if numeric => Ok(vec![DataType::Float64]),
            Kind::Unistr => Ok(vec![DataType::Utf8]),
            _ => Err(DataFusionError::Plan(format!("function {}({t}) does not exist", self.name()))),
        }
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::MinScale => DataType::Int32,
            Kind::TrimScale => UNCONSTRAINED,
            Kind::Float4Send | Kind::Float8Send => DataType::Binary,
            // `void`, whose text is empty.
            Kind::PgSleep | Kind::Unistr => DataType::Utf8,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let n = if scalar { 1 } else { args.number_rows };
        let input = args.args[0].to_array(n)?;
        let out: ArrayRef = match self.kind {
            // A decimal of negative scale is a whole number.
            Kind::MinScale
                if matches!(input.data_type(), DataType::Decimal128(..) | DataType::Decimal256(..))
                    && !crate::values::numeric::is_unconstrained(input.data_type()) =>
            {
                Arc::new((0..n).map(|i| (!input.is_null(i)).then_some(0)).collect::<Int32Array>())
            }
            Kind::MinScale => {
                let v = input.as_primitive::<Decimal256Type>();
                Arc::new(
                    v.iter()
                        .map(|x| {
                            x.filter(|x| Special::of_i256(*x).is_none())
                                .map(|x| i32::from(trimmed_scale(x, UNCONSTRAINED_SCALE)))
                        })
                        .collect::<Int32Array>(),
                )
            }
            Kind::TrimScale => {
                let v = input.as_primitive::<Decimal256Type>();
                Arc::new(
                    v.iter().collect::<Decimal256Array>().with_precision_and_scale(MAX_DIGITS, UNCONSTRAINED_SCALE)?,
                )
            }
            Kind::Float4Send => {
                let v = input.as_primitive::<Float32Type>();
                Arc::new(v.iter().map(|x| x.map(|x| x.to_be_bytes())).collect::<BinaryArray>())
            }
            Kind::Float8Send => {
                let v = input.as_primitive::<Float64Type>();
                Arc::new(v.iter().map(|x| x.map(|x| x.to_be_bytes())).collect::<BinaryArray>())
            }
            Kind::PgSleep => {
                let v = input.as_primitive::<Float64Type>();
                for seconds in v.iter().flatten().filter(|s| *s > 0.0) {
                    // At most a day, as a guard against a typo's years.
                    std::thread::sleep(std::time::Duration::from_secs_f64(seconds.min(86_400.0)));
                }
                Arc::new(datafusion::arrow::array::StringArray::from(vec![Some(""); n]))
            }
            Kind::Unistr => {
                let texts = input.as_string::<i32>();
                let out = texts
                    .iter()
                    .map(|t| t.map(unistr).transpose())
                    .collect::<std::result::Result<datafusion::arrow::array::StringArray, _>>()
                    .map_err(|e| DataFusionError::External(Box::new(e)))?;
                Arc::new(out)
            }
        };
        debug_assert_eq!(out.len(), n);
        crate::values::udf_values::columnar(out, scalar)
    }
}

/// PostgreSQL's `unistr`: `\\` is a backslash; `\XXXX`, `\+XXXXXX`,
/// `\uXXXX` and `\UXXXXXXXX` are the code point in hex, a UTF-16
/// surrogate pair of two escapes one character.
fn unistr(text: &str) -> std::result::Result<String, crate::error::SqlError> {
    use crate::error::SqlError;
    let bad_escape = || {
        SqlError::new(crate::error::code::SYNTAX, "invalid Unicode escape")
            .with_hint("Unicode escapes must be \\XXXX, \\+XXXXXX, \\uXXXX, or \\UXXXXXXXX.".to_string())
    };
    let bad_pair = || SqlError::new(crate::error::code::SYNTAX, "invalid Unicode surrogate pair");
    let chars: Vec<char> = text.chars().collect();
    let (mut out, mut i, mut high): (String, usize, Option<u32>) = (String::new(), 0, None);
    while i < chars.len() {
        if chars[i] != '\\' {
            if high.is_some() {
                return Err(bad_pair());
            }
            out.push(chars[i]);
            i += 1;
            continue;
        }
        if chars.get(i + 1) == Some(&'\\') {
            if high.is_some() {
                return Err(bad_pair());
            }
            out.push('\\');
            i += 2;
            continue;
        }
        let (skip, width) = match chars.get(i + 1) {
            Some('+') => (2, 6),
            Some('u') => (2, 4),
            Some('U') => (2, 8),
            _ => (1, 4),
        };
        let digits: String = chars.iter().skip(i + skip).take(width).collect();
        if digits.len() != width || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(bad_escape());
        }
        let code = u32::from_str_radix(&digits, 16).map_err(|_| bad_escape())?;
        i += skip + width;
        match (high.take(), code) {
            (Some(h), 0xDC00..=0xDFFF) => {
                let c = 0x10000 + ((h - 0xD800) << 10) + (code - 0xDC00);
                out.push(char::from_u32(c).ok_or_else(bad_pair)?);
            }
            (Some(_), _) | (None, 0xDC00..=0xDFFF) => return Err(bad_pair()),
            (None, 0xD800..=0xDBFF) => high = Some(code),
            (None, c) => out.push(char::from_u32(c).ok_or_else(|| {
                SqlError::new(
                    crate::error::code::INVALID_PARAMETER_VALUE,
                    format!("invalid Unicode code point: {c:04X}"),
                )
            })?),
        }
    }
    if high.is_some() {
        return Err(bad_pair());
    }
    Ok(out)
}
