//! `mem://[store]`: locks in this process's memory. Every client that connects to the same
//! store name in one process shares its locks, which makes it the quick way to test code
//! that uses polylock without any server or file.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio::time::Instant;

use super::poll::{acquire_by_attempts, Attempt, Backoff};
use crate::error::Result;
use crate::owner::Owner;
use crate::spi::{
    AcquireRequest, Acquired, Capabilities, ExclusiveStore, HeldLock, HoldStore, Release, Renewal, Store,
};
use crate::spi::{LockKind, LostNotifier};
use crate::url::ConnectUrl;

struct Entry {
    owner: Owner,
    token: u64,
    lease_until: Instant,
}

#[derive(Default)]
struct Tables {
    held: HashMap<String, Entry>,
    /// Last token issued per key; kept after release so tokens never repeat.
    fencing: HashMap<String, u64>,
}

struct Memory {
    tables: Mutex<Tables>,
    /// Bumped on every release, waking waiters of this store.
    released: watch::Sender<u64>,
}

fn store_named(name: &str) -> Arc<Memory> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<Memory>>>> = OnceLock::new();
    let mut stores = STORES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    stores
        .entry(name.to_string())
        .or_insert_with(|| Arc::new(Memory { tables: Mutex::default(), released: watch::channel(0).0 }))
        .clone()
}

pub(crate) struct MemBackend {
    store: Arc<Memory>,
}

impl MemBackend {
    pub(crate) fn open(url: &mut ConnectUrl) -> Result<Self> {
        Ok(MemBackend { store: store_named(url.target()) })
    }

    fn tables(&self) -> std::sync::MutexGuard<'_, Tables> {
        // A panic while holding this mutex cannot leave the maps half-written: every update
        // is a single insert or remove.
        self.store.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn attempt(&self, request: &AcquireRequest) -> Attempt {
        let mut tables = self.tables();
        let now = Instant::now();
        if let Some(entry) = tables.held.get(&request.key) {
            if entry.lease_until > now && entry.owner != request.owner {
                return Attempt::Busy { holder_lease_left: Some(entry.lease_until - now) };
            }
        }
        let token = {
            // The next token is set aside for a local handoff (see reserves_next_token).
            let last = tables.fencing.entry(request.key.clone()).or_insert(0);
            *last += 2;
            *last - 1
        };
        let entry = Entry { owner: request.owner, token, lease_until: now + request.lease };
        tables.held.insert(request.key.clone(), entry);
        Attempt::Acquired { token, state: None }
    }

    /// The lease left of whoever holds `key`, if anyone does.
    fn lease_left(&self, key: &str) -> Option<Duration> {
        let now = Instant::now();
        self.tables().held.get(key).filter(|entry| entry.lease_until > now).map(|entry| entry.lease_until - now)
    }

    fn is_current(entry: &Entry, held: &HeldLock, now: Instant) -> bool {
        entry.owner == held.owner && entry.token == held.token && entry.lease_until > now
    }
}

#[async_trait]
impl HoldStore for MemBackend {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Option<Acquired>> {
        let backoff = Backoff { min: Duration::from_millis(1), max: Duration::from_millis(50) };
        acquire_by_attempts(request, backoff, &mut self.store.released.subscribe(), || async {
            Ok(self.attempt(request))
        })
        .await
    }

    async fn renew(&self, held: &HeldLock, lease: Duration) -> Result<Renewal> {
        let mut tables = self.tables();
        let now = Instant::now();
        match tables.held.get_mut(&held.key) {
            Some(entry) if Self::is_current(entry, held, now) => {
                entry.lease_until = now + lease;
                Ok(Renewal::Renewed)
            }
            _ => Ok(Renewal::Gone),
        }
    }

    async fn release(&self, held: &HeldLock, holds_left: u32) -> Result<Release> {
        let mut tables = self.tables();
        let now = Instant::now();
        let current = tables.held.get(&held.key).is_some_and(|e| Self::is_current(e, held, now));
        if !current {
            return Ok(Release::Gone);
        }
        if holds_left == 0 {
            tables.held.remove(&held.key);
            drop(tables);
            self.store.released.send_modify(|n| *n = n.wrapping_add(1));
        }
        Ok(Release::Released)
    }

    async fn transfer(
        &self,
        from: &HeldLock,
        to: Owner,
        lease: Duration,
        _lost: &LostNotifier,
    ) -> Result<Option<Acquired>> {
        let mut tables = self.tables();
        let now = Instant::now();
        let takes_over = tables.held.get(&from.key).is_some_and(|e| Self::is_current(e, from, now) || e.owner == to);
        if !takes_over {
            return Ok(None);
        }
        let token = {
            // The token `from`'s hold set aside; the next one is set aside in turn.
            let last = tables.fencing.entry(from.key.clone()).or_insert(0);
            *last += 1;
            *last - 1
        };
        tables.held.insert(from.key.clone(), Entry { owner: to, token, lease_until: now + lease });
        Ok(Some(Acquired { token, attempt_started: now, state: None }))
    }

    fn transfers(&self, kind: LockKind) -> bool {
        kind == LockKind::Reentrant
    }

    fn reserves_next_token(&self, kind: LockKind) -> bool {
        self.transfers(kind)
    }

    async fn is_locked(&self, key: &str, _kind: LockKind) -> Result<bool> {
        Ok(self.lease_left(key).is_some())
    }

    async fn remaining_lease(&self, key: &str, _kind: LockKind) -> Result<Option<Duration>> {
        Ok(self.lease_left(key))
    }

    async fn force_unlock(&self, key: &str, _kind: LockKind) -> Result<bool> {
        let removed = self.tables().held.remove(key);
        let was_live = removed.is_some_and(|entry| entry.lease_until > Instant::now());
        self.store.released.send_modify(|n| *n = n.wrapping_add(1));
        Ok(was_live)
    }
}

#[async_trait]
impl Store for MemBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities { backend: "mem", lock_kinds: &[LockKind::Reentrant], rw_locks: false, semaphores: false }
    }

    fn locks(self: Arc<Self>) -> Arc<ExclusiveStore> {
        self
    }
}
