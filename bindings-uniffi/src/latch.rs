//! `Latch`: a countdown latch shared through the store (Redisson's `RCountDownLatch` layout on
//! Redis), the core's `Latch` translated. Every call waits on the store, so all are async.

use std::sync::Arc;

use polylock::Error;

use crate::errors::Result;
use crate::options::wait_from_seconds;
use crate::shared::ClientShared;

#[derive(uniffi::Object)]
pub struct Latch {
    shared: Arc<ClientShared>,
    latch: polylock::Latch,
}

impl Latch {
    pub fn new(shared: Arc<ClientShared>, latch: polylock::Latch) -> Arc<Latch> {
        Arc::new(Latch { shared, latch })
    }

    fn what(&self) -> String {
        format!("latch '{}'", self.latch.name())
    }
}

#[uniffi::export]
impl Latch {
    pub fn name(&self) -> String {
        self.latch.name().to_string()
    }

    /// Set the count if the latch is open; whether it was set. A count below 1 is
    /// `InvalidArgument` (Ruby integers may be negative, so the conversion is checked here).
    pub async fn try_set_count(&self, count: i64) -> Result<bool> {
        let count = u64::try_from(count).map_err(|_| {
            Error::invalid_argument(format!("latch '{}': a count must be at least 1, got {count}", self.latch.name()))
        })?;
        let latch = self.latch.clone();
        self.shared.run(self.what(), async move { latch.try_set_count(count).await }).await
    }

    /// Take one off the count (never below zero).
    pub async fn count_down(&self) -> Result<()> {
        let latch = self.latch.clone();
        self.shared.run(self.what(), async move { latch.count_down().await }).await
    }

    /// The count now: 0 when the latch is open.
    pub async fn count(&self) -> Result<u64> {
        let latch = self.latch.clone();
        self.shared.run(self.what(), async move { latch.count().await }).await
    }

    /// The try form: wait until the count is zero, at most `wait_seconds` (nil: as long as it
    /// takes): true once it is zero, false when the wait ran out.
    pub async fn try_await_zero(&self, wait_seconds: Option<f64>) -> Result<bool> {
        let wait = wait_from_seconds(wait_seconds)?;
        let latch = self.latch.clone();
        self.shared.run(self.what(), async move { latch.try_await_zero(wait).await }).await
    }

    /// The waiting form: as `try_await_zero`, but a wait that runs out is `Timeout`.
    pub async fn await_zero(&self, wait_seconds: Option<f64>) -> Result<()> {
        let wait = wait_from_seconds(wait_seconds)?;
        let latch = self.latch.clone();
        self.shared.run(self.what(), async move { latch.await_zero(wait).await }).await
    }
}
