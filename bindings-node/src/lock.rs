//! `Lock`: one named lock (a mutex, or one side of a read-write lock). Every fresh
//! acquisition is its own owner (a new local id), so two guards in one process exclude each
//! other like two processes do; `Guard.reenter()` is the only way to acquire again as the
//! same owner.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::kit::cancel::cancellable;
use polylock::kit::{AnyGuard, LockTarget};
use polylock::{AcquireOptions as CoreOptions, ErrorKind};

use crate::cancel::AcquireCancel;
use crate::convert::{lease_from_millis_f64, wait_from_millis};
use crate::errors::to_napi;
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

/// The core's options from the JavaScript ones; `default_wait` when `waitMs` is absent.
pub fn core_options(options: Option<AcquireOptions>, default_wait: Option<f64>) -> Result<CoreOptions> {
    let (wait_ms, lease_ms) = match options {
        Some(options) => (options.wait_ms.or(default_wait), options.lease_ms),
        None => (default_wait, None),
    };
    Ok(CoreOptions { wait: wait_from_millis(wait_ms)?, lease: lease_from_millis_f64(lease_ms)? })
}

/// Run `acquiring`, stopped by `cancel` (an AbortSignal) if there is one: kind `Cancelled`,
/// and nothing stays held (the core's binding kit).
pub async fn until_cancelled<T>(
    what: String,
    cancel: Option<tokio_util::sync::CancellationToken>,
    acquiring: impl std::future::Future<Output = polylock::Result<T>>,
) -> polylock::Result<T> {
    match cancel {
        None => acquiring.await,
        Some(cancel) => cancellable(&what, &cancel, acquiring).await,
    }
}

/// A try-once answer: `null` for a wait that ran out.
pub fn none_if_timed_out<T>(acquired: polylock::Result<T>) -> Result<Option<T>> {
    match acquired {
        Ok(held) => Ok(Some(held)),
        Err(err) if err.kind() == ErrorKind::Timeout => Ok(None),
        Err(err) => Err(to_napi(err)),
    }
}

#[napi]
pub struct Lock {
    target: LockTarget,
}

impl Lock {
    pub fn new(target: LockTarget) -> Lock {
        Lock { target }
    }

    /// Acquire as a new owner, stopping early if `cancel` fires.
    fn start(
        &self,
        options: Option<AcquireOptions>,
        default_wait: Option<f64>,
        cancel: Option<&AcquireCancel>,
    ) -> Result<impl std::future::Future<Output = polylock::Result<AnyGuard>> + Send + 'static> {
        let options = core_options(options, default_wait)?;
        let target = self.target.owned_by(polylock::kit::owner_ids::next_owner_id());
        let cancel = cancel.map(AcquireCancel::token);
        let what = format!("lock '{}'", target.name());
        Ok(async move { until_cancelled(what, cancel, async move { target.acquire(options).await }).await })
    }
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
        settle::spawn(env, async move { acquiring.await.map(Guard::new).map_err(to_napi) })
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
        settle::spawn(env, async move { none_if_timed_out(acquiring.await).map(|held| held.map(Guard::new)) })
    }

    /// Whether anyone holds the lock in the store now (any owner, any process; for a side of
    /// a read-write lock, that side). A snapshot: it may change as soon as it is read.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn is_locked<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, bool>> {
        let target = self.target.clone();
        settle::spawn(env, async move { target.is_locked().await.map_err(to_napi) })
    }

    #[napi(getter)]
    pub fn name(&self) -> String {
        self.target.name().to_string()
    }

    /// The mutex's kind, or `'read'` / `'write'` for a side of a read-write lock.
    #[napi(getter, ts_return_type = "'reentrant' | 'fair' | 'token' | 'lease' | 'read' | 'write'")]
    pub fn kind(&self) -> &'static str {
        self.target.kind_name()
    }
}
