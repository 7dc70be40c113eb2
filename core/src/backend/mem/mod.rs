//! `mem://[store]`: locks in this process's memory. Every client that connects to the same
//! store name in one process shares its locks, which makes it the quick way to test code
//! that uses polylock without any server or file.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio::time::Instant;

mod latch;
mod rw_lock;
mod semaphore;
mod values;

use super::poll::{acquire_by_attempts, Attempt, Backoff};
use crate::error::Result;
use crate::owner::Owner;
use crate::spi::{
    AcquireRequest, Acquired, Capabilities, ExclusiveStore, HeldLock, HoldStore, Release, Renewal, Store,
};
use crate::spi::{CounterStore, LockKind, LostNotifier, PermitStore, SharedStore, VersionStore};
use crate::url::ConnectUrl;

struct Entry {
    owner: Owner,
    token: u64,
    lease_until: Instant,
}

#[derive(Default)]
struct Tables {
    held: HashMap<String, Entry>,
    /// Last token issued per key, shared by every family; kept after release so tokens
    /// never repeat.
    fencing: HashMap<String, u64>,
    rw_locks: HashMap<String, rw_lock::RwEntry>,
    semaphores: HashMap<String, semaphore::SemaphoreEntry>,
    /// Counters: the end of the last range handed out.
    counters: HashMap<String, u64>,
    values: HashMap<String, crate::spi::Versioned>,
    /// Countdown latches' counts; a latch at zero has no entry.
    latches: HashMap<String, u64>,
}

impl Tables {
    /// The next token of `key`, for families that set none aside.
    fn next_token(&mut self, key: &str) -> u64 {
        let last = self.fencing.entry(key.to_string()).or_insert(0);
        *last += 1;
        *last
    }
}

struct Memory {
    tables: Mutex<Tables>,
    /// Bumped on every release, waking waiters of this store.
    released: watch::Sender<u64>,
}

impl Memory {
    fn tables(&self) -> std::sync::MutexGuard<'_, Tables> {
        // A panic while holding this mutex cannot leave the maps half-written: every update
        // is a single insert or remove.
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wake_waiters(&self) {
        self.released.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// Owners holding a shared resource (readers, permit holders), each with its own lease.
#[derive(Default)]
struct Holders(HashMap<Owner, (u64, Instant)>);

impl Holders {
    /// Forget the holders whose lease has run out.
    fn purge(&mut self, now: Instant) {
        self.0.retain(|_, (_, until)| *until > now);
    }

    fn is_current(&self, owner: Owner, token: u64, now: Instant) -> bool {
        self.0.get(&owner).is_some_and(|&(t, until)| t == token && until > now)
    }

    /// Extend a current hold's lease.
    fn renew(&mut self, owner: Owner, token: u64, until: Instant, now: Instant) -> bool {
        match self.0.get_mut(&owner) {
            Some((t, lease_until)) if *t == token && *lease_until > now => {
                *lease_until = until;
                true
            }
            _ => false,
        }
    }

    /// Remove `owner`'s hold if it is the one with `token`; whether it was current.
    fn remove(&mut self, owner: Owner, token: u64, now: Instant) -> bool {
        let current = self.is_current(owner, token, now);
        if self.0.get(&owner).is_some_and(|&(t, _)| t == token) {
            self.0.remove(&owner);
        }
        current
    }

    /// How long until the first of the others' leases runs out.
    fn soonest_end(&self, except: Owner, now: Instant) -> Option<Duration> {
        self.0
            .iter()
            .filter(|(owner, _)| **owner != except)
            .map(|(_, (_, until))| until.saturating_duration_since(now))
            .min()
    }

    fn has_other_than(&self, owner: Owner) -> bool {
        self.0.keys().any(|holder| *holder != owner)
    }
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
        // mem takes no option of its own: an unknown one is refused before a store is made.
        url.ensure_no_options_left()?;
        Ok(MemBackend { store: store_named(url.target()) })
    }

    fn tables(&self) -> std::sync::MutexGuard<'_, Tables> {
        self.store.tables()
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
            self.store.wake_waiters();
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
        self.store.wake_waiters();
        Ok(was_live)
    }
}

#[async_trait]
impl Store for MemBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            backend: "mem",
            lock_kinds: &[LockKind::Reentrant],
            rw_locks: true,
            semaphores: true,
            counters: true,
            versioned_values: true,
            elections: true,
        }
    }

    fn rw_locks(self: Arc<Self>) -> Option<Arc<SharedStore>> {
        Some(Arc::new(rw_lock::MemRwLocks { store: self.store.clone() }))
    }

    fn semaphores(self: Arc<Self>) -> Option<Arc<PermitStore>> {
        Some(Arc::new(semaphore::MemSemaphores { store: self.store.clone() }))
    }

    fn counters(self: Arc<Self>) -> Option<Arc<dyn CounterStore>> {
        Some(Arc::new(values::MemValues { store: self.store.clone() }))
    }

    fn latches(self: Arc<Self>) -> Option<Arc<dyn crate::spi::LatchStore>> {
        Some(Arc::new(latch::MemLatches { store: self.store.clone() }))
    }

    fn versions(self: Arc<Self>) -> Option<Arc<dyn VersionStore>> {
        Some(Arc::new(values::MemValues { store: self.store.clone() }))
    }

    fn locks(self: Arc<Self>) -> Arc<ExclusiveStore> {
        self
    }
}
