//! Durations as people write them in URLs and on the command line: `30s`, `1500ms`,
//! `2m`, `1h30m`, or a bare number of seconds.

use std::time::Duration;

use crate::error::{Error, Result};

/// Parse `what` (named in errors, e.g. "--wait") from text such as `30s`, `250ms`, `1m30s`
/// or `1.5s` (a part may have up to 9 decimals). A bare number is seconds, as with
/// `timeout(1)` and `sleep(1)`: `7`, `0.5`. A duration too long to represent is read as the
/// longest one, which [`check_lease`] and [`check_wait`] refuse naming their range.
pub fn parse_duration(what: &str, text: &str) -> Result<Duration> {
    let text = text.trim();
    let invalid = || {
        Error::invalid_argument(format!(
            "{what}: '{text}' is not a duration; write it like 30s, 1.5s, 250ms, 2m or 1h30m"
        ))
    };
    let number_len = |rest: &str| rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    if text.is_empty() {
        return Err(invalid());
    }
    if number_len(text) == text.len() {
        return part_nanos(text, 1_000_000_000).map(from_nanos).ok_or_else(invalid);
    }
    let mut total: u128 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = number_len(rest);
        if digits == 0 {
            return Err(invalid());
        }
        let number = &rest[..digits];
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit_nanos: u64 = match &rest[..unit_len] {
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "d" => 86_400_000_000_000,
            _ => return Err(invalid()),
        };
        rest = &rest[unit_len..];
        total = total.saturating_add(part_nanos(number, unit_nanos).ok_or_else(invalid)?);
    }
    Ok(from_nanos(total))
}

/// `number` (digits, and at most one `.` followed by up to 9 digits) of a unit of
/// `unit_nanos`, in nanoseconds, exactly (saturating far beyond any range polylock takes);
/// `None` if malformed.
fn part_nanos(number: &str, unit_nanos: u64) -> Option<u128> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let well_formed = !whole.is_empty()
        && whole.bytes().all(|b| b.is_ascii_digit())
        && fraction.bytes().all(|b| b.is_ascii_digit())
        && fraction.len() <= 9
        && !(number.contains('.') && fraction.is_empty());
    if !well_formed {
        return None;
    }
    // Only digits: a parse can fail only by overflowing, which saturates.
    let whole: u128 = whole.parse().unwrap_or(u128::MAX);
    let fraction_value: u128 = if fraction.is_empty() { 0 } else { fraction.parse().ok()? };
    let scale = 10u128.pow(fraction.len() as u32);
    Some(whole.saturating_mul(u128::from(unit_nanos)).saturating_add(fraction_value * u128::from(unit_nanos) / scale))
}

/// `nanos` as a `Duration`, or `u64::MAX` seconds (not `Duration::MAX`, which means forever
/// to [`check_wait`]) when it is longer than that.
fn from_nanos(nanos: u128) -> Duration {
    const NANOS: u128 = 1_000_000_000;
    match u64::try_from(nanos / NANOS) {
        Ok(secs) => Duration::new(secs, (nanos % NANOS) as u32),
        Err(_) => Duration::from_secs(u64::MAX),
    }
}

/// The shortest lease polylock accepts. A shorter one would end before the grant's reply is
/// back from a server on the same host, so the hold would be lost as it is handed over.
pub const MIN_LEASE: Duration = Duration::from_millis(10);

/// The longest lease, and the longest wait short of waiting forever, that every backend can
/// honour: one year. Redis's `PEXPIRE`, SQL intervals and tokio's timers all take far more,
/// but MySQL's `TIMESTAMP` (ShedLock's `lock_until`) ends in January 2038, and a limit that
/// depends on the backend would make the same call fail on one and pass on another.
pub const MAX_LEASE: Duration = Duration::from_secs(365 * 24 * 3600);

/// See [`MAX_LEASE`]. `Duration::MAX` is the one longer wait accepted, meaning forever.
pub const MAX_WAIT: Duration = MAX_LEASE;

/// `lease` if polylock can honour it on every backend, else `InvalidArgument` saying the range.
pub fn check_lease(what: &str, lease: Duration) -> Result<Duration> {
    if (MIN_LEASE..=MAX_LEASE).contains(&lease) {
        return Ok(lease);
    }
    Err(Error::invalid_argument(format!(
        "{what} must be between {}ms and {} days, got {}; omit it to let the watchdog renew the lock",
        MIN_LEASE.as_millis(),
        MAX_LEASE.as_secs() / 86_400,
        describe(lease)
    )))
}

/// `wait` if polylock can honour it (`Duration::MAX` waits forever), else `InvalidArgument`.
pub fn check_wait(what: &str, wait: Duration) -> Result<Duration> {
    if wait <= MAX_WAIT || wait == Duration::MAX {
        return Ok(wait);
    }
    Err(Error::invalid_argument(format!(
        "{what} must be at most {} days, got {}; omit it to wait until the lock is free",
        MAX_WAIT.as_secs() / 86_400,
        describe(wait)
    )))
}

/// A duration for a message: whole milliseconds, or seconds when it is long or below 1 ms.
fn describe(d: Duration) -> String {
    if d >= Duration::from_secs(1000) || (d < Duration::from_millis(1) && !d.is_zero()) {
        format!("{}s", d.as_secs_f64())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// A lease as bindings receive it: signed milliseconds from a language without unsigned
/// durations. Zero and negative leases are errors; a lease must let the holder do something.
pub fn lease_from_millis(millis: i64) -> Result<Duration> {
    if millis <= 0 {
        return Err(Error::invalid_argument(format!(
            "a lease must be positive, got {millis} ms; omit it to let the watchdog renew the lock"
        )));
    }
    check_lease("a lease", Duration::from_millis(millis as u64))
}

/// A wait as bindings receive it: negative means forever, zero means try once. A wait past
/// [`MAX_WAIT`] is refused by the acquisition, before anything is written.
pub fn wait_from_millis(millis: i64) -> Option<Duration> {
    u64::try_from(millis).ok().map(Duration::from_millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_compounds() {
        assert_eq!(parse_duration("x", "30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("x", "250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("x", "1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("x", "1m500ms").unwrap(), Duration::from_millis(60_500));
        assert_eq!(parse_duration("x", "7").unwrap(), Duration::from_secs(7));
        assert_eq!(parse_duration("x", "0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("x", "1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("x", "0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("x", "1.25m").unwrap(), Duration::from_secs(75));
        assert_eq!(parse_duration("x", "2.5ms").unwrap(), Duration::from_micros(2500));
        assert_eq!(parse_duration("x", "1h0.5m").unwrap(), Duration::from_secs(3630));
        assert_eq!(parse_duration("x", "0.000000001s").unwrap(), Duration::from_nanos(1));
        // Too long for any backend, but a duration: the range checks refuse it by its range.
        assert_eq!(parse_duration("x", "18446744073709551615").unwrap(), Duration::from_secs(u64::MAX));
        assert_eq!(parse_duration("x", "99999999999999999999999999d").unwrap(), Duration::from_secs(u64::MAX));
        assert_eq!(parse_duration("x", "999999d").unwrap(), Duration::from_secs(999_999 * 86_400));
        let huge = parse_duration("--wait", "18446744073709551615").unwrap();
        assert!(check_wait("--wait", huge).unwrap_err().to_string().contains("must be at most"));
    }

    #[test]
    fn leases_and_waits_outside_what_every_backend_honours_are_refused() {
        for lease in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_millis(9),
            MAX_LEASE + Duration::from_secs(1),
            Duration::MAX,
        ] {
            let err = check_lease("lease", lease).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument, "{lease:?}");
            assert!(err.to_string().contains("between 10ms and 365 days"), "{err}");
        }
        assert_eq!(check_lease("lease", MIN_LEASE).unwrap(), MIN_LEASE);
        assert_eq!(check_lease("lease", MAX_LEASE).unwrap(), MAX_LEASE);
        assert!(check_wait("wait", Duration::ZERO).is_ok());
        assert!(check_wait("wait", MAX_WAIT).is_ok());
        assert!(check_wait("wait", Duration::MAX).is_ok(), "Duration::MAX is forever");
        let err = check_wait("wait", Duration::from_secs(u64::MAX)).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        assert_eq!(lease_from_millis(i64::MAX).unwrap_err().kind(), crate::ErrorKind::InvalidArgument);
        assert_eq!(lease_from_millis(1).unwrap_err().kind(), crate::ErrorKind::InvalidArgument);
    }

    #[test]
    fn rejects_garbage_with_the_name() {
        for bad in ["", "s", "-5s", "5x", "ms10", "5 s", "1.s", ".5s", "1.2.3s", "0.0000000001s", "NaN"] {
            let err = parse_duration("--lease", bad).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument, "{bad}");
            assert!(err.to_string().starts_with("--lease:"), "{err}");
        }
    }

    #[test]
    fn binding_conversions() {
        assert!(lease_from_millis(0).is_err());
        assert!(lease_from_millis(-1).is_err());
        assert_eq!(lease_from_millis(1500).unwrap(), Duration::from_millis(1500));
        assert_eq!(wait_from_millis(-1), None);
        assert_eq!(wait_from_millis(0), Some(Duration::ZERO));
    }
}
