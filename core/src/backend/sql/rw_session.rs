//! One owner's holds of one read-write lock on a SQL database: the connection that carries
//! them (a side, or the write side and the read side its holder takes beside it, a
//! downgrade), each side with its own lease and lost latch, and the task that watches them.
//!
//! The database frees the sides only through this connection (or when it ends), so the
//! leases are kept here, as for a session lock (session.rs): a side whose lease runs out
//! unrenewed is given back, and the connection is closed once it carries nothing; the same
//! task pings the connection every `session_check`, and a failed ping marks every side lost.
//! The server's limit on the session's silence is kept as for a session lock
//! ([`IdleLimit`]), sized for the longest lease of a side it carried, and put back before the
//! connection returns to its pool.

use std::sync::{Arc, Mutex as SyncMutex, Weak};
use std::time::Duration;

use sqlx::pool::PoolConnection;
use tokio::sync::Mutex;
use tokio::task::AbortHandle;
use tokio::time::{sleep_until, timeout, Instant};

use super::dialect::Dialect;
use super::session::{IdleLimit, CHECK_TIMEOUT};
use super::waiting::in_own_task;
use crate::spi::{HeldLock, LostNotifier, LostReason, RwMode};

/// One side held through the connection.
struct SideHold {
    lease_end: Instant,
    lost: LostNotifier,
}

#[derive(Default)]
struct Sides {
    read: Option<SideHold>,
    write: Option<SideHold>,
}

impl Sides {
    fn of(&mut self, mode: RwMode) -> &mut Option<SideHold> {
        match mode {
            RwMode::Read => &mut self.read,
            RwMode::Write => &mut self.write,
        }
    }

    fn other_is_held(&self, mode: RwMode) -> bool {
        match mode {
            RwMode::Read => self.write.is_some(),
            RwMode::Write => self.read.is_some(),
        }
    }

    fn is_empty(&self) -> bool {
        self.read.is_none() && self.write.is_none()
    }

    fn earliest_lease_end(&self) -> Option<Instant> {
        [&self.read, &self.write].into_iter().flatten().map(|side| side.lease_end).min()
    }

    /// Take out every side whose lease has run out by `now`.
    fn take_expired(&mut self, now: Instant) -> Vec<(RwMode, SideHold)> {
        let mut expired = Vec::new();
        for mode in [RwMode::Read, RwMode::Write] {
            if self.of(mode).as_ref().is_some_and(|side| side.lease_end <= now) {
                expired.extend(self.of(mode).take().map(|side| (mode, side)));
            }
        }
        expired
    }

    fn take_all(&mut self) -> Vec<SideHold> {
        [self.read.take(), self.write.take()].into_iter().flatten().collect()
    }
}

pub(crate) struct RwSession<D: Dialect> {
    lock: D::RwLock,
    /// `None` once given back or closed.
    conn: Mutex<Option<PoolConnection<D::DB>>>,
    /// The server's limit on the connection's silence; taken only under `conn`'s lock.
    idle: Mutex<IdleLimit>,
    sides: SyncMutex<Sides>,
    monitor: SyncMutex<Option<AbortHandle>>,
}

impl<D: Dialect> RwSession<D> {
    /// Start holding `mode` through `conn`, with a lease that ends at `lease_end` unless renewed.
    pub fn start(
        lock: D::RwLock,
        conn: PoolConnection<D::DB>,
        idle: IdleLimit,
        mode: RwMode,
        lease_end: Instant,
        check: Duration,
        lost: LostNotifier,
    ) -> Arc<Self> {
        let mut sides = Sides::default();
        *sides.of(mode) = Some(SideHold { lease_end, lost });
        let session = Arc::new(RwSession {
            lock,
            conn: Mutex::new(Some(conn)),
            idle: Mutex::new(idle),
            sides: SyncMutex::new(sides),
            monitor: SyncMutex::new(None),
        });
        let task = tokio::spawn(monitor(Arc::downgrade(&session), check));
        *session.monitor.lock().unwrap_or_else(|e| e.into_inner()) = Some(task.abort_handle());
        session
    }

    pub fn of(held: &HeldLock<RwMode>) -> Option<Arc<Self>> {
        held.state.clone().and_then(|state| state.downcast::<Self>().ok())
    }

    fn sides(&self) -> std::sync::MutexGuard<'_, Sides> {
        self.sides.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn holds_write(&self) -> bool {
        self.sides().write.is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.sides().is_empty()
    }

    /// A downgrade: take the read side on the connection that holds the write side, and draw
    /// its token. `Ok(None)` when the write side is no longer held here.
    pub async fn read_beside_write(
        self: &Arc<Self>,
        shared: sqlx::Pool<D::DB>,
        fencing_name: String,
        lease: Duration,
        lost: LostNotifier,
    ) -> Result<Option<(u64, Instant)>, sqlx::Error> {
        let session = self.clone();
        in_own_task(
            async move {
                let mut conn = session.conn.lock().await;
                let Some(conn) = conn.as_mut() else { return Ok(None) };
                if !session.holds_write() {
                    return Ok(None);
                }
                let granted_at = Instant::now();
                session.idle.lock().await.cover::<D>(conn, lease).await?;
                D::rw_read_on_writer(conn, &session.lock).await?;
                let token = D::rw_draw_tokens(&shared, conn, &fencing_name).await;
                let token = match token {
                    Ok(token) => token,
                    Err(err) => {
                        // The side was taken but cannot be issued: give it back.
                        let _ = D::rw_unlock(conn, &session.lock, RwMode::Read, true).await;
                        return Err(err);
                    }
                };
                *session.sides().of(RwMode::Read) = Some(SideHold { lease_end: granted_at + lease, lost });
                Ok(Some((token, granted_at)))
            },
            Err(sqlx::Error::WorkerCrashed),
        )
        .await
    }

    /// Whether the connection answers; one that does not is closed and every side marked lost.
    /// With a renewal's `lease`, the server's limit on the session's silence is raised first
    /// if the lease needs it.
    async fn alive(self: &Arc<Self>, lease: Option<Duration>) -> bool {
        let session = self.clone();
        in_own_task(
            async move {
                let mut slot = session.conn.lock().await;
                let Some(conn) = slot.as_mut() else { return false };
                let answer = async {
                    if let Some(lease) = lease {
                        session.idle.lock().await.cover::<D>(conn, lease).await?;
                    }
                    sqlx::Connection::ping(&mut **conn).await
                };
                let why = match timeout(CHECK_TIMEOUT, answer).await {
                    Ok(Ok(())) => return true,
                    Ok(Err(err)) => format!("the connection failed: {err}"),
                    Err(_) => format!("the connection did not answer within {}s", CHECK_TIMEOUT.as_secs()),
                };
                if let Some(conn) = slot.take() {
                    let _ = conn.close().await;
                }
                drop(slot);
                session.all_lost(LostReason::SessionEnded(why));
                false
            },
            false,
        )
        .await
    }

    fn all_lost(&self, reason: LostReason) {
        let sides = self.sides().take_all();
        for side in sides {
            side.lost.mark(reason.clone());
        }
    }

    /// Renewal: the connection must answer and still carry `mode`; then its lease runs `lease`
    /// from now.
    pub async fn renew(self: &Arc<Self>, mode: RwMode, lease: Duration) -> bool {
        let sent = Instant::now();
        if !self.alive(Some(lease)).await {
            return false;
        }
        match self.sides().of(mode).as_mut() {
            Some(side) => {
                side.lease_end = sent + lease;
                true
            }
            None => false,
        }
    }

    /// For a release that leaves holds: whether `mode` is still carried by a live connection.
    pub async fn check(self: &Arc<Self>, mode: RwMode) -> bool {
        self.alive(None).await && self.sides().of(mode).is_some()
    }

    /// Give `mode` back; once the connection carries nothing it goes back to its pool (closed
    /// instead if it could not be vouched for). True if the side was held.
    pub async fn release(self: &Arc<Self>, mode: RwMode) -> bool {
        let session = self.clone();
        in_own_task(async move { session.give_back(mode, None).await }, false).await
    }

    /// Give back `mode` (already taken out of the sides when `expired` carries it).
    async fn give_back(self: &Arc<Self>, mode: RwMode, expired: Option<SideHold>) -> bool {
        let mut slot = self.conn.lock().await;
        let side = expired.or_else(|| self.sides().of(mode).take());
        let (Some(_side), Some(conn)) = (side, slot.as_mut()) else { return false };
        let other_side_left = self.sides().other_is_held(mode);
        match timeout(CHECK_TIMEOUT, D::rw_unlock(conn, &self.lock, mode, other_side_left)).await {
            Ok(Ok(true)) => {
                if !other_side_left {
                    self.stop_monitor();
                    // Holds nothing: back to the pool, without the limit on its silence (a
                    // connection that cannot have it put back is closed instead).
                    let unlimited = timeout(CHECK_TIMEOUT, self.idle.lock().await.restore::<D>(conn)).await;
                    if let (Some(conn), false) = (slot.take(), matches!(unlimited, Ok(Ok(())))) {
                        let _ = conn.close().await;
                    }
                }
                true
            }
            outcome => {
                // Not held, or unknown: the connection is closed, which frees whatever it held.
                if let Some(conn) = slot.take() {
                    let _ = conn.close().await;
                }
                drop(slot);
                let why = match outcome {
                    Ok(Err(err)) => format!("the connection failed: {err}"),
                    _ => "the session no longer held the lock".to_string(),
                };
                self.all_lost(LostReason::SessionEnded(why));
                false
            }
        }
    }

    fn stop_monitor(&self) {
        if let Some(task) = self.monitor.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
    }
}

impl<D: Dialect> Drop for RwSession<D> {
    fn drop(&mut self) {
        self.stop_monitor();
    }
}

/// Ping the connection every `check` and give back each side whose lease runs out. Holds
/// only a weak reference, so a session whose holds are all dropped stops its monitor.
async fn monitor<D: Dialect>(session: Weak<RwSession<D>>, check: Duration) {
    loop {
        let Some(next) = session.upgrade().map(|s| s.sides().earliest_lease_end()) else { return };
        let Some(lease_end) = next else { return };
        sleep_until((Instant::now() + check).min(lease_end)).await;
        let Some(session) = session.upgrade() else { return };
        let expired = session.sides().take_expired(Instant::now());
        for (mode, side) in expired {
            // Unrenewed past its lease: the side must not outlive what its guard promises.
            side.lost.mark(LostReason::LeaseExpired);
            let lost = side.lost.clone();
            let given_back = {
                let session = session.clone();
                in_own_task(async move { session.give_back(mode, Some(side)).await }, false).await
            };
            if !given_back {
                lost.mark(LostReason::LeaseExpired);
            }
        }
        if session.is_empty() || !session.alive(None).await {
            return;
        }
    }
}
