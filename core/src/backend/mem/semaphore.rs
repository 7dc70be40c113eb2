//! Semaphores in memory: up to N holders, each with its own permit and lease. The count is
//! fixed by the first use of the name and kept for the life of the store.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::{Holders, Memory};
use crate::backend::poll::{acquire_by_attempts, Attempt, Backoff};
use crate::error::Result;
use crate::spi::{AcquireRequest, Acquired, HeldLock, HoldStore, Permits, Release, Renewal};

const BACKOFF: Backoff = Backoff { min: Duration::from_millis(1), max: Duration::from_millis(50) };

pub(super) struct SemaphoreEntry {
    permits: u32,
    holders: Holders,
}

pub(super) struct MemSemaphores {
    pub(super) store: Arc<Memory>,
}

impl MemSemaphores {
    fn attempt(&self, request: &AcquireRequest<Permits>) -> Result<Attempt> {
        let mut tables = self.store.tables();
        let now = Instant::now();
        let entry = tables
            .semaphores
            .entry(request.key.clone())
            .or_insert_with(|| SemaphoreEntry { permits: request.kind.0, holders: Holders::default() });
        check_count(&request.key, entry.permits, request.kind)?;
        entry.holders.purge(now);
        if entry.holders.0.len() >= entry.permits as usize {
            return Ok(Attempt::Busy { holder_lease_left: entry.holders.soonest_end(request.owner, now) });
        }
        let token = tables.next_token(&request.key);
        let entry = tables.semaphores.get_mut(&request.key).expect("inserted above");
        entry.holders.0.insert(request.owner, (token, now + request.lease));
        Ok(Attempt::Acquired { token, state: None })
    }
}

/// The count of a semaphore is fixed by its first use; another count is a caller's mistake.
pub(crate) fn check_count(key: &str, fixed: u32, asked: Permits) -> Result<()> {
    asked.check_fixed(key, fixed)
}

#[async_trait]
impl HoldStore<Permits> for MemSemaphores {
    async fn acquire(&self, request: &AcquireRequest<Permits>) -> Result<Option<Acquired>> {
        acquire_by_attempts(request, BACKOFF, &mut self.store.released.subscribe(), || async { self.attempt(request) })
            .await
    }

    async fn renew(&self, held: &HeldLock<Permits>, lease: Duration) -> Result<Renewal> {
        let mut tables = self.store.tables();
        let now = Instant::now();
        let renewed = tables
            .semaphores
            .get_mut(&held.key)
            .is_some_and(|entry| entry.holders.renew(held.owner, held.token, now + lease, now));
        Ok(if renewed { Renewal::Renewed } else { Renewal::Gone })
    }

    async fn release(&self, held: &HeldLock<Permits>, _holds_left: u32) -> Result<Release> {
        let mut tables = self.store.tables();
        let now = Instant::now();
        let current =
            tables.semaphores.get_mut(&held.key).is_some_and(|entry| entry.holders.remove(held.owner, held.token, now));
        drop(tables);
        self.store.wake_waiters();
        Ok(if current { Release::Released } else { Release::Gone })
    }

    async fn is_locked(&self, key: &str, _permits: Permits) -> Result<bool> {
        let mut tables = self.store.tables();
        let now = Instant::now();
        Ok(tables.semaphores.get_mut(key).is_some_and(|entry| {
            entry.holders.purge(now);
            !entry.holders.0.is_empty()
        }))
    }
}
