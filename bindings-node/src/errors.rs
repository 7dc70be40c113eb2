//! Core errors become JavaScript errors whose message starts with the error code
//! (`POLYLOCK_TIMEOUT: lock 'x' is held ...`). `index.js` turns every such error into a
//! `PolylockError` with `code` set, in one place; this module is the one place that picks
//! the code for each `ErrorKind`.

use polylock::{Error, ErrorKind};

/// The `code` of a `PolylockError` for each kind.
pub fn code(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidArgument => "POLYLOCK_INVALID_ARGUMENT",
        ErrorKind::Timeout => "POLYLOCK_TIMEOUT",
        ErrorKind::NotOwner => "POLYLOCK_NOT_OWNER",
        ErrorKind::Lost => "POLYLOCK_LOST",
        ErrorKind::Connection => "POLYLOCK_CONNECTION",
        ErrorKind::Backend => "POLYLOCK_BACKEND",
        // A kind added to the core later still reaches JavaScript, as a backend error.
        _ => "POLYLOCK_BACKEND",
    }
}

/// The code `index.js` replaces with the AbortSignal's own reason; never seen by users.
pub const ABORTED: &str = "POLYLOCK_ABORTED";

pub fn with_code(code: &str, message: impl std::fmt::Display) -> napi::Error {
    napi::Error::from_reason(format!("{code}: {message}"))
}

pub fn to_napi(err: Error) -> napi::Error {
    with_code(code(err.kind()), err)
}

pub fn invalid_argument(message: impl std::fmt::Display) -> napi::Error {
    with_code(code(ErrorKind::InvalidArgument), message)
}

/// Shorthand for `map_err(to_napi)`.
pub trait IntoNapiResult<T> {
    fn into_napi(self) -> napi::Result<T>;
}

impl<T, E: Into<polylock::Error>> IntoNapiResult<T> for Result<T, E> {
    fn into_napi(self) -> napi::Result<T> {
        self.map_err(|err| to_napi(err.into()))
    }
}
