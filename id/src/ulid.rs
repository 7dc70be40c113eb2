//! ULID (github.com/ulid/spec): 48 bits of Unix milliseconds and 80 random bits, written as
//! 26 characters of Crockford's base32, sortable as text and as bytes.
//!
//! The generator is monotonic: within one millisecond (and while the clock stands still or
//! steps back, when the last timestamp is kept) the random part counts up by one. If it would
//! overflow, the policy decides: [`UlidOverflow::NextMillisecond`] (the default) moves the
//! timestamp one millisecond ahead with fresh random bits, as UUIDv7 does, so the generator
//! never fails; [`UlidOverflow::Error`] fails as the spec's reference implementation does.
//! Either way, no two ULIDs of one generator are equal or out of order.

use std::sync::Mutex;

use crate::clock::Clock;
use crate::error::{IdError, Result};
use crate::random::{random_bits, Random};

const RANDOM_BITS: u32 = 80;
const MAX_TIMESTAMP: u64 = (1 << 48) - 1;

/// Crockford's base32 alphabet (no I, L, O, U).
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// What the generator does when the random part of one millisecond is used up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum UlidOverflow {
    /// Take the next millisecond, with fresh random bits.
    #[default]
    NextMillisecond,
    /// Fail with kind `Exhausted` until the clock moves on.
    Error,
}

/// A monotonic ULID generator, thread-safe.
pub struct UlidGenerator {
    clock: Box<dyn Clock>,
    random: Box<dyn Random>,
    overflow: UlidOverflow,
    last: Mutex<Option<u128>>,
}

impl UlidGenerator {
    /// The system clock, the operating system's randomness, and [`UlidOverflow::NextMillisecond`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new() -> Self {
        Self::with_sources(crate::SystemClock, crate::OsRandom)
    }

    pub fn with_sources(clock: impl Clock, random: impl Random) -> Self {
        UlidGenerator {
            clock: Box::new(clock),
            random: Box::new(random),
            overflow: UlidOverflow::default(),
            last: Mutex::new(None),
        }
    }

    pub fn with_overflow(mut self, overflow: UlidOverflow) -> Self {
        self.overflow = overflow;
        self
    }

    /// The next ULID, greater than every earlier one from this generator.
    pub fn next(&self) -> Result<u128> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let now = self.clock.now_ms();
        let next = match *last {
            Some(previous) if now <= (previous >> RANDOM_BITS) as u64 => {
                let random_part = previous & ((1 << RANDOM_BITS) - 1);
                if random_part + 1 < 1 << RANDOM_BITS {
                    previous + 1
                } else {
                    match self.overflow {
                        UlidOverflow::Error => {
                            return Err(IdError::exhausted(format!(
                                "every ULID of millisecond {} is used; ask again in the next one",
                                previous >> RANDOM_BITS
                            )))
                        }
                        UlidOverflow::NextMillisecond => self.fresh((previous >> RANDOM_BITS) as u64 + 1)?,
                    }
                }
            }
            _ => self.fresh(now)?,
        };
        *last = Some(next);
        Ok(next)
    }

    /// `n` ULIDs in increasing order.
    /// At most [`crate::MAX_BATCH`], else `InvalidArgument`.
    pub fn batch(&self, n: usize) -> Result<Vec<u128>> {
        crate::check_batch(n)?;
        (0..n).map(|_| self.next()).collect()
    }

    fn fresh(&self, timestamp_ms: u64) -> Result<u128> {
        if timestamp_ms > MAX_TIMESTAMP {
            return Err(IdError::clock(format!("{timestamp_ms} ms is past what a ULID's 48-bit timestamp holds")));
        }
        Ok(((timestamp_ms as u128) << RANDOM_BITS) | random_bits(&*self.random, RANDOM_BITS)?)
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Default for UlidGenerator {
    fn default() -> Self {
        Self::new()
    }
}

/// The Unix milliseconds of a ULID.
pub fn ulid_timestamp_ms(ulid: u128) -> u64 {
    (ulid >> RANDOM_BITS) as u64
}

/// The 26-character text form.
pub fn format_ulid(ulid: u128) -> String {
    let mut text = [0u8; 26];
    for (i, slot) in text.iter_mut().enumerate() {
        *slot = ALPHABET[((ulid >> (125 - 5 * i)) & 0x1f) as usize];
    }
    // Only characters of the ASCII alphabet were written.
    String::from_utf8(text.to_vec()).expect("ASCII")
}

/// Parse the 26-character form, in either case, reading `I`/`L` as 1 and `O` as 0 as
/// Crockford's base32 does.
pub fn parse_ulid(text: &str) -> Result<u128> {
    let bad = |why: &str| IdError::invalid_argument(format!("'{text}' is not a ULID: {why}"));
    if text.len() != 26 {
        return Err(bad("a ULID has 26 characters"));
    }
    let mut value = 0u128;
    for (i, c) in text.bytes().enumerate() {
        let digit = match c.to_ascii_uppercase() {
            b'I' | b'L' => 1,
            b'O' => 0,
            upper => ALPHABET.iter().position(|&a| a == upper).ok_or_else(|| bad("not Crockford base32"))? as u128,
        };
        if i == 0 && digit > 7 {
            return Err(bad("larger than 128 bits (the first character is at most 7)"));
        }
        value = (value << 5) | digit;
    }
    Ok(value)
}

/// The same 128 bits read as a UUID: what `ulidToUUID` of the npm `ulid` package gives. The
/// result carries no UUID version; it is for storing ULIDs in UUID columns.
pub fn ulid_to_uuid(ulid: u128) -> u128 {
    ulid
}

/// The 128 bits of a UUID as a ULID (of a UUIDv7, the ULID of the same millisecond).
pub fn uuid_to_ulid(uuid: u128) -> u128 {
    uuid
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::random::CountingRandom;
    use crate::ManualClock;

    const T: u64 = 1_700_000_000_000;

    /// The spec's example timestamp, and a known text form every language checks.
    #[test]
    fn a_fixed_vector() {
        let ulid = (1_469_918_176_385u128 << 80) | 0x0123_4567_89ab_cdef_0123;
        let text = format_ulid(ulid);
        assert_eq!(text, "01ARYZ6S4104HMASW9NF6YY093");
        assert_eq!(&text[..10], "01ARYZ6S41", "the spec's timestamp part");
        assert_eq!(parse_ulid(&text).unwrap(), ulid);
        assert_eq!(parse_ulid(&text.to_lowercase()).unwrap(), ulid);
        assert_eq!(ulid_timestamp_ms(ulid), 1_469_918_176_385);
        assert_eq!(format_ulid(u128::MAX), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
        assert_eq!(crate::format_uuid(ulid_to_uuid(ulid)), "01563df3-6481-0123-4567-89abcdef0123");
        assert_eq!(uuid_to_ulid(ulid_to_uuid(ulid)), ulid);
    }

    #[test]
    fn monotonic_as_numbers_and_as_text_across_a_clock_set_back() {
        let clock = Arc::new(ManualClock::new(T));
        let generator = UlidGenerator::with_sources(clock.clone(), crate::OsRandom);
        let (mut last, mut last_text) = (0u128, String::new());
        for step in 0..100_000u64 {
            match step {
                30_000 => clock.set(T - 3_600_000), // an hour back
                60_000 => clock.set(T + 10_000),
                _ if step % 500 == 0 => clock.advance(1),
                _ => {}
            }
            let ulid = generator.next().unwrap();
            let text = format_ulid(ulid);
            assert!(ulid > last && text > last_text, "step {step}: {text} after {last_text}");
            (last, last_text) = (ulid, text);
        }
    }

    #[test]
    fn overflow_follows_the_policy() {
        struct AllOnes;
        impl Random for AllOnes {
            fn fill(&self, bytes: &mut [u8]) -> Result<()> {
                bytes.fill(0xff);
                Ok(())
            }
        }
        let rolling = UlidGenerator::with_sources(ManualClock::new(T), AllOnes);
        let first = rolling.next().unwrap();
        let second = rolling.next().unwrap();
        assert_eq!(ulid_timestamp_ms(first), T);
        assert_eq!(ulid_timestamp_ms(second), T + 1, "the random part was full: next millisecond");
        assert!(second > first);
        let strict = UlidGenerator::with_sources(ManualClock::new(T), AllOnes).with_overflow(UlidOverflow::Error);
        strict.next().unwrap();
        assert_eq!(strict.next().unwrap_err().kind(), crate::IdErrorKind::Exhausted);
        let counting = UlidGenerator::with_sources(ManualClock::new(T), CountingRandom::new(1));
        assert_eq!(counting.next().unwrap() + 1, counting.next().unwrap(), "same millisecond: plus one");
    }

    #[test]
    fn bad_text_is_refused() {
        for bad in [
            "",
            "01ARYZ6S4104HMASW9NF6YY09",
            "01ARYZ6S4104HMASW9NF6YY093X",
            "01ARYZ6S4104HMASW9NF6YY09U",
            "8ZZZZZZZZZZZZZZZZZZZZZZZZZ",
        ] {
            assert_eq!(parse_ulid(bad).unwrap_err().kind(), crate::IdErrorKind::InvalidArgument, "{bad}");
        }
    }
}
