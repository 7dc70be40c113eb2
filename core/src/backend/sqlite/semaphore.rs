//! Semaphores in SQLite: the count in `polylock_semaphores` (fixed by the first use of the
//! name), one row per held permit in `polylock_permits` with its own lease by the
//! database's clock, so a crashed holder's permit comes back when its lease ends.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::{duration_ms, SqliteBackend, BACKOFF, NEXT_TOKEN, NOW_MS};
use crate::backend::poll::{acquire_by_attempts, Attempt};
use crate::error::Result;
use crate::spi::{AcquireRequest, Acquired, HeldLock, HoldStore, Permits, Release, Renewal};

pub(super) struct SqliteSemaphores {
    pub(super) db: Arc<SqliteBackend>,
}

enum Outcome {
    Attempted(Attempt),
    /// The name was first used with this other count.
    OtherCount(u32),
}

impl SqliteSemaphores {
    async fn attempt(&self, request: &AcquireRequest<Permits>) -> Result<Attempt> {
        let (key, owner, permits) = (request.key.clone(), request.owner.to_string(), request.kind.0);
        let lease_ms = duration_ms(request.lease);
        let outcome = self
            .db
            .with_conn_fast(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                tx.prepare_cached("INSERT INTO polylock_semaphores (name, permits) VALUES (?1, ?2) ON CONFLICT DO NOTHING")?
                    .execute(params![key, permits])?;
                let fixed: u32 = tx
                    .prepare_cached("SELECT permits FROM polylock_semaphores WHERE name = ?1")?
                    .query_row(params![key], |row| row.get(0))?;
                if fixed != permits {
                    return Ok(Outcome::OtherCount(fixed));
                }
                tx.prepare_cached(&format!("DELETE FROM polylock_permits WHERE name = ?1 AND lease_until_ms <= {NOW_MS}"))?
                    .execute(params![key])?;
                let (taken, soonest_left): (u32, Option<i64>) = tx
                    .prepare_cached(&format!(
                        "SELECT COUNT(*), MIN(lease_until_ms) - {NOW_MS} FROM polylock_permits WHERE name = ?1"
                    ))?
                    .query_row(params![key], |row| Ok((row.get(0)?, row.get(1)?)))?;
                if taken >= permits {
                    tx.commit()?;
                    let left = soonest_left.filter(|ms| *ms > 0).map(|ms| Duration::from_millis(ms as u64));
                    return Ok(Outcome::Attempted(Attempt::Busy { holder_lease_left: left }));
                }
                let token: i64 = tx.prepare_cached(NEXT_TOKEN)?.query_row(params![key], |row| row.get(0))?;
                tx.prepare_cached(&format!(
                    "INSERT INTO polylock_permits (name, owner, token, lease_until_ms) VALUES (?1, ?2, ?3, {NOW_MS} + ?4)"
                ))?
                .execute(params![key, owner, token, lease_ms])?;
                tx.commit()?;
                Ok(Outcome::Attempted(Attempt::Acquired { token: token as u64, state: None }))
            })
            .await?;
        match outcome {
            Outcome::Attempted(attempt) => Ok(attempt),
            Outcome::OtherCount(fixed) => Err(request.kind.other_count(&request.key, fixed)),
        }
    }
}

#[async_trait]
impl HoldStore<Permits> for SqliteSemaphores {
    async fn acquire(&self, request: &AcquireRequest<Permits>) -> Result<Option<Acquired>> {
        acquire_by_attempts(request, BACKOFF, &mut self.db.released(), || self.attempt(request)).await
    }

    async fn renew(&self, held: &HeldLock<Permits>, lease: Duration) -> Result<Renewal> {
        let (key, owner, token) = (held.key.clone(), held.owner.to_string(), held.token as i64);
        let lease_ms = duration_ms(lease);
        let updated = self
            .db
            .with_conn_fast(move |conn| {
                conn.prepare_cached(&format!(
                    "UPDATE polylock_permits SET lease_until_ms = {NOW_MS} + ?4
                     WHERE name = ?1 AND owner = ?2 AND token = ?3 AND lease_until_ms > {NOW_MS}"
                ))?
                .execute(params![key, owner, token, lease_ms])
            })
            .await?;
        Ok(if updated == 1 { Renewal::Renewed } else { Renewal::Gone })
    }

    async fn release(&self, held: &HeldLock<Permits>, _holds_left: u32) -> Result<Release> {
        let (key, owner, token) = (held.key.clone(), held.owner.to_string(), held.token as i64);
        let was_current: Option<bool> = self
            .db
            .with_conn_fast(move |conn| {
                conn.prepare_cached(&format!(
                    "DELETE FROM polylock_permits WHERE name = ?1 AND owner = ?2 AND token = ?3
                     RETURNING lease_until_ms > {NOW_MS}"
                ))?
                .query_row(params![key, owner, token], |row| row.get(0))
                .optional()
            })
            .await?;
        self.db.wake_waiters();
        Ok(if was_current == Some(true) { Release::Released } else { Release::Gone })
    }

    async fn is_locked(&self, key: &str, _permits: Permits) -> Result<bool> {
        let key = key.to_string();
        self.db
            .with_conn_fast(move |conn| {
                conn.prepare_cached(&format!(
                    "SELECT 1 FROM polylock_permits WHERE name = ?1 AND lease_until_ms > {NOW_MS} LIMIT 1"
                ))?
                .query_row(params![key], |_| Ok(()))
                .optional()
                .map(|row| row.is_some())
            })
            .await
    }
}
