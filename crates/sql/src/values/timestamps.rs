//! PostgreSQL's other timestamp input forms: the fields in any order, as
//! its datetime parser reads them, beyond the ISO shapes `tz.rs` reads.
//!
//! `Mon Feb 10 17:32:01 1997 PST` (its own traditional output), `Feb 10
//! 5:32PM 1997`, `1997/02/10 17:32:01-0800`, `19970210 173201 -0800`,
//! `1997FEB10 5:32:01PM UTC`, `1997.041 17:32:01 UTC`, `19970210 173201
//! America/New_York`: a weekday is ignored, the date fields are read as
//! `dates.rs` reads a date, the time may carry AM/PM and an offset, and
//! the zone is an offset, an abbreviation PostgreSQL knows by default or
//! an IANA name. The result is the canonical text DataFusion reads
//! (`YYYY-MM-DD HH:MM:SS[.f][±HH:MM]`); a `timestamp` drops the zone, as
//! PostgreSQL ignores it. Forms this does not know stay unread (None), so
//! the caller's ordinary error names the text.

use chrono::{NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone};

/// Time zone abbreviations of PostgreSQL's default set, seconds east.
const ABBREVIATIONS: &[(&str, i32)] = &[
    ("utc", 0),
    ("gmt", 0),
    ("ut", 0),
    ("z", 0),
    ("zulu", 0),
    ("est", -5 * 3600),
    ("edt", -4 * 3600),
    ("cst", -6 * 3600),
    ("cdt", -5 * 3600),
    ("mst", -7 * 3600),
    ("mdt", -6 * 3600),
    ("pst", -8 * 3600),
    ("pdt", -7 * 3600),
    ("akst", -9 * 3600),
    ("akdt", -8 * 3600),
    ("hst", -10 * 3600),
    ("ast", -4 * 3600),
    ("adt", -3 * 3600),
    ("nst", -(3 * 3600 + 1800)),
    ("ndt", -(2 * 3600 + 1800)),
    ("wet", 0),
    ("west", 3600),
    ("bst", 3600),
    ("cet", 3600),
    ("cest", 2 * 3600),
    ("met", 3600),
    ("mest", 2 * 3600),
    ("eet", 2 * 3600),
    ("eest", 3 * 3600),
    ("msk", 3 * 3600),
    ("ist", 2 * 3600),
    ("jst", 9 * 3600),
    ("kst", 9 * 3600),
    ("hkt", 8 * 3600),
    ("sgt", 8 * 3600),
    ("awst", 8 * 3600),
    ("acst", 9 * 3600 + 1800),
    ("acdt", 10 * 3600 + 1800),
    ("aest", 10 * 3600),
    ("aedt", 11 * 3600),
    ("nzst", 12 * 3600),
    ("nzdt", 13 * 3600),
];

/// Where the instant's zone comes from.
enum ZoneField {
    /// Seconds east of UTC.
    Offset(i32),
    Named(chrono_tz::Tz),
    /// An abbreviation whose offset follows a zone's history (`MSK`): a
    /// wall time the zone skips is read with the offset after the change,
    /// the abbreviation's meaning from then on.
    Abbreviated(chrono_tz::Tz),
}

fn weekday(word: &str) -> bool {
    const DAYS: [&str; 7] = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];
    let w = word.trim_end_matches([',', '.']);
    w.len() >= 3 && DAYS.iter().any(|d| d.starts_with(w))
}

/// `±H`, `±HH`, `±HHMM`, `±HH:MM` as seconds east.
fn numeric_offset(t: &str) -> Option<i32> {
    let (sign, digits) = match t.as_bytes().first()? {
        b'+' => (1, &t[1..]),
        b'-' => (-1, &t[1..]),
        _ => return None,
    };
    let digits = digits.replace(':', "");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m) = match digits.len() {
        1 | 2 => (digits.parse::<i32>().ok()?, 0),
        3 | 4 => {
            let (h, m) = digits.split_at(digits.len() - 2);
            (h.parse().ok()?, m.parse().ok()?)
        }
        _ => return None,
    };
    (h <= 15 && m < 60).then_some(sign * (h * 3600 + m * 60))
}

/// The zone a time zone abbreviation names, as PostgreSQL's default set
/// defines it: most a fixed offset, `MSK` Moscow's rules (its offset has
/// changed over the years, and PostgreSQL reads it for the date).
pub(crate) fn abbreviation_zone(word: &str) -> Option<crate::values::tz::Zone> {
    let lower = word.to_ascii_lowercase();
    if lower == "msk" {
        return Some(crate::values::tz::Zone::Named(chrono_tz::Europe::Moscow));
    }
    ABBREVIATIONS
        .iter()
        .find(|(a, _)| *a == lower)
        .map(|(_, east)| if *east == 0 { crate::values::tz::Zone::Utc } else { crate::values::tz::Zone::Fixed(*east) })
}

fn zone_word(t: &str) -> Option<ZoneField> {
    match abbreviation_zone(t) {
        Some(crate::values::tz::Zone::Named(tz)) => return Some(ZoneField::Abbreviated(tz)),
        Some(crate::values::tz::Zone::Fixed(east)) => return Some(ZoneField::Offset(east)),
        Some(crate::values::tz::Zone::Utc) => return Some(ZoneField::Offset(0)),
        None => {}
    }
    // A POSIX zone (`GMT+8`, `PST+8`, `MST+7:00`): the name is decoration,
    // the offset counts hours west.
    let letters = t.bytes().take_while(u8::is_ascii_alphabetic).count();
    if letters >= 3 && t[letters..].starts_with(['+', '-']) {
        return crate::values::tz::posix_offset(t).map(ZoneField::Offset);
    }
    if t.contains('/') && t.bytes().any(|b| b.is_ascii_alphabetic()) {
        let tz = t
            .parse::<chrono_tz::Tz>()
            .ok()
            .or_else(|| chrono_tz::TZ_VARIANTS.iter().copied().find(|tz| tz.name().eq_ignore_ascii_case(t)))?;
        return Some(ZoneField::Named(tz));
    }
    None
}

/// `H:MM[:SS[.f]]` with an optional AM/PM suffix: the time, and whether
/// a suffix said PM (Some(true)) or AM (Some(false)).
fn clock(t: &str) -> Option<(u32, u32, u32, String, Option<bool>)> {
    let lower = t.to_ascii_lowercase();
    let (body, meridiem) = if let Some(b) = lower.strip_suffix("pm") {
        (b.to_string(), Some(true))
    } else if let Some(b) = lower.strip_suffix("am") {
        (b.to_string(), Some(false))
    } else {
        (lower.clone(), None)
    };
    let mut parts = body.split(':');
    let h: u32 = parts.next()?.parse().ok()?;
    let m: u32 = parts.next().map_or(Some(0), |m| m.parse().ok())?;
    let sec = parts.next().unwrap_or("0");
    if parts.next().is_some() || (meridiem.is_none() && !body.contains(':')) {
        return None;
    }
    let (whole, frac) = sec.split_once('.').unwrap_or((sec, ""));
    let s: u32 = whole.parse().ok()?;
    if !frac.bytes().all(|b| b.is_ascii_digit()) || m > 59 || s > 60 {
        return None;
    }
    Some((h, m, s, frac.to_string(), meridiem))
}

/// Reads `text` in PostgreSQL's other forms (see the module's text).
pub fn canonical(text: &str, zoned: bool) -> Option<String> {
    let (mut date_words, mut time, mut meridiem, mut zone): (Vec<&str>, Option<_>, Option<bool>, Option<ZoneField>) =
        (Vec::new(), None, None, None);
    let mut compact_date = false;
    for word in text.split_whitespace() {
        let lower = word.to_ascii_lowercase();
        if weekday(&lower) {
            continue;
        }
        match lower.as_str() {
            "am" | "a.m." => meridiem = Some(false),
            "pm" | "p.m." => meridiem = Some(true),
            "bc" | "ad" | "b.c." | "a.d." => date_words.push(word),
            _ if time.is_none() && word.contains(':') => {
                // The time, perhaps with its offset attached (`17:32:01-0800`).
                let split = word[1..].find(['+', '-']).map(|i| i + 1);
                let (clock_text, offset) = match split {
                    Some(i) => (&word[..i], Some(&word[i..])),
                    None => (word, None),
                };
                time = Some(clock(clock_text)?);
                if let Some(o) = offset {
                    zone = Some(ZoneField::Offset(numeric_offset(o)?));
                }
            }
            _ if time.is_none() && clock(word).is_some_and(|c| c.4.is_some()) => time = clock(word),
            _ if compact_date && time.is_none() && word.len() == 6 && word.bytes().all(|b| b.is_ascii_digit()) => {
                // `19970210 173201`: HHMMSS after a compact date.
                let n = |r: std::ops::Range<usize>| word[r].parse::<u32>().ok();
                time = Some((n(0..2)?, n(2..4)?, n(4..6)?, String::new(), None));
            }
            _ if zone.is_none()
                && (word.starts_with('+') || word.starts_with('-'))
                && numeric_offset(word).is_some() =>
            {
                zone = Some(ZoneField::Offset(numeric_offset(word)?));
            }
            _ if zone.is_none() && zone_word(word).is_some() => zone = zone_word(word),
            _ => {
                compact_date |= word.len() == 8 && word.bytes().all(|b| b.is_ascii_digit());
                date_words.push(word);
            }
        }
    }
    let date = parse_date(&date_words.join(" "))?;
    let (mut h, m, s, frac, suffix) = time.unwrap_or((0, 0, 0, String::new(), None));
    match meridiem.or(suffix) {
        Some(true) if h == 0 => return None,
        Some(_) if h > 12 => return None,
        Some(true) if h < 12 => h += 12,
        Some(false) if h == 12 => h = 0,
        _ => {}
    }
    if h > 24 || (h == 24 && (m, s) != (0, 0)) {
        return None;
    }
    let mut out = format!("{} {h:02}:{m:02}:{s:02}", date.format("%Y-%m-%d"));
    if !frac.is_empty() {
        out.push('.');
        out.push_str(&frac);
    }
    if !zoned {
        return Some(out);
    }
    // Without a zone, a timestamptz is the session zone's wall time,
    // which the caller applies.
    let Some(zone) = zone else { return Some(out) };
    let east = match zone {
        ZoneField::Offset(east) => east,
        ZoneField::Named(tz) | ZoneField::Abbreviated(tz) => {
            let after = matches!(zone, ZoneField::Abbreviated(_));
            let wall = NaiveDateTime::new(date, NaiveTime::from_hms_opt(h.min(23), m, s.min(59))?);
            match tz.from_local_datetime(&wall) {
                chrono::LocalResult::Single(dt) => dt.offset().fix().local_minus_utc(),
                chrono::LocalResult::Ambiguous(_, later) => later.offset().fix().local_minus_utc(),
                chrono::LocalResult::None => {
                    let side = if after { chrono::Duration::hours(12) } else { -chrono::Duration::hours(12) };
                    tz.offset_from_utc_datetime(&(wall + side)).fix().local_minus_utc()
                }
            }
        }
    };
    let sign = if east < 0 { '-' } else { '+' };
    out.push_str(&format!("{sign}{:02}:{:02}", east.abs() / 3600, east.abs() % 3600 / 60));
    Some(out)
}

/// The date of the date fields: `dates.rs`'s forms, and `1997FEB10`.
fn parse_date(text: &str) -> Option<NaiveDate> {
    if let Some(d) = crate::values::dates::parse(text) {
        return Some(d);
    }
    // Year, month name and day run together (`97FEB10`, `1997FEB10`).
    let t = text.trim();
    let letters: Vec<usize> = t.char_indices().filter(|(_, c)| c.is_ascii_alphabetic()).map(|(i, _)| i).collect();
    let (&first, &last) = (letters.first()?, letters.last()?);
    let (year, month, day) = (&t[..first], &t[first..=last], &t[last + 1..]);
    // PostgreSQL reads a four-digit year so, not a two-digit one.
    if year.len() != 4 || day.is_empty() || !year.bytes().chain(day.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    crate::values::dates::parse(&format!("{month} {day} {year}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_postgres_forms() {
        let z = |t: &str| canonical(t, true);
        assert_eq!(z("Mon Feb 10 17:32:01 1997 PST").as_deref(), Some("1997-02-10 17:32:01-08:00"));
        assert_eq!(z("Mon Feb 10 17:32:01.5 1997 PST").as_deref(), Some("1997-02-10 17:32:01.5-08:00"));
        assert_eq!(z("Feb 10 17:32:01 1997 -0800").as_deref(), Some("1997-02-10 17:32:01-08:00"));
        assert_eq!(z("1997/02/10 17:32:01-0800").as_deref(), Some("1997-02-10 17:32:01-08:00"));
        assert_eq!(z("19970210 173201 -0800").as_deref(), Some("1997-02-10 17:32:01-08:00"));
        assert_eq!(z("1997FEB10 5:32:01PM UTC").as_deref(), Some("1997-02-10 17:32:01+00:00"));
        assert_eq!(z("97FEB10 5:32:01PM UTC"), None);
        assert_eq!(canonical("Feb 10 1997 0:30 AM", false).as_deref(), Some("1997-02-10 00:30:00"));
        assert_eq!(z("1997.041 17:32:01 UTC").as_deref(), Some("1997-02-10 17:32:01+00:00"));
        assert_eq!(z("19970210 173201 America/New_York").as_deref(), Some("1997-02-10 17:32:01-05:00"));
        assert_eq!(z("Feb-10-1997 17:32:01 PST").as_deref(), Some("1997-02-10 17:32:01-08:00"));
        assert_eq!(canonical("Feb 10 5:32PM 1997", false).as_deref(), Some("1997-02-10 17:32:00"));
        assert_eq!(canonical("Mon Feb 10 17:32:01 1997 PST", false).as_deref(), Some("1997-02-10 17:32:01"));
        assert_eq!(
            z("Feb 10 17:32:01 1997").as_deref(),
            Some("1997-02-10 17:32:01"),
            "the caller applies the session's zone"
        );
        assert_eq!(canonical("19970710 173201 America/Does_not_exist", true), None);
        assert_eq!(canonical("not a time", false), None);
        assert_eq!(canonical("Feb 30 17:32:01 1997", false), None);
    }
}
