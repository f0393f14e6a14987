//! `interval` text input exactly as PostgreSQL 15 reads it (`interval_in`).
//!
//! PostgreSQL splits the text into fields (numbers, `h:m:s` times, signed
//! numbers, words), then reads them from right to left so that a unit word
//! names the number before it; a number without a unit takes the unit the
//! type's field restriction implies (`INTERVAL '2' HOUR`), or seconds. A
//! unit given twice, a unit without a number or a time after second-level
//! units is a syntax error (22007); a value that does not fit its field is
//! 22015 and a total that does not fit an interval 22008. Text PostgreSQL's
//! reader refuses is then tried as ISO 8601 (`P1Y2M3DT4H5M6S`, `P0001-02-03T04:05:06`).
//!
//! The result is PostgreSQL's interval (months, days, microseconds);
//! [`to_arrow_text`] spells it in units Arrow's interval parser reads
//! without rounding, which is how literals and stored values reach
//! DataFusion. Arrow keeps nanoseconds in 64 bits, so a time part beyond
//! about 292 years (PostgreSQL allows 292,000) is refused with 22008.

use crate::error::{Result, SqlError, code};

/// An interval as PostgreSQL holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PgInterval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

// PostgreSQL's field numbers (datetime.h); a mask has bit 1 << field.
const MONTH: u32 = 1;
const YEAR: u32 = 2;
const DAY: u32 = 3;
const HOUR: u32 = 10;
const MINUTE: u32 = 11;
const SECOND: u32 = 12;
const MILLISECOND: u32 = 13;
const MICROSECOND: u32 = 14;
const WEEK: u32 = 24;
const DECADE: u32 = 25;
const CENTURY: u32 = 26;
const MILLENNIUM: u32 = 27;

/// Not a unit: what follows `ago` (a number there is an error).
const NO_UNIT: u32 = 0;

const fn m(field: u32) -> u32 {
    1 << field
}
const ALL_SECS: u32 = m(SECOND) | m(MILLISECOND) | m(MICROSECOND);
const TIME_FIELDS: u32 = m(HOUR) | m(MINUTE) | ALL_SECS;

/// The fields an interval is restricted to (`INTERVAL DAY TO SECOND(2)`):
/// PostgreSQL's typmod, a mask of YEAR … SECOND and a fractional precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restriction {
    range: u32,
    precision: Option<u32>,
}

const FULL_RANGE: u32 = 0x7FFF;

impl Default for Restriction {
    fn default() -> Self {
        Restriction { range: FULL_RANGE, precision: None }
    }
}

impl Restriction {
    /// From SQL's field names (`day`, `second`: `DAY TO SECOND`); None for a
    /// combination PostgreSQL does not accept.
    pub fn new(leading: Option<&str>, last: Option<&str>, precision: Option<u64>) -> Option<Restriction> {
        let field = |name: &str| match name.to_ascii_lowercase().as_str() {
            "year" => Some(YEAR),
            "month" => Some(MONTH),
            "day" => Some(DAY),
            "hour" => Some(HOUR),
            "minute" => Some(MINUTE),
            "second" => Some(SECOND),
            _ => None,
        };
        let order = [YEAR, MONTH, DAY, HOUR, MINUTE, SECOND];
        let range = match (leading.map(field), last.map(field)) {
            (None, None) => FULL_RANGE,
            (Some(Some(f)), None) => m(f),
            (Some(Some(a)), Some(Some(b))) => {
                let (i, j) = (order.iter().position(|x| *x == a)?, order.iter().position(|x| *x == b)?);
                // PostgreSQL's grammar: YEAR TO MONTH, DAY TO HOUR|MINUTE|SECOND, HOUR TO MINUTE|SECOND, MINUTE TO SECOND.
                if j <= i || (i < 2) != (j < 2) {
                    return None;
                }
                order[i..=j].iter().fold(0, |acc, f| acc | m(*f))
            }
            _ => return None,
        };
        let precision = match precision {
            Some(p) if p > 6 => Some(6),
            p => p.map(|p| p as u32),
        };
        Some(Restriction { range, precision })
    }

    /// Whether the restriction allows every field at full precision.
    pub fn is_full(&self) -> bool {
        self.range == FULL_RANGE && self.precision.is_none()
    }

    /// The field mask and precision (-1: full), as SQL constants carry them.
    pub fn parts(&self) -> (i64, i64) {
        (i64::from(self.range), self.precision.map_or(-1, i64::from))
    }

    /// The inverse of [`Restriction::parts`].
    pub fn from_parts(range: i64, precision: i64) -> Restriction {
        Restriction { range: range as u32, precision: u32::try_from(precision).ok() }
    }
}

/// Why PostgreSQL's reader gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fail {
    BadFormat,
    FieldOverflow,
}

type Step<T> = std::result::Result<T, Fail>;

/// Reads interval text as PostgreSQL does; `sql_standard` is whether the
/// session's IntervalStyle is `sql_standard` (a leading minus then applies
/// to every field that has no sign of its own).
pub fn parse(text: &str, restriction: Restriction, sql_standard: bool) -> Result<PgInterval> {
    let decoded = match tokenize(text).and_then(|f| decode(&f, restriction.range, sql_standard)) {
        Err(Fail::BadFormat) => iso8601(text),
        other => other,
    };
    let tm = decoded.map_err(|f| match f {
        Fail::BadFormat => {
            SqlError::new(code::DATETIME_FORMAT, format!("invalid input syntax for type interval: \"{text}\""))
        }
        Fail::FieldOverflow => {
            SqlError::new(code::INTERVAL_FIELD_OVERFLOW, format!("interval field value out of range: \"{text}\""))
        }
    })?;
    let months = i64::from(tm.year) * 12 + i64::from(tm.mon);
    let months = i32::try_from(months).map_err(|_| out_of_range())?;
    Ok(restrict(PgInterval { months, days: tm.mday, micros: tm.usec }, restriction))
}

pub(crate) fn out_of_range() -> SqlError {
    SqlError::new(code::DATETIME_OVERFLOW, "interval out of range")
}

/// PostgreSQL's `AdjustIntervalForTypmod`: fields right of the last one
/// allowed are dropped, fractional seconds rounded to the precision.
pub fn restrict(mut v: PgInterval, r: Restriction) -> PgInterval {
    const H: i64 = 3_600_000_000;
    const MIN: i64 = 60_000_000;
    let range = r.range;
    if range != FULL_RANGE {
        if range == m(YEAR) {
            v.months = (v.months / 12) * 12;
        }
        if range & (m(DAY) | TIME_FIELDS) == 0 {
            v.days = 0;
        }
        if range & TIME_FIELDS == 0 {
            v.micros = 0;
        } else if range & m(SECOND) == 0 {
            let unit = if range & m(MINUTE) != 0 { MIN } else { H };
            v.micros = (v.micros / unit) * unit;
        }
    }
    if let Some(p) = r.precision.filter(|p| *p < 6) {
        let scale = 10i64.pow(6 - p);
        let offset = scale / 2;
        v.micros = if v.micros >= 0 {
            ((v.micros + offset) / scale) * scale
        } else {
            -(((-v.micros + offset) / scale) * scale)
        };
    }
    v
}

/// The interval in units Arrow's parser reads exactly (22008 when its time
/// part needs more than Arrow's 64-bit nanoseconds).
pub fn to_arrow_text(v: PgInterval) -> Result<String> {
    if v.micros.checked_mul(1000).is_none() {
        return Err(out_of_range());
    }
    Ok(format!("{} months {} days {} microseconds", v.months, v.days, v.micros))
}

// ----- fields -----

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Number,
    Time,
    Date,
    /// A signed number (PostgreSQL's DTK_TZ).
    Signed,
    Word,
    /// A signed word (`-infinity`).
    SignedWord,
}

/// PostgreSQL's limit on the fields of date/time text.
const MAX_FIELDS: usize = 25;

/// PostgreSQL's `ParseDateTime`: the text's fields, lower-cased.
fn tokenize(text: &str) -> Step<Vec<(String, Kind)>> {
    let b = text.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let mut f = String::new();
        let take = |f: &mut String, i: &mut usize| {
            f.push(b[*i].to_ascii_lowercase() as char);
            *i += 1;
        };
        let kind = if c.is_ascii_digit() {
            while at(i).is_ascii_digit() {
                take(&mut f, &mut i);
            }
            if at(i) == b':' {
                take(&mut f, &mut i);
                while at(i).is_ascii_digit() || at(i) == b':' || at(i) == b'.' {
                    take(&mut f, &mut i);
                }
                Kind::Time
            } else if matches!(at(i), b'-' | b'/' | b'.') {
                let delim = at(i);
                take(&mut f, &mut i);
                if at(i).is_ascii_digit() {
                    let mut kind = if delim == b'.' { Kind::Number } else { Kind::Date };
                    while at(i).is_ascii_digit() {
                        take(&mut f, &mut i);
                    }
                    if at(i) == delim {
                        kind = Kind::Date;
                        take(&mut f, &mut i);
                        while at(i).is_ascii_digit() || at(i) == delim {
                            take(&mut f, &mut i);
                        }
                    }
                    kind
                } else {
                    while at(i).is_ascii_alphanumeric() || at(i) == delim {
                        take(&mut f, &mut i);
                    }
                    Kind::Date
                }
            } else {
                Kind::Number
            }
        } else if c == b'.' {
            take(&mut f, &mut i);
            while at(i).is_ascii_digit() {
                take(&mut f, &mut i);
            }
            Kind::Number
        } else if c.is_ascii_alphabetic() {
            while at(i).is_ascii_alphabetic() {
                take(&mut f, &mut i);
            }
            let next = at(i);
            let is_date = matches!(next, b'-' | b'/' | b'.')
                || ((next == b'+' || next.is_ascii_digit()) && !DATE_WORDS.contains(&f.as_str()));
            if is_date {
                loop {
                    take(&mut f, &mut i);
                    let n = at(i);
                    if !(matches!(n, b'+' | b'-' | b'/' | b'_' | b'.' | b':') || n.is_ascii_alphanumeric()) {
                        break;
                    }
                }
                Kind::Date
            } else {
                Kind::Word
            }
        } else if c == b'+' || c == b'-' {
            take(&mut f, &mut i);
            while at(i).is_ascii_whitespace() {
                i += 1;
            }
            if at(i).is_ascii_digit() {
                while at(i).is_ascii_digit() || matches!(at(i), b':' | b'.' | b'-') {
                    take(&mut f, &mut i);
                }
                Kind::Signed
            } else if at(i).is_ascii_alphabetic() {
                while at(i).is_ascii_alphabetic() {
                    take(&mut f, &mut i);
                }
                Kind::SignedWord
            } else {
                return Err(Fail::BadFormat);
            }
        } else if c.is_ascii_punctuation() {
            // Other punctuation (`@`) only separates fields.
            i += 1;
            continue;
        } else {
            return Err(Fail::BadFormat);
        };
        if out.len() >= MAX_FIELDS {
            return Err(Fail::BadFormat);
        }
        out.push((f, kind));
    }
    Ok(out)
}

/// The words of PostgreSQL's date keyword table that a digit may follow
/// without the word becoming part of a date field.
const DATE_WORDS: &[&str] = &[
    "ad",
    "allballs",
    "am",
    "apr",
    "april",
    "at",
    "aug",
    "august",
    "bc",
    "d",
    "dec",
    "december",
    "dow",
    "doy",
    "epoch",
    "feb",
    "february",
    "fri",
    "friday",
    "h",
    "infinity",
    "isodow",
    "isoyear",
    "j",
    "jan",
    "january",
    "jd",
    "jul",
    "julian",
    "july",
    "jun",
    "june",
    "m",
    "mar",
    "march",
    "may",
    "mm",
    "mon",
    "monday",
    "nov",
    "november",
    "now",
    "oct",
    "october",
    "on",
    "pm",
    "s",
    "sat",
    "saturday",
    "sep",
    "sept",
    "september",
    "sun",
    "sunday",
    "t",
    "thu",
    "thur",
    "thurs",
    "thursday",
    "today",
    "tomorrow",
    "tue",
    "tues",
    "tuesday",
    "wed",
    "wednesday",
    "weds",
    "y",
    "yesterday",
    "z",
    "zulu",
];

/// What a word means in an interval.
enum Word {
    Unit(u32),
    Ago,
    /// A unit PostgreSQL knows but an interval cannot take (quarter, timezone).
    Other,
}

/// PostgreSQL's `deltatktbl`, looked up by the first ten characters.
fn unit(word: &str) -> Option<Word> {
    let key = word.get(..word.len().min(10)).unwrap_or(word);
    Some(match key {
        "ago" => Word::Ago,
        "c" | "cent" | "centuries" | "century" => Word::Unit(CENTURY),
        "d" | "day" | "days" => Word::Unit(DAY),
        "dec" | "decade" | "decades" | "decs" => Word::Unit(DECADE),
        "h" | "hour" | "hours" | "hr" | "hrs" => Word::Unit(HOUR),
        "m" | "min" | "mins" | "minute" | "minutes" => Word::Unit(MINUTE),
        "microsecon" | "us" | "usec" | "microsecond" | "useconds" | "usecs" => Word::Unit(MICROSECOND),
        "mil" | "millennia" | "millennium" | "mils" => Word::Unit(MILLENNIUM),
        "millisecon" | "ms" | "msec" | "millisecond" | "mseconds" | "msecs" => Word::Unit(MILLISECOND),
        "mon" | "mons" | "month" | "months" => Word::Unit(MONTH),
        "s" | "sec" | "second" | "seconds" | "secs" => Word::Unit(SECOND),
        "w" | "week" | "weeks" => Word::Unit(WEEK),
        "y" | "year" | "years" | "yr" | "yrs" => Word::Unit(YEAR),
        "qtr" | "quarter" | "timezone" | "timezone_h" | "timezone_m" => Word::Other,
        _ => return None,
    })
}

/// PostgreSQL's `pg_itm_in`: the fields read so far.
#[derive(Debug, Default)]
struct Tm {
    usec: i64,
    mday: i32,
    mon: i32,
    year: i32,
}

impl Tm {
    fn fract_micros(&mut self, frac: f64, scale: i64) -> Step<()> {
        if frac == 0.0 {
            return Ok(());
        }
        let frac = frac * scale as f64;
        let mut usec = frac as i64;
        let rest = frac - usec as f64;
        if rest > 0.5 {
            usec += 1;
        } else if rest < -0.5 {
            usec -= 1;
        }
        self.usec = self.usec.checked_add(usec).ok_or(Fail::FieldOverflow)?;
        Ok(())
    }

    fn fract_days(&mut self, frac: f64, scale: i32) -> Step<()> {
        if frac == 0.0 {
            return Ok(());
        }
        let frac = frac * f64::from(scale);
        let extra = frac as i32;
        self.mday = self.mday.checked_add(extra).ok_or(Fail::FieldOverflow)?;
        self.fract_micros(frac - f64::from(extra), 86_400_000_000)
    }

    fn fract_years(&mut self, frac: f64, scale: i32) -> Step<()> {
        let extra = (frac * f64::from(scale) * 12.0).round_ties_even() as i32;
        self.mon = self.mon.checked_add(extra).ok_or(Fail::FieldOverflow)?;
        Ok(())
    }

    fn micros(&mut self, val: i64, frac: f64, scale: i64) -> Step<()> {
        let v = val.checked_mul(scale).ok_or(Fail::FieldOverflow)?;
        self.usec = self.usec.checked_add(v).ok_or(Fail::FieldOverflow)?;
        self.fract_micros(frac, scale)
    }

    fn days(&mut self, val: i64, scale: i32) -> Step<()> {
        let v = i32::try_from(val).map_err(|_| Fail::FieldOverflow)?;
        let d = v.checked_mul(scale).ok_or(Fail::FieldOverflow)?;
        self.mday = self.mday.checked_add(d).ok_or(Fail::FieldOverflow)?;
        Ok(())
    }

    fn months(&mut self, val: i64) -> Step<()> {
        let v = i32::try_from(val).map_err(|_| Fail::FieldOverflow)?;
        self.mon = self.mon.checked_add(v).ok_or(Fail::FieldOverflow)?;
        Ok(())
    }

    fn years(&mut self, val: i64, scale: i32) -> Step<()> {
        let v = i32::try_from(val).map_err(|_| Fail::FieldOverflow)?;
        let y = v.checked_mul(scale).ok_or(Fail::FieldOverflow)?;
        self.year = self.year.checked_add(y).ok_or(Fail::FieldOverflow)?;
        Ok(())
    }

    /// A number `val` + `frac` of unit `unit`; the field mask it sets.
    fn add(&mut self, unit: u32, val: i64, frac: f64) -> Step<u32> {
        Ok(match unit {
            MICROSECOND => {
                self.micros(val, frac, 1)?;
                m(MICROSECOND)
            }
            MILLISECOND => {
                self.micros(val, frac, 1000)?;
                m(MILLISECOND)
            }
            SECOND => {
                self.micros(val, frac, 1_000_000)?;
                if frac == 0.0 { m(SECOND) } else { ALL_SECS }
            }
            MINUTE => {
                self.micros(val, frac, 60_000_000)?;
                m(MINUTE)
            }
            HOUR => {
                self.micros(val, frac, 3_600_000_000)?;
                m(HOUR)
            }
            DAY => {
                self.days(val, 1)?;
                self.fract_micros(frac, 86_400_000_000)?;
                m(DAY)
            }
            WEEK => {
                self.days(val, 7)?;
                self.fract_days(frac, 7)?;
                m(WEEK)
            }
            MONTH => {
                self.months(val)?;
                self.fract_days(frac, 30)?;
                m(MONTH)
            }
            YEAR | DECADE | CENTURY | MILLENNIUM => {
                let scale = match unit {
                    YEAR => 1,
                    DECADE => 10,
                    CENTURY => 100,
                    _ => 1000,
                };
                self.years(val, scale)?;
                self.fract_years(frac, scale)?;
                m(unit)
            }
            _ => return Err(Fail::BadFormat),
        })
    }
}

/// The unit of a number without one: the last field the restriction
/// allows (seconds when it allows all).
fn default_unit(range: u32) -> u32 {
    if range == m(YEAR) {
        YEAR
    } else if range == m(MONTH) || range == m(YEAR) | m(MONTH) {
        MONTH
    } else if range == m(DAY) {
        DAY
    } else if range == m(HOUR) || range == m(DAY) | m(HOUR) {
        HOUR
    } else if range == m(MINUTE) || range == m(HOUR) | m(MINUTE) || range == m(DAY) | m(HOUR) | m(MINUTE) {
        MINUTE
    } else {
        SECOND
    }
}

/// PostgreSQL's `DecodeInterval`.
fn decode(fields: &[(String, Kind)], range: u32, sql_standard: bool) -> Step<Tm> {
    let mut tm = Tm::default();
    let mut fmask = 0u32;
    let mut unit_pending: Option<u32> = None;
    let mut parsing_unit = false;
    let mut is_before = false;
    // SQL's `-1 1:00:00` is minus one day and one hour: without other
    // signs, a leading minus applies to every field (sql_standard only).
    let force_negative = sql_standard
        && fields.first().is_some_and(|f| f.0.starts_with('-'))
        && !fields[1..].iter().any(|f| f.0.starts_with(['-', '+']));
    for (i, (field, kind)) in fields.iter().enumerate().rev() {
        let mut tmask = 0;
        // A time, or a signed one (`-2:03`); a signed field that is not a
        // time is read as a number.
        let time = match kind {
            Kind::Time => Some(time_for_interval(field, range)?),
            Kind::Signed if field[1..].contains(':') => match time_for_interval(&field[1..], range) {
                Ok((usec, mask)) if field.starts_with('-') => {
                    Some((usec.checked_neg().ok_or(Fail::FieldOverflow)?, mask))
                }
                Ok(t) => Some(t),
                Err(_) => None,
            },
            _ => None,
        };
        if let Some((usec, mask)) = time {
            tm.usec = if force_negative && usec > 0 { -usec } else { usec };
            tmask = mask;
            unit_pending = Some(DAY);
            parsing_unit = false;
        } else if matches!(kind, Kind::Word | Kind::SignedWord) {
            if parsing_unit {
                return Err(Fail::BadFormat);
            }
            match unit(field) {
                Some(Word::Unit(u)) => {
                    unit_pending = Some(u);
                    parsing_unit = true;
                }
                Some(Word::Ago) => {
                    if i != fields.len() - 1 {
                        return Err(Fail::BadFormat);
                    }
                    is_before = true;
                    // A number right before `ago` has no unit (`5 ago`).
                    unit_pending = Some(NO_UNIT);
                }
                Some(Word::Other) | None => return Err(Fail::BadFormat),
            }
        } else {
            let unit = *unit_pending.get_or_insert_with(|| default_unit(range));
            let (val, rest) = strtoi64(field)?;
            let (mut val, mut frac, unit) = if let Some(after) = rest.strip_prefix('-') {
                // SQL's years-months: `1-2`.
                let (v2, rest2) = strtoi64(after)?;
                if !(0..12).contains(&v2) {
                    return Err(Fail::FieldOverflow);
                }
                if !rest2.is_empty() {
                    return Err(Fail::BadFormat);
                }
                let v2 = if field.starts_with('-') { -v2 } else { v2 };
                let months = val.checked_mul(12).and_then(|v| v.checked_add(v2)).ok_or(Fail::FieldOverflow)?;
                unit_pending = Some(MONTH);
                (months, 0.0, MONTH)
            } else if rest.starts_with('.') {
                let frac = fraction(rest)?;
                (val, if field.starts_with('-') { -frac } else { frac }, unit)
            } else if rest.is_empty() {
                (val, 0.0, unit)
            } else {
                return Err(Fail::BadFormat);
            };
            if force_negative {
                val = -val.abs();
                frac = -frac.abs();
            }
            tmask = tm.add(unit, val, frac)?;
            if unit == HOUR {
                unit_pending = Some(DAY);
            }
            parsing_unit = false;
        }
        if tmask & fmask != 0 {
            return Err(Fail::BadFormat);
        }
        fmask |= tmask;
    }
    if fmask == 0 || parsing_unit {
        return Err(Fail::BadFormat);
    }
    if is_before {
        tm.usec = tm.usec.checked_neg().ok_or(Fail::FieldOverflow)?;
        tm.mday = tm.mday.checked_neg().ok_or(Fail::FieldOverflow)?;
        tm.mon = tm.mon.checked_neg().ok_or(Fail::FieldOverflow)?;
        tm.year = tm.year.checked_neg().ok_or(Fail::FieldOverflow)?;
    }
    Ok(tm)
}

/// PostgreSQL's `DecodeTimeForInterval`: `h:m[:s[.f]]` (or `m:s.f`) as
/// microseconds, and the fields it sets.
fn time_for_interval(s: &str, range: u32) -> Step<(i64, u32)> {
    let (hour, rest) = strtoi64(s)?;
    let rest = rest.strip_prefix(':').ok_or(Fail::BadFormat)?;
    let (min, rest) = strtoint(rest)?;
    let (hour, min, sec, fsec) = if rest.is_empty() {
        if range == m(MINUTE) | m(SECOND) {
            // A MINUTE TO SECOND interval reads `m:s`.
            (0, i64::from(i32::try_from(hour).map_err(|_| Fail::FieldOverflow)?), min, 0)
        } else {
            (hour, i64::from(min), 0, 0)
        }
    } else if rest.starts_with('.') {
        // `m:s.f` is always minutes and seconds.
        let f = fractional_second(rest)?;
        (0, i64::from(i32::try_from(hour).map_err(|_| Fail::FieldOverflow)?), min, f)
    } else if let Some(rest) = rest.strip_prefix(':') {
        let (sec, rest) = strtoint(rest)?;
        let f = if rest.is_empty() {
            0
        } else if rest.starts_with('.') {
            fractional_second(rest)?
        } else {
            return Err(Fail::BadFormat);
        };
        (hour, i64::from(min), sec, f)
    } else {
        return Err(Fail::BadFormat);
    };
    if hour < 0 || !(0..60).contains(&min) || !(0..=60).contains(&sec) || !(0..=1_000_000).contains(&fsec) {
        return Err(Fail::FieldOverflow);
    }
    let usec = (|| {
        hour.checked_mul(3_600_000_000)?
            .checked_add(min.checked_mul(60_000_000)?)?
            .checked_add(i64::from(sec) * 1_000_000)?
            .checked_add(fsec)
    })()
    .ok_or(Fail::FieldOverflow)?;
    Ok((usec, TIME_FIELDS))
}

/// C's `strtoll` in base 10: leading blanks, a sign, digits; the value and
/// the rest (no digits: zero and the whole text).
fn strtoi64(s: &str) -> Step<(i64, &str)> {
    let t = s.trim_start();
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Ok((0, s));
    }
    let mut v: i64 = 0;
    for b in body[..digits].bytes() {
        let d = i64::from(b - b'0');
        v = v
            .checked_mul(10)
            .and_then(|v| if neg { v.checked_sub(d) } else { v.checked_add(d) })
            .ok_or(Fail::FieldOverflow)?;
    }
    Ok((v, &body[digits..]))
}

/// PostgreSQL's `strtoint`: [`strtoi64`] limited to 32 bits.
fn strtoint(s: &str) -> Step<(i32, &str)> {
    let (v, rest) = strtoi64(s)?;
    Ok((i32::try_from(v).map_err(|_| Fail::FieldOverflow)?, rest))
}

/// PostgreSQL's `ParseFraction`: `.ddd` (and nothing after it) as a number.
fn fraction(s: &str) -> Step<f64> {
    if s == "." {
        return Ok(0.0);
    }
    match strtod(s) {
        Some((v, used)) if used == s.len() => Ok(v),
        _ => Err(Fail::BadFormat),
    }
}

/// PostgreSQL's `ParseFractionalSecond`: a fraction in microseconds.
fn fractional_second(s: &str) -> Step<i64> {
    Ok((fraction(s)? * 1_000_000.0).round_ties_even() as i64)
}

/// C's `strtod` on a decimal number: its value and how many bytes it used.
fn strtod(s: &str) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let lower = s[i..].to_ascii_lowercase();
    for word in ["infinity", "inf", "nan"] {
        if lower.starts_with(word) {
            let v = if word == "nan" { f64::NAN } else { f64::INFINITY };
            return Some((if b[0] == b'-' { -v } else { v }, i + word.len()));
        }
    }
    let start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut digits = i - start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let f = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        digits += i - f;
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let e = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > e {
            i = j;
        }
    }
    s[..i].parse::<f64>().ok().map(|v| (v, i))
}

// ----- ISO 8601 -----

/// PostgreSQL's `ParseISO8601Number`: a number's integer part (toward
/// zero), its fraction, and the rest of the text.
fn iso_number(s: &str) -> Step<(i64, f64, &str)> {
    if !s.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.') {
        return Err(Fail::BadFormat);
    }
    let (v, used) = strtod(s).ok_or(Fail::BadFormat)?;
    if v.is_nan() || !(-1.0e15..=1.0e15).contains(&v) {
        return Err(Fail::FieldOverflow);
    }
    let ipart = v.trunc() as i64;
    Ok((ipart, v - ipart as f64, &s[used..]))
}

/// The digits at the start of a field (after a minus).
fn integer_width(field: &str) -> usize {
    field.strip_prefix('-').unwrap_or(field).bytes().take_while(u8::is_ascii_digit).count()
}

/// PostgreSQL's `DecodeISO8601Interval`.
fn iso8601(text: &str) -> Step<Tm> {
    let mut tm = Tm::default();
    if text.len() < 2 || !text.starts_with('P') {
        return Err(Fail::BadFormat);
    }
    let mut s = &text[1..];
    let mut datepart = true;
    let mut havefield = false;
    while !s.is_empty() {
        if let Some(rest) = s.strip_prefix('T') {
            datepart = false;
            havefield = false;
            s = rest;
            continue;
        }
        let fieldstart = s;
        let (val, frac, rest) = iso_number(s)?;
        let unit = rest.as_bytes().first().copied().unwrap_or(0);
        if !unit.is_ascii() {
            return Err(Fail::BadFormat);
        }
        s = if rest.is_empty() { rest } else { &rest[1..] };
        if datepart {
            match unit {
                b'Y' => tm.add(YEAR, val, frac).map(drop)?,
                b'M' => tm.add(MONTH, val, frac).map(drop)?,
                b'W' => tm.add(WEEK, val, frac).map(drop)?,
                b'D' => tm.add(DAY, val, frac).map(drop)?,
                b'T' | 0 | b'-' => {
                    if unit != b'-' && integer_width(fieldstart) == 8 && !havefield {
                        tm.years(val / 10000, 1)?;
                        tm.months((val / 100) % 100)?;
                        tm.days(val % 100, 1)?;
                        tm.fract_micros(frac, 86_400_000_000)?;
                        if unit == 0 {
                            return Ok(tm);
                        }
                        datepart = false;
                        havefield = false;
                        continue;
                    }
                    // The extended alternative format: `Y-M-DTh:m:s`.
                    if havefield {
                        return Err(Fail::BadFormat);
                    }
                    tm.years(val, 1)?;
                    tm.fract_years(frac, 1)?;
                    if unit == 0 {
                        return Ok(tm);
                    }
                    if unit == b'T' {
                        datepart = false;
                        havefield = false;
                        continue;
                    }
                    let (val, frac, rest) = iso_number(s)?;
                    tm.months(val)?;
                    tm.fract_days(frac, 30)?;
                    s = rest;
                    if s.is_empty() {
                        return Ok(tm);
                    }
                    if let Some(rest) = s.strip_prefix('T') {
                        s = rest;
                        datepart = false;
                        havefield = false;
                        continue;
                    }
                    s = s.strip_prefix('-').ok_or(Fail::BadFormat)?;
                    let (val, frac, rest) = iso_number(s)?;
                    tm.days(val, 1)?;
                    tm.fract_micros(frac, 86_400_000_000)?;
                    s = rest;
                    if s.is_empty() {
                        return Ok(tm);
                    }
                    if let Some(rest) = s.strip_prefix('T') {
                        s = rest;
                        datepart = false;
                        havefield = false;
                        continue;
                    }
                    return Err(Fail::BadFormat);
                }
                _ => return Err(Fail::BadFormat),
            }
        } else {
            match unit {
                b'H' => tm.micros(val, frac, 3_600_000_000)?,
                b'M' => tm.micros(val, frac, 60_000_000)?,
                b'S' => tm.micros(val, frac, 1_000_000)?,
                0 | b':' => {
                    if unit == 0 && integer_width(fieldstart) == 6 && !havefield {
                        tm.micros(val / 10000, 0.0, 3_600_000_000)?;
                        tm.micros((val / 100) % 100, 0.0, 60_000_000)?;
                        tm.micros(val % 100, 0.0, 1_000_000)?;
                        tm.fract_micros(frac, 1)?;
                        return Ok(tm);
                    }
                    if havefield {
                        return Err(Fail::BadFormat);
                    }
                    tm.micros(val, frac, 3_600_000_000)?;
                    if unit == 0 {
                        return Ok(tm);
                    }
                    let (val, frac, rest) = iso_number(s)?;
                    tm.micros(val, frac, 60_000_000)?;
                    s = rest;
                    if s.is_empty() {
                        return Ok(tm);
                    }
                    s = s.strip_prefix(':').ok_or(Fail::BadFormat)?;
                    let (val, frac, rest) = iso_number(s)?;
                    tm.micros(val, frac, 1_000_000)?;
                    if rest.is_empty() {
                        return Ok(tm);
                    }
                    return Err(Fail::BadFormat);
                }
                _ => return Err(Fail::BadFormat),
            }
        }
        havefield = true;
    }
    Ok(tm)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> std::result::Result<(i32, i32, i64), &'static str> {
        parse(text, Restriction::default(), false).map(|v| (v.months, v.days, v.micros)).map_err(|e| match e.code {
            code::DATETIME_FORMAT => "22007",
            code::INTERVAL_FIELD_OVERFLOW => "22015",
            code::DATETIME_OVERFLOW => "22008",
            _ => "other",
        })
    }

    const H: i64 = 3_600_000_000;
    const S: i64 = 1_000_000;

    #[test]
    fn reads_postgres_forms() {
        assert_eq!(read("1 day 2 hours"), Ok((0, 1, 2 * H)));
        assert_eq!(read("@ 1 day 2 hours 3 mins 4 secs"), Ok((0, 1, 2 * H + 3 * 60 * S + 4 * S)));
        assert_eq!(read("-1 days +02:03"), Ok((0, -1, 2 * H + 3 * 60 * S)));
        assert_eq!(read("1 2:03:04"), Ok((0, 1, 2 * H + 3 * 60 * S + 4 * S)));
        assert_eq!(read("1-2"), Ok((14, 0, 0)));
        assert_eq!(read("1.5 weeks"), Ok((0, 10, 12 * H)));
        assert_eq!(read("2 hours 30 minutes ago"), Ok((0, 0, -(2 * H + 30 * 60 * S))));
        assert_eq!(
            read("4 millenniums 5 centuries 4 decades 1 year 4 months 4 days 17 minutes 31 seconds"),
            Ok((4541 * 12 + 4, 4, 17 * 60 * S + 31 * S))
        );
        assert_eq!(read("0.7 seconds"), Ok((0, 0, 700_000)));
        assert_eq!(read("5"), Ok((0, 0, 5 * S)));
        assert_eq!(read("1 mon -1 hour"), Ok((1, 0, -H)));
    }

    #[test]
    fn refuses_as_postgres_does() {
        assert_eq!(read("badly formatted interval"), Err("22007"));
        assert_eq!(read("@ 30 eons ago"), Err("22007"));
        assert_eq!(read("1 second 2 seconds"), Err("22007"));
        assert_eq!(read("5.5 seconds 3 milliseconds"), Err("22007"));
        assert_eq!(read("1:20:05 5 microseconds"), Err("22007"));
        assert_eq!(read("123 11"), Err("22007"));
        assert_eq!(read("2147483648 days"), Err("22015"));
        assert_eq!(read("2147483647 years"), Err("22008"));
        assert_eq!(read("2562047788.1:0:54.775807"), Err("22015"));
        assert_eq!(read("2562047788:0.1:54.775807"), Err("22007"));
    }

    #[test]
    fn reads_iso_8601() {
        assert_eq!(read("P1Y2M3DT4H5M6.7S"), Ok((14, 3, 4 * H + 5 * 60 * S + 6_700_000)));
        assert_eq!(read("P1W"), Ok((0, 7, 0)));
        assert_eq!(read("P0002-10-15T10:30:20"), Ok((34, 15, 10 * H + 30 * 60 * S + 20 * S)));
        assert_eq!(read("P00021015T103020"), Ok((34, 15, 10 * H + 30 * 60 * S + 20 * S)));
        assert_eq!(read("P0002T1S"), Ok((24, 0, S)));
        assert_eq!(read("PT10:30"), Ok((0, 0, 10 * H + 30 * 60 * S)));
        assert_eq!(read("P.Y0M3DT4H5M6S"), Err("22007"));
        assert_eq!(read("P2147483648"), Err("22015"));
    }

    #[test]
    fn restrictions_drop_and_round_fields() {
        let r = |l, t, p| Restriction::new(Some(l), t, p).unwrap();
        let v = |text, res| parse(text, res, false).map(|v| (v.months, v.days, v.micros)).ok();
        assert_eq!(v("1 2", r("day", Some("hour"), None)), Some((0, 1, 2 * H)));
        assert_eq!(v("1 2", r("day", Some("minute"), None)), None);
        assert_eq!(v("1 2:03:04", r("day", Some("minute"), None)), Some((0, 1, 2 * H + 3 * 60 * S)));
        assert_eq!(v("1 2:03", r("minute", Some("second"), None)), Some((0, 1, 2 * 60 * S + 3 * S)));
        assert_eq!(v("1.234", r("second", None, Some(2))), Some((0, 0, 1_230_000)));
        assert_eq!(v("1", r("year", Some("month"), None)), Some((1, 0, 0)));
        assert!(Restriction::new(Some("month"), Some("day"), None).is_none());
    }
}
