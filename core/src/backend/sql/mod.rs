//! `postgres://` / `postgresql://` and `mysql://` / `mariadb://`: locks for teams whose only
//! shared infrastructure is a database, through sqlx.
//!
//! Two kinds:
//! - `Reentrant` (the default) is the database's own session lock: `pg_advisory_lock` on
//!   PostgreSQL, `GET_LOCK` on MySQL/MariaDB. It is held by a dedicated connection for as
//!   long as the hold lasts, so a crashed process frees it the moment its connection drops.
//!   Waiting is the server's own blocking call (bounded by `lock_timeout` / `GET_LOCK`'s
//!   timeout); cancelling sends the server a cancel (`pg_cancel_backend` / `KILL QUERY`).
//!   A background check pings the connection every `session_check` (default 1s): a killed
//!   session or a dropped connection marks the guard lost.
//! - `Lease` is ShedLock's table (`shedlock(name, lock_until, locked_at, locked_by)`), with
//!   the database's clock, so a Java job scheduled with ShedLock and a polylock lease lock
//!   on the same name exclude each other. Renewals learn of loss, as on SQLite.
//!
//! Queries: `is_locked` and `remaining_lease` read `pg_locks` / `IS_USED_LOCK` for session
//! locks (held ones answer `Duration::MAX`: the database keeps no expiry for them) and the
//! ShedLock row's `lock_until` for lease locks. `force_unlock` ends a lease row now; on a
//! session lock it is refused with a typed error, as it would mean ending another client's
//! database session.
//!
//! Both kinds take a fencing token from `polylock_fencing(name, token)`, bumped while the lock
//! is already held, so tokens grow in the order the lock was granted. Each acquisition draws
//! two (the counter goes up by 2, a new name starts at 2) and issues the first; the second is
//! set aside for a local handoff.
//!
//! Local handoffs (lock/handoff.rs; both kinds): when an owner releases a lock another owner
//! of the same client waits for, the lock moves without ever being free. A session lock stays
//! on its connection (the new owner's hold carries the same session), which draws the token
//! set aside (`UPDATE polylock_fencing SET token = token + 1`) on that very connection, so a
//! killed session fails the transfer instead of handing on a lock it lost; a failed transfer
//! closes the connection, which frees the lock. A lease lock's ShedLock row is rewritten to
//! the new owner (`locked_by`, `locked_at`, `lock_until` from the database clock, only while
//! it is still the old owner's and live) with the counter bump, in one statement. The new
//! owner starts at once with the reserved token; a transfer that finds the hold gone marks it
//! lost, and whoever holds the lock then has a greater token. A session lock's connection
//! check reports to the owner the lock moved to. A waiter handed the lock drops its own store
//! attempt: a blocked `pg_advisory_lock` / `GET_LOCK` is cancelled on the server (and anything
//! it was granted meanwhile given up) before its connection goes back to the pool, and a lease
//! attempt runs to its end in a task of its own and gives back a row it won for nobody. The
//! servers queue session-lock waiters and grant the oldest (`Backend::grants_in_order`), so a
//! run of handoffs on a session lock ends with a plain release.
//!
//! Connections: a shared pool (`pool_size`, default 4) for lease statements, fencing and
//! cancels, and a session pool (up to `max_sessions`, default 64) from which each held *or
//! waiting* session lock takes one connection. N held session locks therefore cost N
//! connections plus the shared pool, and waiters never take connections from other work.
//! Released session connections go back to the session pool for the next lock. On PostgreSQL,
//! the first lease lock also takes one session-pool connection for `LISTEN polylock_release`.
//!
//! URL options (besides `namespace` and `lease`): `pool_size`, `max_sessions`,
//! `session_check`, `connect_timeout` (default 10s), `table` (ShedLock table, default
//! `shedlock`), and sqlx's own TLS and connection options (`sslmode`, `sslrootcert`,
//! `sslcert`, `sslkey`, `application_name`, `options` on PostgreSQL; `ssl-mode`, `ssl-ca`,
//! `ssl-cert`, `ssl-key`, `charset`, `collation`, `socket`, `timezone` on MySQL).

mod errors;
#[cfg(feature = "mysql")]
mod mysql;
#[cfg(feature = "postgres")]
mod postgres;
mod session;

use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::spi::AcquireRequest;
use crate::url::ConnectUrl;

#[cfg(feature = "mysql")]
pub(crate) use mysql::MySqlBackend;
#[cfg(feature = "postgres")]
pub(crate) use postgres::PgBackend;

/// The options every SQL backend reads from its URL.
pub(crate) struct SqlConfig {
    /// The URL sqlx connects with: scheme, credentials, host, database and sqlx's options.
    pub sqlx_url: String,
    /// The same, redacted, for messages.
    pub shown_url: String,
    pub pool_size: u32,
    pub max_sessions: u32,
    pub session_check: Duration,
    pub connect_timeout: Duration,
    pub table: String,
}

impl SqlConfig {
    pub fn from_url(url: &mut ConnectUrl, sqlx_scheme: &str, sqlx_options: &[&str]) -> Result<SqlConfig> {
        let count = |url: &mut ConnectUrl, key: &str, default: u32| -> Result<u32> {
            match url.take_option(key) {
                None => Ok(default),
                Some(text) => text.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    Error::invalid_argument(format!("URL option '{key}' must be a positive whole number, got '{text}'"))
                }),
            }
        };
        let pool_size = count(url, "pool_size", 4)?;
        let max_sessions = count(url, "max_sessions", 64)?;
        let session_check = url.take_duration("session_check")?.unwrap_or(Duration::from_secs(1));
        let connect_timeout = url.take_duration("connect_timeout")?.unwrap_or(Duration::from_secs(10));
        for (key, value) in [("session_check", session_check), ("connect_timeout", connect_timeout)] {
            if value.is_zero() {
                return Err(Error::invalid_argument(format!("URL option '{key}' must be longer than zero")));
            }
        }
        let table = url.take_option("table").unwrap_or_else(|| "shedlock".to_string());
        let valid_table = !table.is_empty()
            && table.len() <= 63
            && table.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_table {
            return Err(Error::invalid_argument(format!(
                "URL option 'table' must be a plain SQL identifier (letters, digits, _), got '{table}'"
            )));
        }
        let mut passed = form_urlencoded::Serializer::new(String::new());
        let mut any = false;
        for key in sqlx_options {
            if let Some(value) = url.take_option(key) {
                passed.append_pair(key, &value);
                any = true;
            }
        }
        let target = url.target();
        if target.is_empty() || target.starts_with('/') {
            return Err(Error::invalid_argument(format!(
                "{} needs a server, such as {}://user:password@host:port/database",
                url.redacted(),
                url.scheme()
            )));
        }
        let query = if any { format!("?{}", passed.finish()) } else { String::new() };
        Ok(SqlConfig {
            sqlx_url: format!("{sqlx_scheme}://{target}{query}"),
            shown_url: crate::url::redact(&format!("{}://{target}", url.scheme())),
            pool_size,
            max_sessions,
            session_check,
            connect_timeout,
            table,
        })
    }
}

/// Open and close one connection, so a bad host, password or database is reported at
/// connect time with the server's own reason (a pool would only time out).
pub(crate) async fn probe<O>(options: &O, config: &SqlConfig) -> Result<()>
where
    O: sqlx::ConnectOptions,
    O::Connection: Sized,
{
    use sqlx::Connection;
    match tokio::time::timeout(config.connect_timeout, options.connect()).await {
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
            Ok(())
        }
        Ok(Err(err)) => Err(errors::map_error(&config.shown_url, err)),
        Err(_) => Err(Error::connection(format!(
            "cannot reach the database at {} within {}ms (connect_timeout)",
            config.shown_url,
            config.connect_timeout.as_millis()
        ))),
    }
}

/// A connection for a session lock. An idle one is taken at once; opening a new one is not
/// part of the wait (a try-once must not fail because the pool was cold), so only
/// cancellation and `connect_timeout` bound it; waiting for a full pool (`max_sessions`
/// connections held or waiting) is, and ends at the request's deadline.
pub(crate) async fn session_connection<DB: sqlx::Database>(
    pool: &sqlx::Pool<DB>,
    request: &AcquireRequest,
    max_sessions: u32,
) -> std::result::Result<Option<sqlx::pool::PoolConnection<DB>>, sqlx::Error> {
    if let Some(conn) = pool.try_acquire() {
        return Ok(Some(conn));
    }
    let deadline = async {
        match request.deadline {
            Some(deadline) if pool.size() >= max_sessions => tokio::time::sleep_until(deadline).await,
            _ => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        conn = pool.acquire() => conn.map(Some),
        _ = request.cancel.cancelled() => Ok(None),
        _ = deadline => Ok(None),
    }
}

/// The time left before the deadline for a server-side wait, or `None` to wait forever.
/// Rounded up to whole milliseconds plus one, so a server timer (lock_timeout takes whole
/// milliseconds) never ends the wait before the caller's deadline.
#[cfg(feature = "postgres")]
pub(crate) fn wait_left(request: &AcquireRequest) -> Option<Duration> {
    request.deadline.map(wait_left_until)
}

/// [`wait_left`] for a known deadline.
pub(crate) fn wait_left_until(deadline: Instant) -> Duration {
    let left = deadline.saturating_duration_since(Instant::now());
    let whole_ms = left.as_nanos().div_ceil(1_000_000);
    Duration::from_millis(u64::try_from(whole_ms).unwrap_or(u64::MAX / 2).saturating_add(1))
}

/// Run `step` in a task of its own, so it always runs to its end: a statement dropped half
/// way leaves its reply unread on the connection (the next statement would read it as its
/// own answer), and on MySQL leaves the connection out of step (sqlx's check on returning it
/// to the pool then waits for ever). `if_interrupted` is the answer if the runtime shuts down
/// first.
pub(crate) async fn in_own_task<T: Send + 'static>(
    step: impl std::future::Future<Output = T> + Send + 'static,
    if_interrupted: T,
) -> T {
    tokio::spawn(step).await.unwrap_or(if_interrupted)
}

/// [`in_own_task`] for a step that must know whether its caller went away meanwhile (a waiter
/// handed the lock locally drops its own attempt): `step` gets a token that fires when the
/// caller drops this future, to interrupt a wait on the server or give back what it won for
/// nobody.
pub(crate) async fn in_own_task_for_caller<T, F>(
    step: impl FnOnce(tokio_util::sync::CancellationToken) -> F,
    if_interrupted: T,
) -> T
where
    T: Send + 'static,
    F: std::future::Future<Output = T> + Send + 'static,
{
    let abandoned = tokio_util::sync::CancellationToken::new();
    let _abandon_when_dropped = abandoned.clone().drop_guard();
    in_own_task(step(abandoned), if_interrupted).await
}

/// How long a lock wait interrupted on the server has to answer before its connection is
/// given up.
const INTERRUPTED_ANSWER_LIMIT: Duration = Duration::from_secs(5);

/// How long an interrupted lock wait gets to answer before the interrupt is sent again.
const INTERRUPT_REPEAT: Duration = Duration::from_millis(100);

/// The answer of a blocking lock statement (`wait`), unless the caller cancels or the
/// acquisition is dropped (`abandoned`) first: then `interrupt` stops the statement on the
/// server (from another connection) and the statement gets a short while to answer (see the
/// session backends' `wait_for_lock`). Returns the answer, `None` if none came, and whether
/// the statement was interrupted.
///
/// The interrupt is sent again until the statement answers: the server drops an interrupt
/// (`pg_cancel_backend`, `KILL QUERY`) that reaches a session between statements, and one
/// sent just after the statement left the client can arrive before the statement does; the
/// statement would then wait on, forever if it was asked to.
pub(crate) async fn answer_or_interrupt<T, I>(
    wait: impl std::future::Future<Output = T>,
    interrupt: impl Fn() -> I,
    cancel: &tokio_util::sync::CancellationToken,
    abandoned: &tokio_util::sync::CancellationToken,
) -> (Option<T>, bool)
where
    I: std::future::Future<Output = ()>,
{
    tokio::pin!(wait);
    let given_up = async {
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = abandoned.cancelled() => {}
        }
    };
    tokio::select! {
        // The statement first, so it is on its way before any interrupt is.
        biased;
        outcome = &mut wait => return (Some(outcome), false),
        _ = given_up => {}
    }
    let give_up_at = Instant::now() + INTERRUPTED_ANSWER_LIMIT;
    loop {
        interrupt().await;
        let until = (Instant::now() + INTERRUPT_REPEAT).min(give_up_at);
        match tokio::time::timeout_at(until, &mut wait).await {
            Ok(outcome) => return (Some(outcome), true),
            Err(_) if until >= give_up_at => return (None, true),
            Err(_) => {}
        }
    }
}

pub(crate) fn try_once(request: &AcquireRequest) -> bool {
    request.deadline.is_some_and(|deadline| deadline <= Instant::now())
}

/// What the lease table records as `locked_by` for an owner: an operator reading the table
/// sees that polylock holds the row, and which client and owner.
pub(crate) fn locked_by(owner: &crate::owner::Owner) -> String {
    format!("polylock:{owner}")
}

/// force_unlock on a session lock. The database frees a session lock only when the session
/// holding it releases it or ends; ending someone else's session (`pg_terminate_backend`,
/// `KILL`) would also abort whatever else that connection is doing, and the holder may be
/// any application sharing the database, so polylock will not do it for the caller.
pub(crate) fn session_force_unlock_refused(database: &str) -> Error {
    Error::backend(format!(
        "force_unlock is not offered for {database} session locks: only the session holding one can \
         release it, and ending another client's session would abort all its work; use the lease kind \
         (ShedLock table) for locks an operator must be able to break, or end the holding session yourself"
    ))
}

#[cfg(feature = "postgres")]
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
