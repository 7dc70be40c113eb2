//! Checking what C hands us: NULL pointers and strings that are not UTF-8 become
//! `INVALID_ARGUMENT` errors that name the argument.

use std::ffi::{c_char, CStr};
use std::time::Duration;

use polylock::{AcquireOptions, Error, Result};

/// Borrow the object behind a handle, or say which argument was NULL.
///
/// # Safety
/// `ptr` is NULL or was returned by this library and not freed yet.
pub unsafe fn handle<'a, T>(ptr: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: the caller's contract above.
    unsafe { ptr.as_ref() }.ok_or_else(|| Error::invalid_argument(format!("{what} is NULL")))
}

/// Borrow the place a result goes, or say which argument was NULL.
///
/// # Safety
/// `ptr` is NULL or points to writable memory for one `T`.
pub unsafe fn out<'a, T>(ptr: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: the caller's contract above.
    unsafe { ptr.as_mut() }.ok_or_else(|| Error::invalid_argument(format!("{what} is NULL")))
}

/// A C string as UTF-8 text.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that lives for `'a`.
pub unsafe fn text<'a>(ptr: *const c_char, what: &str) -> Result<&'a str> {
    if ptr.is_null() {
        return Err(Error::invalid_argument(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    let bytes = unsafe { CStr::from_ptr(ptr) };
    bytes.to_str().map_err(|err| Error::invalid_argument(format!("{what} is not valid UTF-8: {err}")))
}

/// An array of `count` C strings as UTF-8 texts, each named `what[i]` in errors (NULL is
/// fine for 0).
///
/// # Safety
/// `ptr` is NULL or points to `count` pointers, each NULL or NUL-terminated, that live for
/// `'a`.
pub unsafe fn texts<'a>(ptr: *const *const c_char, count: usize, what: &str) -> Result<Vec<&'a str>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if ptr.is_null() {
        return Err(Error::invalid_argument(format!("{what} is NULL but count is {count}")));
    }
    // SAFETY: the caller's contract.
    let pointers = unsafe { std::slice::from_raw_parts(ptr, count) };
    pointers
        .iter()
        .enumerate()
        // SAFETY: the caller's contract.
        .map(|(index, text_ptr)| unsafe { text(*text_ptr, &format!("{what}[{index}]")) })
        .collect()
}

/// `wait_ms` (or `timeout_ms`) value that waits as long as it takes. It is the only negative
/// wait accepted: any other is `POLYLOCK_INVALID_ARGUMENT`. 0 tries once (or only looks).
pub const POLYLOCK_WAIT_FOREVER: i64 = -1;

/// `lease_ms` value that lets the watchdog renew a hold while the client lives. It is the
/// only lease below 10 ms accepted: 0, any other negative value, 1 to 9 ms and more than 365
/// days are `POLYLOCK_INVALID_ARGUMENT`.
pub const POLYLOCK_LEASE_WATCHDOG: i64 = -1;

/// A C wait in milliseconds, `what` naming the argument in errors: `POLYLOCK_WAIT_FOREVER`
/// is no limit (`None`), 0 to the core's longest wait (365 days) a limit, anything else
/// `InvalidArgument`. Every C call that waits reads its wait here.
pub fn wait(what: &str, millis: i64) -> Result<Option<Duration>> {
    match millis {
        POLYLOCK_WAIT_FOREVER => Ok(None),
        millis if millis < 0 => Err(Error::invalid_argument(format!(
            "{what} must be 0 or more milliseconds, or POLYLOCK_WAIT_FOREVER ({POLYLOCK_WAIT_FOREVER}) to wait \
             as long as it takes; got {millis}"
        ))),
        millis => polylock::duration::check_wait(what, Duration::from_millis(millis.unsigned_abs())).map(Some),
    }
}

/// A C lease in milliseconds, `what` naming the argument in errors: `POLYLOCK_LEASE_WATCHDOG`
/// lets the watchdog renew the hold (`None`), 10 ms to 365 days fixes it (the core's
/// limits), anything else is `InvalidArgument`. Every C call that takes a lease reads it here.
pub fn lease(what: &str, millis: i64) -> Result<Option<Duration>> {
    match millis {
        POLYLOCK_LEASE_WATCHDOG => Ok(None),
        millis if millis <= 0 => Err(Error::invalid_argument(format!(
            "{what} must be positive milliseconds, or POLYLOCK_LEASE_WATCHDOG ({POLYLOCK_LEASE_WATCHDOG}) to let \
             the watchdog renew the hold; got {millis}"
        ))),
        millis => polylock::duration::check_lease(what, Duration::from_millis(millis.unsigned_abs())).map(Some),
    }
}

/// The core's acquire options from C's `wait_ms` and `lease_ms` (see [`wait`], [`lease`]).
pub fn acquire_options(wait_ms: i64, lease_ms: i64) -> Result<AcquireOptions> {
    Ok(AcquireOptions { wait: wait("wait_ms", wait_ms)?, lease: lease("lease_ms", lease_ms)? })
}

/// Write `value` where the caller asked for it, if it did (NULL: not wanted).
///
/// # Safety
/// `ptr` is NULL or points to writable memory for one `T`.
pub unsafe fn set_if_wanted<T>(ptr: *mut T, value: T) {
    // SAFETY: the caller's contract above.
    if let Some(slot) = unsafe { ptr.as_mut() } {
        *slot = value;
    }
}

/// The caller's array of `count` IDs to fill (NULL is fine for 0).
///
/// # Safety
/// `ptr` is NULL or writable for `count` `u64`s.
pub unsafe fn id_array<'a>(ptr: *mut u64, count: usize) -> Result<&'a mut [u64]> {
    // Above the bound the call is refused before the array is looked at: no slice of a
    // count the caller could not have allocated is ever made.
    polylock::id::check_batch(count)?;
    if count == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() {
        return Err(Error::invalid_argument(format!("ids is NULL but count is {count}")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, count) })
}
