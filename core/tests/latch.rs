//! Countdown latches (issue #18) against every backend: in-process memory, an SQLite file, and
//! the real redis-server, PostgreSQL, MariaDB, etcd and ZooKeeper of tests/services, each in a
//! private namespace. N count-downs from two clients release every waiter of both; a count is
//! refused while the latch is counting down and taken once it is open; a wait that runs out
//! answers false; the count never goes below zero. On Redis the latch is Redisson's
//! `RCountDownLatch` layout, read and written here with raw commands and Redisson's own scripts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use polylock::{Client, ErrorKind};
use redis::AsyncCommands;

use crate::common;
use common::{mariadb_url, postgres_url};

fn server_url(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_string())
}

fn redis_url() -> String {
    server_url("POLYLOCK_TEST_REDIS_URL", "redis://127.0.0.1:16379")
}

/// A name no other test (of this run or another engineer's) uses.
fn unique(what: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("latch-{what}-{}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed), fastrand::u32(..))
}

/// Every backend's URL, fresh for each test (a private mem:// store, a new SQLite file, a
/// private namespace on each server).
fn urls() -> (Vec<String>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let ns = unique("ns");
    let mut urls = vec![format!("mem://{ns}"), format!("sqlite://{}/latches.db", dir.path().display())];
    if !common::servers_on() {
        return (urls, dir);
    }
    for server in [
        redis_url(),
        postgres_url(),
        mariadb_url(),
        server_url("POLYLOCK_TEST_ETCD_URL", "etcd://127.0.0.1:12379"),
        server_url("POLYLOCK_TEST_ZOOKEEPER_URL", "zk://127.0.0.1:12181"),
    ] {
        let sep = if server.contains('?') { '&' } else { '?' };
        urls.push(format!("{server}{sep}namespace={ns}"));
    }
    (urls, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n_count_downs_release_every_waiter_of_every_client() {
    const COUNT: u64 = 5;
    let (urls, _dir) = urls();
    for url in urls {
        let clients = [Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap()];
        let name = unique("release");
        let latch = clients[0].latch(&name).unwrap();
        assert!(latch.try_set_count(COUNT).await.unwrap(), "{url}");
        let mut waiters = Vec::new();
        for waiter in 0..4 {
            let latch = clients[waiter % 2].latch(&name).unwrap();
            waiters.push(tokio::spawn(async move { latch.try_await_zero(Some(Duration::from_secs(30))).await }));
        }
        for n in 0..COUNT {
            // Every waiter is still waiting until the last count-down.
            assert!(waiters.iter().all(|waiter| !waiter.is_finished()), "{url}: a waiter left at {n} of {COUNT}");
            clients[(n % 2) as usize].latch(&name).unwrap().count_down().await.unwrap();
            assert_eq!(latch.count().await.unwrap(), COUNT - n - 1, "{url}");
        }
        for waiter in waiters {
            assert!(waiter.await.unwrap().unwrap(), "{url}: a waiter was not released by the last count-down");
        }
        for client in clients {
            client.close().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_is_refused_while_counting_down_and_taken_once_open() {
    let (urls, _dir) = urls();
    for url in urls {
        let client = Client::connect(&url).await.unwrap();
        let other = Client::connect(&url).await.unwrap();
        let name = unique("set");
        let latch = client.latch(&name).unwrap();
        assert_eq!(latch.count().await.unwrap(), 0, "{url}: a latch never set is open");
        assert!(latch.try_await_zero(Some(Duration::ZERO)).await.unwrap(), "{url}");
        latch.await_zero(Some(Duration::ZERO)).await.unwrap();
        assert!(latch.try_set_count(2).await.unwrap(), "{url}");
        assert!(!other.latch(&name).unwrap().try_set_count(7).await.unwrap(), "{url}: refused at 2");
        assert_eq!(latch.count().await.unwrap(), 2, "{url}: the refused count changed nothing");
        latch.count_down().await.unwrap();
        assert!(!latch.try_set_count(7).await.unwrap(), "{url}: refused at 1");
        latch.count_down().await.unwrap();
        assert!(other.latch(&name).unwrap().try_set_count(3).await.unwrap(), "{url}: an open latch takes a count");
        assert_eq!(latch.count().await.unwrap(), 3, "{url}");
        let err = latch.try_set_count(0).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{url}: {err}");
        client.close().await;
        other.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_runs_out_is_false_or_timeout_and_the_count_never_goes_below_zero() {
    let (urls, _dir) = urls();
    for url in urls {
        let client = Client::connect(&url).await.unwrap();
        let name = unique("timeout");
        let latch = client.latch(&name).unwrap();
        assert!(latch.try_set_count(1).await.unwrap(), "{url}");
        assert!(!latch.try_await_zero(Some(Duration::from_millis(150))).await.unwrap(), "{url}: the wait ran out");
        assert!(!latch.try_await_zero(Some(Duration::ZERO)).await.unwrap(), "{url}: a zero wait looks once");
        // The waiting form: the same wait running out is an error of kind Timeout.
        let err = latch.await_zero(Some(Duration::from_millis(150))).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout, "{url}: {err}");
        assert!(err.to_string().contains(&name), "{url}: the error names the latch: {err}");
        assert_eq!(latch.count().await.unwrap(), 1, "{url}");
        for _ in 0..3 {
            latch.count_down().await.unwrap();
            assert_eq!(latch.count().await.unwrap(), 0, "{url}: below zero");
        }
        latch.await_zero(Some(Duration::from_millis(150))).await.unwrap();
        // Counting an open latch down did not leave it owing: one new count, one count-down.
        assert!(latch.try_set_count(1).await.unwrap(), "{url}");
        latch.count_down().await.unwrap();
        assert_eq!(latch.count().await.unwrap(), 0, "{url}");
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_ends_a_wait_with_a_connection_error() {
    let (urls, _dir) = urls();
    for url in urls {
        let client = Client::connect(&url).await.unwrap();
        let latch = client.latch(&unique("close")).unwrap();
        assert!(latch.try_set_count(1).await.unwrap(), "{url}");
        let waiter = tokio::spawn({
            let latch = latch.clone();
            async move { latch.await_zero(None).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        client.close().await;
        let err = waiter.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Connection, "{url}: {err}");
        assert_eq!(latch.count().await.unwrap_err().kind(), ErrorKind::Connection, "{url}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_names_and_redlock_get_typed_errors() {
    let client = Client::connect("mem://latch-names").await.unwrap();
    assert_eq!(client.latch("").unwrap_err().kind(), ErrorKind::InvalidArgument);
    if common::servers_off() {
        return;
    }
    // RedLock has no one store to keep a count in (one vote of the one test server here: a URL
    // naming it three times is refused since issue 35).
    let redis = redis_url();
    let server = redis.trim_start_matches("redis://").split(['/', '?']).next().unwrap().to_string();
    let redlock = Client::connect(&format!("redlock://{server}")).await.unwrap();
    assert_eq!(redlock.latch("x").unwrap_err().kind(), ErrorKind::Unsupported);
    redlock.close().await;
}

/// The count is the string key `NAME` and the channel `redisson_countdownlatch__channel__{NAME}`
/// carries Redisson's messages: `1` for a new count, `0` when it reaches zero (and the key goes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_keeps_redissons_count_down_latch_layout() {
    if common::servers_off() {
        return;
    }
    let client = Client::connect(&redis_url()).await.unwrap();
    let name = unique("redisson");
    let latch = client.latch(&name).unwrap();
    let raw = redis::Client::open(redis_url()).unwrap();
    let mut conn = raw.get_multiplexed_async_connection().await.unwrap();
    let mut pubsub = raw.get_async_pubsub().await.unwrap();
    pubsub.subscribe(format!("redisson_countdownlatch__channel__{{{name}}}")).await.unwrap();
    let mut messages = pubsub.into_on_message();

    assert!(latch.try_set_count(2).await.unwrap());
    let stored: String = conn.get(&name).await.unwrap();
    assert_eq!(stored, "2");
    let first: i64 =
        tokio::time::timeout(Duration::from_secs(5), messages.next()).await.unwrap().unwrap().get_payload().unwrap();
    assert_eq!(first, 1, "NEW_COUNT_MESSAGE");
    latch.count_down().await.unwrap();
    let stored: String = conn.get(&name).await.unwrap();
    assert_eq!(stored, "1");
    latch.count_down().await.unwrap();
    let exists: bool = conn.exists(&name).await.unwrap();
    assert!(!exists, "the key is deleted at zero");
    let zero: i64 =
        tokio::time::timeout(Duration::from_secs(5), messages.next()).await.unwrap().unwrap().get_payload().unwrap();
    assert_eq!(zero, 0, "ZERO_COUNT_MESSAGE");

    // A count written the way Redisson writes it, counted down by Redisson's script, wakes a
    // polylock waiter.
    let _: () = conn.set(&name, 1).await.unwrap();
    assert_eq!(latch.count().await.unwrap(), 1);
    let waiter = tokio::spawn({
        let latch = latch.clone();
        async move { latch.await_zero(Some(Duration::from_secs(30))).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiter.is_finished());
    let _: () = redis::cmd("EVAL")
        .arg(
            "local v = redis.call('decr', KEYS[1]);\
             if v <= 0 then redis.call('del', KEYS[1]) end;\
             if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end;",
        )
        .arg(2)
        .arg(&name)
        .arg(format!("redisson_countdownlatch__channel__{{{name}}}"))
        .arg(0)
        .arg("publish")
        .query_async(&mut conn)
        .await
        .unwrap();
    waiter.await.unwrap().unwrap();
    client.close().await;
}
