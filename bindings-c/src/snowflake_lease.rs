//! `polylock_leased_snowflake`: a Snowflake generator whose worker id is leased from the
//! backend (Twitter layout), so no two generators of one namespace issue the same ID. The
//! lease, its renewal, the high-water mark and the stop at the lease deadline are the
//! core's (`LeasedSnowflake`); this file translates.

use std::sync::Arc;

use polylock::{Error, LeasedSnowflake, SnowflakeOptions};

use crate::args;
use crate::boundary::{call, quietly};
use crate::client::polylock_client;
use crate::runtime::Shared;
use crate::status::polylock_status;

/// A Snowflake generator holding a leased worker id. Safe to share between threads. Close
/// it with `polylock_leased_snowflake_close()` (gives the id back at once), then free it.
#[allow(non_camel_case_types)]
pub struct polylock_leased_snowflake {
    shared: Arc<Shared>,
    generator: LeasedSnowflake,
}

/// Lease a worker id and make a generator on it.
///
/// @param worker_id  the id to lease (0..=1023), or any negative number for the lowest free
///                   one.
/// @param out        receives the generator on success; untouched on failure.
/// @return `POLYLOCK_TIMEOUT` if the id asked for is leased by another generator,
///         `POLYLOCK_INVALID_ARGUMENT` if it does not fit the layout,
///         `POLYLOCK_UNSUPPORTED` if the backend keeps no versioned values.
///
/// # Safety
/// `client` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_snowflake_lease(
    client: *mut polylock_client,
    worker_id: i64,
    out: *mut *mut polylock_leased_snowflake,
) -> polylock_status {
    call(|| {
        let client = crate::client::live(client)?;
        // SAFETY: the caller's contract.
        let out = unsafe { args::out(out, "out") }?;
        let wanted = u64::try_from(worker_id).ok();
        let core = client.shared.client().clone();
        let generator =
            client.shared.block_on(async move { core.snowflake(wanted, SnowflakeOptions::default()).await })?;
        *out = Box::into_raw(Box::new(polylock_leased_snowflake { shared: client.shared.clone(), generator }));
        Ok(())
    })
}

/// The next ID.
///
/// @return `POLYLOCK_LOST` when the lease ended under this call (the next call leases
///         another id, unless one id was asked for), `POLYLOCK_EXHAUSTED` when the clock
///         cannot yet pass the previous holder's mark (details: retry-after).
///
/// # Safety
/// `generator` is NULL or live; `id` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_leased_snowflake_next(
    generator: *mut polylock_leased_snowflake,
    id: *mut u64,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(generator, "generator") }?;
        let id = unsafe { args::out(id, "id") }?;
        let core = handle.generator.clone();
        *id = handle.shared.block_on(async move { core.next_id().await })?;
        Ok(())
    })
}

/// `count` IDs in increasing order, all under one lease, into the caller's array `ids`;
/// untouched on failure.
///
/// # Safety
/// `generator` is NULL or live; `ids` is NULL (with `count` 0) or writable for `count` IDs.
#[no_mangle]
pub unsafe extern "C" fn polylock_leased_snowflake_next_ids(
    generator: *mut polylock_leased_snowflake,
    count: usize,
    ids: *mut u64,
) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(generator, "generator") }?;
        let ids = unsafe { args::id_array(ids, count) }?;
        let core = handle.generator.clone();
        let issued = handle.shared.block_on(async move { core.next_ids(count).await })?;
        ids.copy_from_slice(&issued);
        Ok(())
    })
}

/// The worker id held now and its lease's epoch (which grows on every take of that id).
///
/// @param worker_id, epoch  receive them; either may be NULL.
/// @return `POLYLOCK_LOST` between a loss of the lease and the next call that leases again.
///
/// # Safety
/// `generator` is NULL or live; `worker_id` and `epoch` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_leased_snowflake_worker(
    generator: *mut polylock_leased_snowflake,
    worker_id: *mut u64,
    epoch: *mut u64,
) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { args::handle(generator, "generator") }?;
        let core = handle.generator.clone();
        let held = handle.shared.block_on(async move { Ok((core.worker_id().await, core.epoch().await)) })?;
        let (Some(worker), Some(lease_epoch)) = held else {
            return Err(Error::lost("the generator holds no worker id now (its lease was lost or it was closed)"));
        };
        // SAFETY (both): the caller's contract.
        unsafe { args::set_if_wanted(worker_id, worker) };
        unsafe { args::set_if_wanted(epoch, lease_epoch) };
        Ok(())
    })
}

/// Stop renewing and give the worker id back now (its mark lowered to the last ID issued, so
/// the next holder need not wait). Later `_next` calls lease an id again. Closing twice is
/// harmless. The generator must still be freed.
///
/// # Safety
/// `generator` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn polylock_leased_snowflake_close(generator: *mut polylock_leased_snowflake) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { args::handle(generator, "generator") }?;
        let core = handle.generator.clone();
        handle.shared.block_on(async move { core.close().await })
    })
}

/// Free a generator. One not closed gives its id back (as `_close`, waiting for it while the
/// client lives; otherwise the id's lease runs out). NULL is ignored.
///
/// # Safety
/// `generator` is NULL or from `polylock_snowflake_lease()`, not freed yet, and no call on it
/// is still running.
#[no_mangle]
pub unsafe extern "C" fn polylock_leased_snowflake_free(generator: *mut polylock_leased_snowflake) {
    if generator.is_null() {
        return;
    }
    quietly(|| {
        // SAFETY: the caller's contract: we own it from here on.
        let handle = unsafe { Box::from_raw(generator) };
        let core = handle.generator.clone();
        // Best effort: a freed client (or a failed store) leaves the lease to run out.
        let _ = handle.shared.block_on(async move { core.close().await });
    });
}
