//! `numeric` wider than Decimal128: the representation and its arithmetic.
//!
//! Arrow's decimals carry one scale per column, PostgreSQL's numeric one
//! per value. Tessera maps the two kinds of numeric PostgreSQL has:
//! - **`numeric(p, s)`** is Arrow's `Decimal128(p, s)` up to 38 digits
//!   and `Decimal256(p, s)` up to 76; every value has the column's scale,
//!   as in PostgreSQL, so it prints with `s` places. A wider declared
//!   precision (up to PostgreSQL's 1000) is `Decimal256(76, s)`: the
//!   catalog keeps the declaration, a value of more than 76 digits is
//!   refused (0A000). NaN and the infinities are `numeric_special.rs`'s.
//! - **Unconstrained `numeric`** is `Decimal256(76, 38)`: 38 digits before
//!   the point and 38 after, every value stored exactly (a value needing
//!   more is refused, 0A000, never rounded). Because Arrow values have no
//!   scale of their own, such a value prints without trailing zeros
//!   (`1.50` stored prints `1.5`) — the same value as PostgreSQL's, which
//!   would print the zeros it was given. Equal values therefore have equal
//!   bits, which joins, GROUP BY and DISTINCT rely on.
//!
//! Arithmetic follows PostgreSQL where the result has a per-value scale:
//! a product is exact, and a quotient is rounded half away from zero to
//! the scale PostgreSQL's `select_div_scale` picks for those two values
//! (at least 16 significant digits). The functions here are plain integer
//! arithmetic on `i256` (a value and its scale), below the DataFusion
//! functions that use them (`numeric_ops`).

use std::fmt::Write;

use datafusion::arrow::datatypes::{DataType, i256};

/// The digits of Arrow's widest decimal.
pub const MAX_DIGITS: u8 = 76;
/// The places an unconstrained numeric keeps.
pub const UNCONSTRAINED_SCALE: i8 = 38;
/// PostgreSQL's NUMERIC_MIN_SIG_DIGITS: a quotient has at least this many.
const MIN_SIG_DIGITS: i32 = 16;

/// The Arrow type of an unconstrained `numeric`.
pub const UNCONSTRAINED: DataType = DataType::Decimal256(MAX_DIGITS, UNCONSTRAINED_SCALE);

/// Whether values of `t` are unconstrained numerics (printed without
/// trailing zeros): any `Decimal256` of 38 places, since DataFusion's own
/// arithmetic (`%`, `+` of two of them) may narrow the precision it
/// derives. A declared `numeric(p, 38)` beyond 38 digits prints so too.
pub fn is_unconstrained(t: &DataType) -> bool {
    matches!(t, DataType::Decimal256(_, UNCONSTRAINED_SCALE))
}

/// 10^n, if it fits.
pub fn ten_to(n: u32) -> Option<i256> {
    i256::from_i128(10).checked_pow(n)
}

/// The places `v` (at `scale`) needs: its scale less its trailing zeros.
pub fn trimmed_scale(v: i256, scale: i8) -> i8 {
    let ten = i256::from_i128(10);
    let (mut v, mut s) = (v, scale);
    while s > 0 && v != i256::ZERO && v.checked_rem(ten) == Some(i256::ZERO) {
        v = v.wrapping_div(ten);
        s -= 1;
    }
    if v == i256::ZERO { 0 } else { s }
}

/// `v` (at `scale`) as PostgreSQL prints a numeric; `trim` drops trailing
/// zeros (an unconstrained numeric).
pub fn write(out: &mut String, v: i256, scale: i8, trim: bool) {
    let (v, scale) = if trim {
        let t = trimmed_scale(v, scale);
        (rescale(v, scale, t).unwrap_or(v), t)
    } else {
        (v, scale)
    };
    if v.is_negative() {
        out.push('-');
    }
    let digits = v.wrapping_abs().to_string();
    let digits = digits.trim_start_matches('-');
    if scale <= 0 {
        write!(out, "{digits}{}", "0".repeat(scale.unsigned_abs() as usize)).unwrap();
        return;
    }
    let s = scale as usize;
    if digits.len() > s {
        write!(out, "{}.{}", &digits[..digits.len() - s], &digits[digits.len() - s..]).unwrap();
    } else {
        write!(out, "0.{digits:0>s$}").unwrap();
    }
}

/// Why a text is not a numeric Tessera can hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputError {
    /// Not a number at all (22P02).
    Syntax,
    /// More places than `scale`, or more digits than fit (0A000 for an
    /// unconstrained numeric: PostgreSQL would keep them).
    TooWide,
}

/// Parses PostgreSQL's numeric input (`-1.50`, `.5`, `1e-3`, blanks
/// around) as an integer at `scale`, exactly: a value with more places is
/// [`InputError::TooWide`], never rounded.
pub fn parse(text: &str, scale: i8) -> Result<i256, InputError> {
    let t = text.trim();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (mantissa, exp) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], t[i + 1..].parse::<i32>().map_err(|_| InputError::Syntax)?),
        None => (t, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if (int.is_empty() && frac.is_empty()) || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return Err(InputError::Syntax);
    }
    // digits · 10^(exp - frac.len()) expressed at `scale`.
    let digits = format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    let shift = i64::from(scale) + i64::from(exp) - frac.len() as i64;
    let digits = if shift < 0 {
        let cut = shift.unsigned_abs() as usize;
        let keep = digits.len().saturating_sub(cut);
        if digits[keep..].bytes().any(|b| b != b'0') {
            return Err(InputError::TooWide);
        }
        digits[..keep].to_string()
    } else if digits.is_empty() {
        String::new()
    } else {
        format!("{digits}{}", "0".repeat(shift as usize))
    };
    if digits.is_empty() {
        return Ok(i256::ZERO);
    }
    if digits.len() > usize::from(MAX_DIGITS) {
        return Err(InputError::TooWide);
    }
    let v = i256::from_string(&digits).ok_or(InputError::TooWide)?;
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// `v` at scale `from` moved to scale `to`; None if a nonzero digit would
/// be lost or the value overflows.
pub fn rescale(v: i256, from: i8, to: i8) -> Option<i256> {
    if to >= from {
        return v.checked_mul(ten_to((to - from) as u32)?);
    }
    let d = ten_to((from - to) as u32)?;
    (v.checked_rem(d)? == i256::ZERO).then(|| v.wrapping_div(d))
}

/// `v` at scale `from` rounded half away from zero to scale `to` (< from).
pub fn round_to(v: i256, from: i8, to: i8) -> Option<i256> {
    if to >= from {
        return rescale(v, from, to);
    }
    let d = ten_to((from - to) as u32)?;
    let (q, r) = (v.wrapping_div(d), v.wrapping_rem(d));
    let twice = r.checked_abs()?.checked_mul(i256::from_i128(2))?;
    if twice >= d { q.checked_add(if v.is_negative() { i256::MINUS_ONE } else { i256::ONE }) } else { Some(q) }
}

/// PostgreSQL's base-10000 weight and first digit of `v` at `scale` (the
/// inputs of its quotient scale); (0, 0) for zero.
fn weight_and_first_digit(v: i256, scale: i8) -> (i32, i32) {
    if v == i256::ZERO {
        return (0, 0);
    }
    let abs = v.wrapping_abs();
    let decimal_digits = abs.ilog10() as i32 + 1;
    // The power of ten of the leading digit, and its base-10000 group.
    let exponent = decimal_digits - 1 - i32::from(scale);
    let weight = exponent.div_euclid(4);
    // The group's value: |v| / 10^(scale + 4·weight).
    let shift = i32::from(scale) + 4 * weight;
    let first = if shift >= 0 {
        abs.wrapping_div(ten_to(shift as u32).unwrap_or(i256::MAX))
    } else {
        abs.wrapping_mul(ten_to(shift.unsigned_abs()).unwrap_or(i256::ONE))
    };
    (weight, first.as_i128() as i32)
}

/// The scale PostgreSQL gives the square root of `v` (at `scale`, display
/// scale `dscale`; `numeric_sqrt`): enough places for 16 significant
/// digits, and no fewer than the argument shows.
pub fn sqrt_scale(v: i256, scale: i8, dscale: i8) -> i32 {
    let (weight, _) = weight_and_first_digit(v, scale);
    let sweight = (weight + 1) * 4 / 2 - 1;
    (MIN_SIG_DIGITS - sweight).max(i32::from(dscale)).clamp(0, 1000)
}

/// The square root of `v` (at `scale`, not negative) at `rscale` places,
/// rounded half away from zero; None if it does not fit in 256 bits.
pub fn sqrt(v: i256, scale: i8, rscale: i32) -> Option<i256> {
    use num_bigint::BigUint;
    let v: BigUint = v.to_string().parse().ok()?;
    // floor(sqrt(v · 10^(2(rscale+1) - scale))) has one place more than
    // the result; floor(sqrt(floor(y))) = floor(sqrt(y)), so dividing is
    // as good as exact.
    let shift = 2 * (rscale + 1) - i32::from(scale);
    let ten = BigUint::from(10u32);
    let n = if shift >= 0 { v * ten.pow(shift as u32) } else { v / ten.pow(shift.unsigned_abs()) };
    let root = (n.sqrt() + BigUint::from(5u32)) / BigUint::from(10u32);
    i256::from_string(&root.to_string())
}

/// The scale PostgreSQL gives `a / b` (`select_div_scale`): enough places
/// for 16 significant digits, and no fewer than either operand's display
/// scale (`da`, `db`).
pub fn quotient_scale(a: i256, sa: i8, da: i8, b: i256, sb: i8, db: i8) -> i32 {
    let (w1, f1) = weight_and_first_digit(a, sa);
    let (w2, f2) = weight_and_first_digit(b, sb);
    let mut qweight = w1 - w2;
    if f1 <= f2 {
        qweight -= 1;
    }
    (MIN_SIG_DIGITS - qweight * 4).max(i32::from(da)).max(i32::from(db)).clamp(0, 1000)
}

/// `a / b` (of scales `sa`, `sb`; `b` nonzero) at scale `s`, rounded half
/// away from zero; None if it does not fit in 256 bits.
pub fn divide(a: i256, sa: i8, b: i256, sb: i8, s: i32) -> Option<i256> {
    // a·10^-sa / b·10^-sb = (a · 10^(s + sb - sa) / b) · 10^-s
    let shift = s + i32::from(sb) - i32::from(sa);
    let (mut num, mut den) = (a, b);
    if shift >= 0 {
        num = num.checked_mul(ten_to(shift as u32)?)?;
    } else {
        den = den.checked_mul(ten_to(shift.unsigned_abs())?)?;
    }
    let (q, r) = (num.checked_div(den)?, num.checked_rem(den)?);
    let twice = r.checked_abs()?.checked_mul(i256::from_i128(2))?;
    if twice >= den.checked_abs()? {
        let away = if num.is_negative() != den.is_negative() { i256::MINUS_ONE } else { i256::ONE };
        q.checked_add(away)
    } else {
        Some(q)
    }
}

/// `a · b` (of scales `sa`, `sb`) exactly at scale `s`; None if it needs
/// more places or digits than that.
pub fn multiply(a: i256, sa: i8, b: i256, sb: i8, s: i8) -> Option<i256> {
    // Drop trailing zeros first: they cost digits and carry nothing.
    let (ta, tb) = (trimmed_scale(a, sa), trimmed_scale(b, sb));
    let (a, b) = (rescale(a, sa, ta)?, rescale(b, sb, tb)?);
    rescale(a.checked_mul(b)?, ta + tb, s).filter(|p| fits(*p, MAX_DIGITS))
}

/// Whether `v` has at most `digits` digits.
pub fn fits(v: i256, digits: u8) -> bool {
    ten_to(u32::from(digits)).is_some_and(|limit| v.wrapping_abs() < limit && v != i256::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str, scale: i8) -> i256 {
        parse(s, scale).unwrap()
    }

    fn show(v: i256, scale: i8, trim: bool) -> String {
        let mut s = String::new();
        write(&mut s, v, scale, trim);
        s
    }

    #[test]
    fn input_is_exact_or_refused() {
        assert_eq!(show(n("0.000000000001", 38), 38, true), "0.000000000001");
        assert_eq!(show(n("1.000000000000000000001", 38), 38, true), "1.000000000000000000001");
        assert_eq!(show(n(" -1.50 ", 38), 38, true), "-1.5");
        assert_eq!(show(n("1.50", 2), 2, false), "1.50");
        assert_eq!(show(n("1e3", 0), 0, false), "1000");
        assert_eq!(show(n(".5", 38), 38, true), "0.5");
        assert_eq!(show(n("0", 38), 38, true), "0");
        assert_eq!(show(n("-0.00", 38), 38, true), "0");
        assert_eq!(parse("1.005", 2), Err(InputError::TooWide));
        assert_eq!(parse("abc", 2), Err(InputError::Syntax));
        assert_eq!(parse("1e", 2), Err(InputError::Syntax));
        assert_eq!(parse(".", 2), Err(InputError::Syntax));
        assert_eq!(parse(&"9".repeat(39), 38), Err(InputError::TooWide));
        assert!(parse(&"9".repeat(38), 38).is_ok());
    }

    #[test]
    fn quotients_take_postgresqls_scale() {
        // select 1::numeric / 3 → 0.33333333333333333333 (20 places)
        let q = |a: &str, b: &str| {
            let (x, y) = (n(a, 38), n(b, 38));
            let (dx, dy) = (trimmed_scale(x, 38), trimmed_scale(y, 38));
            quotient_scale(x, 38, dx, y, 38, dy)
        };
        assert_eq!(q("1", "3"), 20);
        assert_eq!(q("10", "4"), 16);
        assert_eq!(q("100000", "3"), 12);
        assert_eq!(q("1", "1"), 20);
        let v = divide(n("2", 0), 0, n("3", 0), 0, 20).unwrap();
        assert_eq!(show(v, 20, false), "0.66666666666666666667");
        let v = divide(n("-2", 0), 0, n("3", 0), 0, 20).unwrap();
        assert_eq!(show(v, 20, false), "-0.66666666666666666667");
    }

    #[test]
    fn products_are_exact() {
        let p = multiply(n("12345678901234567890.5", 1), 1, n("12345678901234567890.5", 1), 1, 38);
        assert_eq!(p, None, "39 integer digits do not fit 38 places' type");
        let p = multiply(n("1.5", 38), 38, n("0.000001", 38), 38, 38).unwrap();
        assert_eq!(show(p, 38, true), "0.0000015");
        let tiny = n("0.0000000000000000000000000000000000001", 38);
        assert_eq!(multiply(tiny, 38, tiny, 38, 38), None);
    }

    #[test]
    fn rounding_is_half_away_from_zero() {
        assert_eq!(show(round_to(n("2.345", 3), 3, 2).unwrap(), 2, false), "2.35");
        assert_eq!(show(round_to(n("-2.345", 3), 3, 2).unwrap(), 2, false), "-2.35");
        assert_eq!(show(round_to(n("2.344", 3), 3, 2).unwrap(), 2, false), "2.34");
    }
}
