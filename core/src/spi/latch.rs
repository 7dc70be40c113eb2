//! Countdown latches: a named count that callers set, count down and wait to reach zero
//! (Redisson's `RCountDownLatch`). Nothing is owned and nothing expires: a latch is a number
//! in the store, where zero (or no record at all) means open.

use async_trait::async_trait;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::Result;

/// A store's countdown latches, keyed by storage key (namespace applied).
#[async_trait]
pub trait LatchStore: Send + Sync + 'static {
    /// Set the count to `count` (at least one) if the latch is open (its count is zero);
    /// whether it was set. A latch still counting down keeps its count.
    async fn try_set_count(&self, key: &str, count: u64) -> Result<bool>;

    /// Take one off the count, never below zero, and wake the waiters when it reaches zero.
    async fn count_down(&self, key: &str) -> Result<()>;

    /// The count now (0 for a latch never set, or open).
    async fn count(&self, key: &str) -> Result<u64>;

    /// Wait until the count is zero, until `deadline` (`None`: for ever; a past one: look
    /// once) or until `cancel` fires. Whether it reached zero.
    async fn await_zero(&self, key: &str, deadline: Option<Instant>, cancel: &CancellationToken) -> Result<bool>;
}

#[cfg(test)]
pub(crate) mod contract {
    //! What every `LatchStore` must do, run by each backend's unit tests where cheap.
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    pub async fn latches(store: Arc<dyn LatchStore>, key: &str) {
        let never = CancellationToken::new();
        assert_eq!(store.count(key).await.unwrap(), 0);
        assert!(store.await_zero(key, Some(Instant::now()), &never).await.unwrap(), "a latch never set is open");
        assert!(store.try_set_count(key, 2).await.unwrap());
        assert!(!store.try_set_count(key, 5).await.unwrap(), "refused while counting down");
        assert_eq!(store.count(key).await.unwrap(), 2);
        let soon = Some(Instant::now() + Duration::from_millis(50));
        assert!(!store.await_zero(key, soon, &never).await.unwrap(), "times out at 2");
        let waiter = {
            let (store, key) = (store.clone(), key.to_string());
            tokio::spawn(async move { store.await_zero(&key, None, &CancellationToken::new()).await })
        };
        store.count_down(key).await.unwrap();
        assert_eq!(store.count(key).await.unwrap(), 1);
        store.count_down(key).await.unwrap();
        assert!(waiter.await.unwrap().unwrap());
        store.count_down(key).await.unwrap();
        assert_eq!(store.count(key).await.unwrap(), 0, "never below zero");
        assert!(store.try_set_count(key, 1).await.unwrap(), "an open latch takes a new count");
        store.count_down(key).await.unwrap();
    }
}
