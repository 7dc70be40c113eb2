//! `Latch`: a countdown latch shared through the store (Redisson's `RCountDownLatch`). One
//! side sets a count, others count it down, and anyone may wait for it to reach zero. Nothing
//! is owned and nothing expires: a latch whose counters crash stays closed until someone
//! counts it down or a waiter's timeout runs out, so every wait takes a timeout.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::spi::LatchStore;

/// A handle on the latch `name`. Cheap to clone; holds nothing and reads nothing until used.
#[derive(Clone)]
pub struct Latch {
    engine: Arc<Engine>,
    store: Arc<dyn LatchStore>,
    /// Cancelled when the client closes: ends every wait with a `Connection` error.
    closing: CancellationToken,
    name: Arc<str>,
    key: Arc<str>,
}

impl std::fmt::Debug for Latch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Latch").field("name", &self.name).finish()
    }
}

impl Latch {
    pub(crate) fn new(engine: Arc<Engine>, name: &str, key: String) -> Result<Latch> {
        let (store, closing) = engine.latch_store()?;
        Ok(Latch { engine, store, closing, name: name.into(), key: key.into() })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Set the count to `count` if the latch is open (its count is zero, or it was never
    /// set); whether it was set (Redisson's `trySetCount`). A count of zero is refused with
    /// `InvalidArgument`: a latch at zero is open already.
    pub async fn try_set_count(&self, count: u64) -> Result<bool> {
        self.engine.check_open()?;
        if count == 0 {
            return Err(Error::invalid_argument(format!(
                "latch '{}': a count must be at least 1 (a latch at zero is open already)",
                self.name
            )));
        }
        if count > i64::MAX as u64 {
            return Err(Error::invalid_argument(format!("latch '{}': a count must be at most 2^63-1", self.name)));
        }
        self.store.try_set_count(&self.key, count).await
    }

    /// Take one off the count (never below zero); the waiters are released when it reaches
    /// zero.
    pub async fn count_down(&self) -> Result<()> {
        self.engine.check_open()?;
        self.store.count_down(&self.key).await
    }

    /// The count now: 0 when the latch is open.
    pub async fn count(&self) -> Result<u64> {
        self.engine.check_open()?;
        self.store.count(&self.key).await
    }

    /// The waiting form: wait until the count reaches zero, at most `timeout` (`None`: as long
    /// as it takes); a timeout that runs out first is an error of kind `Timeout`, as for every
    /// other waiting form. Closing the client ends the wait with a `Connection` error.
    pub async fn await_zero(&self, timeout: Option<Duration>) -> Result<()> {
        if self.try_await_zero(timeout).await? {
            return Ok(());
        }
        Err(Error::timeout(format!(
            "latch '{}' did not reach zero within {:?}",
            self.name,
            timeout.unwrap_or_default()
        )))
    }

    /// The try form: `true` once the count is zero, `false` when `timeout` ran out first
    /// (as Java's `CountDownLatch.await(time, unit)`).
    pub async fn try_await_zero(&self, timeout: Option<Duration>) -> Result<bool> {
        self.try_await_zero_cancellable(timeout, &CancellationToken::new()).await
    }

    /// [`Latch::try_await_zero`] that also ends, with kind `Cancelled`, when `cancel` fires (for
    /// bindings whose callers give up: a Python KeyboardInterrupt, an asyncio cancel).
    pub async fn try_await_zero_cancellable(
        &self,
        timeout: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<bool> {
        self.engine.check_open()?;
        let deadline = timeout.map(|timeout| Instant::now() + timeout);
        let stop = CancellationToken::new();
        let waited = {
            let _stop_when_done = stop.clone().drop_guard();
            tokio::select! {
                waited = self.store.await_zero(&self.key, deadline, &stop) => Some(waited),
                _ = cancel.cancelled() => None,
                _ = self.closing.cancelled() => None,
            }
        };
        match waited {
            Some(waited) => waited,
            None if self.closing.is_cancelled() => Err(Error::connection(format!(
                "the client for {} closed while waiting for latch '{}'",
                self.engine.url(),
                self.name
            ))),
            None => Err(Error::cancelled(format!("the wait for latch '{}' was cancelled", self.name))),
        }
    }
}
