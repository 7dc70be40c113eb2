//! Durations as people write them in URLs and on the command line: `30s`, `1500ms`,
//! `2m`, `1h30m`, or a bare number of seconds.

use std::time::Duration;

use crate::error::{Error, Result};

/// Parse `what` (named in errors, e.g. "--wait") from text such as `30s`, `250ms`, `1m30s`.
/// A bare number is seconds, as with `timeout(1)` and `sleep(1)`.
pub fn parse_duration(what: &str, text: &str) -> Result<Duration> {
    let text = text.trim();
    let invalid = || {
        Error::invalid_argument(format!("{what}: '{text}' is not a duration; write it like 30s, 250ms, 2m or 1h30m"))
    };
    if text.is_empty() {
        return Err(invalid());
    }
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(invalid)?;
        if digits == 0 {
            return Err(invalid());
        }
        let value: u64 = rest[..digits].parse().map_err(|_| invalid())?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let unit_ms: u64 = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return Err(invalid()),
        };
        rest = &rest[unit_len..];
        let part = value.checked_mul(unit_ms).ok_or_else(invalid)?;
        total = total.checked_add(Duration::from_millis(part)).ok_or_else(invalid)?;
    }
    Ok(total)
}

/// A lease as bindings receive it: signed milliseconds from a language without unsigned
/// durations. Zero and negative leases are errors; a lease must let the holder do something.
pub fn lease_from_millis(millis: i64) -> Result<Duration> {
    if millis <= 0 {
        return Err(Error::invalid_argument(format!(
            "a lease must be positive, got {millis} ms; omit it to let the watchdog renew the lock"
        )));
    }
    Ok(Duration::from_millis(millis as u64))
}

/// A wait as bindings receive it: negative means forever, zero means try once.
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
    }

    #[test]
    fn rejects_garbage_with_the_name() {
        for bad in ["", "s", "-5s", "5x", "1.5s", "ms10", "5 s"] {
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
