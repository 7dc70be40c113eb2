//! The `Idempotency-Key` HTTP middleware's rules (`polylock::kit::http_idempotency`, issue
//! 38) for C and the languages over it (Go's net/http middleware): which requests go
//! through, the key a header carries and whether it can key a request, the default request
//! fingerprint, whether a status is stored, the stored form of a response and the refusals
//! (400, 409, 422). Only translation: every rule is one kit call, so a record a C or Go
//! middleware writes replays from any language's middleware and back. The idempotency
//! primitive itself (begin, complete, abandon) is `idempotency.rs`.

use std::ffi::{c_char, CStr, CString};
use std::sync::OnceLock;
use std::time::Duration;

use polylock::kit::http_idempotency::{self as http, HttpResponse, Options, Refusal};
use polylock::{Error, Result};

use crate::args;
use crate::boundary::{call, quietly};
use crate::bytes::{borrowed, polylock_bytes};
use crate::status::polylock_status;

/// `refusal` of `polylock_http_refusal_response()`: the key is malformed (400).
pub const POLYLOCK_HTTP_REFUSAL_BAD_KEY: i32 = 0;
/// `refusal` of `polylock_http_refusal_response()`: another request with the key is under
/// way (409, with `Retry-After`).
pub const POLYLOCK_HTTP_REFUSAL_IN_PROGRESS: i32 = 1;
/// `refusal` of `polylock_http_refusal_response()`: the key was used with another request
/// (422).
pub const POLYLOCK_HTTP_REFUSAL_MISMATCH: i32 = 2;

/// A middleware's options, checked by the core: the header that carries the key, how long
/// a completed key replays its response, and the methods the middleware applies to.
/// Immutable, so safe to share between threads; free it with `polylock_http_options_free()`.
#[allow(non_camel_case_types)]
pub struct polylock_http_options {
    options: Options,
    header: CString,
}

/// One header of a response: a name and a value, NUL-terminated UTF-8 (HTTP forbids NUL in
/// both). Handed in, they are borrowed for the call; in a `polylock_http_response` they are
/// owned by the response.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct polylock_http_header {
    pub name: *const c_char,
    pub value: *const c_char,
}

/// A response to write to the client (a replay or a refusal). Owned by the caller: free it
/// with `polylock_http_response_free()`, which frees the headers and the body and resets the
/// struct.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct polylock_http_response {
    /// The status code (100..=599).
    pub status: u16,
    /// `headers_count` headers, names lower case, in the stored order (a name may repeat,
    /// as `set-cookie` does); NULL when there are none.
    pub headers: *mut polylock_http_header,
    pub headers_count: usize,
    /// The body.
    pub body: polylock_bytes,
}

impl polylock_http_response {
    const EMPTY: polylock_http_response = polylock_http_response {
        status: 0,
        headers: std::ptr::null_mut(),
        headers_count: 0,
        body: polylock_bytes::EMPTY,
    };

    /// Hand `response` to C; `InvalidArgument` (nothing allocated) if a header holds a NUL.
    fn from_core(response: HttpResponse) -> Result<polylock_http_response> {
        let mut texts = Vec::with_capacity(response.headers.len());
        for (name, value) in response.headers {
            let nul = || Error::invalid_argument("a header of this response holds a NUL byte, which HTTP forbids");
            texts.push((CString::new(name).map_err(|_| nul())?, CString::new(value).map_err(|_| nul())?));
        }
        let headers: Box<[polylock_http_header]> = texts
            .into_iter()
            .map(|(name, value)| polylock_http_header { name: name.into_raw(), value: value.into_raw() })
            .collect();
        let headers_count = headers.len();
        let headers = if headers_count == 0 {
            std::ptr::null_mut()
        } else {
            Box::into_raw(headers).cast::<polylock_http_header>()
        };
        Ok(polylock_http_response {
            status: response.status,
            headers,
            headers_count,
            body: polylock_bytes::from_vec(response.body),
        })
    }
}

/// The header name of a replayed response, `Idempotent-Replayed` (its value is `true`).
/// Static: do not free it.
#[no_mangle]
pub extern "C" fn polylock_http_replayed_header() -> *const c_char {
    static NAME: OnceLock<CString> = OnceLock::new();
    NAME.get_or_init(|| CString::new(http::REPLAYED_HEADER).unwrap_or_default()).as_ptr()
}

/// Check a middleware's options.
///
/// @param header         the request header that carries the key; NULL for the default,
///                       `Idempotency-Key`.
/// @param lifetime_ms    how long a completed key replays its response, in milliseconds;
///                       NULL for the default (24 h).
/// @param methods        `methods_count` method names the middleware applies to (any case);
///                       NULL (with count 0) for the default, POST and PATCH. A non-NULL
///                       array with count 0 is an empty list, which is refused.
/// @param out            receives the options on success; untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` naming the option for a header that is no header
///         name, a lifetime that is no lease (negative, below 10 ms, over 365 days), an empty
///         list or a method that is no method.
///
/// # Safety
/// `header` is NULL or NUL-terminated; `lifetime_ms` is NULL or readable; `methods` is NULL
/// or points to `methods_count` NUL-terminated strings; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_http_options_new(
    header: *const c_char,
    lifetime_ms: *const i64,
    methods: *const *const c_char,
    methods_count: usize,
    out: *mut *mut polylock_http_options,
) -> polylock_status {
    call(|| {
        let out = unsafe { args::out(out, "out") }?;
        // SAFETY (header, lifetime, methods): the caller's contract.
        let header = if header.is_null() { None } else { Some(unsafe { args::text(header, "header") }?) };
        let lifetime = match unsafe { lifetime_ms.as_ref() } {
            None => None,
            Some(&ms) if ms < 0 => {
                return Err(Error::invalid_argument(format!(
                    "idempotency middleware option 'lifetime' must be positive milliseconds, got {ms}"
                )))
            }
            Some(&ms) => Some(Duration::from_millis(ms.unsigned_abs())),
        };
        let methods: Option<Vec<String>> = if methods.is_null() {
            if methods_count != 0 {
                return Err(Error::invalid_argument(format!("methods is NULL but methods_count is {methods_count}")));
            }
            None
        } else if methods_count == 0 {
            Some(Vec::new())
        } else {
            Some(unsafe { args::texts(methods, methods_count, "methods") }?.into_iter().map(str::to_owned).collect())
        };
        let options = Options::new(header, lifetime, methods.as_deref())?;
        let header = CString::new(options.header.as_str())
            .map_err(|_| Error::invalid_argument("idempotency middleware option 'header' holds a NUL byte"))?;
        *out = Box::into_raw(Box::new(polylock_http_options { options, header }));
        Ok(())
    })
}

/// The header that carries the key (match it without regard to case), owned by the options
/// (valid until they are freed). NULL for NULL.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_http_options_header(options: *const polylock_http_options) -> *const c_char {
    // SAFETY: the caller's contract.
    unsafe { options.as_ref() }.map_or(std::ptr::null(), |o| o.header.as_ptr())
}

/// How long a completed key replays its response, in milliseconds (pass it as the
/// idempotency namespace's retention). 0 for NULL.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_http_options_lifetime_ms(options: *const polylock_http_options) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { options.as_ref() }.map_or(0, |o| u64::try_from(o.options.lifetime.as_millis()).unwrap_or(u64::MAX))
}

/// Whether a request of `method` goes through the middleware (compared without regard to
/// case). False for a NULL argument or a method that is not UTF-8.
///
/// # Safety
/// `options` is NULL or live; `method` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn polylock_http_options_applies_to(
    options: *const polylock_http_options,
    method: *const c_char,
) -> bool {
    // SAFETY (both): the caller's contract.
    let Some(options) = (unsafe { options.as_ref() }) else { return false };
    if method.is_null() {
        return false;
    }
    match unsafe { CStr::from_ptr(method) }.to_str() {
        Ok(method) => options.options.applies_to(method),
        Err(_) => false,
    }
}

/// Free options. NULL is ignored.
///
/// # Safety
/// `options` is NULL or from `polylock_http_options_new()` and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn polylock_http_options_free(options: *mut polylock_http_options) {
    if options.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it from here on.
    quietly(|| drop(unsafe { Box::from_raw(options) }));
}

/// Text C handed in as bytes: UTF-8 as it is, anything else with U+FFFD in place of what is
/// not (a key with such bytes is then no key: `polylock_http_key_problem()` says so).
fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// The key a header value carries: trimmed, and without the draft's quotes (`"abc"` is the
/// key `abc`). Check it with `polylock_http_key_problem()` before using it.
///
/// @param key  receives the key, owned by the caller (free it with `polylock_bytes_free()`;
///             not NUL-terminated).
///
/// # Safety
/// `value` is NULL (with `len` 0) or readable for `len` bytes; `key` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_http_key_of(
    value: *const u8,
    len: usize,
    key: *mut polylock_bytes,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let value = unsafe { borrowed(value, len, "value") }?;
        let key = unsafe { args::out(key, "key") }?;
        *key = polylock_bytes::from_vec(http::key_of(&lossy(value)).as_bytes().to_vec());
        Ok(())
    })
}

/// Whether `key` can key a request: 1 to 255 visible ASCII characters.
///
/// @param problem  receives `{NULL, 0}` if it can; else why not (UTF-8 text, not
///                 NUL-terminated, the 400's detail), owned by the caller (free it with
///                 `polylock_bytes_free()`).
///
/// # Safety
/// `key` is NULL (with `len` 0) or readable for `len` bytes; `problem` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_http_key_problem(
    key: *const u8,
    len: usize,
    problem: *mut polylock_bytes,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let key = unsafe { borrowed(key, len, "key") }?;
        let problem = unsafe { args::out(problem, "problem") }?;
        *problem = match http::key_problem(&lossy(key)) {
            None => polylock_bytes::EMPTY,
            Some(text) => polylock_bytes::from_vec(text.into_bytes()),
        };
        Ok(())
    })
}

/// The default fingerprint of a request, as every language's middleware computes it: its
/// method, its path with the query (the request target as sent, `/orders?x=1`) and its body,
/// length-prefixed and hashed (`sha256:` and 32 bytes). Pass it to
/// `polylock_idempotency_begin()`.
///
/// @param out  receives the fingerprint, owned by the caller (free it with
///             `polylock_bytes_free()`).
///
/// # Safety
/// `method` and `path` are NULL or NUL-terminated; `body` is NULL (with `body_len` 0) or
/// readable for `body_len` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_http_fingerprint(
    method: *const c_char,
    path: *const c_char,
    body: *const u8,
    body_len: usize,
    out: *mut polylock_bytes,
) -> polylock_status {
    call(|| {
        // SAFETY (all four): the caller's contract.
        let method = unsafe { args::text(method, "method") }?;
        let path = unsafe { args::text(path, "path") }?;
        let body = unsafe { borrowed(body, body_len, "body") }?;
        let out = unsafe { args::out(out, "out") }?;
        *out = polylock_bytes::from_vec(http::fingerprint(method, path, body));
        Ok(())
    })
}

/// Whether a response of `status` is stored: everything but a server error (5xx), whose
/// attempt is abandoned (`polylock_ticket_abandon()`) so that the client's retry runs again.
#[no_mangle]
pub extern "C" fn polylock_http_stores(status: u16) -> bool {
    http::stores(status)
}

/// The stored form of a response (the idempotency codec's JSON form, the same in every
/// language), without the headers that describe one connection or transfer
/// (`content-length`, `transfer-encoding`, `date`, ...). Pass it to
/// `polylock_ticket_complete()`.
///
/// @param headers  `headers_count` headers (borrowed for the call); NULL with count 0 for
///                 none.
/// @param out      receives the stored form, owned by the caller (free it with
///                 `polylock_bytes_free()`).
/// @return `POLYLOCK_INVALID_ARGUMENT` for a status outside 100..=599, or a NULL or non-UTF-8
///         header name or value.
///
/// # Safety
/// `headers` is NULL (with count 0) or readable for `headers_count` headers whose strings
/// are NUL-terminated; `body` is NULL (with `body_len` 0) or readable for `body_len` bytes;
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_http_encode_response(
    status: u16,
    headers: *const polylock_http_header,
    headers_count: usize,
    body: *const u8,
    body_len: usize,
    out: *mut polylock_bytes,
) -> polylock_status {
    call(|| {
        // SAFETY (all three): the caller's contract.
        let headers = unsafe { header_array(headers, headers_count) }?;
        let body = unsafe { borrowed(body, body_len, "body") }?;
        let out = unsafe { args::out(out, "out") }?;
        let response = HttpResponse { status, headers, body: body.to_vec() };
        *out = polylock_bytes::from_vec(http::encode_response(&response)?);
        Ok(())
    })
}

/// The headers C handed in, as text.
///
/// # Safety
/// As for `polylock_http_encode_response()`'s `headers`.
unsafe fn header_array(headers: *const polylock_http_header, count: usize) -> Result<Vec<(String, String)>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if headers.is_null() {
        return Err(Error::invalid_argument(format!("headers is NULL but headers_count is {count}")));
    }
    // SAFETY: the caller's contract.
    let headers = unsafe { std::slice::from_raw_parts(headers, count) };
    headers
        .iter()
        .enumerate()
        .map(|(i, header)| {
            // SAFETY (both): the caller's contract.
            let name = unsafe { args::text(header.name, &format!("headers[{i}].name")) }?;
            let value = unsafe { args::text(header.value, &format!("headers[{i}].value")) }?;
            Ok((name.to_owned(), value.to_owned()))
        })
        .collect()
}

/// A stored response read back (a `POLYLOCK_BEGIN_REPLAY`'s `response`), to write to the
/// client with the header `Idempotent-Replayed: true` (`polylock_http_replayed_header()`).
///
/// @param out  receives the response, owned by the caller (free it with
///             `polylock_http_response_free()`); untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` if the record holds something other than a
///         middleware's response (a `run` helper of the same namespace stored it).
///
/// # Safety
/// `stored` is NULL (with `len` 0) or readable for `len` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_http_decode_response(
    stored: *const u8,
    len: usize,
    out: *mut polylock_http_response,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let stored = unsafe { borrowed(stored, len, "stored") }?;
        let out = unsafe { args::out(out, "out") }?;
        *out = polylock_http_response::from_core(http::decode_response(stored)?)?;
        Ok(())
    })
}

/// The response for a request that is not run: an RFC 9457 problem document
/// (`application/problem+json`) naming the key.
///
/// @param refusal         `POLYLOCK_HTTP_REFUSAL_BAD_KEY` (400; the detail says what is wrong
///                        with `key`), `POLYLOCK_HTTP_REFUSAL_IN_PROGRESS` (409 with
///                        `retry-after` in whole seconds, at least 1) or
///                        `POLYLOCK_HTTP_REFUSAL_MISMATCH` (422).
/// @param key, key_len    the key as read (`polylock_http_key_of()`), borrowed for the call.
/// @param retry_after_ms  for 409, the `retry_after_ms` of the begin that found the key in
///                        progress; ignored otherwise.
/// @param out             receives the response, owned by the caller (free it with
///                        `polylock_http_response_free()`); untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for an unknown `refusal`.
///
/// # Safety
/// `key` is NULL (with `key_len` 0) or readable for `key_len` bytes; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_http_refusal_response(
    refusal: i32,
    key: *const u8,
    key_len: usize,
    retry_after_ms: u64,
    out: *mut polylock_http_response,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let key = unsafe { borrowed(key, key_len, "key") }?;
        let out = unsafe { args::out(out, "out") }?;
        let refusal = match refusal {
            POLYLOCK_HTTP_REFUSAL_BAD_KEY => Refusal::BadKey,
            POLYLOCK_HTTP_REFUSAL_IN_PROGRESS => {
                Refusal::InProgress { retry_after: Duration::from_millis(retry_after_ms) }
            }
            POLYLOCK_HTTP_REFUSAL_MISMATCH => Refusal::Mismatch,
            other => {
                return Err(Error::invalid_argument(format!(
                    "refusal must be POLYLOCK_HTTP_REFUSAL_BAD_KEY, _IN_PROGRESS or _MISMATCH (0, 1, 2), got {other}"
                )))
            }
        };
        *out = polylock_http_response::from_core(http::refusal_response(refusal, &lossy(key)))?;
        Ok(())
    })
}

/// Free a response's headers and body, and reset it to `{0, NULL, 0, {NULL, 0}}` (so freeing
/// twice is harmless). NULL is ignored.
///
/// # Safety
/// `response` is NULL or points to a response this library filled and that was not freed
/// since (or that is reset).
#[no_mangle]
pub unsafe extern "C" fn polylock_http_response_free(response: *mut polylock_http_response) {
    // SAFETY: the caller's contract.
    let Some(response) = (unsafe { response.as_mut() }) else { return };
    let taken = std::mem::replace(response, polylock_http_response::EMPTY);
    quietly(|| {
        if !taken.headers.is_null() {
            // SAFETY: made by `from_core` from a boxed slice of exactly `headers_count`
            // headers whose strings came from `CString::into_raw`.
            let headers =
                unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(taken.headers, taken.headers_count)) };
            for header in headers.iter() {
                // SAFETY: as above; each string is freed once, here.
                drop(unsafe { CString::from_raw(header.name.cast_mut()) });
                drop(unsafe { CString::from_raw(header.value.cast_mut()) });
            }
        }
        let mut body = taken.body;
        // SAFETY: the body was made by `polylock_bytes::from_vec`.
        unsafe { crate::bytes::polylock_bytes_free(&mut body) };
    });
}
