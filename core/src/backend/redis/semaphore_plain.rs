//! Redisson's plain `RSemaphore` (RedissonSemaphore.java), the opt-in unowned layout: the
//! string counter `NAME` (permits available; absent means none, until `trySetPermits`) and the
//! channel `redisson_sc:{NAME}`, where every release publishes the count after it. The scripts
//! are Redisson's, so polylock and Redisson take and give back permits of one name together.
//!
//! Nobody owns these permits: a holder that crashes before giving them back leaks them for
//! good (Redisson's issues #2045, #4462; its answer is RPermitExpirableSemaphore, polylock's
//! default semaphore on Redis). The counter is the one RPermitExpirableSemaphore uses too.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use super::link::Link;
use super::pubsub::Subscriptions;
use super::script_with;
use super::scripts::{guarded, Shape};
use super::semaphore_scripts::SemaphoreKeys;
use crate::backend::poll::Wakeups;
use crate::error::Result;
use crate::spi::PlainPermitStore;

/// Only a fallback: releases publish on the channel. It catches a count raised without a
/// message (a plain `SET`, `INCRBY` from outside).
const FALLBACK_MIN: Duration = Duration::from_millis(10);
const FALLBACK_MAX: Duration = Duration::from_millis(250);

/// `tryAcquireAsync(permits)`. KEYS: counter. ARGV: permits. 1 if taken, else 0.
static TRY_ACQUIRE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&guarded(
        &[Shape::Number],
        r"
local value = redis.call('get', KEYS[1])
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
  redis.call('decrby', KEYS[1], ARGV[1])
  return 1
end
return 0
",
    ))
});

/// `releaseAsync(permits)`. KEYS: counter, channel. ARGV: permits, publish command.
/// Returns the count after.
static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local value = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], value)
return value
",
    )
});

/// `trySetPermitsAsync(permits)`. KEYS: counter, channel. ARGV: permits, publish command.
/// 1 if set, 0 if the semaphore had a count.
static TRY_SET_PERMITS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local value = redis.call('get', KEYS[1])
if (value == false) then
  redis.call('set', KEYS[1], ARGV[1])
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
",
    )
});

/// `addPermitsAsync(permits)`. KEYS: counter, channel. ARGV: delta, publish command.
static ADD_PERMITS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local value = redis.call('get', KEYS[1])
if (value == false) then value = 0 end
redis.call('set', KEYS[1], tonumber(value) + tonumber(ARGV[1]))
redis.call(ARGV[2], KEYS[2], tonumber(value) + tonumber(ARGV[1]))
return 1
",
    )
});

/// `drainPermitsAsync()`. KEYS: counter. Returns the count taken.
static DRAIN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local value = redis.call('get', KEYS[1])
if (value == false) then return 0 end
redis.call('set', KEYS[1], 0)
return tonumber(value)
",
    )
});

/// `availablePermitsAsync()`. KEYS: counter.
static AVAILABLE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local value = redis.call('get', KEYS[1])
if (value == false) then return 0 end
return tonumber(value)
",
    )
});

pub(super) struct RedisPlainSemaphores {
    pub link: Arc<Link>,
    pub subscriptions: Arc<Subscriptions>,
}

impl RedisPlainSemaphores {
    async fn try_take(&self, key: &str, permits: u32) -> Result<bool> {
        let mut invocation = script_with(&TRY_ACQUIRE, &[key]);
        invocation.arg(permits);
        let taken: i64 = self.link.invoke(&invocation).await?;
        Ok(taken == 1)
    }
}

#[async_trait]
impl PlainPermitStore for RedisPlainSemaphores {
    async fn try_set_permits(&self, key: &str, permits: u32) -> Result<bool> {
        let keys = SemaphoreKeys::new(key);
        let mut invocation = script_with(&TRY_SET_PERMITS, &[key, &keys.channel()]);
        invocation.arg(permits).arg(self.link.publish_command());
        let set: i64 = self.link.invoke(&invocation).await?;
        Ok(set == 1)
    }

    async fn acquire(
        &self,
        key: &str,
        permits: u32,
        deadline: Option<Instant>,
        cancel: &CancellationToken,
    ) -> Result<bool> {
        // Redisson's order: try first, and only a waiter pays for a subscription.
        if self.try_take(key, permits).await? {
            return Ok(true);
        }
        let gave_up = || deadline.is_some_and(|d| Instant::now() >= d) || cancel.is_cancelled();
        if gave_up() {
            return Ok(false);
        }
        // Subscribed before the next attempt, so a release in between still wakes us.
        let mut released = self.subscriptions.listen_all(&SemaphoreKeys::new(key).channel()).await?;
        let mut pause = FALLBACK_MIN;
        loop {
            released.arm();
            if self.try_take(key, permits).await? {
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
                _ = released.next() => pause = FALLBACK_MIN,
                _ = sleep_until(wake_at) => pause = (pause * 2).min(FALLBACK_MAX),
                _ = cancel.cancelled() => return Ok(false),
            }
        }
    }

    async fn release(&self, key: &str, permits: u32) -> Result<i64> {
        let channel = SemaphoreKeys::new(key).channel();
        let mut invocation = script_with(&RELEASE, &[key, &channel]);
        invocation.arg(permits).arg(self.link.publish_command());
        let value: i64 = self.link.invoke(&invocation).await?;
        self.subscriptions.released_locally(&channel);
        Ok(value)
    }

    async fn available(&self, key: &str) -> Result<i64> {
        self.link.invoke(&script_with(&AVAILABLE, &[key])).await
    }

    async fn add_permits(&self, key: &str, delta: i32) -> Result<()> {
        let channel = SemaphoreKeys::new(key).channel();
        let mut invocation = script_with(&ADD_PERMITS, &[key, &channel]);
        invocation.arg(delta).arg(self.link.publish_command());
        self.link.invoke::<i64>(&invocation).await?;
        self.subscriptions.released_locally(&channel);
        Ok(())
    }

    async fn drain(&self, key: &str) -> Result<i64> {
        self.link.invoke(&script_with(&DRAIN, &[key])).await
    }
}
