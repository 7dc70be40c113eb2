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
    /// The backend does not offer this kind of lock or primitive (say, a read-write lock on
    /// Redis); reported when the handle is made, before anything is written.
    POLYLOCK_UNSUPPORTED = 8,
    /// The caller gave up on the call before it finished; nothing is left held.
    POLYLOCK_CANCELLED = 9,
    /// A compare-and-set found another version than expected, or a value to create exists.
    POLYLOCK_CONFLICT = 10,
    /// A fenced write carried a token lower than one the value already accepted.
    POLYLOCK_FENCED = 11,
    /// IDs are used up until the next range or lease renewal; retrying later can succeed.
    POLYLOCK_EXHAUSTED = 12,
    /// Another attempt is working on this idempotency key now; retry later.
    POLYLOCK_IN_PROGRESS = 13,
    /// The idempotency key was used before with another payload.
    POLYLOCK_MISMATCH = 14,
}

/// The core's one table of error kinds: each kind's status has the kind's number and name
/// (a unit test below checks every kind).
impl From<ErrorKind> for polylock_status {
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::Timeout => polylock_status::POLYLOCK_TIMEOUT,
            ErrorKind::NotOwner => polylock_status::POLYLOCK_NOT_OWNER,
            ErrorKind::Lost => polylock_status::POLYLOCK_LOST,
            ErrorKind::Connection => polylock_status::POLYLOCK_CONNECTION,
            ErrorKind::InvalidArgument => polylock_status::POLYLOCK_INVALID_ARGUMENT,
            ErrorKind::Backend => polylock_status::POLYLOCK_BACKEND,
            ErrorKind::Internal => polylock_status::POLYLOCK_INTERNAL,
            ErrorKind::Unsupported => polylock_status::POLYLOCK_UNSUPPORTED,
            ErrorKind::Cancelled => polylock_status::POLYLOCK_CANCELLED,
            ErrorKind::Conflict => polylock_status::POLYLOCK_CONFLICT,
            ErrorKind::Fenced => polylock_status::POLYLOCK_FENCED,
            ErrorKind::Exhausted => polylock_status::POLYLOCK_EXHAUSTED,
            ErrorKind::InProgress => polylock_status::POLYLOCK_IN_PROGRESS,
            ErrorKind::Mismatch => polylock_status::POLYLOCK_MISMATCH,
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
            polylock_status::POLYLOCK_UNSUPPORTED => c"UNSUPPORTED",
            polylock_status::POLYLOCK_CANCELLED => c"CANCELLED",
            polylock_status::POLYLOCK_CONFLICT => c"CONFLICT",
            polylock_status::POLYLOCK_FENCED => c"FENCED",
            polylock_status::POLYLOCK_EXHAUSTED => c"EXHAUSTED",
            polylock_status::POLYLOCK_IN_PROGRESS => c"IN_PROGRESS",
            polylock_status::POLYLOCK_MISMATCH => c"MISMATCH",
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
    const ALL: [polylock_status; 15] = [
        polylock_status::POLYLOCK_OK,
        polylock_status::POLYLOCK_TIMEOUT,
        polylock_status::POLYLOCK_NOT_OWNER,
        polylock_status::POLYLOCK_LOST,
        polylock_status::POLYLOCK_CONNECTION,
        polylock_status::POLYLOCK_INVALID_ARGUMENT,
        polylock_status::POLYLOCK_BACKEND,
        polylock_status::POLYLOCK_INTERNAL,
        polylock_status::POLYLOCK_UNSUPPORTED,
        polylock_status::POLYLOCK_CANCELLED,
        polylock_status::POLYLOCK_CONFLICT,
        polylock_status::POLYLOCK_FENCED,
        polylock_status::POLYLOCK_EXHAUSTED,
        polylock_status::POLYLOCK_IN_PROGRESS,
        polylock_status::POLYLOCK_MISMATCH,
    ];
    match ALL.iter().find(|s| **s as i32 == status) {
        Some(s) => s.name().as_ptr(),
        None => c"UNKNOWN".as_ptr(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every core error kind has the status of its number, named as the core names it.
    #[test]
    fn statuses_follow_the_core_table() {
        for kind in ErrorKind::ALL {
            let status = polylock_status::from(kind);
            assert_eq!(status as i32, i32::from(kind.code()), "{kind}");
            assert_eq!(status.name().to_str().unwrap(), kind.as_str());
            // SAFETY: a static NUL-terminated string.
            let by_number = unsafe { std::ffi::CStr::from_ptr(polylock_status_name(status as i32)) };
            assert_eq!(by_number.to_str().unwrap(), kind.as_str());
        }
        assert_eq!(polylock_status::POLYLOCK_OK as i32, 0);
    }
}
