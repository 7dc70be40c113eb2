//! PostgreSQL: session locks with `pg_advisory_lock`, lease locks on ShedLock's table, waiters
//! of lease locks woken by `NOTIFY polylock_release` from every releasing polylock process.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};
use sqlx::{Postgres, Row};
use tokio::sync::{watch, OnceCell};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::errors::{db_code, map_error};
use super::session::{Session, SessionConn, Unrecorded};
use super::{
    answer_or_interrupt, in_own_task_for_caller, locked_by, millis, session_connection, session_force_unlock_refused,
    try_once, wait_left, SqlConfig,
};
use crate::backend::poll::{acquire_by_attempts, Attempt, Backoff};
use crate::error::{Error, Result};
use crate::owner::Owner;
use crate::spi::{
    AcquireRequest, Acquired, Capabilities, ExclusiveStore, HeldLock, HoldStore, Release, Renewal, Store,
};
use crate::spi::{LockKind, LostNotifier};
use crate::url::ConnectUrl;
use polylock_id::sql_names::{lease_name, postgres_advisory_key};

/// sqlx's own PostgreSQL URL options that polylock passes through.
const SQLX_OPTIONS: &[&str] =
    &["sslmode", "sslrootcert", "sslcert", "sslkey", "application_name", "options", "statement-cache-capacity"];

/// The channel releases of lease locks are announced on; the payload is the lease name.
const RELEASE_CHANNEL: &str = "polylock_release";

/// Lease waiters are woken by NOTIFY; this catches releases that announce nothing (a
/// ShedLock client's unlock) and is bounded by the holder's `lock_until`.
const LEASE_FALLBACK: Backoff = Backoff { min: Duration::from_millis(10), max: Duration::from_millis(250) };

/// Serializes schema creation between processes (CREATE TABLE IF NOT EXISTS can race).
const SCHEMA_LOCK_KEY: i64 = 0x706f_6c79_6c6f_636b; // "polylock"

pub(crate) struct PgBackend {
    lease_table: LeaseTable,
    shared: PgPool,
    sessions: PgPool,
    config: SqlConfig,
    table: String,
    /// Bumped for every announced release (ours and other processes').
    released: Arc<watch::Sender<u64>>,
    listener: OnceCell<tokio::task::AbortHandle>,
}

impl PgBackend {
    pub(crate) async fn open(url: &mut ConnectUrl) -> Result<Self> {
        let config = SqlConfig::from_url(url, "postgres", SQLX_OPTIONS)?;
        let options = PgConnectOptions::from_str(&config.sqlx_url)
            .map_err(|e| map_error(&config.shown_url, e))?
            .application_name("polylock");
        super::probe(&options, &config).await?;
        let shared = PgPoolOptions::new()
            .max_connections(config.pool_size)
            .acquire_timeout(config.connect_timeout)
            .connect_lazy_with(options.clone());
        let sessions = PgPoolOptions::new()
            .max_connections(config.max_sessions)
            .min_connections(0)
            .idle_timeout(Duration::from_secs(60))
            .acquire_timeout(config.connect_timeout)
            .connect_lazy_with(options);
        let table = config.table.clone();
        let lease_table =
            LeaseTable { shared: shared.clone(), table: table.clone(), shown_url: config.shown_url.clone() };
        let backend = PgBackend {
            lease_table,
            shared,
            sessions,
            config,
            table,
            released: Arc::new(watch::channel(0).0),
            listener: OnceCell::new(),
        };
        backend.create_schema().await?;
        Ok(backend)
    }

    fn err(&self, err: sqlx::Error) -> Error {
        map_error(&self.config.shown_url, err)
    }

    async fn create_schema(&self) -> Result<()> {
        let mut tx = self.shared.begin().await.map_err(|e| self.err(e))?;
        let statements = [
            format!("SELECT pg_advisory_xact_lock({SCHEMA_LOCK_KEY})"),
            "CREATE TABLE IF NOT EXISTS polylock_fencing (name TEXT PRIMARY KEY, token BIGINT NOT NULL)".to_string(),
            // ShedLock's documented PostgreSQL schema.
            format!(
                "CREATE TABLE IF NOT EXISTS {}(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, \
                 locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))",
                self.table
            ),
        ];
        for statement in statements {
            sqlx::query(&statement).execute(&mut *tx).await.map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))
    }

    /// Draw two tokens from the fencing counter of `name` and return the first: the second is
    /// set aside for the owner the hold may be handed to (see `transfer`). A new name starts at
    /// 2, issuing 1. Called only while the lock is held.
    async fn next_token<'e, E: sqlx::PgExecutor<'e>>(&self, executor: E, name: &str) -> Result<u64> {
        let reserved: i64 = sqlx::query_scalar(
            "INSERT INTO polylock_fencing (name, token) VALUES ($1, 2)
             ON CONFLICT (name) DO UPDATE SET token = polylock_fencing.token + 2 RETURNING token",
        )
        .bind(name)
        .fetch_one(executor)
        .await
        .map_err(|e| self.err(e))?;
        Ok(reserved as u64 - 1)
    }

    async fn acquire_session(&self, request: &AcquireRequest) -> Result<Option<Acquired>> {
        let key = postgres_advisory_key(&request.key);
        let Some(conn) =
            session_connection(&self.sessions, request, self.config.max_sessions).await.map_err(|e| self.err(e))?
        else {
            return Ok(None);
        };
        // Until a session records the lock, dropping this acquisition closes the connection.
        let mut conn = Unrecorded::new(conn);
        let attempt_started = Instant::now();
        let row = sqlx::query("SELECT pg_try_advisory_lock($1), pg_backend_pid()")
            .bind(key)
            .fetch_one(&mut **conn.conn())
            .await
            .map_err(|e| self.err(e))?;
        let (locked, pid): (bool, i32) = (row.get(0), row.get(1));
        let mut conn = if locked {
            conn
        } else if try_once(request) || request.cancel.is_cancelled() {
            drop(conn.into_inner()); // holds nothing: back to the pool
            return Ok(None);
        } else {
            match self.wait_for_lock(request, conn, key, pid).await? {
                Some(conn) => conn,
                None => return Ok(None),
            }
        };
        // An error drops the connection unrecorded, which closes it and frees the lock.
        let token = self.next_token(&mut **conn.conn(), &request.key).await?;
        let session = Session::start(
            SessionConn::Postgres { conn: conn.into_inner(), key },
            attempt_started + request.lease,
            self.config.session_check,
            request.lost.clone(),
        );
        Ok(Some(Acquired { token, attempt_started, state: session.into_state() }))
    }

    /// Block in `pg_advisory_lock` under `lock_timeout` until the deadline; `Some` holding
    /// the lock. The wait runs in a task of its own, so it ends cleanly however it is given up:
    /// a cancellation, or this acquisition being dropped (a waiter handed the lock by another
    /// owner of this client drops its own attempt), cancels it on the server with
    /// `pg_cancel_backend`, and a connection whose wait was cancelled goes back to the pool
    /// rather than being closed, so local handoffs do not cost a new connection each.
    async fn wait_for_lock(
        &self,
        request: &AcquireRequest,
        mut conn: Unrecorded<Postgres>,
        key: i64,
        pid: i32,
    ) -> Result<Option<Unrecorded<Postgres>>> {
        // 0 disables the timeout: wait forever. set_config runs before the lock in one statement.
        let lock_timeout = format!("{}ms", wait_left(request).map_or(0, millis));
        let (shared, cancel, shown_url) = (self.shared.clone(), request.cancel.clone(), self.config.shown_url.clone());
        let wait = |abandoned: CancellationToken| async move {
            let (outcome, cancelled) = {
                let wait = sqlx::query("SELECT set_config('lock_timeout', $1, false), pg_advisory_lock($2)")
                    .bind(lock_timeout)
                    .bind(key)
                    .execute(&mut **conn.conn());
                let interrupt = || async {
                    let _ = sqlx::query("SELECT pg_cancel_backend($1)").bind(pid).execute(&shared).await;
                };
                answer_or_interrupt(wait, interrupt, &cancel, &abandoned).await
            };
            let Some(outcome) = outcome else {
                return Err(Error::backend("the database did not answer a cancelled lock wait"));
            };
            match outcome {
                Ok(_) if !cancelled => Ok(Some(conn)),
                // lock_not_available (lock_timeout) or query_canceled (our cancel). A cancel
                // can land after the lock was granted and before the statement answered, and
                // a session lock outlives the failed statement: the session gives up whatever
                // it holds before the connection goes back to the pool (unless a repeated
                // cancel fails the unlock too: then the connection is closed instead).
                Err(err) if matches!(db_code(&err).as_deref(), Some("55P03" | "57014")) => {
                    let unlocked = sqlx::query("SELECT pg_advisory_unlock_all()").execute(&mut **conn.conn()).await;
                    if unlocked.is_ok() {
                        drop(conn.into_inner());
                    }
                    Ok(None)
                }
                // Granted just before the cancel, which could still hit a later statement: the
                // connection is closed (dropped unrecorded), and the lock with it.
                Ok(_) => Ok(None),
                Err(err) => Err(map_error(&shown_url, err)),
            }
        };
        in_own_task_for_caller(wait, Err(Error::backend("the lock wait stopped with the runtime"))).await
    }

    /// Start (once) the task that turns NOTIFYs on the release channel into wake-ups.
    async fn listen(&self) {
        self.listener
            .get_or_init(|| async {
                // From the session pool, so the shared pool keeps all its connections for work.
                let pool = self.sessions.clone();
                let released = self.released.clone();
                tokio::spawn(async move {
                    loop {
                        let mut listener = match PgListener::connect_with(&pool).await {
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
                })
                .abort_handle()
            })
            .await;
    }
}

/// The lease statements, with only owned state, so an attempt can run in a task of its own:
/// a waiter handed the lock locally drops its attempt, whose statement may still land, and an
/// attempt that won for an acquirer that is gone gives the row straight back.
#[derive(Clone)]
struct LeaseTable {
    shared: PgPool,
    table: String,
    shown_url: String,
}

impl LeaseTable {
    fn err(&self, err: sqlx::Error) -> Error {
        map_error(&self.shown_url, err)
    }

    /// One ShedLock-style attempt, in one statement: take the row if it is free or expired,
    /// bump the fencing counter only if we did, and report the holder's time left otherwise.
    async fn attempt(&self, lease: Duration, name: &str, by: &str) -> Result<Attempt> {
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
        .fetch_one(&self.shared)
        .await
        .map_err(|e| self.err(e))?;
        let (token, left): (Option<i64>, Option<i64>) = (row.get(0), row.get(1));
        Ok(match token {
            Some(token) => Attempt::Acquired { token: token as u64, state: None },
            None => Attempt::Busy {
                holder_lease_left: left.filter(|ms| *ms > 0).map(|ms| Duration::from_millis(ms as u64)),
            },
        })
    }

    /// End `by`'s lease on `name` now and announce it, as a release does.
    async fn give_back(&self, name: &str, by: &str) -> Result<i64> {
        sqlx::query_scalar(&format!(
            "WITH released AS (
                 UPDATE {} SET lock_until = timezone('utc', now())
                 WHERE name = $1 AND locked_by = $2 AND lock_until > timezone('utc', now())
                 RETURNING name)
             SELECT count(pg_notify('{RELEASE_CHANNEL}', name)::text) FROM released",
            self.table
        ))
        .bind(name)
        .bind(by)
        .fetch_one(&self.shared)
        .await
        .map_err(|e| self.err(e))
    }

    /// [`LeaseTable::attempt`] in a task of its own, which gives back a row it won after the
    /// caller went away.
    async fn attempt_to_the_end(&self, lease: Duration, name: &str, by: &str) -> Result<Attempt> {
        let (table, name, by) = (self.clone(), name.to_string(), by.to_string());
        let attempt = |abandoned: CancellationToken| async move {
            let attempt = table.attempt(lease, &name, &by).await;
            if abandoned.is_cancelled() && matches!(attempt, Ok(Attempt::Acquired { .. })) {
                let _ = table.give_back(&name, &by).await;
            }
            attempt
        };
        in_own_task_for_caller(attempt, Err(Error::backend("a lease attempt stopped with the runtime"))).await
    }
}

impl Drop for PgBackend {
    /// A client dropped without `close()` must not leave its LISTEN task running.
    fn drop(&mut self) {
        if let Some(listener) = self.listener.get() {
            listener.abort();
        }
    }
}

#[async_trait]
impl HoldStore for PgBackend {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Option<Acquired>> {
        match request.kind {
            LockKind::Lease => {
                self.listen().await;
                let name = lease_name(&request.key);
                let by = locked_by(&request.owner);
                let mut wakeups = self.released.subscribe();
                acquire_by_attempts(request, LEASE_FALLBACK, &mut wakeups, || {
                    self.lease_table.attempt_to_the_end(request.lease, &name, &by)
                })
                .await
            }
            _ => self.acquire_session(request).await,
        }
    }

    async fn renew(&self, held: &HeldLock, lease: Duration) -> Result<Renewal> {
        if held.kind != LockKind::Lease {
            return Ok(Session::renew_held(held, lease).await);
        }
        let updated = sqlx::query(&format!(
            "UPDATE {} SET lock_until = timezone('utc', now()) + $3 * interval '1 millisecond'
             WHERE name = $1 AND locked_by = $2 AND lock_until > timezone('utc', now())",
            self.table
        ))
        .bind(lease_name(&held.key))
        .bind(locked_by(&held.owner))
        .bind(millis(lease) as f64)
        .execute(&self.shared)
        .await
        .map_err(|e| self.err(e))?;
        Ok(if updated.rows_affected() == 1 { Renewal::Renewed } else { Renewal::Gone })
    }

    /// A session lock stays with its connection, which draws the token set aside; a lease
    /// lock's ShedLock row is rewritten to the new owner and the counter bumped in one
    /// statement, so the row never looks free to anyone in between.
    async fn transfer(
        &self,
        from: &HeldLock,
        to: Owner,
        lease: Duration,
        lost: &LostNotifier,
    ) -> Result<Option<Acquired>> {
        let attempt_started = Instant::now();
        if from.kind != LockKind::Lease {
            let token = Session::transfer_held(from, from.key.clone(), lease, lost).await.map_err(|e| self.err(e))?;
            return Ok(token.map(|token| Acquired { token, attempt_started, state: from.state.clone() }));
        }
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
        .bind(lease_name(&from.key))
        .bind(locked_by(&from.owner))
        .bind(locked_by(&to))
        .bind(millis(lease) as f64)
        .fetch_one(&self.shared)
        .await
        .map_err(|e| self.err(e))?;
        Ok(token.map(|token| Acquired { token: token as u64, attempt_started, state: None }))
    }

    /// Waiters for a session lock queue in the server (`pg_advisory_lock`), which
    /// grants it to the oldest when it is released.
    fn grants_in_order(&self, kind: LockKind) -> bool {
        kind == LockKind::Reentrant
    }

    fn transfers(&self, kind: LockKind) -> bool {
        matches!(kind, LockKind::Reentrant | LockKind::Lease)
    }

    /// Every acquisition draws two tokens and issues the first; a transfer draws one.
    fn reserves_next_token(&self, kind: LockKind) -> bool {
        self.transfers(kind)
    }

    async fn release(&self, held: &HeldLock, holds_left: u32) -> Result<Release> {
        if held.kind != LockKind::Lease {
            return Ok(Session::release_held(held, holds_left).await);
        }
        let (name, by) = (lease_name(&held.key), locked_by(&held.owner));
        let still_ours: i64 = if holds_left > 0 {
            sqlx::query_scalar(&format!(
                "SELECT count(*) FROM {} WHERE name = $1 AND locked_by = $2 AND lock_until > timezone('utc', now())",
                self.table
            ))
            .bind(&name)
            .bind(&by)
            .fetch_one(&self.shared)
            .await
            .map_err(|e| self.err(e))?
        } else {
            // Like ShedLock's unlock, the row stays with lock_until = now; only ours is touched.
            let released = self.lease_table.give_back(&name, &by).await?;
            self.released.send_modify(|n| *n = n.wrapping_add(1));
            released
        };
        Ok(if still_ours == 1 { Release::Released } else { Release::Gone })
    }

    async fn is_locked(&self, key: &str, kind: LockKind) -> Result<bool> {
        self.remaining_lease(key, kind).await.map(|left| left.is_some())
    }

    /// A lease lock's time left is its ShedLock row's `lock_until`; a session lock has no
    /// expiry in the database (its holder's lease is kept by the holder's client), so a held
    /// one answers `Duration::MAX`.
    async fn remaining_lease(&self, key: &str, kind: LockKind) -> Result<Option<Duration>> {
        if kind != LockKind::Lease {
            // objsubid 1 is the one-bigint form of pg_advisory_lock; advisory locks are per database.
            let held: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
                   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                   AND ((classid::bigint << 32) | objid::bigint) = ($1::bigint & x'ffffffffffffffff'::bigint))",
            )
            .bind(postgres_advisory_key(key))
            .fetch_one(&self.shared)
            .await
            .map_err(|e| self.err(e))?;
            return Ok(held.then_some(Duration::MAX));
        }
        let left: Option<i64> = sqlx::query_scalar(&format!(
            "SELECT (extract(epoch FROM lock_until - timezone('utc', now())) * 1000)::bigint FROM {} WHERE name = $1",
            self.table
        ))
        .bind(lease_name(key))
        .fetch_optional(&self.shared)
        .await
        .map_err(|e| self.err(e))?
        .flatten();
        Ok(left.filter(|ms| *ms > 0).map(|ms| Duration::from_millis(ms as u64)))
    }

    /// Ends a lease lock's row now, as a release would, and wakes waiters in every process;
    /// refused for session locks (see `session_force_unlock_refused`).
    async fn force_unlock(&self, key: &str, kind: LockKind) -> Result<bool> {
        if kind != LockKind::Lease {
            return Err(session_force_unlock_refused("PostgreSQL"));
        }
        let forced: i64 = sqlx::query_scalar(&format!(
            "WITH forced AS (
                 UPDATE {} SET lock_until = timezone('utc', now())
                 WHERE name = $1 AND lock_until > timezone('utc', now())
                 RETURNING name)
             SELECT count(pg_notify('{RELEASE_CHANNEL}', name)::text) FROM forced",
            self.table
        ))
        .bind(lease_name(key))
        .fetch_one(&self.shared)
        .await
        .map_err(|e| self.err(e))?;
        self.released.send_modify(|n| *n = n.wrapping_add(1));
        Ok(forced == 1)
    }
}

#[async_trait]
impl Store for PgBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities::locks_only("postgres", &[LockKind::Reentrant, LockKind::Lease])
    }

    fn locks(self: Arc<Self>) -> Arc<ExclusiveStore> {
        self
    }

    async fn close(&self) {
        if let Some(listener) = self.listener.get() {
            listener.abort();
        }
        self.sessions.close().await;
        self.shared.close().await;
    }
}
