//! `polylock_uuid7`, `polylock_ulid`: UUIDv7 and ULID text from the core's generators, one of
//! each per process, so every thread's IDs are increasing. No client needed.

use std::ffi::c_char;

use polylock::id::{format_ulid, format_uuid};
use polylock::kit::ids as process_ids;
use polylock::Error;

use crate::boundary::call;
use crate::status::polylock_status;

/// Bytes a UUID's text needs: 36 characters and the terminating NUL.
pub const POLYLOCK_UUID_TEXT_SIZE: usize = 37;

/// Bytes a ULID's text needs: 26 characters and the terminating NUL.
pub const POLYLOCK_ULID_TEXT_SIZE: usize = 27;

/// Copy `text` and a NUL into `out` (`out_size` bytes).
///
/// # Safety
/// `out` is NULL or writable for `out_size` bytes.
unsafe fn write_text(text: &str, out: *mut c_char, out_size: usize, what: &str) -> polylock::Result<()> {
    if out.is_null() || out_size < text.len() + 1 {
        return Err(Error::invalid_argument(format!(
            "{what} needs a buffer of at least {} bytes, got {}",
            text.len() + 1,
            if out.is_null() { 0 } else { out_size }
        )));
    }
    // SAFETY: the caller's contract, and the size was checked above.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), out, text.len());
        *out.add(text.len()) = 0;
    }
    Ok(())
}

/// Write a UUIDv7 (RFC 9562, method 1: `01895f4c-4d2a-7aaa-…`, lowercase) and a NUL into
/// `out`. Each is greater than every earlier one of this process, even when the wall clock
/// steps back.
///
/// @return `POLYLOCK_INVALID_ARGUMENT` if `out` is NULL or `out_size` is below
/// `POLYLOCK_UUID_TEXT_SIZE`.
///
/// # Safety
/// `out` is NULL or writable for `out_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn polylock_uuid7(out: *mut c_char, out_size: usize) -> polylock_status {
    call(|| {
        let text = format_uuid(process_ids::uuid7()?);
        // SAFETY: the caller's contract.
        unsafe { write_text(&text, out, out_size, "polylock_uuid7") }
    })
}

/// Write a ULID (26 characters of Crockford base32) and a NUL into `out`. Each is greater
/// than every earlier one of this process.
///
/// @return `POLYLOCK_INVALID_ARGUMENT` if `out` is NULL or `out_size` is below
/// `POLYLOCK_ULID_TEXT_SIZE`.
///
/// # Safety
/// `out` is NULL or writable for `out_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn polylock_ulid(out: *mut c_char, out_size: usize) -> polylock_status {
    call(|| {
        let text = format_ulid(process_ids::ulid()?);
        // SAFETY: the caller's contract.
        unsafe { write_text(&text, out, out_size, "polylock_ulid") }
    })
}
