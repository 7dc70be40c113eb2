//! Redis-specific behaviour against real servers from tests/services: Redisson's and
//! redis-py's layouts both ways, fair ordering, fencing shared with RFencedLock, Cluster,
//! Sentinel, TLS, and a server that goes away while a lock is held.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common;
use futures_util::StreamExt;
use polylock::{AcquireOptions, Client, ErrorKind, LockKind, LostReason};
use redis::AsyncCommands;
use tokio::time::{sleep, timeout, Instant};

fn env_url(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_string())
}

fn redis_url() -> String {
    env_url("POLYLOCK_TEST_REDIS_URL", "redis://127.0.0.1:16379")
}

/// A lock name no other test (or earlier run) uses.
fn unique(name: &str) -> String {
    format!("{name}-{}-{}", std::process::id(), fastrand::u64(..))
}

async fn raw(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url).unwrap().get_multiplexed_async_connection().await.unwrap()
}

async fn connect(url: &str) -> Client {
    Client::connect(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e} (start the servers with tests/services/services.sh start)"))
}

/// Redisson's RLock acquire, as Redisson itself sends it (RedissonLock.tryLockInnerAsync).
const REDISSON_TRY_LOCK: &str = "
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redisson_holder_excludes_polylock_and_its_unlock_message_wakes_the_waiter() {
    if common::servers_off() {
        return;
    }
    let client = connect(&redis_url()).await;
    let mut redis = raw(&redis_url()).await;
    // Three rounds, so that a lucky fallback wake-up cannot pass for the message.
    for round in 0..3 {
        let name = unique(&format!("redisson-held-{round}"));
        let redisson_field = "6f1e0d8c-0000-4000-8000-000000000001:1";
        let pttl: Option<i64> = redis::cmd("EVAL")
            .arg(REDISSON_TRY_LOCK)
            .arg(1)
            .arg(&name)
            .arg(30_000)
            .arg(redisson_field)
            .query_async(&mut redis)
            .await
            .unwrap();
        assert_eq!(pttl, None, "the Redisson-style holder got the lock");

        let lock = client.lock(&name).unwrap();
        assert!(lock.try_acquire().await.unwrap().is_none(), "polylock must not take a lock Redisson holds");
        let waiter = tokio::spawn(async move {
            let guard = lock.acquire().await.unwrap();
            let at = Instant::now();
            guard.release().await.unwrap();
            at
        });
        // Long enough for the waiter's fallback backoff to have grown well past the wake-up
        // latency asserted below, so only the message can explain a quick wake.
        sleep(Duration::from_millis(1000)).await;
        let listeners: Vec<(String, i64)> = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(format!("redisson_lock__channel:{{{name}}}"))
            .query_async(&mut redis)
            .await
            .unwrap();
        assert_eq!(listeners[0].1, 1, "the waiter must listen on Redisson's channel");
        // Redisson's unlock: delete the hash, then publish 0 on the lock's channel.
        let unlocked_at = Instant::now();
        let _: () = redis.del(&name).await.unwrap();
        let _: () = redis.publish(format!("redisson_lock__channel:{{{name}}}"), "0").await.unwrap();
        let woke_after = waiter.await.unwrap() - unlocked_at;
        assert!(woke_after < Duration::from_millis(60), "woken after {woke_after:?}: by the message, not the 30 s TTL");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polylock_holder_uses_redissons_layout_and_excludes_redisson() {
    if common::servers_off() {
        return;
    }
    let name = unique("polylock-held");
    let client = connect(&redis_url()).await;
    let lock = client.lock(&name).unwrap();
    let outer = lock.acquire().await.unwrap();
    let inner = lock.acquire().await.unwrap();
    let mut redis = raw(&redis_url()).await;
    let field = lock.owner().to_string();
    assert!(field.starts_with(&client.id().to_string()), "field is <client uuid>:<local id>");
    let count: Option<i64> = redis.hget(&name, &field).await.unwrap();
    assert_eq!(count, Some(2), "Redisson's hold count");
    let pttl: i64 = redis.pttl(&name).await.unwrap();
    assert!(pttl > 20_000 && pttl <= 30_000, "watchdog lease of 30 s, got {pttl} ms");
    let counter: u64 = redis.get(format!("redisson_lock_token:{{{name}}}")).await.unwrap();
    // The token after ours is drawn too, set aside for a local handoff.
    assert_eq!(counter, outer.fencing_token() + 1, "RFencedLock's counter");

    let redisson_pttl: Option<i64> = redis::cmd("EVAL")
        .arg(REDISSON_TRY_LOCK)
        .arg(1)
        .arg(&name)
        .arg(30_000)
        .arg("6f1e0d8c-0000-4000-8000-000000000002:7")
        .query_async(&mut redis)
        .await
        .unwrap();
    assert!(redisson_pttl.is_some_and(|t| t > 0), "Redisson must see the lock as held");

    // A Redisson waiter subscribes to the channel and wakes on "0".
    let mut subscriber = redis::Client::open(redis_url()).unwrap().get_async_pubsub().await.unwrap();
    subscriber.subscribe(format!("redisson_lock__channel:{{{name}}}")).await.unwrap();
    inner.release().await.unwrap();
    let count: Option<i64> = redis.hget(&name, &field).await.unwrap();
    assert_eq!(count, Some(1));
    outer.release().await.unwrap();
    let exists: bool = redis.exists(&name).await.unwrap();
    assert!(!exists, "a full release deletes the hash");
    let mut messages = subscriber.on_message();
    let message = timeout(Duration::from_secs(2), messages.next()).await.expect("unlock message published").unwrap();
    assert_eq!(message.get_payload::<String>().unwrap(), "0");
}

/// A release with a waiter of the same client waiting hands the lock straight over: the new
/// holder's field replaces the old one in one step, with a fresh token, and Redis never sees
/// the lock free, so no unlock message goes out (Redisson's waiters keep waiting).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_hands_the_lock_to_a_waiter_of_the_same_client() {
    if common::servers_off() {
        return;
    }
    for kind in [LockKind::Reentrant, LockKind::Token] {
        let name = unique(&format!("handoff-{kind}"));
        let client = connect(&redis_url()).await;
        let mut subscriber = redis::Client::open(redis_url()).unwrap().get_async_pubsub().await.unwrap();
        subscriber.subscribe(format!("redisson_lock__channel:{{{name}}}")).await.unwrap();
        let mut messages = subscriber.on_message();

        let first = client.lock(&name).unwrap().with_kind(kind).unwrap().acquire().await.unwrap();
        let waiter = client.lock(&name).unwrap().with_kind(kind).unwrap();
        let waiting = tokio::spawn(async move { waiter.acquire().await.unwrap() });
        sleep(Duration::from_millis(50)).await;
        let first_token = first.fencing_token();
        first.release().await.unwrap();
        let second = timeout(Duration::from_secs(2), waiting).await.expect("the waiter got the lock").unwrap();
        assert!(second.fencing_token() > first_token, "{kind}: a handoff issues a fresh token");
        assert!(
            timeout(Duration::from_millis(200), messages.next()).await.is_err(),
            "{kind}: a local handoff must not announce the lock as free"
        );
        let mut redis = raw(&redis_url()).await;
        let holder: String = if kind == LockKind::Token {
            redis.get(&name).await.unwrap()
        } else {
            let fields: Vec<String> = redis.hkeys(&name).await.unwrap();
            assert_eq!(fields.len(), 1, "{kind}: one holder field after the handoff: {fields:?}");
            fields[0].clone()
        };
        assert_eq!(holder, second.lock().owner().to_string(), "{kind}: the store names the new holder");
        assert!(client.lock(&name).unwrap().with_kind(kind).unwrap().try_acquire().await.unwrap().is_none());

        second.release().await.unwrap();
        let message = timeout(Duration::from_secs(2), messages.next()).await.expect("unlock message").unwrap();
        assert_eq!(message.get_payload::<String>().unwrap(), "0", "{kind}: a full release announces itself");
    }
}

/// Local handoffs are bounded: a client whose tasks keep the lock busy between themselves
/// still lets a waiter of another client in, instead of passing the lock around forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_client_does_not_starve_another_clients_waiter() {
    if common::servers_off() {
        return;
    }
    for kind in [LockKind::Reentrant, LockKind::Token] {
        let name = unique(&format!("starve-{kind}"));
        common::a_busy_client_does_not_starve_another_clients_waiter(&redis_url(), &name, kind, Duration::from_secs(5))
            .await;
    }
}

/// Another client's hold written in one step over whatever holds `name` (as if the old
/// hold had expired and that client had taken the lock): its field or value, and its fencing
/// token drawn from the shared counter. Returns the token.
const TAKE_OVER_AS_ANOTHER_CLIENT: &str = r"
redis.call('del', KEYS[1])
local token = redis.call('incrby', KEYS[2], 2) - 1
if ARGV[1] == 'hash' then redis.call('hset', KEYS[1], ARGV[2], 1) else redis.call('set', KEYS[1], ARGV[2]) end
redis.call('pexpire', KEYS[1], 30000)
return token
";

/// A handoff lets the new owner start before its transfer reaches Redis, with the token the
/// old hold set aside. If the old hold turns out to be gone (here: replaced by another
/// client's), the new owner is told it lost the lock within the round trip, its token is below
/// the other client's, so a fenced store rejects it, and nothing of the other client's is touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handoff_that_cannot_land_is_lost_and_fenced_out() {
    if common::servers_off() {
        return;
    }
    for kind in [LockKind::Reentrant, LockKind::Token] {
        let name = unique(&format!("unlanded-{kind}"));
        let client = connect(&redis_url()).await;
        let first = client.lock(&name).unwrap().with_kind(kind).unwrap().acquire().await.unwrap();
        let waiter = client.lock(&name).unwrap().with_kind(kind).unwrap();
        let waiting = tokio::spawn(async move { waiter.acquire().await.unwrap() });
        let mut redis = raw(&redis_url()).await;
        wait_for_a_subscriber(&mut redis, &name).await;

        let (layout, other_holder) = match kind {
            LockKind::Token => ("string", "another-clients-random-token"),
            _ => ("hash", "6f1e0d8c-0000-4000-8000-000000000003:1"),
        };
        let other_token: u64 = redis::cmd("EVAL")
            .arg(TAKE_OVER_AS_ANOTHER_CLIENT)
            .arg(2)
            .arg(&name)
            .arg(format!("redisson_lock_token:{{{name}}}"))
            .arg(layout)
            .arg(other_holder)
            .query_async(&mut redis)
            .await
            .unwrap();

        let err = first.release().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Lost, "{kind}: the releasing owner learns its hold was gone");
        let second = timeout(Duration::from_secs(2), waiting).await.expect("the waiter was handed the lock").unwrap();
        let reason = timeout(Duration::from_secs(2), second.lost())
            .await
            .unwrap_or_else(|_| panic!("{kind}: the loss is noticed within the round trip"));
        assert_eq!(reason, LostReason::Taken, "{kind}");
        assert!(
            second.fencing_token() < other_token,
            "{kind}: the stale owner's token {} must be below the new holder's {other_token}",
            second.fencing_token(),
        );
        assert_eq!(second.release().await.unwrap_err().kind(), ErrorKind::Lost);
        let still_there: bool = match kind {
            LockKind::Token => redis.get::<_, String>(&name).await.unwrap() == other_holder,
            _ => redis.hexists(&name, other_holder).await.unwrap(),
        };
        assert!(still_there, "{kind}: the failed handoff removed nothing of the other client's");
        let _: () = redis.del(&name).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_tokens_interleave_with_redissons_fenced_lock() {
    if common::servers_off() {
        return;
    }
    let name = unique("fenced");
    let token_key = format!("redisson_lock_token:{{{name}}}");
    let client = connect(&redis_url()).await;
    let mut redis = raw(&redis_url()).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let guard = client.lock(&name).unwrap().acquire().await.unwrap();
        seen.push(guard.fencing_token());
        guard.release().await.unwrap();
        // An RFencedLock acquisition in between: INCR of the same counter.
        let redisson_token: u64 = redis.incr(&token_key, 1).await.unwrap();
        seen.push(redisson_token);
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "one increasing sequence: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_lock_serves_eight_waiters_in_arrival_order() {
    if common::servers_off() {
        return;
    }
    let name = unique("fair");
    let client = connect(&redis_url()).await;
    let holder = client.lock(&name).unwrap().with_kind(LockKind::Fair).unwrap().acquire().await.unwrap();
    let (order_tx, mut order_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut waiters = Vec::new();
    for i in 0..8 {
        // Each waiter its own client, as separate services would be.
        let waiter_client = connect(&redis_url()).await;
        let lock = waiter_client.lock(&name).unwrap().with_kind(LockKind::Fair).unwrap();
        let order_tx = order_tx.clone();
        waiters.push(tokio::spawn(async move {
            let guard = lock.acquire().await.unwrap();
            order_tx.send(i).unwrap();
            sleep(Duration::from_millis(20)).await;
            guard.release().await.unwrap();
            drop(waiter_client);
        }));
        sleep(Duration::from_millis(80)).await; // queue in a known order
    }
    let mut redis = raw(&redis_url()).await;
    let queued: i64 = redis.llen(format!("redisson_lock_queue:{{{name}}}")).await.unwrap();
    assert_eq!(queued, 8, "Redisson's queue holds every waiter");
    holder.release().await.unwrap();
    for waiter in waiters {
        timeout(Duration::from_secs(10), waiter).await.expect("a fair waiter hung").unwrap();
    }
    let mut order = Vec::new();
    while let Ok(i) = order_rx.try_recv() {
        order.push(i);
    }
    assert_eq!(order, (0..8).collect::<Vec<_>>(), "served out of arrival order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_waiter_that_gives_up_leaves_the_queue() {
    if common::servers_off() {
        return;
    }
    let name = unique("fair-give-up");
    let client = connect(&redis_url()).await;
    let holder = client.lock(&name).unwrap().with_kind(LockKind::Fair).unwrap().acquire().await.unwrap();
    let quitter = client.lock(&name).unwrap().with_kind(LockKind::Fair).unwrap();
    let err = quitter.acquire_with(AcquireOptions::default().wait(Duration::from_millis(200))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    let mut redis = raw(&redis_url()).await;
    let queued: i64 = redis.llen(format!("redisson_lock_queue:{{{name}}}")).await.unwrap();
    let timeouts: i64 = redis.zcard(format!("redisson_lock_timeout:{{{name}}}")).await.unwrap();
    assert_eq!((queued, timeouts), (0, 0), "a waiter that gave up must not block those behind it");
    holder.release().await.unwrap();
    let next = client.lock(&name).unwrap().with_kind(LockKind::Fair).unwrap();
    next.try_acquire().await.unwrap().expect("free once released").release().await.unwrap();
}

/// The Python interpreter with redis-py installed (tests/run-all.sh sets it up).
fn python() -> String {
    env_url("POLYLOCK_TEST_PYTHON", "python3")
}

fn redis_py(args: &[&str]) -> Child {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/interop/redis_py_lock.py");
    Command::new(python())
        .arg(script)
        .arg(redis_url())
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python with redis-py (set POLYLOCK_TEST_PYTHON)")
}

fn read_line(child: &mut Child) -> String {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    line.trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_holds_and_polylock_token_lock_waits() {
    if common::servers_off() {
        return;
    }
    let name = unique("redis-py-holds");
    let mut holder = redis_py(&[&name, "hold", "1.0"]);
    assert_eq!(read_line(&mut holder), "acquired", "redis-py could not lock");
    let client = connect(&redis_url()).await;
    let lock = client.lock(&name).unwrap().with_kind(LockKind::Token).unwrap();
    assert!(lock.try_acquire().await.unwrap().is_none(), "polylock took a lock redis-py holds");
    let started = Instant::now();
    let guard = lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(10))).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(500), "got it before redis-py released");
    assert!(holder.wait().unwrap().success());
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polylock_token_lock_holds_and_redis_py_waits() {
    if common::servers_off() {
        return;
    }
    let name = unique("polylock-holds-token");
    let client = connect(&redis_url()).await;
    let guard = client.lock(&name).unwrap().with_kind(LockKind::Token).unwrap().acquire().await.unwrap();
    let mut redis = raw(&redis_url()).await;
    let value: String = redis.get(&name).await.unwrap();
    assert_eq!(value, guard.lock().owner().to_string(), "a plain string key with the owner as its token");
    let mut probe = redis_py(&[&name, "try"]);
    assert_eq!(read_line(&mut probe), "busy", "redis-py took a lock polylock holds");
    probe.wait().unwrap();
    let mut waiter = redis_py(&[&name, "wait", "10"]);
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(waiter.stdout.take().unwrap()));
    assert_eq!(lines.next().unwrap().unwrap(), "waiting");
    sleep(Duration::from_millis(400)).await;
    guard.release().await.unwrap();
    let line = lines.next().unwrap().unwrap();
    assert!(line.starts_with("acquired after "), "{line}");
    let waited: u64 = line.trim_start_matches("acquired after ").parse().unwrap();
    assert!(waited >= 300, "redis-py got it after {waited} ms, before polylock released");
    assert!(waiter.wait().unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_locks_and_waits_work_across_slots() {
    if common::servers_off() {
        return;
    }
    let url =
        env_url("POLYLOCK_TEST_REDIS_CLUSTER_URL", "redis+cluster://127.0.0.1:17001,127.0.0.1:17002,127.0.0.1:17003");
    let client = connect(&url).await;
    // Names chosen to spread over the three masters' slot ranges.
    let names: Vec<String> = (0..6).map(|i| unique(&format!("cluster-{i}"))).collect();
    for kind in [LockKind::Reentrant, LockKind::Fair, LockKind::Token] {
        for name in &names {
            let holder = client.lock(name).unwrap().with_kind(kind).unwrap().acquire().await.unwrap();
            let waiter = client.lock(name).unwrap().with_kind(kind).unwrap();
            let waiting = tokio::spawn(async move {
                let guard = waiter.acquire_with(AcquireOptions::default().wait(Duration::from_secs(5))).await.unwrap();
                let at = Instant::now();
                let token = guard.fencing_token();
                guard.release().await.unwrap();
                (at, token)
            });
            // Long enough for the fallback backoff to grow past the latency asserted below.
            sleep(Duration::from_millis(600)).await;
            let released_at = Instant::now();
            let held_token = holder.fencing_token();
            holder.release().await.unwrap();
            let (acquired_at, token) = waiting.await.unwrap();
            assert!(token > held_token, "{kind} {name}: tokens must grow");
            assert!(
                acquired_at - released_at < Duration::from_millis(100),
                "{kind} {name}: waiter woke after {:?}, not by pub/sub",
                acquired_at - released_at
            );
        }
    }
}

/// Where the test Sentinel says the master is now (a forced failover moves it).
async fn sentinel_master() -> String {
    let mut sentinel = raw("redis://127.0.0.1:26380").await;
    let (host, port): (String, u16) = redis::cmd("SENTINEL")
        .arg("get-master-addr-by-name")
        .arg("polylock-master")
        .query_async(&mut sentinel)
        .await
        .unwrap();
    format!("redis://{host}:{port}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_finds_the_master_and_follows_a_failover() {
    if common::servers_off() {
        return;
    }
    let url = env_url("POLYLOCK_TEST_REDIS_SENTINEL_URL", "redis+sentinel://127.0.0.1:26380/polylock-master");
    let client = connect(&url).await;
    let name = unique("sentinel");
    let guard = client.lock(&name).unwrap().acquire().await.unwrap();
    let first_master = sentinel_master().await;
    let exists: bool = raw(&first_master).await.exists(&name).await.unwrap();
    assert!(exists, "the lock was not written to the master Sentinel names");
    guard.release().await.unwrap();

    // Wait until the replica is in sync (a failover needs one), then force a failover.
    let mut sentinel = raw("redis://127.0.0.1:26380").await;
    let started = Instant::now();
    loop {
        let replicas: Vec<std::collections::HashMap<String, String>> =
            redis::cmd("SENTINEL").arg("replicas").arg("polylock-master").query_async(&mut sentinel).await.unwrap();
        if replicas.iter().any(|r| r.get("master-link-status").map(String::as_str) == Some("ok")) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the replica never got in sync");
        sleep(Duration::from_millis(200)).await;
    }
    let _: () = redis::cmd("SENTINEL").arg("failover").arg("polylock-master").query_async(&mut sentinel).await.unwrap();
    let started = Instant::now();
    while sentinel_master().await == first_master {
        assert!(started.elapsed() < Duration::from_secs(20), "the failover did not happen");
        sleep(Duration::from_millis(100)).await;
    }
    let new_master = sentinel_master().await;
    // Until Sentinel demotes the old master it still takes writes (Redis replication is
    // asynchronous); wait for that, as a client cannot tell before it.
    let started = Instant::now();
    loop {
        // A fresh connection each time: a demoted master drops its clients.
        let role: redis::RedisResult<Vec<redis::Value>> =
            redis::cmd("ROLE").query_async(&mut raw(&first_master).await).await;
        if matches!(role.as_deref(), Ok([redis::Value::BulkString(r), ..]) if r == b"slave") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the old master was never demoted");
        sleep(Duration::from_millis(100)).await;
    }
    // The same client keeps working: it finds the new master when the old one refuses writes.
    let relocked = async {
        loop {
            match client.lock(&name).unwrap().try_acquire().await {
                Ok(Some(guard)) => return guard,
                _ => sleep(Duration::from_millis(100)).await,
            }
        }
    };
    let guard = timeout(Duration::from_secs(20), relocked).await.expect("the client never followed the failover");
    let exists: bool = raw(&new_master).await.exists(&name).await.unwrap();
    assert!(exists, "after the failover the lock must be on the new master {new_master}");
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_password_and_a_private_ca() {
    if common::servers_off() {
        return;
    }
    let url = std::env::var("POLYLOCK_TEST_REDIS_TLS_URL").unwrap_or_else(|_| {
        let dir = std::env::var("POLYLOCK_SERVICES_DIR").unwrap_or_else(|_| "/tmp/polylock-services".into());
        format!("rediss://:polylock-tls-secret@127.0.0.1:16390?ca={dir}/redis-tls/ca.crt")
    });
    let client = connect(&url).await;
    let guard = client.lock(&unique("tls")).unwrap().acquire().await.unwrap();
    guard.release().await.unwrap();
    let wrong = url.replace("polylock-tls-secret", "not-the-password");
    let err = Client::connect(&wrong).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.to_string().contains("rejected the credentials"), "{err}");
    assert!(!err.to_string().contains("not-the-password"), "password leaked: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_server_is_a_connection_error() {
    if common::servers_off() {
        return;
    }
    let err = Client::connect("redis://:secret@127.0.0.1:1?timeout=1s").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection);
    assert!(err.to_string().contains("cannot reach redis at redis://:***@127.0.0.1:1"), "{err}");
}

#[tokio::test]
async fn a_server_that_never_answers_fails_the_connect_within_its_timeout() {
    if common::servers_off() {
        return;
    }
    // Accepts the TCP connection and then says nothing, like a firewall or a wrong service.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let silent = tokio::spawn(async move {
        let mut accepted = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            accepted.push(socket);
        }
    });
    let started = Instant::now();
    let err = Client::connect(&format!("redis://127.0.0.1:{port}?timeout=1s")).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.to_string().contains("within 1000ms"), "{err}");
    assert!(took < Duration::from_millis(1500), "connect gave up after {took:?}, not about 1s");
    silent.abort();
}

#[tokio::test]
async fn a_database_the_server_does_not_have_is_an_invalid_argument() {
    if common::servers_off() {
        return;
    }
    let err = Client::connect(&format!("{}/99", redis_url())).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.to_string().contains("no database 99"), "{err}");
    let err = Client::connect("redis://127.0.0.1:70000").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.to_string().contains("'70000' is not a port number"), "{err}");
}

/// Wait until a waiter listens for `name`'s unlock message: it has made its first attempt
/// and, being of polylock, joined its client's queue of local waiters before that.
async fn wait_for_a_subscriber(redis: &mut redis::aio::MultiplexedConnection, name: &str) {
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let started = Instant::now();
    loop {
        let (_, listeners): (String, i64) =
            redis::cmd("PUBSUB").arg("NUMSUB").arg(&channel).query_async(redis).await.unwrap();
        if listeners > 0 {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "nobody subscribed to {channel}");
        sleep(Duration::from_millis(5)).await;
    }
}

/// A private redis-server this test may stop and start again without disturbing others.
struct PrivateRedis {
    port: u16,
    dir: tempfile::TempDir,
    process: Option<Child>,
}

impl PrivateRedis {
    fn start() -> PrivateRedis {
        // Below the kernel's ephemeral range (32768+): a port in that range can be taken at any
        // moment by some client's outgoing socket, and then the restart cannot bind it.
        let port = 28000 + (std::process::id() % 4000) as u16;
        let mut redis = PrivateRedis { port, dir: tempfile::tempdir().unwrap(), process: None };
        redis.resume();
        redis
    }

    fn resume(&mut self) {
        let log = self.dir.path().join("redis.log");
        let mut child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .arg("--logfile")
            .arg(&log)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server on PATH (tests/services installs it)");
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            let exited = child.try_wait().unwrap();
            if exited.is_some() || started.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                let log = std::fs::read_to_string(&log).unwrap_or_default();
                panic!("private redis on port {} did not start ({exited:?}):\n{log}", self.port);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.process = Some(child);
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.process.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_stopping_under_a_holder_is_lost_not_a_hang_and_the_client_recovers() {
    if common::servers_off() {
        return;
    }
    let mut server = PrivateRedis::start();
    let url = format!("redis://127.0.0.1:{}?lease=1500ms&timeout=500ms", server.port);
    let client = connect(&url).await;
    let name = unique("outage");
    let guard = client.lock(&name).unwrap().acquire().await.unwrap();
    server.stop();
    let reason = timeout(Duration::from_secs(5), guard.lost()).await.expect("loss must be noticed within the lease");
    assert!(matches!(reason, LostReason::RenewalFailed(_)), "{reason:?}");
    let started = Instant::now();
    let err = guard.release().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost);
    let err = client
        .lock(&name)
        .unwrap()
        .acquire_with(AcquireOptions::default().wait(Duration::from_secs(1)))
        .await
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Connection | ErrorKind::Timeout), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "calls hang while redis is down");
    server.resume();
    let recovered = async {
        loop {
            match client.lock(&name).unwrap().try_acquire().await {
                Ok(Some(guard)) => return guard,
                _ => sleep(Duration::from_millis(100)).await,
            }
        }
    };
    let guard = timeout(Duration::from_secs(10), recovered).await.expect("the client never recovered");
    guard.release().await.unwrap();
}

/// isLocked, remainTimeToLive and forceUnlock see and remove a holder polylock did not make,
/// as Redisson's own do: EXISTS, PTTL, and DEL plus the unlock message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_and_force_unlock_work_on_a_redisson_holder() {
    if common::servers_off() {
        return;
    }
    let client = connect(&redis_url()).await;
    let mut redis = raw(&redis_url()).await;
    let name = unique("redisson-forced");
    let pttl: Option<i64> = redis::cmd("EVAL")
        .arg(REDISSON_TRY_LOCK)
        .arg(1)
        .arg(&name)
        .arg(30_000)
        .arg("6f1e0d8c-0000-4000-8000-000000000002:7")
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(pttl, None);
    let lock = client.lock(&name).unwrap();
    assert!(lock.is_locked().await.unwrap());
    let left = lock.remaining_lease().await.unwrap().expect("held by Redisson");
    assert!(left > Duration::from_secs(25) && left <= Duration::from_secs(30), "{left:?}");

    let mut messages = redis::Client::open(redis_url()).unwrap().get_async_pubsub().await.unwrap();
    messages.subscribe(format!("redisson_lock__channel:{{{name}}}")).await.unwrap();
    assert!(lock.force_unlock().await.unwrap());
    let mut messages = messages.on_message();
    let message = timeout(Duration::from_secs(2), messages.next()).await.expect("unlock message").unwrap();
    assert_eq!(message.get_payload::<String>().unwrap(), "0");
    let exists: bool = redis.exists(&name).await.unwrap();
    assert!(!exists, "the forced unlock deleted the hash");
    assert!(!lock.is_locked().await.unwrap());
    assert_eq!(lock.remaining_lease().await.unwrap(), None);
    assert!(!lock.force_unlock().await.unwrap());
}

/// A Redis without persistence restarts and forgets everything: fencing tokens still only
/// grow (the counter is floored at the server's clock in microseconds), the first acquire on
/// the reconnected client succeeds within its wait, and a holder with an explicit lease stops
/// believing it holds the lock when that lease runs out on its own clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_that_loses_data_keeps_tokens_growing_and_the_client_working() {
    if common::servers_off() {
        return;
    }
    let mut server = PrivateRedis::start();
    let url = format!("redis://127.0.0.1:{}?timeout=2s", server.port);
    for kind in [LockKind::Reentrant, LockKind::Fair, LockKind::Token] {
        let (a, b) = (connect(&url).await, connect(&url).await);
        let name = unique("restarted");
        let lock = |client: &Client| client.lock(&name).unwrap().with_kind(kind).unwrap();
        let before = lock(&a).acquire().await.unwrap();
        let first = before.fencing_token();
        before.release().await.unwrap();
        let held = lock(&a).acquire_with(AcquireOptions::default().lease(Duration::from_secs(1))).await.unwrap();
        let held_token = held.fencing_token();
        server.stop();
        server.resume();
        // The first call on each client after the restart, with time to reconnect.
        let options = AcquireOptions::default().wait(Duration::from_secs(5)).lease(Duration::from_secs(3));
        let theirs = lock(&b)
            .acquire_with(options)
            .await
            .unwrap_or_else(|e| panic!("{kind}: the first acquire after the restart failed: {e}"));
        assert!(
            theirs.fencing_token() > held_token && held_token > first,
            "{kind}: tokens {first}, {held_token}, then {} after the restart",
            theirs.fencing_token()
        );
        // The old holder's lease (1s) runs out on its own clock, whatever the server says.
        let reason = timeout(Duration::from_secs(2), held.lost()).await.expect("the lease ended");
        assert_eq!(reason, LostReason::LeaseExpired, "{kind}");
        assert!(!lock(&a).is_held(), "{kind}");
        let mine =
            lock(&a).try_acquire().await.unwrap_or_else(|e| panic!("{kind}: a's first call after the restart: {e}"));
        assert!(mine.is_none(), "{kind}: b holds it");
        theirs.release().await.unwrap();
        a.close().await;
        b.close().await;
    }
}

/// A password holding a raw '/' and '@' (base64 passwords have '/') connects: the user info
/// runs to the last '@', so no part of it is taken for the host or the database number, and
/// none of it appears in the error of a wrong one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_with_a_raw_slash_and_at_sign_connects() {
    if common::servers_off() {
        return;
    }
    let mut admin = raw(&redis_url()).await;
    let user = format!("polylock-slash-{}", std::process::id());
    let password = "pa/ss@w0rd/7";
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", &user, "reset", "on", &format!(">{password}"), "~*", "&*", "+@all"])
        .query_async(&mut admin)
        .await
        .unwrap();
    let hostport = redis_url().trim_start_matches("redis://").trim_end_matches('/').to_string();
    let url = format!("redis://{user}:{password}@{hostport}/0");
    let client = Client::connect(&url).await.unwrap();
    let guard = client.lock(&unique("slash-password")).unwrap().acquire().await.unwrap();
    guard.release().await.unwrap();
    client.close().await;
    let wrong = format!("redis://{user}:wr/ong@pass@{hostport}/0");
    let err = Client::connect(&wrong).await.expect_err("a wrong password is refused");
    let text = format!("{err} {err:?}");
    assert!(!text.contains("wr/ong") && !text.contains("ong@pass"), "{text}");
    let _: () = redis::cmd("ACL").arg(&["DELUSER", &user]).query_async(&mut admin).await.unwrap();
}

/// Issue 35: one name, several primitives, and keys of no lock layout. Before, a semaphore
/// then a mutex of one name failed for ever with a `Backend` error quoting `WRONGTYPE`, a
/// read-write lock wrote its `mode` into a mutex's hash (breaking the mutex's hold), a lock
/// waited for ever behind a list or set of another application, and force-unlock `DEL`eted
/// whatever key the name was. Now each is a `Conflict` at once, naming what holds the name,
/// and force-unlock deletes only a mutex's key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_held_by_another_primitive_or_a_foreign_key_is_a_conflict() {
    if common::servers_off() {
        return;
    }
    use polylock::Error;
    let client = connect(&redis_url()).await;
    let mut redis = raw(&redis_url()).await;
    let within_the_wait = |started: Instant, err: &Error| {
        assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
        assert!(started.elapsed() < Duration::from_secs(2), "{err} only after {:?}", started.elapsed());
    };
    let five_seconds = AcquireOptions::default().wait(Duration::from_secs(5));

    // A semaphore, then a mutex of each kind, and a force-unlock.
    let name = unique("sem-then-lock");
    let permit = client.semaphore(&name, 2).unwrap().acquire().await.unwrap();
    for kind in [LockKind::Reentrant, LockKind::Fair, LockKind::Token] {
        let started = Instant::now();
        let lock = client.lock(&name).unwrap().with_kind(kind).unwrap();
        let err = lock.acquire_with(five_seconds).await.unwrap_err();
        within_the_wait(started, &err);
        assert!(err.message().contains("semaphore") && !err.message().contains("WRONGTYPE"), "{kind:?}: {err}");
        let err = lock.force_unlock().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict, "{kind:?}: {err}");
    }
    assert_eq!(redis.get::<_, String>(&name).await.unwrap(), "1", "the semaphore's counter is left alone");
    assert!(!permit.is_lost());
    permit.release().await.unwrap();

    // A mutex, then a semaphore, a read-write lock and a token lock of the name.
    let name = unique("lock-then-others");
    let guard = client.lock(&name).unwrap().acquire().await.unwrap();
    let started = Instant::now();
    let err = client.semaphore(&name, 2).unwrap().acquire_with(five_seconds).await.unwrap_err();
    within_the_wait(started, &err);
    assert!(err.message().contains("a lock"), "{err}");
    for write in [false, true] {
        let rw = client.rw_lock(&name).unwrap();
        let side = if write { rw.write() } else { rw.read() };
        let started = Instant::now();
        let err = side.acquire_with(five_seconds).await.unwrap_err();
        within_the_wait(started, &err);
    }
    let token = client.lock(&name).unwrap().with_kind(LockKind::Token).unwrap();
    within_the_wait(Instant::now(), &token.try_acquire().await.unwrap_err());
    let fields: Vec<String> = redis.hkeys(&name).await.unwrap();
    assert_eq!(fields.len(), 1, "only the mutex's holder is in its hash: {fields:?}");
    assert!(!guard.is_lost());
    guard.release().await.unwrap();

    // A read-write lock, then a mutex.
    let name = unique("rw-then-lock");
    let read = client.rw_lock(&name).unwrap().read().acquire().await.unwrap();
    let err = client.lock(&name).unwrap().acquire_with(five_seconds).await.unwrap_err();
    assert!(err.kind() == ErrorKind::Conflict && err.message().contains("read-write lock"), "{err}");
    assert_eq!(client.lock(&name).unwrap().force_unlock().await.unwrap_err().kind(), ErrorKind::Conflict);
    assert!(!read.is_lost());
    read.release().await.unwrap();

    // Keys of another application: a list, and a number.
    let name = unique("foreign");
    let () = redis.rpush(&name, "job").await.unwrap();
    let started = Instant::now();
    let err = client.lock(&name).unwrap().acquire_with(five_seconds).await.unwrap_err();
    within_the_wait(started, &err);
    assert!(err.message().contains("a list"), "{err}");
    assert_eq!(client.lock(&name).unwrap().force_unlock().await.unwrap_err().kind(), ErrorKind::Conflict);
    assert_eq!(redis.llen::<_, i64>(&name).await.unwrap(), 1, "force-unlock left the list alone");
    let () = redis.del(&name).await.unwrap();
    let () = redis.set(&name, 42).await.unwrap();
    let err = client.lock(&name).unwrap().with_kind(LockKind::Token).unwrap().try_acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    let () = redis.del(&name).await.unwrap();
    client.close().await;
}

/// A value's watch let go of outside any runtime (as a binding may free it after its client)
/// ends quietly: leaving its channel spawned a task and panicked with no runtime.
#[test]
fn a_watch_dropped_outside_any_runtime_lets_go_quietly() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (client, watch) = runtime.block_on(async {
        let client = Client::connect(&redis_url()).await.unwrap();
        let watch = client.value("watch-dropped-outside").unwrap().watch().await.unwrap();
        (client, watch)
    });
    assert!(watch.is_notified());
    drop(watch);
    runtime.block_on(client.close());
}
