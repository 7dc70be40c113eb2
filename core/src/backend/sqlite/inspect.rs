//! Reading SQLite's mutex rows for the operator: `polylock_locks` (owner, token, lease end
//! by the database's clock) and the name's counter in `polylock_fencing`. Waiters block on
//! per-name files or poll, and leave no trace to count.

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};

use super::{SqliteBackend, NOW_MS};
use crate::error::Result;
use crate::spi::{InspectStore, ListedLock, LockKind, LockStatus};

#[async_trait]
impl InspectStore for SqliteBackend {
    async fn status(&self, key: &str, _kind: LockKind) -> Result<LockStatus> {
        let key = key.to_string();
        let (row, last_token) = self
            .with_conn(move |conn| {
                let row: Option<(String, i64, i64)> = conn
                    .prepare_cached(&format!(
                        "SELECT owner, token, lease_until_ms - {NOW_MS} FROM polylock_locks WHERE name = ?1"
                    ))?
                    .query_row(params![key], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
                    .optional()?;
                let last: Option<i64> = conn
                    .prepare_cached("SELECT token FROM polylock_fencing WHERE name = ?1")?
                    .query_row(params![key], |row| row.get(0))
                    .optional()?;
                Ok((row, last))
            })
            .await?;
        let mut status = LockStatus {
            token_counter: last_token.and_then(|t| u64::try_from(t).ok()),
            layout: "SQLite row in polylock_locks",
            ..LockStatus::default()
        };
        // A row whose lease ended is a hold nobody has any more (it is taken over, not deleted).
        if let Some((owner, token, left_ms)) = row.filter(|(_, _, left)| *left > 0) {
            status.held = true;
            status.holder = Some(owner);
            status.fencing_token = u64::try_from(token).ok();
            // Without the millisecond every row is padded with (see `duration_ms`).
            status.remaining_lease = Some(std::time::Duration::from_millis(left_ms.saturating_sub(1).max(0) as u64));
        }
        Ok(status)
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ListedLock>> {
        let prefix = prefix.to_string();
        let rows: Vec<(String, bool)> = self
            .with_conn(move |conn| {
                let mut statement = conn.prepare_cached(&format!(
                    "SELECT name, lease_until_ms > {NOW_MS} FROM polylock_locks
                     WHERE substr(name, 1, length(?1)) = ?1 ORDER BY name"
                ))?;
                let rows = statement.query_map(params![prefix], |row| Ok((row.get(0)?, row.get(1)?)))?;
                rows.collect()
            })
            .await?;
        Ok(rows.into_iter().map(|(key, held)| ListedLock { key, kind: LockKind::Reentrant, held }).collect())
    }
}
