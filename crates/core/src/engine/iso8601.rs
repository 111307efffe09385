//! ISO 8601 as SpiffWorkflow's timers read it: durations (`P1Y6M1DT1H1M1.5S`, `P4W`, `PT1.5H`,
//! a `,` as decimal mark, empty designators such as `PDT1H` allowed; a fraction only on the
//! last component), date-times (naive ones are UTC here: the service's clock is UTC), and
//! recurring intervals (`R3/PT10M`, `R/PT1H`, `R2/<start>/PT1H`, `R/PT1H/<end>`).
//!
//! Years and months are calendar lengths counted from the time they are added to (one month
//! from 1 January is 31 days), as SpiffWorkflow counts them.

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, TimeZone, Utc};

/// A parsed duration, before it is laid on the calendar.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct IsoDuration {
    pub years: f64,
    pub months: f64,
    pub weeks: f64,
    pub days: f64,
    pub hours: f64,
    pub minutes: f64,
    pub seconds: f64,
}

/// `P...` (the `P` may be missing, as SpiffWorkflow allows).
pub fn parse_duration(text: &str) -> Result<IsoDuration, String> {
    let invalid = || format!("'{text}' is not an ISO 8601 duration");
    let lower = text.trim().to_ascii_lowercase().replace(',', ".");
    let body = lower.trim_start_matches('p');
    let (date_part, time_part) = match body.split_once('t') {
        Some((date, time)) => (date, Some(time)),
        None => (body, None),
    };
    let mut parsed = IsoDuration::default();
    let mut last_had_fraction = false;
    let mut read = |part: &str, designators: &[(char, u8)]| -> Result<usize, String> {
        let mut rest = part;
        let mut values = 0;
        for (designator, slot) in designators {
            let Some(at) = rest.find(*designator) else {
                continue;
            };
            let number = &rest[..at];
            rest = &rest[at + 1..];
            if number.is_empty() {
                continue; // an empty designator ("PDT1H") counts as nothing
            }
            if last_had_fraction {
                return Err(invalid());
            }
            let value: f64 = if number.bytes().all(|b| b.is_ascii_digit()) {
                number.parse().map_err(|_| invalid())?
            } else if number.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                && number.matches('.').count() == 1
            {
                last_had_fraction = true;
                number.parse().map_err(|_| invalid())?
            } else {
                return Err(invalid());
            };
            let field = match slot {
                0 => &mut parsed.years,
                1 => &mut parsed.months,
                2 => &mut parsed.weeks,
                3 => &mut parsed.days,
                4 => &mut parsed.hours,
                5 => &mut parsed.minutes,
                _ => &mut parsed.seconds,
            };
            *field = value;
            values += 1;
        }
        if !rest.is_empty() {
            return Err(invalid());
        }
        Ok(values)
    };
    read(date_part, &[('y', 0), ('m', 1), ('w', 2), ('d', 3)])?;
    if let Some(time) = time_part {
        if read(time, &[('h', 4), ('m', 5), ('s', 6)])? == 0 {
            return Err(invalid()); // "P1DT": a T without a time
        }
    }
    if parsed.weeks != 0.0 && (parsed.years != 0.0 || parsed.months != 0.0 || parsed.days != 0.0) {
        return Err(invalid());
    }
    Ok(parsed)
}

impl IsoDuration {
    /// The duration laid on the calendar from `start`.
    pub fn from(&self, start: DateTime<Utc>) -> Result<Duration, String> {
        let months = self.years * 12.0 + self.months;
        // months are counted one by one below: no timer waits 10,000 years
        if !(0.0..=120_000.0).contains(&months) {
            return Err("the duration is out of range".into());
        }
        let whole = months.trunc() as i64;
        let mut days = self.days + self.weeks * 7.0;
        let (mut year, mut month) = (start.year(), start.month());
        for _ in 0..whole {
            days += f64::from(days_in_month(year, month));
            (year, month) = next_month(year, month);
        }
        days += months.fract() * f64::from(days_in_month(year, month));
        let seconds = days * 86_400.0 + self.hours * 3_600.0 + self.minutes * 60.0 + self.seconds;
        // about 9,500 years: more than any timer can wait (see `later`), and far from
        // overflowing a Duration in microseconds
        if !seconds.is_finite() || seconds.abs() > 3e11 {
            return Err("the duration is out of range".into());
        }
        Ok(Duration::microseconds((seconds * 1e6).round() as i64))
    }
}

/// `at + by`, refused past what a timer can wait for (the year 9999; Postgres and the API
/// store and show no later time).
pub fn later(at: DateTime<Utc>, by: Duration) -> Result<DateTime<Utc>, String> {
    at.checked_add_signed(by)
        .filter(|t| (1..=9999).contains(&t.year()))
        .ok_or_else(|| "the time it gives is out of range (after the year 9999)".to_string())
}

fn next_month(year: i32, month: u32) -> (i32, u32) {
    if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    }
}

fn days_in_month(year: i32, month: u32) -> u32 {
    let (next_year, next) = next_month(year, month);
    let first = NaiveDate::from_ymd_opt(year, month, 1);
    let first_of_next = NaiveDate::from_ymd_opt(next_year, next, 1);
    match (first, first_of_next) {
        (Some(a), Some(b)) => (b - a).num_days() as u32,
        _ => 30,
    }
}

/// An ISO 8601 date-time, a date (midnight), with or without an offset (none: UTC).
pub fn parse_datetime(text: &str) -> Result<DateTime<Utc>, String> {
    let text = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f%:z", "%Y-%m-%d %H:%M:%S%.f%:z"] {
        if let Ok(at) = DateTime::parse_from_str(text, format) {
            return Ok(at.with_timezone(&Utc));
        }
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(at) = NaiveDateTime::parse_from_str(text, format) {
            return Ok(Utc.from_utc_datetime(&at));
        }
    }
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0).expect("midnight")));
    }
    Err(format!("'{text}' is not an ISO 8601 date-time"))
}

/// A recurring interval: how many times (None = for ever), when first, and how far apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recurrence {
    pub repetitions: Option<u32>,
    pub first: DateTime<Utc>,
    pub interval: Duration,
}

/// `R<n>/<interval>` fires first one interval after `now` (as BPMN engines commonly do;
/// SpiffWorkflow fires at once); `R<n>/<start>/<interval>` first at `start`;
/// `R<n>/<interval>/<end>` so that the last interval ends at `end`.
pub fn parse_recurrence(text: &str, now: DateTime<Utc>) -> Result<Recurrence, String> {
    let invalid = || format!("'{text}' is not an ISO 8601 recurring interval (R<n>/<duration>)");
    let upper = text.trim().to_ascii_uppercase().replace("--", "/");
    let Some(rest) = upper.strip_prefix('R') else {
        return Err(invalid());
    };
    let parts: Vec<&str> = rest.split('/').collect();
    let repetitions = match parts[0] {
        "" => None,
        n => Some(n.parse::<u32>().map_err(|_| invalid())?),
    };
    let is_duration = |part: &str| part.starts_with('P');
    let (first, interval) = match parts[1..] {
        [duration] if is_duration(duration) => {
            let interval = parse_duration(duration)?.from(now)?;
            (later(now, interval)?, interval)
        }
        [start, duration] if !is_duration(start) && is_duration(duration) => {
            let start = parse_datetime(start)?;
            (start, parse_duration(duration)?.from(start)?)
        }
        [duration, end] if is_duration(duration) && !is_duration(end) => {
            let end = parse_datetime(end)?;
            let parsed = parse_duration(duration)?;
            // the interval that ends at `end`, counted back over the calendar
            let interval = parsed.from(later(end, -parsed.from(end)?)?)?;
            let count = i32::try_from(repetitions.unwrap_or(1)).map_err(|_| invalid())?;
            let span = interval.checked_mul(count).ok_or_else(invalid)?;
            (later(end, -span)?, interval)
        }
        _ => return Err(invalid()),
    };
    if interval <= Duration::zero() {
        return Err(format!("'{text}': the interval must be longer than zero"));
    }
    Ok(Recurrence {
        repetitions,
        first,
        interval,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> IsoDuration {
        parse_duration(text).unwrap_or_else(|e| panic!("{e}"))
    }

    /// TimeDurationParseTest.test_parse_duration, valid cases.
    #[test]
    fn durations_spiffworkflow_accepts() {
        let all = d("P1Y6M1DT1H1M1S");
        assert_eq!((all.years, all.months, all.days), (1.0, 6.0, 1.0));
        assert_eq!((all.hours, all.minutes, all.seconds), (1.0, 1.0, 1.0));
        assert_eq!(d("P1Y6M1DT1H1M1.5S").seconds, 1.5);
        let no_month = d("P1YT1H1M1S");
        assert_eq!(
            (no_month.years, no_month.months, no_month.minutes),
            (1.0, 0.0, 1.0)
        );
        let no_minutes = d("P1MT1H");
        assert_eq!(
            (no_minutes.months, no_minutes.minutes, no_minutes.hours),
            (1.0, 0.0, 1.0)
        );
        assert_eq!(d("P4W").weeks, 4.0);
        assert_eq!(d("P1Y6M1D").days, 1.0);
        assert_eq!(d("PT1H1M1S").seconds, 1.0);
        assert_eq!(d("PT1.5H").hours, 1.5);
        assert_eq!(d("T1,5H").hours, 1.5);
        assert_eq!(d("PDT1H1M1S").hours, 1.0);
        assert_eq!(d("PYMDT1H1M1S").minutes, 1.0);
    }

    /// TimeDurationParseTest.test_parse_duration, invalid cases.
    #[test]
    fn durations_spiffworkflow_refuses() {
        for text in [
            "PT1.5H30S",
            "PT1,5H30S",
            "P1H1M1S",
            "P1DT",
            "P1W1D",
            "PT1H1M1",
        ] {
            assert!(parse_duration(text).is_err(), "{text} was accepted");
        }
    }

    /// TimeDurationParseTest.test_calculate_timedelta_from_start: leap years, and adding
    /// months keeps the day of the month.
    #[test]
    fn years_and_months_follow_the_calendar() {
        let start = parse_datetime("2023-01-01").unwrap();
        let year = d("P1Y").from(start).unwrap();
        assert_eq!(year.num_days(), 365);
        assert_eq!(d("P2Y").from(start).unwrap().num_days(), 365 + 366);
        for months in 1..=12 {
            let later = start + d(&format!("P{months}M")).from(start).unwrap();
            assert_eq!(later.day(), 1, "{months} months");
        }
        assert_eq!(
            d("PT0.25S").from(start).unwrap(),
            Duration::milliseconds(250)
        );
    }

    #[test]
    fn datetimes_with_and_without_offsets() {
        let utc = parse_datetime("2026-12-01T09:00:00Z").unwrap();
        assert_eq!(parse_datetime("2026-12-01T10:00:00+01:00").unwrap(), utc);
        assert_eq!(parse_datetime("2026-12-01T09:00:00").unwrap(), utc);
        assert_eq!(parse_datetime("2026-12-01 09:00").unwrap(), utc);
        assert!(parse_datetime("next tuesday").is_err());
    }

    #[test]
    fn recurring_intervals() {
        let now = parse_datetime("2026-01-01T00:00:00Z").unwrap();
        let r = parse_recurrence("R3/PT10M", now).unwrap();
        assert_eq!(r.repetitions, Some(3));
        assert_eq!(r.first, now + Duration::minutes(10));
        assert_eq!(r.interval, Duration::minutes(10));
        assert_eq!(parse_recurrence("R/PT1H", now).unwrap().repetitions, None);
        let started = parse_recurrence("R2/2026-02-01T00:00:00Z/PT1H", now).unwrap();
        assert_eq!(started.first, parse_datetime("2026-02-01").unwrap());
        let ending = parse_recurrence("R2/PT1H/2026-01-02T00:00:00Z", now).unwrap();
        assert_eq!(
            ending.first,
            parse_datetime("2026-01-01T22:00:00Z").unwrap()
        );
        for bad in ["PT1H", "R/", "Rx/PT1H", "R2/PT0S", "R2/a/b/c"] {
            assert!(parse_recurrence(bad, now).is_err(), "{bad} was accepted");
        }
    }
}
