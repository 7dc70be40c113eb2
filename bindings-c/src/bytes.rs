//! `polylock_bytes`: a byte string this library hands to C (a value, a stored response).
//! C owns it from then on and gives it back with `polylock_bytes_free()`. Bytes C hands in
//! are (pointer, length) pairs that are only borrowed for the call.

use crate::boundary::quietly;
use polylock::{Error, Result};

/// Bytes allocated by this library and owned by the caller: free them with
/// `polylock_bytes_free()` (which also resets the struct). An empty string is
/// `{NULL, 0}`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct polylock_bytes {
    /// The bytes; NULL when `len` is 0.
    pub data: *mut u8,
    /// How many bytes `data` holds.
    pub len: usize,
}

impl polylock_bytes {
    pub const EMPTY: polylock_bytes = polylock_bytes { data: std::ptr::null_mut(), len: 0 };

    /// Hand `bytes` to C.
    pub fn from_vec(bytes: Vec<u8>) -> polylock_bytes {
        if bytes.is_empty() {
            return polylock_bytes::EMPTY;
        }
        let boxed = bytes.into_boxed_slice();
        let len = boxed.len();
        polylock_bytes { data: Box::into_raw(boxed).cast::<u8>(), len }
    }
}

/// Borrow bytes C passed as a pointer and a length (NULL is fine with length 0).
///
/// # Safety
/// `data` is NULL or points to `len` readable bytes that live for `'a`.
pub unsafe fn borrowed<'a>(data: *const u8, len: usize, what: &str) -> Result<&'a [u8]> {
    if data.is_null() {
        return if len == 0 {
            Ok(&[])
        } else {
            Err(Error::invalid_argument(format!("{what} is NULL but its length is {len}")))
        };
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(data, len) })
}

/// Free bytes this library handed out, and reset `*bytes` to `{NULL, 0}` (so freeing twice
/// is harmless). NULL, and `{NULL, 0}`, are ignored.
///
/// # Safety
/// `bytes` is NULL or points to a `polylock_bytes` that this library filled and that was
/// not freed since (or that is `{NULL, 0}`).
#[no_mangle]
pub unsafe extern "C" fn polylock_bytes_free(bytes: *mut polylock_bytes) {
    // SAFETY: the caller's contract.
    let Some(bytes) = (unsafe { bytes.as_mut() }) else { return };
    if bytes.data.is_null() {
        bytes.len = 0;
        return;
    }
    let (data, len) = (bytes.data, bytes.len);
    *bytes = polylock_bytes::EMPTY;
    quietly(|| {
        // SAFETY: made by `from_vec` from a boxed slice of exactly `len` bytes.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(data, len)) });
    });
}
