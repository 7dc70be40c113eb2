//! Read-write locks in SQLite: one row per reader and per writer in `polylock_rw_holds`, each
//! with its own lease by the database's clock. A waiting writer keeps a short-lived
//! 'waiting' row that new readers give way to, so a stream of overlapping readers (of any
//! process) cannot starve it; the row lapses if its writer stops asking.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::{duration_ms, SqliteBackend, BACKOFF, NEXT_TOKEN, NOW_MS};
use crate::backend::poll::{acquire_by_attempts, Attempt};
use crate::error::Result;
use crate::spi::{AcquireRequest, Acquired, HeldLock, HoldStore, Release, Renewal, RwMode};

/// How long a waiting writer's row keeps readers out after its last attempt: several
/// backoff steps, so it stays while the writer waits and lapses soon after it leaves.
const WRITER_MARK_MS: i64 = 250;

pub(super) struct SqliteRwLocks {
    pub(super) db: Arc<SqliteBackend>,
}

fn mode_name(mode: RwMode) -> &'static str {
    match mode {
        RwMode::Read => "read",
        RwMode::Write => "write",
    }
}

/// How long until the first live row of `mode` held by someone else runs out, if any.
fn others_lease_left(conn: &Connection, key: &str, mode: &str, owner: &str) -> rusqlite::Result<Option<Duration>> {
    let left: Option<i64> = conn
        .prepare_cached(&format!(
            "SELECT MIN(lease_until_ms) - {NOW_MS} FROM polylock_rw_holds
             WHERE name = ?1 AND mode = ?2 AND owner <> ?3 AND lease_until_ms > {NOW_MS}"
        ))?
        .query_row(params![key, mode, owner], |row| row.get(0))
        .optional()?
        .flatten();
    Ok(left.filter(|ms| *ms > 0).map(|ms| Duration::from_millis(ms as u64)))
}

fn holds_live(conn: &Connection, key: &str, mode: &str, owner: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached(&format!(
        "SELECT 1 FROM polylock_rw_holds WHERE name = ?1 AND mode = ?2 AND owner = ?3 AND lease_until_ms > {NOW_MS}"
    ))?
    .query_row(params![key, mode, owner], |_| Ok(()))
    .optional()
    .map(|row| row.is_some())
}

impl SqliteRwLocks {
    async fn attempt(&self, request: &AcquireRequest<RwMode>) -> Result<Attempt> {
        let (key, owner, mode) = (request.key.clone(), request.owner.to_string(), request.kind);
        let lease_ms = duration_ms(request.lease);
        self.db
            .with_conn_fast(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                tx.prepare_cached(&format!(
                    "DELETE FROM polylock_rw_holds WHERE name = ?1 AND lease_until_ms <= {NOW_MS}"
                ))?
                .execute(params![key])?;
                let writer_left = others_lease_left(&tx, &key, "write", &owner)?;
                let busy = match mode {
                    _ if writer_left.is_some() => Some(writer_left),
                    // The writer itself may also read (a downgrade); anyone else gives way to
                    // writers already waiting.
                    RwMode::Read => {
                        let writer_waits = others_lease_left(&tx, &key, "waiting", &owner)?.is_some();
                        (writer_waits && !holds_live(&tx, &key, "write", &owner)?).then_some(None)
                    }
                    RwMode::Write => others_lease_left(&tx, &key, "read", &owner)?.map(Some),
                };
                if let Some(holder_lease_left) = busy {
                    if mode == RwMode::Write {
                        tx.prepare_cached(&format!(
                            "INSERT INTO polylock_rw_holds (name, mode, owner, token, lease_until_ms)
                             VALUES (?1, 'waiting', ?2, 0, {NOW_MS} + ?3)
                             ON CONFLICT (name, mode, owner) DO UPDATE SET lease_until_ms = excluded.lease_until_ms"
                        ))?
                        .execute(params![key, owner, WRITER_MARK_MS])?;
                    }
                    tx.commit()?;
                    return Ok(Attempt::Busy { holder_lease_left });
                }
                let token: i64 = tx.prepare_cached(NEXT_TOKEN)?.query_row(params![key], |row| row.get(0))?;
                tx.prepare_cached(&format!(
                    "INSERT INTO polylock_rw_holds (name, mode, owner, token, lease_until_ms)
                     VALUES (?1, ?2, ?3, ?4, {NOW_MS} + ?5)
                     ON CONFLICT (name, mode, owner) DO UPDATE SET
                         token = excluded.token, lease_until_ms = excluded.lease_until_ms"
                ))?
                .execute(params![key, mode_name(mode), owner, token, lease_ms])?;
                tx.prepare_cached("DELETE FROM polylock_rw_holds WHERE name = ?1 AND mode = 'waiting' AND owner = ?2")?
                    .execute(params![key, owner])?;
                tx.commit()?;
                Ok(Attempt::Acquired { token: token as u64, state: None })
            })
            .await
    }
}

/// Withdraws a waiting writer's row on every way out, the caller going away included.
struct WithdrawOnDrop<'a> {
    locks: &'a SqliteRwLocks,
    request: &'a AcquireRequest<RwMode>,
    acquired: bool,
}

impl Drop for WithdrawOnDrop<'_> {
    fn drop(&mut self) {
        if self.request.kind != RwMode::Write || self.acquired {
            return;
        }
        let (db, key, owner) = (self.locks.db.clone(), self.request.key.clone(), self.request.owner.to_string());
        // Best effort: the row lapses by itself within WRITER_MARK_MS anyway.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = db
                    .with_conn(move |conn| {
                        conn.prepare_cached(
                            "DELETE FROM polylock_rw_holds WHERE name = ?1 AND mode = 'waiting' AND owner = ?2",
                        )?
                        .execute(params![key, owner])
                    })
                    .await;
                db.wake_waiters();
            });
        }
    }
}

#[async_trait]
impl HoldStore<RwMode> for SqliteRwLocks {
    async fn acquire(&self, request: &AcquireRequest<RwMode>) -> Result<Option<Acquired>> {
        let mut withdraw = WithdrawOnDrop { locks: self, request, acquired: false };
        let acquired = acquire_by_attempts(request, BACKOFF, &mut self.db.released(), || self.attempt(request)).await?;
        withdraw.acquired = acquired.is_some();
        Ok(acquired)
    }

    async fn renew(&self, held: &HeldLock<RwMode>, lease: Duration) -> Result<Renewal> {
        let (key, owner, token) = (held.key.clone(), held.owner.to_string(), held.token as i64);
        let (mode, lease_ms) = (mode_name(held.kind), duration_ms(lease));
        let updated = self
            .db
            .with_conn_fast(move |conn| {
                conn.prepare_cached(&format!(
                    "UPDATE polylock_rw_holds SET lease_until_ms = {NOW_MS} + ?5
                     WHERE name = ?1 AND mode = ?2 AND owner = ?3 AND token = ?4 AND lease_until_ms > {NOW_MS}"
                ))?
                .execute(params![key, mode, owner, token, lease_ms])
            })
            .await?;
        Ok(if updated == 1 { Renewal::Renewed } else { Renewal::Gone })
    }

    async fn release(&self, held: &HeldLock<RwMode>, holds_left: u32) -> Result<Release> {
        let (key, owner, token) = (held.key.clone(), held.owner.to_string(), held.token as i64);
        let mode = mode_name(held.kind);
        let partial = holds_left > 0;
        let was_current: Option<bool> = self
            .db
            .with_conn_fast(move |conn| {
                let statement = if partial {
                    // Reentrancy is counted by the client; the row only needs to still be ours.
                    format!(
                        "SELECT lease_until_ms > {NOW_MS} FROM polylock_rw_holds
                         WHERE name = ?1 AND mode = ?2 AND owner = ?3 AND token = ?4"
                    )
                } else {
                    format!(
                        "DELETE FROM polylock_rw_holds WHERE name = ?1 AND mode = ?2 AND owner = ?3 AND token = ?4
                         RETURNING lease_until_ms > {NOW_MS}"
                    )
                };
                conn.prepare_cached(&statement)?
                    .query_row(params![key, mode, owner, token], |row| row.get(0))
                    .optional()
            })
            .await?;
        if !partial {
            self.db.wake_waiters();
        }
        Ok(if was_current == Some(true) { Release::Released } else { Release::Gone })
    }

    async fn is_locked(&self, key: &str, mode: RwMode) -> Result<bool> {
        let key = key.to_string();
        self.db
            .with_conn_fast(move |conn| {
                conn.prepare_cached(&format!(
                    "SELECT 1 FROM polylock_rw_holds WHERE name = ?1 AND mode = ?2 AND lease_until_ms > {NOW_MS}"
                ))?
                .query_row(params![key, mode_name(mode)], |_| Ok(()))
                .optional()
                .map(|row| row.is_some())
            })
            .await
    }
}
