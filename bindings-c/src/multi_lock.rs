//! `polylock_multi_lock` and `polylock_multi_hold`: several locks of one client taken as one
//! (in the one canonical order, under one deadline, everything given back on failure), the
//! core's `MultiLock`. Each acquisition is an owner of its own, as `polylock_hold` is, so
//! any thread (or goroutine) may release it.

use std::ffi::{c_char, CString};
use std::sync::{Arc, Mutex, MutexGuard};

use polylock::kit::cancel::cancellable;
use polylock::kit::owner_ids::next_owner_id;
use polylock::{Error, LostWatch, MultiGuard, MultiLock};

use crate::args;
use crate::boundary::{call, quietly};
use crate::cancel::{polylock_cancel, token_of};
use crate::client::polylock_client;
use crate::runtime::Shared;
use crate::status::polylock_status;

/// Several named locks of one client, acquired as one. Holds nothing by itself; safe to
/// share between threads. Free it with `polylock_multi_lock_free()`.
#[allow(non_camel_case_types)]
pub struct polylock_multi_lock {
    shared: Arc<Shared>,
    locks: MultiLock,
}

/// One acquisition of every part of a multi-lock, its own owner. Release it with
/// `polylock_multi_hold_release()`, then free it with `polylock_multi_hold_free()` (freeing
/// an unreleased one releases it in the background).
#[allow(non_camel_case_types)]
pub struct polylock_multi_hold {
    shared: Arc<Shared>,
    /// `None` once released.
    guard: Mutex<Option<MultiGuard>>,
    /// Per part, in canonical order: name, fencing token (`None` on RedLock).
    parts: Vec<(CString, Option<u64>)>,
    lost: Vec<LostWatch>,
}

impl polylock_multi_hold {
    fn guard(&self) -> MutexGuard<'_, Option<MultiGuard>> {
        self.guard.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A multi-lock over the mutexes `names[0..count]` (the backend's default lock kind).
///
/// @param out  receives the handle on success; untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL argument, no names, a bad name or a name
///         given twice.
///
/// # Safety
/// `client` is NULL or live; `names` is NULL (with `count` 0) or `count` NULL or
/// NUL-terminated strings; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_multi_lock(
    client: *mut polylock_client,
    names: *const *const c_char,
    count: usize,
    out: *mut *mut polylock_multi_lock,
) -> polylock_status {
    call(|| {
        let client = crate::client::live(client)?;
        // SAFETY: the caller's contract.
        let out = unsafe { args::out(out, "out") }?;
        let list = unsafe { args::texts(names, count, "names") }?;
        let locks = client.shared.client().multi_lock(&list)?;
        *out = Box::into_raw(Box::new(polylock_multi_lock { shared: client.shared.clone(), locks }));
        Ok(())
    })
}

/// Take every part as a new owner of its own, within ONE wait for the whole multi-lock. On
/// any failure, the parts taken so far are given back before this returns.
///
/// @param wait_ms, lease_ms  as `polylock_lock_acquire()` (the lease is each part's).
/// @param cancel  NULL, or a token another thread may fire to give up
///                (`POLYLOCK_CANCELLED`, nothing left held).
/// @param out     receives the hold on success; untouched on failure.
///
/// # Safety
/// `multi_lock` and `cancel` are NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_multi_lock_acquire(
    multi_lock: *mut polylock_multi_lock,
    wait_ms: i64,
    lease_ms: i64,
    cancel: *const polylock_cancel,
    out: *mut *mut polylock_multi_hold,
) -> polylock_status {
    call(|| {
        // SAFETY (all three): the caller's contract.
        let handle = unsafe { args::handle(multi_lock, "multi_lock") }?;
        let out = unsafe { args::out(out, "out") }?;
        let cancel = unsafe { token_of(cancel) };
        let options = args::acquire_options(wait_ms, lease_ms)?;
        let locks = handle.locks.clone().with_local_id(next_owner_id());
        let what = format!("multi-lock of {}", handle.locks.names().join(", "));
        let guard = handle.shared.block_on(async move {
            let acquiring = locks.acquire_with(options);
            match cancel {
                Some(cancel) => cancellable(&what, &cancel, acquiring).await,
                None => acquiring.await,
            }
        })?;
        let mut parts = Vec::new();
        for (name, token) in guard.fencing_tokens_opt() {
            let name = CString::new(name).map_err(|_| Error::internal("a lock name holds a NUL byte"))?;
            parts.push((name, token));
        }
        let lost = guard.lost_watches();
        let hold = polylock_multi_hold { shared: handle.shared.clone(), guard: Mutex::new(Some(guard)), parts, lost };
        *out = Box::into_raw(Box::new(hold));
        Ok(())
    })
}

/// How many parts the hold has (0 for NULL).
///
/// # Safety
/// `hold` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_multi_hold_count(hold: *const polylock_multi_hold) -> usize {
    // SAFETY: the caller's contract.
    unsafe { hold.as_ref() }.map_or(0, |hold| hold.parts.len())
}

/// Part `index` (0-based, in the canonical order the parts are taken in).
///
/// @param name           receives the part's name, owned by the hold (valid until it is
///                       freed; do not free it); may be NULL.
/// @param fencing_token  receives the part's fencing token (0 when it has none); may be NULL.
/// @param has_token      receives false on a backend without fencing tokens (RedLock); may
///                       be NULL.
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL hold or an index out of range.
///
/// # Safety
/// `hold` is NULL or live; the out pointers are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_multi_hold_part(
    hold: *const polylock_multi_hold,
    index: usize,
    name: *mut *const c_char,
    fencing_token: *mut u64,
    has_token: *mut bool,
) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let hold = unsafe { args::handle(hold, "hold") }?;
        let (part_name, token) = hold.parts.get(index).ok_or_else(|| {
            Error::invalid_argument(format!("part {index} of a multi-lock of {} parts", hold.parts.len()))
        })?;
        // SAFETY (all three): the caller's contract.
        unsafe { args::set_if_wanted(name, part_name.as_ptr()) };
        unsafe { args::set_if_wanted(fencing_token, token.unwrap_or(0)) };
        unsafe { args::set_if_wanted(has_token, token.is_some()) };
        Ok(())
    })
}

/// Whether any part is no longer held by the store. False for NULL.
///
/// # Safety
/// `hold` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_multi_hold_is_lost(hold: *const polylock_multi_hold) -> bool {
    let mut lost = false;
    // SAFETY: the caller's contract.
    if let Some(hold) = unsafe { hold.as_ref() } {
        quietly(|| lost = hold.lost.iter().any(LostWatch::is_lost));
    }
    lost
}

/// Give every part back (from any thread), in reverse order, even if one fails.
///
/// @return the first failure: `POLYLOCK_LOST` if a part was lost meanwhile,
///         `POLYLOCK_NOT_OWNER` if the hold was already released.
///
/// # Safety
/// `hold` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_multi_hold_release(hold: *const polylock_multi_hold) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let hold = unsafe { args::handle(hold, "hold") }?;
        let guard = hold
            .guard()
            .take()
            .ok_or_else(|| Error::not_owner("this multi-lock hold was already released; acquire again"))?;
        hold.shared.block_on(guard.release())
    })
}

/// Free a hold. One not released yet is released in the background. NULL is ignored.
///
/// # Safety
/// `hold` is NULL or from `polylock_multi_lock_acquire()`, not freed yet, and no call on it
/// is still running.
#[no_mangle]
pub unsafe extern "C" fn polylock_multi_hold_free(hold: *mut polylock_multi_hold) {
    if hold.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it from here on. The core guard, dropped with
    // it, releases in the background.
    quietly(|| drop(unsafe { Box::from_raw(hold) }));
}

/// Free a multi-lock handle (its holds stay valid). NULL is ignored.
///
/// # Safety
/// `multi_lock` is NULL or from `polylock_client_multi_lock()` and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn polylock_multi_lock_free(multi_lock: *mut polylock_multi_lock) {
    if multi_lock.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it from here on.
    quietly(|| drop(unsafe { Box::from_raw(multi_lock) }));
}
