//! `MultiLock` and `MultiGuard`: several locks of one client taken as one (the core's
//! `MultiLock`: parts in the byte order of their keys, one deadline for the whole wait,
//! everything given back on failure). Each acquisition is an owner of its own, as with `Lock`.

use std::sync::{Mutex, MutexGuard};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;
use polylock::{LockKind, LostWatch, MultiGuard as CoreGuard, MultiLockPart};
use tokio::task::AbortHandle;

use crate::cancel::AcquireCancel;
use crate::errors::{invalid_argument, to_napi, IntoNapiResult};
use crate::lock::{core_options, none_if_timed_out, until_cancelled, AcquireOptions};
use crate::settle;

/// One part: a mutex (of the backend's default kind, or `kind`), or a side of a read-write lock.
#[napi(object, object_to_js = false)]
pub struct MultiLockPartOptions {
    pub name: String,
    /// `'lock'` (the default), `'read'` or `'write'` (a side of the read-write lock `name`).
    #[napi(ts_type = "'lock' | 'read' | 'write'")]
    pub side: Option<String>,
    /// For a `'lock'` part: its kind (default: the backend's, reentrant where offered).
    #[napi(ts_type = "'reentrant' | 'fair' | 'token' | 'lease'")]
    pub kind: Option<String>,
}

pub fn core_part(part: Either<String, MultiLockPartOptions>) -> Result<MultiLockPart> {
    let part = match part {
        Either::A(name) => return Ok(MultiLockPart::lock(name)),
        Either::B(part) => part,
    };
    match (part.side.as_deref().unwrap_or("lock"), part.kind) {
        ("lock", None) => Ok(MultiLockPart::lock(part.name)),
        ("lock", Some(kind)) => Ok(MultiLockPart::lock_of_kind(part.name, kind.parse::<LockKind>().into_napi()?)),
        ("read", None) => Ok(MultiLockPart::read(part.name)),
        ("write", None) => Ok(MultiLockPart::write(part.name)),
        ("read" | "write", Some(_)) => Err(invalid_argument("a read or write part takes no kind")),
        (side, _) => {
            Err(invalid_argument(format!("a multi-lock part's side is 'lock', 'read' or 'write', not '{side}'")))
        }
    }
}

#[napi]
pub struct MultiLock {
    multi: polylock::MultiLock,
}

impl MultiLock {
    pub fn new(multi: polylock::MultiLock) -> Self {
        MultiLock { multi }
    }

    fn start(
        &self,
        options: Option<AcquireOptions>,
        default_wait: Option<f64>,
        cancel: Option<&AcquireCancel>,
    ) -> Result<impl std::future::Future<Output = polylock::Result<CoreGuard>> + Send + 'static> {
        let options = core_options(options, default_wait)?;
        let multi = self.multi.clone().with_local_id(polylock::kit::owner_ids::next_owner_id());
        let cancel = cancel.map(AcquireCancel::token);
        let what = format!("multi-lock of {} parts", self.multi.names().len());
        Ok(async move { until_cancelled(what, cancel, async move { multi.acquire_with(options).await }).await })
    }
}

#[napi]
impl MultiLock {
    /// Wait for every part (one `waitMs` for them all) and hold them. Rejects with
    /// `POLYLOCK_TIMEOUT` naming the part that was not free; nothing stays held then.
    #[napi(ts_args_type = "options?: AcquireOptions", ts_return_type = "Promise<MultiGuard>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        options: Option<AcquireOptions>,
        cancel: Option<&AcquireCancel>,
    ) -> Result<PromiseRaw<'env, MultiGuard>> {
        let acquiring = self.start(options, None, cancel)?;
        settle::spawn(env, async move { acquiring.await.map(MultiGuard::new).map_err(to_napi) })
    }

    /// Try to take every part, waiting at most `waitMs` (default 0: try once). Resolves to
    /// `null` when a part stayed taken (and nothing is held).
    #[napi(ts_args_type = "options?: AcquireOptions", ts_return_type = "Promise<MultiGuard | null>")]
    pub fn try_acquire<'env>(
        &self,
        env: &'env Env,
        options: Option<AcquireOptions>,
        cancel: Option<&AcquireCancel>,
    ) -> Result<PromiseRaw<'env, Option<MultiGuard>>> {
        let acquiring = self.start(options, Some(0.0), cancel)?;
        settle::spawn(env, async move { none_if_timed_out(acquiring.await).map(|held| held.map(MultiGuard::new)) })
    }

    /// The parts' names, in the order they are taken (byte order of their storage keys).
    #[napi(getter)]
    pub fn names(&self) -> Vec<String> {
        self.multi.names().into_iter().map(str::to_string).collect()
    }
}

/// One part's fencing token; `null` on a backend without fencing tokens (RedLock).
#[napi(object, object_from_js = false)]
pub struct PartToken {
    pub name: String,
    #[napi(ts_type = "bigint | null")]
    pub token: Either<BigInt, Null>,
}

/// The proof that every part is held. `release()` gives every part back.
#[napi]
pub struct MultiGuard {
    /// `None` once released.
    guard: Mutex<Option<CoreGuard>>,
    tokens: Vec<(String, Option<u64>)>,
    lost: Vec<LostWatch>,
    watcher: Mutex<Option<AbortHandle>>,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl MultiGuard {
    fn new(guard: CoreGuard) -> Self {
        MultiGuard {
            tokens: guard.fencing_tokens_opt(),
            lost: guard.lost_watches(),
            guard: Mutex::new(Some(guard)),
            watcher: Mutex::new(None),
        }
    }

    fn stop_watching(&self) {
        if let Some(watcher) = locked(&self.watcher).take() {
            watcher.abort();
        }
    }
}

impl Drop for MultiGuard {
    fn drop(&mut self) {
        // The core guard, dropped with this struct, releases every part in the background.
        self.stop_watching();
    }
}

#[napi]
impl MultiGuard {
    /// One fencing token per part, in the order the parts were taken.
    #[napi(getter)]
    pub fn fencing_tokens(&self) -> Vec<PartToken> {
        self.tokens
            .iter()
            .map(|(name, token)| PartToken {
                name: name.clone(),
                token: token.map_or(Either::B(Null), |token| Either::A(BigInt::from(token))),
            })
            .collect()
    }

    /// The parts' names, in the order they were taken.
    #[napi(getter)]
    pub fn names(&self) -> Vec<String> {
        self.tokens.iter().map(|(name, _)| name.clone()).collect()
    }

    /// True once any part is no longer held.
    #[napi(getter)]
    pub fn is_lost(&self) -> bool {
        self.lost.iter().any(LostWatch::is_lost)
    }

    /// True once `release()` was called.
    #[napi(getter)]
    pub fn released(&self) -> bool {
        locked(&self.guard).is_none()
    }

    /// Give every part back (each even if another fails). Rejects with `POLYLOCK_LOST` if a
    /// part was lost meanwhile, `POLYLOCK_NOT_OWNER` if already released.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn release<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let guard = locked(&self.guard).take().ok_or_else(|| {
            to_napi(polylock::Error::not_owner("this multi-lock guard was already released; acquire again"))
        })?;
        self.stop_watching();
        settle::spawn(env, async move { guard.release().await.into_napi() })
    }

    /// Call `callback(reason)` once, when any part is lost (`index.js` builds `lost` on it).
    #[napi(skip_typescript)]
    pub fn on_lost(&self, callback: Function<String, ()>) -> Result<()> {
        if locked(&self.guard).is_none() {
            return Ok(());
        }
        let notify = callback.build_threadsafe_function::<String>().build()?;
        let watches: Vec<(String, LostWatch)> =
            self.tokens.iter().map(|(name, _)| name.clone()).zip(self.lost.iter().cloned()).collect();
        let task = napi::bindgen_prelude::spawn(async move {
            let mut waits = tokio::task::JoinSet::new();
            for (name, watch) in watches {
                waits.spawn(async move { (name, watch.wait().await) });
            }
            while let Some(joined) = waits.join_next().await {
                if let Ok((name, reason)) = joined {
                    notify.call(format!("part '{name}': {reason}"), ThreadsafeFunctionCallMode::NonBlocking);
                    return;
                }
            }
        });
        if let Some(previous) = locked(&self.watcher).replace(task.abort_handle()) {
            previous.abort();
        }
        Ok(())
    }
}
