//! Local owner ids that are never reused within a process.
//!
//! An owner is (client id, local id). Ids a language reuses, such as CPython's
//! `threading.get_ident()` or a `pthread_t`, would let a new thread inherit a dead thread's
//! hold (re-enter it, release it). So every binding draws its ids here: a thread gets one the
//! first time it asks and keeps it for its life, and each new handle, task or permit draws a
//! fresh one. Used by the core's own handles, C and Python threads, Python asyncio tasks,
//! Node guards and every semaphore permit.
//!
//! The ids start at 2^48, above any thread id a binding may pass in on its own (the JVM
//! passes Java thread ids, which Redisson writes into its lock field too and which Java never
//! reuses), so the two kinds of id never meet.

use std::sync::atomic::{AtomicU64, Ordering};

/// The first id handed out.
pub const FIRST_OWNER_ID: u64 = 1 << 48;

static NEXT: AtomicU64 = AtomicU64::new(FIRST_OWNER_ID);

thread_local! {
    static THREAD_OWNER: u64 = next_owner_id();
}

/// A fresh id, never handed out before in this process.
pub fn next_owner_id() -> u64 {
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The calling thread's id: the same for the life of the thread, never any other thread's.
pub fn current_thread_owner_id() -> u64 {
    THREAD_OWNER.with(|id| *id)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn threads_that_come_and_go_never_share_an_id() {
        let mine = current_thread_owner_id();
        assert_eq!(mine, current_thread_owner_id(), "stable within a thread");
        let mut seen = HashSet::from([mine]);
        for _ in 0..200 {
            // Each thread exits before the next starts, so the OS may reuse its identity.
            let id = std::thread::spawn(current_thread_owner_id).join().unwrap();
            assert!(seen.insert(id), "id {id} handed out twice");
            assert!(id >= FIRST_OWNER_ID);
        }
        assert!(seen.insert(next_owner_id()));
    }
}
