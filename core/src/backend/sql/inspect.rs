//! Reading SQL lock layouts for the operator, whoever holds them: a session lock's holding
//! connection (PostgreSQL's `pg_locks`, which also lists the sessions waiting; MySQL's
//! `IS_USED_LOCK`), ShedLock's row (`locked_by`, `lock_until`) for lease locks, and the name's
//! counter in `polylock_fencing`. Session locks hold no tokens in the database and their keys
//! are hashes, so only ShedLock rows can be listed.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use polylock_id::sql_names::lease_name;
use sqlx::Row;

use super::dialect::Dialect;
use super::store::SqlStore;
use crate::error::{Error, Result};
use crate::spi::{InspectStore, ListedLock, LockKind, LockStatus};

/// The layout reader of `store` (PostgreSQL or MySQL/MariaDB, as it was built for).
pub(super) fn inspector<D: Dialect>(store: Arc<SqlStore<D>>) -> Option<Arc<dyn InspectStore>> {
    let any: Arc<dyn Any + Send + Sync> = store;
    #[cfg(feature = "postgres")]
    let any = match any.downcast::<SqlStore<super::postgres::Pg>>() {
        Ok(pg) => return Some(Arc::new(SqlInspect(pg))),
        Err(other) => other,
    };
    #[cfg(feature = "mysql")]
    if let Ok(mysql) = any.downcast::<SqlStore<super::mysql::MySqlDialect>>() {
        return Some(Arc::new(SqlInspect(mysql)));
    }
    None
}

struct SqlInspect<D: Dialect>(Arc<SqlStore<D>>);

fn millis(ms: Option<i64>) -> Option<Duration> {
    ms.filter(|ms| *ms > 0).map(|ms| Duration::from_millis(ms as u64))
}

fn unsupported_kind(kind: LockKind) -> Error {
    Error::unsupported(format!("SQL backends keep no {kind} locks"))
}

/// A ShedLock row as read: who, how long yet, since when.
fn lease_row_status(row: Option<(Option<String>, Option<i64>, Option<String>)>, counter: Option<i64>) -> LockStatus {
    let mut status = LockStatus {
        layout: "ShedLock row",
        token_counter: counter.and_then(|t| u64::try_from(t).ok()),
        ..LockStatus::default()
    };
    if let Some((locked_by, left_ms, locked_at)) = row {
        if let Some(left) = millis(left_ms) {
            status.held = true;
            status.holder = locked_by;
            status.remaining_lease = Some(left);
            if let Some(at) = locked_at {
                status.details.push(("locked at (UTC)", at));
            }
        }
    }
    status
}

#[cfg(feature = "postgres")]
#[async_trait]
impl InspectStore for SqlInspect<super::postgres::Pg> {
    async fn status(&self, key: &str, kind: LockKind) -> Result<LockStatus> {
        type Pg = super::postgres::Pg;
        let store = &self.0;
        let err = |e| store.err(e);
        match kind {
            LockKind::Reentrant => {
                let rows = sqlx::query(
                    "SELECT l.pid, l.granted, l.mode, a.application_name FROM pg_locks l
                       LEFT JOIN pg_stat_activity a ON a.pid = l.pid
                     WHERE l.locktype = 'advisory' AND l.objsubid = 1
                       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                       AND ((l.classid::bigint << 32) | l.objid::bigint) = ($1::bigint & x'ffffffffffffffff'::bigint)",
                )
                .bind(<Pg as Dialect>::session_lock(key))
                .fetch_all(&store.shared)
                .await
                .map_err(err)?;
                let counter: Option<i64> = sqlx::query_scalar("SELECT token FROM polylock_fencing WHERE name = $1")
                    .bind(<Pg as Dialect>::session_fencing_name(key))
                    .fetch_optional(&store.shared)
                    .await
                    .map_err(err)?;
                let mut status = LockStatus {
                    layout: "PostgreSQL advisory lock (pg_locks)",
                    token_counter: counter.and_then(|t| u64::try_from(t).ok()),
                    ..LockStatus::default()
                };
                let mut holders = Vec::new();
                let mut waiting = 0;
                for row in rows {
                    let (pid, granted, mode, app): (i32, bool, String, Option<String>) =
                        (row.get(0), row.get(1), row.get(2), row.get(3));
                    if granted {
                        let app = app.filter(|a| !a.is_empty()).map(|a| format!(" ({a})")).unwrap_or_default();
                        holders.push(format!(
                            "backend pid {pid}{app}{}",
                            if mode == "ShareLock" { " shared" } else { "" }
                        ));
                    } else {
                        waiting += 1;
                    }
                }
                status.held = !holders.is_empty();
                status.holder = holders.first().cloned();
                if holders.len() > 1 {
                    status.details.push(("all holders", holders.join(", ")));
                }
                status.remaining_lease = status.held.then_some(Duration::MAX);
                status.waiters = Some(waiting);
                Ok(status)
            }
            LockKind::Lease => {
                let name = lease_name(key);
                let row = sqlx::query(&format!(
                    "SELECT locked_by, (extract(epoch FROM lock_until - timezone('utc', now())) * 1000)::bigint,
                            locked_at::text FROM {} WHERE name = $1",
                    store.config.table
                ))
                .bind(&name)
                .fetch_optional(&store.shared)
                .await
                .map_err(err)?
                .map(|row| (row.get(0), row.get(1), row.get(2)));
                let counter: Option<i64> = sqlx::query_scalar("SELECT token FROM polylock_fencing WHERE name = $1")
                    .bind(&name)
                    .fetch_optional(&store.shared)
                    .await
                    .map_err(err)?;
                Ok(lease_row_status(row, counter))
            }
            other => Err(unsupported_kind(other)),
        }
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ListedLock>> {
        let store = &self.0;
        let rows = sqlx::query(&format!(
            "SELECT name, lock_until > timezone('utc', now()) FROM {} WHERE left(name, length($1)) = $1 ORDER BY name",
            store.config.table
        ))
        .bind(prefix)
        .fetch_all(&store.shared)
        .await
        .map_err(|e| store.err(e))?;
        Ok(rows
            .into_iter()
            .map(|row| ListedLock { key: row.get(0), kind: LockKind::Lease, held: row.get(1) })
            .collect())
    }
}

#[cfg(feature = "mysql")]
#[async_trait]
impl InspectStore for SqlInspect<super::mysql::MySqlDialect> {
    async fn status(&self, key: &str, kind: LockKind) -> Result<LockStatus> {
        type My = super::mysql::MySqlDialect;
        let store = &self.0;
        let err = |e| store.err(e);
        match kind {
            LockKind::Reentrant => {
                let name = <My as Dialect>::session_lock(key);
                let holder: Option<i64> = sqlx::query_scalar("SELECT IS_USED_LOCK(?)")
                    .bind(&name)
                    .fetch_one(&store.shared)
                    .await
                    .map_err(err)?;
                let counter: Option<i64> = sqlx::query_scalar("SELECT token FROM polylock_fencing WHERE name = ?")
                    .bind(<My as Dialect>::session_fencing_name(key))
                    .fetch_optional(&store.shared)
                    .await
                    .map_err(err)?;
                let mut status = LockStatus {
                    layout: "MySQL user-level lock (GET_LOCK)",
                    token_counter: counter.and_then(|t| u64::try_from(t).ok()),
                    ..LockStatus::default()
                };
                if let Some(connection) = holder {
                    status.held = true;
                    status.holder = Some(format!("connection {connection}"));
                    status.remaining_lease = Some(Duration::MAX);
                    status.details.push(("lock name", name));
                }
                Ok(status)
            }
            LockKind::Lease => {
                let name = lease_name(key);
                let row = sqlx::query(&format!(
                    "SELECT locked_by, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), lock_until) DIV 1000,
                            CAST(locked_at AS CHAR) FROM {} WHERE name = ?",
                    store.config.table
                ))
                .bind(&name)
                .fetch_optional(&store.shared)
                .await
                .map_err(err)?
                .map(|row| (row.get(0), row.get(1), row.get(2)));
                let counter: Option<i64> = sqlx::query_scalar("SELECT token FROM polylock_fencing WHERE name = ?")
                    .bind(&name)
                    .fetch_optional(&store.shared)
                    .await
                    .map_err(err)?;
                Ok(lease_row_status(row, counter))
            }
            other => Err(unsupported_kind(other)),
        }
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ListedLock>> {
        let store = &self.0;
        let rows = sqlx::query(&format!(
            "SELECT name, lock_until > UTC_TIMESTAMP(3) FROM {} WHERE LEFT(name, CHAR_LENGTH(?)) = ? ORDER BY name",
            store.config.table
        ))
        .bind(prefix)
        .bind(prefix)
        .fetch_all(&store.shared)
        .await
        .map_err(|e| store.err(e))?;
        Ok(rows
            .into_iter()
            .map(|row| ListedLock { key: row.get(0), kind: LockKind::Lease, held: row.get::<i64, _>(1) != 0 })
            .collect())
    }
}
