//! `polylock_client`: a connection to one backend, named by URL, with its own runtime.

use std::collections::BTreeSet;
use std::ffi::c_char;
use std::sync::{Arc, RwLock};

use crate::args;
use crate::boundary::{call, quietly};
use crate::bytes::polylock_bytes;
use crate::runtime::{new_runtime, Shared};
use crate::status::polylock_status;

/// A connection to one backend. Safe to share between threads; free it with
/// `polylock_client_free()`.
#[allow(non_camel_case_types)]
pub struct polylock_client {
    pub(crate) shared: Arc<Shared>,
}

/// The addresses of the clients connected and not freed yet. Every call reads a client only
/// through [`live`], which takes a reference (`Arc`) on what it shares under this lock, and
/// `polylock_client_free` takes the client out of the set under the same lock before it
/// frees it: a call in flight on another thread keeps its reference however long it runs
/// (also outside `block_on`), and a call after the free is refused instead of reading freed
/// memory.
static LIVE: RwLock<BTreeSet<usize>> = RwLock::new(BTreeSet::new());

/// A reference on a live client, for the length of one call.
pub(crate) struct LiveClient {
    pub(crate) shared: Arc<Shared>,
}

/// The client behind `ptr`, if it is one connected and not freed yet.
pub(crate) fn live(ptr: *const polylock_client) -> polylock::Result<LiveClient> {
    if ptr.is_null() {
        return Err(polylock::Error::invalid_argument("client is NULL"));
    }
    let set = LIVE.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !set.contains(&(ptr as usize)) {
        return Err(polylock::Error::invalid_argument(
            "client was freed (or is not a client from polylock_connect() or polylock_redlock_connect())",
        ));
    }
    // SAFETY: in the set, so allocated by `polylock_connect` and not freed: the free takes
    // it out of the set under the write lock before it frees, and we hold the read lock.
    let shared = unsafe { &*ptr }.shared.clone();
    Ok(LiveClient { shared })
}

/// Hand a new client to C, recording it as live.
pub(crate) fn hand_out(client: polylock_client) -> *mut polylock_client {
    let raw = Box::into_raw(Box::new(client));
    LIVE.write().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(raw as usize);
    raw
}

/// Connect to the backend `url` names (`sqlite://path.db`, `redis://host:port`, `mem://`,
/// ...; options in the query string such as `?namespace=orders&lease=30s`).
///
/// A client belongs to the process that connected it. In a child forked afterwards, every
/// call on it (and on its locks and handles) fails at once with `POLYLOCK_CONNECTION` (its
/// runtime's threads and its connections stayed in the parent), and freeing it there gives
/// nothing back: connect again in the child.
///
/// @param url  the backend's URL, or NULL for `$POLYLOCK_URL`, else `sqlite://polylock.db`.
/// @param out  receives the new client on success; untouched on failure.
/// @return `POLYLOCK_OK`, `POLYLOCK_INVALID_ARGUMENT` (NULL `out`, bad URL),
///         `POLYLOCK_CONNECTION` (unreachable server, wrong password), ...
///
/// # Safety
/// `url` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_connect(url: *const c_char, out: *mut *mut polylock_client) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { args::out(out, "out") }?;
        let url = if url.is_null() {
            polylock::url::default_url()
        } else {
            // SAFETY: non-NULL and NUL-terminated by the caller's contract.
            unsafe { args::text(url, "url") }?.to_string()
        };
        *out = hand_out(connect(&url)?);
        Ok(())
    })
}

/// A client of `url` with a runtime of its own. The first client of the process first
/// routes logs to stderr if `POLYLOCK_LOG` asks (unless the program set a log callback).
pub fn connect(url: &str) -> polylock::Result<polylock_client> {
    crate::observe::route_from_env_once();
    let runtime = new_runtime()?;
    // On failure the runtime is dropped here, which joins its threads.
    let client = runtime.block_on(polylock::Client::connect(url))?;
    Ok(polylock_client { shared: Arc::new(Shared::new(client, runtime)) })
}

/// Close the client: stop its watchdogs and give back every lock it holds. Later calls on
/// it and on its locks fail with `POLYLOCK_CONNECTION`. Closing twice is harmless. The
/// client must still be freed with `polylock_client_free()`.
///
/// # Safety
/// `client` is NULL or a live client from `polylock_connect()`.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_close(client: *mut polylock_client) -> polylock_status {
    call(|| {
        let client = crate::client::live(client)?;
        let core = client.shared.client().clone();
        client.shared.block_on(async move {
            core.close().await;
            Ok(())
        })
    })
}

/// Close the client (as `polylock_client_close()`), stop its runtime and join its threads,
/// then free it. Waits for calls in flight on other threads (they keep a reference on the
/// client until they return). Locks made from it stay valid to free, and fail with
/// `POLYLOCK_CONNECTION` if used. NULL is ignored, and so is a client freed already; a call
/// made on a client after its free fails with `POLYLOCK_INVALID_ARGUMENT`.
///
/// # Safety
/// `client` is NULL or a client from `polylock_connect()` not freed yet.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_free(client: *mut polylock_client) {
    if client.is_null() {
        return;
    }
    quietly(|| {
        let was_live = LIVE.write().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&(client as usize));
        if !was_live {
            return;
        }
        // SAFETY: it was live and is out of the set now, so no call can reach it any more
        // (see `live`): we own it from here on.
        let client = unsafe { Box::from_raw(client) };
        client.shared.shut_down();
    });
}

/// One client's metrics, in the shape of `polylock_metrics_json()` (its own backend only).
///
/// # Safety
/// `client` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_metrics_json(
    client: *mut polylock_client,
    out: *mut polylock_bytes,
) -> polylock_status {
    call(|| {
        let client = crate::client::live(client)?;
        // SAFETY: the caller's contract.
        let out = unsafe { args::out(out, "out") }?;
        crate::observe::hand_out(out, polylock::kit::metrics_json::to_json(&client.shared.client().metrics()));
        Ok(())
    })
}
