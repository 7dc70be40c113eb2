//! `polylock_hold`: one acquisition that is its own owner, for languages whose threads are no
//! owners (Go's goroutines move between OS threads). Each `*_acquire_hold` call draws a fresh
//! owner id from the kit, so two holds exclude each other even when taken through one handle
//! from one thread; `polylock_hold_reenter()` is the one way to take the same hold again.
//! Acquisitions take an optional `polylock_cancel` (the kit's `cancellable`: nothing is left
//! held), and `polylock_hold_wait_lost()` blocks until the hold is lost.
//!
//! The thread-owned calls (`polylock_lock_acquire()` and friends) are untouched beside these.

use std::future::{pending, Future};
use std::sync::{Arc, Mutex, MutexGuard};

use polylock::kit::cancel::{cancellable, CancellationToken};
use polylock::kit::owner_ids::next_owner_id;
use polylock::kit::{AnyGuard, LockTarget};
use polylock::{Error, LostWatch, Result};

use crate::args;
use crate::boundary::{call, quietly};
use crate::cancel::{polylock_cancel, token_of};
use crate::lock::polylock_lock;
use crate::runtime::Shared;
use crate::rwlock::polylock_rwlock;
use crate::semaphore::polylock_semaphore;
use crate::status::polylock_status;

/// One acquisition, owned by itself (not by a thread): any thread may inspect, re-enter,
/// release or free it. Release it with `polylock_hold_release()`, then free it with
/// `polylock_hold_free()` (freeing an unreleased hold releases it in the background).
#[allow(non_camel_case_types)]
pub struct polylock_hold {
    shared: Arc<Shared>,
    /// `None` once released.
    guard: Mutex<Option<AnyGuard>>,
    name: String,
    token: u64,
    lost: LostWatch,
    /// Fired when the hold is released or freed: ends `polylock_hold_wait_lost()` waits.
    ended: CancellationToken,
}

impl polylock_hold {
    fn new(shared: Arc<Shared>, guard: AnyGuard) -> polylock_hold {
        polylock_hold {
            shared,
            name: guard.name().to_string(),
            token: guard.fencing_token(),
            lost: guard.lost_watch(),
            guard: Mutex::new(Some(guard)),
            ended: CancellationToken::new(),
        }
    }

    fn guard(&self) -> MutexGuard<'_, Option<AnyGuard>> {
        // Nothing panics while holding it; if something ever did, the Option is still valid.
        self.guard.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn released_error(&self) -> Error {
        Error::not_owner(format!("this hold of '{}' was already released; acquire again", self.name))
    }
}

/// Run `acquiring` on the client's runtime, given up on when `cancel` fires, and hand the
/// grant to C as a new hold.
///
/// # Safety
/// `cancel` is NULL or live; `out` is NULL or writable.
unsafe fn acquire_into(
    shared: &Arc<Shared>,
    what: String,
    cancel: *const polylock_cancel,
    out: *mut *mut polylock_hold,
    acquiring: impl Future<Output = Result<AnyGuard>>,
) -> Result<()> {
    // SAFETY (both): the caller's contract.
    let out = unsafe { args::out(out, "out") }?;
    let cancel = unsafe { token_of(cancel) };
    let guard = shared.block_on(async move {
        match cancel {
            Some(cancel) => cancellable(&what, &cancel, acquiring).await,
            None => acquiring.await,
        }
    })?;
    *out = Box::into_raw(Box::new(polylock_hold::new(shared.clone(), guard)));
    Ok(())
}

/// Acquire a target as a fresh owner.
///
/// # Safety
/// As [`acquire_into`].
unsafe fn acquire_target(
    shared: &Arc<Shared>,
    target: &LockTarget,
    wait_ms: i64,
    lease_ms: i64,
    cancel: *const polylock_cancel,
    out: *mut *mut polylock_hold,
) -> Result<()> {
    let options = args::acquire_options(wait_ms, lease_ms)?;
    let target = target.owned_by(next_owner_id());
    let what = format!("{} lock '{}'", target.kind_name(), target.name());
    // SAFETY: the caller's contract.
    unsafe { acquire_into(shared, what, cancel, out, async move { target.acquire(options).await }) }
}

/// Acquire the lock as a new owner of its own (not the calling thread): the result is a hold
/// that excludes every other hold, even one taken through the same handle by the same thread.
///
/// @param wait_ms, lease_ms  as `polylock_lock_acquire()`.
/// @param cancel  NULL, or a token another thread may fire to give up: the call then ends
///                with `POLYLOCK_CANCELLED` and nothing is left held.
/// @param out     receives the hold on success; untouched on failure.
/// @return `POLYLOCK_OK`, `POLYLOCK_TIMEOUT`, `POLYLOCK_CANCELLED`, ...
///
/// # Safety
/// `lock` and `cancel` are NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_acquire_hold(
    lock: *mut polylock_lock,
    wait_ms: i64,
    lease_ms: i64,
    cancel: *const polylock_cancel,
    out: *mut *mut polylock_hold,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(lock, "lock") }?;
        let target = LockTarget::Lock(handle.lock.clone());
        unsafe { acquire_target(&handle.shared, &target, wait_ms, lease_ms, cancel, out) }
    })
}

/// Take the read side as a new owner of its own; as `polylock_lock_acquire_hold()`.
///
/// # Safety
/// `rw` and `cancel` are NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_rwlock_read_acquire_hold(
    rw: *mut polylock_rwlock,
    wait_ms: i64,
    lease_ms: i64,
    cancel: *const polylock_cancel,
    out: *mut *mut polylock_hold,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(rw, "rwlock") }?;
        let target = LockTarget::Read(handle.rw.clone());
        unsafe { acquire_target(&handle.shared, &target, wait_ms, lease_ms, cancel, out) }
    })
}

/// Take the write side as a new owner of its own; as `polylock_lock_acquire_hold()`. (A new
/// owner holds no read side, so this never meets the upgrade refusal: re-enter a write hold
/// for nested writes, and take the read side through `polylock_rwlock_read_acquire()` on a
/// thread for downgrades.)
///
/// # Safety
/// `rw` and `cancel` are NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_rwlock_write_acquire_hold(
    rw: *mut polylock_rwlock,
    wait_ms: i64,
    lease_ms: i64,
    cancel: *const polylock_cancel,
    out: *mut *mut polylock_hold,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(rw, "rwlock") }?;
        let target = LockTarget::Write(handle.rw.clone());
        unsafe { acquire_target(&handle.shared, &target, wait_ms, lease_ms, cancel, out) }
    })
}

/// Take a permit as a hold (a permit is always an owner of its own); as
/// `polylock_lock_acquire_hold()`. `polylock_hold_permit_id()` gives its id.
///
/// # Safety
/// `semaphore` and `cancel` are NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_acquire_hold(
    semaphore: *mut polylock_semaphore,
    wait_ms: i64,
    lease_ms: i64,
    cancel: *const polylock_cancel,
    out: *mut *mut polylock_hold,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(semaphore, "semaphore") }?;
        let options = args::acquire_options(wait_ms, lease_ms)?;
        let semaphore = handle.semaphore.clone();
        let what = format!("a permit of semaphore '{}'", semaphore.name());
        let acquiring = async move { semaphore.acquire_with(options).await.map(AnyGuard::Permit) };
        unsafe { acquire_into(&handle.shared, what, cancel, out, acquiring) }
    })
}

/// The hold's fencing token (strictly greater than every earlier token for its name); 0 for
/// NULL. It stays readable after the release.
///
/// # Safety
/// `hold` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_hold_fencing_token(hold: *const polylock_hold) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { hold.as_ref() }.map_or(0, |hold| hold.token)
}

/// A semaphore permit's id (as `polylock_semaphore_release()` takes), 0 for a lock or NULL.
///
/// # Safety
/// `hold` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_hold_permit_id(hold: *const polylock_hold) -> u64 {
    let mut id = 0;
    // SAFETY: the caller's contract.
    if let Some(hold) = unsafe { hold.as_ref() } {
        quietly(|| id = hold.guard().as_ref().and_then(AnyGuard::permit_id).unwrap_or(0));
    }
    id
}

/// Whether the backend no longer has this hold (lease ran out, renewal failed, session
/// ended, client closed). False for NULL.
///
/// # Safety
/// `hold` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_hold_is_lost(hold: *const polylock_hold) -> bool {
    let mut lost = false;
    // SAFETY: the caller's contract.
    if let Some(hold) = unsafe { hold.as_ref() } {
        quietly(|| lost = hold.lost.is_lost());
    }
    lost
}

/// Block until the hold is lost, or the wait ends otherwise.
///
/// @param timeout_ms  how long to wait: `POLYLOCK_WAIT_FOREVER` forever; any other
///                    negative value is `POLYLOCK_INVALID_ARGUMENT`.
/// @param cancel      NULL, or a token another thread may fire to stop waiting.
/// @param lost        receives true when the hold is (or already was) lost, false when it was
///                    released or freed meanwhile (it can no longer be lost).
/// @return `POLYLOCK_OK` (see `lost`), `POLYLOCK_TIMEOUT` when `timeout_ms` ran out first,
///         `POLYLOCK_CANCELLED` when `cancel` fired first, `POLYLOCK_CONNECTION` when the
///         client was freed.
///
/// # Safety
/// `hold` and `cancel` are NULL or live for the whole call; `lost` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_hold_wait_lost(
    hold: *const polylock_hold,
    timeout_ms: i64,
    cancel: *const polylock_cancel,
    lost: *mut bool,
) -> polylock_status {
    call(|| {
        // SAFETY (all three): the caller's contract.
        let hold = unsafe { args::handle(hold, "hold") }?;
        let lost_out = unsafe { args::out(lost, "lost") }?;
        let cancel = unsafe { token_of(cancel) };
        let limit = args::wait("timeout_ms", timeout_ms)?;
        let (watch, ended, name) = (hold.lost.clone(), hold.ended.clone(), hold.name.clone());
        *lost_out = hold.shared.block_on(async move {
            let cancelled = async {
                match &cancel {
                    Some(cancel) => cancel.cancelled().await,
                    None => pending().await,
                }
            };
            let ran_out = async {
                match limit {
                    Some(limit) => tokio::time::sleep(limit).await,
                    None => pending().await,
                }
            };
            tokio::select! {
                // A hold that is already lost says so, whatever else is true.
                biased;
                _ = watch.wait() => Ok(true),
                () = ended.cancelled() => Ok(false),
                () = cancelled => Err(Error::cancelled(format!("the wait for the loss of '{name}' was cancelled"))),
                () = ran_out => Err(Error::timeout(format!("'{name}' was not lost within {timeout_ms} ms"))),
            }
        })?;
        Ok(())
    })
}

/// Take the same hold once more as its owner (reentrancy), at once and with the same fencing
/// token. Each hold is released on its own; the lock is free when all of them are.
///
/// @param out  receives the new hold on success; untouched on failure.
/// @return `POLYLOCK_LOST` if this hold was lost (never a fresh hold),
///         `POLYLOCK_NOT_OWNER` if it was already released, `POLYLOCK_INVALID_ARGUMENT`
///         for a semaphore permit (take another permit instead).
///
/// # Safety
/// `hold` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_hold_reenter(
    hold: *const polylock_hold,
    out: *mut *mut polylock_hold,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let hold = unsafe { args::handle(hold, "hold") }?;
        let out = unsafe { args::out(out, "out") }?;
        let reentering = match hold.guard().as_ref() {
            Some(guard) => guard.reentry()?,
            None => return Err(hold.released_error()),
        };
        let guard = hold.shared.block_on(reentering)?;
        *out = Box::into_raw(Box::new(polylock_hold::new(hold.shared.clone(), guard)));
        Ok(())
    })
}

/// Give this acquisition back (from any thread). The hold must still be freed.
///
/// @return `POLYLOCK_LOST` if the hold was lost meanwhile, `POLYLOCK_NOT_OWNER` if it was
///         already released.
///
/// # Safety
/// `hold` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_hold_release(hold: *const polylock_hold) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let hold = unsafe { args::handle(hold, "hold") }?;
        let guard = hold.guard().take().ok_or_else(|| hold.released_error())?;
        hold.ended.cancel();
        hold.shared.block_on(guard.release())
    })
}

/// Free a hold. One not released yet is released in the background (its outcome unknown).
/// NULL is ignored.
///
/// # Safety
/// `hold` is NULL or from this library, not freed yet, and no call on it is still running.
#[no_mangle]
pub unsafe extern "C" fn polylock_hold_free(hold: *mut polylock_hold) {
    if hold.is_null() {
        return;
    }
    quietly(|| {
        // SAFETY: the caller's contract: we own it from here on.
        let hold = unsafe { Box::from_raw(hold) };
        hold.ended.cancel();
        // The core guard, dropped with it, releases in the background.
        drop(hold);
    });
}
