//! Countdown latches in Redisson's `RCountDownLatch` layout (RedissonCountDownLatch.java,
//! CountDownLatchPubSub.java), so a Redisson service and polylock share a latch: the string
//! key `NAME` holds the count (absent means zero: open), and the channel
//! `redisson_countdownlatch__channel__{NAME}` carries `1` when a count is set (NEW_COUNT) and
//! `0` when it reaches zero (ZERO_COUNT). The scripts are Redisson's own.
//!
//! A waiter subscribes, then reads the count, and reads again on every message; a message
//! missed while the connection was away wakes every listener (pubsub.rs), and a slow bounded
//! re-read covers a key deleted from outside without a message.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use super::link::Link;
use super::pubsub::Subscriptions;
use super::script_with;
use crate::backend::poll::Wakeups;
use crate::error::{Error, Result};
use crate::spi::LatchStore;

/// Only a fallback: Redisson's and polylock's count-downs publish on the channel.
const FALLBACK_MIN: Duration = Duration::from_millis(50);
const FALLBACK_MAX: Duration = Duration::from_secs(1);

/// CountDownLatchPubSub.ZERO_COUNT_MESSAGE and NEW_COUNT_MESSAGE.
const ZERO_COUNT_MESSAGE: i64 = 0;
const NEW_COUNT_MESSAGE: i64 = 1;

/// `trySetCountAsync(count)`. KEYS: name, channel. ARGV: NEW_COUNT message, count, publish
/// command. 1 if set, 0 if the latch was still counting down.
static TRY_SET_COUNT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('set', KEYS[1], ARGV[2])
  redis.call(ARGV[3], KEYS[2], ARGV[1])
  return 1
else
  return 0
end
",
    )
});

/// `countDownAsync()`. KEYS: name, channel. ARGV: ZERO_COUNT message, publish command. The key
/// is deleted at zero (and below, which a count-down of an open latch would reach), so the
/// count never stays under zero.
static COUNT_DOWN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local v = redis.call('decr', KEYS[1])
if v <= 0 then redis.call('del', KEYS[1]) end
if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end
return v
",
    )
});

/// `getCountAsync()`: a GET read as a long (absent: 0).
static GET_COUNT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local v = redis.call('get', KEYS[1])
if v == false then return 0 end
return tonumber(v)
",
    )
});

/// The channel of latch `key`: always braced around the whole name, as Redisson writes it.
fn channel(key: &str) -> String {
    format!("redisson_countdownlatch__channel__{{{key}}}")
}

pub(super) struct RedisLatches {
    pub link: Arc<Link>,
    pub subscriptions: Arc<Subscriptions>,
}

#[async_trait]
impl LatchStore for RedisLatches {
    async fn try_set_count(&self, key: &str, count: u64) -> Result<bool> {
        let channel = channel(key);
        let mut invocation = script_with(&TRY_SET_COUNT, &[key, &channel]);
        invocation.arg(NEW_COUNT_MESSAGE).arg(count).arg(self.link.publish_command());
        let set: i64 = self.link.invoke(&invocation).await?;
        Ok(set == 1)
    }

    async fn count_down(&self, key: &str) -> Result<()> {
        let channel = channel(key);
        let mut invocation = script_with(&COUNT_DOWN, &[key, &channel]);
        invocation.arg(ZERO_COUNT_MESSAGE).arg(self.link.publish_command());
        let left: i64 = self.link.invoke(&invocation).await?;
        if left == 0 {
            self.subscriptions.released_locally(&channel);
        }
        Ok(())
    }

    async fn count(&self, key: &str) -> Result<u64> {
        let count: i64 = self.link.invoke(&script_with(&GET_COUNT, &[key])).await?;
        u64::try_from(count.max(0))
            .map_err(|_| Error::backend(format!("latch '{key}' holds a count polylock cannot read ({count})")))
    }

    async fn await_zero(&self, key: &str, deadline: Option<Instant>, cancel: &CancellationToken) -> Result<bool> {
        // Redisson's order: look first, and only a waiter pays for a subscription.
        if self.count(key).await? == 0 {
            return Ok(true);
        }
        let gave_up = || deadline.is_some_and(|d| Instant::now() >= d) || cancel.is_cancelled();
        if gave_up() {
            return Ok(false);
        }
        // Subscribed before the next look, so an opening in between still wakes us.
        let mut opened = self.subscriptions.listen_all(&channel(key)).await?;
        let mut pause = FALLBACK_MIN;
        loop {
            opened.arm();
            if self.count(key).await? == 0 {
                return Ok(true);
            }
            if gave_up() {
                return Ok(false);
            }
            let mut wake_at = Instant::now() + pause.mul_f64(0.5 + fastrand::f64() * 0.5);
            if let Some(deadline) = deadline {
                wake_at = wake_at.min(deadline);
            }
            tokio::select! {
                _ = opened.next() => pause = FALLBACK_MIN,
                _ = sleep_until(wake_at) => pause = (pause * 2).min(FALLBACK_MAX),
                _ = cancel.cancelled() => return Ok(false),
            }
        }
    }
}
