//! `polylock_segment`: Leaf-style segment IDs of one tag (ranges reserved durably in the
//! store, handed out from a double buffer). The core does all of it; this file translates.

use std::ffi::c_char;
use std::sync::Arc;

use polylock::{SegmentGenerator, SegmentOptions};

use crate::args;
use crate::boundary::{call, quietly};
use crate::client::polylock_client;
use crate::runtime::Shared;
use crate::status::polylock_status;

/// A segment ID generator of one tag. Safe to share between threads. Free it with
/// `polylock_segment_free()` (the rest of its ranges become a gap; IDs never repeat).
#[allow(non_camel_case_types)]
pub struct polylock_segment {
    shared: Arc<Shared>,
    generator: SegmentGenerator,
}

/// Open the segment generator of `tag` (Leaf's `biz_tag`, under the client's namespace).
///
/// @param step  the first range's size; 0 for the default (1000, Leaf's).
/// @param out   receives the generator on success; untouched on failure.
/// @return `POLYLOCK_INVALID_ARGUMENT` for a NULL argument, a bad tag or step,
///         `POLYLOCK_UNSUPPORTED` if the backend keeps no counters.
///
/// # Safety
/// `client` is NULL or live; `tag` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_segment_open(
    client: *mut polylock_client,
    tag: *const c_char,
    step: u64,
    out: *mut *mut polylock_segment,
) -> polylock_status {
    call(|| {
        let client = crate::client::live(client)?;
        // SAFETY (both): the caller's contract.
        let tag = unsafe { args::text(tag, "tag") }?;
        let out = unsafe { args::out(out, "out") }?;
        let mut options = SegmentOptions::default();
        if step != 0 {
            options.step = step;
            options.max_step = options.max_step.max(step);
        }
        let generator = client.shared.client().segments(tag, options)?;
        *out = Box::into_raw(Box::new(polylock_segment { shared: client.shared.clone(), generator }));
        Ok(())
    })
}

/// The next ID: never 0, never one handed out before for this tag by any generator.
///
/// @return `POLYLOCK_EXHAUSTED` when no range could be loaded in time (details: retry-after
///         when known); retry later.
///
/// # Safety
/// `segment` is NULL or live; `id` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_segment_next_id(segment: *mut polylock_segment, id: *mut u64) -> polylock_status {
    call(|| {
        // SAFETY (both): the caller's contract.
        let handle = unsafe { args::handle(segment, "segment") }?;
        let id = unsafe { args::out(id, "id") }?;
        let generator = handle.generator.clone();
        *id = handle.shared.block_on(async move { generator.next_id().await })?;
        Ok(())
    })
}

/// `count` IDs into the caller's array `ids` (increasing within each range). All or nothing:
/// on failure `ids` is untouched and the IDs taken meanwhile are a gap.
///
/// # Safety
/// `segment` is NULL or live; `ids` is NULL (with `count` 0) or writable for `count` IDs.
#[no_mangle]
pub unsafe extern "C" fn polylock_segment_next_ids(
    segment: *mut polylock_segment,
    count: usize,
    ids: *mut u64,
) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { args::handle(segment, "segment") }?;
        // SAFETY: the caller's contract.
        let ids = unsafe { args::id_array(ids, count) }?;
        let generator = handle.generator.clone();
        let taken = handle.shared.block_on(async move { generator.next_ids(count).await })?;
        ids.copy_from_slice(&taken);
        Ok(())
    })
}

/// Free a generator. NULL is ignored.
///
/// # Safety
/// `segment` is NULL or from `polylock_segment_open()` and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn polylock_segment_free(segment: *mut polylock_segment) {
    if segment.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it from here on.
    quietly(|| drop(unsafe { Box::from_raw(segment) }));
}
