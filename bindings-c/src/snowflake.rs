//! `polylock_snowflake`: a local Snowflake generator (Twitter layout: 41 bits of
//! milliseconds, 10 of worker, 12 of sequence). No client needed.

use polylock::id::Snowflake;

use crate::args;
use crate::boundary::{call, quietly};
use crate::status::polylock_status;

/// A Snowflake ID generator. Safe to share between threads.
#[allow(non_camel_case_types)]
pub struct polylock_snowflake {
    generator: Snowflake,
}

/// A generator for worker `worker` (0..=1023 in the Twitter layout).
///
/// @return `POLYLOCK_INVALID_ARGUMENT` if `worker` does not fit the layout or `out` is NULL.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_snowflake_new(worker: u16, out: *mut *mut polylock_snowflake) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { args::out(out, "out") }?;
        let generator = Snowflake::new(u64::from(worker))?;
        *out = Box::into_raw(Box::new(polylock_snowflake { generator }));
        Ok(())
    })
}

/// The next ID: unique for this worker and greater than every earlier one from this
/// generator, even if the wall clock steps back a little.
///
/// @return `POLYLOCK_BACKEND` if the clock stepped back too far to keep that promise.
///
/// # Safety
/// `generator` is NULL or live; `id` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_snowflake_next(generator: *mut polylock_snowflake, id: *mut u64) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let generator = unsafe { args::handle(generator, "generator") }?;
        let id = unsafe { args::out(id, "id") }?;
        *id = generator.generator.next_id()?;
        Ok(())
    })
}

/// Free a generator. NULL is ignored.
///
/// # Safety
/// `generator` is NULL or from `polylock_snowflake_new()` and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn polylock_snowflake_free(generator: *mut polylock_snowflake) {
    if generator.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it from here on.
    quietly(|| drop(unsafe { Box::from_raw(generator) }));
}
