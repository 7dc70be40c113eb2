//! `polylock_lock`: one named lock, owned by whichever thread calls it, like a pthread
//! recursive mutex. The core counts reentrancy and checks ownership per (client, thread).

use std::ffi::c_char;
use std::future::pending;
use std::sync::Arc;

use polylock::{Error, Lock, LockKind};

use crate::args;
use crate::boundary::{call, quietly};
use crate::cancel::{polylock_cancel, token_of};
use crate::client::polylock_client;
use crate::runtime::Shared;
use crate::status::polylock_status;

/// A handle on one named lock of one client. Holds nothing by itself; may be shared by
/// threads, each of which owns its own holds. Free it with `polylock_lock_free()`.
#[allow(non_camel_case_types)]
pub struct polylock_lock {
    pub(crate) shared: Arc<Shared>,
    pub(crate) lock: Lock,
    /// Whether the lock has a client of its own (`polylock_redlock()`), closed and freed
    /// with it.
    pub(crate) owns_client: bool,
}

impl polylock_lock {
    /// The lock as owned by the calling thread.
    fn for_this_thread(&self) -> Lock {
        self.lock.clone().with_local_id(polylock::kit::owner_ids::current_thread_owner_id())
    }
}

/// A handle on the reentrant lock `name` (same as `polylock_client_lock_kind(client, name,
/// "reentrant", out)`). Creating it holds nothing.
///
/// @param out  receives the new lock handle on success; untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL argument, an empty or over-long name.
///
/// # Safety
/// `client` is NULL or live; `name` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_lock(
    client: *mut polylock_client,
    name: *const c_char,
    out: *mut *mut polylock_lock,
) -> polylock_status {
    // SAFETY: the same contract.
    unsafe { polylock_client_lock_kind(client, name, c"reentrant".as_ptr(), out) }
}

/// A handle on the lock `name` of kind `kind`: "reentrant" (the default; Redisson's RLock
/// on Redis), "fair" (Redisson's fair lock), "token" (redis-py's and redlock's `SET NX PX`)
/// or "lease" (ShedLock's table on SQL). A kind the backend does not offer is refused here
/// with `POLYLOCK_UNSUPPORTED`, before anything is written.
///
/// # Safety
/// `client` is NULL or live; `name` and `kind` are NULL or NUL-terminated; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_lock_kind(
    client: *mut polylock_client,
    name: *const c_char,
    kind: *const c_char,
    out: *mut *mut polylock_lock,
) -> polylock_status {
    call(|| {
        let client = crate::client::live(client)?;
        // SAFETY (all three): the caller's contract.
        let name = unsafe { args::text(name, "name") }?;
        let kind: LockKind = unsafe { args::text(kind, "kind") }?.parse()?;
        let out = unsafe { args::out(out, "out") }?;
        let lock = client.shared.client().lock(name)?.with_kind(kind)?;
        *out = Box::into_raw(Box::new(polylock_lock { shared: client.shared.clone(), lock, owns_client: false }));
        Ok(())
    })
}

/// Acquire the lock for the calling thread. If the thread already holds it, the hold count
/// goes up (reentrancy) and the same fencing token comes back.
///
/// @param wait_ms   how long to wait: `POLYLOCK_WAIT_FOREVER` as long as it takes, 0 try
///                  once, up to 365 days; any other value is `POLYLOCK_INVALID_ARGUMENT`.
/// @param lease_ms  `POLYLOCK_LEASE_WATCHDOG` lets the watchdog renew the lock while the
///                  client lives; 10 ms to 365 days holds it for at most that long unless
///                  released; any other value (0 included) is `POLYLOCK_INVALID_ARGUMENT`.
/// @param fencing_token  receives the hold's fencing token (strictly greater than every
///                  earlier token for this name); may be NULL.
/// @return `POLYLOCK_OK`, `POLYLOCK_TIMEOUT` if the wait ran out, ...
///
/// # Safety
/// `lock` is NULL or live; `fencing_token` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_acquire(
    lock: *mut polylock_lock,
    wait_ms: i64,
    lease_ms: i64,
    fencing_token: *mut u64,
) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { args::handle(lock, "lock") }?;
        let options = args::acquire_options(wait_ms, lease_ms)?;
        let owned = handle.for_this_thread();
        let guard = handle.shared.block_on(async move { owned.acquire_with(options).await })?;
        // The thread releases by owner, so the hold outlives the guard.
        // SAFETY: the caller's contract.
        unsafe { args::set_if_wanted(fencing_token, guard.detach()) };
        Ok(())
    })
}

/// Give back one hold of the calling thread. The lock is free once every hold is given back.
///
/// @return `POLYLOCK_NOT_OWNER` if this thread holds none; `POLYLOCK_LOST` if the hold was
///         lost meanwhile (the lock may have been taken by someone else).
///
/// # Safety
/// `lock` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_release(lock: *mut polylock_lock) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { args::handle(lock, "lock") }?;
        let owned = handle.for_this_thread();
        handle.shared.block_on(async move { owned.release().await })
    })
}

/// Whether anyone, of any client, process or language, holds the lock in the store right now
/// (Redisson's `isLocked`); `polylock_lock_is_held()` is only the calling thread's own hold.
/// A read of the store, so a fact of the moment it answered.
///
/// @param locked  receives the answer on success; untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL argument, `POLYLOCK_CONNECTION` after the
///         client was closed, or the store's error.
///
/// # Safety
/// `lock` is NULL or live; `locked` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_is_locked(lock: *mut polylock_lock, locked: *mut bool) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(lock, "lock") }?;
        let locked = unsafe { args::out(locked, "locked") }?;
        let core = handle.lock.clone();
        *locked = handle.shared.block_on(async move { core.is_locked().await })?;
        Ok(())
    })
}

/// Block until the calling thread's current hold of the lock is lost (its lease ran out, a
/// renewal failed, its session ended, it was force-unlocked, the client closed): the lost
/// signal of a thread-owned hold, as `polylock_hold_wait_lost()` is a `polylock_hold`'s.
///
/// @param timeout_ms  how long to wait: `POLYLOCK_WAIT_FOREVER` forever, 0 only a look; any
///                    other negative value is `POLYLOCK_INVALID_ARGUMENT`.
/// @param cancel      NULL, or a token another thread may fire to stop waiting.
/// @return `POLYLOCK_OK` once the hold is (or already was) lost, `POLYLOCK_TIMEOUT` when
///         `timeout_ms` ran out first, `POLYLOCK_CANCELLED` when `cancel` fired first,
///         `POLYLOCK_NOT_OWNER` when the calling thread holds nothing of this lock.
///
/// # Safety
/// `lock` and `cancel` are NULL or live for the whole call.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_wait_lost(
    lock: *mut polylock_lock,
    timeout_ms: i64,
    cancel: *const polylock_cancel,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(lock, "lock") }?;
        let cancel = unsafe { token_of(cancel) };
        let limit = args::wait("timeout_ms", timeout_ms)?;
        let name = handle.lock.name().to_owned();
        let watch = handle.for_this_thread().lost_watch().ok_or_else(|| {
            Error::not_owner(format!("this thread holds nothing of '{name}' whose loss it could wait for"))
        })?;
        handle.shared.block_on(async move {
            let cancelled = async {
                match &cancel {
                    Some(cancel) => cancel.cancelled().await,
                    None => pending().await,
                }
            };
            let ran_out = async {
                match limit {
                    Some(limit) => tokio::time::sleep(limit).await,
                    None => pending().await,
                }
            };
            tokio::select! {
                // A hold that is already lost says so, whatever else is true.
                biased;
                _ = watch.wait() => Ok(()),
                () = cancelled => Err(Error::cancelled(format!("the wait for the loss of '{name}' was cancelled"))),
                () = ran_out => Err(Error::timeout(format!("'{name}' was not lost within {timeout_ms} ms"))),
            }
        })
    })
}

/// Run a read of the calling thread's hold, answering `otherwise` for NULL or a panic.
fn inspect<T: Copy>(lock: *const polylock_lock, otherwise: T, read: impl FnOnce(&Lock) -> T) -> T {
    let mut answer = otherwise;
    // SAFETY: the exported callers pass a lock that is NULL or live.
    if let Ok(handle) = unsafe { args::handle(lock, "lock") } {
        quietly(|| answer = read(&handle.for_this_thread()));
    }
    answer
}

/// Whether the calling thread holds the lock and it has not been lost. False for NULL.
///
/// # Safety
/// `lock` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_is_held(lock: *const polylock_lock) -> bool {
    inspect(lock, false, Lock::is_held)
}

/// How many times the calling thread holds the lock (0 if not at all, or for NULL).
///
/// # Safety
/// `lock` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_hold_count(lock: *const polylock_lock) -> u32 {
    inspect(lock, 0, Lock::hold_count)
}

/// Whether the calling thread's current hold has been lost (lease ran out, renewal failed,
/// client closed). It stays recorded as lost until the thread releases it, which then
/// reports `POLYLOCK_LOST`. False if the thread holds nothing, or for NULL.
///
/// # Safety
/// `lock` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_is_lost(lock: *const polylock_lock) -> bool {
    inspect(lock, false, |lock| lock.lost_watch().is_some_and(|watch| watch.is_lost()))
}

/// Free a lock handle. Holds are not released: they belong to the threads (release them
/// first, or they stay until the client is closed or the lease runs out). A lock from
/// `polylock_redlock()` closes and frees its own client too, which gives its holds back.
/// NULL is ignored.
///
/// # Safety
/// `lock` is NULL or a handle from `polylock_client_lock()` or `polylock_redlock()` not
/// freed yet.
#[no_mangle]
pub unsafe extern "C" fn polylock_lock_free(lock: *mut polylock_lock) {
    if lock.is_null() {
        return;
    }
    quietly(|| {
        // SAFETY: the caller's contract: we own it from here on.
        let lock = unsafe { Box::from_raw(lock) };
        if lock.owns_client {
            lock.shared.shut_down();
        }
    });
}
