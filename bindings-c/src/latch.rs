//! `polylock_latch`: a countdown latch shared through the store (Redisson's
//! `RCountDownLatch` layout on Redis). One side sets a count, others count it down, anyone
//! waits for zero. Nothing is owned and nothing expires; the core's `Latch` does the work.

use std::ffi::c_char;
use std::sync::Arc;

use polylock::kit::cancel::CancellationToken;
use polylock::{Error, Latch};

use crate::args;
use crate::boundary::{call, quietly};
use crate::cancel::{polylock_cancel, token_of};
use crate::client::polylock_client;
use crate::runtime::Shared;
use crate::status::polylock_status;

/// A handle on one named latch of one client. Holds and reads nothing by itself; safe to
/// share between threads. Free it with `polylock_latch_free()`.
#[allow(non_camel_case_types)]
pub struct polylock_latch {
    shared: Arc<Shared>,
    latch: Latch,
}

/// A handle on the latch `name`.
///
/// @param out  receives the handle on success; untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL argument or a bad name,
///         `POLYLOCK_UNSUPPORTED` if the backend has no latches (RedLock).
///
/// # Safety
/// `client` is NULL or live; `name` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_latch(
    client: *mut polylock_client,
    name: *const c_char,
    out: *mut *mut polylock_latch,
) -> polylock_status {
    call(|| {
        let client = crate::client::live(client)?;
        // SAFETY (both): the caller's contract.
        let name = unsafe { args::text(name, "name") }?;
        let out = unsafe { args::out(out, "out") }?;
        let latch = client.shared.client().latch(name)?;
        *out = Box::into_raw(Box::new(polylock_latch { shared: client.shared.clone(), latch }));
        Ok(())
    })
}

/// Set the count to `count` if the latch is open (at zero, or never set); Redisson's
/// `trySetCount`.
///
/// @param set  receives whether it was set (false: the latch was closed already); may be NULL.
/// @return `POLYLOCK_INVALID_ARGUMENT` for a count of 0 or above 2^63-1.
///
/// # Safety
/// `latch` is NULL or live; `set` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_try_set_count(
    latch: *mut polylock_latch,
    count: u64,
    set: *mut bool,
) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { args::handle(latch, "latch") }?;
        let core = handle.latch.clone();
        let was_set = handle.shared.block_on(async move { core.try_set_count(count).await })?;
        // SAFETY: the caller's contract.
        unsafe { args::set_if_wanted(set, was_set) };
        Ok(())
    })
}

/// Take one off the count (never below zero); the waiters are released when it reaches zero.
///
/// # Safety
/// `latch` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_count_down(latch: *mut polylock_latch) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { args::handle(latch, "latch") }?;
        let core = handle.latch.clone();
        handle.shared.block_on(async move { core.count_down().await })
    })
}

/// The count now (0: the latch is open).
///
/// # Safety
/// `latch` is NULL or live; `count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_count(latch: *mut polylock_latch, count: *mut u64) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(latch, "latch") }?;
        let count = unsafe { args::out(count, "count") }?;
        let core = handle.latch.clone();
        *count = handle.shared.block_on(async move { core.count().await })?;
        Ok(())
    })
}

/// Block until the count reaches zero.
///
/// @param timeout_ms  how long to wait: `POLYLOCK_WAIT_FOREVER` without limit, 0 only a
///                    look; any other negative value is `POLYLOCK_INVALID_ARGUMENT`.
/// @param cancel      NULL, or a token another thread may fire to stop waiting.
/// @param reached     receives true once the count is zero, false when `timeout_ms` ran out
///                    first (a timeout is no error here, as in Redisson's `await`: this is
///                    the try form; `polylock_latch_await_zero()` is the waiting one).
/// @return `POLYLOCK_CANCELLED` when `cancel` fired first, `POLYLOCK_CONNECTION` when the
///         client was closed meanwhile.
///
/// # Safety
/// `latch` and `cancel` are NULL or live for the whole call; `reached` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_await(
    latch: *mut polylock_latch,
    timeout_ms: i64,
    cancel: *const polylock_cancel,
    reached: *mut bool,
) -> polylock_status {
    call(|| {
        // SAFETY (all three): the caller's contract.
        let handle = unsafe { args::handle(latch, "latch") }?;
        let reached = unsafe { args::out(reached, "reached") }?;
        let cancel = unsafe { token_of(cancel) }.unwrap_or_else(CancellationToken::new);
        let timeout = args::wait("timeout_ms", timeout_ms)?;
        let core = handle.latch.clone();
        *reached = handle.shared.block_on(async move { core.try_await_zero_cancellable(timeout, &cancel).await })?;
        Ok(())
    })
}

/// The waiting form of `polylock_latch_await()`: block until the count reaches zero, and
/// end with `POLYLOCK_TIMEOUT` when the wait runs out first (as every other waiting form).
///
/// @param wait_ms  how long to wait: `POLYLOCK_WAIT_FOREVER` without limit, 0 only a look,
///                 up to 365 days; any other value is `POLYLOCK_INVALID_ARGUMENT`.
/// @param cancel   NULL, or a token another thread may fire to stop waiting.
/// @return `POLYLOCK_OK` once the count is zero, `POLYLOCK_TIMEOUT` when `wait_ms` ran out,
///         `POLYLOCK_CANCELLED` when `cancel` fired first, `POLYLOCK_CONNECTION` when the
///         client was closed meanwhile.
///
/// # Safety
/// `latch` and `cancel` are NULL or live for the whole call.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_await_zero(
    latch: *mut polylock_latch,
    wait_ms: i64,
    cancel: *const polylock_cancel,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(latch, "latch") }?;
        let cancel = unsafe { token_of(cancel) }.unwrap_or_else(CancellationToken::new);
        let wait = args::wait("wait_ms", wait_ms)?;
        let core = handle.latch.clone();
        let reached = handle.shared.block_on(async move { core.try_await_zero_cancellable(wait, &cancel).await })?;
        if reached {
            return Ok(());
        }
        Err(Error::timeout(format!("latch '{}' did not reach zero within {wait_ms} ms", handle.latch.name())))
    })
}

/// Free a latch handle. NULL is ignored.
///
/// # Safety
/// `latch` is NULL or from `polylock_client_latch()`, not freed yet, and no call on it is
/// still running.
#[no_mangle]
pub unsafe extern "C" fn polylock_latch_free(latch: *mut polylock_latch) {
    if latch.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it from here on.
    quietly(|| drop(unsafe { Box::from_raw(latch) }));
}
