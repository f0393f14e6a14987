//! PostgreSQL's `format()`, `quote_ident()`, `width_bucket()` and
//! `div()`, which DataFusion lacks.
//!
//! `format(fmt, args…)` follows PostgreSQL's `%[n$][-][width]{s|I|L}`
//! specifiers: each argument is printed as PostgreSQL prints it (its
//! output form: `t` for true, `2024-01-01` for a date), `%I` quotes it as
//! an identifier when it must be, `%L` as a literal (NULL unquoted), `%%`
//! is a percent sign.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int32Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Decimal256Type, Float64Type, i256};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

use crate::error::{SqlError, code};

/// Registers the functions of this module.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(Format { signature: Signature::variadic_any(Volatility::Stable) }));
    ctx.register_udf(ScalarUDF::new_from_impl(QuoteIdent {
        signature: Signature::exact(vec![DataType::Utf8], Volatility::Immutable),
    }));
    ctx.register_udf(ScalarUDF::new_from_impl(WidthBucket {
        signature: Signature::user_defined(Volatility::Immutable),
    }));
    ctx.register_udf(ScalarUDF::new_from_impl(Div { signature: Signature::user_defined(Volatility::Immutable) }));
}

fn external(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

fn rows(args: &ScalarFunctionArgs) -> (usize, bool) {
    let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
    (if scalar { 1 } else { args.number_rows }, scalar)
}

/// PostgreSQL's reserved key words: an identifier spelled as one is quoted.
const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "binary",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "group",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "intersect",
    "into",
    "is",
    "isnull",
    "join",
    "lateral",
    "leading",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "natural",
    "not",
    "notnull",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "outer",
    "overlaps",
    "placing",
    "primary",
    "references",
    "returning",
    "right",
    "select",
    "session_user",
    "similar",
    "some",
    "symmetric",
    "system_user",
    "table",
    "tablesample",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
];

/// PostgreSQL's `quote_ident`: quoted unless it is a plain lower-case
/// identifier that is not a reserved key word.
pub fn quote_ident(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$')
        && !RESERVED.contains(&s);
    if plain { s.to_string() } else { format!("\"{}\"", s.replace('"', "\"\"")) }
}

/// PostgreSQL's `quote_literal` (of a value that is not NULL).
pub fn quote_literal(s: &str) -> String {
    let q = s.replace('\'', "''");
    if q.contains('\\') { format!("E'{}'", q.replace('\\', "\\\\")) } else { format!("'{q}'") }
}

fn format_error(message: impl Into<String>) -> SqlError {
    SqlError::new(code::INVALID_PARAMETER, message)
}

/// One specifier after its `%`: (argument position, left-justify, width,
/// width from the argument at that position, conversion), and the rest.
struct Spec {
    position: Option<usize>,
    left: bool,
    width: Option<usize>,
    width_arg: Option<Option<usize>>,
    kind: char,
}

fn number(chars: &[char], i: &mut usize) -> Option<usize> {
    let start = *i;
    while *i < chars.len() && chars[*i].is_ascii_digit() {
        *i += 1;
    }
    (*i > start).then(|| chars[start..*i].iter().collect::<String>().parse().unwrap_or(usize::MAX))
}

fn parse_spec(chars: &[char], i: &mut usize) -> std::result::Result<Spec, SqlError> {
    let unterminated = || format_error("unterminated format() type specifier");
    let mut spec = Spec { position: None, left: false, width: None, width_arg: None, kind: 's' };
    let save = *i;
    if let Some(n) = number(chars, i) {
        if chars.get(*i) == Some(&'$') {
            *i += 1;
            if n == 0 {
                return Err(format_error("format specifies argument 0, but arguments are numbered from 1"));
            }
            spec.position = Some(n);
        } else {
            *i = save;
        }
    }
    if chars.get(*i) == Some(&'-') {
        spec.left = true;
        *i += 1;
    }
    if chars.get(*i) == Some(&'*') {
        *i += 1;
        let save = *i;
        let at = match number(chars, i) {
            Some(0) if chars.get(*i) == Some(&'$') => {
                return Err(format_error("format specifies argument 0, but arguments are numbered from 1"));
            }
            Some(n) if chars.get(*i) == Some(&'$') => {
                *i += 1;
                Some(n)
            }
            _ => {
                *i = save;
                None
            }
        };
        spec.width_arg = Some(at);
    } else {
        spec.width = number(chars, i);
    }
    spec.kind = *chars.get(*i).ok_or_else(unterminated)?;
    *i += 1;
    if !matches!(spec.kind, 's' | 'I' | 'L') {
        return Err(format_error(format!("unrecognized format() type specifier \"{}\"", spec.kind))
            .with_hint("For a single \"%\" use \"%%\"."));
    }
    Ok(spec)
}

/// `format(fmt, args)` for one row: `args` are the arguments' output forms.
pub fn format_row(fmt: &str, args: &[Option<String>]) -> std::result::Result<String, SqlError> {
    let chars: Vec<char> = fmt.chars().collect();
    let (mut out, mut i, mut next) = (String::new(), 0usize, 0usize);
    let arg = |n: usize| -> std::result::Result<&Option<String>, SqlError> {
        args.get(n).ok_or_else(|| format_error("too few arguments for format()"))
    };
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        i += 1;
        if chars.get(i) == Some(&'%') {
            out.push('%');
            i += 1;
            continue;
        }
        let spec = parse_spec(&chars, &mut i)?;
        let mut left = spec.left;
        let width = match spec.width_arg {
            None => spec.width,
            Some(at) => {
                let n = match at {
                    // As PostgreSQL's: the value is then the argument after
                    // the width's, unless the specifier names its own.
                    Some(k) => {
                        next = k;
                        k - 1
                    }
                    None => {
                        next += 1;
                        next - 1
                    }
                };
                match arg(n)? {
                    None => None,
                    Some(w) => {
                        let w: i64 = w.trim().parse().map_err(|_| format_error("width argument is not a number"))?;
                        left |= w < 0;
                        Some(w.unsigned_abs() as usize)
                    }
                }
            }
        };
        let n = match spec.position {
            Some(p) => p - 1,
            None => next,
        };
        next = n + 1;
        let value = arg(n)?;
        let text = match (spec.kind, value) {
            ('s', v) => v.clone().unwrap_or_default(),
            ('I', None) => {
                return Err(SqlError::new("22004", "null values cannot be formatted as an SQL identifier"));
            }
            ('I', Some(v)) => quote_ident(v),
            (_, None) => "NULL".to_string(),
            (_, Some(v)) => quote_literal(v),
        };
        let pad = width.unwrap_or(0).saturating_sub(text.chars().count());
        if left {
            out.push_str(&text);
            out.push_str(&" ".repeat(pad));
        } else {
            out.push_str(&" ".repeat(pad));
            out.push_str(&text);
        }
    }
    Ok(out)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Format {
    signature: Signature,
}

impl ScalarUDFImpl for Format {
    fn name(&self) -> &str {
        "format"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (n, scalar) = rows(&args);
        let arrays: Vec<ArrayRef> = args.args.iter().map(|a| a.to_array(n)).collect::<Result<_>>()?;
        let Some((fmt, rest)) = arrays.split_first() else {
            return Err(DataFusionError::Plan("format() needs a format string".into()));
        };
        let fmt = datafusion::arrow::compute::cast(fmt, &DataType::Utf8)?;
        let mut out = Vec::with_capacity(n);
        for r in 0..n {
            if fmt.is_null(r) {
                out.push(None);
                continue;
            }
            let values: Vec<Option<String>> = rest.iter().map(|a| crate::values::text::format_cell(a, r)).collect();
            out.push(Some(format_row(fmt.as_string::<i32>().value(r), &values).map_err(external)?));
        }
        crate::values::udf_values::columnar(Arc::new(StringArray::from(out)), scalar)
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct QuoteIdent {
    signature: Signature,
}

impl ScalarUDFImpl for QuoteIdent {
    fn name(&self) -> &str {
        "quote_ident"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (n, scalar) = rows(&args);
        let a = args.args[0].to_array(n)?;
        let out: StringArray = a.as_string::<i32>().iter().map(|v| v.map(quote_ident)).collect();
        crate::values::udf_values::columnar(Arc::new(out), scalar)
    }
}

/// PostgreSQL's `width_bucket(operand, low, high, count)`: in double
/// precision for floats, exactly for numerics (as PostgreSQL's two
/// versions compute).
#[derive(Debug, PartialEq, Eq, Hash)]
struct WidthBucket {
    signature: Signature,
}

/// The numeric `width_bucket`, exact: all three at the same scale.
pub fn width_bucket_exact(x: i256, low: i256, high: i256, count: i32) -> std::result::Result<i32, SqlError> {
    let bad = |m: &str| SqlError::new("2201G", m.to_string());
    if count <= 0 {
        return Err(bad("count must be greater than zero"));
    }
    if [x, low, high].iter().any(|v| {
        crate::values::numeric_special::Special::of_i256(*v) == Some(crate::values::numeric_special::Special::NaN)
    }) {
        return Err(bad("operand, lower bound, and upper bound cannot be NaN"));
    }
    if [low, high].iter().any(|v| crate::values::numeric_special::Special::of_i256(*v).is_some()) {
        return Err(bad("lower and upper bounds must be finite"));
    }
    if low == high {
        return Err(bad("lower bound cannot equal upper bound"));
    }
    let count256 = i256::from_i128(i128::from(count));
    let (below, above, offset, range) = if low < high {
        (x < low, x >= high, x.wrapping_sub(low), high.wrapping_sub(low))
    } else {
        (x > low, x <= high, low.wrapping_sub(x), low.wrapping_sub(high))
    };
    let bucket = if below {
        0
    } else if above {
        i64::from(count) + 1
    } else {
        let q = offset
            .checked_mul(count256)
            .map(|p| p.wrapping_div(range))
            .and_then(|q| q.to_i128())
            .ok_or_else(|| SqlError::new(code::OUT_OF_RANGE, "integer out of range"))?;
        (q as i64 + 1).min(i64::from(count))
    };
    i32::try_from(bucket).map_err(|_| SqlError::new(code::OUT_OF_RANGE, "integer out of range"))
}

/// The bucket of `x` among `count` equal buckets from `low` to `high`.
pub fn width_bucket(x: f64, low: f64, high: f64, count: i32) -> std::result::Result<i32, SqlError> {
    let bad = |m: &str| SqlError::new("2201G", m.to_string());
    if count <= 0 {
        return Err(bad("count must be greater than zero"));
    }
    if x.is_nan() || low.is_nan() || high.is_nan() {
        return Err(bad("operand, lower bound, and upper bound cannot be NaN"));
    }
    if !low.is_finite() || !high.is_finite() {
        return Err(bad("lower and upper bounds must be finite"));
    }
    if low == high {
        return Err(bad("lower bound cannot equal upper bound"));
    }
    let bucket = if low < high {
        if x < low {
            0
        } else if x >= high {
            i64::from(count) + 1
        } else {
            ((f64::from(count) * ((x - low) / (high - low))) as i64 + 1).min(i64::from(count))
        }
    } else if x > low {
        0
    } else if x <= high {
        i64::from(count) + 1
    } else {
        ((f64::from(count) * ((low - x) / (low - high))) as i64 + 1).min(i64::from(count))
    };
    i32::try_from(bucket).map_err(|_| SqlError::new(code::OUT_OF_RANGE, "integer out of range"))
}

impl ScalarUDFImpl for WidthBucket {
    fn name(&self) -> &str {
        "width_bucket"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        if args.len() != 4 {
            return Err(DataFusionError::Plan("width_bucket takes an operand, two bounds and a count".into()));
        }
        let numeric = args[..3].iter().any(|t| matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..)));
        let bound = if numeric { crate::values::numeric::UNCONSTRAINED } else { DataType::Float64 };
        Ok(vec![bound.clone(), bound.clone(), bound, DataType::Int32])
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (n, scalar) = rows(&args);
        let a: Vec<ArrayRef> = args.args.iter().map(|a| a.to_array(n)).collect::<Result<_>>()?;
        let count = a[3].as_primitive::<datafusion::arrow::datatypes::Int32Type>();
        if a[0].data_type() != &DataType::Float64 {
            let (x, low, high) = (
                a[0].as_primitive::<Decimal256Type>(),
                a[1].as_primitive::<Decimal256Type>(),
                a[2].as_primitive::<Decimal256Type>(),
            );
            let mut out = Vec::with_capacity(n);
            for r in 0..n {
                if x.is_null(r) || low.is_null(r) || high.is_null(r) || count.is_null(r) {
                    out.push(None);
                    continue;
                }
                let b = width_bucket_exact(x.value(r), low.value(r), high.value(r), count.value(r));
                out.push(Some(b.map_err(external)?));
            }
            return crate::values::udf_values::columnar(Arc::new(Int32Array::from(out)), scalar);
        }
        let (x, low, high) = (
            a[0].as_primitive::<Float64Type>(),
            a[1].as_primitive::<Float64Type>(),
            a[2].as_primitive::<Float64Type>(),
        );
        let mut out = Vec::with_capacity(n);
        for r in 0..n {
            if x.is_null(r) || low.is_null(r) || high.is_null(r) || count.is_null(r) {
                out.push(None);
                continue;
            }
            out.push(Some(width_bucket(x.value(r), low.value(r), high.value(r), count.value(r)).map_err(external)?));
        }
        crate::values::udf_values::columnar(Arc::new(Int32Array::from(out)), scalar)
    }
}

/// PostgreSQL's `div(a, b)`: the integer quotient, truncated toward zero,
/// as a numeric.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Div {
    signature: Signature,
}

impl ScalarUDFImpl for Div {
    fn name(&self) -> &str {
        "div"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        match args {
            [a, b] if [a, b].iter().all(|t| t.is_numeric() || t.is_null()) => {
                Ok(vec![crate::values::numeric::UNCONSTRAINED, crate::values::numeric::UNCONSTRAINED])
            }
            _ => Err(DataFusionError::Plan("div takes two numbers".into())),
        }
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(crate::values::numeric::UNCONSTRAINED)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (n, scalar) = rows(&args);
        let a = args.args[0].to_array(n)?;
        let b = args.args[1].to_array(n)?;
        let (a, b) = (a.as_primitive::<Decimal256Type>(), b.as_primitive::<Decimal256Type>());
        let scale = crate::values::numeric::UNCONSTRAINED_SCALE;
        let unit = crate::values::numeric::ten_to(scale as u32).expect("10^38 fits");
        let mut out = Vec::with_capacity(n);
        for r in 0..n {
            if a.is_null(r) || b.is_null(r) {
                out.push(None);
                continue;
            }
            let (x, y) = (a.value(r), b.value(r));
            if [x, y].iter().any(|v| crate::values::numeric_special::Special::of_i256(*v).is_some()) {
                return Err(external(SqlError::unsupported("div() of numeric NaN or infinity")));
            }
            if y == i256::ZERO {
                return Err(external(SqlError::new(code::DIVISION_BY_ZERO, "division by zero")));
            }
            // Both at scale 38: x / y is the true quotient; truncated, then
            // put back at scale 38.
            let q = x.wrapping_div(y);
            out.push(Some(
                q.checked_mul(unit)
                    .ok_or_else(|| external(SqlError::new(code::OUT_OF_RANGE, "numeric field overflow")))?,
            ));
        }
        let out = datafusion::arrow::array::Decimal256Array::from(out)
            .with_precision_and_scale(crate::values::numeric::MAX_DIGITS, scale)?;
        crate::values::udf_values::columnar(Arc::new(out), scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(fmt: &str, args: &[Option<&str>]) -> String {
        let args: Vec<Option<String>> = args.iter().map(|a| a.map(String::from)).collect();
        format_row(fmt, &args).unwrap_or_else(|e| format!("ERROR {}", e.message))
    }

    #[test]
    fn formats_as_postgres() {
        assert_eq!(f("Hello %s", &[Some("World")]), "Hello World");
        assert_eq!(f("%s, %s", &[Some("a"), None]), "a, ");
        assert_eq!(
            f("INSERT INTO %I VALUES(%L)", &[Some("Foo bar"), Some("O'Reilly")]),
            "INSERT INTO \"Foo bar\" VALUES('O''Reilly')"
        );
        assert_eq!(f("%L", &[None]), "NULL");
        assert_eq!(f("%2$s %1$s %s", &[Some("a"), Some("b")]), "b a b");
        assert_eq!(f("|%10s|%-10s|", &[Some("x"), Some("y")]), "|         x|y         |");
        assert_eq!(f("|%*s|", &[Some("-5"), Some("x")]), "|x    |");
        assert_eq!(f("100%%", &[]), "100%");
        assert_eq!(f("%*0$s", &[Some("x")]), "ERROR format specifies argument 0, but arguments are numbered from 1");
        assert_eq!(f("%s %s", &[Some("a")]), "ERROR too few arguments for format()");
        assert_eq!(f("%x", &[Some("a")]), "ERROR unrecognized format() type specifier \"x\"");
        assert_eq!(quote_ident("select"), "\"select\"");
        assert_eq!(quote_ident("abc_1"), "abc_1");
        assert_eq!(quote_ident("Abc"), "\"Abc\"");
    }

    #[test]
    fn buckets() {
        assert_eq!(width_bucket(5.35, 0.024, 10.06, 5).unwrap(), 3);
        assert_eq!(width_bucket(-1.0, 0.0, 10.0, 5).unwrap(), 0);
        assert_eq!(width_bucket(10.0, 0.0, 10.0, 5).unwrap(), 6);
        assert_eq!(width_bucket(7.0, 10.0, 0.0, 5).unwrap(), 2);
        let v = |x: i128| i256::from_i128(x);
        assert_eq!(width_bucket_exact(v(535), v(24), v(1006), 5).unwrap(), 3);
        assert_eq!(width_bucket_exact(v(330), v(0), v(990), 3).unwrap(), 2);
    }
}
