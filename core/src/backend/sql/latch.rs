//! Countdown latches on PostgreSQL and MySQL/MariaDB: a row of `polylock_latches(name, count)`
//! per latch, each change one statement on the shared pool (the statements are the
//! dialect's). A latch at zero keeps its row with count 0, which means open, as no row does.
//! Waiters poll the row with a bounded, jittered backoff, and are woken at once by a
//! count-down in their own client.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use super::dialect::{Dialect, VALUE_NAME_BYTES};
use super::store::SqlStore;
use crate::backend::poll::Backoff;
use crate::error::{Error, Result};
use crate::spi::LatchStore;

/// Between looks of a waiter: every look is one indexed SELECT.
const BACKOFF: Backoff = Backoff { min: Duration::from_millis(5), max: Duration::from_millis(200) };

pub(crate) struct SqlLatches<D: Dialect> {
    store: Arc<SqlStore<D>>,
    /// Bumped by this handle's count-downs, waking its own waiters before their next poll.
    counted_down: watch::Sender<u64>,
}

impl<D: Dialect> SqlLatches<D> {
    pub fn new(store: Arc<SqlStore<D>>) -> Self {
        SqlLatches { store, counted_down: watch::channel(0).0 }
    }

    fn check_name(name: &str) -> Result<()> {
        if name.len() > VALUE_NAME_BYTES {
            return Err(Error::invalid_argument(format!(
                "latch name is {} bytes long; {} holds at most {VALUE_NAME_BYTES}",
                name.len(),
                D::DATABASE
            )));
        }
        Ok(())
    }
}

#[async_trait]
impl<D: Dialect> LatchStore for SqlLatches<D> {
    async fn try_set_count(&self, key: &str, count: u64) -> Result<bool> {
        Self::check_name(key)?;
        let count = i64::try_from(count)
            .map_err(|_| Error::invalid_argument(format!("a latch count of {count} is too large (at most 2^63-1)")))?;
        D::latch_try_set(&self.store.shared, key, count).await.map_err(|e| self.store.err(e))
    }

    async fn count_down(&self, key: &str) -> Result<()> {
        Self::check_name(key)?;
        D::latch_count_down(&self.store.shared, key).await.map_err(|e| self.store.err(e))?;
        self.counted_down.send_modify(|n| *n = n.wrapping_add(1));
        Ok(())
    }

    async fn count(&self, key: &str) -> Result<u64> {
        Self::check_name(key)?;
        let count = D::latch_count(&self.store.shared, key).await.map_err(|e| self.store.err(e))?;
        Ok(count.unwrap_or(0).max(0) as u64)
    }

    async fn await_zero(&self, key: &str, deadline: Option<Instant>, cancel: &CancellationToken) -> Result<bool> {
        let mut counted_down = self.counted_down.subscribe();
        let mut pause = BACKOFF.min;
        loop {
            if self.count(key).await? == 0 {
                return Ok(true);
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) || cancel.is_cancelled() {
                return Ok(false);
            }
            let mut wake_at = Instant::now() + pause.mul_f64(0.5 + fastrand::f64() * 0.5);
            if let Some(deadline) = deadline {
                wake_at = wake_at.min(deadline);
            }
            tokio::select! {
                _ = counted_down.changed() => {}
                _ = sleep_until(wake_at) => pause = (pause * 2).min(BACKOFF.max),
                _ = cancel.cancelled() => return Ok(false),
            }
        }
    }
}
