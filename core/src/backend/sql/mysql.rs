//! MySQL and MariaDB: session locks with `GET_LOCK`, lease locks on ShedLock's table. MySQL
//! has no NOTIFY, so lease waiters back off with jitter, bounded by the holder's
//! `lock_until`, and are woken at once by releases within their own process.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions};
use sqlx::{MySql, Row};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::errors::{map_error, mysql_number};
use super::session::{Session, SessionConn, Unrecorded};
use super::{
    answer_or_interrupt, in_own_task_for_caller, locked_by, session_connection, session_force_unlock_refused, try_once,
    wait_left_until, SqlConfig,
};
use crate::backend::poll::{acquire_by_attempts, Attempt, Backoff};
use crate::error::{Error, Result};
use crate::owner::Owner;
use crate::spi::{
    AcquireRequest, Acquired, Capabilities, ExclusiveStore, HeldLock, HoldStore, Release, Renewal, Store,
};
use crate::spi::{LockKind, LostNotifier};
use crate::url::ConnectUrl;
use polylock_id::sql_names::{lease_name, mysql_lock_name};

/// sqlx's own MySQL URL options that polylock passes through.
const SQLX_OPTIONS: &[&str] = &[
    "ssl-mode",
    "sslmode",
    "ssl-ca",
    "sslca",
    "ssl-cert",
    "sslcert",
    "ssl-key",
    "sslkey",
    "charset",
    "collation",
    "socket",
    "timezone",
    "statement-cache-capacity",
];

const LEASE_BACKOFF: Backoff = Backoff { min: Duration::from_millis(2), max: Duration::from_millis(100) };

const ER_DUP_ENTRY: u16 = 1062;

const FOREVER_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

pub(crate) struct MySqlBackend {
    lease_table: LeaseTable,
    shared: MySqlPool,
    sessions: MySqlPool,
    config: SqlConfig,
    table: String,
    released: watch::Sender<u64>,
}

/// Whether a lock wait ended because it was interrupted (`KILL QUERY`): error 1317, or NULL.
fn interrupted(outcome: &std::result::Result<Option<i64>, sqlx::Error>) -> bool {
    match outcome {
        Ok(got) => got.is_none(),
        Err(err) => mysql_number(err) == Some(1317),
    }
}

impl MySqlBackend {
    pub(crate) async fn open(url: &mut ConnectUrl) -> Result<Self> {
        let config = SqlConfig::from_url(url, "mysql", SQLX_OPTIONS)?;
        let options = MySqlConnectOptions::from_str(&config.sqlx_url).map_err(|e| map_error(&config.shown_url, e))?;
        super::probe(&options, &config).await?;
        let shared = MySqlPoolOptions::new()
            .max_connections(config.pool_size)
            .acquire_timeout(config.connect_timeout)
            .connect_lazy_with(options.clone());
        let sessions = MySqlPoolOptions::new()
            .max_connections(config.max_sessions)
            .min_connections(0)
            .idle_timeout(Duration::from_secs(60))
            .acquire_timeout(config.connect_timeout)
            .connect_lazy_with(options);
        let table = config.table.clone();
        let lease_table =
            LeaseTable { shared: shared.clone(), table: table.clone(), shown_url: config.shown_url.clone() };
        let backend = MySqlBackend { lease_table, shared, sessions, config, table, released: watch::channel(0).0 };
        backend.create_schema().await?;
        Ok(backend)
    }

    fn err(&self, err: sqlx::Error) -> Error {
        map_error(&self.config.shown_url, err)
    }

    async fn create_schema(&self) -> Result<()> {
        let statements = [
            "CREATE TABLE IF NOT EXISTS polylock_fencing (name VARCHAR(64) NOT NULL PRIMARY KEY, token BIGINT NOT NULL)"
                .to_string(),
            // ShedLock's documented MySQL schema.
            format!(
                "CREATE TABLE IF NOT EXISTS {}(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NOT NULL, \
                 locked_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), locked_by VARCHAR(255) NOT NULL, \
                 PRIMARY KEY (name))",
                self.table
            ),
        ];
        for statement in statements {
            sqlx::query(&statement).execute(&self.shared).await.map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    async fn acquire_session(&self, request: &AcquireRequest) -> Result<Option<Acquired>> {
        let name = mysql_lock_name(&request.key);
        let Some(conn) =
            session_connection(&self.sessions, request, self.config.max_sessions).await.map_err(|e| self.err(e))?
        else {
            return Ok(None);
        };
        // Until a session records the lock, dropping this acquisition closes the connection.
        let mut conn = Unrecorded::new(conn);
        let attempt_started = Instant::now();
        let row = sqlx::query("SELECT GET_LOCK(?, 0), CONNECTION_ID()")
            .bind(&name)
            .fetch_one(&mut **conn.conn())
            .await
            .map_err(|e| self.err(e))?;
        let (got, connection_id): (Option<i64>, u64) = (row.get(0), row.get(1));
        let mut conn = if got == Some(1) {
            conn
        } else if try_once(request) || request.cancel.is_cancelled() {
            drop(conn.into_inner()); // holds nothing: back to the pool
            return Ok(None);
        } else {
            match self.wait_for_lock(request, conn, &name, connection_id).await? {
                Some(conn) => conn,
                None => return Ok(None),
            }
        };
        // An error drops the connection unrecorded, which closes it and frees the lock.
        let token = self.lease_table.next_token(&mut **conn.conn(), &name).await?;
        let session = Session::start(
            SessionConn::MySql { conn: conn.into_inner(), name },
            attempt_started + request.lease,
            self.config.session_check,
            request.lost.clone(),
        );
        Ok(Some(Acquired { token, attempt_started, state: session.into_state() }))
    }

    /// Block in `GET_LOCK(name, timeout)` until the deadline; `Some` holding the lock. The
    /// wait runs in a task of its own, so it ends cleanly however it is given up: a
    /// cancellation, or this acquisition being dropped (a waiter handed the lock by another
    /// owner of this client drops its own attempt), interrupts it with `KILL QUERY`, and a
    /// connection whose wait was interrupted goes back to the pool rather than being closed.
    async fn wait_for_lock(
        &self,
        request: &AcquireRequest,
        mut conn: Unrecorded<MySql>,
        name: &str,
        connection_id: u64,
    ) -> Result<Option<Unrecorded<MySql>>> {
        let forever = request.deadline.is_none();
        let (shared, cancel, shown_url) = (self.shared.clone(), request.cancel.clone(), self.config.shown_url.clone());
        let (deadline, name) = (request.deadline, name.to_string());
        let wait = |abandoned: CancellationToken| async move {
            loop {
                // MariaDB answers NULL to a negative ("forever") timeout: a year it is, asked
                // again if it ever runs out.
                let seconds = match deadline {
                    Some(deadline) => wait_left_until(deadline).as_secs_f64(),
                    None => FOREVER_SECONDS,
                };
                let (outcome, cancelled) = {
                    let wait = sqlx::query_scalar::<_, Option<i64>>("SELECT GET_LOCK(?, ?)")
                        .bind(&name)
                        .bind(seconds)
                        .fetch_one(&mut **conn.conn());
                    let kill = format!("KILL QUERY {connection_id}");
                    let interrupt = || async {
                        let _ = sqlx::query(&kill).execute(&shared).await;
                    };
                    answer_or_interrupt(wait, interrupt, &cancel, &abandoned).await
                };
                let Some(outcome) = outcome else {
                    return Err(Error::backend("the database did not answer a cancelled lock wait"));
                };
                return match outcome {
                    Ok(Some(1)) if !cancelled => Ok(Some(conn)),
                    Ok(Some(0)) if !cancelled && forever => continue,
                    Ok(Some(0)) if !cancelled => {
                        drop(conn.into_inner()); // timed out holding nothing: back to the pool
                        Ok(None)
                    }
                    // Interrupted by our KILL QUERY (1317, or NULL on some versions). The kill
                    // can land after the lock was granted, and the lock outlives the
                    // interrupted statement: the session gives it up before the connection
                    // goes back to the pool (closed instead if a repeated kill fails that too).
                    _ if cancelled && interrupted(&outcome) => {
                        let released =
                            sqlx::query("SELECT RELEASE_LOCK(?)").bind(&name).execute(&mut **conn.conn()).await;
                        if released.is_ok() {
                            drop(conn.into_inner());
                        }
                        Ok(None)
                    }
                    // Granted (or ended) just before the kill, which could still hit a later
                    // statement: the connection is closed (dropped unrecorded), the lock with it.
                    Ok(_) => Ok(None),
                    Err(err) => Err(map_error(&shown_url, err)),
                };
            }
        };
        in_own_task_for_caller(wait, Err(Error::backend("the lock wait stopped with the runtime"))).await
    }
}

/// The statements on the shared pool that need only owned state, so a lease attempt can run
/// in a task of its own: a waiter handed the lock locally drops its attempt, and a MySQL
/// statement dropped half way leaves its connection out of step (sqlx's check on returning
/// it to the pool then waits for ever, and the pool runs dry).
#[derive(Clone)]
struct LeaseTable {
    shared: MySqlPool,
    table: String,
    shown_url: String,
}

impl LeaseTable {
    fn err(&self, err: sqlx::Error) -> Error {
        map_error(&self.shown_url, err)
    }

    /// Draw two tokens from the fencing counter of `name`, while the lock is held, and return
    /// the first: the second is set aside for the owner the hold may be handed to (see
    /// `transfer`). A new name starts at 2, issuing 1. LAST_INSERT_ID(x) makes the new value
    /// the statement's insert id, so this is one round trip.
    async fn next_token<'e, E: sqlx::MySqlExecutor<'e>>(&self, executor: E, name: &str) -> Result<u64> {
        let done = sqlx::query(
            "INSERT INTO polylock_fencing (name, token) VALUES (?, LAST_INSERT_ID(2))
             ON DUPLICATE KEY UPDATE token = LAST_INSERT_ID(token + 2)",
        )
        .bind(name)
        .execute(executor)
        .await
        .map_err(|e| self.err(e))?;
        Ok(done.last_insert_id() - 1)
    }

    /// One ShedLock-style attempt: take an expired row, else insert a new one; bump the
    /// fencing counter only once the row is ours. Once a name has a row and a counter (every
    /// acquisition after its first), taking the row and drawing the tokens is one statement,
    /// and a busy lock costs one more read.
    async fn attempt(&self, lease: Duration, name: &str, by: &str) -> Result<Attempt> {
        let table = &self.table;
        let micros = i64::try_from(lease.as_micros()).unwrap_or(i64::MAX);
        let taken = sqlx::query(&format!(
            "UPDATE {table} AS s JOIN polylock_fencing AS f ON f.name = s.name
             SET s.lock_until = UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND,
                 s.locked_at = UTC_TIMESTAMP(3), s.locked_by = ?,
                 f.token = LAST_INSERT_ID(f.token + 2)
             WHERE s.name = ? AND s.lock_until <= UTC_TIMESTAMP(3)"
        ))
        .bind(micros)
        .bind(by)
        .bind(name)
        .execute(&self.shared)
        .await
        .map_err(|e| self.err(e))?;
        if taken.rows_affected() > 0 && taken.last_insert_id() > 0 {
            return Ok(Attempt::Acquired { token: taken.last_insert_id() - 1, state: None });
        }
        let left: Option<Option<i64>> = sqlx::query_scalar(&format!(
            "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), lock_until) FROM {table} WHERE name = ?"
        ))
        .bind(name)
        .fetch_optional(&self.shared)
        .await
        .map_err(|e| self.err(e))?;
        match left {
            Some(Some(us)) if us > 0 => Ok(Attempt::Busy { holder_lease_left: Some(Duration::from_micros(us as u64)) }),
            // No row yet, no counter yet, or it expired just now: the long way.
            _ => self.first_attempt(micros, name, by).await,
        }
    }

    /// An attempt on a name without a row or a counter: take the row if it is expired, else
    /// insert it, then draw the tokens.
    async fn first_attempt(&self, micros: i64, name: &str, by: &str) -> Result<Attempt> {
        let table = &self.table;
        let taken = sqlx::query(&format!(
            "UPDATE {table} SET lock_until = UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND,
                 locked_at = UTC_TIMESTAMP(3), locked_by = ?
             WHERE name = ? AND lock_until <= UTC_TIMESTAMP(3)"
        ))
        .bind(micros)
        .bind(by)
        .bind(name)
        .execute(&self.shared)
        .await
        .map_err(|e| self.err(e))?
        .rows_affected()
            == 1;
        let won = taken || {
            let inserted = sqlx::query(&format!(
                "INSERT INTO {table} (name, lock_until, locked_at, locked_by)
                 VALUES (?, UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND, UTC_TIMESTAMP(3), ?)"
            ))
            .bind(name)
            .bind(micros)
            .bind(by)
            .execute(&self.shared)
            .await;
            match inserted {
                Ok(_) => true,
                Err(err) if mysql_number(&err) == Some(ER_DUP_ENTRY) => false,
                Err(err) => return Err(self.err(err)),
            }
        };
        if won {
            return match self.next_token(&self.shared, name).await {
                Ok(token) => Ok(Attempt::Acquired { token, state: None }),
                Err(err) => {
                    let _ = self.give_back_lease(name, by).await;
                    Err(err)
                }
            };
        }
        let left: Option<i64> = sqlx::query_scalar(&format!(
            "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), lock_until) FROM {table} WHERE name = ?"
        ))
        .bind(name)
        .fetch_optional(&self.shared)
        .await
        .map_err(|e| self.err(e))?
        .flatten();
        Ok(Attempt::Busy { holder_lease_left: left.filter(|us| *us > 0).map(|us| Duration::from_micros(us as u64)) })
    }

    /// [`LeaseTable::attempt`] in a task of its own, which gives back a row it won after the
    /// caller went away.
    async fn attempt_to_the_end(&self, lease: Duration, name: &str, by: &str) -> Result<Attempt> {
        let (table, name, by) = (self.clone(), name.to_string(), by.to_string());
        let attempt = |abandoned: CancellationToken| async move {
            let attempt = table.attempt(lease, &name, &by).await;
            if abandoned.is_cancelled() && matches!(attempt, Ok(Attempt::Acquired { .. })) {
                let _ = table.give_back_lease(&name, &by).await;
            }
            attempt
        };
        in_own_task_for_caller(attempt, Err(Error::backend("a lease attempt stopped with the runtime"))).await
    }

    /// End our lease on `name` now (the row stays, as ShedLock leaves it). True if it was ours.
    async fn give_back_lease(&self, name: &str, by: &str) -> Result<bool> {
        let done = sqlx::query(&format!(
            "UPDATE {} SET lock_until = UTC_TIMESTAMP(3)
             WHERE name = ? AND locked_by = ? AND lock_until > UTC_TIMESTAMP(3)",
            self.table
        ))
        .bind(name)
        .bind(by)
        .execute(&self.shared)
        .await
        .map_err(|e| self.err(e))?;
        Ok(done.rows_affected() == 1)
    }
}

#[async_trait]
impl HoldStore for MySqlBackend {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Option<Acquired>> {
        match request.kind {
            LockKind::Lease => {
                let name = lease_name(&request.key);
                let by = locked_by(&request.owner);
                let mut wakeups = self.released.subscribe();
                acquire_by_attempts(request, LEASE_BACKOFF, &mut wakeups, || {
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
        let micros = i64::try_from(lease.as_micros()).unwrap_or(i64::MAX);
        let done = sqlx::query(&format!(
            "UPDATE {} SET lock_until = UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND
             WHERE name = ? AND locked_by = ? AND lock_until > UTC_TIMESTAMP(3)",
            self.table
        ))
        .bind(micros)
        .bind(lease_name(&held.key))
        .bind(locked_by(&held.owner))
        .execute(&self.shared)
        .await
        .map_err(|e| self.err(e))?;
        Ok(if done.rows_affected() == 1 { Renewal::Renewed } else { Renewal::Gone })
    }

    /// A session lock stays with its connection, which draws the token set aside; a lease
    /// lock's ShedLock row is rewritten to the new owner and the counter bumped in one
    /// statement, so the row never looks free to anyone in between, and a transfer cut off
    /// half way changes nothing.
    async fn transfer(
        &self,
        from: &HeldLock,
        to: Owner,
        lease: Duration,
        lost: &LostNotifier,
    ) -> Result<Option<Acquired>> {
        let attempt_started = Instant::now();
        if from.kind != LockKind::Lease {
            let token =
                Session::transfer_held(from, mysql_lock_name(&from.key), lease, lost).await.map_err(|e| self.err(e))?;
            return Ok(token.map(|token| Acquired { token, attempt_started, state: from.state.clone() }));
        }
        let (name, from_by, to_by) = (lease_name(&from.key), locked_by(&from.owner), locked_by(&to));
        let micros = i64::try_from(lease.as_micros()).unwrap_or(i64::MAX);
        // One statement, so one round trip and atomic under autocommit: the row moves and the
        // counter steps only together. LAST_INSERT_ID(x) makes the new counter the statement's
        // insert id; it stays 0 when no row matched.
        let moved = sqlx::query(&format!(
            "UPDATE {} AS s JOIN polylock_fencing AS f ON f.name = s.name
             SET s.locked_by = ?, s.locked_at = UTC_TIMESTAMP(3),
                 s.lock_until = UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND,
                 f.token = LAST_INSERT_ID(f.token + 1)
             WHERE s.name = ? AND s.locked_by IN (?, ?) AND s.lock_until > UTC_TIMESTAMP(3)",
            self.table
        ))
        .bind(&to_by)
        .bind(micros)
        .bind(&name)
        .bind(&from_by)
        .bind(&to_by)
        .execute(&self.shared)
        .await
        .map_err(|e| self.err(e))?;
        if moved.rows_affected() == 0 || moved.last_insert_id() == 0 {
            return Ok(None);
        }
        Ok(Some(Acquired { token: moved.last_insert_id() - 1, attempt_started, state: None }))
    }

    /// Waiters for a session lock queue in the server (`GET_LOCK`, a metadata lock), which
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
        let ours = if holds_left > 0 {
            let count: i64 = sqlx::query_scalar(&format!(
                "SELECT COUNT(*) FROM {} WHERE name = ? AND locked_by = ? AND lock_until > UTC_TIMESTAMP(3)",
                self.table
            ))
            .bind(&name)
            .bind(&by)
            .fetch_one(&self.shared)
            .await
            .map_err(|e| self.err(e))?;
            count == 1
        } else {
            let ours = self.lease_table.give_back_lease(&name, &by).await?;
            self.released.send_modify(|n| *n = n.wrapping_add(1));
            ours
        };
        Ok(if ours { Release::Released } else { Release::Gone })
    }

    async fn is_locked(&self, key: &str, kind: LockKind) -> Result<bool> {
        self.remaining_lease(key, kind).await.map(|left| left.is_some())
    }

    /// A lease lock's time left is its ShedLock row's `lock_until`; a session lock has no
    /// expiry in the database (its holder's lease is kept by the holder's client), so a held
    /// one answers `Duration::MAX`.
    async fn remaining_lease(&self, key: &str, kind: LockKind) -> Result<Option<Duration>> {
        if kind != LockKind::Lease {
            let holder: Option<i64> = sqlx::query_scalar("SELECT IS_USED_LOCK(?)")
                .bind(mysql_lock_name(key))
                .fetch_one(&self.shared)
                .await
                .map_err(|e| self.err(e))?;
            return Ok(holder.map(|_| Duration::MAX));
        }
        let left: Option<i64> = sqlx::query_scalar(&format!(
            "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), lock_until) FROM {} WHERE name = ?",
            self.table
        ))
        .bind(lease_name(key))
        .fetch_optional(&self.shared)
        .await
        .map_err(|e| self.err(e))?
        .flatten();
        Ok(left.filter(|us| *us > 0).map(|us| Duration::from_micros(us as u64)))
    }

    /// Ends a lease lock's row now, as a release would, and wakes this process's waiters
    /// (others find it at their next attempt); refused for session locks (see
    /// `session_force_unlock_refused`).
    async fn force_unlock(&self, key: &str, kind: LockKind) -> Result<bool> {
        if kind != LockKind::Lease {
            return Err(session_force_unlock_refused("MySQL/MariaDB"));
        }
        let done = sqlx::query(&format!(
            "UPDATE {} SET lock_until = UTC_TIMESTAMP(3) WHERE name = ? AND lock_until > UTC_TIMESTAMP(3)",
            self.table
        ))
        .bind(lease_name(key))
        .execute(&self.shared)
        .await
        .map_err(|e| self.err(e))?;
        self.released.send_modify(|n| *n = n.wrapping_add(1));
        Ok(done.rows_affected() == 1)
    }
}

#[async_trait]
impl Store for MySqlBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities::locks_only("mysql", &[LockKind::Reentrant, LockKind::Lease])
    }

    fn locks(self: Arc<Self>) -> Arc<ExclusiveStore> {
        self
    }

    async fn close(&self) {
        self.sessions.close().await;
        self.shared.close().await;
    }
}
