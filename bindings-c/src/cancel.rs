//! `polylock_cancel`: a token another thread fires to give up on a blocking call (an
//! acquisition through `*_acquire_hold`, or `polylock_hold_wait_lost`). Languages with their
//! own cancellation (Go's `context.Context`) make one per call and fire it when their caller
//! gives up; the call then ends with `POLYLOCK_CANCELLED` and, for an acquisition, nothing is
//! left held (the core's binding kit, `kit::cancel`).

use polylock::kit::cancel::CancellationToken;

use crate::args;
use crate::boundary::{call, quietly};
use crate::status::polylock_status;

/// A one-way cancel signal, safe to share between threads. Free it with
/// `polylock_cancel_free()` once no call that was given it is still running.
#[allow(non_camel_case_types)]
pub struct polylock_cancel {
    pub(crate) token: CancellationToken,
}

/// A new, unfired cancel token.
///
/// @param out  receives the token; untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` if `out` is NULL.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_cancel_new(out: *mut *mut polylock_cancel) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { args::out(out, "out") }?;
        *out = Box::into_raw(Box::new(polylock_cancel { token: CancellationToken::new() }));
        Ok(())
    })
}

/// Fire the token, from any thread: every call given it that is still waiting ends with
/// `POLYLOCK_CANCELLED` (an acquisition that was granted first keeps its grant). Firing twice
/// is harmless; a call started with a fired token is cancelled at once.
///
/// # Safety
/// `cancel` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_cancel_fire(cancel: *const polylock_cancel) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let cancel = unsafe { args::handle(cancel, "cancel") }?;
        cancel.token.cancel();
        Ok(())
    })
}

/// Free a token. NULL is ignored.
///
/// # Safety
/// `cancel` is NULL or from `polylock_cancel_new()`, not freed yet, and no call given it is
/// still running.
#[no_mangle]
pub unsafe extern "C" fn polylock_cancel_free(cancel: *mut polylock_cancel) {
    if cancel.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it from here on.
    quietly(|| drop(unsafe { Box::from_raw(cancel) }));
}

/// The token behind an optional `polylock_cancel` argument (NULL: not cancellable).
///
/// # Safety
/// `cancel` is NULL or live.
pub(crate) unsafe fn token_of(cancel: *const polylock_cancel) -> Option<CancellationToken> {
    // SAFETY: the caller's contract.
    unsafe { cancel.as_ref() }.map(|cancel| cancel.token.clone())
}
