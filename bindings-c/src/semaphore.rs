//! `polylock_semaphore`: N owned permits. A permit is not a thread's: it is named by the id
//! its acquisition returns, and any thread of the process may release it by that id.

use std::ffi::c_char;
use std::sync::Arc;

use polylock::Semaphore;

use crate::args;
use crate::boundary::{call, quietly};
use crate::client::polylock_client;
use crate::runtime::Shared;
use crate::status::polylock_status;

/// A handle on one named semaphore of one client. Free it with `polylock_semaphore_free()`.
#[allow(non_camel_case_types)]
pub struct polylock_semaphore {
    pub(crate) shared: Arc<Shared>,
    pub(crate) semaphore: Semaphore,
}

/// A handle on the semaphore `name` of `permits` permits (the count is fixed by the first
/// use of the name: another count fails when acquiring, with `POLYLOCK_INVALID_ARGUMENT`).
///
/// @param out  receives the new handle on success; untouched on failure.
/// @return `POLYLOCK_UNSUPPORTED` if the backend has no semaphores (only `sqlite://` and
///         `mem://` have them today), `POLYLOCK_INVALID_ARGUMENT` for a NULL argument, a bad
///         name or zero permits.
///
/// # Safety
/// `client` is NULL or live; `name` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_semaphore(
    client: *mut polylock_client,
    name: *const c_char,
    permits: u32,
    out: *mut *mut polylock_semaphore,
) -> polylock_status {
    call(|| {
        let client = crate::client::live(client)?;
        // SAFETY (both): the caller's contract.
        let name = unsafe { args::text(name, "name") }?;
        let out = unsafe { args::out(out, "out") }?;
        let semaphore = client.shared.client().semaphore(name, permits)?;
        *out = Box::into_raw(Box::new(polylock_semaphore { shared: client.shared.clone(), semaphore }));
        Ok(())
    })
}

/// Take a permit. Arguments and statuses as `polylock_lock_acquire()`; the permit's lease is
/// renewed by the watchdog (`lease_ms` `POLYLOCK_LEASE_WATCHDOG`) or fixed, so a crashed
/// holder's permit comes back.
///
/// @param permit_id      receives the permit's id, for `polylock_semaphore_release()`.
/// @param fencing_token  receives the permit's fencing token; may be NULL.
///
/// # Safety
/// `semaphore` is NULL or live; `permit_id` is NULL or writable; `fencing_token` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_acquire(
    semaphore: *mut polylock_semaphore,
    wait_ms: i64,
    lease_ms: i64,
    permit_id: *mut u64,
    fencing_token: *mut u64,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(semaphore, "semaphore") }?;
        let permit_id = unsafe { args::out(permit_id, "permit_id") }?;
        let options = args::acquire_options(wait_ms, lease_ms)?;
        let semaphore = handle.semaphore.clone();
        let permit = handle.shared.block_on(async move { semaphore.acquire_with(options).await })?;
        *permit_id = permit.id();
        // Released by id, so the permit outlives the guard.
        // SAFETY: the caller's contract.
        unsafe { args::set_if_wanted(fencing_token, permit.detach()) };
        Ok(())
    })
}

/// Give back the permit `permit_id` (from any thread).
///
/// @return `POLYLOCK_NOT_OWNER` if this client does not hold that permit (already released,
///         or never this client's); `POLYLOCK_LOST` if its lease ran out first.
///
/// # Safety
/// `semaphore` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_release(
    semaphore: *mut polylock_semaphore,
    permit_id: u64,
) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { args::handle(semaphore, "semaphore") }?;
        let semaphore = handle.semaphore.clone();
        handle.shared.block_on(async move { semaphore.release_permit(permit_id).await })
    })
}

/// Free a semaphore handle. Permits are not released (release them first, or they stay until
/// the client is closed or their lease runs out). NULL is ignored.
///
/// # Safety
/// `semaphore` is NULL or a handle from `polylock_client_semaphore()` not freed yet.
#[no_mangle]
pub unsafe extern "C" fn polylock_semaphore_free(semaphore: *mut polylock_semaphore) {
    if semaphore.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it from here on.
    quietly(|| drop(unsafe { Box::from_raw(semaphore) }));
}
