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

/// A call's outcome whose error may carry details (a conflict's current value and version,
/// the winning fencing token, a retry-after): settled on the JavaScript thread, where the
/// error object is made with the details as its properties (`current`, `currentVersion`,
/// `winningToken`, `retryAfterMs`), which `index.js` copies onto the `PolylockError`.
pub enum Detailed<T> {
    Done(T),
    Failed(Error),
}

/// `Ok` always: a core failure travels as `Detailed::Failed` to be made into a rich error.
pub fn detailed<T>(result: polylock::Result<T>) -> napi::Result<Detailed<T>> {
    Ok(match result {
        Ok(value) => Detailed::Done(value),
        Err(err) => Detailed::Failed(err),
    })
}

impl<T: napi::bindgen_prelude::ToNapiValue> napi::bindgen_prelude::ToNapiValue for Detailed<T> {
    unsafe fn to_napi_value(env: napi::sys::napi_env, value: Self) -> napi::Result<napi::sys::napi_value> {
        match value {
            Detailed::Done(value) => unsafe { T::to_napi_value(env, value) },
            Detailed::Failed(err) => Err(unsafe { error_with_details(env, err) }),
        }
    }
}

/// A JavaScript Error for `err` with its details as properties, as a `napi::Error` that
/// rejects with that very object.
pub unsafe fn error_with_details(env: napi::sys::napi_env, err: Error) -> napi::Error {
    use napi::bindgen_prelude::{BigInt, Buffer, Object, ToNapiValue};
    let details = err.details().cloned();
    let plain = to_napi(err);
    let Some(details) = details else { return plain };
    let made = (|| -> napi::Result<napi::sys::napi_value> {
        let message = unsafe { String::to_napi_value(env, plain.reason.clone())? };
        let mut error = std::ptr::null_mut();
        napi::check_status!(unsafe { napi::sys::napi_create_error(env, std::ptr::null_mut(), message, &mut error) })?;
        let mut object = Object::from_raw(env, error);
        match details {
            polylock::ErrorDetails::Conflict { current } => {
                let (value, version) = match current {
                    Some((value, version)) => (Some(Buffer::from(value)), Some(BigInt::from(version))),
                    None => (None, None),
                };
                object.set("current", value)?;
                object.set("currentVersion", version)?;
            }
            polylock::ErrorDetails::Fenced { winning_token } => {
                object.set("winningToken", BigInt::from(winning_token))?;
            }
            polylock::ErrorDetails::RetryAfter { after } => {
                object.set("retryAfterMs", after.as_secs_f64() * 1000.0)?;
            }
            _ => {}
        }
        Ok(error)
    })();
    match made {
        Ok(error) => napi::Error::from(unsafe { napi::Unknown::from_raw_unchecked(env, error) }),
        Err(_) => plain,
    }
}
