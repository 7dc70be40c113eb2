//! `Lock`: one named lock. Every fresh acquisition is its own owner (a new local id), so two
//! guards in one process exclude each other like two processes do; `Guard.reenter()` is the
//! only way to acquire again as the same owner.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::{AcquireOptions as CoreOptions, ErrorKind};
use tokio_util::sync::CancellationToken;

use crate::cancel::AcquireCancel;
use crate::convert::{lease_from_millis_f64, wait_from_millis};
use crate::errors::{self, to_napi};
use crate::guard::Guard;
use crate::settle;

#[napi(object, object_to_js = false)]
pub struct AcquireOptions {
    /// How long to wait for the lock, in ms. Absent: as long as it takes; 0: try once.
    pub wait_ms: Option<f64>,
    /// Hold for at most this long, in ms, unless released sooner. Absent: the watchdog
    /// renews the lock while the guard is held (30 s lease by default).
    pub lease_ms: Option<f64>,
}

#[napi]
pub struct Lock {
    lock: polylock::Lock,
}

impl Lock {
    pub fn new(lock: polylock::Lock) -> Lock {
        Lock { lock }
    }

    /// Acquire as a new owner, stopping early if `cancel` fires.
    fn start(
        &self,
        options: Option<AcquireOptions>,
        default_wait: Option<f64>,
        cancel: Option<&AcquireCancel>,
    ) -> Result<impl std::future::Future<Output = polylock::Result<polylock::Guard>> + Send + 'static> {
        let (wait_ms, lease_ms) = match options {
            Some(options) => (options.wait_ms.or(default_wait), options.lease_ms),
            None => (default_wait, None),
        };
        let options = CoreOptions { wait: wait_from_millis(wait_ms)?, lease: lease_from_millis_f64(lease_ms)? };
        let lock = self.lock.clone().with_local_id(polylock::kit::owner_ids::next_owner_id());
        let cancel = cancel.map(AcquireCancel::token);
        Ok(async move { until_cancelled(cancel, lock.acquire_with(options)).await })
    }
}

/// Run `acquiring` unless `cancel` fires first; dropping the core's acquire future is how
/// it is cancelled (nothing stays held).
async fn until_cancelled(
    cancel: Option<CancellationToken>,
    acquiring: impl std::future::Future<Output = polylock::Result<polylock::Guard>>,
) -> polylock::Result<polylock::Guard> {
    match cancel {
        None => acquiring.await,
        Some(cancel) => tokio::select! {
            acquired = acquiring => acquired,
            () = cancel.cancelled() => Err(polylock::Error::new(ErrorKind::Timeout, errors::ABORTED)),
        },
    }
}

/// A core error, with a cancellation marked for `index.js` to replace with the signal's reason.
fn acquire_error(err: polylock::Error) -> napi::Error {
    if err.message() == errors::ABORTED {
        return errors::with_code(errors::ABORTED, "the acquisition was aborted");
    }
    to_napi(err)
}

#[napi]
impl Lock {
    /// Wait for the lock and hold it. Rejects with `POLYLOCK_TIMEOUT` if `waitMs` runs out,
    /// and with the signal's reason if `signal` aborts the wait.
    #[napi(ts_args_type = "options?: AcquireOptions", ts_return_type = "Promise<Guard>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        options: Option<AcquireOptions>,
        cancel: Option<&AcquireCancel>,
    ) -> Result<PromiseRaw<'env, Guard>> {
        let acquiring = self.start(options, None, cancel)?;
        settle::spawn(env, async move { acquiring.await.map(Guard::new).map_err(acquire_error) })
    }

    /// Try to acquire, waiting at most `waitMs` (default 0: try once). Resolves to `null`
    /// when the lock stayed taken.
    #[napi(ts_args_type = "options?: AcquireOptions", ts_return_type = "Promise<Guard | null>")]
    pub fn try_acquire<'env>(
        &self,
        env: &'env Env,
        options: Option<AcquireOptions>,
        cancel: Option<&AcquireCancel>,
    ) -> Result<PromiseRaw<'env, Option<Guard>>> {
        let acquiring = self.start(options, Some(0.0), cancel)?;
        settle::spawn(env, async move {
            match acquiring.await {
                Ok(guard) => Ok(Some(Guard::new(guard))),
                Err(err) if err.kind() == ErrorKind::Timeout && err.message() != errors::ABORTED => Ok(None),
                Err(err) => Err(acquire_error(err)),
            }
        })
    }

    #[napi(getter)]
    pub fn name(&self) -> String {
        self.lock.name().to_string()
    }

    #[napi(getter, ts_return_type = "'reentrant' | 'fair' | 'token' | 'lease'")]
    pub fn kind(&self) -> &'static str {
        self.lock.kind().as_str()
    }
}
