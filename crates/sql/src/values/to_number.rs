//! `to_number(text, template)`: PostgreSQL's reading of formatted numbers.
//!
//! PostgreSQL (`formatting.c`, NUM_processor reading) walks the template
//! (parsed by `to_char_numeric.rs`, errors included) over the text: each
//! `9`/`0` takes a digit if one is there, `.`/`D` the point, `,`/`G` a comma
//! if one is there; a sign is read before the first digit (`-`, `+`, `<`
//! with `PR`), right after the last one (`S`, or `MI`/`PL`/`SG` not yet
//! placed) or where `MI`, `PL` or `SG` stand; `L` skips one character and
//! `TH` two, unless they are digits, points, commas or signs; every other
//! template character skips one input character, whatever it is. The
//! characters read become a numeric through numeric_in, with the
//! template's digits (and `V`'s) as precision and the places read as scale:
//! more integer digits than that is "numeric field overflow" (22003), and
//! no digit at all is invalid input (22P02). `V`'s n places divide by 10^n
//! through PostgreSQL's `power(10, -n)`, which keeps 16 places (so past 16
//! the result is 0). `EEEE` and `RN` are refused as PostgreSQL 15 refuses
//! them (0A000), and an empty template gives NULL.
//!
//! The result is Tessera's unconstrained numeric (`numeric.rs`): exactly
//! PostgreSQL's value, printed without the trailing zeros PostgreSQL keeps
//! from its scale (`to_number('1.50', '9.99')` is `1.5` here, `1.50`
//! there). A type that depended on the arguments' values would change when
//! the optimizer folds a cast into a constant, so the type is fixed; a
//! value needing more than 38 places or integer digits is refused (0A000).

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Decimal256Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

use crate::error::{SqlError, code};
use crate::values::numeric::{InputError, MAX_DIGITS, UNCONSTRAINED, UNCONSTRAINED_SCALE};
use crate::values::to_char_numeric::{
    BRACKET, DECIMAL, Dec, EEEE, FILLMODE, Key, LSIGN, LSIGN_PRE, MINUS, MULTI, Node, NumDesc, PLUS, ROMAN, Template,
};

pub(crate) fn udf() -> ScalarUDF {
    ScalarUDF::new_from_impl(ToNumber { signature: Signature::string(2, Volatility::Immutable) })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToNumber {
    signature: Signature,
}

fn external(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

impl ScalarUDFImpl for ToNumber {
    fn name(&self) -> &str {
        "to_number"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(UNCONSTRAINED)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let rows = if scalar { 1 } else { args.number_rows };
        let as_text = |a: &ColumnarValue| datafusion::arrow::compute::cast(&a.to_array(rows)?, &DataType::Utf8);
        let (texts, templates) = (as_text(&args.args[0])?, as_text(&args.args[1])?);
        let (texts, templates) = (texts.as_string::<i32>(), templates.as_string::<i32>());
        let mut parsed: Option<(&str, Template)> = None;
        let mut out = Vec::with_capacity(rows);
        for i in 0..rows {
            if texts.is_null(i) || templates.is_null(i) || templates.value(i).is_empty() {
                out.push(None);
                continue;
            }
            let fmt = templates.value(i);
            if parsed.as_ref().is_none_or(|(f, _)| *f != fmt) {
                parsed = Some((fmt, Template::parse(fmt).map_err(external)?));
            }
            let template =
                parsed.as_ref().map(|(_, t)| t).ok_or_else(|| external(SqlError::internal("no template")))?;
            let text = read(texts.value(i), template).map_err(external)?;
            let value = crate::values::numeric::parse(&text, UNCONSTRAINED_SCALE).map_err(|e| {
                external(match e {
                    InputError::TooWide => SqlError::unsupported(format!(
                        "to_number's result {text} (Tessera's numeric holds 38 digits before the point and 38 after)"
                    )),
                    InputError::Syntax => SqlError::internal(format!("to_number made \"{text}\"")),
                })
            })?;
            out.push(Some(value));
        }
        let array = Decimal256Array::from(out).with_precision_and_scale(MAX_DIGITS, UNCONSTRAINED_SCALE)?;
        crate::values::udf_values::columnar(Arc::new(array), scalar)
    }
}

/// NUM_processor's state while reading.
struct Reader<'a> {
    num: NumDesc,
    input: &'a [u8],
    /// The next input byte (PostgreSQL's inout_p).
    at: usize,
    /// The sign (` `, `-` or `+`), then the digits and point read.
    number: Vec<u8>,
    read_dec: bool,
    read_pre: i32,
    read_post: i32,
}

impl Reader<'_> {
    /// The input's byte at `i`, NUL past its end.
    fn byte(&self, i: usize) -> u8 {
        self.input.get(i).copied().unwrap_or(0)
    }

    /// Whether the input is used up (OVERLOAD_TEST).
    fn done(&self) -> bool {
        self.at >= self.input.len()
    }

    /// Whether `n` bytes are left (AMOUNT_TEST).
    fn left(&self, n: usize) -> bool {
        self.at + n <= self.input.len()
    }

    /// The length of the UTF-8 character starting at the next byte, as
    /// pg_mblen counts it (a stray continuation byte is one).
    fn char_len(&self) -> usize {
        match self.byte(self.at) {
            b if b & 0x80 == 0 => 1,
            b if b & 0xe0 == 0xc0 => 2,
            b if b & 0xf0 == 0xe0 => 3,
            b if b & 0xf8 == 0xf0 => 4,
            _ => 1,
        }
    }

    /// NUM_eat_non_data_chars: up to `n` characters that are not digits,
    /// points, commas or signs.
    fn skip_non_data(&mut self, n: usize) {
        for _ in 0..n {
            if self.done() || b"0123456789.,+-".contains(&self.byte(self.at)) {
                break;
            }
            self.at += self.char_len();
        }
    }

    /// `MI`, `PL`, `SG`: one of `signs` is the sign, anything else is skipped.
    fn sign_or_skip(&mut self, signs: &[u8]) {
        let b = self.byte(self.at);
        if signs.contains(&b) {
            self.number[0] = b;
            self.at += 1;
        } else {
            self.skip_non_data(1);
        }
    }

    fn pattern(&mut self, key: Key) {
        let fill = self.num.is(FILLMODE);
        match key {
            Key::Nine | Key::Zero | Key::Dec | Key::D => {
                self.numpart(key);
                self.at += 1;
            }
            Key::Comma | Key::G if !fill && self.left(1) && self.byte(self.at) == b',' => self.at += 1,
            Key::L => self.skip_non_data(1),
            Key::Th | Key::ThLower if !self.num.is(DECIMAL) => self.skip_non_data(2),
            Key::Mi => self.sign_or_skip(b"-"),
            Key::Pl => self.sign_or_skip(b"+"),
            Key::Sg => self.sign_or_skip(b"-+"),
            _ => {}
        }
    }

    /// NUM_numpart_from_char: a digit or the point, and a sign before the
    /// first digit or right after the last one.
    fn numpart(&mut self, key: Key) {
        if self.done() {
            return;
        }
        if self.byte(self.at) == b' ' {
            self.at += 1;
        }
        if self.done() {
            return;
        }
        let c = self.byte(self.at);
        if self.number[0] == b' ' && matches!(key, Key::Nine | Key::Zero) && self.read_pre + self.read_post == 0 {
            let locale_pre = self.num.is(LSIGN) && self.num.lsign == LSIGN_PRE;
            if c == b'-' || (!locale_pre && self.num.is(BRACKET) && c == b'<') || (c == b'+') {
                self.number[0] = if c == b'+' { b'+' } else { b'-' };
                self.at += 1;
            }
        }
        if self.done() {
            return;
        }
        let c = self.byte(self.at);
        let mut read = false;
        if c.is_ascii_digit() {
            if self.read_dec && self.read_post == self.num.post {
                return;
            }
            self.number.push(c);
            if self.read_dec {
                self.read_post += 1;
            } else {
                self.read_pre += 1;
            }
            read = true;
        } else if self.num.is(DECIMAL) && !self.read_dec && c == b'.' {
            self.number.push(b'.');
            self.read_dec = true;
            read = true;
        }
        if self.done() || self.number[0] != b' ' || self.read_pre + self.read_post == 0 {
            return;
        }
        // A sign right after the last digit: "FM9.9S" reads "5.01-".
        if self.num.is(LSIGN) && read && self.at + 1 < self.input.len() && !self.byte(self.at + 1).is_ascii_digit() {
            let next = self.byte(self.at + 1);
            if next == b'-' || next == b'+' {
                self.at += 1;
                self.number[0] = next;
            }
        } else if !read && !self.num.is(LSIGN) && (self.num.is(PLUS) || self.num.is(MINUS)) && (c == b'-' || c == b'+')
        {
            self.number[0] = c;
        }
    }
}

/// `to_number(input, template)` as PostgreSQL prints its result (the
/// scale it has there included).
pub(crate) fn read(input: &str, template: &Template) -> Result<String, SqlError> {
    let num = template.desc;
    for (flag, name) in [(EEEE, "EEEE"), (ROMAN, "RN")] {
        if num.is(flag) {
            return Err(SqlError::new(code::FEATURE_NOT_SUPPORTED, format!("\"{name}\" not supported for input")));
        }
    }
    let mut r =
        Reader { num, input: input.as_bytes(), at: 0, number: vec![b' '], read_dec: false, read_pre: 0, read_post: 0 };
    for node in &template.nodes {
        if r.done() {
            break;
        }
        match node {
            Node::Key(key) => r.pattern(*key),
            Node::Char(_) => r.at += r.char_len(),
        }
    }
    if r.number.len() > 1 && r.number.last() == Some(&b'.') {
        r.number.pop();
    }
    numeric_in(&r.number, num, r.read_post)
}

/// numeric_in of what was read, at precision pre + multi + scale and the
/// scale read, then times `power(10, -multi)` for `V`.
fn numeric_in(number: &[u8], num: NumDesc, scale: i32) -> Result<String, SqlError> {
    let text = String::from_utf8_lossy(number);
    let body = &text[1..];
    if !body.bytes().any(|b| b.is_ascii_digit()) {
        return Err(SqlError::new(code::INVALID_TEXT, format!("invalid input syntax for type numeric: \"{text}\"")));
    }
    if scale > 1000 {
        // PostgreSQL's typmod holds scales to 1000 only.
        return Err(SqlError::unsupported(format!("to_number of {scale} places")));
    }
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let precision = num.pre + num.multi + scale;
    let max_digits = precision - scale;
    if int.trim_start_matches('0').len() as i64 > i64::from(max_digits) {
        let limit = if max_digits == 0 { "1".to_string() } else { format!("10^{max_digits}") };
        return Err(SqlError::new(code::OUT_OF_RANGE, "numeric field overflow").with_detail(format!(
            "A field with precision {precision}, scale {scale} must round to an absolute value less than {limit}."
        )));
    }
    let unscaled = format!("{}{int}{frac}", if text.starts_with('-') { "-" } else { "" });
    let mut value = Dec::new(&unscaled, i64::from(scale));
    let mut places = scale as usize;
    if num.is(MULTI) {
        // power(10, -multi) has 16 places: 10^-17 and below are 0.
        value = if num.multi > 16 { Dec::new("0", 0) } else { Dec::new(&unscaled, i64::from(scale + num.multi)) };
        places += 16;
    }
    Ok(value.rounded(places))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_number(input: &str, fmt: &str) -> Result<String, SqlError> {
        read(input, &Template::parse(fmt)?)
    }

    #[test]
    fn reads_as_postgresql_reads() {
        // PostgreSQL 15's answers (numeric.sql's to_number section and more).
        let cases = [
            ("-34,338,492", "99G999G999", "-34338492"),
            ("-34,338,492.654,878", "99G999G999D999G999", "-34338492.654878"),
            ("<564646.654564>", "999999.999999PR", "-564646.654564"),
            ("0.00001-", "9.999999S", "-0.00001"),
            ("5.01-", "FM9.999999S", "-5.01"),
            ("5.01-", "FM9.999999MI", "-5.01"),
            ("5 4 4 4 4 8 . 7 8", "9 9 9 9 9 9 . 9 9", "544448.78"),
            (".01", "FM9.99", "0.01"),
            (".0", "99999999.99999999", "0.0"),
            ("0", "99.99", "0"),
            (".-01", "S99.99", "-0.01"),
            (".01-", "99.99S", "-0.01"),
            (" . 0 1-", " 9 9 . 9 9 S", "-0.01"),
            ("34,50", "999,99", "3450"),
            ("123,000", "999G", "123"),
            ("123456", "999G999", "123456"),
            ("$1234.56", "L9,999.99", "1234.56"),
            ("$1234.56", "L99,999.99", "1234.56"),
            ("$1,234.56", "L99,999.99", "1234.56"),
            ("1234.56", "L99,999.99", "1234.56"),
            ("1,234.56", "L99,999.99", "1234.56"),
            ("42nd", "99th", "42"),
            ("1234", "99V99", "12.3400000000000000"),
            ("12", "99V", "12.0000000000000000"),
            ("12", "9V999999999999999999", "0.0000000000000000"),
            ("12.50", "99.99", "12.50"),
            ("12.5", "99.99", "12.5"),
            ("12,454.8-", "99G999D9S", "-12454.8"),
            ("+7", "S9", "7"),
            ("7-", "9MI", "-7"),
        ];
        for (input, fmt, want) in cases {
            assert_eq!(to_number(input, fmt).unwrap(), want, "to_number('{input}', '{fmt}')");
        }
    }

    #[test]
    fn errors_are_postgresqls() {
        let cases = [
            ("", "999", code::INVALID_TEXT),
            ("abc", "999", code::INVALID_TEXT),
            ("-", "9", code::INVALID_TEXT),
            ("x7", "9", code::INVALID_TEXT),
            ("123", "9.99", code::OUT_OF_RANGE),
            ("12", "9.9EEEE", code::FEATURE_NOT_SUPPORTED),
            ("XII", "RN", code::FEATURE_NOT_SUPPORTED),
            ("1", "S9PR", code::SYNTAX),
            ("1", "9.9.9", code::SYNTAX),
        ];
        for (input, fmt, want) in cases {
            assert_eq!(to_number(input, fmt).unwrap_err().code, want, "to_number('{input}', '{fmt}')");
        }
        let e = to_number("123", "9.99").unwrap_err();
        assert_eq!(
            e.detail.as_deref(),
            Some("A field with precision 1, scale 0 must round to an absolute value less than 10^1.")
        );
        assert_eq!(to_number(" ", "9").unwrap_err().message, "invalid input syntax for type numeric: \" \"");
    }
}
