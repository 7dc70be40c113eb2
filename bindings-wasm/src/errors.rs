//! Errors as JavaScript `Error`s with `name` `PolylockError` and the `code` the Node binding
//! uses for the same failure (`POLYLOCK_` + the kind's name in the core's one table,
//! `ErrorKind::ALL` in core/src/error.rs). This crate depends on `polylock-id` only, so the
//! table is repeated here; test/errors.test.mjs fails when it and the core's disagree.

use polylock_id::{IdError, IdErrorKind};
use wasm_bindgen::prelude::*;

/// Every code, in the order of the core's table (numbers 1 to 14).
pub const CODES: [&str; 14] = [
    "POLYLOCK_TIMEOUT",
    "POLYLOCK_NOT_OWNER",
    "POLYLOCK_LOST",
    "POLYLOCK_CONNECTION",
    "POLYLOCK_INVALID_ARGUMENT",
    "POLYLOCK_BACKEND",
    "POLYLOCK_INTERNAL",
    "POLYLOCK_UNSUPPORTED",
    "POLYLOCK_CANCELLED",
    "POLYLOCK_CONFLICT",
    "POLYLOCK_FENCED",
    "POLYLOCK_EXHAUSTED",
    "POLYLOCK_IN_PROGRESS",
    "POLYLOCK_MISMATCH",
];

pub const INVALID_ARGUMENT: &str = CODES[4];
const BACKEND: &str = CODES[5];
const INTERNAL: &str = CODES[6];
const EXHAUSTED: &str = CODES[11];

/// The code of an ID error, as the core maps it (`From<IdError> for polylock::Error`): a
/// clock that cannot be trusted is `BACKEND` (a local resource failed), IDs used up until
/// the next millisecond or range `EXHAUSTED`, missing randomness `INTERNAL`.
pub fn code_of(kind: IdErrorKind) -> &'static str {
    match kind {
        IdErrorKind::InvalidArgument => INVALID_ARGUMENT,
        IdErrorKind::Clock => BACKEND,
        IdErrorKind::Exhausted => EXHAUSTED,
        IdErrorKind::Randomness => INTERNAL,
    }
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = Error)]
    type JsError;

    #[wasm_bindgen(constructor, js_class = "Error")]
    fn new(message: &str) -> JsError;

    #[wasm_bindgen(method, setter)]
    fn set_name(this: &JsError, name: &str);

    #[wasm_bindgen(method, setter)]
    fn set_code(this: &JsError, code: &str);
}

/// A JavaScript `Error` with `name` `PolylockError` and `code` set.
pub fn js_error(code: &str, message: &str) -> JsValue {
    let error = JsError::new(message);
    error.set_name("PolylockError");
    error.set_code(code);
    error.into()
}

pub fn invalid_argument(message: &str) -> JsValue {
    js_error(INVALID_ARGUMENT, message)
}

pub fn to_js(err: IdError) -> JsValue {
    js_error(code_of(err.kind()), err.message())
}

/// The value, or the error thrown as a JavaScript exception, for the hottest calls
/// (`uuid7()`, `ulid()`): returning a `Result` costs each call a round trip through linear
/// memory. Callers hold nothing that needs dropping when they call this.
pub fn or_throw<T>(result: Result<T, IdError>) -> T {
    match result {
        Ok(value) => value,
        Err(err) => wasm_bindgen::throw_val(to_js(err)),
    }
}

/// Shorthand for `map_err(to_js)`.
pub trait IntoJsResult<T> {
    fn into_js(self) -> Result<T, JsValue>;
}

impl<T> IntoJsResult<T> for Result<T, IdError> {
    fn into_js(self) -> Result<T, JsValue> {
        self.map_err(to_js)
    }
}

/// Every error code, in the order of the core's table (as the Node binding's `errorCodes()`).
#[wasm_bindgen(js_name = errorCodes)]
pub fn error_codes() -> Vec<String> {
    CODES.iter().map(|code| code.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_error_kind_has_a_code_of_the_table() {
        for kind in [IdErrorKind::InvalidArgument, IdErrorKind::Clock, IdErrorKind::Exhausted, IdErrorKind::Randomness]
        {
            assert!(CODES.contains(&code_of(kind)), "{kind:?}");
        }
        assert_eq!(code_of(IdErrorKind::InvalidArgument), "POLYLOCK_INVALID_ARGUMENT");
    }
}
