//! Dates as PostgreSQL reads and writes them (DateStyle `ISO, MDY`).
//!
//! Arrow reads only ISO dates (`1999-01-08`, astronomical years such as
//! `-2039-04-10`). PostgreSQL also reads a month by name (`January 8,
//! 1999`, `08-Jan-1999`, `1999 Jan 08`), US order with slashes or dashes
//! (`1/8/1999`, `01-08-99`), compact forms (`19990108`, `990108`), a day
//! of the year (`1999.008`), a Julian day (`J2451187`) and an era (`2040-04-10
//! BC`); two-digit years are 1970–2069 (AD). [`canonical_date`] turns those into
//! the ISO text Arrow reads, wherever a date is read from text (literals,
//! INSERT, COPY, parameters). A year before 1 is written `… BC`
//! ([`write_year`]), as PostgreSQL writes it, and a year past 9999 without
//! chrono's `+`.

use chrono::{Datelike, NaiveDate};

/// The months' names and abbreviations PostgreSQL accepts.
const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

fn month_of(word: &str) -> Option<u32> {
    let w = word.to_ascii_lowercase();
    let w = w.trim_end_matches('.');
    let full = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    full.iter()
        .position(|m| *m == w)
        .or_else(|| MONTHS.iter().position(|m| *m == w || (w == "sept" && *m == "sep")))
        .map(|i| i as u32 + 1)
}

fn weekday(word: &str) -> bool {
    let w = word.to_ascii_lowercase();
    WEEKDAYS.iter().any(|d| w.starts_with(d) && "sundaymondaytuesdaywednesdaythursdayfridaysaturday".contains(&w))
}

/// A year written with two digits or fewer is 1970–2069.
fn full_year(digits: &str, year: i32) -> i32 {
    if digits.len() > 2 {
        year
    } else if year < 70 {
        year + 2000
    } else {
        year + 1900
    }
}

/// A date in one of PostgreSQL's input forms, or None (not a date, or a
/// field out of range: the caller's ordinary error then names the text).
pub fn parse(text: &str) -> Option<NaiveDate> {
    let t = text.trim();
    if let Some(j) = t.strip_prefix(['J', 'j'])
        && let Ok(day) = j.parse::<i64>()
    {
        // Julian day 2451545 is 2000-01-01.
        return NaiveDate::from_ymd_opt(2000, 1, 1)?.checked_add_signed(chrono::TimeDelta::days(day - 2_451_545));
    }
    let mut bc = false;
    let (mut numbers, mut month): (Vec<&str>, Option<u32>) = (Vec::new(), None);
    for field in t.split(|c: char| c.is_whitespace() || matches!(c, ',' | '/' | '-')).filter(|f| !f.is_empty()) {
        match field.to_ascii_lowercase().as_str() {
            "bc" | "b.c." => bc = true,
            "ad" | "a.d." => {}
            f if f.bytes().all(|b| b.is_ascii_digit() || b == b'.') => numbers.push(field),
            _ if month.is_none() && month_of(field).is_some() => month = month_of(field),
            _ if weekday(field) => {}
            _ => return None,
        }
    }
    let num = |s: &str| s.parse::<i32>().ok();
    let (year, mo, day, year_digits) = match (month, numbers.as_slice()) {
        // 1999.008: a day of the year.
        (None, [one]) if one.contains('.') => {
            let (y, doy) = one.split_once('.')?;
            let d = NaiveDate::from_yo_opt(num(y)?, doy.parse().ok()?)?;
            (d.year(), d.month(), d.day(), y)
        }
        (None, [one]) if one.len() == 8 => {
            (num(&one[..4])?, num(&one[4..6])? as u32, num(&one[6..])? as u32, &one[..4])
        }
        (None, [one]) if one.len() == 6 => {
            (num(&one[..2])?, num(&one[2..4])? as u32, num(&one[4..])? as u32, &one[..2])
        }
        // Year first when it has three digits or more; else month, day, year.
        (None, [a, b, c]) if a.len() >= 3 => (num(a)?, num(b)? as u32, num(c)? as u32, *a),
        (None, [a, b, c]) => (num(c)?, num(a)? as u32, num(b)? as u32, *c),
        // A month by name: the first number is the year if it has three
        // digits or more, else the day (month, day, year order).
        (Some(m), [a, b]) => {
            let (y, d) = if a.len() >= 3 { (a, b) } else { (b, a) };
            (num(y)?, m, num(d)? as u32, *y)
        }
        _ => return None,
    };
    if numbers.iter().any(|n| n.contains('.')) && month.is_some() {
        return None;
    }
    // Two digits mean 1970–2069, except in a BC year.
    let year = if bc { year } else { full_year(year_digits, year) };
    // Year 1 BC is astronomical year 0.
    let year = if bc { 1 - year } else { year };
    if bc && year > 0 {
        // There is no year 0 BC.
        return None;
    }
    // PostgreSQL's dates begin at Julian day 0, 4714-11-24 BC.
    NaiveDate::from_ymd_opt(year, mo, day).filter(|d| *d >= NaiveDate::from_ymd_opt(-4713, 11, 24).expect("a date"))
}

/// Whether a word of `text` is a month's name (text with one that is no
/// date is a syntax error, 22007, unless [`out_of_range`]).
pub fn names_a_month(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric() && c != '.').any(|w| month_of(w).is_some())
}

/// Whether `text` is three numbers that name no date (`2/30/2024`):
/// PostgreSQL's 22008 rather than 22007.
pub fn out_of_range(text: &str) -> bool {
    if parse(text).is_some() {
        return false;
    }
    let fields: Vec<&str> =
        text.split(|c: char| c.is_whitespace() || matches!(c, ',' | '/' | '-')).filter(|f| !f.is_empty()).collect();
    let numeric = |f: &&str| f.bytes().all(|b| b.is_ascii_digit());
    // Three numbers, or a month name before the last of three dashed
    // fields (`99-Jan-08`, whose numbers cannot be its day and year); a
    // month name last, or among blanks, is a syntax error.
    fields.len() == 3
        && (fields.iter().all(numeric)
            || (text.contains('-')
                && fields.iter().filter(|f| numeric(f)).count() == 2
                && month_of(fields[2]).is_none()
                && fields[..2].iter().any(|f| month_of(f).is_some())))
}

/// `text` as the ISO date Arrow reads, when it is in one of PostgreSQL's
/// other forms; None when it is ISO already (or not a date at all).
pub fn canonical_date(text: &str) -> Option<String> {
    let t = text.trim();
    let iso = t.len() == 10
        && t.as_bytes()[4] == b'-'
        && t.as_bytes()[7] == b'-'
        && t[..4].bytes().all(|b| b.is_ascii_digit());
    if iso {
        return None;
    }
    let d = parse(t)?;
    let year = match d.year() {
        y if y < 0 => format!("-{:04}", -y),
        y if y > 9999 => format!("+{y}"),
        y => format!("{y:04}"),
    };
    Some(format!("{year}-{:02}-{:02}", d.month(), d.day()))
}

/// Writes `year` as PostgreSQL does: at least four digits, no sign, and
/// the era after the value (the caller appends `suffix` to the whole
/// value) when it is before year 1.
pub fn write_year(out: &mut String, year: i32) -> bool {
    use std::fmt::Write;
    let bc = year <= 0;
    let shown = if bc { 1 - year } else { year };
    write!(out, "{shown:04}").unwrap();
    bc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iso(t: &str) -> Option<String> {
        canonical_date(t).or_else(|| parse(t).map(|d| format!("{:04}-{:02}-{:02}", d.year(), d.month(), d.day())))
    }

    #[test]
    fn reads_postgresqls_date_forms() {
        for t in [
            "January 8, 1999",
            "Jan 08 1999",
            "08 Jan 1999",
            "1999-Jan-08",
            "08-Jan-1999",
            "Jan-08-1999",
            "1999 Jan 08",
            "1/8/1999",
            "01/08/1999",
            "01-08-1999",
            "1/8/99",
            "19990108",
            "990108",
            "1999.008",
            "J2451187",
            "Friday, January 8, 1999",
            "1999-01-08",
        ] {
            assert_eq!(iso(t).as_deref(), Some("1999-01-08"), "{t}");
        }
        assert_eq!(iso("01/02/03").as_deref(), Some("2003-01-02"));
        assert_eq!(iso("2040-04-10 BC").as_deref(), Some("-2039-04-10"));
        assert_eq!(iso("January 8, 99 BC").as_deref(), Some("-0098-01-08"));
        for bad in
            ["99-08-Jan", "99 Jan 08", "4714-11-23 BC", "13/1/1999", "1/32/1999", "Jan 99", "hello", "1999-02-30", ""]
        {
            assert_eq!(iso(bad), None, "{bad}");
        }
        assert_eq!(canonical_date("1999-01-08"), None);
        assert!(out_of_range("2/30/2024") && out_of_range("2024-13-01") && !out_of_range("Feb 30 2024"));
        assert!(!out_of_range("hello") && !out_of_range("2024-02-29"));
        assert_eq!(canonical_date("1/8/1999").as_deref(), Some("1999-01-08"));
    }
}
