//! RedLock (`redlock://`, issue #18) across five private redis-server processes started here
//! on ports above 30000 (killed at the end): mutual exclusion under contention checked by a
//! ledger (RedLock has no fencing tokens to check it by); with one and with two servers
//! SIGSTOPped locking still works and never reports a hold a majority does not have; with
//! three stopped it fails and leaves nothing on the live ones; a lease that the votes use up
//! is never reported held; and the real node-redlock (tests/interop/redlock, `npm ci` there
//! first) and polylock exclude each other on one resource.

use crate::common;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use crate::common::redis_servers::RedisServers;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use polylock::{AcquireOptions, Client, ErrorKind, LockKind};

/// Five redis-servers of this test, each independent of the others.
struct Servers(RedisServers);

impl std::ops::Deref for Servers {
    type Target = RedisServers;
    fn deref(&self) -> &RedisServers {
        &self.0
    }
}

impl Servers {
    fn start(slot: u16) -> Servers {
        Servers(RedisServers::start(5, slot))
    }

    /// The value of `key` on the server `index` (which must be running).
    fn value(&self, index: usize, key: &str) -> Option<String> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}", self.ports[index])).unwrap();
        let mut connection = client.get_connection().unwrap();
        redis::cmd("GET").arg(key).query(&mut connection).unwrap()
    }

    /// How many of the servers `indexes` have `key`.
    fn holding(&self, indexes: impl IntoIterator<Item = usize>, key: &str) -> usize {
        indexes.into_iter().filter(|&index| self.value(index, key).is_some()).count()
    }
}

fn wait(ms: u64) -> AcquireOptions {
    AcquireOptions::default().wait(Duration::from_millis(ms))
}

/// Tasks of several clients take `name` in turns; the ledger fails the test if two ever hold
/// it at once. Each grant is checked against the servers `live`: a majority of all five must
/// have the key while the guard says it is held.
async fn contend(servers: &Servers, url: &str, name: &str, live: &[usize], rounds: usize) {
    let holders = Arc::new(AtomicU32::new(0));
    let grants = Arc::new(AtomicU32::new(0));
    let clients = [Client::connect(url).await.unwrap(), Client::connect(url).await.unwrap()];
    let mut tasks = Vec::new();
    for task in 0..4 {
        let (client, holders, grants) = (clients[task % 2].clone(), holders.clone(), grants.clone());
        let name = name.to_string();
        tasks.push(tokio::spawn(async move {
            let lock = client.lock(&name).unwrap();
            assert_eq!(lock.kind(), LockKind::Token, "RedLock's one kind is the default");
            for _ in 0..rounds {
                let guard = lock.acquire_with(wait(30_000).lease(Duration::from_secs(2))).await.unwrap();
                assert_eq!(holders.fetch_add(1, Ordering::SeqCst), 0, "two RedLock holders at once");
                assert!(!guard.is_lost());
                assert!(!guard.has_fencing_token() && guard.fencing_token_opt().is_none());
                tokio::time::sleep(Duration::from_millis(5)).await;
                holders.fetch_sub(1, Ordering::SeqCst);
                grants.fetch_add(1, Ordering::SeqCst);
                guard.release().await.unwrap();
            }
        }));
    }
    // Meanwhile, whenever one hold lasts across the look, a majority of all five servers has
    // its key (stopped servers never saw it, so the live ones must).
    let (holders_seen, grants_seen) = (holders.clone(), grants.clone());
    let mut checked = 0;
    while tasks.iter().any(|task| !task.is_finished()) {
        let grant = grants_seen.load(Ordering::SeqCst);
        if holders_seen.load(Ordering::SeqCst) == 1 {
            let count = servers.holding(live.iter().copied(), name);
            if holders_seen.load(Ordering::SeqCst) == 1 && grants_seen.load(Ordering::SeqCst) == grant {
                assert!(count >= 3, "a hold reported while only {count} servers have its key");
                checked += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert!(checked > 0, "the look at the servers never saw a hold");
    assert_eq!(grants.load(Ordering::SeqCst) as usize, 4 * rounds);
    for client in clients {
        client.close().await;
    }
    for &index in live {
        assert_eq!(servers.value(index, name), None, "released on every live server");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_exclusion_under_contention() {
    if common::servers_off() {
        return;
    }
    let servers = Servers::start(0);
    let url = servers.url("");
    contend(&servers, &url, "ledger", &[0, 1, 2, 3, 4], 6).await;
    // A grant is on every running server, with a random token of 32 hex digits.
    let client = Client::connect(&url).await.unwrap();
    let guard = client.lock("tokens").unwrap().acquire_with(wait(5000)).await.unwrap();
    let values: Vec<String> = (0..5).map(|i| servers.value(i, "tokens").unwrap()).collect();
    assert!(values.iter().all(|v| v == &values[0] && v.len() == 32), "{values:?}");
    assert!(client.lock("tokens").unwrap().is_locked().await.unwrap());
    guard.release().await.unwrap();
    assert_eq!(servers.holding(0..5, "tokens"), 0);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_or_two_stopped_servers_keep_it_working() {
    if common::servers_off() {
        return;
    }
    let servers = Servers::start(1);
    let url = servers.url("");
    servers.stop(0);
    contend(&servers, &url, "one-down", &[1, 2, 3, 4], 3).await;
    servers.stop(1);
    contend(&servers, &url, "two-down", &[2, 3, 4], 3).await;
    // With two down, the three live servers are the majority: every grant is on all three.
    let client = Client::connect(&url).await.unwrap();
    let guard = client.lock("all-three").unwrap().acquire_with(wait(5000)).await.unwrap();
    assert!(!guard.is_lost());
    assert_eq!(servers.holding([2, 3, 4], "all-three"), 3);
    guard.release().await.unwrap();
    client.close().await;
    servers.resume(0);
    servers.resume(1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_the_votes_used_up_is_never_reported_held() {
    if common::servers_off() {
        return;
    }
    let servers = Servers::start(2);
    servers.stop(0);
    servers.stop(1);
    // Each vote may take 60 ms, and the two stopped servers take all of it: a 60 ms lease
    // has no validity left after the votes, though the three live servers granted it.
    let client = Client::connect(&servers.url("?node_timeout=60ms")).await.unwrap();
    let lock = client.lock("used-up").unwrap();
    let err = lock.acquire_with(wait(0).lease(Duration::from_millis(60))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_eq!(servers.holding([2, 3, 4], "used-up"), 0, "a failed attempt is released everywhere");
    // A lease with room to spare is granted, and lost when its validity runs out.
    let guard = lock.acquire_with(wait(0).lease(Duration::from_millis(400))).await.unwrap();
    assert!(!guard.is_lost());
    let reason = tokio::time::timeout(Duration::from_secs(5), guard.lost()).await.unwrap();
    assert!(guard.is_lost(), "{reason}");
    drop(guard);
    client.close().await;
    servers.resume(0);
    servers.resume(1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_stopped_servers_mean_no_lock_and_nothing_left() {
    if common::servers_off() {
        return;
    }
    let servers = Servers::start(3);
    let client = Client::connect(&servers.url("")).await.unwrap();
    for index in 0..3 {
        servers.stop(index);
    }
    let lock = client.lock("no-quorum").unwrap();
    let err = lock.acquire_with(wait(1000).lease(Duration::from_secs(2))).await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Timeout | ErrorKind::Connection), "{err}");
    assert_eq!(servers.holding([3, 4], "no-quorum"), 0, "the live minority keeps nothing");
    assert!(!lock.is_held());
    for index in 0..3 {
        servers.resume(index);
    }
    // Back to a majority, it works again.
    let guard = lock.acquire_with(wait(5000).lease(Duration::from_secs(2))).await.unwrap();
    guard.release().await.unwrap();
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_token_kind_and_clear_url_errors() {
    if common::servers_off() {
        return;
    }
    let servers = Servers::start(4);
    let client = Client::connect(&servers.url("")).await.unwrap();
    assert_eq!(client.capabilities().lock_kinds, &[LockKind::Token]);
    let err = client.lock("k").unwrap().with_kind(LockKind::Reentrant).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert_eq!(client.rw_lock("k").unwrap_err().kind(), ErrorKind::Unsupported);
    assert_eq!(client.semaphore("k", 2).unwrap_err().kind(), ErrorKind::Unsupported);
    // A multi-lock over RedLock takes each part by RedLock.
    let multi = client.multi_lock(&["m2", "m1"]).unwrap();
    let guard = multi.acquire_with(wait(5000)).await.unwrap();
    assert!(guard.fencing_tokens_opt().iter().all(|(_, token)| token.is_none()));
    assert_eq!(servers.holding(0..5, "m1"), 5);
    guard.release().await.unwrap();
    client.close().await;
    for (url, kind) in [
        ("redlock://", ErrorKind::InvalidArgument),
        ("redlock://127.0.0.1", ErrorKind::InvalidArgument),
        ("redlock://127.0.0.1:x", ErrorKind::InvalidArgument),
        ("redlock://127.0.0.1:6379/2", ErrorKind::InvalidArgument),
        ("redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", ErrorKind::Connection),
    ] {
        let err = Client::connect(url).await.unwrap_err();
        assert_eq!(err.kind(), kind, "{url}: {err}");
    }
    let err = Client::connect("redlock://u:secret@127.0.0.1:1,127.0.0.1:2,127.0.0.1:3").await.unwrap_err();
    assert!(!err.to_string().contains("secret"), "{err}");
}

/// The real node-redlock, as tests/interop/redlock/redlock_peer.mjs drives it.
struct NodeRedlock {
    child: Child,
    lines: BufReader<std::process::ChildStdout>,
}

impl NodeRedlock {
    fn try_lock(ports: &[u16], resource: &str, lease_ms: u64) -> (NodeRedlock, String) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/redlock");
        assert!(
            dir.join("node_modules/redlock").is_dir(),
            "node-redlock is not installed: run `npm ci --prefix tests/interop/redlock`"
        );
        let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
        let mut child = Command::new("node")
            .arg(dir.join("redlock_peer.mjs"))
            .args([ports.join(","), resource.to_string(), lease_ms.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node must be installed");
        let mut lines = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        lines.read_line(&mut line).unwrap();
        (NodeRedlock { child, lines }, line.trim().to_string())
    }

    fn release(mut self) -> String {
        writeln!(self.child.stdin.as_mut().unwrap(), "release").unwrap();
        let mut line = String::new();
        self.lines.read_line(&mut line).unwrap();
        assert!(self.child.wait().unwrap().success());
        line.trim().to_string()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_redlock_and_polylock_exclude_each_other() {
    if common::servers_off() {
        return;
    }
    let servers = Servers::start(5);
    let client = Client::connect(&servers.url("")).await.unwrap();
    let lock = client.lock("shared-resource").unwrap();
    // node-redlock holds: polylock cannot get in, until node-redlock releases.
    let (peer, answer) = NodeRedlock::try_lock(&servers.ports, "shared-resource", 10_000);
    assert_eq!(answer, "held");
    assert!(lock.try_acquire().await.unwrap().is_none(), "polylock got in while node-redlock held");
    assert!(lock.is_locked().await.unwrap());
    assert_eq!(peer.release(), "released");
    let guard = lock.acquire_with(wait(5000)).await.unwrap();
    // polylock holds: node-redlock cannot get in, until polylock releases.
    let (mut peer, answer) = NodeRedlock::try_lock(&servers.ports, "shared-resource", 10_000);
    assert_eq!(answer, "busy", "node-redlock got in while polylock held");
    assert!(peer.child.wait().unwrap().success());
    guard.release().await.unwrap();
    let (peer, answer) = NodeRedlock::try_lock(&servers.ports, "shared-resource", 10_000);
    assert_eq!(answer, "held");
    assert_eq!(peer.release(), "released");
    client.close().await;
}

/// Issue 35: a list that names one server twice (by name, or by names that resolve to one
/// address) is refused at connect with `InvalidArgument`; before, it was accepted, every
/// acquire failed (one server's vote counted twice) and an acquire without a wait hung.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server_named_twice_is_refused() {
    if common::servers_off() {
        return;
    }
    let redis = crate::common::server_url("POLYLOCK_TEST_REDIS_URL", "redis://127.0.0.1:16379");
    let port = redis.rsplit(':').next().unwrap().trim_end_matches(|c: char| !c.is_ascii_digit()).to_string();
    let one = format!("127.0.0.1:{port}");
    for url in [
        format!("redlock://{one},{one}"),
        format!("redlock://{one},{one},{one}"),
        format!("redlock://localhost:{port},{one},127.0.0.1:1"),
        polylock::kit::redlock_url::redlock_url(&[format!("redis://{one}"), one.clone(), "127.0.0.1:1".into()])
            .unwrap(),
    ] {
        let started = std::time::Instant::now();
        let err = Client::connect(&url).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{url}: {err}");
        assert!(err.message().contains("one server"), "{url}: {err}");
        assert!(started.elapsed() < Duration::from_secs(2), "{url}: refused only after {:?}", started.elapsed());
    }
}
