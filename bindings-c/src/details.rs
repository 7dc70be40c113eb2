//! `polylock_last_error_details()`: what the last failure on this thread carried beyond its
//! status and message (a conflict's current value and version, the fencing token that won,
//! how long to wait before retrying), for callers that act on it.

use crate::args;
use crate::boundary::call;
use crate::bytes::polylock_bytes;
use crate::last_error;
use crate::status::polylock_status;
use polylock::ErrorDetails;

/// Which details the last failure carried.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum polylock_details_kind {
    /// None (the failure carried no details, or no call on this thread has failed yet).
    POLYLOCK_DETAILS_NONE = 0,
    /// `POLYLOCK_CONFLICT`: `has_current`, `current_value`, `current_version` are set.
    POLYLOCK_DETAILS_CONFLICT = 1,
    /// `POLYLOCK_FENCED`: `winning_token` is set.
    POLYLOCK_DETAILS_FENCED = 2,
    /// `POLYLOCK_EXHAUSTED` or `POLYLOCK_IN_PROGRESS`: `retry_after_ms` is set.
    POLYLOCK_DETAILS_RETRY_AFTER = 3,
}

/// The details of the last failure on the calling thread.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct polylock_error_details {
    pub kind: polylock_details_kind,
    /// Conflict: whether a value exists now (false: there is none, say it was deleted).
    pub has_current: bool,
    /// Conflict: the value as it is now, owned by the caller: free it with
    /// `polylock_bytes_free()`. `{NULL, 0}` when there is none.
    pub current_value: polylock_bytes,
    /// Conflict: the value's current version (0 when there is none).
    pub current_version: u64,
    /// Fenced: the highest fencing token the value has accepted (the one that won).
    pub winning_token: u64,
    /// Retry-after: milliseconds to wait before trying again.
    pub retry_after_ms: u64,
}

/// Fill `out` with the details of the last failed call on this thread (kind
/// `POLYLOCK_DETAILS_NONE` when it had none). Reading them does not clear them: they stay
/// until the next failed call on this thread. `out->current_value` is a copy the caller
/// owns: free it with `polylock_bytes_free()`.
///
/// @return `POLYLOCK_OK`, or `POLYLOCK_INVALID_ARGUMENT` for a NULL `out` (which replaces
///         the details, as every failure does).
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_last_error_details(out: *mut polylock_error_details) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { args::out(out, "out") }?;
        let mut details = polylock_error_details {
            kind: polylock_details_kind::POLYLOCK_DETAILS_NONE,
            has_current: false,
            current_value: polylock_bytes::EMPTY,
            current_version: 0,
            winning_token: 0,
            retry_after_ms: 0,
        };
        match last_error::details() {
            Some(ErrorDetails::Conflict { current }) => {
                details.kind = polylock_details_kind::POLYLOCK_DETAILS_CONFLICT;
                if let Some((value, version)) = current {
                    details.has_current = true;
                    details.current_value = polylock_bytes::from_vec(value);
                    details.current_version = version;
                }
            }
            Some(ErrorDetails::Fenced { winning_token }) => {
                details.kind = polylock_details_kind::POLYLOCK_DETAILS_FENCED;
                details.winning_token = winning_token;
            }
            Some(ErrorDetails::RetryAfter { after }) => {
                details.kind = polylock_details_kind::POLYLOCK_DETAILS_RETRY_AFTER;
                details.retry_after_ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
            }
            // Details a newer core adds, and none: nothing this ABI can show.
            Some(_) | None => {}
        }
        *out = details;
        Ok(())
    })
}
