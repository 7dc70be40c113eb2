//! Read-write locks in memory: readers and the writer each hold with their own lease. A
//! waiting writer leaves a mark that keeps new readers out, so a stream of overlapping
//! readers cannot starve it; the mark lapses if its writer stops asking.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::{Holders, Memory};
use crate::backend::poll::{acquire_by_attempts, Attempt, Backoff};
use crate::error::Result;
use crate::owner::Owner;
use crate::spi::{AcquireRequest, Acquired, HeldLock, HoldStore, Release, Renewal, RwMode};

const BACKOFF: Backoff = Backoff { min: Duration::from_millis(1), max: Duration::from_millis(50) };

/// How long a waiting writer's mark keeps readers out after its last attempt: several
/// backoff steps, so the mark stays while the writer waits and lapses soon after it leaves.
const WRITER_MARK: Duration = Duration::from_millis(250);

#[derive(Default)]
pub(super) struct RwEntry {
    readers: Holders,
    writer: Holders,
    /// Writers waiting, and until when their mark holds.
    waiting_writers: HashMap<Owner, Instant>,
}

impl RwEntry {
    fn purge(&mut self, now: Instant) {
        self.readers.purge(now);
        self.writer.purge(now);
        self.waiting_writers.retain(|_, until| *until > now);
    }

    fn is_empty(&self) -> bool {
        self.readers.0.is_empty() && self.writer.0.is_empty() && self.waiting_writers.is_empty()
    }

    fn side(&mut self, mode: RwMode) -> &mut Holders {
        match mode {
            RwMode::Read => &mut self.readers,
            RwMode::Write => &mut self.writer,
        }
    }
}

pub(super) struct MemRwLocks {
    pub(super) store: Arc<Memory>,
}

impl MemRwLocks {
    fn attempt(&self, request: &AcquireRequest<RwMode>) -> Attempt {
        let mut tables = self.store.tables();
        let now = Instant::now();
        let entry = tables.rw_locks.entry(request.key.clone()).or_default();
        entry.purge(now);
        let owner = request.owner;
        let busy_for = match request.kind {
            // The writer itself may also read (a downgrade); anyone else waits for the writer
            // and gives way to writers already waiting.
            RwMode::Read if entry.writer.has_other_than(owner) => Some(entry.writer.soonest_end(owner, now)),
            RwMode::Read
                if !entry.writer.0.contains_key(&owner) && entry.waiting_writers.keys().any(|w| *w != owner) =>
            {
                Some(None)
            }
            RwMode::Read => None,
            RwMode::Write if entry.writer.has_other_than(owner) => Some(entry.writer.soonest_end(owner, now)),
            RwMode::Write if entry.readers.has_other_than(owner) => Some(entry.readers.soonest_end(owner, now)),
            RwMode::Write => None,
        };
        if let Some(holder_lease_left) = busy_for {
            if request.kind == RwMode::Write {
                entry.waiting_writers.insert(owner, now + WRITER_MARK);
            }
            return Attempt::Busy { holder_lease_left };
        }
        if request.kind == RwMode::Write {
            entry.waiting_writers.remove(&owner);
        }
        let until = now + request.lease;
        let token = tables.next_token(&request.key);
        let entry = tables.rw_locks.entry(request.key.clone()).or_default();
        entry.side(request.kind).0.insert(owner, (token, until));
        Attempt::Acquired { token, state: None }
    }

    /// Take a writer's mark away when it stops waiting without the lock.
    fn withdraw(&self, key: &str, owner: Owner) {
        let mut tables = self.store.tables();
        if let Some(entry) = tables.rw_locks.get_mut(key) {
            entry.waiting_writers.remove(&owner);
            if entry.is_empty() {
                tables.rw_locks.remove(key);
            }
        }
        drop(tables);
        self.store.wake_waiters(); // readers held back by the mark may go now
    }
}

/// Withdraws a waiting writer's mark on every way out, the caller going away included.
struct WithdrawOnDrop<'a> {
    locks: &'a MemRwLocks,
    request: &'a AcquireRequest<RwMode>,
    acquired: bool,
}

impl Drop for WithdrawOnDrop<'_> {
    fn drop(&mut self) {
        if self.request.kind == RwMode::Write && !self.acquired {
            self.locks.withdraw(&self.request.key, self.request.owner);
        }
    }
}

#[async_trait]
impl HoldStore<RwMode> for MemRwLocks {
    async fn acquire(&self, request: &AcquireRequest<RwMode>) -> Result<Option<Acquired>> {
        let mut withdraw = WithdrawOnDrop { locks: self, request, acquired: false };
        let acquired = acquire_by_attempts(request, BACKOFF, &mut self.store.released.subscribe(), || async {
            Ok(self.attempt(request))
        })
        .await?;
        withdraw.acquired = acquired.is_some();
        Ok(acquired)
    }

    async fn renew(&self, held: &HeldLock<RwMode>, lease: Duration) -> Result<Renewal> {
        let mut tables = self.store.tables();
        let now = Instant::now();
        let renewed = tables
            .rw_locks
            .get_mut(&held.key)
            .is_some_and(|entry| entry.side(held.kind).renew(held.owner, held.token, now + lease, now));
        Ok(if renewed { Renewal::Renewed } else { Renewal::Gone })
    }

    async fn reenter(&self, held: &HeldLock<RwMode>) -> Result<Renewal> {
        let mut tables = self.store.tables();
        let now = Instant::now();
        let current = tables.rw_locks.get_mut(&held.key).is_some_and(|entry| {
            let side = entry.side(held.kind);
            side.is_current(held.owner, held.token, now)
        });
        Ok(if current { Renewal::Renewed } else { Renewal::Gone })
    }

    async fn release(&self, held: &HeldLock<RwMode>, holds_left: u32) -> Result<Release> {
        let mut tables = self.store.tables();
        let now = Instant::now();
        let Some(entry) = tables.rw_locks.get_mut(&held.key) else { return Ok(Release::Gone) };
        let side = entry.side(held.kind);
        let current = if holds_left > 0 {
            side.is_current(held.owner, held.token, now)
        } else {
            side.remove(held.owner, held.token, now)
        };
        if holds_left == 0 {
            if entry.is_empty() {
                tables.rw_locks.remove(&held.key);
            }
            drop(tables);
            self.store.wake_waiters();
        }
        Ok(if current { Release::Released } else { Release::Gone })
    }

    async fn is_locked(&self, key: &str, mode: RwMode) -> Result<bool> {
        let mut tables = self.store.tables();
        let now = Instant::now();
        Ok(tables.rw_locks.get_mut(key).is_some_and(|entry| {
            entry.purge(now);
            !entry.side(mode).0.is_empty()
        }))
    }
}
