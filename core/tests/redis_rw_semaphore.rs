//! Read-write locks and semaphores on the real redis-server of tests/services, in Redisson's
//! RReadWriteLock and RPermitExpirableSemaphore layouts: sharing and exclusion, reentrancy,
//! downgrade, fencing, leases and the watchdog's renewal of every key, waking by pub/sub,
//! permits under contention from several clients, a vanished holder's permit, and the raw
//! keys checked through a plain Redis connection. Interop with Redisson itself is in
//! bindings-jvm (RedissonRwSemaphoreInteropTest).
#![cfg(feature = "redis")]

use crate::common;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use polylock::{AcquireOptions, Client, ErrorKind};
use redis::AsyncCommands;
use tokio::time::{sleep, Instant};

fn env_url(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_string())
}

fn redis_url() -> String {
    env_url("POLYLOCK_TEST_REDIS_URL", "redis://127.0.0.1:16379")
}

fn cluster_url() -> String {
    env_url("POLYLOCK_TEST_REDIS_CLUSTER_URL", "redis+cluster://127.0.0.1:17001,127.0.0.1:17002,127.0.0.1:17003")
}

/// `url` with one more query option.
fn with_option(url: &str, option: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{option}")
}

/// A name no other test (or earlier run) uses.
fn unique(name: &str) -> String {
    format!("rwsem-{name}-{}-{}", std::process::id(), fastrand::u64(..))
}

async fn connect(url: &str) -> Client {
    Client::connect(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e} (start the servers with tests/services/services.sh start)"))
}

async fn raw() -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis_url()).unwrap().get_multiplexed_async_connection().await.unwrap()
}

fn wait(ms: u64) -> AcquireOptions {
    AcquireOptions::default().wait(Duration::from_millis(ms))
}

fn timeout_key(name: &str, field: &str, n: u32) -> String {
    format!("{{{name}}}:{field}:rwlock_timeout:{n}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_and_a_writer_excludes_readers_and_writers() {
    if common::servers_off() {
        return;
    }
    let (a, b) = (connect(&redis_url()).await, connect(&redis_url()).await);
    let name = unique("share");
    let read_a = a.rw_lock(&name).unwrap().read().acquire().await.unwrap();
    let read_b = b.rw_lock(&name).unwrap().read().acquire().await.unwrap();
    let writer = b.rw_lock(&name).unwrap();
    assert!(writer.write().try_acquire().await.unwrap().is_none(), "readers hold: no writer");
    assert!(writer.read().is_locked().await.unwrap());
    assert!(!writer.write().is_locked().await.unwrap());
    read_a.release().await.unwrap();
    assert!(writer.write().try_acquire().await.unwrap().is_none(), "one reader still holds");
    read_b.release().await.unwrap();
    let mut redis = raw().await;
    assert!(!redis.exists::<_, bool>(&name).await.unwrap(), "the last reader deletes the hash");

    let write = writer.write().try_acquire().await.unwrap().expect("free: the writer gets it");
    assert!(writer.write().is_locked().await.unwrap());
    let other = a.rw_lock(&name).unwrap();
    assert!(other.read().try_acquire().await.unwrap().is_none(), "a writer excludes readers");
    assert!(other.write().try_acquire().await.unwrap().is_none(), "a writer excludes writers");
    write.release().await.unwrap();
    let read = other.read().try_acquire().await.unwrap().expect("free again");
    read.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_sides_are_reentrant_and_count_holds_as_redisson_does() {
    if common::servers_off() {
        return;
    }
    let client = connect(&redis_url()).await;
    let name = unique("reenter");
    let lock = client.rw_lock(&name).unwrap();
    let field = lock.read().owner().to_string();
    let mut redis = raw().await;

    let first = lock.read().acquire().await.unwrap();
    let second = lock.read().acquire().await.unwrap();
    assert_eq!(lock.read().hold_count(), 2);
    assert_eq!(redis.hget::<_, _, u32>(&name, &field).await.unwrap(), 2);
    for n in 1..=2 {
        let pttl: i64 = redis.pttl(timeout_key(&name, &field, n)).await.unwrap();
        assert!(pttl > 0, "read hold {n} has its own timeout key with an expiry, got {pttl}");
    }
    second.release().await.unwrap();
    assert_eq!(redis.hget::<_, _, u32>(&name, &field).await.unwrap(), 1);
    assert!(!redis.exists::<_, bool>(timeout_key(&name, &field, 2)).await.unwrap(), "hold 2's key goes with it");
    first.release().await.unwrap();
    assert!(!redis.exists::<_, bool>(&name).await.unwrap());
    assert!(!redis.exists::<_, bool>(timeout_key(&name, &field, 1)).await.unwrap());

    let write_field = format!("{field}:write");
    let w1 = lock.write().acquire().await.unwrap();
    let w2 = lock.write().acquire().await.unwrap();
    assert_eq!(redis.hget::<_, _, u32>(&name, &write_field).await.unwrap(), 2);
    assert_eq!(redis.hget::<_, _, String>(&name, "mode").await.unwrap(), "write");
    w2.release().await.unwrap();
    assert!(client.rw_lock(&name).unwrap().read().try_acquire().await.unwrap().is_none(), "still written");
    w1.release().await.unwrap();
    assert!(!redis.exists::<_, bool>(&name).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writer_may_read_and_downgrade_and_an_upgrade_is_refused() {
    if common::servers_off() {
        return;
    }
    let client = connect(&redis_url()).await;
    let name = unique("downgrade");
    let lock = client.rw_lock(&name).unwrap();
    let field = lock.read().owner().to_string();
    let mut redis = raw().await;

    let write = lock.write().acquire().await.unwrap();
    let read = lock.read().try_acquire().await.unwrap().expect("the writer may also read");
    let other = client.rw_lock(&name).unwrap();
    assert!(other.read().try_acquire().await.unwrap().is_none(), "still written: others may not read");
    write.release().await.unwrap();
    assert_eq!(redis.hget::<_, _, String>(&name, "mode").await.unwrap(), "read", "downgraded to read mode");
    assert!(!redis.hexists::<_, _, bool>(&name, format!("{field}:write")).await.unwrap());
    let shared = other.read().try_acquire().await.unwrap().expect("after the downgrade others read too");
    let third = client.rw_lock(&name).unwrap();
    assert!(third.write().try_acquire().await.unwrap().is_none(), "readers hold: no writer");
    let err = lock.write().acquire_with(wait(0)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "a reader asking to write is refused at once: {err}");
    read.release().await.unwrap();
    shared.release().await.unwrap();
    assert!(!redis.exists::<_, bool>(&name).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_tokens_grow_across_sides_mutex_and_semaphore_of_one_name() {
    if common::servers_off() {
        return;
    }
    let client = connect(&redis_url()).await;
    let name = unique("fencing");
    let lock = client.rw_lock(&name).unwrap();
    let mut last = 0;
    for _ in 0..3 {
        let read = lock.read().acquire().await.unwrap();
        assert!(read.fencing_token() > last);
        last = read.fencing_token();
        read.release().await.unwrap();
        let write = lock.write().acquire().await.unwrap();
        assert!(write.fencing_token() > last);
        last = write.fencing_token();
        write.release().await.unwrap();
    }
    // One counter per name: the mutex of the name draws from the same one.
    let mutex = client.lock(&name).unwrap().acquire().await.unwrap();
    assert!(mutex.fencing_token() > last);
    last = mutex.fencing_token();
    mutex.release().await.unwrap();
    let read = lock.read().acquire().await.unwrap();
    assert!(read.fencing_token() > last);
    last = read.fencing_token();
    read.release().await.unwrap();
    let mut redis = raw().await;
    let counter: u64 = redis.get(format!("redisson_lock_token:{{{name}}}")).await.unwrap();
    assert!(counter >= last, "the counter is Redisson's RFencedLock counter of the name");

    let sem_name = unique("fencing-sem");
    let semaphore = client.semaphore(&sem_name, 2).unwrap();
    let p1 = semaphore.acquire().await.unwrap();
    let p2 = semaphore.acquire().await.unwrap();
    assert!(p2.fencing_token() > p1.fencing_token());
    p1.release().await.unwrap();
    let p3 = semaphore.acquire().await.unwrap();
    assert!(p3.fencing_token() > p2.fencing_token());
    p2.release().await.unwrap();
    p3.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_lease_that_runs_out_frees_the_hold_and_the_hash_with_its_last_reader() {
    if common::servers_off() {
        return;
    }
    let client = connect(&redis_url()).await;
    let name = unique("read-lease");
    let mut redis = raw().await;
    let short = client.rw_lock(&name).unwrap();
    let long = client.rw_lock(&name).unwrap();
    let lease = |ms| AcquireOptions::default().lease(Duration::from_millis(ms));
    let short_read = short.read().acquire_with(lease(400)).await.unwrap();
    let long_read = long.read().acquire_with(lease(1500)).await.unwrap();
    let short_field = short.read().owner().to_string();
    sleep(Duration::from_millis(700)).await;
    assert!(!redis.exists::<_, bool>(timeout_key(&name, &short_field, 1)).await.unwrap());
    assert!(short_read.is_lost(), "the short read hold's lease ran out");
    assert_eq!(short_read.release().await.unwrap_err().kind(), ErrorKind::Lost);
    // The hash lives on for the longer reader, and the writer still waits.
    assert!(redis.exists::<_, bool>(&name).await.unwrap());
    assert!(client.rw_lock(&name).unwrap().write().try_acquire().await.unwrap().is_none());
    sleep(Duration::from_millis(1100)).await;
    assert!(long_read.is_lost());
    assert!(!redis.exists::<_, bool>(&name).await.unwrap(), "the hash expired with its last reader");
    let write = client.rw_lock(&name).unwrap().write().try_acquire().await.unwrap();
    assert!(write.is_some(), "nothing holds it any more");
    write.unwrap().release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_keeps_a_read_hold_and_renews_every_timeout_key() {
    if common::servers_off() {
        return;
    }
    // A 600 ms watchdog lease, renewed every 200 ms.
    let client = connect(&with_option(&redis_url(), "lease=600ms")).await;
    let name = unique("watchdog");
    let lock = client.rw_lock(&name).unwrap();
    let field = lock.read().owner().to_string();
    let first = lock.read().acquire().await.unwrap();
    let second = lock.read().acquire().await.unwrap();
    let mut redis = raw().await;
    let started = Instant::now();
    // Well past three leases: only renewals can keep the keys.
    while started.elapsed() < Duration::from_millis(2000) {
        sleep(Duration::from_millis(150)).await;
        for n in 1..=2 {
            let pttl: i64 = redis.pttl(timeout_key(&name, &field, n)).await.unwrap();
            assert!(pttl > 0 && pttl <= 600, "timeout key {n} renewed to the lease, got {pttl}");
        }
        let hash_pttl: i64 = redis.pttl(&name).await.unwrap();
        assert!(hash_pttl > 0, "the hash is renewed too, got {hash_pttl}");
    }
    assert!(!first.is_lost() && !second.is_lost());
    assert!(client.rw_lock(&name).unwrap().write().try_acquire().await.unwrap().is_none());
    second.release().await.unwrap();
    first.release().await.unwrap();
    assert!(!redis.exists::<_, bool>(&name).await.unwrap());
}

/// A writer of another client waits behind a reader whose lease is long; the reader's release
/// is announced on `redisson_rwlock:{name}` and the writer gets the lock before that lease
/// would have ended, and only after the release.
async fn a_waiting_writer_is_woken_by_the_release(url: &str, raw_url: Option<&str>) {
    let (reader_client, writer_client) = (connect(url).await, connect(url).await);
    let name = unique("wake");
    let lease = Duration::from_secs(20);
    let reader = reader_client.rw_lock(&name).unwrap();
    let read = reader.read().acquire_with(AcquireOptions::default().lease(lease)).await.unwrap();
    let read_lease_end = Instant::now() + lease;
    let writer = writer_client.rw_lock(&name).unwrap();
    let waiting = tokio::spawn(async move {
        let write = writer.write().acquire_with(wait(15_000)).await.unwrap();
        let at = Instant::now();
        write.release().await.unwrap();
        at
    });
    sleep(Duration::from_millis(500)).await;
    if let Some(raw_url) = raw_url {
        let mut redis = redis::Client::open(raw_url).unwrap().get_multiplexed_async_connection().await.unwrap();
        let listeners: Vec<(String, i64)> = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(format!("redisson_rwlock:{{{name}}}"))
            .query_async(&mut redis)
            .await
            .unwrap();
        assert!(listeners[0].1 >= 1, "the writer listens on Redisson's channel: {listeners:?}");
    }
    assert!(!waiting.is_finished(), "the writer waits while the reader holds");
    let released_at = Instant::now();
    read.release().await.unwrap();
    let acquired_at = waiting.await.unwrap();
    assert!(acquired_at >= released_at, "the writer got in only after the release");
    assert!(acquired_at < read_lease_end, "the writer got in before the reader's lease would have ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_writer_is_woken_by_the_last_readers_release() {
    if common::servers_off() {
        return;
    }
    a_waiting_writer_is_woken_by_the_release(&redis_url(), Some(&redis_url())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_rw_locks_and_semaphores_keep_their_keys_in_one_slot() {
    if common::servers_off() {
        return;
    }
    let url = cluster_url();
    let client = connect(&url).await;
    // Several names, spread over the three masters; one with its own hash tag.
    let mut names: Vec<String> = (0..4).map(|i| unique(&format!("cluster-{i}"))).collect();
    names.push(format!("{{{}}}:tagged", unique("cluster-tag")));
    for name in &names {
        let a = client.rw_lock(name).unwrap();
        let b = client.rw_lock(name).unwrap();
        let read_a = a.read().acquire().await.unwrap();
        let read_b = b.read().acquire().await.unwrap();
        let again = a.read().acquire().await.unwrap();
        assert!(client.rw_lock(name).unwrap().write().try_acquire().await.unwrap().is_none());
        again.release().await.unwrap();
        read_a.release().await.unwrap();
        read_b.release().await.unwrap();
        let write = a.write().acquire().await.unwrap();
        let downgrade = a.read().acquire().await.unwrap();
        write.release().await.unwrap();
        downgrade.release().await.unwrap();

        let semaphore = client.semaphore(name, 2).unwrap_or_else(|e| panic!("{name}: {e}"));
        let p1 = semaphore.acquire().await.unwrap();
        let p2 = semaphore.acquire().await.unwrap();
        assert!(semaphore.try_acquire().await.unwrap().is_none(), "{name}: two permits only");
        p1.release().await.unwrap();
        p2.release().await.unwrap();
    }
    a_waiting_writer_is_woken_by_the_release(&url, None).await;
}

/// Sentinel and TLS reach the same scripts through other connections: both primitives work
/// there too, when tests/services runs those servers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_and_tls_offer_both_primitives() {
    if common::servers_off() {
        return;
    }
    let mut urls = vec![(
        "sentinel",
        env_url("POLYLOCK_TEST_REDIS_SENTINEL_URL", "redis+sentinel://127.0.0.1:26380/polylock-master"),
    )];
    // The TLS server's URL carries its password; tests/services sets it.
    if let Ok(url) = std::env::var("POLYLOCK_TEST_REDIS_TLS_URL") {
        urls.push(("tls", url));
    }
    for (server, url) in urls {
        let client = connect(&url).await;
        assert!(client.capabilities().rw_locks && client.capabilities().semaphores, "{server}");
        let name = unique("sentinel-tls");
        let read = client.rw_lock(&name).unwrap().read().acquire().await.unwrap();
        let other = client.rw_lock(&name).unwrap().read().acquire().await.unwrap();
        assert!(client.rw_lock(&name).unwrap().write().try_acquire().await.unwrap().is_none(), "{server}");
        read.release().await.unwrap();
        other.release().await.unwrap();
        let write = client.rw_lock(&name).unwrap().write().acquire().await.unwrap();
        write.release().await.unwrap();
        let semaphore = client.semaphore(&unique("sentinel-tls-sem"), 1).unwrap();
        let permit = semaphore.acquire().await.unwrap();
        assert!(semaphore.try_acquire().await.unwrap().is_none(), "{server}");
        permit.release().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_never_exceed_n_under_contention_from_several_clients() {
    if common::servers_off() {
        return;
    }
    const PERMITS: u32 = 3;
    let name = unique("contention");
    let holding = Arc::new(AtomicU32::new(0));
    let most = Arc::new(AtomicU32::new(0));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let client = Arc::new(connect(&redis_url()).await);
        for _ in 0..3 {
            let (client, name, holding, most) = (client.clone(), name.clone(), holding.clone(), most.clone());
            tasks.push(tokio::spawn(async move {
                let semaphore = client.semaphore(&name, PERMITS).unwrap();
                for _ in 0..8 {
                    let permit = semaphore.acquire_with(wait(30_000)).await.unwrap();
                    let now = holding.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    sleep(Duration::from_millis(fastrand::u64(1..5))).await;
                    holding.fetch_sub(1, Ordering::SeqCst);
                    permit.release().await.unwrap();
                }
            }));
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
    let most = most.load(Ordering::SeqCst);
    assert!(most <= PERMITS, "{most} holders at once with {PERMITS} permits");
    assert!(most >= 2, "the permits were shared: at most {most} at once");
    let mut redis = raw().await;
    assert_eq!(redis.get::<_, u32>(&name).await.unwrap(), PERMITS, "every permit came back");
    assert_eq!(redis.zcard::<_, u32>(format!("{{{name}}}:timeout")).await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_holders_permit_comes_back_at_its_lease_end() {
    if common::servers_off() {
        return;
    }
    let name = unique("vanished");
    // The holder: a client on its own runtime, with a 900 ms watchdog lease, that stops
    // without releasing anything (its runtime is torn down: no release, no renewal).
    let holder_name = name.clone();
    let (taken_at, holder_id) = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let (taken_at, id, client, permit) = runtime.block_on(async {
            let client = connect(&with_option(&redis_url(), "lease=900ms")).await;
            let permit = client.semaphore(&holder_name, 1).unwrap().acquire().await.unwrap();
            (Instant::now(), client.id(), client, permit)
        });
        std::mem::forget(permit);
        std::mem::forget(client);
        runtime.shutdown_background();
        (taken_at, id)
    })
    .join()
    .unwrap();
    let client = connect(&redis_url()).await;
    assert_ne!(client.id(), holder_id);
    let semaphore = client.semaphore(&name, 1).unwrap();
    let permit = semaphore.acquire_with(wait(10_000)).await.unwrap();
    assert!(taken_at.elapsed() >= Duration::from_millis(900), "the permit came back only at the lease end");
    permit.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_count_for_a_name_is_invalid_argument_that_says_so() {
    if common::servers_off() {
        return;
    }
    let client = connect(&redis_url()).await;
    let name = unique("count");
    let permit = client.semaphore(&name, 3).unwrap().acquire().await.unwrap();
    let err = client.semaphore(&name, 5).unwrap().acquire_with(wait(0)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("has 3 permits") && err.message().contains("with 5"), "{err}");
    // A name Redisson's trySetPermits set first fixes the count the same way.
    let mut redis = raw().await;
    let preset = unique("count-preset");
    let _: () = redis.set(&preset, 2).await.unwrap();
    let err = client.semaphore(&preset, 4).unwrap().acquire_with(wait(0)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let ok = client.semaphore(&preset, 2).unwrap().acquire().await.unwrap();
    ok.release().await.unwrap();
    permit.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releasing_an_expired_permit_reports_it_lost_and_counts_it_back_once() {
    if common::servers_off() {
        return;
    }
    let client = connect(&redis_url()).await;
    let name = unique("expired");
    let semaphore = client.semaphore(&name, 1).unwrap();
    let permit = semaphore.acquire_with(AcquireOptions::default().lease(Duration::from_millis(300))).await.unwrap();
    sleep(Duration::from_millis(600)).await;
    assert!(permit.is_lost());
    assert_eq!(permit.release().await.unwrap_err().kind(), ErrorKind::Lost);
    let mut redis = raw().await;
    let next = semaphore.acquire_with(wait(0)).await.unwrap();
    assert_eq!(redis.get::<_, u32>(&name).await.unwrap(), 0, "one permit, taken again: the expired one counted once");
    next.release().await.unwrap();
    assert_eq!(redis.get::<_, u32>(&name).await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_renews_a_permits_lease_in_the_sorted_set() {
    if common::servers_off() {
        return;
    }
    let client = connect(&with_option(&redis_url(), "lease=600ms")).await;
    let name = unique("permit-watchdog");
    let semaphore = client.semaphore(&name, 1).unwrap();
    let permit = semaphore.acquire().await.unwrap();
    let mut redis = raw().await;
    let timeouts = format!("{{{name}}}:timeout");
    let first: Vec<(Vec<u8>, f64)> = redis.zrange_withscores(&timeouts, 0, -1).await.unwrap();
    sleep(Duration::from_millis(1800)).await;
    let later: Vec<(Vec<u8>, f64)> = redis.zrange_withscores(&timeouts, 0, -1).await.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(later.len(), 1, "the permit is still there, three leases later");
    assert_eq!(first[0].0, later[0].0);
    assert!(later[0].1 > first[0].1 + 1000.0, "its score moved with the renewals");
    assert!(!permit.is_lost());
    assert!(semaphore.try_acquire().await.unwrap().is_none());
    permit.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_raw_layout_is_redissons() {
    if common::servers_off() {
        return;
    }
    let client = connect(&redis_url()).await;
    let mut redis = raw().await;

    let name = unique("layout-rw");
    let lock = client.rw_lock(&name).unwrap();
    let field = lock.read().owner().to_string();
    let (uuid, owner) = field.split_once(':').unwrap();
    assert_eq!(uuid.len(), 36, "the client's uuid, as Redisson's field has it: {field}");
    assert!(owner.parse::<u64>().is_ok());
    let read = lock.read().acquire().await.unwrap();
    let mut hash: Vec<(String, String)> = redis.hgetall(&name).await.unwrap();
    hash.sort();
    let mut expected = vec![("mode".to_string(), "read".to_string()), (field.clone(), "1".to_string())];
    expected.sort();
    assert_eq!(hash, expected);
    assert_eq!(redis.get::<_, String>(timeout_key(&name, &field, 1)).await.unwrap(), "1");
    read.release().await.unwrap();
    let write = lock.write().acquire().await.unwrap();
    let mut hash: Vec<(String, String)> = redis.hgetall(&name).await.unwrap();
    hash.sort();
    let mut expected = vec![("mode".to_string(), "write".to_string()), (format!("{field}:write"), "1".to_string())];
    expected.sort();
    assert_eq!(hash, expected);
    assert!(redis.pttl::<_, i64>(&name).await.unwrap() > 0);
    write.release().await.unwrap();

    let name = unique("layout-sem");
    let semaphore = client.semaphore(&name, 3).unwrap();
    let before_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as f64;
    let permit = semaphore.acquire_with(AcquireOptions::default().lease(Duration::from_secs(60))).await.unwrap();
    assert_eq!(redis.get::<_, String>(&name).await.unwrap(), "2", "the counter holds the permits available");
    let taken: Vec<(Vec<u8>, f64)> = redis.zrange_withscores(format!("{{{name}}}:timeout"), 0, -1).await.unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].0.len(), 16, "the permit id is 16 raw bytes, as Redisson writes it");
    let expiry = taken[0].1;
    assert!(expiry >= before_ms + 59_000.0 && expiry <= before_ms + 61_000.0, "score = lease end in ms: {expiry}");
    permit.release().await.unwrap();
    assert_eq!(redis.get::<_, String>(&name).await.unwrap(), "3");
    assert_eq!(redis.zcard::<_, u32>(format!("{{{name}}}:timeout")).await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writer_preference_is_an_opt_in_that_keeps_new_readers_out() {
    if common::servers_off() {
        return;
    }
    let name = unique("prefer-writer");
    // Redisson's default: a reader joins a read-mode lock while a writer waits.
    let plain = connect(&redis_url()).await;
    let held = plain.rw_lock(&name).unwrap().read().acquire().await.unwrap();
    let writer = plain.rw_lock(&name).unwrap();
    let waiting = tokio::spawn(async move {
        let write = writer.write().acquire_with(wait(10_000)).await.unwrap();
        write.release().await.unwrap();
    });
    sleep(Duration::from_millis(300)).await;
    let joined = plain.rw_lock(&name).unwrap().read().try_acquire().await.unwrap();
    assert!(joined.is_some(), "reader preference: the new reader overtakes the waiting writer");
    joined.unwrap().release().await.unwrap();
    held.release().await.unwrap();
    waiting.await.unwrap();

    // With rw_preference=writer, the waiting writer's mark keeps new readers out.
    let name = unique("prefer-writer-on");
    let preferring = connect(&with_option(&redis_url(), "rw_preference=writer")).await;
    let held = preferring.rw_lock(&name).unwrap().read().acquire().await.unwrap();
    let writer = preferring.rw_lock(&name).unwrap();
    let waiting = tokio::spawn(async move {
        let write = writer.write().acquire_with(wait(10_000)).await.unwrap();
        let at = Instant::now();
        write.release().await.unwrap();
        at
    });
    sleep(Duration::from_millis(300)).await;
    assert!(preferring.rw_lock(&name).unwrap().read().try_acquire().await.unwrap().is_none(), "writer preference");
    let late_reader = preferring.rw_lock(&name).unwrap();
    let reading = tokio::spawn(async move {
        let read = late_reader.read().acquire_with(wait(10_000)).await.unwrap();
        let at = Instant::now();
        read.release().await.unwrap();
        at
    });
    sleep(Duration::from_millis(200)).await;
    held.release().await.unwrap();
    let (written_at, read_at) = (waiting.await.unwrap(), reading.await.unwrap());
    assert!(written_at <= read_at, "the waiting writer went before the later reader");

    let err = Client::connect(&with_option(&redis_url(), "rw_preference=sometimes")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
}

// ---------------------------------------------------------------------------------------
// Plain semaphores: Redisson's RSemaphore, the unowned opt-in

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_semaphores_are_redissons_counter_and_channel_and_nobody_owns_their_permits() {
    if common::servers_off() {
        return;
    }
    let (a, b) = (connect(&redis_url()).await, connect(&redis_url()).await);
    let mut raw = raw().await;
    let name = unique("plain");
    let (sa, sb) = (a.plain_semaphore(&name).unwrap(), b.plain_semaphore(&name).unwrap());
    assert_eq!(sa.available_permits().await.unwrap(), 0, "no count yet");
    assert!(!sa.try_acquire(1).await.unwrap(), "a semaphore without a count has no permits");
    assert!(sa.try_set_permits(3).await.unwrap());
    assert!(!sb.try_set_permits(5).await.unwrap(), "the count is set once");
    let counter: String = raw.get(&name).await.unwrap();
    assert_eq!(counter, "3", "the counter is the string at the name, as Redisson's");

    sa.acquire(2).await.unwrap();
    assert_eq!(raw.get::<_, String>(&name).await.unwrap(), "1");
    assert!(!sb.try_acquire(2).await.unwrap(), "two at once, one available");
    assert_eq!(sb.acquire_with(2, Some(Duration::from_millis(200))).await.unwrap_err().kind(), ErrorKind::Timeout);
    assert!(sb.try_acquire(1).await.unwrap());

    // A release publishes the count on redisson_sc:{name}, and anyone may release.
    let mut pubsub = redis::Client::open(redis_url()).unwrap().get_async_pubsub().await.unwrap();
    pubsub.subscribe(format!("redisson_sc:{{{name}}}")).await.unwrap();
    sb.release(2).await.unwrap(); // b gives back the permits a took
    let message = tokio::time::timeout(Duration::from_secs(5), async {
        use futures_util::StreamExt;
        pubsub.on_message().next().await.unwrap()
    })
    .await
    .expect("the release is published");
    assert_eq!(message.get_payload::<String>().unwrap(), "2");
    assert_eq!(sa.available_permits().await.unwrap(), 2);

    sa.add_permits(-3).await.unwrap();
    assert_eq!(sa.available_permits().await.unwrap(), -1, "addPermits may take more than there are");
    sa.add_permits(4).await.unwrap();
    assert_eq!(sa.drain_permits().await.unwrap(), 3);
    assert_eq!(sa.available_permits().await.unwrap(), 0);
    sa.release(0).await.unwrap();
    sa.acquire(0).await.unwrap();
    assert_eq!(raw.get::<_, String>(&name).await.unwrap(), "0", "no permits taken or given: nothing changed");
    let _: () = raw.del(&name).await.unwrap();
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_waiter_is_woken_by_another_clients_release_and_a_dropped_wait_takes_nothing() {
    if common::servers_off() {
        return;
    }
    let (a, b) = (connect(&redis_url()).await, connect(&redis_url()).await);
    let mut raw = raw().await;
    let name = unique("plain-wait");
    let semaphore = a.plain_semaphore(&name).unwrap();
    assert!(semaphore.try_set_permits(1).await.unwrap());
    semaphore.acquire(1).await.unwrap();

    let waiter = {
        let semaphore = b.plain_semaphore(&name).unwrap();
        tokio::spawn(async move { semaphore.acquire_with(1, Some(Duration::from_secs(20))).await })
    };
    sleep(Duration::from_millis(200)).await;
    let released = Instant::now();
    semaphore.release(1).await.unwrap();
    waiter.await.unwrap().expect("woken by the release");
    eprintln!("plain waiter woken {:?} after the release", released.elapsed());
    assert_eq!(raw.get::<_, String>(&name).await.unwrap(), "0");

    // Waits dropped at many moments, some as the permit comes back: none keeps a permit.
    for round in 0..20u64 {
        let waiter = {
            let semaphore = b.plain_semaphore(&name).unwrap();
            tokio::spawn(async move { semaphore.acquire(1).await })
        };
        sleep(Duration::from_micros(300 * round)).await;
        semaphore.release(1).await.unwrap();
        waiter.abort();
        if let Ok(Ok(())) = waiter.await {
            semaphore.release(1).await.unwrap(); // it got the permit before the abort: give it back
        }
        // What a dropped call took comes back in the background.
        let deadline = Instant::now() + Duration::from_secs(5);
        while semaphore.available_permits().await.unwrap() != 1 {
            assert!(Instant::now() < deadline, "round {round}: a dropped wait kept its permit");
            sleep(Duration::from_millis(10)).await;
        }
        semaphore.acquire(1).await.unwrap();
    }
    semaphore.release(1).await.unwrap();
    let _: () = raw.del(&name).await.unwrap();
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_permits_never_exceed_n_under_contention_from_several_clients() {
    if common::servers_off() {
        return;
    }
    let name = unique("plain-contention");
    let setup = connect(&redis_url()).await;
    assert!(setup.plain_semaphore(&name).unwrap().try_set_permits(3).await.unwrap());
    let inside = Arc::new(AtomicU32::new(0));
    let most = Arc::new(AtomicU32::new(0));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let client = connect(&redis_url()).await;
        for _ in 0..3 {
            let (semaphore, inside, most) = (client.plain_semaphore(&name).unwrap(), inside.clone(), most.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..15 {
                    semaphore.acquire(1).await.unwrap();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    sleep(Duration::from_millis(2)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    semaphore.release(1).await.unwrap();
                }
            }));
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert!(most.load(Ordering::SeqCst) <= 3, "at most 3 at once, saw {}", most.load(Ordering::SeqCst));
    assert_eq!(setup.plain_semaphore(&name).unwrap().available_permits().await.unwrap(), 3);
    setup.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_semaphores_are_redis_only_and_refused_elsewhere_as_unsupported() {
    if common::servers_off() {
        return;
    }
    let client = connect("mem://plain-semaphore-refused").await;
    let err = client.plain_semaphore("jobs").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    assert!(err.message().contains("mem") && err.message().contains("RSemaphore"), "{err}");
    client.close().await;
    let closed = connect(&redis_url()).await;
    let semaphore = closed.plain_semaphore(&unique("plain-closed")).unwrap();
    closed.close().await;
    assert_eq!(semaphore.try_acquire(1).await.unwrap_err().kind(), ErrorKind::Connection);
}
