//! `Latch`: a countdown latch shared through the store (the core's `Latch`; Redisson's
//! `RCountDownLatch` on Redis). Translation only: counts are Numbers (or BigInts in), waits
//! are milliseconds, an AbortSignal stops a wait.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::cancel::AcquireCancel;
use crate::convert::{u64_from_number_or_bigint, wait_from_millis};
use crate::errors::{invalid_argument, to_napi, IntoNapiResult};
use crate::lock::until_cancelled;
use crate::settle;

/// Number.MAX_SAFE_INTEGER: a count above it has no exact Number.
const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

#[napi(object, object_to_js = false)]
pub struct LatchWaitOptions {
    /// How long to wait for zero, in ms. Absent: as long as it takes; 0: look once.
    pub wait_ms: Option<f64>,
}

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

    /// The waiting form: wait until the count is zero, at most `options.waitMs` (absent: as
    /// long as it takes; 0: look once). Resolves once it is zero; rejects with
    /// `POLYLOCK_TIMEOUT` if `waitMs` runs out first, with the signal's reason if
    /// `options.signal` aborts, and with `POLYLOCK_CONNECTION` if the client closes meanwhile.
    /// (`latch.await` is the try form, resolving `false` instead.)
    #[napi(ts_args_type = "options?: LatchWaitOptions", ts_return_type = "Promise<void>")]
    pub fn await_zero<'env>(
        &self,
        env: &'env Env,
        options: Option<LatchWaitOptions>,
        cancel: Option<&AcquireCancel>,
    ) -> Result<PromiseRaw<'env, ()>> {
        let wait = wait_from_millis(options.and_then(|options| options.wait_ms))?;
        let latch = self.latch.clone();
        let cancel = cancel.map(AcquireCancel::token);
        let what = format!("the wait for latch '{}'", latch.name());
        settle::spawn(env, async move {
            until_cancelled(what, cancel, async move { latch.await_zero(wait).await }).await.into_napi()
        })
    }

    /// The try form: wait until the count is zero, `true` once it is, `false` if the wait ran
    /// out first. The wait is `timeoutMs` (a bare number) or `{ waitMs }` as locks take it
    /// (absent or `null`: no bound; 0: look once). Rejects with the signal's reason if
    /// `options.signal` aborts (in the options object, or the second argument after a bare
    /// number), and with `POLYLOCK_CONNECTION` if the client closes meanwhile. (`index.js`
    /// turns the signal into `cancel`.)
    #[napi(
        js_name = "await",
        ts_args_type = "timeoutMsOrOptions?: number | LatchWaitOptions | null, options?: LatchAwaitOptions",
        ts_return_type = "Promise<boolean>"
    )]
    pub fn try_await_zero<'env>(
        &self,
        env: &'env Env,
        wait: Option<Either<f64, LatchWaitOptions>>,
        cancel: Option<&AcquireCancel>,
    ) -> Result<PromiseRaw<'env, bool>> {
        let timeout = match wait {
            None => None,
            Some(Either::A(timeout_ms)) => {
                if !timeout_ms.is_finite() || timeout_ms < 0.0 {
                    return Err(invalid_argument(format!(
                        "timeoutMs must be a finite number of milliseconds >= 0 (omit it to wait until the count is zero), got {timeout_ms}"
                    )));
                }
                wait_from_millis(Some(timeout_ms))?
            }
            Some(Either::B(options)) => wait_from_millis(options.wait_ms)?,
        };
        let latch = self.latch.clone();
        let cancel = cancel.map(AcquireCancel::token).unwrap_or_default();
        settle::spawn(env, async move { latch.try_await_zero_cancellable(timeout, &cancel).await.into_napi() })
    }
}
