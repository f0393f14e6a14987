//! Text read as a `timestamp` or `timestamptz`: microseconds since the
//! Unix epoch, over PostgreSQL's whole range, with its infinities.
//!
//! The forms PostgreSQL reads are first brought to one canonical text by
//! `tz` and `timestamps` (`[±]YYYY-MM-DD HH:MM:SS[.f][±HH:MM]`, the year
//! astronomical, so 1 BC is year 0); this module turns that text into the
//! value. Arrow's own reading cannot serve: it goes through nanoseconds,
//! which end in 1677 and 2262, and reads neither a year before 0 nor one
//! after 9999, so `'0097-02-16'`, `'1997-02-16 BC'` and `'9999-12-31'`
//! were refused where PostgreSQL takes them.
//!
//! `infinity` and `-infinity` are PostgreSQL's: the largest and smallest
//! 64-bit values (its `DT_NOEND` and `DT_NOBEGIN`), so they order after
//! and before every other timestamp with no special comparison, and the
//! binary wire format carries them unchanged. Finite values run from
//! 4714-11-24 BC (Julian day 0, where PostgreSQL's begin) to the last day
//! the calendar arithmetic here (chrono's) represents, year 262142;
//! PostgreSQL's go on to 294276, and a value past 262142 is refused as out
//! of range rather than misread.

use chrono::{Datelike, NaiveDate};

use crate::error::{SqlError, code};
use crate::values::tz::Zone;

/// `timestamp 'infinity'`, after every other value.
pub const INFINITY: i64 = i64::MAX;
/// `timestamp '-infinity'`, before every other value.
pub const NEG_INFINITY: i64 = i64::MIN;

const MICROS_PER_DAY: i64 = 86_400_000_000;
/// Days from 0001-01-01 (chrono's day 1 of the common era) to 1970-01-01.
const UNIX_EPOCH_CE_DAYS: i64 = 719_163;

/// Whether `micros` is one of the two infinities.
pub fn is_infinite(micros: i64) -> bool {
    micros == INFINITY || micros == NEG_INFINITY
}

/// The first microsecond PostgreSQL represents: 4714-11-24 00:00:00 BC.
pub fn min_micros() -> i64 {
    days_micros(NaiveDate::from_ymd_opt(-4713, 11, 24).expect("a date"))
}

/// The last microsecond represented here (the end of chrono's last day).
pub fn max_micros() -> i64 {
    days_micros(NaiveDate::MAX) + MICROS_PER_DAY - 1
}

fn days_micros(d: NaiveDate) -> i64 {
    (i64::from(d.num_days_from_ce()) - UNIX_EPOCH_CE_DAYS) * MICROS_PER_DAY
}

/// Whether a finite value lies in the range above.
pub fn in_range(micros: i64) -> bool {
    (min_micros()..=max_micros()).contains(&micros)
}

/// `text` as a `timestamp` (`zoned` false: any offset in it is ignored,
/// as PostgreSQL ignores it) or a `timestamptz` (an offset in the text
/// places the instant; without one the text is a wall time of `zone`).
/// 22007 for text that is no timestamp, 22008 for one out of range.
pub fn read(text: &str, zoned: bool, zone: Zone) -> Result<i64, SqlError> {
    let t = text.trim();
    match t.to_ascii_lowercase().as_str() {
        "infinity" | "+infinity" => return Ok(INFINITY),
        "-infinity" => return Ok(NEG_INFINITY),
        _ => {}
    }
    let type_name = if zoned { "timestamp with time zone" } else { "timestamp" };
    // A signed year is the canonical text itself (a BC year, or one past
    // 9999), as a constant already read once comes back.
    let signed = t.starts_with(['-', '+']) && t[1..].starts_with(|c: char| c.is_ascii_digit());
    let canonical = (if signed { Some(t.to_string()) } else { None })
        .or_else(|| crate::values::tz::special_timestamp(t, zone, zoned))
        .or_else(|| crate::values::tz::canonical_timestamp(t, zoned))
        .ok_or_else(|| {
            if before_the_first_day(t) {
                SqlError::new(code::DATETIME_OVERFLOW, format!("timestamp out of range: \"{t}\""))
            } else if crate::values::dates::out_of_range(t.split([' ', 'T']).next().unwrap_or(t))
                || field_out_of_range(t)
            {
                SqlError::new(code::DATETIME_OVERFLOW, format!("date/time field value out of range: \"{t}\""))
            } else {
                SqlError::new(code::DATETIME_FORMAT, format!("invalid input syntax for type {type_name}: \"{t}\""))
            }
        })?;
    let out_of_range = || SqlError::new(code::DATETIME_OVERFLOW, format!("timestamp out of range: \"{t}\""));
    let (wall, offset) = parse_canonical(&canonical).ok_or_else(out_of_range)?;
    let micros = match offset {
        _ if !zoned => wall,
        Some(east) => wall.checked_sub(i64::from(east) * 1_000_000).ok_or_else(out_of_range)?,
        None => zone.instant(wall),
    };
    if in_range(micros) { Ok(micros) } else { Err(out_of_range()) }
}

/// A BC date the readers refuse for lying before 4714-11-24 BC.
fn before_the_first_day(t: &str) -> bool {
    let lower = t.to_ascii_lowercase();
    lower.ends_with(" bc") && lower.bytes().any(|b| b.is_ascii_digit())
}

/// An ISO date whose month or day does not exist (`2024-13-01`,
/// `2024-02-30 10:00`): PostgreSQL's 22008, not a syntax error.
fn field_out_of_range(t: &str) -> bool {
    let b = t.as_bytes();
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |s: &str| s.parse::<u32>().ok();
    match (num(&t[..4]), num(&t[5..7]), num(&t[8..10])) {
        (Some(y), Some(m), Some(d)) => NaiveDate::from_ymd_opt(y as i32, m, d).is_none(),
        _ => false,
    }
}

/// The canonical text (`[±]Y-MM-DD HH:MM:SS[.f][±HH[:MM[:SS]]]`) as wall
/// microseconds and the offset east in seconds, if it has one. The
/// fraction is rounded to microseconds; `24:00:00` is the next midnight
/// and a 60th second the next minute, as PostgreSQL reads them.
pub fn parse_canonical(text: &str) -> Option<(i64, Option<i32>)> {
    let (negative, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (date, rest) = body.split_once([' ', 'T']).unwrap_or((body, ""));
    let mut parts = date.split('-');
    let year: i32 = parts.next()?.parse().ok()?;
    let month: u32 = parts.next()?.parse().ok()?;
    let day: u32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() {
        return None;
    }
    let year = if negative { -year } else { year };
    let day_start = days_micros(NaiveDate::from_ymd_opt(year, month, day)?);
    let split = rest.find(['+', '-']).unwrap_or(rest.len());
    let (clock, offset) = rest.split_at(split);
    let clock = clock.trim();
    let time = if clock.is_empty() { 0 } else { clock_micros(clock)? };
    let offset = if offset.is_empty() { None } else { Some(offset_seconds(offset)?) };
    Some((day_start.checked_add(time)?, offset))
}

/// `HH:MM[:SS[.f]]` as microseconds from midnight.
fn clock_micros(clock: &str) -> Option<i64> {
    let mut fields = clock.split(':');
    let hour: i64 = fields.next()?.parse().ok()?;
    let minute: i64 = fields.next()?.parse().ok()?;
    let second = fields.next().unwrap_or("0");
    if fields.next().is_some() {
        return None;
    }
    let (whole, frac) = second.split_once('.').unwrap_or((second, ""));
    let whole: i64 = whole.parse().ok()?;
    if !frac.bytes().all(|b| b.is_ascii_digit()) || minute > 59 || whole > 60 {
        return None;
    }
    if hour > 24 || (hour == 24 && (minute > 0 || whole > 0 || frac.bytes().any(|b| b != b'0'))) {
        return None;
    }
    // The first seven digits, rounded half up at the seventh.
    let digits: String = frac.chars().chain(std::iter::repeat('0')).take(7).collect();
    let seventh: i64 = digits.parse().ok()?;
    let fraction = (seventh + 5) / 10;
    Some(((hour * 60 + minute) * 60 + whole) * 1_000_000 + fraction)
}

/// `±HH[:MM[:SS]]` (or `±HHMM`) as seconds east.
fn offset_seconds(text: &str) -> Option<i32> {
    let (sign, digits) = match text.as_bytes().first()? {
        b'+' => (1, &text[1..]),
        b'-' => (-1, &text[1..]),
        _ => return None,
    };
    let mut fields = digits.split(':');
    let first = fields.next()?;
    let (h, m) = match (first.len(), fields.next()) {
        (1 | 2, Some(m)) => (first.parse::<i32>().ok()?, m.parse::<i32>().ok()?),
        (1 | 2, None) => (first.parse::<i32>().ok()?, 0),
        (4, None) => (first[..2].parse::<i32>().ok()?, first[2..].parse::<i32>().ok()?),
        _ => return None,
    };
    let s = match fields.next() {
        Some(s) => s.parse::<i32>().ok()?,
        None => 0,
    };
    if fields.next().is_some() || h > 15 || m > 59 || s > 59 {
        return None;
    }
    Some(sign * (h * 3600 + m * 60 + s))
}

/// A year as PostgreSQL writes it (see [`crate::values::dates::write_year`])
/// for a value of `micros`, or None past the calendar's range.
pub fn year_of(micros: i64) -> Option<i32> {
    let days = micros.div_euclid(MICROS_PER_DAY) + UNIX_EPOCH_CE_DAYS;
    NaiveDate::from_num_days_from_ce_opt(i32::try_from(days).ok()?).map(|d| d.year())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(t: &str) -> Result<i64, SqlError> {
        read(t, false, Zone::Utc)
    }

    fn text(micros: i64) -> String {
        let mut s = String::new();
        crate::values::text::write_timestamp(&mut s, micros, false);
        s
    }

    #[test]
    fn reads_the_whole_range_and_the_infinities() {
        assert_eq!(ts("infinity").unwrap(), INFINITY);
        assert_eq!(ts(" -Infinity ").unwrap(), NEG_INFINITY);
        assert_eq!(text(ts("0097-02-16 17:32:01").unwrap()), "0097-02-16 17:32:01");
        assert_eq!(text(ts("1997-02-16 17:32:01 BC").unwrap()), "1997-02-16 17:32:01 BC");
        assert_eq!(text(ts("10000-03-12 21:58:48").unwrap()), "10000-03-12 21:58:48");
        assert_eq!(text(ts("9999-12-31 23:59:59.999999").unwrap()), "9999-12-31 23:59:59.999999");
        assert_eq!(text(ts("4714-11-24 00:00:00 BC").unwrap()), "4714-11-24 00:00:00 BC");
        assert_eq!(ts("4714-11-23 23:59:59 BC").unwrap_err().code, code::DATETIME_OVERFLOW);
        assert_eq!(ts("2000-01-01 00:00:00.0000005").unwrap(), ts("2000-01-01 00:00:00.000001").unwrap());
        assert_eq!(ts("2000-01-01 24:00").unwrap(), ts("2000-01-02").unwrap());
        // The canonical text of a BC year or one past 9999 reads back.
        assert_eq!(text(ts("-1996-02-16 17:32:01").unwrap()), "1997-02-16 17:32:01 BC");
        assert_eq!(text(ts("+10000-03-12 21:58:48").unwrap()), "10000-03-12 21:58:48");
    }

    #[test]
    fn offsets_place_instants_and_bad_text_is_refused() {
        let z = |t: &str| read(t, true, Zone::Utc).unwrap();
        assert_eq!(z("2024-01-01 10:00+02"), z("2024-01-01 08:00"));
        assert_eq!(z("2024-01-01 10:00:00-05:30"), z("2024-01-01 15:30"));
        assert_eq!(ts("2024-01-01 10:00+02").unwrap(), ts("2024-01-01 10:00").unwrap());
        assert_eq!(ts("hello").unwrap_err().code, code::DATETIME_FORMAT);
        assert_eq!(ts("2024-13-01").unwrap_err().code, code::DATETIME_OVERFLOW);
        assert_eq!(ts("2024-02-30 10:00").unwrap_err().code, code::DATETIME_OVERFLOW);
    }
}
