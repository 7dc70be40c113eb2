//! `polylock_election`: leader elections. Candidates campaign with a value; one leads at a
//! time, and each new leader's term is a fencing token greater than every earlier one. The
//! layouts (etcd's `concurrency.Election`, Curator's `LeaderLatch`, a lease record
//! elsewhere), renewal and loss are the core's `Election`; this file translates.
//!
//! A campaign is a blocking call with a timeout and an optional `polylock_cancel`; a
//! campaign that ends without leading (timeout, cancel) leaves no candidacy behind. A won
//! campaign is a `polylock_leadership`, which any thread may inspect, wait on, proclaim
//! through or resign. `polylock_election_observe()` gives a `polylock_observer` whose
//! `polylock_observer_next()` blocks until the leader changes.

use std::ffi::c_char;
use std::future::pending;
use std::sync::Arc;
use std::time::Duration;

use polylock::kit::cancel::{cancellable, CancellationToken};
use polylock::{Election, Error, LeaderChanges, LeaderRecord, Leadership};

use crate::args;
use crate::boundary::{call, quietly};
use crate::bytes::{borrowed, polylock_bytes};
use crate::cancel::{polylock_cancel, token_of};
use crate::client::polylock_client;
use crate::runtime::Shared;
use crate::status::polylock_status;

/// A handle on one named election of one client. Campaigning through it takes part; the
/// handle itself holds nothing. Safe to share between threads; free it with
/// `polylock_election_free()`.
#[allow(non_camel_case_types)]
pub struct polylock_election {
    shared: Arc<Shared>,
    election: Election,
}

/// One won campaign: the proof of leading for one term. Any thread may use it. Resign with
/// `polylock_leadership_resign()`, then free it with `polylock_leadership_free()` (freeing
/// a leadership not resigned resigns it in the background).
#[allow(non_camel_case_types)]
pub struct polylock_leadership {
    shared: Arc<Shared>,
    leadership: Leadership,
    /// Fired when resigned or freed: ends `polylock_leadership_wait_lost()` waits.
    ended: CancellationToken,
}

/// The leader changes of one election, as `polylock_election_observe()` started them. Free
/// it with `polylock_observer_free()`, which stops the observation.
#[allow(non_camel_case_types)]
pub struct polylock_observer {
    shared: Arc<Shared>,
    name: String,
    /// A tokio mutex: a second thread's `next` waits for it within its own timeout and cancel.
    changes: tokio::sync::Mutex<LeaderChanges>,
}

/// The leader of an election as `polylock_election_leader()` or `polylock_observer_next()`
/// found it.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct polylock_leader {
    /// False when nobody leads (the other fields are then empty and 0).
    pub found: bool,
    /// The value the leader campaigned with or last proclaimed, owned by the caller: free it
    /// with `polylock_bytes_free()`.
    pub value: polylock_bytes,
    /// The leader's term (its fencing token).
    pub term: u64,
}

impl polylock_leader {
    fn from_core(leader: Option<LeaderRecord>) -> polylock_leader {
        match leader {
            Some(leader) => {
                polylock_leader { found: true, value: polylock_bytes::from_vec(leader.value), term: leader.term }
            }
            None => polylock_leader { found: false, value: polylock_bytes::EMPTY, term: 0 },
        }
    }
}

/// Wait for `cancel` to fire (never, when there is none).
async fn cancelled(cancel: &Option<CancellationToken>) {
    match cancel {
        Some(cancel) => cancel.cancelled().await,
        None => pending().await,
    }
}

/// Sleep for `limit` (for ever, when there is none).
async fn ran_out(limit: Option<Duration>) {
    match limit {
        Some(limit) => tokio::time::sleep(limit).await,
        None => pending().await,
    }
}

/// A handle on the election `name`.
///
/// @param out  receives the handle on success; untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL argument or a bad name,
///         `POLYLOCK_UNSUPPORTED` if the backend has no elections (RedLock).
///
/// # Safety
/// `client` is NULL or live; `name` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_client_election(
    client: *mut polylock_client,
    name: *const c_char,
    out: *mut *mut polylock_election,
) -> polylock_status {
    call(|| {
        let client = crate::client::live(client)?;
        // SAFETY (both): the caller's contract.
        let name = unsafe { args::text(name, "name") }?;
        let out = unsafe { args::out(out, "out") }?;
        let election = client.shared.client().election(name)?;
        *out = Box::into_raw(Box::new(polylock_election { shared: client.shared.clone(), election }));
        Ok(())
    })
}

/// Campaign with `len` bytes at `data` (borrowed for the call) as this candidate's value,
/// until it leads. Each call is a candidate of its own, even two through one handle.
///
/// @param timeout_ms  how long to wait: `POLYLOCK_WAIT_FOREVER` without limit, 0 one
///                    try; any other negative value is `POLYLOCK_INVALID_ARGUMENT`.
/// @param cancel      NULL, or a token another thread may fire to give up.
/// @param out         receives the leadership on success; untouched on failure.
/// @return `POLYLOCK_TIMEOUT` when another candidate still led at the timeout,
///         `POLYLOCK_CANCELLED` when `cancel` fired first (either way no candidacy is left
///         behind), `POLYLOCK_CONNECTION` when the client was closed.
///
/// # Safety
/// `election` and `cancel` are NULL or live; `data` is NULL (with `len` 0) or `len`
/// readable bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_campaign(
    election: *mut polylock_election,
    data: *const u8,
    len: usize,
    timeout_ms: i64,
    cancel: *const polylock_cancel,
    out: *mut *mut polylock_leadership,
) -> polylock_status {
    call(|| {
        // SAFETY (all four): the caller's contract.
        let handle = unsafe { args::handle(election, "election") }?;
        let value = unsafe { borrowed(data, len, "data") }?;
        let out = unsafe { args::out(out, "out") }?;
        let cancel = unsafe { token_of(cancel) };
        let timeout = args::wait("timeout_ms", timeout_ms)?;
        let core = handle.election.clone();
        let what = format!("leadership of election '{}'", core.name());
        // Dropping a campaign (the cancel) withdraws its candidacy: the core's rule.
        let leadership = handle.shared.block_on(async move {
            let campaigning = core.campaign(value, timeout);
            match cancel {
                Some(cancel) => cancellable(&what, &cancel, campaigning).await,
                None => campaigning.await,
            }
        })?;
        let won = polylock_leadership { shared: handle.shared.clone(), leadership, ended: CancellationToken::new() };
        *out = Box::into_raw(Box::new(won));
        Ok(())
    })
}

/// The current leader: `out->found` is false when nobody leads. `out->value` is the
/// caller's to free with `polylock_bytes_free()`.
///
/// # Safety
/// `election` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_leader(
    election: *mut polylock_election,
    out: *mut polylock_leader,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(election, "election") }?;
        let out = unsafe { args::out(out, "out") }?;
        let core = handle.election.clone();
        let leader = handle.shared.block_on(async move { core.leader().await })?;
        *out = polylock_leader::from_core(leader);
        Ok(())
    })
}

/// Start observing the leader: the observer's first `polylock_observer_next()` gives the
/// leader now, and each later one the leader after a change (a new leader, a proclaimed
/// value, nobody leading).
///
/// @param out  receives the observer on success; untouched on failure.
///
/// # Safety
/// `election` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_observe(
    election: *mut polylock_election,
    out: *mut *mut polylock_observer,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(election, "election") }?;
        let out = unsafe { args::out(out, "out") }?;
        let core = handle.election.clone();
        // The observation is a task of the client's runtime: start it inside it.
        let changes = handle.shared.block_on(async move { core.observe() })?;
        *out = Box::into_raw(Box::new(polylock_observer {
            shared: handle.shared.clone(),
            name: handle.election.name().to_string(),
            changes: tokio::sync::Mutex::new(changes),
        }));
        Ok(())
    })
}

/// Free an election handle (leaderships and observers made from it stay valid). NULL is
/// ignored.
///
/// # Safety
/// `election` is NULL or from `polylock_client_election()` and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn polylock_election_free(election: *mut polylock_election) {
    if election.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it from here on.
    quietly(|| drop(unsafe { Box::from_raw(election) }));
}

/// The next leader change: the leader now on the first call, then the leader after each
/// change. `out->found` is false when nobody leads; `out->value` is the caller's to free
/// with `polylock_bytes_free()`.
///
/// @param timeout_ms  how long to wait: `POLYLOCK_WAIT_FOREVER` without limit, 0 only
///                    what is there; any other negative value is `POLYLOCK_INVALID_ARGUMENT`.
/// @param cancel      NULL, or a token another thread may fire to stop waiting.
/// @return `POLYLOCK_TIMEOUT` when nothing changed within `timeout_ms` (nothing is missed:
///         the next call gives the change), `POLYLOCK_CANCELLED` when `cancel` fired first,
///         `POLYLOCK_CONNECTION` once the client is closed (the observation has ended), or the
///         error that ended the observation.
///
/// # Safety
/// `observer` and `cancel` are NULL or live for the whole call; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_observer_next(
    observer: *mut polylock_observer,
    timeout_ms: i64,
    cancel: *const polylock_cancel,
    out: *mut polylock_leader,
) -> polylock_status {
    call(|| {
        // SAFETY (all three): the caller's contract.
        let observer = unsafe { args::handle(observer, "observer") }?;
        let out = unsafe { args::out(out, "out") }?;
        let cancel = unsafe { token_of(cancel) };
        let limit = args::wait("timeout_ms", timeout_ms)?;
        let name = observer.name.as_str();
        let next = observer.shared.block_on(async {
            let waiting = async {
                let mut changes = observer.changes.lock().await;
                changes.next().await
            };
            // mpsc receiving is cancel-safe: a change that arrives as the wait ends stays queued.
            tokio::select! {
                biased;
                next = waiting => match next {
                    Some(next) => next,
                    None => Err(Error::connection(format!(
                        "the client closed: the observation of election '{name}' has ended"
                    ))),
                },
                () = cancelled(&cancel) => {
                    Err(Error::cancelled(format!("the wait for a leader change of election '{name}' was cancelled")))
                }
                () = ran_out(limit) => {
                    Err(Error::timeout(format!("election '{name}': no leader change within {timeout_ms} ms")))
                }
            }
        })?;
        *out = polylock_leader::from_core(next);
        Ok(())
    })
}

/// Free an observer, stopping its observation. NULL is ignored.
///
/// # Safety
/// `observer` is NULL or from `polylock_election_observe()`, not freed yet, and no call on it
/// is still running.
#[no_mangle]
pub unsafe extern "C" fn polylock_observer_free(observer: *mut polylock_observer) {
    if observer.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it from here on.
    quietly(|| drop(unsafe { Box::from_raw(observer) }));
}

/// The leadership's term: a fencing token strictly greater than every earlier leader's
/// term of this election; 0 for NULL. It stays readable after a resign or a loss.
///
/// # Safety
/// `leadership` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_leadership_term(leadership: *const polylock_leadership) -> u64 {
    let mut term = 0;
    // SAFETY: the caller's contract.
    if let Some(leadership) = unsafe { leadership.as_ref() } {
        quietly(|| term = leadership.leadership.term());
    }
    term
}

/// True until the leadership is resigned or lost; once false, never true again. False for
/// NULL.
///
/// # Safety
/// `leadership` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_leadership_is_leader(leadership: *const polylock_leadership) -> bool {
    let mut leading = false;
    // SAFETY: the caller's contract.
    if let Some(leadership) = unsafe { leadership.as_ref() } {
        quietly(|| leading = leadership.leadership.is_leader());
    }
    leading
}

/// Whether the store no longer has this leader (lease passed, session ended, taken over,
/// client closed). False for NULL.
///
/// # Safety
/// `leadership` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_leadership_is_lost(leadership: *const polylock_leadership) -> bool {
    let mut lost = false;
    // SAFETY: the caller's contract.
    if let Some(leadership) = unsafe { leadership.as_ref() } {
        quietly(|| lost = leadership.leadership.is_lost());
    }
    lost
}

/// Whether the connection is down and the backend cannot tell yet whether this is still
/// the leader (ZooKeeper's SUSPENDED): act as "not sure". False for NULL.
///
/// # Safety
/// `leadership` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_leadership_is_suspended(leadership: *const polylock_leadership) -> bool {
    let mut suspended = false;
    // SAFETY: the caller's contract.
    if let Some(leadership) = unsafe { leadership.as_ref() } {
        quietly(|| suspended = leadership.leadership.is_suspended());
    }
    suspended
}

/// The value this leader campaigned with or last proclaimed, into `out` (the caller frees
/// it with `polylock_bytes_free()`).
///
/// # Safety
/// `leadership` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_leadership_value(
    leadership: *const polylock_leadership,
    out: *mut polylock_bytes,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let leadership = unsafe { args::handle(leadership, "leadership") }?;
        let out = unsafe { args::out(out, "out") }?;
        *out = polylock_bytes::from_vec(leadership.leadership.value());
        Ok(())
    })
}

/// Block until the leadership is lost, or the wait ends otherwise.
///
/// @param timeout_ms  how long to wait: `POLYLOCK_WAIT_FOREVER` forever; any other
///                    negative value is `POLYLOCK_INVALID_ARGUMENT`.
/// @param cancel      NULL, or a token another thread may fire to stop waiting.
/// @param lost        receives true when the leadership is (or already was) lost, false
///                    when it was resigned or freed meanwhile (it can no longer be lost).
/// @return `POLYLOCK_OK` (see `lost`), `POLYLOCK_TIMEOUT` when `timeout_ms` ran out first,
///         `POLYLOCK_CANCELLED` when `cancel` fired first, `POLYLOCK_CONNECTION` when the
///         client was freed.
///
/// # Safety
/// `leadership` and `cancel` are NULL or live for the whole call; `lost` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_leadership_wait_lost(
    leadership: *const polylock_leadership,
    timeout_ms: i64,
    cancel: *const polylock_cancel,
    lost: *mut bool,
) -> polylock_status {
    call(|| {
        // SAFETY (all three): the caller's contract.
        let leadership = unsafe { args::handle(leadership, "leadership") }?;
        let lost_out = unsafe { args::out(lost, "lost") }?;
        let cancel = unsafe { token_of(cancel) };
        let limit = args::wait("timeout_ms", timeout_ms)?;
        let watch = leadership.leadership.lost_watch();
        let ended = leadership.ended.clone();
        let name = leadership.leadership.name().to_string();
        *lost_out = leadership.shared.block_on(async move {
            tokio::select! {
                // A leadership that is already lost says so, whatever else is true.
                biased;
                _ = watch.wait() => Ok(true),
                () = ended.cancelled() => Ok(false),
                () = cancelled(&cancel) => {
                    Err(Error::cancelled(format!("the wait for the loss of leadership of '{name}' was cancelled")))
                }
                () = ran_out(limit) => {
                    Err(Error::timeout(format!("leadership of '{name}' was not lost within {timeout_ms} ms")))
                }
            }
        })?;
        Ok(())
    })
}

/// Replace the leader's value (`len` bytes at `data`, borrowed for the call), without a new
/// election or term.
///
/// @return `POLYLOCK_LOST` if this is no longer the leader (and then it never is again),
///         `POLYLOCK_NOT_OWNER` if it was resigned.
///
/// # Safety
/// `leadership` is NULL or live; `data` is NULL (with `len` 0) or `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn polylock_leadership_proclaim(
    leadership: *const polylock_leadership,
    data: *const u8,
    len: usize,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let leadership = unsafe { args::handle(leadership, "leadership") }?;
        let value = unsafe { borrowed(data, len, "data") }?;
        let core = leadership.leadership.clone();
        leadership.shared.block_on(async move { core.proclaim(value).await })
    })
}

/// Stop leading, so that the next candidate leads. Resigning twice is harmless. The
/// leadership must still be freed.
///
/// @return `POLYLOCK_LOST` if the leadership had been lost before.
///
/// # Safety
/// `leadership` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_leadership_resign(leadership: *const polylock_leadership) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let leadership = unsafe { args::handle(leadership, "leadership") }?;
        leadership.ended.cancel();
        let core = leadership.leadership.clone();
        leadership.shared.block_on(async move { core.resign().await })
    })
}

/// Free a leadership. One not resigned yet resigns in the background (its outcome
/// unknown). NULL is ignored.
///
/// # Safety
/// `leadership` is NULL or from `polylock_election_campaign()`, not freed yet, and no call on
/// it is still running.
#[no_mangle]
pub unsafe extern "C" fn polylock_leadership_free(leadership: *mut polylock_leadership) {
    if leadership.is_null() {
        return;
    }
    quietly(|| {
        // SAFETY: the caller's contract: we own it from here on.
        let leadership = unsafe { Box::from_raw(leadership) };
        leadership.ended.cancel();
        // The core leadership, dropped with it, resigns in the background.
        drop(leadership);
    });
}
