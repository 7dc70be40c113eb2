//! RedLock over a list of independent Redis servers, as `redlock(servers, name)` is in
//! Python, Node and Java: the `redlock://` URL comes from the core's one builder
//! (`polylock::kit::redlock_url`), so every language takes the same entries and refuses the
//! same mistakes with the same words.

use std::ffi::c_char;
use std::sync::Arc;

use polylock::LockKind;

use crate::args;
use crate::boundary::call;
use crate::client::{self, polylock_client};
use crate::lock::polylock_lock;
use crate::status::polylock_status;

/// A client of the RedLock backend over the independent Redis servers `servers[0..count]`,
/// each `host:port` or `redis://[user:password@]host:port` (one set of credentials for
/// all). Use it as any client: `polylock_client_lock_kind(client, name, "token", &lock)`,
/// multi-locks; RedLock has token locks only, and no fencing tokens.
///
/// @param out  receives the new client on success; untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for NULL, an empty list or an unusable entry (the
///         message shows it redacted); `POLYLOCK_CONNECTION` when the servers cannot be
///         reached.
///
/// # Safety
/// `servers` is NULL (with `count` 0) or `count` NULL or NUL-terminated strings; `out` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_redlock_connect(
    servers: *const *const c_char,
    count: usize,
    out: *mut *mut polylock_client,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let out = unsafe { args::out(out, "out") }?;
        let servers = unsafe { args::texts(servers, count, "servers") }?;
        let url = polylock::kit::redlock_url::redlock_url(&servers)?;
        *out = client::hand_out(client::connect(&url)?);
        Ok(())
    })
}

/// The RedLock lock `name` over the independent Redis servers `servers[0..count]` (as
/// `polylock_redlock_connect()` takes them), on a client of its own: held while a majority
/// of the servers granted it and its validity lasts. Use it as any `polylock_lock` (the
/// token kind that node-redlock and redsync use). RedLock has no fencing tokens: the number
/// an acquisition gives back only tells this client's holds apart, and orders nothing
/// (use one Redis, etcd or ZooKeeper where a fenced write must be refused).
/// `polylock_lock_free()` closes and frees its client, which gives back its holds.
///
/// @param out  receives the lock on success; untouched on failure.
/// @return as `polylock_redlock_connect()`, and `POLYLOCK_INVALID_ARGUMENT` for a bad name.
///
/// # Safety
/// As `polylock_redlock_connect()`; `name` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn polylock_redlock(
    servers: *const *const c_char,
    count: usize,
    name: *const c_char,
    out: *mut *mut polylock_lock,
) -> polylock_status {
    call(|| {
        // SAFETY (all three): the caller's contract.
        let out = unsafe { args::out(out, "out") }?;
        let name = unsafe { args::text(name, "name") }?;
        let servers = unsafe { args::texts(servers, count, "servers") }?;
        let url = polylock::kit::redlock_url::redlock_url(&servers)?;
        let client = client::connect(&url)?;
        let shared = Arc::clone(&client.shared);
        let made = client.shared.client().lock(name).and_then(|lock| lock.with_kind(LockKind::Token));
        match made {
            Ok(lock) => {
                *out = Box::into_raw(Box::new(polylock_lock { shared, lock, owns_client: true }));
                Ok(())
            }
            Err(err) => {
                shared.shut_down();
                Err(err)
            }
        }
    })
}
