//! The core's idempotency codec (`polylock::kit::idempotency_codec`) for C and the languages
//! over it: fingerprints of bytes or JSON text, and the tagged form a `run` helper stores its
//! response in, so a Go `Run` and a Python `run` replay each other's responses. Nothing is
//! encoded here: each function is one codec call.

use polylock::kit::idempotency_codec::{
    decode_response, encode_response, fingerprint_of_bytes, fingerprint_of_json, StoredResponse,
};

use crate::args;
use crate::boundary::call;
use crate::bytes::{borrowed, polylock_bytes};
use crate::status::polylock_status;

/// The fingerprint of a payload, as every binding computes it.
///
/// @param is_json  false: `payload` is bytes (kept as they are up to 1024 bytes, else
///                 hashed); true: `payload` is JSON text (canonicalised, then hashed, so key
///                 order and spacing do not matter).
/// @param out      receives the fingerprint, owned by the caller (free it with
///                 `polylock_bytes_free()`); untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for JSON that does not parse, or a NULL `out`.
///
/// # Safety
/// `payload` is NULL (with `len` 0) or readable for `len` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_idempotency_fingerprint(
    payload: *const u8,
    len: usize,
    is_json: bool,
    out: *mut polylock_bytes,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let payload = unsafe { borrowed(payload, len, "payload") }?;
        let out = unsafe { args::out(out, "out") }?;
        let fingerprint = if is_json {
            let text = std::str::from_utf8(payload)
                .map_err(|_| polylock::Error::invalid_argument("a JSON fingerprint is not UTF-8 text"))?;
            fingerprint_of_json(text)?
        } else {
            fingerprint_of_bytes(payload)
        };
        *out = polylock_bytes::from_vec(fingerprint);
        Ok(())
    })
}

/// The stored form of a `run` helper's response: bytes, or JSON text the language encodes
/// and decodes itself. Pass the result to `polylock_ticket_complete()`.
///
/// @param out  receives the stored form, owned by the caller (free it with
///             `polylock_bytes_free()`).
///
/// # Safety
/// `body` is NULL (with `len` 0) or readable for `len` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_idempotency_encode_response(
    body: *const u8,
    len: usize,
    is_json: bool,
    out: *mut polylock_bytes,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let body = unsafe { borrowed(body, len, "body") }?;
        let out = unsafe { args::out(out, "out") }?;
        let response = if is_json {
            let text = std::str::from_utf8(body)
                .map_err(|_| polylock::Error::invalid_argument("a JSON response is not UTF-8 text"))?;
            StoredResponse::Json(text.to_owned())
        } else {
            StoredResponse::Bytes(body.to_vec())
        };
        *out = polylock_bytes::from_vec(encode_response(&response));
        Ok(())
    })
}

/// A response a `run` helper stored (a replay's `response`), read back.
///
/// @param is_json  receives whether the body is JSON text (else bytes).
/// @param body     receives the body, owned by the caller (free it with
///                 `polylock_bytes_free()`); untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for a response not stored by a `run` helper (one
///         completed step by step with raw bytes).
///
/// # Safety
/// `stored` is NULL (with `len` 0) or readable for `len` bytes; `is_json` and `body` are
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_idempotency_decode_response(
    stored: *const u8,
    len: usize,
    is_json: *mut bool,
    body: *mut polylock_bytes,
) -> polylock_status {
    call(|| {
        // SAFETY (all three): the caller's contract.
        let stored = unsafe { borrowed(stored, len, "stored") }?;
        let is_json = unsafe { args::out(is_json, "is_json") }?;
        let body = unsafe { args::out(body, "body") }?;
        match decode_response(stored)? {
            StoredResponse::Bytes(bytes) => {
                *is_json = false;
                *body = polylock_bytes::from_vec(bytes);
            }
            StoredResponse::Json(text) => {
                *is_json = true;
                *body = polylock_bytes::from_vec(text.into_bytes());
            }
        }
        Ok(())
    })
}
