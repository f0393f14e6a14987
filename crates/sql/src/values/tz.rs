//! Time zones: a session's `TimeZone`, and the conversions between
//! instants and the wall-clock times a zone shows.
//!
//! A `timestamptz` is an instant, kept in UTC everywhere inside Tessera
//! (storage, DataFusion, the binary wire format); the session's zone
//! applies at the edges, as in PostgreSQL: text output shows the instant
//! as the zone's wall time with its offset (`2024-07-01 12:00:00-04`),
//! text input without an offset is read as the zone's wall time, and
//! conversions to and from `timestamp`, `date` and `time`, `date_trunc`,
//! `extract` and `current_date` work in the zone (`local_time`).
//!
//! Zones are named as PostgreSQL names them: IANA names (case-insensitive,
//! shown as the database spells them), `UTC` and its aliases, a number of
//! hours (`'+02'`, `'5.5'`, `SET TIME ZONE -7`: hours *east*), and a POSIX
//! zone without summer-time rules (`'UTC+3'`, `'+05:30'`, `'<+02>-02'`:
//! hours *west*, as POSIX counts).
//!
//! A wall time that a zone shows twice (clocks set back) is read as the
//! later instant, its standard time; one a zone skips (clocks set
//! forward) is read with the offset before the change, so `02:30` on a
//! spring-forward night in Paris is `03:30+02`: both as PostgreSQL reads
//! them.

use chrono::{DateTime, Duration, NaiveDateTime, Offset, TimeZone};

use crate::error::{SqlError, code};

/// A session's time zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Zone {
    #[default]
    Utc,
    Named(chrono_tz::Tz),
    /// A fixed offset, seconds east of UTC.
    Fixed(i32),
}

const MICROS: i64 = 1_000_000;

impl From<chrono_tz::Tz> for Zone {
    fn from(tz: chrono_tz::Tz) -> Zone {
        Zone::Named(tz)
    }
}

/// Where a rule planned once per session reads the session's current zone.
pub type ZoneSource = std::sync::Arc<dyn Fn() -> Zone + Send + Sync>;

impl Zone {
    /// The zone `text` names, and its name as `SHOW TimeZone` prints it;
    /// 22023 for a name that is not a zone.
    pub fn parse(text: &str) -> Result<(Zone, String), SqlError> {
        let t = text.trim();
        let invalid = || {
            SqlError::new(code::INVALID_PARAMETER_VALUE, format!("invalid value for parameter \"TimeZone\": \"{t}\""))
        };
        if t.is_empty() {
            return Err(invalid());
        }
        let upper = t.to_ascii_uppercase();
        if matches!(upper.as_str(), "UTC" | "ETC/UTC" | "GMT" | "ETC/GMT" | "Z" | "ZULU" | "UCT" | "UNIVERSAL") {
            return Ok((Zone::Utc, if upper == "ETC/UTC" { "Etc/UTC".into() } else { upper }));
        }
        let named = t.parse::<chrono_tz::Tz>().ok().or_else(|| {
            // Names are case-insensitive, as PostgreSQL reads them.
            chrono_tz::TZ_VARIANTS.iter().copied().find(|tz| tz.name().eq_ignore_ascii_case(t))
        });
        if let Some(tz) = named {
            return Ok((Zone::Named(tz), tz.name().to_string()));
        }
        if let Some(east) = hours_offset(t) {
            let (iso, posix) = (offset_text(east), offset_text(-east));
            return Ok((Zone::Fixed(east), format!("<{iso}>{posix}")));
        }
        if let Some(east) = posix_offset(t) {
            return Ok((Zone::Fixed(east), t.to_string()));
        }
        Err(invalid())
    }

    /// The zone of a `TimeZone` setting already accepted by [`Zone::parse`].
    pub fn of_setting(name: &str) -> Zone {
        Zone::parse(name).map(|(z, _)| z).unwrap_or_default()
    }

    /// A name [`Zone::parse`] reads back as this zone.
    pub fn setting_name(&self) -> String {
        match self {
            Zone::Utc => "UTC".into(),
            Zone::Named(tz) => tz.name().into(),
            // POSIX with its name in brackets: `<+02>-02` is two hours
            // east (a bare `+02:00` would read as POSIX, hours west).
            Zone::Fixed(east) => format!("<{}>{}", offset_text(*east), offset_text(-*east)),
        }
    }

    pub fn is_utc(&self) -> bool {
        *self == Zone::Utc || *self == Zone::Fixed(0)
    }

    /// The zone's offset (seconds east of UTC) at the instant `utc` (µs).
    pub fn offset_at(&self, utc: i64) -> i32 {
        match self {
            Zone::Utc => 0,
            Zone::Fixed(east) => *east,
            Zone::Named(tz) => match naive(utc) {
                Some(n) => tz.offset_from_utc_datetime(&n).fix().local_minus_utc(),
                None => 0,
            },
        }
    }

    /// The zone's abbreviation at the instant `utc` (`EDT`, `IST`), as
    /// `to_char`'s `TZ` prints it: `UTC` for UTC; for a fixed offset, the
    /// offset (`+02`, as PostgreSQL names a zone set as a number of hours;
    /// a POSIX zone's own name, `UTC` of `UTC+3`, is not kept).
    pub fn abbreviation_at(&self, utc: i64) -> String {
        use chrono_tz::OffsetName;
        match self {
            Zone::Utc => "UTC".to_string(),
            Zone::Fixed(east) => offset_text(*east),
            Zone::Named(tz) => naive(utc)
                .and_then(|n| tz.offset_from_utc_datetime(&n).abbreviation().map(str::to_string))
                .unwrap_or_default(),
        }
    }

    /// The wall time (µs, read as if UTC) the zone shows at the instant `utc`.
    pub fn wall_time(&self, utc: i64) -> i64 {
        if crate::values::timestamp_in::is_infinite(utc) {
            return utc;
        }
        utc.saturating_add(i64::from(self.offset_at(utc)) * MICROS)
    }

    /// The instant at which the zone shows the wall time `wall` (µs).
    pub fn instant(&self, wall: i64) -> i64 {
        self.instant_with_gap(wall, false)
    }

    /// [`Zone::instant`], reading a wall time the zone skips with the
    /// offset after the change when `after` (as PostgreSQL reads an
    /// abbreviation whose meaning follows the zone's history, `MSK`).
    pub fn instant_with_gap(&self, wall: i64, after: bool) -> i64 {
        if crate::values::timestamp_in::is_infinite(wall) {
            return wall;
        }
        match self {
            Zone::Utc => wall,
            Zone::Fixed(east) => wall.saturating_sub(i64::from(*east) * MICROS),
            Zone::Named(tz) => {
                let Some(local) = naive(wall) else { return wall };
                let offset = match tz.from_local_datetime(&local) {
                    chrono::LocalResult::Single(dt) => dt.offset().fix(),
                    chrono::LocalResult::Ambiguous(_, later) => later.offset().fix(),
                    // Skipped: the offset in force before the change (or after).
                    chrono::LocalResult::None => {
                        let side = if after { Duration::hours(12) } else { -Duration::hours(12) };
                        tz.offset_from_utc_datetime(&(local + side)).fix()
                    }
                };
                wall.saturating_sub(i64::from(offset.local_minus_utc()) * MICROS)
            }
        }
    }
}

/// A timestamp's text in the form DataFusion reads (`YYYY-MM-DD
/// HH:MM:SS[.f][+HH:MM]`), from PostgreSQL's ISO forms: `T` or a blank
/// between date and time, the time without seconds (or absent), an offset
/// of `Z`, `±HH`, `±HHMM` or `±HH:MM`. A `timestamp` (`zoned` false) drops
/// the offset, as PostgreSQL ignores it. None when the text is not of
/// that shape (left for DataFusion to read or refuse).
pub fn canonical_timestamp(text: &str, zoned: bool) -> Option<String> {
    if let Some(special) = special_timestamp(text, Zone::Utc, zoned) {
        return Some(special);
    }
    iso_timestamp(text, zoned).or_else(|| crate::values::timestamps::canonical(text, zoned))
}

/// [`canonical_timestamp`] of the ISO shapes.
fn iso_timestamp(text: &str, zoned: bool) -> Option<String> {
    let t = text.trim();
    let date = t.get(..10)?;
    chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").ok()?;
    let rest = t[10..].trim_start_matches(['T', 't', ' ']);
    let split = rest.find(['+', '-', 'Z', 'z']).unwrap_or(rest.len());
    let (time, zone) = rest.split_at(split);
    let time = time.trim();
    let mut fields = time.split(':');
    let hour: u32 = match fields.next() {
        Some("") | None => 0,
        Some(h) => h.parse().ok()?,
    };
    let minute: u32 = fields.next().map_or(Some(0), |m| m.parse().ok())?;
    let second = fields.next().unwrap_or("00");
    if fields.next().is_some() || hour > 24 || minute > 59 {
        return None;
    }
    let (whole, frac) = second.split_once('.').unwrap_or((second, ""));
    let whole: u32 = whole.parse().ok()?;
    if whole > 60 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut out = format!("{date} {hour:02}:{minute:02}:{whole:02}");
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    let zone = zone.trim();
    if zone.is_empty() || !zoned {
        return Some(out);
    }
    let offset = match zone {
        "Z" | "z" => "+00:00".to_string(),
        _ => {
            let (sign, digits) = zone.split_at(1);
            let digits = digits.replace(':', "");
            let (h, m) = match digits.len() {
                1 | 2 => (digits.as_str(), "00"),
                4 => digits.split_at(2),
                _ => return None,
            };
            let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
            format!("{sign}{h:02}:{m:02}")
        }
    };
    out.push_str(&offset);
    Some(out)
}

/// A `timestamptz` text as DataFusion should read it in `zone`: with an
/// offset it is what [`canonical_timestamp`] makes of it; without one, it
/// is the zone's wall time, written as the instant in UTC. None when the
/// text is not of a shape Tessera reads (left to DataFusion).
pub fn canonical_timestamptz(text: &str, zone: Zone) -> Option<String> {
    if let Some(special) = special_timestamp(text, zone, true) {
        // A wall time of the zone (`today` is its midnight), or an instant.
        return if special.ends_with("+00:00") { Some(special) } else { canonical_timestamptz(&special, zone) };
    }
    let canonical = canonical_timestamp(text, true)?;
    // The offset, if any, follows the 19 characters of date and time.
    if zone.is_utc() || canonical.get(19..).is_some_and(|rest| rest.contains(['+', '-'])) {
        return Some(canonical);
    }
    let wall = NaiveDateTime::parse_from_str(&canonical, "%Y-%m-%d %H:%M:%S%.f").ok()?;
    let utc = naive(zone.instant(wall.and_utc().timestamp_micros()))?;
    Some(format!("{}+00:00", utc.format("%Y-%m-%d %H:%M:%S%.6f")))
}

/// PostgreSQL's special timestamp inputs in `zone`: `epoch`, `now` (for a
/// timestamptz, `zoned`, instants with `+00:00`; for a timestamp, wall
/// times) and `today`, `tomorrow`, `yesterday` (midnight of the zone's
/// date, a wall time). None for other text.
pub fn special_timestamp(text: &str, zone: Zone, zoned: bool) -> Option<String> {
    let word = text.trim().to_ascii_lowercase();
    let now = chrono::Utc::now().timestamp_micros();
    let today = DateTime::from_timestamp_micros(zone.wall_time(now))?.date_naive();
    let day = |d: chrono::NaiveDate| Some(format!("{} 00:00:00", d.format("%Y-%m-%d")));
    let offset = if zoned { "+00:00" } else { "" };
    let now_text = if zoned { naive(now)? } else { naive(zone.wall_time(now))? };
    match word.as_str() {
        "epoch" => Some(format!("1970-01-01 00:00:00{offset}")),
        "now" => Some(format!("{}{offset}", now_text.format("%Y-%m-%d %H:%M:%S%.6f"))),
        "today" => day(today),
        "tomorrow" => day(today.succ_opt()?),
        "yesterday" => day(today.pred_opt()?),
        _ => None,
    }
}

/// A date's special input (`today`, `tomorrow`, `yesterday`, `epoch`) in
/// `zone`, as `YYYY-MM-DD`.
pub fn special_date(text: &str, zone: Zone) -> Option<String> {
    let special = special_timestamp(text, zone, false)?;
    if text.trim().eq_ignore_ascii_case("now") {
        let now = chrono::Utc::now().timestamp_micros();
        return Some(DateTime::from_timestamp_micros(zone.wall_time(now))?.date_naive().format("%Y-%m-%d").to_string());
    }
    special.get(..10).map(str::to_string)
}

fn naive(micros: i64) -> Option<NaiveDateTime> {
    DateTime::from_timestamp_micros(micros).map(|d| d.naive_utc())
}

/// `+HH[:MM[:SS]]` as PostgreSQL prints an offset.
fn offset_text(secs: i32) -> String {
    let sign = if secs < 0 { "-" } else { "+" };
    let a = secs.unsigned_abs();
    let (h, m, s) = (a / 3600, a % 3600 / 60, a % 60);
    match (m, s) {
        (0, 0) => format!("{sign}{h:02}"),
        (_, 0) => format!("{sign}{h:02}:{m:02}"),
        _ => format!("{sign}{h:02}:{m:02}:{s:02}"),
    }
}

/// Appends the offset of a timestamptz's text form: `+02`, `-05:30`.
pub fn write_offset(out: &mut String, east: i32) {
    out.push_str(&offset_text(east));
}

/// A number of hours east (`+02`, `-7`, `5.5`), as seconds.
fn hours_offset(t: &str) -> Option<i32> {
    let digits = t.trim_start_matches(['+', '-']);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let hours: f64 = t.parse().ok()?;
    (hours.abs() <= 15.0).then(|| (hours * 3600.0).round() as i32)
}

/// A POSIX zone without rules: a name (letters, or `<…>`; PostgreSQL
/// allows none) and an offset west of UTC; seconds east.
pub(crate) fn posix_offset(t: &str) -> Option<i32> {
    let rest = if let Some(inner) = t.strip_prefix('<') {
        &inner[inner.find('>')? + 1..]
    } else {
        let letters = t.bytes().take_while(u8::is_ascii_alphabetic).count();
        if letters > 0 && letters < 3 {
            return None;
        }
        &t[letters..]
    };
    let west = match rest.as_bytes().first()? {
        b'+' => hms(&rest[1..])?,
        b'-' => -hms(&rest[1..])?,
        _ => hms(rest)?,
    };
    Some(-west)
}

/// `H[H][:MM[:SS]]` as seconds, hours up to 15 as PostgreSQL allows.
fn hms(t: &str) -> Option<i32> {
    let mut parts = t.split(':');
    let h: i32 = parts.next().filter(|p| (1..=2).contains(&p.len()))?.parse().ok()?;
    let m: i32 = parts.next().map_or(Some(0), |p| p.parse().ok().filter(|m| p.len() == 2 && *m < 60))?;
    let s: i32 = parts.next().map_or(Some(0), |p| p.parse().ok().filter(|s| p.len() == 2 && *s < 60))?;
    if parts.next().is_some() || h > 15 || t.chars().any(|c| !c.is_ascii_digit() && c != ':') {
        return None;
    }
    Some(h * 3600 + m * 60 + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(text: &str) -> i64 {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").unwrap().and_utc().timestamp_micros()
    }

    #[test]
    fn zones_are_named_as_postgres_names_them() {
        assert_eq!(Zone::parse("america/new_york").unwrap().1, "America/New_York");
        assert_eq!(Zone::parse("+02").unwrap(), (Zone::Fixed(7200), "<+02>-02".into()));
        assert_eq!(Zone::parse("-7").unwrap(), (Zone::Fixed(-7 * 3600), "<-07>+07".into()));
        assert_eq!(Zone::parse("5.5").unwrap(), (Zone::Fixed(19800), "<+05:30>-05:30".into()));
        // Not a number: a POSIX zone, hours west.
        assert_eq!(Zone::parse("+05:30").unwrap(), (Zone::Fixed(-19800), "+05:30".into()));
        assert_eq!(Zone::parse("UTC+3").unwrap(), (Zone::Fixed(-3 * 3600), "UTC+3".into()));
        assert_eq!(Zone::parse("<+02>-02").unwrap().0, Zone::Fixed(7200));
        assert_eq!(Zone::parse("utc").unwrap(), (Zone::Utc, "UTC".into()));
        for bad in ["Nowhere/Land", "", "+99", "EST5EDT,M3.2.0,M11.1.0", "ab"] {
            assert_eq!(Zone::parse(bad).unwrap_err().code, code::INVALID_PARAMETER_VALUE, "{bad}");
        }
    }

    #[test]
    fn wall_times_and_instants_as_postgres_reads_them() {
        let paris = Zone::parse("Europe/Paris").unwrap().0;
        assert_eq!(paris.wall_time(micros("2024-07-01 12:00:00")), micros("2024-07-01 14:00:00"));
        assert_eq!(paris.offset_at(micros("2024-01-01 12:00:00")), 3600);
        // Shown twice when clocks go back: the later instant (+01).
        assert_eq!(paris.instant(micros("2024-10-27 02:30:00")), micros("2024-10-27 01:30:00"));
        // Skipped when clocks go forward: the offset before (+01).
        assert_eq!(paris.instant(micros("2024-03-31 02:30:00")), micros("2024-03-31 01:30:00"));
        let ny = Zone::parse("America/New_York").unwrap().0;
        assert_eq!(ny.instant(micros("2024-11-03 01:30:00")), micros("2024-11-03 06:30:00"));
        assert_eq!(Zone::Fixed(-7 * 3600).instant(micros("2024-07-01 12:00:00")), micros("2024-07-01 19:00:00"));
    }

    #[test]
    fn offsets_print_as_postgres_prints_them() {
        let mut s = String::new();
        write_offset(&mut s, 19800);
        write_offset(&mut s, -4 * 3600);
        write_offset(&mut s, 5 * 3600 + 21 * 60 + 10);
        assert_eq!(s, "+05:30-04+05:21:10");
    }

    #[test]
    fn setting_names_read_back_as_the_same_zone() {
        for zone in [
            Zone::Utc,
            Zone::Fixed(7200),
            Zone::Fixed(-9000),
            Zone::Fixed(19800 + 10),
            Zone::of_setting("Europe/Paris"),
        ] {
            assert_eq!(Zone::of_setting(&zone.setting_name()), zone, "{}", zone.setting_name());
        }
    }
}
