//! The operator's view on a client: status, list and force-unlock of any holder's mutexes
//! (`polylock status --json`, `list --json`, `unlock --force`). Status and list leave as the
//! kit's JSON (`polylock::kit::inspect_json::status_of`, `list_of`), the one shape every
//! surface hands out.

use std::ffi::c_char;

use polylock::kit::inspect_json::{list_of, status_of};
use polylock::{LockKind, Result};

use crate::args;
use crate::boundary::call;
use crate::bytes::polylock_bytes;
use crate::client::polylock_client;
use crate::status::polylock_status;

/// The kind a NULL `kind` argument means, and the kind a given one names.
///
/// # Safety
/// `kind` is NULL or NUL-terminated.
unsafe fn kind_of(kind: *const c_char) -> Result<Option<LockKind>> {
    if kind.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    Ok(Some(unsafe { args::text(kind, "kind") }?.parse()?))
}

/// Who holds the mutex `name`, as one JSON object: `name`, `kind`, `backend`, `held`,
/// `holder`, `fencing_token`, `token_counter`, `remaining_lease_ms`, `lease_expires`,
/// `waiters`, `layout`, `details` (the CLI's `polylock status --json`). Any holder's, of any
/// client or language, as far as the backend's layout tells (null where it cannot).
///
/// @param kind  "reentrant", "fair", "token" or "lease"; NULL for the backend's default.
/// @param out   receives the UTF-8 text (not NUL-terminated: `out->len` bytes); free it with
///              `polylock_bytes_free()`. Untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL argument, a bad name or kind,
///         `POLYLOCK_UNSUPPORTED` for a kind the backend lacks.
///
/// # Safety
/// `client` is NULL or live; `name` and `kind` are NULL or NUL-terminated; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_status_json(
    client: *mut polylock_client,
    name: *const c_char,
    kind: *const c_char,
    out: *mut polylock_bytes,
) -> polylock_status {
    call(|| {
        let client = crate::client::live(client)?;
        // SAFETY (all three): the caller's contract.
        let name = unsafe { args::text(name, "name") }?;
        let kind = unsafe { kind_of(kind) }?;
        let out = unsafe { args::out(out, "out") }?;
        let core = client.shared.client().clone();
        let owned = name.to_owned();
        let json = client.shared.block_on(async move { status_of(&core, &owned, kind).await })?;
        crate::observe::hand_out(out, json);
        Ok(())
    })
}

/// The mutexes whose name starts with `prefix`, sorted by name, as one JSON array of
/// `{"name", "kind", "held"}` objects (the CLI's `polylock list --json`).
///
/// @param prefix  the start of the names; "" for every lock.
/// @param out     receives the UTF-8 text (not NUL-terminated: `out->len` bytes); free it with
///                `polylock_bytes_free()`. Untouched on failure.
/// @return `POLYLOCK_UNSUPPORTED` where the backend cannot enumerate its locks.
///
/// # Safety
/// `client` is NULL or live; `prefix` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_list_json(
    client: *mut polylock_client,
    prefix: *const c_char,
    out: *mut polylock_bytes,
) -> polylock_status {
    call(|| {
        let client = crate::client::live(client)?;
        // SAFETY (both): the caller's contract.
        let prefix = unsafe { args::text(prefix, "prefix") }?.to_owned();
        let out = unsafe { args::out(out, "out") }?;
        let core = client.shared.client().clone();
        let json = client.shared.block_on(async move { list_of(&core, &prefix).await })?;
        crate::observe::hand_out(out, json);
        Ok(())
    })
}

/// Remove the mutex `name` whoever holds it and wake its waiters (Redisson's `forceUnlock`;
/// the CLI's `polylock unlock --force`). Dangerous: the holder is not stopped, and learns of
/// its loss only at its next renewal or release (this client's own holds at once).
///
/// @param kind     as `polylock_client_status_json()`; NULL for the backend's default.
/// @param removed  receives whether there was a hold to remove; may be NULL.
///
/// # Safety
/// `client` is NULL or live; `name` and `kind` are NULL or NUL-terminated; `removed` is NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_force_unlock(
    client: *mut polylock_client,
    name: *const c_char,
    kind: *const c_char,
    removed: *mut bool,
) -> polylock_status {
    call(|| {
        let client = crate::client::live(client)?;
        // SAFETY (both): the caller's contract.
        let name = unsafe { args::text(name, "name") }?.to_owned();
        let kind = unsafe { kind_of(kind) }?;
        let inspector = client.shared.client().inspect();
        let was_held = client.shared.block_on(async move { inspector.force_unlock(&name, kind).await })?;
        // SAFETY: the caller's contract.
        unsafe { args::set_if_wanted(removed, was_held) };
        Ok(())
    })
}
