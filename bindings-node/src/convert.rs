//! JavaScript numbers and BigInts to what the core takes. A 64-bit ID is only ever read
//! from a BigInt or a decimal string, never from a Number, which cannot hold it exactly.

use std::time::Duration;

use napi::bindgen_prelude::{BigInt, Either};
use polylock::duration::lease_from_millis;

use crate::errors::{invalid_argument, IntoNapiResult};

/// `waitMs`: absent waits as long as it takes, `0` tries once. Negative, NaN and infinite
/// waits are errors (omit the option to wait forever).
pub fn wait_from_millis(millis: Option<f64>) -> napi::Result<Option<Duration>> {
    let Some(millis) = millis else { return Ok(None) };
    if !millis.is_finite() || millis < 0.0 {
        return Err(invalid_argument(format!(
            "waitMs must be a finite number of milliseconds >= 0 (omit it to wait until the lock is free), got {millis}"
        )));
    }
    // try_: a wait of 1e300 ms must be refused (by the core, for its length), never panic here.
    Duration::try_from_secs_f64(millis / 1000.0).map(Some).map_err(|_| {
        invalid_argument(format!(
            "waitMs must be at most {} ms (omit it to wait until the lock is free), got {millis}",
            polylock::duration::MAX_WAIT.as_millis()
        ))
    })
}

/// `leaseMs`: absent lets the watchdog renew the lock; zero and negative leases are the
/// core's to reject. A fraction of a millisecond rounds up, so a tiny positive lease stays positive.
pub fn lease_from_millis_f64(millis: Option<f64>) -> napi::Result<Option<Duration>> {
    let Some(millis) = millis else { return Ok(None) };
    if !millis.is_finite() {
        return Err(invalid_argument(format!("leaseMs must be a finite number of milliseconds, got {millis}")));
    }
    // `as` saturates: a lease of 1e300 ms becomes i64::MAX milliseconds.
    lease_from_millis(millis.ceil() as i64).map(Some).into_napi()
}

/// A non-negative integer that fits in `u64`, from a Number (exact integers only) or a BigInt.
pub fn u64_from_number_or_bigint(what: &str, value: Either<f64, BigInt>) -> napi::Result<u64> {
    match value {
        Either::A(number) => {
            if number.is_finite() && number >= 0.0 && number.fract() == 0.0 && number <= MAX_SAFE_INTEGER {
                Ok(number as u64)
            } else {
                Err(invalid_argument(format!("{what} must be a non-negative integer, got {number}")))
            }
        }
        Either::B(bigint) => u64_from_bigint(what, &bigint),
    }
}

/// Number.MAX_SAFE_INTEGER: above it a Number may not be the integer its writer meant.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

fn u64_from_bigint(what: &str, bigint: &BigInt) -> napi::Result<u64> {
    let (negative, value, lossless) = bigint.get_u64();
    if negative || !lossless {
        return Err(invalid_argument(format!("{what} must be a BigInt between 0n and 2n**64n - 1n")));
    }
    Ok(value)
}

/// A 64-bit ID from a BigInt or a decimal string.
pub fn id_from_bigint_or_string(value: Either<BigInt, String>) -> napi::Result<u64> {
    match value {
        Either::A(bigint) => u64_from_bigint("id", &bigint),
        Either::B(text) => text.trim().parse::<u64>().map_err(|_| {
            invalid_argument(format!(
                "id must be a BigInt or a decimal string of an unsigned 64-bit integer, got '{text}'"
            ))
        }),
    }
}
