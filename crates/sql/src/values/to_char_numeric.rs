//! `to_char(number, template)`: PostgreSQL's number formatting.
//!
//! PostgreSQL (`formatting.c`) parses a template into pattern nodes — `9`,
//! `0`, `.`/`D`, `,`/`G`, `S`, `MI`, `PL`, `SG`, `PR`, `FM`, `EEEE`, `V`,
//! `TH`/`th`, `RN`/`rn`, `L`; `B`, `C` and `SP` are accepted and print
//! nothing — and a summary of them (digits before and after the point,
//! where the sign goes, flags), refusing contradictory templates (42601).
//! Each `to_char` variant first turns the value into a string of digits
//! its own way: integers exactly (`int2` as `int4`), `numeric` rounded half
//! away from zero to the template's places, floats through C's `printf`
//! limited to 15 (`float8`) or 6 (`float4`) significant digits, scientific
//! notation for `EEEE`, Roman numerals for `RN`, `#`s when the value has
//! more digits before the point than the template. Then NUM_processor lays
//! those digits into the template: blanks or zeros before the first digit,
//! the sign where the patterns put it, separators once a digit is out.
//!
//! This module ports those steps rather than the documentation, so
//! PostgreSQL's quirks are kept: a digit string shorter than the template
//! ends the output (PostgreSQL writes its terminating NUL there), `EEEE`
//! prints the number alone, `TH` of something not ending in a digit is an
//! error. Numerics come from Arrow's decimals as their exact integer and
//! scale and are rounded as digit strings ([`Dec`]), never through `f64`;
//! floats are printed with Rust's exact formatting, which rounds as glibc's
//! `printf` does (the binary value's exact expansion, ties to even), with
//! PostgreSQL's own `printf` spellings of NaN and the infinities. The locale
//! is C, Tessera's only one: `D` is `.`, `G` is `,`, `L` a blank, `S` `+`/`-`.
//! `to_number` (`to_number.rs`) reads text with the same templates. What
//! PostgreSQL leaves to C's undefined behaviour — `V` pushing an `int4`
//! past 32 bits — is refused (0A000).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::{
    DataType, Decimal128Type, Decimal256Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs};

use crate::error::{SqlError, code};
use crate::values::numeric_special::Special;

/// Registers `to_number` (`to_char` of numbers is reached through
/// `to_char.rs`, which owns the name).
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(crate::values::to_number::udf());
}

/// A template's patterns (`formatting.c`'s NUM_poz; `B`, `C` and `SP`
/// are recognised and do nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[rustfmt::skip]
pub(crate) enum Key {
    Comma, Dec, Zero, Nine, B, C, D, Eeee, Fm, G, L, Mi, Pl, Pr, Rn, RnLower, Sg, Sp, S, Th, ThLower, V,
}

/// PostgreSQL's keyword table in its order: the first whose name starts
/// the rest of the template wins (`SG` before `S`, `EEEE` or nothing).
#[rustfmt::skip]
const KEYWORDS: &[(&str, Key)] = &[
    (",", Key::Comma), (".", Key::Dec), ("0", Key::Zero), ("9", Key::Nine), ("B", Key::B), ("C", Key::C),
    ("D", Key::D), ("EEEE", Key::Eeee), ("FM", Key::Fm), ("G", Key::G), ("L", Key::L), ("MI", Key::Mi),
    ("PL", Key::Pl), ("PR", Key::Pr), ("RN", Key::Rn), ("SG", Key::Sg), ("SP", Key::Sp), ("S", Key::S),
    ("TH", Key::Th), ("V", Key::V), ("b", Key::B), ("c", Key::C), ("d", Key::D), ("eeee", Key::Eeee),
    ("fm", Key::Fm), ("g", Key::G), ("l", Key::L), ("mi", Key::Mi), ("pl", Key::Pl), ("pr", Key::Pr),
    ("rn", Key::RnLower), ("sg", Key::Sg), ("sp", Key::Sp), ("s", Key::S), ("th", Key::ThLower), ("v", Key::V),
];

// NUMDesc's flags.
pub(crate) const DECIMAL: u32 = 1 << 1;
const LDECIMAL: u32 = 1 << 2;
const ZERO: u32 = 1 << 3;
const BLANK: u32 = 1 << 4;
pub(crate) const FILLMODE: u32 = 1 << 5;
pub(crate) const LSIGN: u32 = 1 << 6;
pub(crate) const BRACKET: u32 = 1 << 7;
pub(crate) const MINUS: u32 = 1 << 8;
pub(crate) const PLUS: u32 = 1 << 9;
pub(crate) const ROMAN: u32 = 1 << 10;
pub(crate) const MULTI: u32 = 1 << 11;
const PLUS_POST: u32 = 1 << 12;
const MINUS_POST: u32 = 1 << 13;
pub(crate) const EEEE: u32 = 1 << 14;

/// Where `S` puts the sign: before or after the digits.
pub(crate) const LSIGN_PRE: i32 = -1;
pub(crate) const LSIGN_POST: i32 = 1;

/// A template's summary (PostgreSQL's NUMDesc).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NumDesc {
    /// Digit patterns before the point (after `V`: none, see `multi`).
    pub(crate) pre: i32,
    /// Digit patterns after the point.
    pub(crate) post: i32,
    pub(crate) lsign: i32,
    pub(crate) flag: u32,
    pub(crate) pre_lsign_num: i32,
    /// `9`s after `V`: the value is shifted by that many places.
    pub(crate) multi: i32,
    zero_start: i32,
    zero_end: i32,
}

impl NumDesc {
    pub(crate) fn is(&self, flag: u32) -> bool {
        self.flag & flag != 0
    }
}

/// A template's element: a pattern, or a character copied (to_char) or
/// skipped over (to_number).
#[derive(Debug, Clone)]
pub(crate) enum Node {
    Key(Key),
    Char(String),
}

/// A parsed template.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    pub(crate) nodes: Vec<Node>,
    pub(crate) desc: NumDesc,
}

fn syntax(message: &str) -> SqlError {
    SqlError::new(code::SYNTAX, message)
}

impl Template {
    /// PostgreSQL's parse_format for number templates: patterns, text in
    /// double quotes (a backslash quotes the next character), `\"` outside
    /// quotes for a quote, every other character for itself.
    pub(crate) fn parse(fmt: &str) -> Result<Template, SqlError> {
        let mut nodes = Vec::new();
        let mut desc = NumDesc::default();
        let bytes = fmt.as_bytes();
        let char_at = |i: usize| fmt[i..].chars().next().map_or(1, char::len_utf8);
        let mut i = 0;
        while i < bytes.len() {
            if let Some((name, key)) = KEYWORDS.iter().find(|(name, _)| fmt[i..].starts_with(name)) {
                prepare(&mut desc, *key)?;
                nodes.push(Node::Key(*key));
                i += name.len();
            } else if bytes[i] == b'"' {
                i += 1;
                while i < bytes.len() {
                    if bytes[i] == b'"' {
                        i += 1;
                        break;
                    }
                    if bytes[i] == b'\\' && i + 1 < bytes.len() {
                        i += 1;
                    }
                    let len = char_at(i);
                    nodes.push(Node::Char(fmt[i..i + len].to_string()));
                    i += len;
                }
            } else {
                if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'"') {
                    i += 1;
                }
                let len = char_at(i);
                nodes.push(Node::Char(fmt[i..i + len].to_string()));
                i += len;
            }
        }
        Ok(Template { nodes, desc })
    }
}

/// PostgreSQL's NUMDesc_prepare: one pattern added to the summary, with
/// its errors for contradictory templates.
fn prepare(num: &mut NumDesc, key: Key) -> Result<(), SqlError> {
    if num.is(EEEE) && key != Key::Eeee {
        return Err(syntax("\"EEEE\" must be the last pattern used"));
    }
    match key {
        Key::Nine | Key::Zero => {
            if num.is(BRACKET) {
                let digit = if key == Key::Nine { "9" } else { "0" };
                return Err(syntax(&format!("\"{digit}\" must be ahead of \"PR\"")));
            }
            if key == Key::Nine && num.is(MULTI) {
                num.multi += 1;
                return Ok(());
            }
            if key == Key::Zero && !num.is(ZERO) && !num.is(DECIMAL) {
                num.flag |= ZERO;
                num.zero_start = num.pre + 1;
            }
            if num.is(DECIMAL) {
                num.post += 1;
            } else {
                num.pre += 1;
            }
            if key == Key::Zero {
                num.zero_end = num.pre + num.post;
            }
        }
        Key::B => {
            if num.pre == 0 && num.post == 0 && !num.is(ZERO) {
                num.flag |= BLANK;
            }
        }
        Key::D | Key::Dec => {
            if key == Key::D {
                num.flag |= LDECIMAL;
            }
            if num.is(DECIMAL) {
                return Err(syntax("multiple decimal points"));
            }
            if num.is(MULTI) {
                return Err(syntax("cannot use \"V\" and decimal point together"));
            }
            num.flag |= DECIMAL;
        }
        Key::Fm => num.flag |= FILLMODE,
        Key::S => {
            if num.is(LSIGN) {
                return Err(syntax("cannot use \"S\" twice"));
            }
            if num.is(PLUS) || num.is(MINUS) || num.is(BRACKET) {
                return Err(syntax("cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together"));
            }
            if !num.is(DECIMAL) {
                num.lsign = LSIGN_PRE;
                num.pre_lsign_num = num.pre;
                num.flag |= LSIGN;
            } else if num.lsign == 0 {
                num.lsign = LSIGN_POST;
                num.flag |= LSIGN;
            }
        }
        Key::Mi | Key::Pl | Key::Sg => {
            if num.is(LSIGN) {
                let name = match key {
                    Key::Mi => "MI",
                    Key::Pl => "PL",
                    _ => "SG",
                };
                return Err(syntax(&format!("cannot use \"S\" and \"{name}\" together")));
            }
            if key != Key::Pl {
                num.flag |= MINUS;
            }
            if key != Key::Mi {
                num.flag |= PLUS;
            }
            if key == Key::Mi && num.is(DECIMAL) {
                num.flag |= MINUS_POST;
            }
            if key == Key::Pl && num.is(DECIMAL) {
                num.flag |= PLUS_POST;
            }
        }
        Key::Pr => {
            if num.is(LSIGN) || num.is(PLUS) || num.is(MINUS) {
                return Err(syntax("cannot use \"PR\" and \"S\"/\"PL\"/\"MI\"/\"SG\" together"));
            }
            num.flag |= BRACKET;
        }
        Key::Rn | Key::RnLower => num.flag |= ROMAN,
        Key::V => {
            if num.is(DECIMAL) {
                return Err(syntax("cannot use \"V\" and decimal point together"));
            }
            num.flag |= MULTI;
        }
        Key::Eeee => {
            if num.is(EEEE) {
                return Err(syntax("cannot use \"EEEE\" twice"));
            }
            if num.flag & (BLANK | FILLMODE | LSIGN | BRACKET | MINUS | PLUS | ROMAN | MULTI) != 0 {
                return Err(syntax("\"EEEE\" is incompatible with other formats")
                    .with_detail("\"EEEE\" may only be used together with digit and decimal point patterns."));
            }
            num.flag |= EEEE;
        }
        Key::Comma | Key::C | Key::G | Key::L | Key::Sp | Key::Th | Key::ThLower => {}
    }
    Ok(())
}

/// A value as PostgreSQL's `to_char` variants receive it.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    Int4(i32),
    Int8(i64),
    Float4(f32),
    Float8(f64),
    Numeric(Result<Dec, Special>),
}

/// An exact decimal: `digits` (no leading zeros; empty for zero) times
/// 10^-`scale`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dec {
    neg: bool,
    digits: Vec<u8>,
    scale: i64,
}

impl Dec {
    /// The decimal whose unscaled integer prints as `integer`.
    pub(crate) fn new(integer: &str, scale: i64) -> Dec {
        let neg = integer.starts_with('-');
        let digits = integer.trim_start_matches(['-', '+']).trim_start_matches('0').as_bytes().to_vec();
        Dec { neg: neg && !digits.is_empty(), digits, scale }
    }

    /// numeric_out of numeric_round(self, places): half away from zero,
    /// exactly `places` digits after the point, no sign on zero.
    pub(crate) fn rounded(&self, places: usize) -> String {
        let mut r = self.digits.clone();
        let shift = places as i64 - self.scale;
        if shift >= 0 {
            r.resize(r.len() + shift as usize, b'0');
        } else {
            let cut = shift.unsigned_abs() as usize;
            let up = cut <= r.len() && r[r.len() - cut] >= b'5';
            r.truncate(r.len().saturating_sub(cut));
            if up {
                increment(&mut r);
            }
        }
        let zero = r.iter().all(|&b| b == b'0');
        if r.len() <= places {
            let mut padded = vec![b'0'; places + 1 - r.len()];
            padded.extend_from_slice(&r);
            r = padded;
        }
        let (int, frac) = r.split_at(r.len() - places);
        let mut s = String::with_capacity(r.len() + 2);
        if self.neg && !zero {
            s.push('-');
        }
        s.push_str(std::str::from_utf8(int).unwrap_or("0"));
        if places > 0 {
            s.push('.');
            s.push_str(std::str::from_utf8(frac).unwrap_or(""));
        }
        s
    }

    /// numeric_out_sci: one digit before the point, `places` after (so
    /// 9.99 at one place is `10.0e+00`, as in PostgreSQL), the exponent of
    /// the value before rounding, signed and at least two digits.
    pub(crate) fn scientific(&self, places: usize) -> String {
        let exponent = if self.digits.is_empty() { 0 } else { self.digits.len() as i64 - 1 - self.scale };
        let significand = Dec { scale: self.digits.len().saturating_sub(1) as i64, ..self.clone() };
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", significand.rounded(places), exponent.unsigned_abs())
    }
}

/// Adds one to a string of decimal digits.
fn increment(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d == b'9' {
            *d = b'0';
        } else {
            *d += 1;
            return;
        }
    }
    digits.insert(0, b'1');
}

/// glibc's `printf` caps nothing, but PostgreSQL's own `printf` (which
/// `to_char` uses) prints at most 350 places and pads with zeros beyond.
const PRINTF_MAX_PLACES: usize = 350;

/// PostgreSQL's `%.*f`: `NaN`, `Infinity` and `-Infinity` spelled out, a
/// minus for negative zero.
fn printf_f(v: f64, places: usize) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    let sign = if v.is_sign_negative() { "-" } else { "" };
    if v.is_infinite() {
        return format!("{sign}Infinity");
    }
    let shown = places.min(PRINTF_MAX_PLACES);
    format!("{sign}{:.*}{}", shown, v.abs(), "0".repeat(places - shown))
}

/// PostgreSQL's `%+.*e`: C's exponent form (`e+05`), always a sign.
fn printf_e(v: f64, places: usize) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    let sign = if v.is_sign_negative() { '-' } else { '+' };
    if v.is_infinite() {
        return format!("{sign}Infinity");
    }
    let shown = places.min(PRINTF_MAX_PLACES);
    let rust = format!("{:.*e}", shown, v.abs());
    let (mantissa, exponent) = rust.split_once('e').unwrap_or((&rust, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let esign = if exponent < 0 { '-' } else { '+' };
    format!("{sign}{mantissa}{}e{esign}{:02}", "0".repeat(places - shown), exponent.unsigned_abs())
}

/// PostgreSQL's int_to_roman: 1 to 3999, fifteen `#` otherwise.
fn int_to_roman(n: i32) -> Vec<u8> {
    if !(1..=3999).contains(&n) {
        return vec![b'#'; 15];
    }
    const ONES: [&str; 9] = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"];
    const TENS: [&str; 9] = ["X", "XX", "XXX", "XL", "L", "LX", "LXX", "LXXX", "XC"];
    const HUNDREDS: [&str; 9] = ["C", "CC", "CCC", "CD", "D", "DC", "DCC", "DCCC", "CM"];
    let mut s = "M".repeat((n / 1000) as usize);
    for (digit, names) in [((n / 100) % 10, &HUNDREDS), ((n / 10) % 10, &TENS), (n % 10, &ONES)] {
        if digit > 0 {
            s.push_str(names[(digit - 1) as usize]);
        }
    }
    s.into_bytes()
}

/// The digit string, the blanks before it and the sign handed to the
/// processor (0 for `RN` and `EEEE`, which carry their own).
struct Prepared {
    number: Vec<u8>,
    out_pre_spaces: i32,
    sign: u8,
}

impl Prepared {
    fn alone(number: Vec<u8>) -> Prepared {
        Prepared { number, out_pre_spaces: 0, sign: 0 }
    }

    /// The common end of every variant: `text` (a sign, then digits) fitted
    /// to the template's digits before the point — blanks to pad, all `#`
    /// (and the point) when the value has more digits there.
    fn fit(text: &str, num: &NumDesc) -> Prepared {
        let (sign, digits) = match text.strip_prefix('-') {
            Some(rest) => (b'-', rest),
            None => (b'+', text),
        };
        let pre_len = digits.find('.').unwrap_or(digits.len());
        let pre = num.pre.max(0) as usize;
        if pre_len > pre {
            let mut hashes = vec![b'#'; pre + num.post.max(0) as usize + 1];
            hashes[pre] = b'.';
            return Prepared { number: hashes, out_pre_spaces: 0, sign };
        }
        Prepared { number: digits.as_bytes().to_vec(), out_pre_spaces: (pre - pre_len) as i32, sign }
    }
}

/// `EEEE` of NaN or an infinity: `#`s shaped like the template.
fn eeee_hashes(num: &NumDesc) -> Vec<u8> {
    let pre = num.pre.max(0) as usize;
    let mut hashes = vec![b'#'; pre + num.post.max(0) as usize + 6];
    hashes[0] = b' ';
    hashes[pre + 1] = b'.';
    hashes
}

fn out_of_range(what: &str) -> SqlError {
    SqlError::new(code::OUT_OF_RANGE, format!("{what} out of range"))
}

/// An integer's digits with the template's places as zeros.
fn integer_digits(v: i128, num: &NumDesc) -> Prepared {
    let mut text = v.to_string();
    if num.post > 0 {
        text.push('.');
        text.push_str(&"0".repeat(num.post as usize));
    }
    Prepared::fit(&text, num)
}

/// int4_to_char's digits.
fn int4(v: i32, num: &mut NumDesc) -> Result<Prepared, SqlError> {
    if num.is(ROMAN) {
        return Ok(Prepared::alone(int_to_roman(v)));
    }
    if num.is(EEEE) {
        return Ok(Prepared::alone(signed_scientific(f64::from(v), num.post)));
    }
    let mut v = v;
    if num.is(MULTI) {
        // PostgreSQL multiplies in 32 bits without a check: an overflow is
        // C's undefined behaviour there, so not imitated.
        v = 10i32.checked_pow(num.multi as u32).and_then(|m| v.checked_mul(m)).ok_or_else(|| {
            SqlError::unsupported("to_char of an integer whose \"V\" shift leaves 32 bits")
                .with_hint("Cast the value to bigint.")
        })?;
        num.pre += num.multi;
    }
    Ok(integer_digits(i128::from(v), num))
}

/// int8_to_char's digits.
fn int8(v: i64, num: &mut NumDesc) -> Result<Prepared, SqlError> {
    if num.is(ROMAN) {
        // PostgreSQL 15 converts to int4 first, with its error.
        let v = i32::try_from(v).map_err(|_| out_of_range("integer"))?;
        return Ok(Prepared::alone(int_to_roman(v)));
    }
    if num.is(EEEE) {
        let sci = Dec::new(&v.to_string(), 0).scientific(num.post as usize);
        let sci = if sci.starts_with('-') { sci } else { format!(" {sci}") };
        return Ok(Prepared::alone(sci.into_bytes()));
    }
    let mut v = v;
    if num.is(MULTI) {
        // dtoi8(pow(10, multi)), then int8mul: both raise PostgreSQL's error.
        let factor = 10f64.powf(f64::from(num.multi)).round_ties_even();
        if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&factor) {
            return Err(out_of_range("bigint"));
        }
        v = v.checked_mul(factor as i64).ok_or_else(|| out_of_range("bigint"))?;
        num.pre += num.multi;
    }
    Ok(integer_digits(i128::from(v), num))
}

/// C's `%+.*e` with a blank for the plus, as PostgreSQL shows it.
fn signed_scientific(v: f64, places: i32) -> Vec<u8> {
    let e = printf_e(v, places.max(0) as usize);
    match e.strip_prefix('+') {
        Some(rest) => format!(" {rest}").into_bytes(),
        None => e.into_bytes(),
    }
}

/// float4_to_char's and float8_to_char's digits (`single` for float4,
/// whose value `v` is exactly an f32).
fn float(v: f64, single: bool, num: &mut NumDesc) -> Prepared {
    if num.is(ROMAN) {
        // rint, then int4 if it fits (the bounds are the same in float4).
        let r = v.round_ties_even();
        let n = if (-2_147_483_648.0..2_147_483_648.0).contains(&r) { r as i32 } else { i32::MAX };
        return Prepared::alone(int_to_roman(n));
    }
    if num.is(EEEE) {
        return Prepared::alone(if v.is_finite() { signed_scientific(v, num.post) } else { eeee_hashes(num) });
    }
    let mut v = v;
    if num.is(MULTI) {
        let factor = 10f64.powf(f64::from(num.multi));
        // float4 multiplies in single precision, as C does with two floats.
        v = if single { f64::from((v as f32) * (factor as f32)) } else { v * factor };
        num.pre += num.multi;
    }
    // FLT_DIG or DBL_DIG significant digits at most, the places giving way.
    let digits = if single { 6 } else { 15 };
    let pre_len = printf_f(v.abs(), 0).len() as i32;
    if pre_len >= digits {
        num.post = 0;
    } else if pre_len + num.post > digits {
        num.post = digits - pre_len;
    }
    Prepared::fit(&printf_f(v, num.post as usize), num)
}

/// The largest scale numeric_round takes (NUMERIC_MAX_RESULT_SCALE).
const MAX_ROUND_SCALE: usize = 2000;

/// numeric_to_char's digits.
fn numeric(d: &Result<Dec, Special>, num: &mut NumDesc) -> Result<Prepared, SqlError> {
    if num.is(ROMAN) {
        let d = d.as_ref().map_err(|s| {
            let what = if *s == Special::NaN { "NaN" } else { "infinity" };
            SqlError::new(code::FEATURE_NOT_SUPPORTED, format!("cannot convert {what} to integer"))
        })?;
        let n = d.rounded(0).parse::<i32>().map_err(|_| out_of_range("integer"))?;
        return Ok(Prepared::alone(int_to_roman(n)));
    }
    if num.is(EEEE) {
        return Ok(Prepared::alone(match d {
            Err(_) => eeee_hashes(num),
            Ok(d) => {
                let sci = d.scientific(num.post as usize);
                if sci.starts_with('-') { sci.into_bytes() } else { format!(" {sci}").into_bytes() }
            }
        }));
    }
    let mut d = d.clone();
    if num.is(MULTI) {
        if let Ok(d) = &mut d {
            d.scale -= i64::from(num.multi);
        }
        num.pre += num.multi;
    }
    let text = match d {
        Ok(d) => d.rounded((num.post.max(0) as usize).min(MAX_ROUND_SCALE)),
        Err(s) => s.text().to_string(),
    };
    Ok(Prepared::fit(&text, num))
}

/// `to_char(value, template)` for a non-empty template.
pub(crate) fn format(value: &Value, template: &Template) -> Result<String, SqlError> {
    let mut num = template.desc;
    let prepared = match value {
        Value::Int4(v) => int4(*v, &mut num)?,
        Value::Int8(v) => int8(*v, &mut num)?,
        Value::Float4(v) => float(f64::from(*v), true, &mut num),
        Value::Float8(v) => float(*v, false, &mut num),
        Value::Numeric(d) => numeric(d, &mut num)?,
    };
    lay_out(&template.nodes, num, &prepared)
}

/// NUM_processor's state while writing.
struct Writer<'a> {
    num: NumDesc,
    number: &'a [u8],
    /// The next digit of `number` to write (PostgreSQL's number_p).
    next: usize,
    out: Vec<u8>,
    sign: u8,
    sign_wrote: bool,
    num_count: i32,
    num_in: bool,
    num_curr: i32,
    out_pre_spaces: i32,
    /// With `FM`, the last digit after the point worth writing.
    last_relevant: Option<usize>,
}

impl Writer<'_> {
    /// `number`'s byte at `i`, NUL past its end as in C.
    fn at(&self, i: usize) -> u8 {
        self.number.get(i).copied().unwrap_or(0)
    }

    fn fill(&self) -> bool {
        self.num.is(FILLMODE)
    }

    fn sign_char(&self) -> u8 {
        if self.sign == b'-' { b'-' } else { b'+' }
    }

    /// NUM_numpart_to_char: a digit or point pattern, and the sign if this
    /// is where it goes.
    fn numpart(&mut self, key: Key) {
        if self.num.is(ROMAN) {
            return;
        }
        self.num_in = false;
        // "0.1" under "9.9" prints " .1": the zero before the point is a blank.
        let predec_space = !self.num.is(ZERO) && self.next == 0 && self.at(0) == b'0' && self.num.post != 0;
        let point_relevant = self.last_relevant.is_some_and(|i| self.at(i) == b'.');
        if !self.sign_wrote
            && (self.num_curr >= self.out_pre_spaces || (self.num.is(ZERO) && self.num.zero_start == self.num_curr))
            && (!predec_space || point_relevant)
        {
            if self.num.is(LSIGN) {
                if self.num.lsign == LSIGN_PRE {
                    self.out.push(self.sign_char());
                    self.sign_wrote = true;
                }
            } else if self.num.is(BRACKET) {
                self.out.push(if self.sign == b'+' { b' ' } else { b'<' });
                self.sign_wrote = true;
            } else if self.sign == b'+' {
                if !self.fill() {
                    self.out.push(b' ');
                }
                self.sign_wrote = true;
            } else if self.sign == b'-' {
                self.out.push(b'-');
                self.sign_wrote = true;
            }
        }
        if self.num_curr < self.out_pre_spaces && (self.num.zero_start > self.num_curr || !self.num.is(ZERO)) {
            if !self.fill() {
                self.out.push(b' ');
            }
        } else if self.num.is(ZERO) && self.num_curr < self.out_pre_spaces {
            self.out.push(b'0');
            self.num_in = true;
        } else {
            if self.at(self.next) == b'.' {
                if !point_relevant || self.fill() {
                    self.out.push(b'.');
                }
            } else if self.last_relevant.is_some_and(|i| self.next > i) && key != Key::Zero {
                // FM: trailing zeros are not written.
            } else if predec_space {
                if !self.fill() {
                    self.out.push(b' ');
                } else if point_relevant {
                    self.out.push(b'0');
                }
            } else {
                // Past the end of `number` this writes C's NUL, which ends
                // the output, as in PostgreSQL.
                self.out.push(self.at(self.next));
                self.num_in = true;
            }
            if self.at(self.next) != 0 {
                self.next += 1;
            }
        }
        let mut end = self.num_count + i32::from(self.out_pre_spaces != 0) + i32::from(self.num.is(DECIMAL));
        if self.last_relevant == Some(self.next) {
            end = self.num_curr;
        }
        if self.num_curr + 1 == end {
            if self.sign_wrote && self.num.is(BRACKET) {
                self.out.push(if self.sign == b'+' { b' ' } else { b'>' });
            } else if self.num.is(LSIGN) && self.num.lsign == LSIGN_POST {
                self.out.push(self.sign_char());
            }
        }
        self.num_curr += 1;
    }

    /// A separator (`,` or `G`): a blank (or nothing with `FM`) until a
    /// digit has been written.
    fn separator(&mut self) {
        if self.num_in {
            self.out.push(b',');
        } else if !self.fill() {
            self.out.push(b' ');
        }
    }

    /// A sign pattern (`MI`, `PL`): its character for its sign, a blank
    /// (or nothing with `FM`) for the other.
    fn sign_pattern(&mut self, shown_for: u8) {
        if self.sign == shown_for {
            self.out.push(shown_for);
        } else if !self.fill() {
            self.out.push(b' ');
        }
    }

    /// `TH`/`th`: the ordinal suffix of the digit string (PostgreSQL's
    /// get_th), unless the value is negative, fractional or Roman.
    fn ordinal(&mut self, upper: bool) -> Result<(), SqlError> {
        if self.num.is(ROMAN) || self.at(0) == b'#' || self.sign == b'-' || self.num.is(DECIMAL) {
            return Ok(());
        }
        let n = self.number;
        let Some(&last) = n.last().filter(|b| b.is_ascii_digit()) else {
            return Err(SqlError::new(
                code::INVALID_TEXT,
                format!("\"{}\" is not a number", String::from_utf8_lossy(n)),
            ));
        };
        let teen = n.len() > 1 && n[n.len() - 2] == b'1';
        let suffix = match last {
            b'1' if !teen => "st",
            b'2' if !teen => "nd",
            b'3' if !teen => "rd",
            _ => "th",
        };
        let suffix = if upper { suffix.to_ascii_uppercase() } else { suffix.to_string() };
        self.out.extend_from_slice(suffix.as_bytes());
        Ok(())
    }
}

/// NUM_processor writing: the prepared digits laid into the template.
fn lay_out(nodes: &[Node], mut num: NumDesc, prepared: &Prepared) -> Result<String, SqlError> {
    let number = prepared.number.as_slice();
    if num.is(EEEE) {
        return Ok(String::from_utf8_lossy(number).into_owned());
    }
    if num.zero_start > 0 {
        num.zero_start -= 1;
    }
    if num.is(ROMAN) {
        (num.lsign, num.pre_lsign_num, num.post, num.pre) = (0, 0, 0, 0);
        num.flag = (num.flag & FILLMODE) | ROMAN;
    }
    let sign = prepared.sign;
    let sign_wrote = if num.is(PLUS) || num.is(MINUS) {
        // MI/PL/SG write the sign themselves; PL alone still wants it.
        !num.is(PLUS) || num.is(MINUS)
    } else {
        if sign != b'-' && num.is(FILLMODE) {
            num.flag &= !BRACKET;
        }
        if num.lsign == LSIGN_PRE && num.pre == num.pre_lsign_num {
            num.lsign = LSIGN_POST;
        }
        sign == b'+' && num.is(FILLMODE) && !num.is(LSIGN)
    };
    let out_pre_spaces = prepared.out_pre_spaces;
    let mut last_relevant = None;
    if num.is(FILLMODE)
        && num.is(DECIMAL)
        && let Some(point) = number.iter().position(|&b| b == b'.')
    {
        let last = number[point + 1..].iter().rposition(|&b| b != b'0').map_or(point, |i| point + 1 + i);
        // `0` patterns after the point keep their zeros, within the digits there are.
        let keep = if num.zero_end > out_pre_spaces {
            (number.len() as i32 - 1).min(num.zero_end - out_pre_spaces).max(0) as usize
        } else {
            0
        };
        last_relevant = Some(last.max(keep));
    }
    let mut num_count = num.post + num.pre - 1;
    if !sign_wrote && out_pre_spaces == 0 {
        num_count += 1;
    }
    let mut w = Writer {
        num,
        number,
        next: 0,
        out: Vec::with_capacity(nodes.len() + number.len()),
        sign,
        sign_wrote,
        num_count,
        num_in: false,
        num_curr: 0,
        out_pre_spaces,
        last_relevant,
    };
    for node in nodes {
        let key = match node {
            Node::Char(c) => {
                w.out.extend_from_slice(c.as_bytes());
                continue;
            }
            Node::Key(key) => *key,
        };
        match key {
            Key::Nine | Key::Zero | Key::Dec | Key::D => w.numpart(key),
            Key::Comma | Key::G => w.separator(),
            Key::L => w.out.push(b' '),
            Key::Rn | Key::RnLower => {
                let roman = String::from_utf8_lossy(&number[w.next.min(number.len())..]).into_owned();
                let roman = if key == Key::RnLower { roman.to_ascii_lowercase() } else { roman };
                let roman = if w.fill() { roman } else { format!("{roman:>15}") };
                w.out.extend_from_slice(roman.as_bytes());
            }
            Key::Th | Key::ThLower => w.ordinal(key == Key::Th)?,
            Key::Mi => w.sign_pattern(b'-'),
            Key::Pl => w.sign_pattern(b'+'),
            // The sign itself: a NUL (the output's end) for Roman numerals.
            Key::Sg => w.out.push(sign),
            Key::B | Key::C | Key::Eeee | Key::Fm | Key::Pr | Key::S | Key::Sp | Key::V => {}
        }
    }
    let end = w.out.iter().position(|&b| b == 0).unwrap_or(w.out.len());
    w.out.truncate(end);
    String::from_utf8(w.out).map_err(|_| SqlError::internal("to_char produced invalid UTF-8"))
}

fn external(e: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// Row `i` of a numeric, integer or float array as a [`Value`].
fn value_at(values: &ArrayRef, i: usize) -> Result<Value, SqlError> {
    Ok(match values.data_type() {
        DataType::Int16 => Value::Int4(i32::from(values.as_primitive::<Int16Type>().value(i))),
        DataType::Int32 => Value::Int4(values.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => Value::Int8(values.as_primitive::<Int64Type>().value(i)),
        DataType::Float32 => Value::Float4(values.as_primitive::<Float32Type>().value(i)),
        DataType::Float64 => Value::Float8(values.as_primitive::<Float64Type>().value(i)),
        DataType::Decimal128(_, s) => {
            let v = values.as_primitive::<Decimal128Type>().value(i);
            Value::Numeric(Special::of_i128(v).map_or_else(|| Ok(Dec::new(&v.to_string(), i64::from(*s))), Err))
        }
        DataType::Decimal256(_, s) => {
            let v = values.as_primitive::<Decimal256Type>().value(i);
            Value::Numeric(Special::of_i256(v).map_or_else(|| Ok(Dec::new(&v.to_string(), i64::from(*s))), Err))
        }
        other => return Err(SqlError::unsupported(format!("to_char of a value of type {other}"))),
    })
}

/// `to_char` of integers, floats and numerics (called by `to_char.rs`):
/// row by row, a template parsed again only when it changes.
pub fn to_char(args: &ScalarFunctionArgs) -> Result<ColumnarValue> {
    let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
    let rows = if scalar { 1 } else { args.number_rows };
    let values = args.args[0].to_array(rows)?;
    let templates = datafusion::arrow::compute::cast(&args.args[1].to_array(rows)?, &DataType::Utf8)?;
    let templates = templates.as_string::<i32>();
    let mut parsed: Option<(&str, Template)> = None;
    let mut out: Vec<Option<String>> = Vec::with_capacity(rows);
    for i in 0..rows {
        if values.is_null(i) || templates.is_null(i) {
            out.push(None);
            continue;
        }
        let fmt = templates.value(i);
        let value = value_at(&values, i).map_err(external)?;
        if fmt.is_empty() {
            out.push(Some(String::new()));
            continue;
        }
        if parsed.as_ref().is_none_or(|(f, _)| *f != fmt) {
            parsed = Some((fmt, Template::parse(fmt).map_err(external)?));
        }
        let template = parsed.as_ref().map(|(_, t)| t).ok_or_else(|| external(SqlError::internal("no template")))?;
        out.push(Some(format(&value, template).map_err(external)?));
    }
    crate::values::udf_values::columnar(Arc::new(StringArray::from(out)), scalar)
}

#[cfg(test)]
mod tests;
