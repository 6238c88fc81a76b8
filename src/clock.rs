//! Wall-clock time as the agent records it: Unix seconds, and RFC 3339 UTC text for logs.
//!
//! The calendar conversion is the proleptic-Gregorian "days from civil" algorithm (as in
//! H. Hinnant's date algorithms), done in integer arithmetic: no time-zone database, no
//! allocation, valid for every `u64` second count a file could hold up to year 9999.

use core::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, now (0 if the system clock is before 1970).
pub fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Milliseconds since the Unix epoch, now.
pub fn now_unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// `d` in whole milliseconds, for messages: `d.as_millis()` as a `u64` (saturating, past 584
/// million years), so that printing it does not link `u128` formatting.
pub fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Sleeps for `d`, waking every [`HTTP_STOP_POLL_MS`](crate::limits::HTTP_STOP_POLL_MS) to ask
/// `should_stop`; `INTERRUPTED` if it said yes (a retry's wait, the pause between cycles).
pub fn sleep_unless_stopped(d: std::time::Duration, should_stop: &dyn Fn() -> bool) -> crate::error::Result<()> {
    use std::time::{Duration, Instant};
    let end = Instant::now() + d;
    loop {
        if should_stop() {
            bail!(Interrupted, "stopped while waiting {} ms", millis(d));
        }
        let now = Instant::now();
        if now >= end {
            return Ok(());
        }
        std::thread::sleep((end - now).min(Duration::from_millis(crate::limits::HTTP_STOP_POLL_MS)));
    }
}

/// A calendar date and time of day in UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Utc {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

impl Utc {
    /// The UTC calendar time of `unix` seconds.
    pub fn from_unix(unix: u64) -> Utc {
        let days = (unix / 86_400) as i64;
        let secs = (unix % 86_400) as u32;
        // Shift the epoch to 0000-03-01 so leap days fall at the end of a 400-year era.
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097); // day of era, 0..=146096
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365; // 0..=399
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // 0..=365
        let mp = (5 * doy + 2) / 153; // month from March, 0..=11
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        Utc { year, month, day, hour: secs / 3_600, minute: secs % 3_600 / 60, second: secs % 60 }
    }
}

/// RFC 3339 text, e.g. `2026-11-22T10:28:30Z`.
impl fmt::Display for Utc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

/// `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS]` with an optional `Z`, as Unix seconds (UTC).
pub fn parse_utc(t: &str) -> Option<u64> {
    let t = t.strip_suffix('Z').unwrap_or(t);
    let (date, time) = t.split_once(['T', ' ']).unwrap_or((t, "00:00:00"));
    let mut d = date.split('-').map(crate::bytes::parse_i64);
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    if d.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&day) || !(1970..=9999).contains(&y) {
        return None;
    }
    let mut c = time.split(':').map(crate::bytes::parse_u64);
    let (hh, mm, ss) = (c.next()??, c.next()??, c.next().unwrap_or(Some(0))?);
    if c.next().is_some() || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from civil (H. Hinnant), the inverse of [`Utc::from_unix`].
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = u64::try_from(era * 146_097 + doe - 719_468).ok()?;
    let secs = days * 86_400 + hh * 3_600 + mm * 60 + ss;
    // A day past the month's end (2026-02-30) comes back as another date: refused.
    let back = Utc::from_unix(secs);
    (i64::from(back.day) == day).then_some(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(unix: u64) -> String {
        Utc::from_unix(unix).to_string()
    }

    #[test]
    fn known_instants() {
        assert_eq!(text(0), "1970-01-01T00:00:00Z");
        assert_eq!(text(951_782_400), "2000-02-29T00:00:00Z"); // leap day of a /400 year
        assert_eq!(text(1_709_164_800), "2024-02-29T00:00:00Z");
        assert_eq!(text(1_798_761_599), "2026-12-31T23:59:59Z");
        assert_eq!(text(4_107_542_400), "2100-03-01T00:00:00Z"); // 2100 is not a leap year
        assert_eq!(text(253_402_300_799), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn days_advance_one_at_a_time() {
        let mut prev = Utc::from_unix(0);
        for d in 1..(366 * 30) {
            let cur = Utc::from_unix(d * 86_400);
            let next_day = cur.day == prev.day + 1 && cur.month == prev.month && cur.year == prev.year;
            let next_month = cur.day == 1 && (cur.month == prev.month + 1 || (cur.month == 1 && prev.month == 12));
            assert!(next_day || next_month, "{prev:?} -> {cur:?}");
            prev = cur;
        }
    }

    #[test]
    fn utc_dates_and_times_parse_to_unix_seconds() {
        assert_eq!(parse_utc("1970-01-01"), Some(0));
        assert_eq!(parse_utc("2026-01-31"), Some(1_769_817_600));
        assert_eq!(parse_utc("2026-01-31T08:00:00Z"), Some(1_769_817_600 + 8 * 3_600));
        assert_eq!(parse_utc("2026-01-31 08:30"), Some(1_769_817_600 + 8 * 3_600 + 30 * 60));
        for bad in ["2026-02-30", "2026-13-01", "1969-12-31", "2026-01-31T24:00", "2026-01", "7d", ""] {
            assert_eq!(parse_utc(bad), None, "{bad}");
        }
    }
}
