//! The acquire loop for backends whose store grants a lock in one atomic attempt (a row, a
//! key): try; if busy, wait for the store's release event, the holder's lease end or a
//! short backoff, whichever comes first; try again.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};

use crate::error::Result;
use crate::spi::{AcquireRequest, Acquired, HoldKind, HoldState};

/// The outcome of one attempt.
pub(crate) enum Attempt {
    Acquired {
        token: u64,
        state: HoldState,
    },
    /// Someone else holds the lock; `holder_lease_left` is how long until it expires, if known.
    Busy {
        holder_lease_left: Option<Duration>,
    },
}

/// Bounds of the pause between attempts when no release event arrives. Stores that cannot
/// notify (SQLite) rely on it; stores that can (Redis pub/sub) use it only as a fallback.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Backoff {
    pub min: Duration,
    pub max: Duration,
}

/// Where a waiter hears that the lock may have been freed (a local release, a pub/sub
/// message). A release between an attempt and the wait that follows must still be heard.
pub(crate) trait Wakeups: Send {
    /// Called before each attempt: what came before it is stale.
    fn arm(&mut self);
    /// Resolves at the next wake-up since `arm`; never, if none can come any more.
    fn next(&mut self) -> impl Future<Output = ()> + Send;
}

/// A counter bumped on every release: wakes every waiter that watches it.
impl Wakeups for watch::Receiver<u64> {
    fn arm(&mut self) {
        self.borrow_and_update();
    }

    async fn next(&mut self) {
        if self.changed().await.is_err() {
            std::future::pending::<()>().await; // backend gone: the timers still wake us
        }
    }
}

/// Run attempts until one succeeds, the deadline passes or the request is cancelled.
pub(crate) async fn acquire_by_attempts<K: HoldKind, T, TF>(
    request: &AcquireRequest<K>,
    backoff: Backoff,
    released: &mut impl Wakeups,
    mut attempt: T,
) -> Result<Option<Acquired>>
where
    T: FnMut() -> TF,
    TF: Future<Output = Result<Attempt>>,
{
    let mut pause = backoff.min;
    loop {
        released.arm();
        let attempt_started = Instant::now();
        let holder_lease_left = match attempt().await? {
            Attempt::Acquired { token, state } => {
                return Ok(Some(Acquired { token, attempt_started, state }));
            }
            Attempt::Busy { holder_lease_left } => holder_lease_left,
        };
        let now = Instant::now();
        if request.deadline.is_some_and(|deadline| now >= deadline) || request.cancel.is_cancelled() {
            return Ok(None);
        }
        // Full jitter keeps many waiters from retrying in step.
        let mut wait = pause.mul_f64(0.5 + fastrand::f64() * 0.5);
        if let Some(left) = holder_lease_left {
            wait = wait.min(left + Duration::from_millis(1));
        }
        let mut wake_at = now + wait;
        if let Some(deadline) = request.deadline {
            wake_at = wake_at.min(deadline);
        }
        tokio::select! {
            _ = released.next() => pause = backoff.min,
            _ = sleep_until(wake_at) => pause = (pause * 2).min(backoff.max),
            _ = request.cancel.cancelled() => return Ok(None),
        }
    }
}
