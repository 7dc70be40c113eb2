//! Target `duration`: the lease and duration parser (`polylock::duration`) and the URL's
//! `?lease=` option. Each result is compared with an independent reading of the documented
//! rule: `30s`, `1.5s`, `250ms`, `2m`, `1h30m`, `1d` (units ms, s, m, h, d, up to 9 decimals,
//! parts added up), or a bare number of seconds; anything else is an `InvalidArgument`
//! naming the argument, and a sum too long to represent saturates (the range checks refuse
//! it). Then the range checks (`check_lease`, `check_wait`, `lease_from_millis`,
//! `wait_from_millis`) against their documented bounds, and `mem://...?lease=<text>`
//! against the client's rule (at least 30 ms, at most 365 days).

use std::time::Duration;

use polylock::duration::{
    check_lease, check_wait, lease_from_millis, parse_duration, wait_from_millis, MAX_LEASE, MAX_WAIT, MIN_LEASE,
};
use polylock::{Client, ErrorKind};

use crate::common::{self, Reader};

pub fn run(data: &[u8]) {
    let mut r = Reader::new(data);
    let millis = r.i64();
    let raw_query = r.bool();
    let text = String::from_utf8_lossy(r.rest()).into_owned();

    let parsed = parse_duration("--lease", &text);
    match (&parsed, expected(&text)) {
        (Ok(got), Some(want)) => assert_eq!(*got, want, "{text:?}"),
        (Err(err), None) => {
            assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{text:?}: {err}");
            assert!(err.to_string().starts_with("--lease: "), "{text:?}: {err}");
        }
        (got, want) => panic!("{text:?}: parsed as {got:?}, the rule says {want:?}"),
    }
    if let Ok(duration) = parsed {
        check_ranges(duration);
    }
    check_ranges(Duration::from_millis(millis as u64));
    check_millis(millis);
    check_url_lease(&text, raw_query);
}

/// The documented rule, written independently of the parser: parts of digits (with at
/// most one `.` and up to 9 decimals) followed by a unit, added up; or one such number
/// alone, meaning seconds. A sum longer than `u64::MAX` seconds is read as `u64::MAX`
/// seconds (which every range check refuses), so only malformed text is `None`.
fn expected(text: &str) -> Option<Duration> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let is_number = |b: &u8| b.is_ascii_digit() || *b == b'.';
    let mut total_ns: u128 = 0;
    let mut rest = text.as_bytes();
    while !rest.is_empty() {
        let n = rest.iter().take_while(|b| is_number(b)).count();
        let (number, after) = rest.split_at(n);
        let u = after.iter().take_while(|b| !is_number(b)).count();
        let (unit, after) = after.split_at(u);
        let unit_ns: u128 = match unit {
            // A bare number is seconds, but only when it is the whole text.
            b"" if n == text.len() => 1_000_000_000,
            b"ms" => 1_000_000,
            b"s" => 1_000_000_000,
            b"m" => 60_000_000_000,
            b"h" => 3_600_000_000_000,
            b"d" => 86_400_000_000_000,
            _ => return None,
        };
        total_ns = total_ns.saturating_add(number_ns(number, unit_ns)?);
        rest = after;
    }
    let seconds = u64::try_from(total_ns / 1_000_000_000).unwrap_or(u64::MAX);
    let nanos = if seconds == u64::MAX && total_ns / 1_000_000_000 > u128::from(u64::MAX) {
        0
    } else {
        (total_ns % 1_000_000_000) as u32
    };
    Some(Duration::new(seconds, nanos))
}

/// `number` units of `unit_ns` nanoseconds, the fraction padded to nine digits and what
/// falls below a nanosecond dropped; `None` unless it is `digits` or `digits.digits`.
fn number_ns(number: &[u8], unit_ns: u128) -> Option<u128> {
    let text = std::str::from_utf8(number).ok()?;
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) if !fraction.is_empty() && fraction.len() <= 9 => (whole, fraction),
        Some(_) => return None,
        None => (text, ""),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) {
        return None;
    }
    // Digits only: a parse fails only past u128, which is past every range anyway.
    let whole: u128 = whole.parse().unwrap_or(u128::MAX);
    let billionths: u128 = format!("{fraction:0<9}").parse().ok()?;
    Some(whole.saturating_mul(unit_ns).saturating_add(billionths * unit_ns / 1_000_000_000))
}

fn check_ranges(d: Duration) {
    match check_lease("lease", d) {
        Ok(back) => {
            assert_eq!(back, d);
            assert!((MIN_LEASE..=MAX_LEASE).contains(&d), "{d:?} accepted as a lease");
        }
        Err(err) => {
            assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{d:?}: {err}");
            assert!(!(MIN_LEASE..=MAX_LEASE).contains(&d), "{d:?} refused as a lease: {err}");
        }
    }
    match check_wait("wait", d) {
        Ok(back) => {
            assert_eq!(back, d);
            assert!(d <= MAX_WAIT || d == Duration::MAX, "{d:?} accepted as a wait");
        }
        Err(err) => {
            assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{d:?}: {err}");
            assert!(d > MAX_WAIT && d != Duration::MAX, "{d:?} refused as a wait: {err}");
        }
    }
}

/// Leases and waits as the bindings pass them: signed milliseconds.
fn check_millis(millis: i64) {
    let in_range = millis >= MIN_LEASE.as_millis() as i64 && millis <= MAX_LEASE.as_millis() as i64;
    match lease_from_millis(millis) {
        Ok(d) => {
            assert!(in_range, "lease of {millis} ms accepted");
            assert_eq!(d, Duration::from_millis(millis as u64));
        }
        Err(err) => {
            assert!(!in_range, "lease of {millis} ms refused: {err}");
            assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        }
    }
    match wait_from_millis(millis) {
        None => assert!(millis < 0, "wait of {millis} ms read as forever"),
        Some(d) => assert_eq!(d, Duration::from_millis(millis as u64), "wait of {millis} ms"),
    }
}

/// `?lease=<text>`, percent-encoded or as typed, on a `mem://` client.
fn check_url_lease(text: &str, raw: bool) {
    let value =
        if raw { text.to_string() } else { form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>() };
    let url = format!("mem://fuzz-duration?lease={value}");
    // What the client must make of it: the query as ConnectUrl reads it (the whole URL
    // trimmed, options decoded, the last `lease` winning, no other option allowed).
    let query = url.trim().split_once('?').map_or("", |(_, q)| q);
    let mut lease_text = None;
    let mut namespace = String::new();
    let mut unknown = false;
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "lease" => lease_text = Some(value.into_owned()),
            "namespace" => namespace = value.into_owned(),
            _ => unknown = true,
        }
    }
    // An empty namespace is none; any other is a name without ':' (the keys' separator).
    let bad_namespace = !namespace.is_empty()
        && (namespace.contains(':') || namespace.contains('\0') || namespace.len() > polylock::MAX_NAME_LEN);
    let want = lease_text
        .as_deref()
        .map_or(Some(polylock::DEFAULT_WATCHDOG_LEASE), expected)
        .filter(|d| *d >= Duration::from_millis(30) && *d <= MAX_LEASE && !unknown && !bad_namespace);
    let got = common::runtime().block_on(async {
        match Client::connect(&url).await {
            Ok(client) => {
                let lease = client.watchdog_lease();
                client.close().await;
                Ok(lease)
            }
            Err(err) => Err(err),
        }
    });
    match (got, want) {
        (Ok(got), Some(want)) => assert_eq!(got, want, "{url:?}"),
        (Err(err), None) => assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{url:?}: {err}"),
        (got, want) => panic!("{url:?}: connect gave {got:?}, the rule says a lease of {want:?}"),
    }
}
