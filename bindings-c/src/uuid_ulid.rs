//! `polylock_uuid7`, `polylock_ulid`: UUIDv7 and ULID text from the core's generators, one of
//! each per process, so every thread's IDs are increasing; and the core's readings of them
//! (timestamps, ULID <-> UUID). No client needed.

use std::ffi::c_char;

use polylock::id::{
    format_ulid, format_uuid, parse_ulid, parse_uuid, ulid_timestamp_ms, ulid_to_uuid, uuid7_timestamp_ms, uuid_to_ulid,
};
use polylock::kit::ids as process_ids;
use polylock::Error;

use crate::args;
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

/// The Unix time in milliseconds inside a UUIDv7's text (its first 48 bits), as every
/// polylock surface reads it.
///
/// @param uuid  the UUID's 36-character text (either case).
/// @param out   receives the milliseconds; untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL argument, text that is no UUID, or a UUID
///         of another version than 7.
///
/// # Safety
/// `uuid` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_uuid7_timestamp_ms(uuid: *const c_char, out: *mut u64) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let uuid = parse_uuid(unsafe { args::text(uuid, "uuid") }?)?;
        let out = unsafe { args::out(out, "out") }?;
        *out = uuid7_timestamp_ms(uuid)?;
        Ok(())
    })
}

/// The Unix time in milliseconds inside a ULID's text (its first 48 bits).
///
/// @param ulid  the ULID's 26 characters of Crockford base32.
/// @param out   receives the milliseconds; untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL argument or text that is no ULID.
///
/// # Safety
/// `ulid` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_ulid_timestamp_ms(ulid: *const c_char, out: *mut u64) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let ulid = parse_ulid(unsafe { args::text(ulid, "ulid") }?)?;
        let out = unsafe { args::out(out, "out") }?;
        *out = ulid_timestamp_ms(ulid);
        Ok(())
    })
}

/// Write the UUID with the same 128 bits as the ULID `ulid` (lowercase, and a NUL) into
/// `out`: the conversion every polylock surface and the ULID spec's libraries make.
///
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL argument, text that is no ULID, or an
///         `out_size` below `POLYLOCK_UUID_TEXT_SIZE`.
///
/// # Safety
/// `ulid` is NULL or NUL-terminated; `out` is NULL or writable for `out_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn polylock_ulid_to_uuid(
    ulid: *const c_char,
    out: *mut c_char,
    out_size: usize,
) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let ulid = parse_ulid(unsafe { args::text(ulid, "ulid") }?)?;
        // SAFETY: the caller's contract.
        unsafe { write_text(&format_uuid(ulid_to_uuid(ulid)), out, out_size, "polylock_ulid_to_uuid") }
    })
}

/// Write the ULID with the same 128 bits as the UUID `uuid` (and a NUL) into `out`.
///
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL argument, text that is no UUID, or an
///         `out_size` below `POLYLOCK_ULID_TEXT_SIZE`.
///
/// # Safety
/// `uuid` is NULL or NUL-terminated; `out` is NULL or writable for `out_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn polylock_uuid_to_ulid(
    uuid: *const c_char,
    out: *mut c_char,
    out_size: usize,
) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let uuid = parse_uuid(unsafe { args::text(uuid, "uuid") }?)?;
        // SAFETY: the caller's contract.
        unsafe { write_text(&format_ulid(uuid_to_ulid(uuid)), out, out_size, "polylock_uuid_to_ulid") }
    })
}
