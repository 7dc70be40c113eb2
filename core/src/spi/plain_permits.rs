//! Semaphores as a plain counter of permits that nobody owns: Redisson's `RSemaphore`, an
//! explicit opt-in beside the owned permits of [`super::PermitStore`].
//!
//! Taking permits decrements the counter, giving them back increments it, and anyone may give
//! back any number: the store records no holder, no lease and no fencing token. A holder that
//! crashes before giving its permits back leaks them for good; only `add_permits` (or setting
//! the count again) brings them back. The engine keeps nothing for these permits: no hold
//! table, no watchdog, no lost signal.

use async_trait::async_trait;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::Result;

/// A store's plain semaphores, keyed by storage key (namespace applied).
#[async_trait]
pub trait PlainPermitStore: Send + Sync + 'static {
    /// Set the count of available permits to `permits` if the semaphore has no count yet;
    /// whether it was set.
    async fn try_set_permits(&self, key: &str, permits: u32) -> Result<bool>;

    /// Take `permits` at once when that many are available, waiting until `deadline` (`None`:
    /// for ever; a past one: try once) or until `cancel` fires. Whether they were taken.
    async fn acquire(
        &self,
        key: &str,
        permits: u32,
        deadline: Option<Instant>,
        cancel: &CancellationToken,
    ) -> Result<bool>;

    /// Add `permits` to the count (whoever took them) and wake the waiters; the count after.
    async fn release(&self, key: &str, permits: u32) -> Result<i64>;

    /// The count available now (0 when the semaphore has no count).
    async fn available(&self, key: &str) -> Result<i64>;

    /// Change the count by `delta` (which may be negative), creating it at 0 first.
    async fn add_permits(&self, key: &str, delta: i32) -> Result<()>;

    /// Take every available permit; how many that was.
    async fn drain(&self, key: &str) -> Result<i64>;
}
