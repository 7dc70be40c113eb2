//! `polylock_idempotency` and `polylock_ticket`: idempotency keys step by step (begin, then
//! complete, abandon or extend the ticket), and `polylock_idempotency_run()`, the core's
//! `Idempotency::run` with a C callback as the work: the begin, the wait for an attempt under
//! way, the replay, the complete and the abandon are the core's; this file calls the callback.

use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::time::Duration;

use polylock::{Begin, Error, ErrorKind, Idempotency, Ticket};

use crate::args;
use crate::boundary::{call, quietly};
use crate::bytes::{borrowed, polylock_bytes};
use crate::client::polylock_client;
use crate::runtime::Shared;
use crate::status::polylock_status;

/// Idempotency keys of one namespace. Safe to share between threads; free it with
/// `polylock_idempotency_free()`.
#[allow(non_camel_case_types)]
pub struct polylock_idempotency {
    shared: Arc<Shared>,
    keys: Idempotency,
}

/// One attempt's claim on a key: complete it with the response to replay, or abandon it so
/// a retry runs again; extend it while the work runs longer than the in-progress TTL. Free
/// it with `polylock_ticket_free()` (freeing does not abandon: an unfinished attempt is
/// taken over after its TTL).
#[allow(non_camel_case_types)]
pub struct polylock_ticket {
    shared: Arc<Shared>,
    ticket: Arc<Ticket>,
}

/// What `polylock_idempotency_begin()` found.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum polylock_begin_outcome {
    /// This caller runs the work: `ticket` is set, and must be completed or abandoned.
    POLYLOCK_BEGIN_ACQUIRED = 0,
    /// An attempt finished before: `response` is its stored response.
    POLYLOCK_BEGIN_REPLAY = 1,
    /// Another attempt is under way; it may be taken over after `retry_after_ms` (HTTP 409).
    POLYLOCK_BEGIN_IN_PROGRESS = 2,
    /// The key was used before with another fingerprint (HTTP 422).
    POLYLOCK_BEGIN_MISMATCH = 3,
}

/// The result of `polylock_idempotency_begin()`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct polylock_begin {
    pub outcome: polylock_begin_outcome,
    /// Acquired: the ticket, owned by the caller (free it with `polylock_ticket_free()`);
    /// NULL otherwise.
    pub ticket: *mut polylock_ticket,
    /// Replay: the stored response, owned by the caller (free it with
    /// `polylock_bytes_free()`); `{NULL, 0}` otherwise.
    pub response: polylock_bytes,
    /// In progress: milliseconds until the attempt under way may be taken over; 0 otherwise.
    pub retry_after_ms: u64,
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Idempotency keys of `namespace`.
///
/// @param retention_ms        how long a completed key replays its response; 0 for the
///                            default (24 h).
/// @param in_progress_ttl_ms  how long an attempt may run without extending before another
///                            may take it over; 0 for the default (60 s).
/// @param out                 receives the handle on success; untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL argument or a bad namespace,
///         `POLYLOCK_UNSUPPORTED` if the backend keeps no versioned values.
///
/// # Safety
/// `client` is NULL or live; `namespace_` is NULL or NUL-terminated; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_idempotency(
    client: *mut polylock_client,
    namespace_: *const c_char,
    retention_ms: u64,
    in_progress_ttl_ms: u64,
    out: *mut *mut polylock_idempotency,
) -> polylock_status {
    call(|| {
        let client = crate::client::live(client)?;
        // SAFETY (both): the caller's contract.
        let namespace = unsafe { args::text(namespace_, "namespace") }?;
        let out = unsafe { args::out(out, "out") }?;
        let or_default = |ms: u64, default: Duration| if ms == 0 { default } else { Duration::from_millis(ms) };
        let keys = client.shared.client().idempotency_with(
            namespace,
            or_default(retention_ms, Idempotency::DEFAULT_RETENTION),
            or_default(in_progress_ttl_ms, Idempotency::DEFAULT_IN_PROGRESS_TTL),
        )?;
        *out = Box::into_raw(Box::new(polylock_idempotency { shared: client.shared.clone(), keys }));
        Ok(())
    })
}

/// Claim `key` for this attempt, or say why not (see `polylock_begin_outcome`).
///
/// @param fingerprint, fingerprint_len  identify the payload (a hash of it, at most 1024
///                   bytes; borrowed for the call): the key used again with another
///                   fingerprint is a mismatch.
/// @param out        receives the outcome; untouched on failure.
/// @return `POLYLOCK_OK` for every outcome (read `out->outcome`); a failure status only when
///         the store could not answer or an argument was bad.
///
/// # Safety
/// `idempotency` is NULL or live; `key` is NULL or NUL-terminated; `fingerprint` is NULL
/// (with length 0) or readable for `fingerprint_len` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_idempotency_begin(
    idempotency: *mut polylock_idempotency,
    key: *const c_char,
    fingerprint: *const u8,
    fingerprint_len: usize,
    out: *mut polylock_begin,
) -> polylock_status {
    call(|| {
        // SAFETY (all four): the caller's contract.
        let handle = unsafe { args::handle(idempotency, "idempotency") }?;
        let key = unsafe { args::text(key, "key") }?;
        let fingerprint = unsafe { borrowed(fingerprint, fingerprint_len, "fingerprint") }?;
        let out = unsafe { args::out(out, "out") }?;
        let keys = handle.keys.clone();
        let found = handle.shared.block_on(async move { keys.begin(key, fingerprint).await })?;
        let mut begin = polylock_begin {
            outcome: polylock_begin_outcome::POLYLOCK_BEGIN_MISMATCH,
            ticket: std::ptr::null_mut(),
            response: polylock_bytes::EMPTY,
            retry_after_ms: 0,
        };
        match found {
            Begin::Acquired(ticket) => {
                begin.outcome = polylock_begin_outcome::POLYLOCK_BEGIN_ACQUIRED;
                let ticket = polylock_ticket { shared: handle.shared.clone(), ticket: Arc::new(ticket) };
                begin.ticket = Box::into_raw(Box::new(ticket));
            }
            Begin::Replay(response) => {
                begin.outcome = polylock_begin_outcome::POLYLOCK_BEGIN_REPLAY;
                begin.response = polylock_bytes::from_vec(response);
            }
            Begin::InProgress { retry_after } => {
                begin.outcome = polylock_begin_outcome::POLYLOCK_BEGIN_IN_PROGRESS;
                begin.retry_after_ms = millis(retry_after);
            }
            Begin::Mismatch => {}
        }
        *out = begin;
        Ok(())
    })
}

/// The attempt's token: it grows with every attempt that takes the key, so it can fence the
/// work's own writes (`polylock_value_write_fenced()`).
///
/// @param token  receives it.
///
/// # Safety
/// `ticket` is NULL or live; `token` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_ticket_token(ticket: *const polylock_ticket, token: *mut u64) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(ticket, "ticket") }?;
        let token = unsafe { args::out(token, "token") }?;
        *token = handle.ticket.token();
        Ok(())
    })
}

/// Store `response` (borrowed for the call) for every later begin of this key to replay.
///
/// @return `POLYLOCK_LOST` if another attempt took the key over (its result stands),
///         `POLYLOCK_INVALID_ARGUMENT` if this ticket was completed or abandoned already.
///
/// # Safety
/// `ticket` is NULL or live; `response` is NULL (with length 0) or readable for
/// `response_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn polylock_ticket_complete(
    ticket: *const polylock_ticket,
    response: *const u8,
    response_len: usize,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(ticket, "ticket") }?;
        let response = unsafe { borrowed(response, response_len, "response") }?;
        let ticket = handle.ticket.clone();
        handle.shared.block_on(async move { ticket.complete(response).await })
    })
}

/// Give the key up (the work failed and may be retried): the next begin runs again.
///
/// @return `POLYLOCK_LOST` if another attempt took the key over.
///
/// # Safety
/// `ticket` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_ticket_abandon(ticket: *const polylock_ticket) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { args::handle(ticket, "ticket") }?;
        let ticket = handle.ticket.clone();
        handle.shared.block_on(async move { ticket.abandon().await })
    })
}

/// Keep the key for another in-progress TTL from now.
///
/// @return `POLYLOCK_LOST` if another attempt took the key over.
///
/// # Safety
/// `ticket` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_ticket_extend(ticket: *const polylock_ticket) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { args::handle(ticket, "ticket") }?;
        let ticket = handle.ticket.clone();
        handle.shared.block_on(async move { ticket.extend().await })
    })
}

/// The response an idempotent work gives `polylock_idempotency_run()`: set it with
/// `polylock_work_response_set()` from inside the work. Owned by the library and valid only
/// during the work's call.
#[allow(non_camel_case_types)]
pub struct polylock_work_response {
    bytes: Vec<u8>,
}

/// The work `polylock_idempotency_run()` runs when this call claims the key.
///
/// It is called at most once, on the thread that called `polylock_idempotency_run()` (so it
/// may call polylock itself, for example to write with the attempt's fencing token), with
/// that call's `user_data`. It sets its response with `polylock_work_response_set()` (left
/// unset, the response is empty) and returns `POLYLOCK_OK`; any other value says the work
/// failed: the key is abandoned (a retry runs the work again) and `polylock_idempotency_run()`
/// returns that status (a value that is no `polylock_status` is returned as `POLYLOCK_BACKEND`).
#[allow(non_camel_case_types)]
pub type polylock_idempotency_work =
    Option<unsafe extern "C" fn(user_data: *mut c_void, response: *mut polylock_work_response) -> i32>;

/// Set the response of the work in progress to `len` bytes at `data` (copied; NULL is fine
/// with 0). Setting it again replaces it.
///
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL `response`, or NULL `data` with a length.
///
/// # Safety
/// `response` is NULL or the one the work was called with, during that call; `data` is NULL
/// (with `len` 0) or readable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn polylock_work_response_set(
    response: *mut polylock_work_response,
    data: *const u8,
    len: usize,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let response = unsafe { args::out(response, "response") }?;
        let bytes = unsafe { borrowed(data, len, "data") }?;
        response.bytes = bytes.to_vec();
        Ok(())
    })
}

/// Do `work` once for `key`: run it if this call claims the key (storing its response for
/// every later run of the key to replay, or abandoning the key if it fails, so a retry runs
/// it again), or give the stored response of the attempt that finished. An attempt under way
/// elsewhere is waited for, up to `wait_ms` (polling from 20 ms to 1 s apart), and its
/// response given. The response is stored in the tagged form every language's `run` reads,
/// so a key is replayed across languages (a response another language stored as JSON comes
/// back as its text).
///
/// @param fingerprint, fingerprint_len  identify the payload, as for
///                   `polylock_idempotency_begin()` (`polylock_idempotency_fingerprint()`
///                   makes one as every binding does; borrowed for the call).
/// @param wait_ms    how long to wait for an attempt under way: `POLYLOCK_WAIT_FOREVER`
///                   until it ends, 0 not at all; any other negative value is
///                   `POLYLOCK_INVALID_ARGUMENT`.
/// @param work       the work (see `polylock_idempotency_work`), called with `user_data`.
/// @param out        receives the response (the work's, or the stored one), owned by the
///                   caller: free it with `polylock_bytes_free()`; untouched on failure.
/// @return `POLYLOCK_IN_PROGRESS` when an attempt is still under way after `wait_ms`
///         (details: the retry-after), `POLYLOCK_MISMATCH` when the key was used with another
///         fingerprint, the work's own status when it failed (the key is abandoned),
///         `POLYLOCK_LOST` when the work finished but another attempt had taken the key over.
///
/// # Safety
/// `idempotency` is NULL or live; `key` is NULL or NUL-terminated; `fingerprint` is NULL
/// (with length 0) or readable for `fingerprint_len` bytes; `work` may be called with
/// `user_data` on this thread; `out` is NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the begin's arguments, the wait, the work and the answer
pub unsafe extern "C" fn polylock_idempotency_run(
    idempotency: *mut polylock_idempotency,
    key: *const c_char,
    fingerprint: *const u8,
    fingerprint_len: usize,
    wait_ms: i64,
    work: polylock_idempotency_work,
    user_data: *mut c_void,
    out: *mut polylock_bytes,
) -> polylock_status {
    call(|| {
        // SAFETY (all four): the caller's contract.
        let handle = unsafe { args::handle(idempotency, "idempotency") }?;
        let key = unsafe { args::text(key, "key") }?;
        let fingerprint = unsafe { borrowed(fingerprint, fingerprint_len, "fingerprint") }?;
        let out = unsafe { args::out(out, "out") }?;
        let work = work.ok_or_else(|| Error::invalid_argument("work is NULL"))?;
        let wait = args::wait("wait_ms", wait_ms)?;
        let keys = handle.keys.clone();
        let response = handle.shared.block_on(keys.run(key, fingerprint, wait, || async move {
            let mut response = polylock_work_response { bytes: Vec::new() };
            // Outside the runtime's context for the call, so the work may call polylock (a
            // nested wait on the runtime) on this thread.
            // SAFETY: the caller's contract: `work` may be called with `user_data` here.
            let returned = tokio::task::block_in_place(|| unsafe { work(user_data, &mut response) });
            if returned == polylock_status::POLYLOCK_OK as i32 {
                return Ok(response.bytes);
            }
            let kind = ErrorKind::ALL.into_iter().find(|kind| i32::from(kind.code()) == returned);
            let named =
                kind.map_or_else(|| format!("{returned}, which is no polylock_status"), |kind| kind.to_string());
            Err(Error::new(
                kind.unwrap_or(ErrorKind::Backend),
                format!(
                    "the idempotent work of key '{}' failed (it returned {named}); the key was abandoned, so a \
                     retry runs the work again",
                    key.escape_debug()
                ),
            ))
        }))?;
        *out = polylock_bytes::from_vec(response);
        Ok(())
    })
}

/// Free a ticket. An attempt neither completed nor abandoned stays in progress until its
/// TTL ends (then another attempt takes it over). NULL is ignored.
///
/// # Safety
/// `ticket` is NULL or from `polylock_idempotency_begin()` and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn polylock_ticket_free(ticket: *mut polylock_ticket) {
    if ticket.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it from here on.
    quietly(|| drop(unsafe { Box::from_raw(ticket) }));
}

/// Free an idempotency handle (its tickets stay usable). NULL is ignored.
///
/// # Safety
/// `idempotency` is NULL or from `polylock_client_idempotency()` and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn polylock_idempotency_free(idempotency: *mut polylock_idempotency) {
    if idempotency.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it from here on.
    quietly(|| drop(unsafe { Box::from_raw(idempotency) }));
}
