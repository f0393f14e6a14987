//! `to_char(date or timestamp, template)` with PostgreSQL's templates.
//!
//! DataFusion's `to_char` takes a strftime format (`%Y-%m-%d`): given
//! PostgreSQL's `YYYY-MM-DD` it prints the template itself, a silent wrong
//! answer. This `to_char` translates PostgreSQL's template patterns into
//! the strftime ones and hands the work to DataFusion's; a pattern it does
//! not translate yet (`Q`, `WW`, `J`, `TH`, `Month` padded to nine
//! characters, …) is refused (0A000) rather than printed wrongly; numbers
//! go to `to_char_numeric`. Text between double quotes, and characters
//! that are not letters, are copied.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

use crate::error::{SqlError, code};

pub fn register(ctx: &datafusion::execution::context::SessionContext) {
    let inner = datafusion::functions::datetime::to_char();
    ctx.register_udf(ScalarUDF::new_from_impl(ToChar { inner, signature: Signature::any(2, Volatility::Stable) }));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToChar {
    inner: Arc<ScalarUDF>,
    signature: Signature,
}

fn refuse(message: String) -> DataFusionError {
    DataFusionError::External(Box::new(SqlError::new(code::FEATURE_NOT_SUPPORTED, message)))
}

impl ScalarUDFImpl for ToChar {
    fn name(&self) -> &str {
        "to_char"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let zoned = match args.args[0].data_type() {
            DataType::Date32 | DataType::Date64 => false,
            DataType::Timestamp(_, tz) => tz.is_some(),
            DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Decimal128(..)
            | DataType::Decimal256(..) => return crate::values::to_char_numeric::to_char(&args),
            other => return Err(refuse(format!("to_char of a value of type {other} is not supported yet"))),
        };
        let template = match &args.args[1] {
            ColumnarValue::Scalar(ScalarValue::Utf8(Some(t)) | ScalarValue::Utf8View(Some(t))) => t.clone(),
            ColumnarValue::Scalar(s) if s.is_null() => {
                return Ok(ColumnarValue::Scalar(ScalarValue::Utf8(None)));
            }
            _ => return Err(refuse("to_char with a template that is not a constant is not supported yet".into())),
        };
        let format = strftime_of(&template, zoned).map_err(|e| DataFusionError::External(Box::new(e)))?;
        args.args[1] = ColumnarValue::Scalar(ScalarValue::Utf8(Some(format)));
        if let Some(f) = args.arg_fields.get_mut(1) {
            *f = Arc::new(f.as_ref().clone().with_data_type(DataType::Utf8));
        }
        self.inner.invoke_with_args(args)
    }
}

/// PostgreSQL's template patterns and their strftime forms, longest first
/// (`FM` before a pattern drops its padding).
const PATTERNS: &[(&str, &str, &str)] = &[
    // (pattern, strftime, strftime in fill mode)
    ("HH24", "%H", "%-H"),
    ("HH12", "%I", "%-I"),
    ("YYYY", "%Y", "%Y"),
    ("DDD", "%j", "%-j"),
    ("HH", "%I", "%-I"),
    ("MI", "%M", "%-M"),
    ("SS", "%S", "%-S"),
    ("MS", "%3f", "%3f"),
    ("US", "%6f", "%6f"),
    ("AM", "%p", "%p"),
    ("PM", "%p", "%p"),
    ("am", "%P", "%P"),
    ("pm", "%P", "%P"),
    ("YY", "%y", "%y"),
    ("MM", "%m", "%-m"),
    ("DD", "%d", "%-d"),
    ("Mon", "%b", "%b"),
    ("Dy", "%a", "%a"),
];

/// `template` with its zone patterns written out as quoted text: `TZ`
/// (`tz`) the abbreviation (in lower case), `TZH` the signed hours of the
/// offset `east` (seconds), `TZM` its minutes, `OF` the offset as
/// PostgreSQL prints it (`+05:30`, `-04`).
pub fn with_zone_fields(template: &str, abbreviation: &str, east: i32) -> String {
    let sign = if east < 0 { '-' } else { '+' };
    let (hours, minutes) = (east.unsigned_abs() / 3600, east.unsigned_abs() % 3600 / 60);
    let offset = if minutes == 0 { format!("{sign}{hours:02}") } else { format!("{sign}{hours:02}:{minutes:02}") };
    let mut out = String::new();
    let mut rest = template;
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            let end = rest[1..].find('"').map_or(rest.len(), |i| i + 2);
            out.push_str(&rest[..end.min(rest.len())]);
            rest = &rest[end.min(rest.len())..];
            continue;
        }
        let field = [
            ("TZH", format!("{sign}{hours:02}")),
            ("tzh", format!("{sign}{hours:02}")),
            ("TZM", format!("{minutes:02}")),
            ("tzm", format!("{minutes:02}")),
            ("TZ", abbreviation.to_uppercase()),
            ("tz", abbreviation.to_lowercase()),
            ("OF", offset.clone()),
            ("of", offset.clone()),
        ]
        .into_iter()
        .find(|(p, _)| rest.starts_with(p));
        match field {
            Some((p, text)) => {
                out.push('"');
                out.push_str(&text);
                out.push('"');
                rest = &rest[p.len()..];
            }
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

/// The strftime format of PostgreSQL template `template` (for a value with
/// a time zone when `zoned`, shown in UTC), or a refusal naming the pattern
/// not translated.
pub fn strftime_of(template: &str, zoned: bool) -> std::result::Result<String, SqlError> {
    // A timestamp without a time zone has no abbreviation, and offset 0.
    let template = &with_zone_fields(template, if zoned { "UTC" } else { "" }, 0);
    let mut out = String::new();
    let mut rest = template.as_str();
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            let end = rest[1..].find('"').map_or(rest.len(), |i| i + 2);
            for ch in rest[1..end.min(rest.len())].trim_end_matches('"').chars() {
                push_literal(&mut out, ch);
            }
            rest = &rest[end.min(rest.len())..];
            continue;
        }
        let fill = rest.starts_with("FM");
        let at = if fill { &rest[2..] } else { rest };
        if fill && at.starts_with("Month") {
            out.push_str("%B");
            rest = &at[5..];
            continue;
        }
        if fill && at.starts_with("Day") {
            out.push_str("%A");
            rest = &at[3..];
            continue;
        }
        if at.starts_with("TZ") || at.starts_with("OF") {
            out.push_str(match (at.starts_with("TZ"), zoned) {
                (true, true) => "UTC",
                (false, true) => "+00",
                _ => "",
            });
            rest = &at[2..];
            continue;
        }
        // Seconds past midnight, not two `SS` (which would print the
        // seconds twice).
        if at.starts_with("SSSS") {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                "the to_char template pattern at \"SSSS\" is not supported yet",
            ));
        }
        if let Some((p, plain, filled)) = PATTERNS.iter().find(|(p, _, _)| at.starts_with(p)) {
            out.push_str(if fill { filled } else { plain });
            rest = &at[p.len()..];
            continue;
        }
        if c.is_ascii_alphabetic() {
            let word: String = rest.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                format!("the to_char template pattern at \"{word}\" is not supported yet"),
            ));
        }
        push_literal(&mut out, c);
        rest = &rest[c.len_utf8()..];
    }
    Ok(out)
}

fn push_literal(out: &mut String, c: char) {
    if c == '%' {
        out.push_str("%%");
    } else {
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_templates_become_strftime_formats() {
        assert_eq!(strftime_of("YYYY-MM-DD", false).unwrap(), "%Y-%m-%d");
        assert_eq!(strftime_of("YYYY-MM-DD HH24:MI:SS.US", false).unwrap(), "%Y-%m-%d %H:%M:%S.%6f");
        assert_eq!(strftime_of("FMDD FMMonth YYYY", false).unwrap(), "%-d %B %Y");
        assert_eq!(strftime_of("Dy, DD Mon YYYY HH12:MI AM TZ", true).unwrap(), "%a, %d %b %Y %I:%M %p UTC");
        assert_eq!(strftime_of("YYYY\"T\"HH24 100%", false).unwrap(), "%YT%H 100%%");
        for refused in ["Q", "YYYY-WW", "Month", "DDth", "J", "HH SSSS", "SSSSS"] {
            assert_eq!(strftime_of(refused, false).unwrap_err().code, code::FEATURE_NOT_SUPPORTED, "{refused}");
        }
    }
}
