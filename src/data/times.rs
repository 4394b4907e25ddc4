//! Dates and times as continuous values.
//!
//! A date/time column is a continuous column whose schema names a `time_format` (chrono's
//! `strftime` syntax, e.g. `%Y-%m-%d`). Its cells stay text in the table, as the file wrote
//! them; encoding reads each cell as **days since 1970-01-01** (fractional for times of
//! day), so bounds, bins, noise and clamping work on one public number line; decoding
//! writes each synthetic value back in the same format. Days, not seconds, because a
//! person editing a schema's bounds can still read them (20,000 is mid-2024).
//!
//! Time zones are not interpreted: the values are naive local times, as in the file.

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

/// The formats the inference tries, most specific first. A column is a date/time column
/// when one of them reads every present cell.
pub const CANDIDATES: [&str; 10] = [
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%d",
    "%Y/%m/%d",
    "%d/%m/%Y",
    "%m/%d/%Y",
    "%d.%m.%Y",
    "%d-%m-%Y",
];

const SECONDS_PER_DAY: f64 = 86_400.0;

fn epoch() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(1970, 1, 1)
        .unwrap_or_default()
        .and_time(NaiveTime::MIN)
}

/// True when the format carries a time of day (values are then fractional days).
pub fn has_time(format: &str) -> bool {
    ["%H", "%M", "%S", "%T", "%R", "%I", "%s", "%+"]
        .iter()
        .any(|t| format.contains(t))
}

/// Days since 1970-01-01 of `cell` read with `format`, or `None` when it does not match.
pub fn parse(cell: &str, format: &str) -> Option<f64> {
    let cell = cell.trim();
    let at = if has_time(format) {
        NaiveDateTime::parse_from_str(cell, format).ok()?
    } else {
        NaiveDate::parse_from_str(cell, format)
            .ok()?
            .and_time(NaiveTime::MIN)
    };
    let secs = (at - epoch()).num_milliseconds() as f64 / 1000.0;
    Some(secs / SECONDS_PER_DAY)
}

/// `days` since 1970-01-01 written with `format` (rounded to the second; to the day when
/// the format has no time of day). Values beyond chrono's range (±262,000 years) are
/// clamped to it, so a wild synthetic value still prints as a date.
pub fn format(days: f64, format: &str) -> String {
    let days = if days.is_finite() { days } else { 0.0 };
    let secs = (days * SECONDS_PER_DAY).round().clamp(-8.0e15, 8.0e15) as i64;
    let at = chrono::TimeDelta::try_seconds(secs)
        .and_then(|d| epoch().checked_add_signed(d))
        .unwrap_or_else(epoch);
    let at = if has_time(format) {
        at
    } else {
        // Half a day or more rounds up to the next date.
        let d = (days.round() as i64).clamp(-90_000_000, 90_000_000);
        chrono::TimeDelta::try_days(d)
            .and_then(|d| epoch().checked_add_signed(d))
            .unwrap_or(at)
    };
    at.format(format).to_string()
}

/// The first candidate format that reads every cell, when there is at least one cell.
pub fn detect<'a>(cells: impl IntoIterator<Item = &'a str> + Clone) -> Option<&'static str> {
    let mut any = cells.clone().into_iter().peekable();
    any.peek()?;
    CANDIDATES
        .into_iter()
        .find(|f| cells.clone().into_iter().all(|c| parse(c, f).is_some()))
}

/// Checks a user's format: it must be valid strftime syntax that round-trips a date.
pub fn check_format(format: &str) -> Result<(), String> {
    if format.trim().is_empty() {
        return Err("the date/time format is empty; write one such as %Y-%m-%d".into());
    }
    let items: Vec<_> = chrono::format::StrftimeItems::new(format).collect();
    if items
        .iter()
        .any(|i| matches!(i, chrono::format::Item::Error))
    {
        return Err(format!(
            "'{format}' is not a date/time format: use strftime codes such as %Y-%m-%d or %d/%m/%Y %H:%M"
        ));
    }
    let probe = 19_000.25;
    let written = self::format(probe, format);
    match parse(&written, format) {
        Some(_) => Ok(()),
        None => Err(format!(
            "the format '{format}' cannot read back what it writes ('{written}'): it needs a year, month and day"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_times_round_trip_through_days() {
        assert_eq!(parse("1970-01-02", "%Y-%m-%d"), Some(1.0));
        assert_eq!(parse("1969-12-31", "%Y-%m-%d"), Some(-1.0));
        assert_eq!(parse("1970-01-01 12:00:00", "%Y-%m-%d %H:%M:%S"), Some(0.5));
        assert_eq!(
            parse("31/12/2020", "%d/%m/%Y"),
            parse("2020-12-31", "%Y-%m-%d")
        );
        assert_eq!(parse("2020-13-01", "%Y-%m-%d"), None);
        assert_eq!(parse("hello", "%Y-%m-%d"), None);
        for (s, f) in [
            ("2024-02-29", "%Y-%m-%d"),
            ("07/04/1999", "%m/%d/%Y"),
            ("2001-09-09T01:46:40", "%Y-%m-%dT%H:%M:%S"),
            ("1850-06-15 23:59", "%Y-%m-%d %H:%M"),
        ] {
            let d = parse(s, f).unwrap();
            assert_eq!(format(d, f), s);
        }
        // Fractions of a day round to the nearest date in a date-only format.
        assert_eq!(format(1.6, "%Y-%m-%d"), "1970-01-03");
        assert_eq!(format(f64::NAN, "%Y-%m-%d"), "1970-01-01");
        assert!(!format(1e300, "%Y-%m-%d").is_empty());
    }

    #[test]
    fn detection_picks_the_format_that_reads_every_cell() {
        assert_eq!(detect(["2020-01-05", "2021-12-31"]), Some("%Y-%m-%d"));
        assert_eq!(detect(["25/12/2020", "01/01/2021"]), Some("%d/%m/%Y"));
        // 12/25 cannot be day/month: month/day reads both.
        assert_eq!(detect(["12/25/2020", "01/01/2021"]), Some("%m/%d/%Y"));
        assert_eq!(
            detect(["2020-01-05 10:00:00", "2020-01-06 11:30:00"]),
            Some("%Y-%m-%d %H:%M:%S")
        );
        assert_eq!(detect(["2020-01-05", "soon"]), None);
        assert_eq!(detect(["12", "13"]), None);
        assert_eq!(detect(std::iter::empty::<&str>()), None);
    }

    #[test]
    fn formats_are_checked() {
        assert!(check_format("%Y-%m-%d").is_ok());
        assert!(check_format("").is_err());
        assert!(check_format("%Q").is_err());
        assert!(check_format("%H:%M").is_err());
    }
}
