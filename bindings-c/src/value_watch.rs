//! `polylock_value_watch()` and `polylock_watch`: the changes of one value, as the core's
//! binding kit shares a watch (`polylock::kit::value_watch::SharedValueWatch`): any thread may
//! wait on it (one wait at a time, the others queue), a wait bounded by `wait_ms` that runs
//! out loses nothing, and a close from another thread ends a wait in progress. This file only
//! translates.

use std::future::pending;
use std::sync::Arc;

use polylock::kit::cancel::CancellationToken;
use polylock::kit::value_watch::{SharedValueWatch, WatchStep};
use polylock::Error;

use crate::args;
use crate::boundary::{call, quietly};
use crate::cancel::{polylock_cancel, token_of};
use crate::runtime::Shared;
use crate::status::polylock_status;
use crate::value::{polylock_value, polylock_versioned};

/// The changes of one value, from `polylock_value_watch()`. Safe to share between threads:
/// one `polylock_watch_changed()` waits at a time (a second one queues behind it,
/// within its own wait), `polylock_watch_current()` answers at once, and
/// `polylock_watch_close()` from any thread ends a wait in progress. Free it with
/// `polylock_watch_free()`.
#[allow(non_camel_case_types)]
pub struct polylock_watch {
    shared: Arc<Shared>,
    name: String,
    watch: SharedValueWatch,
}

/// How `polylock_watch_changed()` ended.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum polylock_watch_outcome {
    /// The value changed: `state` is its new version (`state.found` is true).
    POLYLOCK_WATCH_CHANGED = 0,
    /// The value was deleted (`state.found` is false).
    POLYLOCK_WATCH_DELETED = 1,
    /// Nothing changed within `wait_ms`; nothing is missed (the next call gives the change).
    POLYLOCK_WATCH_NO_CHANGE = 2,
    /// The watch was closed (before or during the wait); every later call says so too.
    POLYLOCK_WATCH_CLOSED = 3,
}

/// The result of `polylock_watch_changed()`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct polylock_watch_step {
    pub outcome: polylock_watch_outcome,
    /// CHANGED: the new state, whose bytes are the caller's to free with
    /// `polylock_bytes_free(&step.state.value)`; otherwise `found` is false and it is empty.
    pub state: polylock_versioned,
}

/// Start watching the value: the watch's current state is the value now, and each
/// `polylock_watch_changed()` gives the next state after the one it last gave.
///
/// @param out  receives the watch on success; untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL argument, `POLYLOCK_CONNECTION` when the
///         store cannot be reached (or the client was closed or freed).
///
/// # Safety
/// `value` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_value_watch(
    value: *mut polylock_value,
    out: *mut *mut polylock_watch,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(value, "value") }?;
        let out = unsafe { args::out(out, "out") }?;
        let core = handle.value.clone();
        // A store's change feed (a Redis subscription) is a task of the client's runtime.
        let watch = handle.shared.block_on(async move { core.watch().await })?;
        *out = Box::into_raw(Box::new(polylock_watch {
            shared: handle.shared.clone(),
            name: handle.value.name().to_string(),
            watch: SharedValueWatch::new(watch),
        }));
        Ok(())
    })
}

/// Wait for the value's next state: the first change after the state this watch last gave
/// (a change made while nobody waited is the next call's answer). `out->state.value` is the
/// caller's to free with `polylock_bytes_free()`.
///
/// @param wait_ms  how long to wait: `POLYLOCK_WAIT_FOREVER` without limit, 0 only what is
///                 there already; any other negative value is `POLYLOCK_INVALID_ARGUMENT`.
/// @param cancel   NULL, or a token another thread may fire to stop waiting (the watch stays
///                 usable, unlike `polylock_watch_close()`).
/// @param out      receives the step (see `polylock_watch_outcome`); untouched on failure.
/// @return `POLYLOCK_OK` for every outcome (read `out->outcome`), `POLYLOCK_CANCELLED` when
///         `cancel` fired first, `POLYLOCK_CONNECTION` once the client is closed or the store
///         could not answer (the watch stays open: a later call may succeed).
///
/// # Safety
/// `watch` and `cancel` are NULL or live for the whole call; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_watch_changed(
    watch: *mut polylock_watch,
    wait_ms: i64,
    cancel: *const polylock_cancel,
    out: *mut polylock_watch_step,
) -> polylock_status {
    call(|| {
        // SAFETY (all three): the caller's contract.
        let handle = unsafe { args::handle(watch, "watch") }?;
        let out = unsafe { args::out(out, "out") }?;
        let cancel = unsafe { token_of(cancel) };
        let limit = args::wait("wait_ms", wait_ms)?;
        let name = handle.name.as_str();
        let waiting = handle.watch.changed_within(limit);
        let step = handle.shared.block_on(async move {
            // The kit's wait loses nothing when it is dropped (as when its bound runs out).
            tokio::select! {
                biased;
                step = waiting => step,
                () = cancelled(&cancel) => {
                    Err(Error::cancelled(format!("the wait for a change of value '{name}' was cancelled")))
                }
            }
        })?;
        *out = match step {
            WatchStep::Changed(Some(now)) => polylock_watch_step {
                outcome: polylock_watch_outcome::POLYLOCK_WATCH_CHANGED,
                state: polylock_versioned::from_core(Some(now)),
            },
            WatchStep::Changed(None) => polylock_watch_step {
                outcome: polylock_watch_outcome::POLYLOCK_WATCH_DELETED,
                state: polylock_versioned::from_core(None),
            },
            WatchStep::NoChange => polylock_watch_step {
                outcome: polylock_watch_outcome::POLYLOCK_WATCH_NO_CHANGE,
                state: polylock_versioned::from_core(None),
            },
            WatchStep::Closed => polylock_watch_step {
                outcome: polylock_watch_outcome::POLYLOCK_WATCH_CLOSED,
                state: polylock_versioned::from_core(None),
            },
        };
        Ok(())
    })
}

/// Wait until `cancel` fires (for ever without one).
async fn cancelled(cancel: &Option<CancellationToken>) {
    match cancel {
        Some(cancel) => cancel.cancelled().await,
        None => pending().await,
    }
}

/// The state this watch last gave: the value when the watch started, or the last change
/// `polylock_watch_changed()` returned. Answers at once, also while another thread
/// waits. `out->found` is false when there was no value (or it was deleted); `out->value` is
/// the caller's to free with `polylock_bytes_free()`.
///
/// # Safety
/// `watch` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_watch_current(
    watch: *const polylock_watch,
    out: *mut polylock_versioned,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(watch, "watch") }?;
        let out = unsafe { args::out(out, "out") }?;
        *out = polylock_versioned::from_core(handle.watch.current());
        Ok(())
    })
}

/// Whether the watch was closed; false for NULL.
///
/// # Safety
/// `watch` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_watch_is_closed(watch: *const polylock_watch) -> bool {
    // SAFETY: the caller's contract.
    unsafe { watch.as_ref() }.is_some_and(|handle| handle.watch.is_closed())
}

/// Close the watch, from any thread: a `polylock_watch_changed()` in progress ends with
/// `POLYLOCK_WATCH_CLOSED`, as every later one does, and the store's change feed is let go
/// of. Closing twice is harmless. Free the watch afterwards with `polylock_watch_free()`.
///
/// @return `POLYLOCK_CONNECTION` if the client was freed (free the watch then: that lets go
///         of everything).
///
/// # Safety
/// `watch` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_watch_close(watch: *const polylock_watch) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { args::handle(watch, "watch") }?;
        let watch = handle.watch.clone();
        handle.shared.block_on(async move {
            watch.close().await;
            Ok(())
        })
    })
}

/// Free a watch (closing it first if it is open). NULL is ignored.
///
/// # Safety
/// `watch` is NULL or from `polylock_value_watch()`, not freed yet, and no call on it is
/// still running (close it from another thread first to end a wait).
#[no_mangle]
pub unsafe extern "C" fn polylock_watch_free(watch: *mut polylock_watch) {
    if watch.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it from here on.
    let handle = unsafe { Box::from_raw(watch) };
    quietly(move || {
        if handle.watch.is_closed() {
            return drop(handle);
        }
        // Let go of the change feed inside the client's runtime, whose task it is. Once the
        // client is freed (or in a forked child) that fails, and a feed let go of outside any
        // runtime forgets itself (the core's contract, e.g. Redis's subscription).
        let watch = handle.watch.clone();
        let _ = handle.shared.block_on(async move {
            watch.close().await;
            Ok(())
        });
        drop(handle);
    });
}
