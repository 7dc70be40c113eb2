//! `Guard`: one acquisition, and its owner. It carries the fencing token, tells whether the
//! hold was lost, re-enters as the same owner, and gives the hold back on `release()` (or,
//! if never released, when it is garbage-collected).

use std::sync::{Mutex, MutexGuard};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;
use polylock::kit::AnyGuard;
use polylock::LostWatch;
use tokio::task::AbortHandle;

use crate::errors::{to_napi, IntoNapiResult};
use crate::settle;

#[napi]
pub struct Guard {
    /// `None` once released.
    guard: Mutex<Option<AnyGuard>>,
    name: String,
    /// `None` on a backend without fencing tokens (RedLock).
    token: Option<u64>,
    lost: LostWatch,
    /// The task that reports loss to JavaScript, while anyone listens.
    watcher: Mutex<Option<AbortHandle>>,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; if something ever did, the state is still valid.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Guard {
    pub fn new(guard: AnyGuard) -> Guard {
        Guard {
            name: guard.name().to_string(),
            token: match &guard {
                AnyGuard::Lock(guard) => guard.fencing_token_opt(),
                AnyGuard::Rw(guard) => guard.fencing_token_opt(),
                AnyGuard::Permit(guard) => guard.fencing_token_opt(),
            },
            lost: guard.lost_watch(),
            guard: Mutex::new(Some(guard)),
            watcher: Mutex::new(None),
        }
    }

    fn stop_watching(&self) {
        if let Some(watcher) = locked(&self.watcher).take() {
            watcher.abort();
        }
    }

    fn is_released(&self) -> bool {
        locked(&self.guard).is_none()
    }

    fn released_error(&self) -> napi::Error {
        to_napi(polylock::Error::not_owner(format!(
            "this guard of '{}' was already released; acquire again",
            self.name
        )))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // The core guard, dropped with this struct, releases in the background.
        self.stop_watching();
    }
}

#[napi]
impl Guard {
    /// Strictly greater than the token of every earlier hold of this lock name: hand it to
    /// the storage you protect, and have it reject writes with an older token. `null` on
    /// RedLock, which has none: a majority of independent counters is no counter that only
    /// grows (use a single Redis, etcd, ZooKeeper or SQL when writes must be fenced).
    #[napi(getter)]
    pub fn fencing_token(&self) -> Option<BigInt> {
        self.token.map(BigInt::from)
    }

    /// The lock's name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// True once the backend no longer holds the lock for this guard's owner.
    #[napi(getter)]
    pub fn is_lost(&self) -> bool {
        self.lost.is_lost()
    }

    /// Why the hold was lost, or `null` while it is held (or was released normally).
    #[napi(getter)]
    pub fn lost_reason(&self) -> Option<String> {
        self.lost.reason().map(|reason| reason.to_string())
    }

    /// True once `release()` was called on this guard.
    #[napi(getter)]
    pub fn released(&self) -> bool {
        self.is_released()
    }

    /// Give this acquisition back. Rejects with `POLYLOCK_LOST` if the hold was lost meanwhile,
    /// and with `POLYLOCK_NOT_OWNER` if this guard was already released.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn release<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let guard = locked(&self.guard).take().ok_or_else(|| self.released_error())?;
        self.stop_watching();
        let waited_for = guard.is_waited_for_here();
        let release = async move { guard.release().await.into_napi() };
        if waited_for {
            // Poll it here, so the acquire it hands the lock to settles here too (settle.rs).
            settle::spawn_here(env, release)
        } else {
            settle::spawn(env, release)
        }
    }

    /// Acquire the lock again as this guard's owner (reentrancy): resolves at once to a new
    /// guard with the same fencing token. Each guard is released on its own; the lock is free
    /// when all of them are. Rejects with `POLYLOCK_LOST` if this guard's hold was lost (never
    /// a fresh hold), and with `POLYLOCK_INVALID_ARGUMENT` for a semaphore permit.
    #[napi(ts_return_type = "Promise<Guard>")]
    pub fn reenter<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Guard>> {
        let reentering = {
            let guard = locked(&self.guard);
            let guard = guard.as_ref().ok_or_else(|| self.released_error())?;
            guard.reentry().into_napi()?
        };
        settle::spawn(env, async move { reentering.await.map(Guard::new).into_napi() })
    }

    /// Call `callback(reason)` once, when the hold is lost. `index.js` builds the `lost`
    /// Promise on it. While the guard is held the callback keeps the process alive (so
    /// `await guard.lost` works like any other pending I/O); releasing the guard, closing the
    /// client or garbage-collecting the guard drops it, so a released guard's unsettled
    /// `lost` never does.
    #[napi(skip_typescript)]
    pub fn on_lost(&self, callback: Function<String, ()>) -> Result<()> {
        if self.is_released() {
            return Ok(());
        }
        let notify = callback.build_threadsafe_function::<String>().build()?;
        let lost = self.lost.clone();
        let task = napi::bindgen_prelude::spawn(async move {
            let reason = lost.wait().await;
            notify.call(reason.to_string(), ThreadsafeFunctionCallMode::NonBlocking);
        });
        if let Some(previous) = locked(&self.watcher).replace(task.abort_handle()) {
            previous.abort();
        }
        Ok(())
    }
}
