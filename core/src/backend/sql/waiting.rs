//! Waiting for a session lock without leaving a connection out of step: statements that run
//! to their end in tasks of their own, waits interrupted on the server, and the session pool.

use std::time::Duration;

use tokio::time::Instant;

use crate::spi::AcquireRequest;

/// A connection for a session lock. An idle one is taken at once; opening a new one is not
/// part of the wait (a try-once must not fail because the pool was cold), so only
/// cancellation and `connect_timeout` bound it; waiting for a full pool (`max_sessions`
/// connections held or waiting) is, and ends at the request's deadline.
pub(crate) async fn session_connection<DB: sqlx::Database, K>(
    pool: &sqlx::Pool<DB>,
    request: &AcquireRequest<K>,
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

/// The time left before `deadline` for a server-side wait. Rounded up to whole milliseconds
/// plus one, so a server timer (lock_timeout takes whole milliseconds) never ends the wait
/// before the caller's deadline.
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

pub(crate) fn try_once<K>(request: &AcquireRequest<K>) -> bool {
    request.deadline.is_some_and(|deadline| deadline <= Instant::now())
}
