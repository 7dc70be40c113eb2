//! The one retry policy for transport errors (issue 35 §8): an idempotent call to the store
//! that fails with kind `Connection` (a broken pipe, a member going away, a server
//! restarting) is sent again, after a short pause, until it answers or the backend's call
//! limit (`Store::retry_within`: the URL's `timeout=` where the backend has one) has passed
//! since it first failed; only then does the caller see the `Connection` error. Each backend
//! sends the next attempt where it can: etcd's balanced channel to another member, Redis's
//! connection manager over a fresh connection, the SQL pool over another of its connections,
//! ZooKeeper through its reconnected session.
//!
//! Only calls that are safe to repeat are retried, and the engine reaches the store only
//! through these wrappers, so no call site can forget:
//! - holds: `renew` (extends the lease only if the owner still holds it), a full `release`
//!   (`holds_left == 0`: every backend deletes the hold only if it is still the owner's: a
//!   compare-and-delete on Redis and RedLock, a delete at the key's create revision on etcd,
//!   the owner's node on ZooKeeper, the owner's lease row on SQL), `is_locked` and
//!   `remaining_lease`. Not `acquire` (each backend rides out transport errors inside its own
//!   wait, where it knows which writes are its own), `reenter` and a partial release (Redisson's
//!   hold count is `HINCRBY`: repeating one counts twice), `transfer` or `force_unlock`
//!   (repeated after a first attempt that went through, it would take a new holder's hold).
//! - values: `get` and `now_millis`; counters: `current`. Writes are compare-and-set or
//!   reservations, not repeated.
//! - inspection: `status` and `list`.
//!
//! A release whose earlier attempt failed may have gone through all the same (the reply was
//! what got lost): the repeat then finds nothing of the owner's and answers `Gone`. That is
//! the outcome the caller asked for, not a loss, so after a failed attempt `Gone` is reported
//! as `Released`. (A hold that was already lost before the release is caught before the
//! store is called: its lost latch.)

use std::future::Future;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::{ErrorKind, Result};
use crate::owner::Owner;
use crate::spi::{
    AcquireRequest, Acquired, CounterStore, HeldLock, HoldKind, HoldStore, InspectStore, ListedLock, LockKind,
    LockStatus, LostNotifier, Release, Renewal, ValueChanges, VersionStore, Versioned, Write,
};

/// The first pause after a transport error; each next one doubles, up to `PAUSE_MAX`. Short:
/// a dead member's or a closed connection's refusal costs nothing, and the next attempt goes
/// to a live member or a fresh connection.
const PAUSE_MIN: Duration = Duration::from_millis(20);
const PAUSE_MAX: Duration = Duration::from_millis(250);

/// How one client retries: within how long, and when to stop at once (the client closed).
#[derive(Clone)]
pub(crate) struct Retry {
    within: Duration,
    backend: Arc<str>,
    closed: CancellationToken,
}

impl Retry {
    pub fn new(within: Duration, backend: Arc<str>, closed: CancellationToken) -> Retry {
        Retry { within, backend, closed }
    }

    /// Run `call` until it answers with anything but a `Connection` error, or `within` has
    /// passed since the first attempt failed (no attempt starts later), or the store is closed.
    /// `what` and `name` say what is retried, in the one event logged per call that is.
    /// Returns the answer and whether an attempt failed before it.
    async fn run<T, F, Fut>(&self, what: &'static str, name: &str, mut call: F) -> (Result<T>, bool)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        // Counted from the first failure, not the call: an attempt that waited out the
        // response timeout may have gone through, and deserves one answered repeat.
        let mut deadline = None;
        let mut pause = PAUSE_MIN;
        let mut attempts = 1u32;
        loop {
            let answer = call().await;
            let failed = match &answer {
                Err(err) if err.kind() == ErrorKind::Connection => err,
                _ => {
                    if attempts > 1 {
                        tracing::debug!(op = "retry", backend = %self.backend, call = what, name, attempts,
                            outcome = if answer.is_ok() { "answered" } else { "failed" },
                            "the store answered after a transport error");
                    }
                    return (answer, attempts > 1);
                }
            };
            let now = Instant::now();
            let deadline = *deadline.get_or_insert(now + self.within);
            let next = now + pause;
            if next >= deadline || self.closed.is_cancelled() {
                if attempts > 1 {
                    tracing::debug!(op = "retry", backend = %self.backend, call = what, name, attempts,
                        within_ms = crate::metrics::millis(self.within), outcome = "gave up",
                        "the store did not answer within the client's timeout");
                }
                return (answer, attempts > 1);
            }
            if attempts == 1 {
                // Once per call: the message is the backend's, with URLs redacted.
                tracing::info!(op = "retry", backend = %self.backend, call = what, name,
                    error = %failed.message(), "transport error: trying again on another connection or member");
            }
            tokio::select! {
                _ = tokio::time::sleep_until(next) => {}
                _ = self.closed.cancelled() => return (answer, attempts > 1),
            }
            pause = (pause * 2).min(PAUSE_MAX);
            attempts += 1;
        }
    }

    async fn call<T, F, Fut>(&self, what: &'static str, name: &str, call: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        self.run(what, name, call).await.0
    }
}

/// A family's hold store with the retry policy on its idempotent calls.
pub(crate) struct RetryingHolds<K: HoldKind> {
    inner: Arc<dyn HoldStore<K>>,
    retry: Retry,
}

impl<K: HoldKind> RetryingHolds<K> {
    pub fn wrap(inner: Arc<dyn HoldStore<K>>, retry: &Retry) -> Arc<dyn HoldStore<K>> {
        Arc::new(RetryingHolds { inner, retry: retry.clone() })
    }
}

#[async_trait]
impl<K: HoldKind> HoldStore<K> for RetryingHolds<K> {
    async fn acquire(&self, request: &AcquireRequest<K>) -> Result<Option<Acquired>> {
        self.inner.acquire(request).await
    }

    async fn renew(&self, held: &HeldLock<K>, lease: Duration) -> Result<Renewal> {
        self.retry.call("renew", &held.key, || self.inner.renew(held, lease)).await
    }

    async fn reenter(&self, held: &HeldLock<K>) -> Result<Renewal> {
        self.inner.reenter(held).await
    }

    async fn release(&self, held: &HeldLock<K>, holds_left: u32) -> Result<Release> {
        if holds_left > 0 {
            return self.inner.release(held, holds_left).await;
        }
        match self.retry.run("release", &held.key, || self.inner.release(held, 0)).await {
            // An earlier attempt failed, perhaps after it had deleted the hold: see the top.
            (Ok(Release::Gone), true) => {
                tracing::debug!(op = "retry", backend = %self.retry.backend, call = "release", name = %held.key,
                    "the hold was gone when the release was sent again: the earlier attempt had given it back");
                Ok(Release::Released)
            }
            (answer, _) => answer,
        }
    }

    async fn transfer(
        &self,
        from: &HeldLock<K>,
        to: Owner,
        lease: Duration,
        lost: &LostNotifier,
    ) -> Result<Option<Acquired>> {
        self.inner.transfer(from, to, lease, lost).await
    }

    fn transfers(&self, kind: K) -> bool {
        self.inner.transfers(kind)
    }

    fn reserves_next_token(&self, kind: K) -> bool {
        self.inner.reserves_next_token(kind)
    }

    fn grants_in_order(&self, kind: K) -> bool {
        self.inner.grants_in_order(kind)
    }

    fn others_poll_within(&self, kind: K) -> Option<Duration> {
        self.inner.others_poll_within(kind)
    }

    async fn is_locked(&self, key: &str, kind: K) -> Result<bool> {
        self.retry.call("is_locked", key, || self.inner.is_locked(key, kind)).await
    }

    async fn remaining_lease(&self, key: &str, kind: K) -> Result<Option<Duration>> {
        self.retry.call("remaining_lease", key, || self.inner.remaining_lease(key, kind)).await
    }

    async fn force_unlock(&self, key: &str, kind: K) -> Result<bool> {
        self.inner.force_unlock(key, kind).await
    }
}

/// Versioned values with the retry policy on their reads.
pub(crate) struct RetryingVersions {
    inner: Arc<dyn VersionStore>,
    retry: Retry,
}

impl RetryingVersions {
    pub fn wrap(inner: Arc<dyn VersionStore>, retry: &Retry) -> Arc<dyn VersionStore> {
        Arc::new(RetryingVersions { inner, retry: retry.clone() })
    }
}

#[async_trait]
impl VersionStore for RetryingVersions {
    async fn get(&self, key: &str) -> Result<Option<Versioned>> {
        self.retry.call("get", key, || self.inner.get(key)).await
    }

    async fn compare_and_set(&self, key: &str, expected: Option<u64>, value: &[u8]) -> Result<Write> {
        self.inner.compare_and_set(key, expected, value).await
    }

    async fn delete(&self, key: &str, expected: u64) -> Result<bool> {
        self.inner.delete(key, expected).await
    }

    async fn now_millis(&self) -> Result<Option<u64>> {
        self.retry.call("now_millis", "", || self.inner.now_millis()).await
    }

    async fn changes(&self, key: &str) -> Result<Option<Box<dyn ValueChanges>>> {
        self.inner.changes(key).await
    }
}

/// Counters with the retry policy on their read.
pub(crate) struct RetryingCounters {
    inner: Arc<dyn CounterStore>,
    retry: Retry,
}

impl RetryingCounters {
    pub fn wrap(inner: Arc<dyn CounterStore>, retry: &Retry) -> Arc<dyn CounterStore> {
        Arc::new(RetryingCounters { inner, retry: retry.clone() })
    }
}

#[async_trait]
impl CounterStore for RetryingCounters {
    async fn reserve(&self, key: &str, count: u64) -> Result<Range<u64>> {
        self.inner.reserve(key, count).await
    }

    async fn current(&self, key: &str) -> Result<u64> {
        self.retry.call("current", key, || self.inner.current(key)).await
    }
}

/// The operator's reads, retried.
pub(crate) struct RetryingInspect {
    inner: Arc<dyn InspectStore>,
    retry: Retry,
}

impl RetryingInspect {
    pub fn wrap(inner: Arc<dyn InspectStore>, retry: &Retry) -> Arc<dyn InspectStore> {
        Arc::new(RetryingInspect { inner, retry: retry.clone() })
    }
}

#[async_trait]
impl InspectStore for RetryingInspect {
    async fn status(&self, key: &str, kind: LockKind) -> Result<LockStatus> {
        self.retry.call("status", key, || self.inner.status(key, kind)).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ListedLock>> {
        self.retry.call("list", prefix, || self.inner.list(prefix)).await
    }
}
