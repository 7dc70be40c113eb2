//! A session lock's hold: the dedicated connection that holds the lock, the lease it keeps
//! on our side, and the task that watches both.
//!
//! The database frees a session lock only when its connection ends, so the lease is kept
//! here: a hold whose lease runs out unrenewed (an explicit lease, or a watchdog that stopped)
//! is given back by closing its connection. The same task pings the connection every
//! `session_check`; a failed ping means the session ended (killed, network gone) and the
//! lock with it, so the guard is marked lost at once.
//!
//! The lease is kept on the server too: while it holds, the session is told to end after a
//! silence a little longer than the lease ([`idle_limit`]: PostgreSQL 14+'s
//! `idle_session_timeout`, MySQL's and MariaDB's `wait_timeout`). A live holder's session is
//! never that silent (the ping above, every renewal and every transfer run a statement on it),
//! so only a holder that stopped answering (paused by SIGSTOP, a long GC pause, a frozen VM)
//! loses its session, and the lock with it, about a lease after it went silent, instead of
//! keeping every waiter out for as long as the pause lasts. The setting is put back before the
//! connection returns to its pool.

use std::sync::{Arc, Mutex as SyncMutex};
use std::time::Duration;

use sqlx::pool::PoolConnection;
use tokio::sync::Mutex;
use tokio::task::AbortHandle;
use tokio::time::{sleep_until, timeout, Instant};

use super::dialect::Dialect;
use super::waiting::in_own_task;
use crate::spi::{HeldLock, HoldState, Release, Renewal};
use crate::spi::{LostNotifier, LostReason};

/// How long a holding session may stay silent before the server ends it: the lease rounded up
/// to whole seconds (MySQL's `wait_timeout` counts whole seconds), plus one. Never shorter than
/// the lease: the server's timer starts after the session's last statement, and the holder's
/// lease ran from before that statement was sent, so the holder's own count of its lease has
/// ended, and its lock been given up, before the server can end a session it thought alive.
pub(crate) fn idle_limit(lease: Duration) -> Duration {
    let whole_seconds = lease.as_nanos().div_ceil(1_000_000_000);
    Duration::from_secs(u64::try_from(whole_seconds).unwrap_or(u64::MAX / 2).saturating_add(1))
}

/// The limit on a holding session's silence set on the server ([`Dialect::limit_idle`]).
pub(crate) struct IdleLimit {
    /// The limit set, for the longest lease this session has held for.
    limit: Duration,
    /// The setting to put back; `None` where the server has no such limit.
    before: Option<String>,
}

impl IdleLimit {
    /// Set the limit for `lease` on the connection that was just granted a lock.
    pub async fn set<D: Dialect>(conn: &mut PoolConnection<D::DB>, lease: Duration) -> Result<Self, sqlx::Error> {
        let limit = idle_limit(lease);
        let before = D::limit_idle(conn, limit).await?;
        Ok(IdleLimit { limit, before })
    }

    /// Raise the limit for a longer lease (a renewal or a transfer may carry one); a shorter
    /// lease keeps the longer limit, which is only slower to free the lock of a paused holder.
    pub async fn cover<D: Dialect>(
        &mut self,
        conn: &mut PoolConnection<D::DB>,
        lease: Duration,
    ) -> Result<(), sqlx::Error> {
        let limit = idle_limit(lease);
        if self.before.is_none() || limit <= self.limit {
            return Ok(());
        }
        D::limit_idle(conn, limit).await?;
        self.limit = limit;
        Ok(())
    }
}

impl IdleLimit {
    /// Put back the setting before the limit, for a connection going back to its pool.
    pub async fn restore<D: Dialect>(&mut self, conn: &mut PoolConnection<D::DB>) -> Result<(), sqlx::Error> {
        match self.before.take() {
            Some(before) => D::restore_idle(conn, &before).await,
            None => Ok(()),
        }
    }
}

/// The connection that holds a session lock, the lock, and the limit on its silence.
pub(crate) struct SessionConn<D: Dialect> {
    pub conn: PoolConnection<D::DB>,
    pub lock: D::SessionLock,
    pub idle: IdleLimit,
}

impl<D: Dialect> SessionConn<D> {
    /// Whether the session still holds the lock; with a lease, the server's limit on its
    /// silence is raised first if the lease needs it.
    async fn still_holds(&mut self, lease: Option<Duration>) -> Result<bool, sqlx::Error> {
        if let Some(lease) = lease {
            self.idle.cover::<D>(&mut self.conn, lease).await?;
        }
        D::session_holds(&mut self.conn, &self.lock).await
    }

    async fn unlock(&mut self) -> Result<bool, sqlx::Error> {
        D::session_unlock(&mut self.conn, &self.lock).await
    }

    /// Put back the server's limit on the session's silence, so the connection can idle in
    /// its pool.
    async fn unlimit(&mut self) -> Result<(), sqlx::Error> {
        self.idle.restore::<D>(&mut self.conn).await
    }

    /// Draw the next fencing token of `fencing_name` on the session's own connection, for a
    /// hold handed to another owner of this client: the lock never leaves the session, and a
    /// session that died fails the statement instead of handing on a lock it no longer has.
    async fn draw_next_token(&mut self, fencing_name: &str, lease: Duration) -> Result<u64, sqlx::Error> {
        self.idle.cover::<D>(&mut self.conn, lease).await?;
        D::step_token(&mut self.conn, fencing_name).await
    }

    /// Close the connection, which frees anything its session held.
    async fn close(self) {
        let _ = self.conn.close().await;
    }
}

/// A session connection between the moment it may have taken a lock and the moment the lock
/// is recorded in a [`Session`]. The acquisition can be dropped anywhere in between (a waiter
/// handed the lock locally drops its own attempt): dropped, the connection is closed, and the
/// lock with its session, instead of going back to the pool still holding it.
pub(crate) struct Unrecorded<DB: sqlx::Database>(Option<PoolConnection<DB>>);

impl<DB: sqlx::Database> Unrecorded<DB> {
    pub fn new(conn: PoolConnection<DB>) -> Self {
        Unrecorded(Some(conn))
    }

    /// The connection, to record in a session or to give back holding nothing.
    pub fn into_inner(mut self) -> PoolConnection<DB> {
        self.0.take().expect("an Unrecorded connection is taken out once")
    }

    pub fn conn(&mut self) -> &mut PoolConnection<DB> {
        self.0.as_mut().expect("an Unrecorded connection is taken out once")
    }
}

impl<DB: sqlx::Database> Drop for Unrecorded<DB> {
    fn drop(&mut self) {
        if let Some(conn) = self.0.as_mut() {
            conn.close_on_drop();
        }
    }
}

/// How long a check may take before the session counts as gone.
pub(crate) const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// The slot of the connection that holds the lock; `None` once it was given back or closed.
type ConnSlot<D> = Arc<Mutex<Option<SessionConn<D>>>>;

/// What a check of the session found.
enum Check {
    Holds,
    /// The session ended or no longer holds the lock; its connection was closed.
    Gone(String),
    /// The connection was already given back or closed.
    Closed,
}

/// Whether the session still holds the lock; a connection that fails or does not answer is
/// closed (its lock went with its session, or goes now), so it is never used again.
/// `lease`: a renewal's, which the server's limit on the session's silence must cover.
async fn check_conn<D: Dialect>(slot: ConnSlot<D>, lease: Option<Duration>) -> Check {
    in_own_task(
        async move {
            let mut guard = slot.lock_owned().await;
            let Some(conn) = guard.as_mut() else { return Check::Closed };
            let why = match timeout(CHECK_TIMEOUT, conn.still_holds(lease)).await {
                Ok(Ok(true)) => return Check::Holds,
                Ok(Ok(false)) => "the session no longer holds the lock".to_string(),
                Ok(Err(err)) => format!("the connection failed: {err}"),
                Err(_) => format!("the connection did not answer within {}s", CHECK_TIMEOUT.as_secs()),
            };
            if let Some(conn) = guard.take() {
                conn.close().await;
            }
            Check::Gone(why)
        },
        Check::Gone("the check was interrupted".to_string()),
    )
    .await
}

pub(crate) struct Session<D: Dialect> {
    conn: ConnSlot<D>,
    lease_end: SyncMutex<Instant>,
    monitor: SyncMutex<Option<AbortHandle>>,
    /// The latch the monitor marks: the current owner's (a transfer points it at the owner
    /// the lock moved to).
    lost: Arc<SyncMutex<LostNotifier>>,
}

impl<D: Dialect> Session<D> {
    /// Start holding through `conn`, with a lease that ends at `lease_end` unless renewed.
    pub fn start(conn: SessionConn<D>, lease_end: Instant, check: Duration, lost: LostNotifier) -> Arc<Self> {
        let lost = Arc::new(SyncMutex::new(lost));
        let session = Arc::new(Session {
            conn: Arc::new(Mutex::new(Some(conn))),
            lease_end: SyncMutex::new(lease_end),
            monitor: SyncMutex::new(None),
            lost: lost.clone(),
        });
        let task = tokio::spawn(monitor(Arc::downgrade(&session), check, lost));
        *session.monitor.lock().unwrap_or_else(|e| e.into_inner()) = Some(task.abort_handle());
        session
    }

    pub fn of<K>(held: &HeldLock<K>) -> Option<Arc<Self>> {
        held.state.clone().and_then(|state| state.downcast::<Self>().ok())
    }

    /// The backend's renew for a session lock: `Gone` when the hold carries no session or
    /// the session no longer holds the lock.
    pub async fn renew_held<K>(held: &HeldLock<K>, lease: Duration) -> Renewal {
        let renewed = match Self::of(held) {
            Some(session) => session.renew(lease).await,
            None => false,
        };
        if renewed {
            Renewal::Renewed
        } else {
            Renewal::Gone
        }
    }

    /// The backend's release for a session lock: a partial release only checks the session
    /// still holds it; the last one gives it back.
    pub async fn release_held<K>(held: &HeldLock<K>, holds_left: u32) -> Release {
        let Some(session) = Self::of(held) else { return Release::Gone };
        let held_still = if holds_left > 0 { session.check().await } else { session.release().await };
        if held_still {
            Release::Released
        } else {
            Release::Gone
        }
    }

    pub fn into_state(self: Arc<Self>) -> HoldState {
        Some(self)
    }

    fn lease_end(&self) -> Instant {
        *self.lease_end.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Renewal: the session must still hold the lock; then the lease runs `lease` from now.
    /// A session that errors is gone (its lock went with it), so that is `false`, not an error.
    pub async fn renew(&self, lease: Duration) -> bool {
        let sent = Instant::now();
        let holds = matches!(check_conn(self.conn.clone(), Some(lease)).await, Check::Holds);
        if holds {
            *self.lease_end.lock().unwrap_or_else(|e| e.into_inner()) = sent + lease;
        }
        holds
    }

    /// The backend's transfer for a session lock: the session keeps the lock and draws the
    /// token set aside for the next owner (`Ok(None)` when the session was already closed).
    /// The issued token is the one before the new reservation. A connection that fails is
    /// closed, which frees the lock: nothing stays held that nobody owns.
    pub async fn transfer_held(
        held: &HeldLock,
        fencing_name: String,
        lease: Duration,
        lost: &LostNotifier,
    ) -> Result<Option<u64>, sqlx::Error> {
        let Some(session) = Self::of(held) else { return Ok(None) };
        let sent = Instant::now();
        let slot = session.conn.clone();
        let reserved = in_own_task(
            async move {
                let mut guard = slot.lock_owned().await;
                let Some(conn) = guard.as_mut() else { return Ok(None) };
                let failed = match timeout(CHECK_TIMEOUT, conn.draw_next_token(&fencing_name, lease)).await {
                    Ok(Ok(reserved)) => return Ok(Some(reserved)),
                    Ok(Err(err)) => err,
                    Err(_) => sqlx::Error::Io(std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer")),
                };
                if let Some(conn) = guard.take() {
                    conn.close().await;
                }
                Err(failed)
            },
            Err(sqlx::Error::WorkerCrashed),
        )
        .await?;
        if reserved.is_some() {
            *session.lease_end.lock().unwrap_or_else(|e| e.into_inner()) = sent + lease;
            // From now on the connection check reports to the new owner.
            *session.lost.lock().unwrap_or_else(|e| e.into_inner()) = lost.clone();
        }
        Ok(reserved.map(|reserved| reserved - 1))
    }

    /// Whether the session is alive and holds the lock (for a release that leaves holds).
    pub async fn check(&self) -> bool {
        matches!(check_conn(self.conn.clone(), None).await, Check::Holds)
    }

    /// Give the lock back and return a healthy connection to its pool. True if it was held.
    /// Stopping the monitor can interrupt it only between checks (its checks run in their
    /// own tasks), and the release waits for a check under way to finish.
    pub async fn release(&self) -> bool {
        self.stop_monitor();
        let slot = self.conn.clone();
        in_own_task(
            async move {
                let Some(mut conn) = slot.lock().await.take() else { return false };
                match timeout(CHECK_TIMEOUT, conn.unlock()).await {
                    Ok(Ok(true)) => {
                        // Dropping a pool connection returns it to the pool: only without the
                        // limit on its silence, else it is closed (the lock is given back either way).
                        if !matches!(timeout(CHECK_TIMEOUT, conn.unlimit()).await, Ok(Ok(()))) {
                            conn.close().await;
                        }
                        true
                    }
                    _ => {
                        // Not held, or unknown: a connection we cannot vouch for is closed, not reused.
                        conn.close().await;
                        false
                    }
                }
            },
            false,
        )
        .await
    }

    fn stop_monitor(&self) {
        if let Some(task) = self.monitor.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
    }
}

impl<D: Dialect> Drop for Session<D> {
    fn drop(&mut self) {
        self.stop_monitor();
    }
}

/// Ping the session every `check` and end the hold when its lease runs out. Holds only a
/// weak reference, so a hold that is dropped stops its monitor.
async fn monitor<D: Dialect>(
    session: std::sync::Weak<Session<D>>,
    check: Duration,
    lost: Arc<SyncMutex<LostNotifier>>,
) {
    // The latch is cloned out first: marking logs, and no log sink runs under a core lock.
    let mark = |reason: LostReason| {
        let latch = lost.lock().unwrap_or_else(|e| e.into_inner()).clone();
        latch.mark(reason)
    };
    loop {
        let Some(lease_end) = session.upgrade().map(|s| s.lease_end()) else { return };
        sleep_until((Instant::now() + check).min(lease_end)).await;
        let Some(slot) = session.upgrade().map(|s| s.conn.clone()) else { return };
        let expired = session.upgrade().is_some_and(|s| Instant::now() >= s.lease_end());
        if expired {
            // Unrenewed past its lease: the lock must not outlive what its guard promises.
            let closed = in_own_task(
                async move {
                    let conn = slot.lock().await.take();
                    let had_conn = conn.is_some();
                    if let Some(conn) = conn {
                        conn.close().await;
                    }
                    had_conn
                },
                false,
            )
            .await;
            if closed {
                mark(LostReason::LeaseExpired);
            }
            return;
        }
        match check_conn(slot, None).await {
            Check::Holds => continue,
            Check::Closed => return,
            Check::Gone(why) => {
                mark(LostReason::SessionEnded(why));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::idle_limit;
    use std::time::Duration;

    #[test]
    fn the_idle_limit_is_the_lease_in_whole_seconds_plus_one() {
        let secs = Duration::from_secs;
        assert_eq!(idle_limit(Duration::from_millis(10)), secs(2));
        assert_eq!(idle_limit(secs(2)), secs(3));
        assert_eq!(idle_limit(Duration::from_millis(2001)), secs(4));
        assert_eq!(idle_limit(secs(30)), secs(31));
        assert_eq!(idle_limit(crate::duration::MAX_LEASE), crate::duration::MAX_LEASE + secs(1));
        assert!(idle_limit(Duration::MAX) > secs(u64::MAX / 4));
    }
}
