//! The owner of a hold is the calling thread, as with a pthread recursive mutex.

use std::sync::atomic::{AtomicU64, Ordering};

/// Ids handed to threads in the order they first touch a lock. Counting (rather than using
/// `pthread_self()`) keeps ids unique for the life of the process: a pthread_t is reused
/// once its thread is joined, and a new thread must not inherit a dead thread's holds.
/// The core counts its own handle ids down from `u64::MAX`, so the two never meet.
static NEXT_THREAD_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static THREAD_ID: u64 = NEXT_THREAD_ID.fetch_add(1, Ordering::Relaxed);
}

/// The local owner id of the calling thread.
pub fn current_thread() -> u64 {
    THREAD_ID.with(|id| *id)
}
