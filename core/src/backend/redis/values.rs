//! Versioned values on Redis: one hash per value, `polylock_value:{<key>}`, with the fields
//! `value` and `version`, written by Lua compare-and-set scripts. A write bumps `version` with
//! `HINCRBY`; a delete removes only the `value` field, so the hash stays behind as a tombstone
//! holding the last version and a value created again later gets a greater one: an old version
//! never matches again. One key per value, so every script runs on one node of a cluster.
//!
//! Every write and delete publishes the new version (a delete: `deleted`) on
//! `polylock_value_channel:{<key>}` (sharded pub/sub on a Redis 7 cluster), which wakes the
//! value's watchers.
//!
//! The store's clock (for idempotency records' times) is the server's `TIME`, read by a
//! keyless script (on a cluster: whichever node it lands on) at most every
//! `CLOCK_REFRESH` and carried forward on this process's monotonic clock in between.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;

use super::link::Link;
use super::pubsub::{Subscription, Subscriptions};
use super::script_with;
use super::scripts::prefixed;
use crate::backend::poll::Wakeups;
use crate::error::Result;
use crate::spi::{MeasuredClock, ValueChanges, VersionStore, Versioned, Write};

/// How long a reading of the server's clock is carried forward before it is read again.
const CLOCK_REFRESH: Duration = Duration::from_secs(5);

/// The server's clock: `{seconds, microseconds}` as text.
static TIME: LazyLock<Script> = LazyLock::new(|| Script::new("return redis.call('time')"));

/// `{value, version}` or nil when the value is absent (never written, or deleted).
static GET: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local got = redis.call('hmget', KEYS[1], 'value', 'version')
if got[1] then return {got[1], got[2]} end
return false
",
    )
});

/// KEYS[2]: the value's channel. ARGV[1]: the version expected, '' for "no value"; ARGV[2]:
/// the new value; ARGV[3]: the publish command.
/// Versions travel as text (a Lua number is a double).
/// `{1, new version, false}` when written, else `{0, version, value}` of what is there
/// (`{0, false, false}` when nothing is).
static COMPARE_AND_SET: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local got = redis.call('hmget', KEYS[1], 'value', 'version')
local matches
if got[1] then matches = (got[2] == ARGV[1]) else matches = (ARGV[1] == '') end
if not matches then return {0, got[1] and got[2], got[1]} end
local version = redis.call('hincrby', KEYS[1], 'version', 1)
redis.call('hset', KEYS[1], 'value', ARGV[2])
redis.call(ARGV[3], KEYS[2], version)
return {1, tostring(version), false}
",
    )
});

/// KEYS[2]: the value's channel. ARGV[1]: the version expected; ARGV[2]: the publish command.
/// 1 if the value was removed (its version stays).
static DELETE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local got = redis.call('hmget', KEYS[1], 'value', 'version')
if got[1] and got[2] == ARGV[1] then
  redis.call('hdel', KEYS[1], 'value')
  redis.call(ARGV[2], KEYS[2], 'deleted')
  return 1
end
return 0
",
    )
});

/// The hash value `key` is kept in.
pub(super) fn value_key(key: &str) -> String {
    prefixed("polylock_value", key)
}

/// The channel writes of value `key` are announced on.
fn value_channel(key: &str) -> String {
    prefixed("polylock_value_channel", key)
}

pub(super) struct RedisValues {
    pub link: Arc<Link>,
    subscriptions: Arc<Subscriptions>,
    clock: MeasuredClock,
}

impl RedisValues {
    pub fn new(link: Arc<Link>, subscriptions: Arc<Subscriptions>) -> RedisValues {
        RedisValues { link, subscriptions, clock: MeasuredClock::new(CLOCK_REFRESH) }
    }

    /// The server's `TIME` in milliseconds.
    async fn server_millis(&self) -> Result<u64> {
        let (seconds, micros): (u64, u64) = self.link.invoke(&script_with(&TIME, &[])).await?;
        Ok(seconds * 1000 + micros / 1000)
    }
}

#[async_trait]
impl VersionStore for RedisValues {
    async fn get(&self, key: &str) -> Result<Option<Versioned>> {
        let got: Option<(Vec<u8>, u64)> = self.link.invoke(&script_with(&GET, &[&value_key(key)])).await?;
        Ok(got.map(|(value, version)| Versioned { value, version }))
    }

    async fn compare_and_set(&self, key: &str, expected: Option<u64>, value: &[u8]) -> Result<Write> {
        let mut invocation = script_with(&COMPARE_AND_SET, &[&value_key(key), &value_channel(key)]);
        invocation.arg(expected.map(|v| v.to_string()).unwrap_or_default()).arg(value).arg(self.link.publish_command());
        let (written, version, current): (i64, Option<u64>, Option<Vec<u8>>) = self.link.invoke(&invocation).await?;
        Ok(match (written, version, current) {
            (1, Some(version), _) => Write::Written { version },
            (_, Some(version), Some(value)) => Write::Conflict { current: Some(Versioned { value, version }) },
            _ => Write::Conflict { current: None },
        })
    }

    async fn delete(&self, key: &str, expected: u64) -> Result<bool> {
        let mut invocation = script_with(&DELETE, &[&value_key(key), &value_channel(key)]);
        invocation.arg(expected.to_string()).arg(self.link.publish_command());
        let removed: i64 = self.link.invoke(&invocation).await?;
        Ok(removed == 1)
    }

    async fn now_millis(&self) -> Result<Option<u64>> {
        self.clock.now_millis(|| self.server_millis()).await.map(Some)
    }

    /// Subscribed (and confirmed by the server) before this returns. A lost connection
    /// wakes the watcher too, since messages may have been missed.
    async fn changes(&self, key: &str) -> Result<Option<Box<dyn ValueChanges>>> {
        let subscription = self.subscriptions.listen_all(&value_channel(key)).await?;
        Ok(Some(Box::new(RedisChanges { subscription })))
    }
}

/// A subscription to one value's channel.
struct RedisChanges {
    subscription: Subscription,
}

#[async_trait]
impl ValueChanges for RedisChanges {
    async fn changed(&mut self) -> Result<()> {
        self.subscription.next().await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::redis::counters::tests::{open, run_prefix, server_urls};
    use crate::spi::contract::{self, Prefixed};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn values_keep_the_contract_on_every_redis_deployment() {
        if crate::servers_off_in_tests() {
            return;
        }
        for (server, url) in server_urls() {
            let backend = open(&url).await;
            let values = RedisValues::new(backend.link.clone(), backend.subscriptions.clone());
            contract::versions(&Prefixed::new(values, run_prefix(server))).await;
        }
    }

    /// Binary and empty values come back as written, and an empty value is a value, not a
    /// deletion.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn binary_and_empty_values_round_trip() {
        if crate::servers_off_in_tests() {
            return;
        }
        let backend = open(&server_urls()[0].1).await;
        let values = RedisValues::new(backend.link.clone(), backend.subscriptions.clone());
        let key = format!("{}bytes", run_prefix("single"));
        let bytes = [0u8, 255, 10, 13, 0, 1];
        let Write::Written { version } = values.compare_and_set(&key, None, &bytes).await.unwrap() else { panic!() };
        assert_eq!(values.get(&key).await.unwrap(), Some(Versioned { value: bytes.to_vec(), version }));
        let Write::Written { version: empty } = values.compare_and_set(&key, Some(version), b"").await.unwrap() else {
            panic!()
        };
        assert_eq!(values.get(&key).await.unwrap(), Some(Versioned { value: Vec::new(), version: empty }));
        assert!(matches!(
            values.compare_and_set(&key, None, b"x").await.unwrap(),
            Write::Conflict { current: Some(_) }
        ));
    }
}
