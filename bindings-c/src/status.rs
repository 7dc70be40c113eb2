//! The status every call returns, and its mapping from the core's error kinds.

use std::ffi::c_char;

use polylock::ErrorKind;

/// What a call did. Every function of this library that can fail returns one; on anything
/// but `POLYLOCK_OK`, `polylock_last_error()` says what went wrong on this thread.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum polylock_status {
    /// The call succeeded.
    POLYLOCK_OK = 0,
    /// The wait for a lock ended before the lock was free (including a try-once that failed).
    POLYLOCK_TIMEOUT = 1,
    /// The calling thread released a lock it does not hold.
    POLYLOCK_NOT_OWNER = 2,
    /// The lock was held, but the backend no longer holds it (lease ran out, session died).
    POLYLOCK_LOST = 3,
    /// The backend could not be reached, refused the credentials, or the client is closed.
    POLYLOCK_CONNECTION = 4,
    /// An argument was unusable: NULL, invalid UTF-8, an empty name, a bad URL, a bad lease.
    POLYLOCK_INVALID_ARGUMENT = 5,
    /// The backend answered with something unexpected, or a local resource failed.
    POLYLOCK_BACKEND = 6,
    /// A bug inside polylock was caught at the boundary; the message says where.
    POLYLOCK_INTERNAL = 7,
}

impl From<ErrorKind> for polylock_status {
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::Timeout => polylock_status::POLYLOCK_TIMEOUT,
            ErrorKind::NotOwner => polylock_status::POLYLOCK_NOT_OWNER,
            ErrorKind::Lost => polylock_status::POLYLOCK_LOST,
            ErrorKind::Connection => polylock_status::POLYLOCK_CONNECTION,
            ErrorKind::InvalidArgument => polylock_status::POLYLOCK_INVALID_ARGUMENT,
            // ErrorKind is non-exhaustive: a kind added later is reported as a backend error
            // until this binding learns its own code for it.
            _ => polylock_status::POLYLOCK_BACKEND,
        }
    }
}

impl polylock_status {
    fn name(self) -> &'static std::ffi::CStr {
        match self {
            polylock_status::POLYLOCK_OK => c"OK",
            polylock_status::POLYLOCK_TIMEOUT => c"TIMEOUT",
            polylock_status::POLYLOCK_NOT_OWNER => c"NOT_OWNER",
            polylock_status::POLYLOCK_LOST => c"LOST",
            polylock_status::POLYLOCK_CONNECTION => c"CONNECTION",
            polylock_status::POLYLOCK_INVALID_ARGUMENT => c"INVALID_ARGUMENT",
            polylock_status::POLYLOCK_BACKEND => c"BACKEND",
            polylock_status::POLYLOCK_INTERNAL => c"INTERNAL",
        }
    }
}

/// The stable name of a status ("OK", "TIMEOUT", "NOT_OWNER", ...), the same names the core
/// and the other bindings use. Never NULL; a value outside the enum gives "UNKNOWN".
/// The string is static: do not free it.
#[no_mangle]
pub extern "C" fn polylock_status_name(status: i32) -> *const c_char {
    // Takes an int, not the enum: C may pass any integer, and an out-of-range enum value
    // would be undefined behaviour on the Rust side.
    const ALL: [polylock_status; 8] = [
        polylock_status::POLYLOCK_OK,
        polylock_status::POLYLOCK_TIMEOUT,
        polylock_status::POLYLOCK_NOT_OWNER,
        polylock_status::POLYLOCK_LOST,
        polylock_status::POLYLOCK_CONNECTION,
        polylock_status::POLYLOCK_INVALID_ARGUMENT,
        polylock_status::POLYLOCK_BACKEND,
        polylock_status::POLYLOCK_INTERNAL,
    ];
    match ALL.iter().find(|s| **s as i32 == status) {
        Some(s) => s.name().as_ptr(),
        None => c"UNKNOWN".as_ptr(),
    }
}
