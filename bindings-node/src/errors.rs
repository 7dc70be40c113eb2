//! Core errors become JavaScript errors whose message starts with the error code
//! (`POLYLOCK_TIMEOUT: lock 'x' is held ...`). `index.js` turns every such error into a
//! `PolylockError` with `code` set, in one place; this module is the one place that picks
//! the code for each `ErrorKind`.

use polylock::{Error, ErrorKind};

/// The `code` of a `PolylockError` for each kind: `POLYLOCK_` and the kind's stable name
/// from the core's one table (an acquisition stopped by its AbortSignal is `CANCELLED`, which
/// `index.js` replaces with the signal's own reason, as Node's APIs do).
pub fn code(kind: ErrorKind) -> String {
    format!("POLYLOCK_{}", kind.as_str())
}

/// Every code, in the order of the core's table: `index.js` and the tests read it.
#[napi_derive::napi(js_name = "errorCodes")]
pub fn error_codes() -> Vec<String> {
    ErrorKind::ALL.into_iter().map(code).collect()
}

pub fn with_code(code: &str, message: impl std::fmt::Display) -> napi::Error {
    napi::Error::from_reason(format!("{code}: {message}"))
}

pub fn to_napi(err: Error) -> napi::Error {
    with_code(&code(err.kind()), err)
}

pub fn invalid_argument(message: impl std::fmt::Display) -> napi::Error {
    with_code(&code(ErrorKind::InvalidArgument), message)
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
