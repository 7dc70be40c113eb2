//! `Semaphore`: N owned permits. Each acquisition takes a permit of its own, with its own
//! lease and fencing token; its `Guard` gives it back.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::kit::AnyGuard;

use crate::cancel::AcquireCancel;
use crate::errors::to_napi;
use crate::guard::Guard;
use crate::lock::{core_options, none_if_timed_out, until_cancelled, AcquireOptions};
use crate::settle;

/// A semaphore of `permits` permits; the count is fixed by the first use of the name.
#[napi]
pub struct Semaphore {
    semaphore: polylock::Semaphore,
}

impl Semaphore {
    pub fn new(semaphore: polylock::Semaphore) -> Self {
        Semaphore { semaphore }
    }

    fn start(
        &self,
        options: Option<AcquireOptions>,
        default_wait: Option<f64>,
        cancel: Option<&AcquireCancel>,
    ) -> Result<impl std::future::Future<Output = polylock::Result<AnyGuard>> + Send + 'static> {
        let options = core_options(options, default_wait)?;
        let semaphore = self.semaphore.clone();
        let cancel = cancel.map(AcquireCancel::token);
        let what = format!("a permit of semaphore '{}'", semaphore.name());
        Ok(async move {
            until_cancelled(what, cancel, async move { semaphore.acquire_with(options).await.map(AnyGuard::Permit) })
                .await
        })
    }
}

#[napi]
impl Semaphore {
    /// Wait for a permit and hold it. Rejects with `POLYLOCK_TIMEOUT` if `waitMs` runs out,
    /// and with the signal's reason if `signal` aborts the wait.
    #[napi(ts_args_type = "options?: AcquireOptions", ts_return_type = "Promise<Guard>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        options: Option<AcquireOptions>,
        cancel: Option<&AcquireCancel>,
    ) -> Result<PromiseRaw<'env, Guard>> {
        let acquiring = self.start(options, None, cancel)?;
        settle::spawn(env, async move { acquiring.await.map(Guard::new).map_err(to_napi) })
    }

    /// Try to take a permit, waiting at most `waitMs` (default 0: try once). Resolves to
    /// `null` when every permit stayed taken.
    #[napi(ts_args_type = "options?: AcquireOptions", ts_return_type = "Promise<Guard | null>")]
    pub fn try_acquire<'env>(
        &self,
        env: &'env Env,
        options: Option<AcquireOptions>,
        cancel: Option<&AcquireCancel>,
    ) -> Result<PromiseRaw<'env, Option<Guard>>> {
        let acquiring = self.start(options, Some(0.0), cancel)?;
        settle::spawn(env, async move { none_if_timed_out(acquiring.await).map(|held| held.map(Guard::new)) })
    }

    #[napi(getter)]
    pub fn name(&self) -> String {
        self.semaphore.name().to_string()
    }

    /// How many permits the semaphore has in all.
    #[napi(getter)]
    pub fn permits(&self) -> u32 {
        self.semaphore.permits()
    }
}
