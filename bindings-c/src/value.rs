//! `polylock_value`: a named versioned value (optimistic locking) with fenced writes. Each
//! call is one core `Value` call; a refused write fails with `POLYLOCK_CONFLICT` or
//! `POLYLOCK_FENCED`, and `polylock_last_error_details()` then gives the current value and
//! version, or the token that won.

use std::ffi::c_char;
use std::sync::Arc;

use polylock::{Value, VersionedValue};

use crate::args;
use crate::boundary::{call, quietly};
use crate::bytes::{borrowed, polylock_bytes};
use crate::client::polylock_client;
use crate::runtime::Shared;
use crate::status::polylock_status;

/// A handle on one named value of one client. Holds and reads nothing by itself; safe to
/// share between threads. Free it with `polylock_value_free()`.
#[allow(non_camel_case_types)]
pub struct polylock_value {
    pub(crate) shared: Arc<Shared>,
    pub(crate) value: Value,
}

/// A value as `polylock_value_get()` found it.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct polylock_versioned {
    /// False when there is no value (the other fields are then empty and 0).
    pub found: bool,
    /// The value's bytes, owned by the caller: free them with `polylock_bytes_free()`.
    pub value: polylock_bytes,
    /// Grows on every write of this name, also across a delete and a re-create.
    pub version: u64,
    /// Whether the value was written fenced (then `fencing_token` is the highest token
    /// it has accepted).
    pub fenced: bool,
    pub fencing_token: u64,
}

impl polylock_versioned {
    /// A state of the value as C reads it (`None`: there is none).
    pub(crate) fn from_core(found: Option<VersionedValue>) -> polylock_versioned {
        match found {
            Some(found) => polylock_versioned {
                found: true,
                value: polylock_bytes::from_vec(found.value),
                version: found.version,
                fenced: found.fencing_token.is_some(),
                fencing_token: found.fencing_token.unwrap_or(0),
            },
            None => polylock_versioned {
                found: false,
                value: polylock_bytes::EMPTY,
                version: 0,
                fenced: false,
                fencing_token: 0,
            },
        }
    }
}

/// A handle on the value `name`.
///
/// @param out  receives the handle on success; untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL argument or a bad name,
///         `POLYLOCK_UNSUPPORTED` if the backend keeps no versioned values.
///
/// # Safety
/// `client` is NULL or live; `name` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_value(
    client: *mut polylock_client,
    name: *const c_char,
    out: *mut *mut polylock_value,
) -> polylock_status {
    call(|| {
        let client = crate::client::live(client)?;
        // SAFETY (both): the caller's contract.
        let name = unsafe { args::text(name, "name") }?;
        let out = unsafe { args::out(out, "out") }?;
        let value = client.shared.client().value(name)?;
        *out = Box::into_raw(Box::new(polylock_value { shared: client.shared.clone(), value }));
        Ok(())
    })
}

/// Read the value: `out->found` is false when there is none. `out->value` is the caller's
/// to free with `polylock_bytes_free()`.
///
/// # Safety
/// `value` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_value_get(
    value: *mut polylock_value,
    out: *mut polylock_versioned,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(value, "value") }?;
        let out = unsafe { args::out(out, "out") }?;
        let core = handle.value.clone();
        let found = handle.shared.block_on(async move { core.get().await })?;
        *out = polylock_versioned::from_core(found);
        Ok(())
    })
}

/// Create the value with `len` bytes at `data` (borrowed for the call).
///
/// @param version  receives the first version; may be NULL.
/// @return `POLYLOCK_CONFLICT` if it exists (details: its current value and version).
///
/// # Safety
/// `value` is NULL or live; `data` is NULL (with `len` 0) or `len` readable bytes;
/// `version` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_value_create(
    value: *mut polylock_value,
    data: *const u8,
    len: usize,
    version: *mut u64,
) -> polylock_status {
    call(|| {
        // SAFETY (all three): the caller's contract.
        let handle = unsafe { args::handle(value, "value") }?;
        let bytes = unsafe { borrowed(data, len, "data") }?;
        let core = handle.value.clone();
        let written = handle.shared.block_on(async move { core.create(bytes).await })?;
        unsafe { args::set_if_wanted(version, written) };
        Ok(())
    })
}

/// Replace the value if it is still at `expected_version`.
///
/// @param new_version  receives the version written; may be NULL.
/// @return `POLYLOCK_CONFLICT` if someone wrote first or it is gone (details: the current
///         value and version).
///
/// # Safety
/// As `polylock_value_create()`.
#[no_mangle]
pub unsafe extern "C" fn polylock_value_compare_and_set(
    value: *mut polylock_value,
    expected_version: u64,
    data: *const u8,
    len: usize,
    new_version: *mut u64,
) -> polylock_status {
    call(|| {
        // SAFETY (all three): the caller's contract.
        let handle = unsafe { args::handle(value, "value") }?;
        let bytes = unsafe { borrowed(data, len, "data") }?;
        let core = handle.value.clone();
        let written = handle.shared.block_on(async move { core.compare_and_set(expected_version, bytes).await })?;
        unsafe { args::set_if_wanted(new_version, written) };
        Ok(())
    })
}

/// Remove the value if it is still at `expected_version`.
///
/// @return `POLYLOCK_CONFLICT` if it is not (or is gone already; details as above).
///
/// # Safety
/// `value` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_value_delete(value: *mut polylock_value, expected_version: u64) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { args::handle(value, "value") }?;
        let core = handle.value.clone();
        handle.shared.block_on(async move { core.delete(expected_version).await })
    })
}

/// Write the value if `token` is at least the highest fencing token it has accepted (pass
/// the token of the lock hold that protects it); the token is recorded with the value.
///
/// @param new_version  receives the version written; may be NULL.
/// @return `POLYLOCK_FENCED` if a higher token has written (details: the winning token):
///         the caller's lock was taken over, and nothing was written.
///
/// # Safety
/// As `polylock_value_create()`.
#[no_mangle]
pub unsafe extern "C" fn polylock_value_write_fenced(
    value: *mut polylock_value,
    token: u64,
    data: *const u8,
    len: usize,
    new_version: *mut u64,
) -> polylock_status {
    call(|| {
        // SAFETY (all three): the caller's contract.
        let handle = unsafe { args::handle(value, "value") }?;
        let bytes = unsafe { borrowed(data, len, "data") }?;
        let core = handle.value.clone();
        let written = handle.shared.block_on(async move { core.write_fenced(token, bytes).await })?;
        unsafe { args::set_if_wanted(new_version, written) };
        Ok(())
    })
}

/// Free a value handle. NULL is ignored.
///
/// # Safety
/// `value` is NULL or from `polylock_client_value()` and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn polylock_value_free(value: *mut polylock_value) {
    if value.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it from here on.
    quietly(|| drop(unsafe { Box::from_raw(value) }));
}
