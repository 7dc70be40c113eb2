//! UUIDv7 (RFC 9562 §5.7) with the monotonic counter of §6.2 method 1, and the 128-bit text
//! forms shared with ULID.
//!
//! ```text
//!  48 bits  unix_ts_ms
//!   4 bits  version (0111)
//!  12 bits  rand_a   = counter, high 12 bits
//!   2 bits  variant (10)
//!  62 bits  rand_b   = counter, low 30 bits | 32 random bits
//! ```
//!
//! The 42-bit counter is reseeded with 41 random bits (its top bit left 0, the rollover guard)
//! each new millisecond and counts up within one. When the clock stands still or steps back,
//! the last timestamp is kept and the counter goes on, so UUIDs from one generator only ever
//! grow; when the counter runs out, the timestamp moves one millisecond ahead of the clock and
//! the counter is reseeded (§6.2: "increment the timestamp ahead"). This is what Python 3.14's
//! `uuid.uuid7()` and the Rust `uuid` crate do.

use std::sync::Mutex;

use crate::clock::Clock;
use crate::error::{IdError, Result};
use crate::random::{random_bits, Random};

const COUNTER_BITS: u32 = 42;
const SEED_BITS: u32 = 41;
const MAX_TIMESTAMP: u64 = (1 << 48) - 1;

/// A UUIDv7 generator: monotonic across all its callers, thread-safe.
pub struct Uuid7Generator {
    clock: Box<dyn Clock>,
    random: Box<dyn Random>,
    /// (timestamp of the last UUID, its counter); `None` before the first.
    last: Mutex<Option<(u64, u64)>>,
}

impl Uuid7Generator {
    /// The system clock and the operating system's randomness.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new() -> Self {
        Self::with_sources(crate::SystemClock, crate::OsRandom)
    }

    pub fn with_sources(clock: impl Clock, random: impl Random) -> Self {
        Uuid7Generator { clock: Box::new(clock), random: Box::new(random), last: Mutex::new(None) }
    }

    /// The next UUID, greater than every earlier one from this generator.
    pub fn next(&self) -> Result<u128> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let now = self.clock.now_ms();
        let (timestamp, counter) = match *last {
            Some((last_ms, counter)) if now <= last_ms => {
                if counter + 1 < 1 << COUNTER_BITS {
                    (last_ms, counter + 1)
                } else {
                    (last_ms + 1, self.seed()?)
                }
            }
            _ => (now, self.seed()?),
        };
        if timestamp > MAX_TIMESTAMP {
            return Err(IdError::clock(format!("{timestamp} ms is past what UUIDv7's 48-bit timestamp holds")));
        }
        *last = Some((timestamp, counter));
        let tail = random_bits(&*self.random, 32)?;
        Ok(compose(timestamp, counter, tail as u32))
    }

    /// `n` UUIDs in increasing order.
    /// At most [`crate::MAX_BATCH`], else `InvalidArgument`.
    pub fn batch(&self, n: usize) -> Result<Vec<u128>> {
        crate::check_batch(n)?;
        (0..n).map(|_| self.next()).collect()
    }

    fn seed(&self) -> Result<u64> {
        Ok(random_bits(&*self.random, SEED_BITS)? as u64)
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Default for Uuid7Generator {
    fn default() -> Self {
        Self::new()
    }
}

fn compose(timestamp: u64, counter: u64, tail: u32) -> u128 {
    let rand_a = (counter >> 30) as u128 & 0xfff;
    let counter_low = counter as u128 & ((1 << 30) - 1);
    ((timestamp as u128) << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | (counter_low << 32) | tail as u128
}

/// A UUIDv7 for `timestamp_ms` with random bits and no ordering promise: for range queries
/// ("every row since"), as `uuid7_at` elsewhere.
pub fn uuid7_at(timestamp_ms: u64, random: &dyn Random) -> Result<u128> {
    if timestamp_ms > MAX_TIMESTAMP {
        return Err(IdError::invalid_argument(format!("{timestamp_ms} ms does not fit UUIDv7's 48-bit timestamp")));
    }
    let bits = random_bits(random, 74)?;
    Ok(compose(timestamp_ms, (bits >> 32) as u64 & ((1 << COUNTER_BITS) - 1), bits as u32))
}

/// The Unix milliseconds of a UUIDv7 (or of a ULID's 128 bits: the same 48 leading bits).
pub fn uuid7_timestamp_ms(uuid: u128) -> Result<u64> {
    let version = (uuid >> 76) & 0xf;
    let variant = (uuid >> 62) & 0b11;
    if version != 7 || variant != 0b10 {
        return Err(IdError::invalid_argument(format!(
            "{} is not a UUIDv7 (version {version}, variant {variant:#b})",
            format_uuid(uuid)
        )));
    }
    Ok((uuid >> 80) as u64)
}

/// The canonical text form: 36 lowercase characters, `8-4-4-4-12`.
pub fn format_uuid(uuid: u128) -> String {
    // Written digit by digit into one buffer: two `format!` calls made text 0.67x of
    // `Uuid::to_string` (bench `ids`, 2026-11-29).
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = [b'-'; 36];
    let mut digit = 0;
    for (at, slot) in text.iter_mut().enumerate() {
        if matches!(at, 8 | 13 | 18 | 23) {
            continue;
        }
        *slot = HEX[(uuid >> (124 - 4 * digit)) as usize & 0xf];
        digit += 1;
    }
    // Only ASCII hex digits and dashes were written.
    String::from_utf8(text.to_vec()).expect("ASCII")
}

/// Parse `8-4-4-4-12` hex (either case), or 32 hex digits without dashes.
pub fn parse_uuid(text: &str) -> Result<u128> {
    let bad = || IdError::invalid_argument(format!("'{text}' is not a UUID (expected 8-4-4-4-12 hex digits)"));
    let dashed = text.len() == 36 && [8, 13, 18, 23].iter().all(|&i| text.as_bytes()[i] == b'-');
    let digits: String = if dashed { text.chars().filter(|c| *c != '-').collect() } else { text.to_string() };
    if digits.len() != 32 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    u128::from_str_radix(&digits, 16).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::random::CountingRandom;
    use crate::ManualClock;

    const T: u64 = 1_700_000_000_000;

    #[test]
    fn layout_version_variant_and_timestamp() {
        let generator = Uuid7Generator::with_sources(ManualClock::new(T), CountingRandom::new(7));
        let uuid = generator.next().unwrap();
        assert_eq!(uuid7_timestamp_ms(uuid).unwrap(), T);
        let text = format_uuid(uuid);
        assert_eq!(text.len(), 36);
        assert_eq!(&text[14..15], "7", "{text}");
        assert!(matches!(&text[19..20], "8" | "9" | "a" | "b"), "{text}");
        assert_eq!(parse_uuid(&text).unwrap(), uuid);
        assert_eq!(parse_uuid(&text.to_uppercase()).unwrap(), uuid);
        assert_eq!(parse_uuid(&text.replace('-', "")).unwrap(), uuid);
    }

    /// A known vector, so every language can check its formatting and parsing against it.
    #[test]
    fn a_fixed_vector() {
        let uuid = compose(0x0189_5f4c_4d2a, 0x2aa_aaaa_aaaa, 0x1234_5678);
        assert_eq!(format_uuid(uuid), "01895f4c-4d2a-7aaa-aaaa-aaaa12345678");
        assert_eq!(uuid7_timestamp_ms(uuid).unwrap(), 0x0189_5f4c_4d2a);
    }

    #[test]
    fn monotonic_within_a_millisecond_and_across_a_clock_set_back() {
        let clock = Arc::new(ManualClock::new(T));
        let generator = Uuid7Generator::with_sources(clock.clone(), crate::OsRandom);
        let mut last = 0u128;
        for step in 0..200_000u64 {
            match step {
                50_000 => clock.set(T - 60_000), // a minute back
                100_000 => clock.advance(120_000),
                _ if step % 1000 == 0 => clock.advance(1),
                _ => {}
            }
            let uuid = generator.next().unwrap();
            assert!(uuid > last, "step {step}: {} after {}", format_uuid(uuid), format_uuid(last));
            last = uuid;
        }
    }

    #[test]
    fn a_full_counter_moves_the_timestamp_ahead() {
        // A seed just below the guard bit's reach: the counter runs out after a few steps.
        struct High;
        impl Random for High {
            fn fill(&self, bytes: &mut [u8]) -> Result<()> {
                bytes.fill(0xff);
                Ok(())
            }
        }
        let generator = Uuid7Generator::with_sources(ManualClock::new(T), High);
        let first = generator.next().unwrap();
        let mut last = first;
        for _ in 0..10 {
            last = generator.next().unwrap();
        }
        assert!(last > first);
        *generator.last.lock().unwrap() = Some((T, (1 << COUNTER_BITS) - 1));
        let rolled = generator.next().unwrap();
        assert_eq!(uuid7_timestamp_ms(rolled).unwrap(), T + 1);
        assert!(rolled > last);
    }

    #[test]
    fn bad_text_and_foreign_uuids_are_refused() {
        for bad in ["", "xyz", "01895f4c-4d2a-7aaa-aaaa-aaaa1234567", "01895f4c_4d2a_7aaa_aaaa_aaaa12345678"] {
            assert_eq!(parse_uuid(bad).unwrap_err().kind(), crate::IdErrorKind::InvalidArgument, "{bad}");
        }
        let v4 = parse_uuid("9f1c2c5e-8b7a-4c3d-9e2f-0a1b2c3d4e5f").unwrap();
        assert_eq!(uuid7_timestamp_ms(v4).unwrap_err().kind(), crate::IdErrorKind::InvalidArgument);
        assert!(uuid7_at(MAX_TIMESTAMP + 1, &crate::OsRandom).is_err());
        assert_eq!(uuid7_timestamp_ms(uuid7_at(T, &crate::OsRandom).unwrap()).unwrap(), T);
    }
}
