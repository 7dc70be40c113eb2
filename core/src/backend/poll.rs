//! The acquire loop for backends whose store grants a lock in one atomic attempt (a row, a
//! key): try; if busy, wait for the store's release event, the holder's lease end or a
//! short backoff, whichever comes first; try again.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};

use super::{AcquireRequest, Acquired, HoldState};
use crate::error::Result;

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

/// Run attempts until one succeeds, the deadline passes or the request is cancelled.
///
/// `released` is a counter the backend bumps whenever a release may have freed the lock
/// (a local release, a pub/sub message). It is marked seen before each attempt, so a
/// release between the attempt and the wait still wakes the waiter.
pub(crate) async fn acquire_by_attempts<T, TF>(
    request: &AcquireRequest,
    backoff: Backoff,
    mut released: watch::Receiver<u64>,
    mut attempt: T,
) -> Result<Option<Acquired>>
where
    T: FnMut() -> TF,
    TF: Future<Output = Result<Attempt>>,
{
    let mut pause = backoff.min;
    loop {
        released.borrow_and_update();
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
            // A closed channel (backend shutting down) just leaves the timers to wake us.
            Ok(()) = released.changed() => pause = backoff.min,
            _ = sleep_until(wake_at) => pause = (pause * 2).min(backoff.max),
            _ = request.cancel.cancelled() => return Ok(None),
        }
    }
}
