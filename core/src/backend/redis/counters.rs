//! Counters on Redis: one string key per counter, `polylock_counter:{<key>}`, grown with
//! `INCRBY` (as Redisson's RIdGenerator and CosId's Redis segments do). `INCRBY` answers the
//! new end, so a range is `[end - count, end)`, handed out by one command that no other
//! caller can interleave with. Durability is Redis's own: with asynchronous replication or an
//! AOF that is not fsynced on every write, a failover can forget the last increments and hand
//! a range out again; run such counters with `appendfsync always` on a primary that does not
//! fail over, or on a backend with synchronous durability.

use std::ops::Range;
use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use redis::Script;

use super::link::Link;
use super::script_with;
use super::scripts::prefixed;
use crate::error::{Error, Result};
use crate::spi::CounterStore;

/// `INCRBY` behind a script, the one way `Link` sends commands (and runs them on the key's
/// node in a cluster). The new end is read back with GET, as text: a Lua number is a double,
/// which would round ends past 2^53.
static RESERVE: LazyLock<Script> =
    LazyLock::new(|| Script::new("redis.call('incrby', KEYS[1], ARGV[1]) return redis.call('get', KEYS[1])"));

static CURRENT: LazyLock<Script> = LazyLock::new(|| Script::new("return redis.call('get', KEYS[1])"));

/// The key counter `key` is kept under.
pub(super) fn counter_key(key: &str) -> String {
    prefixed("polylock_counter", key)
}

pub(super) struct RedisCounters {
    pub link: Arc<Link>,
}

#[async_trait]
impl CounterStore for RedisCounters {
    async fn reserve(&self, key: &str, count: u64) -> Result<Range<u64>> {
        if count == 0 {
            return Err(Error::invalid_argument("a counter range must hold at least one value"));
        }
        let step = i64::try_from(count).map_err(|_| {
            Error::invalid_argument(format!("a counter range of {count} is too large for redis (at most 2^63-1)"))
        })?;
        let mut invocation = script_with(&RESERVE, &[&counter_key(key)]);
        invocation.arg(step);
        // Redis refuses an increment past 2^63-1 with an error, leaving the counter as it was.
        let end: i64 = self.link.invoke(&invocation).await?;
        let end = u64::try_from(end)
            .map_err(|_| Error::backend(format!("counter '{key}' stands at {end} on redis: not a polylock counter")))?;
        end.checked_sub(count).map(|start| start..end).ok_or_else(|| {
            Error::backend(format!("counter '{key}' stands at {end} on redis after a reservation of {count}"))
        })
    }

    async fn current(&self, key: &str) -> Result<u64> {
        let end: Option<i64> = self.link.invoke(&script_with(&CURRENT, &[&counter_key(key)])).await?;
        u64::try_from(end.unwrap_or(0))
            .map_err(|_| Error::backend(format!("counter '{key}' holds a negative number on redis")))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::spi::contract::{self, Prefixed};

    fn env_url(var: &str, default: &str) -> String {
        std::env::var(var).unwrap_or_else(|_| default.to_string())
    }

    pub(in crate::backend::redis) fn server_urls() -> Vec<(&'static str, String)> {
        let mut urls = vec![
            ("single", env_url("POLYLOCK_TEST_REDIS_URL", "redis://127.0.0.1:16379")),
            (
                "cluster",
                env_url(
                    "POLYLOCK_TEST_REDIS_CLUSTER_URL",
                    "redis+cluster://127.0.0.1:17001,127.0.0.1:17002,127.0.0.1:17003",
                ),
            ),
            (
                "sentinel",
                env_url("POLYLOCK_TEST_REDIS_SENTINEL_URL", "redis+sentinel://127.0.0.1:26380/polylock-master"),
            ),
        ];
        // The TLS server's URL carries its password; tests/services sets it.
        if let Ok(url) = std::env::var("POLYLOCK_TEST_REDIS_TLS_URL") {
            urls.push(("tls", url));
        }
        urls
    }

    pub(in crate::backend::redis) async fn open(url: &str) -> Arc<super::super::RedisBackend> {
        let mut url = crate::url::ConnectUrl::parse(url).unwrap();
        Arc::new(super::super::RedisBackend::open(&mut url).await.unwrap())
    }

    pub(in crate::backend::redis) fn run_prefix(server: &str) -> String {
        format!("test-{server}-{}-{}:", std::process::id(), fastrand::u64(..))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn counters_keep_the_contract_on_every_redis_deployment() {
        if crate::servers_off_in_tests() {
            return;
        }
        for (server, url) in server_urls() {
            let backend = open(&url).await;
            let counters = || RedisCounters { link: backend.link.clone() };
            contract::counters(&Prefixed::new(counters(), run_prefix(server))).await;
            contract::counters_never_overlap(Arc::new(Prefixed::new(counters(), run_prefix(server)))).await;
        }
    }

    /// Two clients (two connections, as two processes would have) reserving at once on one
    /// counter: the ranges of both together never overlap and leave no gap.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_clients_reserving_at_once_never_overlap() {
        if crate::servers_off_in_tests() {
            return;
        }
        for (server, url) in server_urls() {
            let prefix = run_prefix(server);
            let mut tasks = Vec::new();
            for _ in 0..2 {
                let backend = open(&url).await;
                let counters = RedisCounters { link: backend.link.clone() };
                let key = format!("{prefix}both");
                tasks.push(tokio::spawn(async move {
                    let mut ranges = Vec::new();
                    for _ in 0..50 {
                        ranges.push(counters.reserve(&key, 3).await.unwrap());
                    }
                    drop(backend);
                    ranges
                }));
            }
            let mut all = Vec::new();
            for task in tasks {
                all.extend(task.await.unwrap());
            }
            all.sort_by_key(|r| r.start);
            for pair in all.windows(2) {
                assert_eq!(pair[0].end, pair[1].start, "{server}: {:?} then {:?}", pair[0], pair[1]);
            }
            assert_eq!(all.last().unwrap().end, 2 * 50 * 3, "{server}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_counter_is_a_plain_string_key_and_refuses_to_grow_past_i64() {
        if crate::servers_off_in_tests() {
            return;
        }
        let backend = open(&server_urls()[0].1).await;
        let counters = RedisCounters { link: backend.link.clone() };
        let key = format!("{}big", run_prefix("single"));
        let half = 1u64 << 62;
        assert_eq!(counters.reserve(&key, half).await.unwrap(), 0..half);
        assert_eq!(counters.reserve(&key, half - 1).await.unwrap(), half..2 * half - 1);
        assert!(counters.reserve(&key, 2).await.is_err(), "past 2^63-1");
        assert_eq!(counters.current(&key).await.unwrap(), 2 * half - 1, "a refused reservation takes nothing");
        let err = counters.reserve(&key, u64::MAX).await.unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
    }
}
