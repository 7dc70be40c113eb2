//! Waking a waiter of this client the moment the hold it queues behind is released here.
//!
//! In the queue-shaped locks (etcd's Mutex, Curator's InterProcessMutex) every contender has
//! its own entry, created in order, and waits for the entry just older than its own. When
//! that older entry belongs to a holder of this same client, the waiter need not wait for
//! the holder's delete to reach the server and come back as a watch event: no entry can
//! appear between the two, and none older than the holder's is left, so once the holder's
//! owner has let go the waiter is first in line. The holder's entry stays on the server until
//! its delete lands and keeps every other client waiting meanwhile, as it should.
//!
//! A backend registers a waiter under the older entry's identity before it starts watching
//! that entry, and calls [`Successors::released`] when an owner releases a hold, before it
//! sends the delete.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

/// The waiters of one client, by the entry each waits behind.
pub(crate) struct Successors<K> {
    waiting: Mutex<HashMap<K, (u64, CancellationToken)>>,
    next_id: AtomicU64,
}

impl<K> Default for Successors<K> {
    fn default() -> Self {
        Successors { waiting: Mutex::new(HashMap::new()), next_id: AtomicU64::new(0) }
    }
}

impl<K: Eq + Hash + Clone> Successors<K> {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<K, (u64, CancellationToken)>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Be told, through the returned token, when a hold of this client on `older` is
    /// released. The registration ends when the returned value is dropped. One waiter per
    /// entry: a later registration for the same entry replaces an earlier one, which then
    /// hears of the release the slow way (its watch).
    pub fn wait_behind(self: &Arc<Self>, older: K) -> Successor<K> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let released = CancellationToken::new();
        self.waiting().insert(older.clone(), (id, released.clone()));
        Successor { successors: self.clone(), older, id, released }
    }

    /// The owner of the hold on `entry` has let go: wake the waiter right behind it, if one
    /// of this client's is there.
    pub fn released(&self, entry: &K) {
        if let Some((_, released)) = self.waiting().remove(entry) {
            released.cancel();
        }
    }
}

/// A waiter's registration with [`Successors::wait_behind`].
pub(crate) struct Successor<K: Eq + Hash + Clone> {
    successors: Arc<Successors<K>>,
    older: K,
    id: u64,
    /// Cancelled when the hold on the older entry has been released by its owner here.
    pub released: CancellationToken,
}

impl<K: Eq + Hash + Clone> Drop for Successor<K> {
    fn drop(&mut self) {
        let mut waiting = self.successors.waiting();
        if waiting.get(&self.older).is_some_and(|(id, _)| *id == self.id) {
            waiting.remove(&self.older);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_wakes_the_waiter_behind_that_entry_only() {
        let successors = Arc::new(Successors::<&str>::default());
        let behind_a = successors.wait_behind("a");
        let behind_b = successors.wait_behind("b");
        successors.released(&"a");
        assert!(behind_a.released.is_cancelled());
        assert!(!behind_b.released.is_cancelled());
        successors.released(&"c"); // nobody waits there
        drop((behind_a, behind_b));
        assert!(successors.waiting().is_empty(), "registrations leave nothing behind");
    }

    #[test]
    fn a_replaced_registration_does_not_remove_its_replacement() {
        let successors = Arc::new(Successors::<&str>::default());
        let first = successors.wait_behind("a");
        let second = successors.wait_behind("a");
        drop(first);
        successors.released(&"a");
        assert!(second.released.is_cancelled());
    }
}
