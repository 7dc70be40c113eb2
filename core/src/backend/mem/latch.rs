//! Countdown latches in memory: a count per key, woken through the store's release signal.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use super::Memory;
use crate::error::Result;
use crate::spi::LatchStore;

pub(super) struct MemLatches {
    pub(super) store: Arc<Memory>,
}

#[async_trait]
impl LatchStore for MemLatches {
    async fn try_set_count(&self, key: &str, count: u64) -> Result<bool> {
        let mut tables = self.store.tables();
        if tables.latches.get(key).is_some_and(|&left| left > 0) {
            return Ok(false);
        }
        tables.latches.insert(key.to_string(), count);
        Ok(true)
    }

    async fn count_down(&self, key: &str) -> Result<()> {
        let opened = {
            let mut tables = self.store.tables();
            match tables.latches.get_mut(key) {
                Some(left) if *left > 1 => {
                    *left -= 1;
                    false
                }
                Some(_) => tables.latches.remove(key).is_some(),
                None => false,
            }
        };
        if opened {
            self.store.wake_waiters();
        }
        Ok(())
    }

    async fn count(&self, key: &str) -> Result<u64> {
        Ok(self.store.tables().latches.get(key).copied().unwrap_or(0))
    }

    async fn await_zero(&self, key: &str, deadline: Option<Instant>, cancel: &CancellationToken) -> Result<bool> {
        // Subscribed before the first look, so an opening in between is not missed.
        let mut released = self.store.released.subscribe();
        loop {
            if self.count(key).await? == 0 {
                return Ok(true);
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Ok(false);
            }
            tokio::select! {
                changed = released.changed() => if changed.is_err() { return Ok(false) },
                _ = async { sleep_until(deadline.unwrap_or_else(far_future)).await } => {},
                _ = cancel.cancelled() => return Ok(false),
            }
        }
    }
}

fn far_future() -> Instant {
    Instant::now() + std::time::Duration::from_secs(86400 * 365)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spi::latch_contract;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn latches_keep_the_contract() {
        let store = Arc::new(MemLatches { store: super::super::store_named("latch-contract") });
        latch_contract::latches(store, "latch").await;
    }
}
