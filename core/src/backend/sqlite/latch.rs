//! Countdown latches in SQLite: a row of `polylock_latches(name, count)` per latch, changed by
//! one statement each. A latch at zero keeps its row (count 0), which means open, as no row
//! does. SQLite cannot notify other processes, so a waiter polls with a bounded, jittered
//! backoff, and is woken at once by a count-down to zero in its own process.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use super::SqliteBackend;
use crate::backend::poll::Backoff;
use crate::error::Result;
use crate::spi::LatchStore;

/// Between looks of a waiter when nothing in this process wakes it: a latch is a slower
/// thing than a lock, so the bound is higher than the mutex's.
const BACKOFF: Backoff = Backoff { min: Duration::from_millis(2), max: Duration::from_millis(100) };

pub(super) struct SqliteLatches {
    pub(super) db: Arc<SqliteBackend>,
}

#[async_trait]
impl LatchStore for SqliteLatches {
    async fn try_set_count(&self, key: &str, count: u64) -> Result<bool> {
        let (key, count) = (key.to_string(), count as i64);
        self.db
            .with_conn(move |conn| {
                let set = conn
                    .prepare_cached(
                        "INSERT INTO polylock_latches (name, count) VALUES (?1, ?2)
                         ON CONFLICT (name) DO UPDATE SET count = excluded.count WHERE count <= 0
                         RETURNING count",
                    )?
                    .query_row(params![key, count], |row| row.get::<_, i64>(0))
                    .optional()?;
                Ok(set.is_some())
            })
            .await
    }

    async fn count_down(&self, key: &str) -> Result<()> {
        let key = key.to_string();
        let left: Option<i64> = self
            .db
            .with_conn(move |conn| {
                conn.prepare_cached(
                    "UPDATE polylock_latches SET count = count - 1 WHERE name = ?1 AND count > 0 RETURNING count",
                )?
                .query_row(params![key], |row| row.get(0))
                .optional()
            })
            .await?;
        if left == Some(0) {
            self.db.wake_waiters();
        }
        Ok(())
    }

    async fn count(&self, key: &str) -> Result<u64> {
        let key = key.to_string();
        let count: Option<i64> = self
            .db
            .with_conn(move |conn| {
                conn.prepare_cached("SELECT count FROM polylock_latches WHERE name = ?1")?
                    .query_row(params![key], |row| row.get(0))
                    .optional()
            })
            .await?;
        Ok(count.unwrap_or(0).max(0) as u64)
    }

    async fn await_zero(&self, key: &str, deadline: Option<Instant>, cancel: &CancellationToken) -> Result<bool> {
        // Subscribed before the first look, so an opening in this process in between is not missed.
        let mut released = self.db.released();
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
                _ = released.changed() => pause = BACKOFF.min,
                _ = sleep_until(wake_at) => pause = (pause * 2).min(BACKOFF.max),
                _ = cancel.cancelled() => return Ok(false),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spi::latch_contract;
    use crate::url::ConnectUrl;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn latches_keep_the_contract() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/latches.db", dir.path().display());
        let db = Arc::new(SqliteBackend::open(&mut ConnectUrl::parse(&url).unwrap()).await.unwrap());
        latch_contract::latches(Arc::new(SqliteLatches { db }), "latch").await;
    }
}
