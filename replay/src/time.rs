//! Points in time as a user writes them for `--from`/`--to`: seconds from the start of the
//! recording, or a UTC wall-clock time, placed on the capture's monotonic clock.
//!
//! Times of day and dates without a zone are UTC, the zone `info` prints, so the result
//! never depends on the machine's time zone or locale. Where time 0 is, is the clock's
//! rule ([`crate::clock`]).

use std::fmt;
use std::str::FromStr;

use crate::clock::Clock;

/// A time the user gave that cannot be placed, or a window that holds nothing.
#[derive(Debug, thiserror::Error)]
pub enum TimeError {
    /// A `--from`/`--to` value that is neither seconds nor a time.
    #[error("invalid time '{text}': {why}")]
    Bad { text: String, why: &'static str },
    /// The time range selects nothing.
    #[error("empty time range: {0}")]
    EmptyRange(String),
    /// `--from mark:NAME` names no mark of the capture.
    #[error("no mark named '{name}' in the capture ({known}): `info` lists its marks")]
    NoMark { name: String, known: String },
    /// A wall-clock time was given but the capture lost its session header.
    #[error(
        "the capture has no session header, so the wall-clock time '{0}' cannot be placed: \
         give seconds from the start instead"
    )]
    NoClock(String),
}

const NS: i128 = 1_000_000_000;
const DAY_NS: i128 = 86_400 * NS;

/// A `--from`/`--to` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeSpec {
    /// Nanoseconds after the start of the recording.
    Offset(u64),
    /// Nanoseconds since the Unix epoch.
    Wall(i128),
    /// Nanoseconds after UTC midnight, on the day that puts it nearest the start.
    TimeOfDay(u64),
}

impl TimeSpec {
    /// The monotonic ns this names in a capture with `clock` (clamped to the clock's range).
    pub fn resolve(&self, clock: &Clock) -> Result<u64, TimeError> {
        let start = i128::from(clock.start_mono_ns);
        let mono = match *self {
            TimeSpec::Offset(ns) => start + i128::from(ns),
            TimeSpec::Wall(wall) => {
                let w0 = clock
                    .start_wall_ns
                    .ok_or_else(|| TimeError::NoClock(self.to_string()))?;
                start + wall - i128::from(w0)
            }
            TimeSpec::TimeOfDay(tod) => {
                let w0 = i128::from(
                    clock
                        .start_wall_ns
                        .ok_or_else(|| TimeError::NoClock(self.to_string()))?,
                );
                // The occurrence of that time of day within 12 hours of the start: a
                // capture that crosses midnight still reads `00:10:00` as the next day.
                let mut wall = w0 - w0.rem_euclid(DAY_NS) + i128::from(tod);
                if wall < w0 - DAY_NS / 2 {
                    wall += DAY_NS;
                } else if wall > w0 + DAY_NS / 2 {
                    wall -= DAY_NS;
                }
                start + wall - w0
            }
        };
        Ok(mono.clamp(0, i128::from(u64::MAX)) as u64)
    }
}

/// A `--from`/`--to` value as given: a time, or `mark:NAME`, the instant of the capture's
/// first mark with that text (`hotspot mark DIR NAME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum At {
    Time(TimeSpec),
    Mark(String),
}

impl At {
    /// The time this names in a capture with `clock` and `marks`: a mark becomes its
    /// offset from time 0, which every reader of the capture places alike.
    pub fn place(
        &self,
        clock: Option<&Clock>,
        marks: &[hotspot_format::Mark],
    ) -> Result<TimeSpec, TimeError> {
        let name = match self {
            At::Time(t) => return Ok(*t),
            At::Mark(name) => name,
        };
        let no_mark = || TimeError::NoMark {
            name: name.clone(),
            known: if marks.is_empty() {
                "it has none".into()
            } else {
                let names: Vec<String> = marks
                    .iter()
                    .map(|m| format!("'{}'", crate::sanitize::display(&m.text)))
                    .collect();
                format!("it has {}", names.join(", "))
            },
        };
        let mark = marks.iter().find(|m| m.text == *name).ok_or_else(no_mark)?;
        let start = clock.map_or(mark.time_ns, |c| c.start_mono_ns);
        Ok(TimeSpec::Offset(mark.time_ns.saturating_sub(start)))
    }

    /// Whether this names a mark (and so needs the capture's marks to be placed).
    pub fn is_mark(&self) -> bool {
        matches!(self, At::Mark(_))
    }
}

impl FromStr for At {
    type Err = TimeError;

    fn from_str(s: &str) -> Result<At, TimeError> {
        match s.strip_prefix("mark:") {
            Some("") => Err(bad(s, "expected a mark's text after 'mark:'")),
            Some(name) => Ok(At::Mark(name.to_string())),
            None => s.parse().map(At::Time),
        }
    }
}

fn bad(text: &str, why: &'static str) -> TimeError {
    TimeError::Bad {
        text: text.to_string(),
        why,
    }
}

impl FromStr for TimeSpec {
    type Err = TimeError;

    /// `1.5`, `1.5s`, `500ms`, `2m`; `08:30:05[.25]`; `2026-11-29T08:30:05[.25][Z|+01:00]`
    /// (a space may replace the `T`, and ` UTC` the `Z`, as `info` prints it).
    fn from_str(s: &str) -> Result<TimeSpec, TimeError> {
        let t = s.trim();
        if t.is_empty() {
            return Err(bad(s, "expected seconds from the start or a UTC time"));
        }
        if t.len() >= 10 && t.as_bytes()[4] == b'-' {
            return parse_datetime(t).map(TimeSpec::Wall).map_err(|w| bad(s, w));
        }
        if t.contains(':') {
            let tod = parse_clock(t).map_err(|w| bad(s, w))?;
            return Ok(TimeSpec::TimeOfDay(tod));
        }
        parse_offset(t).map(TimeSpec::Offset).map_err(|w| bad(s, w))
    }
}

impl fmt::Display for TimeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TimeSpec::Offset(ns) => write!(f, "{:.3} s", ns as f64 / 1e9),
            TimeSpec::Wall(ns) => f.write_str(&rfc3339(ns)),
            TimeSpec::TimeOfDay(ns) => {
                let s = ns / 1_000_000_000;
                write!(
                    f,
                    "{:02}:{:02}:{:02}.{:03} UTC",
                    s / 3600,
                    s % 3600 / 60,
                    s % 60,
                    ns % 1_000_000_000 / 1_000_000
                )
            }
        }
    }
}

fn parse_offset(t: &str) -> Result<u64, &'static str> {
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| "expected seconds from the start (1.5, 500ms, 2m) or a UTC time")?;
    let scale = match unit {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "m" | "min" => 60e9,
        _ => return Err("unknown unit: use ms, s or m"),
    };
    let ns = value * scale;
    if !ns.is_finite() || ns > 1e18 {
        return Err("out of range");
    }
    Ok(ns.round() as u64)
}

/// `HH:MM[:SS[.frac]]` → ns after midnight.
fn parse_clock(t: &str) -> Result<u64, &'static str> {
    const WHY: &str = "expected HH:MM:SS (UTC)";
    let mut parts = t.split(':');
    let h: u64 = parts.next().and_then(|p| p.parse().ok()).ok_or(WHY)?;
    let m: u64 = parts.next().and_then(|p| p.parse().ok()).ok_or(WHY)?;
    let sec_ns = match parts.next() {
        Some(p) => parse_seconds(p).ok_or(WHY)?,
        None => 0,
    };
    if parts.next().is_some() || h > 23 || m > 59 || sec_ns >= 61 * 1_000_000_000 {
        return Err(WHY);
    }
    Ok((h * 3600 + m * 60) * 1_000_000_000 + sec_ns)
}

/// `SS[.frac]` → ns; digits only.
fn parse_seconds(p: &str) -> Option<u64> {
    let (whole, frac) = p.split_once('.').unwrap_or((p, ""));
    if whole.is_empty() || whole.len() > 2 || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) || frac.len() > 9 {
        return None;
    }
    let mut ns: u64 = whole.parse().ok()?;
    ns *= 1_000_000_000;
    let mut scale = 100_000_000;
    for b in frac.bytes() {
        ns += u64::from(b - b'0') * scale;
        scale /= 10;
    }
    Some(ns)
}

/// `YYYY-MM-DD[T ]HH:MM[:SS[.frac]][Z| UTC|±HH:MM]` → Unix ns.
fn parse_datetime(t: &str) -> Result<i128, &'static str> {
    const WHY: &str = "expected YYYY-MM-DDTHH:MM:SSZ (UTC, or with a ±HH:MM offset)";
    let (date, rest) = t.split_at(10);
    let mut d = date.split('-');
    let y: i64 = d.next().and_then(|p| p.parse().ok()).ok_or(WHY)?;
    let mo: u32 = d.next().and_then(|p| p.parse().ok()).ok_or(WHY)?;
    let day: u32 = d.next().and_then(|p| p.parse().ok()).ok_or(WHY)?;
    if !(1..=12).contains(&mo) || !(1..=31).contains(&day) {
        return Err(WHY);
    }
    let rest = rest
        .strip_prefix('T')
        .or_else(|| rest.strip_prefix(' '))
        .ok_or(WHY)?;
    let (clock, offset_s): (&str, i64) = if let Some(c) = rest.strip_suffix(" UTC") {
        (c, 0)
    } else if let Some(c) = rest.strip_suffix('Z') {
        (c, 0)
    } else if rest.len() > 6 && matches!(rest.as_bytes()[rest.len() - 6], b'+' | b'-') {
        let (c, z) = rest.split_at(rest.len() - 6);
        let sign = if z.starts_with('-') { -1 } else { 1 };
        let (zh, zm) = z[1..].split_once(':').ok_or(WHY)?;
        let zh: i64 = zh.parse().map_err(|_| WHY)?;
        let zm: i64 = zm.parse().map_err(|_| WHY)?;
        (c, sign * (zh * 3600 + zm * 60))
    } else {
        (rest, 0)
    };
    let tod = parse_clock(clock)?;
    let days = days_from_civil(y, mo, day);
    Ok(i128::from(days) * DAY_NS + i128::from(tod) - i128::from(offset_s) * NS)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` of Unix ns (UTC).
pub fn rfc3339(ns: i128) -> String {
    let secs = ns.div_euclid(NS);
    let ms = ns.rem_euclid(NS) / 1_000_000;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> TimeSpec {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn offsets() {
        assert_eq!(p("1.5"), TimeSpec::Offset(1_500_000_000));
        assert_eq!(p("2s"), TimeSpec::Offset(2_000_000_000));
        assert_eq!(p("250ms"), TimeSpec::Offset(250_000_000));
        assert_eq!(p("1m"), TimeSpec::Offset(60_000_000_000));
        assert!("x".parse::<TimeSpec>().is_err());
        assert!("5h".parse::<TimeSpec>().is_err());
        assert!("-1".parse::<TimeSpec>().is_err());
    }

    #[test]
    fn wall_clock_forms_agree() {
        let want = TimeSpec::Wall(
            i128::from(days_from_civil(2026, 11, 29)) * DAY_NS + (8 * 3600 + 30 * 60 + 5) * NS,
        );
        assert_eq!(p("2026-11-29T08:30:05Z"), want);
        assert_eq!(p("2026-11-29 08:30:05 UTC"), want);
        assert_eq!(p("2026-11-29T08:30:05"), want);
        assert_eq!(p("2026-11-29T09:30:05+01:00"), want);
        assert_eq!(p("2026-11-29T08:30:05.000Z"), want);
        assert_eq!(
            p("08:30:05.25"),
            TimeSpec::TimeOfDay((8 * 3600 + 30 * 60 + 5) * 1_000_000_000 + 250_000_000)
        );
        assert!("25:00:00".parse::<TimeSpec>().is_err());
        assert!("2026-13-01T00:00:00Z".parse::<TimeSpec>().is_err());
    }

    #[test]
    fn round_trips_through_rfc3339() {
        let ns = 1_709_210_096_123_000_000i128;
        assert_eq!(rfc3339(ns), "2024-02-29T12:34:56.123Z");
        assert_eq!(p(&rfc3339(ns)), TimeSpec::Wall(ns));
    }

    #[test]
    fn time_of_day_is_placed_near_the_start() {
        // Start at 23:59:50 UTC on some day: 00:00:05 is 15 s later, the next day.
        let day0 = i128::from(days_from_civil(2026, 11, 29)) * DAY_NS;
        let start_wall = (day0 + (23 * 3600 + 59 * 60 + 50) * NS) as u64;
        let clock = Clock {
            start_mono_ns: 1_000 * 1_000_000_000,
            start_wall_ns: Some(start_wall),
        };
        let t = p("00:00:05").resolve(&clock);
        assert_eq!(t.ok(), Some(1_015 * 1_000_000_000));
        let t = p("23:59:55").resolve(&clock);
        assert_eq!(t.ok(), Some(1_005 * 1_000_000_000));
        let t = p("2s").resolve(&clock);
        assert_eq!(t.ok(), Some(1_002 * 1_000_000_000));
        let none = Clock {
            start_mono_ns: 5,
            start_wall_ns: None,
        };
        assert!(matches!(
            p("08:00:00").resolve(&none),
            Err(TimeError::NoClock(_))
        ));
    }
}
