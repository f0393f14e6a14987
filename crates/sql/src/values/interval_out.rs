//! `interval` text output in PostgreSQL's four IntervalStyles (its
//! `EncodeInterval`): `postgres` (`1 year 2 mons 3 days 04:05:06`, the
//! default), `postgres_verbose` (`@ 1 year 2 mons 3 days 4 hours 5 mins 6
//! secs`), `sql_standard` (`+1-2 +3 +4:05:06`) and `iso_8601`
//! (`P1Y2M3DT4H5M6S`).

use std::fmt::Write;

/// The session's `IntervalStyle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IntervalStyle {
    #[default]
    Postgres,
    PostgresVerbose,
    SqlStandard,
    Iso8601,
}

impl IntervalStyle {
    /// The style a setting's value names (None: not a style).
    pub fn of_setting(value: &str) -> Option<IntervalStyle> {
        Some(match value.trim().to_ascii_lowercase().as_str() {
            "postgres" => IntervalStyle::Postgres,
            "postgres_verbose" => IntervalStyle::PostgresVerbose,
            "sql_standard" => IntervalStyle::SqlStandard,
            "iso_8601" => IntervalStyle::Iso8601,
            _ => return None,
        })
    }
}

/// PostgreSQL's `pg_itm`: an interval split into fields that all carry
/// its parts' signs (years and months from months, hours … microseconds
/// from the time part, each truncated toward zero).
struct Fields {
    year: i64,
    mon: i64,
    mday: i64,
    hour: i64,
    min: i64,
    sec: i64,
    fsec: i64,
}

impl Fields {
    fn of(months: i32, days: i32, micros: i64) -> Fields {
        let t = micros;
        Fields {
            year: i64::from(months / 12),
            mon: i64::from(months % 12),
            mday: i64::from(days),
            hour: t / 3_600_000_000,
            min: (t % 3_600_000_000) / 60_000_000,
            sec: (t % 60_000_000) / 1_000_000,
            fsec: t % 1_000_000,
        }
    }

    fn time_is_zero(&self) -> bool {
        self.hour == 0 && self.min == 0 && self.sec == 0 && self.fsec == 0
    }

    fn time_is_negative(&self) -> bool {
        self.hour < 0 || self.min < 0 || self.sec < 0 || self.fsec < 0
    }
}

/// Appends an interval's text in `style`.
pub fn write_interval_styled(out: &mut String, months: i32, days: i32, micros: i64, style: IntervalStyle) {
    let f = Fields::of(months, days, micros);
    match style {
        IntervalStyle::Postgres => postgres(out, &f),
        IntervalStyle::PostgresVerbose => verbose(out, &f),
        IntervalStyle::SqlStandard => sql_standard(out, f),
        IntervalStyle::Iso8601 => iso_8601(out, &f),
    }
}

/// Seconds and their fraction without trailing zeros (`AppendSeconds`);
/// `pad` writes the seconds in two digits.
fn seconds(out: &mut String, sec: i64, fsec: i64, pad: bool) {
    if pad {
        write!(out, "{:02}", sec.abs()).unwrap();
    } else {
        write!(out, "{}", sec.abs()).unwrap();
    }
    if fsec != 0 {
        let digits = format!("{:06}", fsec.abs());
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
}

fn postgres(out: &mut String, f: &Fields) {
    let mut is_zero = true;
    let mut is_before = false;
    for (value, unit) in [(f.year, "year"), (f.mon, "mon"), (f.mday, "day")] {
        if value == 0 {
            continue;
        }
        let space = if is_zero { "" } else { " " };
        let plus = if is_before && value > 0 { "+" } else { "" };
        let plural = if value != 1 { "s" } else { "" };
        write!(out, "{space}{plus}{value} {unit}{plural}").unwrap();
        // Each field sets the sign shown on the next one only.
        is_before = value < 0;
        is_zero = false;
    }
    if is_zero || !f.time_is_zero() {
        let minus = f.time_is_negative();
        let space = if is_zero { "" } else { " " };
        let sign = if minus {
            "-"
        } else if is_before {
            "+"
        } else {
            ""
        };
        write!(out, "{space}{sign}{:02}:{:02}:", f.hour.abs(), f.min.abs()).unwrap();
        seconds(out, f.sec, f.fsec, true);
    }
}

fn verbose(out: &mut String, f: &Fields) {
    let mut is_zero = true;
    let mut is_before = false;
    out.push('@');
    for (value, unit) in [(f.year, "year"), (f.mon, "mon"), (f.mday, "day"), (f.hour, "hour"), (f.min, "min")] {
        if value == 0 {
            continue;
        }
        // The first nonzero field decides "ago"; later ones show their
        // sign relative to it.
        let shown = if is_zero {
            is_before = value < 0;
            value.abs()
        } else if is_before {
            -value
        } else {
            value
        };
        write!(out, " {shown} {unit}{}", if shown == 1 { "" } else { "s" }).unwrap();
        is_zero = false;
    }
    if f.sec != 0 || f.fsec != 0 {
        out.push(' ');
        if f.sec < 0 || (f.sec == 0 && f.fsec < 0) {
            if is_zero {
                is_before = true;
            } else if !is_before {
                out.push('-');
            }
        } else if is_before {
            out.push('-');
        }
        seconds(out, f.sec, f.fsec, false);
        write!(out, " sec{}", if f.sec.abs() != 1 || f.fsec != 0 { "s" } else { "" }).unwrap();
        is_zero = false;
    }
    if is_zero {
        out.push_str(" 0");
    }
    if is_before {
        out.push_str(" ago");
    }
}

fn sql_standard(out: &mut String, mut f: Fields) {
    let all = [f.year, f.mon, f.mday, f.hour, f.min, f.sec, f.fsec];
    let has_negative = all.iter().any(|v| *v < 0);
    let has_positive = all.iter().any(|v| *v > 0);
    let has_year_month = f.year != 0 || f.mon != 0;
    let has_day_time = f.mday != 0 || !f.time_is_zero();
    let mixed = (has_negative && has_positive) || (has_year_month && has_day_time);
    let standard = !mixed;
    if has_negative && standard {
        // One sign before the whole value.
        out.push('-');
        f = Fields {
            year: -f.year,
            mon: -f.mon,
            mday: -f.mday,
            hour: -f.hour,
            min: -f.min,
            sec: -f.sec,
            fsec: -f.fsec,
        };
    }
    if !has_negative && !has_positive {
        out.push('0');
    } else if !standard {
        // Mixed signs: every part carries its own.
        let year_sign = if f.year < 0 || f.mon < 0 { '-' } else { '+' };
        let day_sign = if f.mday < 0 { '-' } else { '+' };
        let sec_sign = if f.time_is_negative() { '-' } else { '+' };
        write!(
            out,
            "{year_sign}{}-{} {day_sign}{} {sec_sign}{}:{:02}:",
            f.year.abs(),
            f.mon.abs(),
            f.mday.abs(),
            f.hour.abs(),
            f.min.abs()
        )
        .unwrap();
        seconds(out, f.sec, f.fsec, true);
    } else if has_year_month {
        write!(out, "{}-{}", f.year, f.mon).unwrap();
    } else if f.mday != 0 {
        write!(out, "{} {}:{:02}:", f.mday, f.hour, f.min).unwrap();
        seconds(out, f.sec, f.fsec, true);
    } else {
        write!(out, "{}:{:02}:", f.hour, f.min).unwrap();
        seconds(out, f.sec, f.fsec, true);
    }
}

fn iso_8601(out: &mut String, f: &Fields) {
    if f.year == 0 && f.mon == 0 && f.mday == 0 && f.time_is_zero() {
        out.push_str("PT0S");
        return;
    }
    out.push('P');
    let part = |out: &mut String, v: i64, unit: char| {
        if v != 0 {
            write!(out, "{v}{unit}").unwrap();
        }
    };
    part(out, f.year, 'Y');
    part(out, f.mon, 'M');
    part(out, f.mday, 'D');
    if !f.time_is_zero() {
        out.push('T');
    }
    part(out, f.hour, 'H');
    part(out, f.min, 'M');
    if f.sec != 0 || f.fsec != 0 {
        if f.sec < 0 || f.fsec < 0 {
            out.push('-');
        }
        seconds(out, f.sec, f.fsec, false);
        out.push('S');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(months: i32, days: i32, micros: i64, style: IntervalStyle) -> String {
        let mut s = String::new();
        write_interval_styled(&mut s, months, days, micros, style);
        s
    }

    const H: i64 = 3_600_000_000;

    #[test]
    fn four_styles_as_postgres_prints_them() {
        let t = 4 * H + 5 * 60_000_000 + 6_789_000;
        assert_eq!(show(14, -3, t, IntervalStyle::Postgres), "1 year 2 mons -3 days +04:05:06.789");
        assert_eq!(show(14, -3, t, IntervalStyle::SqlStandard), "+1-2 -3 +4:05:06.789");
        assert_eq!(show(14, -3, t, IntervalStyle::Iso8601), "P1Y2M-3DT4H5M6.789S");
        assert_eq!(
            show(14, -3, t, IntervalStyle::PostgresVerbose),
            "@ 1 year 2 mons -3 days 4 hours 5 mins 6.789 secs"
        );
        assert_eq!(show(-10, -3, -t, IntervalStyle::PostgresVerbose), "@ 10 mons 3 days 4 hours 5 mins 6.789 secs ago");
        assert_eq!(show(0, 0, 0, IntervalStyle::Postgres), "00:00:00");
        assert_eq!(show(0, 0, 0, IntervalStyle::PostgresVerbose), "@ 0");
        assert_eq!(show(0, 0, 0, IntervalStyle::SqlStandard), "0");
        assert_eq!(show(0, 0, 0, IntervalStyle::Iso8601), "PT0S");
        assert_eq!(show(-14, 0, 0, IntervalStyle::SqlStandard), "-1-2");
        assert_eq!(show(0, -1, -(2 * H + 3 * 60_000_000 + 4_000_000), IntervalStyle::SqlStandard), "-1 2:03:04");
        assert_eq!(show(0, 0, 700_000, IntervalStyle::PostgresVerbose), "@ 0.7 secs");
        assert_eq!(show(0, 0, -100_000, IntervalStyle::Iso8601), "PT-0.1S");
    }
}
