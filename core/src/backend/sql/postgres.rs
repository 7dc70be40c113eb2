//! PostgreSQL's statements: session locks with `pg_advisory_lock`, lease locks on ShedLock's
//! table, and releases of lease locks announced with `NOTIFY polylock_release` so waiters in
//! every polylock process wake at once.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool};
use sqlx::{Postgres, Row};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use super::dialect::{Conn, Dialect, LockWait};
use super::errors::db_code;
use crate::backend::poll::{Attempt, Backoff};
use crate::spi::RwMode;
use polylock_id::sql_names::postgres_advisory_key;

/// The channel releases of lease locks are announced on; the payload is the lease name.
const RELEASE_CHANNEL: &str = "polylock_release";

/// Serializes schema creation between processes (CREATE TABLE IF NOT EXISTS can race).
const SCHEMA_LOCK_KEY: i64 = 0x706f_6c79_6c6f_636b; // "polylock"

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A time left in whole milliseconds as the database computed it; `None` when not positive.
fn left_from_millis(ms: Option<i64>) -> Option<Duration> {
    ms.filter(|ms| *ms > 0).map(|ms| Duration::from_millis(ms as u64))
}

pub(crate) struct Pg {
    table: String,
}

#[async_trait]
impl Dialect for Pg {
    type DB = Postgres;
    type SessionLock = i64;
    type ConnectionId = i32;

    const DATABASE: &'static str = "PostgreSQL";
    const BACKEND: &'static str = "postgres";
    const SQLX_SCHEME: &'static str = "postgres";
    const SQLX_OPTIONS: &'static [&'static str] =
        &["sslmode", "sslrootcert", "sslcert", "sslkey", "application_name", "options", "statement-cache-capacity"];
    /// Lease waiters are woken by NOTIFY; this catches releases that announce nothing (a
    /// ShedLock client's unlock) and is bounded by the holder's `lock_until`.
    const LEASE_BACKOFF: Backoff = Backoff { min: Duration::from_millis(10), max: Duration::from_millis(250) };
    const ANNOUNCES_RELEASES: bool = true;

    fn new(table: String) -> Self {
        Pg { table }
    }

    fn connect_options(sqlx_url: &str) -> Result<PgConnectOptions, sqlx::Error> {
        Ok(PgConnectOptions::from_str(sqlx_url)?.application_name("polylock"))
    }

    async fn create_schema(&self, pool: &PgPool) -> Result<(), sqlx::Error> {
        let mut tx = pool.begin().await?;
        let statements = [
            format!("SELECT pg_advisory_xact_lock({SCHEMA_LOCK_KEY})"),
            "CREATE TABLE IF NOT EXISTS polylock_fencing (name TEXT PRIMARY KEY, token BIGINT NOT NULL)".to_string(),
            "CREATE TABLE IF NOT EXISTS polylock_semaphores (name TEXT PRIMARY KEY, permits BIGINT NOT NULL)"
                .to_string(),
            // ShedLock's documented PostgreSQL schema.
            format!(
                "CREATE TABLE IF NOT EXISTS {}(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, \
                 locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))",
                self.table
            ),
            // Leaf's table (its MySQL DDL in PostgreSQL's types), so a Leaf server and
            // polylock can share a tag.
            "CREATE TABLE IF NOT EXISTS leaf_alloc (biz_tag VARCHAR(128) NOT NULL PRIMARY KEY, \
             max_id BIGINT NOT NULL DEFAULT 1, step INT NOT NULL, description VARCHAR(256) DEFAULT NULL, \
             update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)"
                .to_string(),
            "CREATE TABLE IF NOT EXISTS polylock_values (name TEXT PRIMARY KEY, value BYTEA, version BIGINT NOT NULL)"
                .to_string(),
            "CREATE TABLE IF NOT EXISTS polylock_latches (name TEXT PRIMARY KEY, count BIGINT NOT NULL)".to_string(),
        ];
        for statement in statements {
            sqlx::query(&statement).execute(&mut *tx).await?;
        }
        tx.commit().await
    }

    fn session_lock(key: &str) -> i64 {
        postgres_advisory_key(key)
    }

    fn session_fencing_name(key: &str) -> String {
        key.to_string()
    }

    async fn try_session_lock(conn: &mut Conn<Self>, key: &i64) -> Result<(bool, i32), sqlx::Error> {
        let row =
            sqlx::query("SELECT pg_try_advisory_lock($1), pg_backend_pid()").bind(*key).fetch_one(&mut **conn).await?;
        Ok((row.get(0), row.get(1)))
    }

    /// `pg_advisory_lock` under `lock_timeout` (0: none), set in the same statement.
    async fn wait_session_lock(conn: &mut Conn<Self>, key: &i64, wait: Option<Duration>) -> LockWait {
        let lock_timeout = format!("{}ms", wait.map_or(0, millis));
        let outcome = sqlx::query("SELECT set_config('lock_timeout', $1, false), pg_advisory_lock($2)")
            .bind(lock_timeout)
            .bind(*key)
            .execute(&mut **conn)
            .await;
        match outcome {
            Ok(_) => LockWait::Granted,
            Err(err) => match db_code(&err).as_deref() {
                Some("55P03") => LockWait::TimedOut,    // lock_not_available
                Some("57014") => LockWait::Interrupted, // query_canceled
                _ => LockWait::Failed(err),
            },
        }
    }

    async fn interrupt_wait(shared: &PgPool, pid: i32) {
        let _ = sqlx::query("SELECT pg_cancel_backend($1)").bind(pid).execute(shared).await;
    }

    async fn give_up_after_interrupt(conn: &mut Conn<Self>, _key: &i64) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT pg_advisory_unlock_all()").execute(&mut **conn).await.map(|_| ())
    }

    /// Only the session itself can release an advisory lock it holds, so a live session is
    /// proof enough and the cheapest round trip.
    async fn session_holds(conn: &mut Conn<Self>, _key: &i64) -> Result<bool, sqlx::Error> {
        sqlx::query("SELECT 1").execute(&mut **conn).await.map(|_| true)
    }

    async fn session_unlock(conn: &mut Conn<Self>, key: &i64) -> Result<bool, sqlx::Error> {
        sqlx::query_scalar("SELECT pg_advisory_unlock($1)").bind(*key).fetch_one(&mut **conn).await
    }

    /// `idle_session_timeout` (PostgreSQL 14+), in milliseconds; the setting before is read in
    /// the same statement (`OFFSET 0` keeps the subquery, so it is read before it is set). An
    /// older server has no such setting: `current_setting(.., true)` is NULL, and the `CASE`
    /// sets nothing. A limit beyond the setting's range (about 24.8 days) is no
    /// limit (0): the server must never end a session sooner than its holder's lease.
    async fn limit_idle(conn: &mut Conn<Self>, idle: Duration) -> Result<Option<String>, sqlx::Error> {
        let limit = match i32::try_from(idle.as_millis()) {
            Ok(ms) => format!("{ms}ms"),
            Err(_) => "0".to_string(),
        };
        let row = sqlx::query(
            "SELECT before, CASE WHEN before IS NOT NULL THEN set_config('idle_session_timeout', $1, false) END
             FROM (SELECT current_setting('idle_session_timeout', true) AS before OFFSET 0) s",
        )
        .bind(limit)
        .fetch_one(&mut **conn)
        .await?;
        row.try_get(0)
    }

    async fn restore_idle(conn: &mut Conn<Self>, before: &str) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT set_config('idle_session_timeout', $1, false)")
            .bind(before)
            .execute(&mut **conn)
            .await
            .map(|_| ())
    }

    /// objsubid 1 is the one-bigint form of pg_advisory_lock; advisory locks are per database.
    async fn session_lock_taken(shared: &PgPool, key: &i64) -> Result<bool, sqlx::Error> {
        sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
               AND ((classid::bigint << 32) | objid::bigint) = ($1::bigint & x'ffffffffffffffff'::bigint))",
        )
        .bind(*key)
        .fetch_one(shared)
        .await
    }

    async fn draw_tokens(conn: &mut Conn<Self>, fencing_name: &str) -> Result<u64, sqlx::Error> {
        let reserved: i64 = sqlx::query_scalar(
            "INSERT INTO polylock_fencing (name, token) VALUES ($1, 2)
             ON CONFLICT (name) DO UPDATE SET token = polylock_fencing.token + 2 RETURNING token",
        )
        .bind(fencing_name)
        .fetch_one(&mut **conn)
        .await?;
        Ok(reserved as u64 - 1)
    }

    async fn step_token(conn: &mut Conn<Self>, fencing_name: &str) -> Result<u64, sqlx::Error> {
        let token: i64 =
            sqlx::query_scalar("UPDATE polylock_fencing SET token = token + 1 WHERE name = $1 RETURNING token")
                .bind(fencing_name)
                .fetch_optional(&mut **conn)
                .await?
                .ok_or(sqlx::Error::RowNotFound)?;
        Ok(token as u64)
    }

    type RwLock = i64;

    fn rw_lock(key: &str) -> i64 {
        postgres_advisory_key(key)
    }

    async fn try_rw_lock(&self, conn: &mut Conn<Self>, key: &i64, mode: RwMode) -> Result<(bool, i32), sqlx::Error> {
        let statement = match mode {
            RwMode::Read => "SELECT pg_try_advisory_lock_shared($1), pg_backend_pid()",
            RwMode::Write => "SELECT pg_try_advisory_lock($1), pg_backend_pid()",
        };
        let row = sqlx::query(statement).bind(*key).fetch_one(&mut **conn).await?;
        Ok((row.get(0), row.get(1)))
    }

    /// `pg_advisory_lock_shared` / `pg_advisory_lock` under `lock_timeout`, as the session lock.
    /// The server queues a shared request behind a waiting exclusive one, so readers do not
    /// starve a waiting writer.
    async fn wait_rw_lock(&self, conn: &mut Conn<Self>, key: &i64, mode: RwMode, wait: Option<Duration>) -> LockWait {
        let lock_timeout = format!("{}ms", wait.map_or(0, millis));
        let statement = match mode {
            RwMode::Read => "SELECT set_config('lock_timeout', $1, false), pg_advisory_lock_shared($2)",
            RwMode::Write => "SELECT set_config('lock_timeout', $1, false), pg_advisory_lock($2)",
        };
        let outcome = sqlx::query(statement).bind(lock_timeout).bind(*key).execute(&mut **conn).await;
        match outcome {
            Ok(_) => LockWait::Granted,
            Err(err) => match db_code(&err).as_deref() {
                Some("55P03") => LockWait::TimedOut,
                Some("57014") => LockWait::Interrupted,
                _ => LockWait::Failed(err),
            },
        }
    }

    /// A session's own exclusive advisory lock never conflicts with its shared request.
    async fn rw_read_on_writer(conn: &mut Conn<Self>, key: &i64) -> Result<(), sqlx::Error> {
        let taken: bool =
            sqlx::query_scalar("SELECT pg_try_advisory_lock_shared($1)").bind(*key).fetch_one(&mut **conn).await?;
        if taken {
            Ok(())
        } else {
            Err(sqlx::Error::Protocol("the write holder's session could not take the read side".into()))
        }
    }

    async fn rw_unlock(conn: &mut Conn<Self>, key: &i64, mode: RwMode, _other: bool) -> Result<bool, sqlx::Error> {
        let statement = match mode {
            RwMode::Read => "SELECT pg_advisory_unlock_shared($1)",
            RwMode::Write => "SELECT pg_advisory_unlock($1)",
        };
        sqlx::query_scalar(statement).bind(*key).fetch_one(&mut **conn).await
    }

    async fn rw_give_up(conn: &mut Conn<Self>, _key: &i64) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT pg_advisory_unlock_all()").execute(&mut **conn).await.map(|_| ())
    }

    async fn rw_draw_tokens(_shared: &PgPool, conn: &mut Conn<Self>, fencing_name: &str) -> Result<u64, sqlx::Error> {
        Self::draw_tokens(conn, fencing_name).await
    }

    /// A row inserted by a concurrent first use after this statement's snapshot is seen by
    /// neither half, so an empty answer is asked again.
    async fn fix_permits(shared: &PgPool, name: &str, permits: u32) -> Result<u32, sqlx::Error> {
        for _ in 0..3 {
            let fixed: Option<i64> = sqlx::query_scalar(
                "WITH added AS (
                     INSERT INTO polylock_semaphores (name, permits) VALUES ($1, $2)
                     ON CONFLICT (name) DO NOTHING RETURNING permits)
                 SELECT permits FROM added UNION ALL SELECT permits FROM polylock_semaphores WHERE name = $1 LIMIT 1",
            )
            .bind(name)
            .bind(i64::from(permits))
            .fetch_optional(shared)
            .await?;
            if let Some(fixed) = fixed {
                return Ok(u32::try_from(fixed).unwrap_or(u32::MAX));
            }
        }
        Err(sqlx::Error::RowNotFound)
    }

    /// One statement: take the row if it is free or expired, bump the fencing counter only if
    /// we did, and report the holder's time left otherwise.
    async fn lease_attempt(
        &self,
        shared: &PgPool,
        name: &str,
        by: &str,
        lease: Duration,
    ) -> Result<Attempt, sqlx::Error> {
        let table = &self.table;
        let row = sqlx::query(&format!(
            "WITH won AS (
                 INSERT INTO {table} (name, lock_until, locked_at, locked_by)
                 VALUES ($1, timezone('utc', now()) + $2 * interval '1 millisecond', timezone('utc', now()), $3)
                 ON CONFLICT (name) DO UPDATE
                     SET lock_until = EXCLUDED.lock_until, locked_at = EXCLUDED.locked_at, locked_by = EXCLUDED.locked_by
                     WHERE {table}.lock_until <= timezone('utc', now())
                 RETURNING name),
             fence AS (
                 INSERT INTO polylock_fencing (name, token) SELECT name, 2 FROM won
                 ON CONFLICT (name) DO UPDATE SET token = polylock_fencing.token + 2
                 RETURNING token - 1 AS token)
             SELECT (SELECT token FROM fence),
                    (SELECT (extract(epoch FROM lock_until - timezone('utc', now())) * 1000)::bigint
                     FROM {table} WHERE name = $1)"
        ))
        .bind(name)
        .bind(millis(lease) as f64)
        .bind(by)
        .fetch_one(shared)
        .await?;
        let (token, left): (Option<i64>, Option<i64>) = (row.get(0), row.get(1));
        Ok(match token {
            Some(token) => Attempt::Acquired { token: token as u64, state: None },
            None => Attempt::Busy { holder_lease_left: left_from_millis(left) },
        })
    }

    async fn lease_give_back(&self, shared: &PgPool, name: &str, by: &str) -> Result<bool, sqlx::Error> {
        let released: i64 = sqlx::query_scalar(&format!(
            "WITH released AS (
                 UPDATE {} SET lock_until = timezone('utc', now())
                 WHERE name = $1 AND locked_by = $2 AND lock_until > timezone('utc', now())
                 RETURNING name)
             SELECT count(pg_notify('{RELEASE_CHANNEL}', name)::text) FROM released",
            self.table
        ))
        .bind(name)
        .bind(by)
        .fetch_one(shared)
        .await?;
        Ok(released == 1)
    }

    async fn lease_give_back_won(
        &self,
        shared: &PgPool,
        name: &str,
        by: &str,
        token: u64,
    ) -> Result<bool, sqlx::Error> {
        let released: i64 = sqlx::query_scalar(&format!(
            "WITH released AS (
                 UPDATE {} SET lock_until = timezone('utc', now())
                 WHERE name = $1 AND locked_by = $2 AND lock_until > timezone('utc', now())
                   AND (SELECT token FROM polylock_fencing WHERE name = $1) = $3
                 RETURNING name)
             SELECT count(pg_notify('{RELEASE_CHANNEL}', name)::text) FROM released",
            self.table
        ))
        .bind(name)
        .bind(by)
        .bind(token as i64 + 1)
        .fetch_one(shared)
        .await?;
        Ok(released == 1)
    }

    async fn lease_renew(&self, shared: &PgPool, name: &str, by: &str, lease: Duration) -> Result<bool, sqlx::Error> {
        let updated = sqlx::query(&format!(
            "UPDATE {} SET lock_until = timezone('utc', now()) + $3 * interval '1 millisecond'
             WHERE name = $1 AND locked_by = $2 AND lock_until > timezone('utc', now())",
            self.table
        ))
        .bind(name)
        .bind(by)
        .bind(millis(lease) as f64)
        .execute(shared)
        .await?;
        Ok(updated.rows_affected() == 1)
    }

    async fn lease_is_held_by(&self, shared: &PgPool, name: &str, by: &str) -> Result<bool, sqlx::Error> {
        let count: i64 = sqlx::query_scalar(&format!(
            "SELECT count(*) FROM {} WHERE name = $1 AND locked_by = $2 AND lock_until > timezone('utc', now())",
            self.table
        ))
        .bind(name)
        .bind(by)
        .fetch_one(shared)
        .await?;
        Ok(count == 1)
    }

    async fn lease_transfer(
        &self,
        shared: &PgPool,
        name: &str,
        from: &str,
        to: &str,
        lease: Duration,
    ) -> Result<Option<u64>, sqlx::Error> {
        let table = &self.table;
        let token: Option<i64> = sqlx::query_scalar(&format!(
            "WITH moved AS (
                 UPDATE {table} SET locked_by = $3, locked_at = timezone('utc', now()),
                     lock_until = timezone('utc', now()) + $4 * interval '1 millisecond'
                 WHERE name = $1 AND locked_by IN ($2, $3) AND lock_until > timezone('utc', now())
                 RETURNING name),
             fence AS (
                 INSERT INTO polylock_fencing (name, token) SELECT name, 2 FROM moved
                 ON CONFLICT (name) DO UPDATE SET token = polylock_fencing.token + 1
                 RETURNING token - 1 AS token)
             SELECT (SELECT token FROM fence)"
        ))
        .bind(name)
        .bind(from)
        .bind(to)
        .bind(millis(lease) as f64)
        .fetch_one(shared)
        .await?;
        Ok(token.map(|token| token as u64))
    }

    async fn lease_left(&self, shared: &PgPool, name: &str) -> Result<Option<Duration>, sqlx::Error> {
        let left: Option<i64> = sqlx::query_scalar(&format!(
            "SELECT (extract(epoch FROM lock_until - timezone('utc', now())) * 1000)::bigint FROM {} WHERE name = $1",
            self.table
        ))
        .bind(name)
        .fetch_optional(shared)
        .await?
        .flatten();
        Ok(left_from_millis(left))
    }

    async fn lease_force_end(&self, shared: &PgPool, name: &str) -> Result<bool, sqlx::Error> {
        let forced: i64 = sqlx::query_scalar(&format!(
            "WITH forced AS (
                 UPDATE {} SET lock_until = timezone('utc', now())
                 WHERE name = $1 AND lock_until > timezone('utc', now())
                 RETURNING name)
             SELECT count(pg_notify('{RELEASE_CHANNEL}', name)::text) FROM forced",
            self.table
        ))
        .bind(name)
        .fetch_one(shared)
        .await?;
        Ok(forced == 1)
    }

    /// LISTEN on a connection of the session pool, so the shared pool keeps all its
    /// connections for work.
    fn watch_releases(sessions: PgPool, released: Arc<watch::Sender<u64>>) -> Option<AbortHandle> {
        let task = tokio::spawn(async move {
            loop {
                let mut listener = match PgListener::connect_with(&sessions).await {
                    Ok(listener) => listener,
                    Err(_) => {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                };
                if listener.listen(RELEASE_CHANNEL).await.is_err() {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                // recv reconnects and re-listens by itself after a connection loss.
                while listener.recv().await.is_ok() {
                    released.send_modify(|n| *n = n.wrapping_add(1));
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        Some(task.abort_handle())
    }

    /// One upsert that writes only over an open latch (count at zero).
    async fn latch_try_set(shared: &PgPool, name: &str, count: i64) -> Result<bool, sqlx::Error> {
        let set: Option<i64> = sqlx::query_scalar(
            "INSERT INTO polylock_latches (name, count) VALUES ($1, $2)
             ON CONFLICT (name) DO UPDATE SET count = EXCLUDED.count WHERE polylock_latches.count <= 0
             RETURNING count",
        )
        .bind(name)
        .bind(count)
        .fetch_optional(shared)
        .await?;
        Ok(set.is_some())
    }

    async fn latch_count_down(shared: &PgPool, name: &str) -> Result<(), sqlx::Error> {
        sqlx::query("UPDATE polylock_latches SET count = count - 1 WHERE name = $1 AND count > 0")
            .bind(name)
            .execute(shared)
            .await
            .map(drop)
    }

    async fn latch_count(shared: &PgPool, name: &str) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar("SELECT count FROM polylock_latches WHERE name = $1").bind(name).fetch_optional(shared).await
    }

    /// An upsert, so a new tag costs no second statement; concurrent ones queue on the row.
    async fn reserve(shared: &PgPool, tag: &str, count: i64, step: i32) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar(
            "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ($1, $2, $3, 'polylock counter')
             ON CONFLICT (biz_tag) DO UPDATE SET max_id = leaf_alloc.max_id + $2, update_time = now()
             RETURNING max_id",
        )
        .bind(tag)
        .bind(count)
        .bind(step)
        .fetch_one(shared)
        .await
    }

    async fn counter_max_id(shared: &PgPool, tag: &str) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar("SELECT max_id FROM leaf_alloc WHERE biz_tag = $1").bind(tag).fetch_optional(shared).await
    }

    async fn value_get(shared: &PgPool, name: &str) -> Result<Option<(Vec<u8>, i64)>, sqlx::Error> {
        sqlx::query_as("SELECT value, version FROM polylock_values WHERE name = $1 AND value IS NOT NULL")
            .bind(name)
            .fetch_optional(shared)
            .await
    }

    async fn value_create(shared: &PgPool, name: &str, value: &[u8]) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar(
            "INSERT INTO polylock_values (name, value, version) VALUES ($1, $2, 1)
             ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, version = polylock_values.version + 1
             WHERE polylock_values.value IS NULL
             RETURNING version",
        )
        .bind(name)
        .bind(value)
        .fetch_optional(shared)
        .await
    }

    async fn value_replace(
        shared: &PgPool,
        name: &str,
        expected: i64,
        value: &[u8],
    ) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar(
            "UPDATE polylock_values SET value = $2, version = version + 1
             WHERE name = $1 AND version = $3 AND value IS NOT NULL RETURNING version",
        )
        .bind(name)
        .bind(value)
        .bind(expected)
        .fetch_optional(shared)
        .await
    }

    async fn value_delete(shared: &PgPool, name: &str, expected: i64) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(
            "UPDATE polylock_values SET value = NULL WHERE name = $1 AND version = $2 AND value IS NOT NULL",
        )
        .bind(name)
        .bind(expected)
        .execute(shared)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// `clock_timestamp()`, not `now()`: the time as the statement runs, not its transaction's start.
    async fn server_millis(shared: &PgPool) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint").fetch_one(shared).await
    }
}
