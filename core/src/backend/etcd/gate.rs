//! One turn at a time per lock key within a client. etcd's Mutex names its key after the
//! session lease, and a client has one session: two owners of the same client would write
//! the same key and both believe they hold the lock (as two Go Mutexes on one Session do).
//! So the owners of one client take turns here first, in arrival order, and only the one
//! whose turn it is has a key in etcd.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedMutexGuard;

#[derive(Default)]
pub(super) struct Gates {
    gates: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// The turn for one key; the next owner's turn starts when it is dropped.
pub(super) struct Turn {
    guard: Option<OwnedMutexGuard<()>>,
    gates: Arc<Gates>,
    key: String,
}

impl Gates {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<tokio::sync::Mutex<()>>>> {
        self.gates.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait for this key's turn. Cancel-safe: a waiter dropped before its turn leaves no trace.
    pub async fn turn(self: &Arc<Self>, key: &str) -> Turn {
        let gate = self.map().entry(key.to_string()).or_default().clone();
        let guard = WaitingTurn { gate: Some(gate), gates: self.clone(), key }.wait().await;
        Turn { guard: Some(guard), gates: self.clone(), key: key.to_string() }
    }

    /// Forget the key's gate once nobody holds or waits for it, so the map does not grow
    /// with every name ever locked.
    fn tidy(&self, key: &str, gate: Arc<tokio::sync::Mutex<()>>) {
        let mut map = self.map();
        // The map's reference plus the caller's own.
        if Arc::strong_count(&gate) == 2 {
            map.remove(key);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map().len()
    }
}

/// A waiter's reference to a gate, tidied however the wait ends.
struct WaitingTurn<'a> {
    gate: Option<Arc<tokio::sync::Mutex<()>>>,
    gates: Arc<Gates>,
    key: &'a str,
}

impl WaitingTurn<'_> {
    async fn wait(self) -> OwnedMutexGuard<()> {
        let gate = self.gate.clone().expect("present until drop");
        gate.lock_owned().await
    }
}

impl Drop for WaitingTurn<'_> {
    fn drop(&mut self) {
        if let Some(gate) = self.gate.take() {
            self.gates.tidy(self.key, gate);
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let Some(guard) = self.guard.take() else { return };
        let gate = OwnedMutexGuard::mutex(&guard).clone();
        drop(guard);
        self.gates.tidy(&self.key, gate);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn turns_are_exclusive_and_leave_nothing_behind() {
        let gates = Arc::new(Gates::default());
        let first = gates.turn("a").await;
        let other_key = gates.turn("b").await;
        assert!(tokio::time::timeout(Duration::from_millis(20), gates.turn("a")).await.is_err(), "a is taken");
        let waiting = {
            let gates = gates.clone();
            tokio::spawn(async move { drop(gates.turn("a").await) })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(first);
        waiting.await.unwrap();
        drop(other_key);
        assert_eq!(gates.len(), 0);
    }
}
