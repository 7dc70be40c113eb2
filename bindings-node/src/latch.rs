//! `Latch`: a countdown latch shared through the store (the core's `Latch`; Redisson's
//! `RCountDownLatch` on Redis). Translation only: counts are Numbers (or BigInts in), waits
//! are milliseconds, an AbortSignal stops a wait.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::cancel::AcquireCancel;
use crate::convert::{u64_from_number_or_bigint, wait_from_millis};
use crate::errors::{invalid_argument, to_napi, IntoNapiResult};
use crate::settle;

/// Number.MAX_SAFE_INTEGER: a count above it has no exact Number.
const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

/// A handle on the countdown latch `name`. Nothing is owned and nothing expires: a latch
/// whose counters never count down stays closed, so give waits a timeout.
#[napi]
pub struct Latch {
    latch: polylock::Latch,
}

impl Latch {
    pub fn new(latch: polylock::Latch) -> Self {
        Latch { latch }
    }
}

#[napi]
impl Latch {
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.latch.name().to_string()
    }

    /// Set the count to `count` if the latch is open (at zero, or never set); whether it was
    /// set. Rejects with `POLYLOCK_INVALID_ARGUMENT` for a count below 1.
    #[napi(ts_args_type = "count: number | bigint", ts_return_type = "Promise<boolean>")]
    pub fn try_set_count<'env>(&self, env: &'env Env, count: Either<f64, BigInt>) -> Result<PromiseRaw<'env, bool>> {
        let count = u64_from_number_or_bigint("count", count)?;
        let latch = self.latch.clone();
        settle::spawn(env, async move { latch.try_set_count(count).await.into_napi() })
    }

    /// Take one off the count (never below zero); at zero every waiter is released.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn count_down<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let latch = self.latch.clone();
        settle::spawn(env, async move { latch.count_down().await.into_napi() })
    }

    /// The count now; 0 when the latch is open.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn count<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, f64>> {
        let latch = self.latch.clone();
        settle::spawn(env, async move {
            let count = latch.count().await.into_napi()?;
            if count > MAX_SAFE_INTEGER {
                // Set by another language beyond what a Number holds exactly: no rounded answer.
                return Err(to_napi(polylock::Error::backend(format!(
                    "latch '{}' counts {count}, more than a Number holds exactly",
                    latch.name()
                ))));
            }
            Ok(count as f64)
        })
    }

    /// Wait until the count is zero: `true` once it is, `false` if `timeoutMs` ran out first
    /// (absent or `null`: no bound; 0: look once). Rejects with the signal's reason if
    /// `options.signal` aborts, and with `POLYLOCK_CONNECTION` if the client closes meanwhile.
    /// (`index.js` turns the signal into `cancel`.)
    #[napi(
        js_name = "await",
        ts_args_type = "timeoutMs?: number | null, options?: LatchAwaitOptions",
        ts_return_type = "Promise<boolean>"
    )]
    pub fn await_zero<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
        cancel: Option<&AcquireCancel>,
    ) -> Result<PromiseRaw<'env, bool>> {
        if timeout_ms.is_some_and(|ms| !ms.is_finite() || ms < 0.0) {
            return Err(invalid_argument(format!(
                "timeoutMs must be a finite number of milliseconds >= 0 (omit it to wait until the count is zero), got {}",
                timeout_ms.unwrap_or_default()
            )));
        }
        let timeout = wait_from_millis(timeout_ms)?;
        let latch = self.latch.clone();
        let cancel = cancel.map(AcquireCancel::token).unwrap_or_default();
        settle::spawn(env, async move { latch.try_await_zero_cancellable(timeout, &cancel).await.into_napi() })
    }
}
