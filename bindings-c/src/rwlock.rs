//! `polylock_rwlock`: a read-write lock whose two sides are owned by the calling thread, as
//! with `pthread_rwlock_t` (but reentrant, and the writer may also read).

use std::ffi::c_char;
use std::sync::Arc;

use polylock::{RwLock, RwLockSide};

use crate::args;
use crate::boundary::{call, quietly};
use crate::client::polylock_client;
use crate::runtime::Shared;
use crate::status::polylock_status;

/// A handle on one named read-write lock of one client. Holds nothing by itself; may be
/// shared by threads, each of which owns its own holds. Free it with `polylock_rwlock_free()`.
#[allow(non_camel_case_types)]
pub struct polylock_rwlock {
    pub(crate) shared: Arc<Shared>,
    pub(crate) rw: RwLock,
}

/// A handle on the read-write lock `name`. Creating it holds nothing.
///
/// @param out  receives the new handle on success; untouched on failure.
/// @return `POLYLOCK_UNSUPPORTED` if the backend has no read-write locks (only `sqlite://` and
///         `mem://` have them today), `POLYLOCK_INVALID_ARGUMENT` for a NULL argument, an empty
///         or over-long name.
///
/// # Safety
/// `client` is NULL or live; `name` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_rwlock(
    client: *mut polylock_client,
    name: *const c_char,
    out: *mut *mut polylock_rwlock,
) -> polylock_status {
    call(|| {
        let client = crate::client::live(client)?;
        // SAFETY (both): the caller's contract.
        let name = unsafe { args::text(name, "name") }?;
        let out = unsafe { args::out(out, "out") }?;
        let rw = client.shared.client().rw_lock(name)?;
        *out = Box::into_raw(Box::new(polylock_rwlock { shared: client.shared.clone(), rw }));
        Ok(())
    })
}

/// Which side a call takes.
fn side(rw: &RwLock, write: bool) -> &RwLockSide {
    if write {
        rw.write()
    } else {
        rw.read()
    }
}

fn acquire(rw: *mut polylock_rwlock, write: bool, wait_ms: i64, lease_ms: i64, token: *mut u64) -> polylock_status {
    call(|| {
        // SAFETY: the exported callers' contract.
        let handle = unsafe { args::handle(rw, "rwlock") }?;
        let options = args::acquire_options(wait_ms, lease_ms)?;
        let owned = handle.rw.clone().with_local_id(polylock::kit::owner_ids::current_thread_owner_id());
        let guard = handle.shared.block_on(async move { side(&owned, write).acquire_with(options).await })?;
        // The thread releases by owner, so the hold outlives the guard.
        // SAFETY: the exported callers' contract.
        unsafe { args::set_if_wanted(token, guard.detach()) };
        Ok(())
    })
}

fn release(rw: *mut polylock_rwlock, write: bool) -> polylock_status {
    call(|| {
        // SAFETY: the exported callers' contract.
        let handle = unsafe { args::handle(rw, "rwlock") }?;
        let owned = handle.rw.clone().with_local_id(polylock::kit::owner_ids::current_thread_owner_id());
        handle.shared.block_on(async move { side(&owned, write).release().await })
    })
}

/// Take the read (shared) side for the calling thread: many threads and processes may read
/// at once while nobody writes. Reentrant; the thread holding the write side may read too.
/// Arguments and statuses as `polylock_lock_acquire()`.
///
/// # Safety
/// `rw` is NULL or live; `fencing_token` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_rwlock_read_acquire(
    rw: *mut polylock_rwlock,
    wait_ms: i64,
    lease_ms: i64,
    fencing_token: *mut u64,
) -> polylock_status {
    acquire(rw, false, wait_ms, lease_ms, fencing_token)
}

/// Take the write (exclusive) side for the calling thread. A thread that holds the read side
/// gets `POLYLOCK_INVALID_ARGUMENT` at once (an upgrade could deadlock): release it first.
/// Arguments and statuses as `polylock_lock_acquire()`.
///
/// # Safety
/// `rw` is NULL or live; `fencing_token` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_rwlock_write_acquire(
    rw: *mut polylock_rwlock,
    wait_ms: i64,
    lease_ms: i64,
    fencing_token: *mut u64,
) -> polylock_status {
    acquire(rw, true, wait_ms, lease_ms, fencing_token)
}

/// Give back one read hold of the calling thread (`POLYLOCK_NOT_OWNER` if it has none).
///
/// # Safety
/// `rw` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_rwlock_read_release(rw: *mut polylock_rwlock) -> polylock_status {
    release(rw, false)
}

/// Give back one write hold of the calling thread (`POLYLOCK_NOT_OWNER` if it has none).
///
/// # Safety
/// `rw` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_rwlock_write_release(rw: *mut polylock_rwlock) -> polylock_status {
    release(rw, true)
}

/// Free a read-write lock handle. Holds are not released: they belong to the threads. NULL
/// is ignored.
///
/// # Safety
/// `rw` is NULL or a handle from `polylock_client_rwlock()` not freed yet.
#[no_mangle]
pub unsafe extern "C" fn polylock_rwlock_free(rw: *mut polylock_rwlock) {
    if rw.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it from here on.
    quietly(|| drop(unsafe { Box::from_raw(rw) }));
}
