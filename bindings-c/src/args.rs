//! Checking what C hands us: NULL pointers and strings that are not UTF-8 become
//! `INVALID_ARGUMENT` errors that name the argument.

use std::ffi::{c_char, CStr};

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

/// The core's acquire options from C's: `wait_ms` negative waits forever, 0 tries once;
/// `lease_ms` 0 lets the watchdog keep the hold, positive fixes it, negative is an error.
pub fn acquire_options(wait_ms: i64, lease_ms: i64) -> Result<AcquireOptions> {
    Ok(AcquireOptions {
        wait: polylock::duration::wait_from_millis(wait_ms),
        lease: match lease_ms {
            0 => None,
            millis => Some(polylock::duration::lease_from_millis(millis)?),
        },
    })
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
