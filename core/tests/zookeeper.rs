//! The ZooKeeper backend against real servers (tests/services: `zookeeper`, and
//! `zookeeper-ensemble` for the leader-kill test): Curator's layout, session suspension and
//! expiry (through a TCP relay the test can cut), Curator interop both ways through the real
//! curator-recipes (tests/interop/curator, built with Maven), and a 3-server ensemble losing
//! its leader while 8 workers contend.

use crate::common;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use polylock::{AcquireOptions, Client, ErrorKind, LostReason};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{sleep, timeout, Instant};
use zookeeper_client as zk;

fn zk_url() -> String {
    std::env::var("POLYLOCK_TEST_ZOOKEEPER_URL").unwrap_or_else(|_| "zk://127.0.0.1:12181".to_string())
}

fn ensemble_url() -> String {
    std::env::var("POLYLOCK_TEST_ZOOKEEPER_ENSEMBLE_URL")
        .unwrap_or_else(|_| "zk://127.0.0.1:12281,127.0.0.1:12282,127.0.0.1:12283".to_string())
}

/// `host:port,...` of a zk:// URL without options, as ZooKeeper clients take it.
fn hosts_of(url: &str) -> String {
    url.trim_start_matches("zk://").split(['?', '/']).next().unwrap().to_string()
}

fn services_dir() -> String {
    std::env::var("POLYLOCK_SERVICES_DIR").unwrap_or_else(|_| "/tmp/polylock-services".to_string())
}

/// A lock name no other test run uses.
fn unique(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("zk-{name}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

async fn connect(url: &str) -> Client {
    Client::connect(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e} (start it with tests/services/services.sh start zookeeper)"))
}

async fn raw_client(url: &str) -> zk::Client {
    zk::Client::connect(&hosts_of(url)).await.expect("raw ZooKeeper client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_layout_is_curators_and_the_token_is_the_czxid() {
    if common::servers_off() {
        return;
    }
    let client = connect(&zk_url()).await;
    let raw = raw_client(&zk_url()).await;
    let name = unique("layout");
    let guard = client.lock(&name).unwrap().acquire().await.unwrap();
    let path = format!("/{name}");
    let children = raw.list_children(&path).await.unwrap();
    assert_eq!(children.len(), 1, "{children:?}");
    let node = &children[0];
    let (uuid, seq) = node.strip_prefix("_c_").and_then(|rest| rest.split_once("-lock-")).expect(node);
    assert!(uuid::Uuid::parse_str(uuid).is_ok(), "protected prefix carries a uuid: {node}");
    assert!(seq.len() == 10 && seq.bytes().all(|b| b.is_ascii_digit()), "10-digit sequence: {node}");
    let (_, stat) = raw.get_data(&format!("{path}/{node}")).await.unwrap();
    assert_ne!(stat.ephemeral_owner, 0, "the node is ephemeral");
    assert_eq!(guard.fencing_token(), stat.czxid as u64);
    guard.release().await.unwrap();
    assert!(raw.list_children(&path).await.unwrap().is_empty(), "release deletes the node");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_paths_work_and_impossible_paths_are_refused() {
    if common::servers_off() {
        return;
    }
    let client = connect(&zk_url()).await;
    let raw = raw_client(&zk_url()).await;
    let name = format!("/{}/nested", unique("paths"));
    let guard = client.lock(&name).unwrap().acquire().await.unwrap();
    assert_eq!(raw.list_children(&name).await.unwrap().len(), 1, "a leading '/' names the path itself");
    guard.release().await.unwrap();
    for bad in ["a//b", "trailing/", "a/./b", "tab\there", "zookeeper/quota"] {
        let err = client.lock(bad).unwrap().acquire().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{bad}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_servers_and_wrong_passwords_get_connection_errors() {
    if common::servers_off() {
        return;
    }
    let started = Instant::now();
    let err = Client::connect("zk://127.0.0.1:1?connect_timeout=1s").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "bounded by connect_timeout");

    let hosts = hosts_of(&zk_url());
    let name = unique("digest");
    let alice = connect(&format!("zk://alice:s3cret@{hosts}")).await;
    let guard = alice.lock(&name).unwrap().acquire().await.unwrap();
    let mallory = connect(&format!("zk://alice:hunter2@{hosts}")).await;
    let err = mallory.lock(&name).unwrap().try_acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.to_string().contains("check the user and password"), "{err}");
    assert!(!err.to_string().contains("hunter2") && !mallory.url().contains("hunter2"), "{err}");
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chroot_made_with_digest_credentials_is_closed_to_everyone_else() {
    if common::servers_off() {
        return;
    }
    // ZooKeeper's digest scheme: `addauth digest user:password` always succeeds (it only names
    // an identity), and the ACL of each node decides. polylock creates the chroot and every
    // node under it with CREATOR_ALL when the URL has credentials.
    let hosts = hosts_of(&zk_url());
    let chroot = format!("/{}", unique("digest-chroot"));
    let owner = connect(&format!("zk://carol:c4rol-pw@{hosts}{chroot}")).await;
    let name = unique("guarded");
    let guard = owner.lock(&name).unwrap().acquire().await.unwrap();

    // With the same identity, another client waits its turn as usual.
    let colleague = connect(&format!("zk://carol:c4rol-pw@{hosts}{chroot}")).await;
    assert!(colleague.lock(&name).unwrap().try_acquire().await.unwrap().is_none());

    let raw = raw_client(&zk_url()).await;
    let err = raw.list_children(&chroot).await.unwrap_err();
    assert!(matches!(err, zk::Error::NoAuth), "the chroot itself is closed to anonymous readers: {err:?}");
    for (who, url) in [
        ("anonymous", format!("zk://{hosts}{chroot}")),
        ("wrong password", format!("zk://carol:not-c4rol-pw@{hosts}{chroot}")),
    ] {
        let outsider = connect(&url).await;
        let err = outsider.lock(&name).unwrap().try_acquire().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Connection, "{who}: {err}");
        assert!(err.to_string().contains("check the user and password"), "{who}: {err}");
        assert!(!err.to_string().contains("not-c4rol-pw"), "{who}: {err}");
        let err = outsider.lock(&unique("elsewhere")).unwrap().try_acquire().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Connection, "{who} cannot create a new lock in the chroot either: {err}");
        outsider.close().await;
    }
    assert!(!guard.is_lost() && guard.lock().is_held(), "the refused clients did not disturb the holder");
    guard.release().await.unwrap();
    let next = colleague.lock(&name).unwrap().try_acquire().await.unwrap().expect("free again");
    next.release().await.unwrap();
}

/// A TCP relay to the ZooKeeper server that the test can cut (close every connection and
/// refuse new ones) and restore: a network partition between one client and the server.
struct Relay {
    port: u16,
    cut: Arc<AtomicBool>,
    generation: Arc<AtomicU64>,
}

impl Relay {
    async fn start(upstream: String) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let generation = Arc::new(AtomicU64::new(0));
        let (cut2, generation2) = (cut.clone(), generation.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else { return };
                if cut2.load(Ordering::SeqCst) {
                    continue; // dropped: refused
                }
                let born = generation2.load(Ordering::SeqCst);
                let (upstream, generation) = (upstream.clone(), generation2.clone());
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(&upstream).await else { return };
                    let relay = tokio::io::copy_bidirectional(&mut inbound, &mut outbound);
                    let severed = async {
                        while generation.load(Ordering::SeqCst) == born {
                            sleep(Duration::from_millis(10)).await;
                        }
                    };
                    tokio::select! { _ = relay => {}, _ = severed => {} }
                });
            }
        });
        Relay { port, cut, generation }
    }

    fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

async fn eventually(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < until, "{what} did not happen within {limit:?}");
        sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_disconnect_suspends_the_guard_and_reconnecting_lifts_it() {
    if common::servers_off() {
        return;
    }
    let relay = Relay::start(hosts_of(&zk_url())).await;
    let holder = connect(&format!("zk://127.0.0.1:{}?session_timeout=10s", relay.port)).await;
    let other = connect(&zk_url()).await;
    let name = unique("suspend");
    let guard = holder.lock(&name).unwrap().acquire().await.unwrap();
    assert!(!guard.is_suspended());
    relay.cut();
    eventually("SUSPENDED", Duration::from_secs(5), || guard.is_suspended()).await;
    assert!(!guard.is_lost(), "the session lives on while the server waits for it");
    assert!(other.lock(&name).unwrap().try_acquire().await.unwrap().is_none(), "still held in ZooKeeper");
    relay.restore();
    eventually("RECONNECTED", Duration::from_secs(10), || !guard.is_suspended()).await;
    assert!(!guard.is_lost());
    guard.release().await.unwrap();
    other.lock(&name).unwrap().try_acquire().await.unwrap().expect("free after release").release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_loses_the_guard_and_the_next_waiter_gets_the_lock() {
    if common::servers_off() {
        return;
    }
    let relay = Relay::start(hosts_of(&zk_url())).await;
    // The standalone server's tick is 1 s, so 4 s is a session timeout it accepts as is.
    let holder = connect(&format!("zk://127.0.0.1:{}?session_timeout=4s", relay.port)).await;
    let other = connect(&zk_url()).await;
    let name = unique("expiry");
    let guard = holder.lock(&name).unwrap().acquire().await.unwrap();
    let waiter = {
        let lock = other.lock(&name).unwrap();
        tokio::spawn(async move { lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(30))).await })
    };
    sleep(Duration::from_millis(200)).await;
    relay.cut();
    let cut_at = Instant::now();
    let theirs = waiter.await.unwrap().expect("the waiter gets the lock once the holder's session expires");
    assert!(cut_at.elapsed() >= Duration::from_secs(3), "taken before the session could expire");
    assert!(theirs.fencing_token() > guard.fencing_token());
    relay.restore();
    let reason = timeout(Duration::from_secs(15), guard.lost()).await.expect("the holder learns its session ended");
    assert!(matches!(reason, LostReason::SessionEnded(ref why) if why.contains("expired")), "{reason:?}");
    assert!(!guard.is_suspended());
    assert_eq!(guard.release().await.unwrap_err().kind(), ErrorKind::Lost);
    theirs.release().await.unwrap();
    // The holder's client carries on in a new session.
    let again = holder.lock(&name).unwrap();
    let again = again.acquire_with(AcquireOptions::default().wait(Duration::from_secs(10))).await;
    again.expect("a new session after expiry").release().await.unwrap();
}

// ---------------------------------------------------------------------------------------
// Curator interop

/// `java -cp ...` for tests/interop/curator, built once per test run with Maven.
fn curator_command() -> Command {
    static CLASSPATH: OnceLock<String> = OnceLock::new();
    let classpath = CLASSPATH.get_or_init(|| {
        let project = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/interop/curator");
        let status = Command::new("mvn")
            .args(["-q", "-B", "package", "-DskipTests", "dependency:build-classpath"])
            .arg("-Dmdep.outputFile=target/classpath.txt")
            .current_dir(project)
            .status()
            .expect("mvn (Maven) must be installed for the Curator interop tests");
        assert!(status.success(), "building tests/interop/curator failed");
        let deps = std::fs::read_to_string(format!("{project}/target/classpath.txt")).unwrap();
        format!("{project}/target/classes:{}", deps.trim())
    });
    let mut command = Command::new("java");
    command.args(["-cp", classpath, "io.polylock.interop.CuratorLock"]);
    command
}

/// Start Curator on `path` and return its stdout lines as they come.
fn curator(path: &str, mode: &str, millis: u64) -> (tokio::process::Child, tokio::sync::mpsc::Receiver<String>) {
    let command = curator_command();
    let mut child = tokio::process::Command::from(command)
        .args([&hosts_of(&zk_url()), path, mode, &millis.to_string()])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("java");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = tx.send(line).await;
        }
    });
    (child, rx)
}

async fn next_line(lines: &mut tokio::sync::mpsc::Receiver<String>) -> String {
    timeout(Duration::from_secs(60), lines.recv()).await.expect("Curator answered in time").expect("Curator's output")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_holds_and_polylock_waits() {
    if common::servers_off() {
        return;
    }
    let client = connect(&zk_url()).await;
    let name = unique("curator-holds");
    let (mut java, mut lines) = tokio::task::spawn_blocking({
        let path = format!("/{name}");
        move || curator(&path, "hold", 2000)
    })
    .await
    .unwrap();
    assert_eq!(next_line(&mut lines).await, "ACQUIRED");
    let lock = client.lock(&name).unwrap();
    assert!(lock.try_acquire().await.unwrap().is_none(), "Curator's InterProcessMutex excludes polylock");
    let guard = lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(30))).await.unwrap();
    assert_eq!(next_line(&mut lines).await, "RELEASED", "polylock got the lock only after Curator released it");
    guard.release().await.unwrap();
    assert!(java.wait().await.unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polylock_holds_and_curator_waits() {
    if common::servers_off() {
        return;
    }
    let client = connect(&zk_url()).await;
    let name = unique("polylock-holds");
    let path = format!("/{name}");
    let guard = client.lock(&name).unwrap().acquire().await.unwrap();
    let (mut java, mut lines) = tokio::task::spawn_blocking({
        let path = path.clone();
        move || curator(&path, "acquire", 1000)
    })
    .await
    .unwrap();
    assert_eq!(next_line(&mut lines).await, "TIMEOUT", "polylock's lock excludes Curator");
    assert!(java.wait().await.unwrap().success());
    let (mut java, mut lines) = curator(&path, "acquire", 60_000);
    sleep(Duration::from_secs(3)).await; // Curator is up and waiting on our node
    let released_at = Instant::now();
    guard.release().await.unwrap();
    assert_eq!(next_line(&mut lines).await, "ACQUIRED", "Curator gets the lock polylock released");
    assert!(released_at.elapsed() < Duration::from_secs(5), "woken by its watch, not by a timeout");
    assert_eq!(next_line(&mut lines).await, "RELEASED");
    assert!(java.wait().await.unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polylock_sees_and_force_unlocks_a_curator_holder() {
    if common::servers_off() {
        return;
    }
    let client = connect(&zk_url()).await;
    let name = unique("curator-forced");
    let (mut java, mut lines) = tokio::task::spawn_blocking({
        let path = format!("/{name}");
        move || curator(&path, "hold", 8000)
    })
    .await
    .unwrap();
    assert_eq!(next_line(&mut lines).await, "ACQUIRED");
    let lock = client.lock(&name).unwrap();
    assert!(lock.is_locked().await.unwrap(), "Curator's hold is visible");
    assert_eq!(lock.remaining_lease().await.unwrap(), Some(Duration::MAX), "a session-bound node has no TTL");
    assert!(lock.try_acquire().await.unwrap().is_none());
    assert!(lock.force_unlock().await.unwrap(), "Curator's node was removed");
    let guard = lock.try_acquire().await.unwrap().expect("free after the forced unlock");
    guard.release().await.unwrap();
    // Curator's own release then finds its node gone, which it tolerates.
    assert_eq!(next_line(&mut lines).await, "RELEASED");
    assert!(java.wait().await.unwrap().success());
    assert!(!lock.is_locked().await.unwrap());
    assert!(!lock.force_unlock().await.unwrap(), "nothing left to remove");
}

// ---------------------------------------------------------------------------------------
// 3-server ensemble

/// The client port and server number of the ensemble's current leader.
async fn ensemble_leader() -> Option<(u16, u32)> {
    for (port, server) in [(12281u16, 1u32), (12282, 2), (12283, 3)] {
        if four_letter_word(port, "srvr").await.contains("Mode: leader") {
            return Some((port, server));
        }
    }
    None
}

async fn four_letter_word(port: u16, word: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let exchange = async {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        stream.write_all(word.as_bytes()).await.ok()?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply).await.ok()?;
        Some(reply)
    };
    timeout(Duration::from_secs(3), exchange).await.ok().flatten().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ensemble_survives_losing_its_leader_while_8_workers_contend() {
    if common::servers_off() {
        return;
    }
    let url = ensemble_url();
    let clients: Vec<Client> = {
        let mut clients = Vec::new();
        for _ in 0..4 {
            clients.push(connect(&url).await);
        }
        clients
    };
    let name = unique("ensemble");
    let inside = Arc::new(AtomicU64::new(0));
    let ledger = Arc::new(Mutex::new(Vec::<(Instant, u64)>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for w in 0..8 {
        let lock = clients[w % clients.len()].lock(&name).unwrap();
        let (inside, ledger, stop) = (inside.clone(), ledger.clone(), stop.clone());
        workers.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let guard = lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(40))).await?;
                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
                ledger.lock().unwrap().push((Instant::now(), guard.fencing_token()));
                sleep(Duration::from_millis(1)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                // A release racing the failover may find the node already gone with its
                // session; either way the lock is no longer ours.
                match guard.release().await {
                    Ok(()) => {}
                    Err(err) if err.kind() == ErrorKind::Lost => {}
                    Err(err) => return Err(err),
                }
            }
            Ok::<(), polylock::Error>(())
        }));
    }
    sleep(Duration::from_secs(2)).await;
    let (leader_port, leader) = ensemble_leader().await.expect("the ensemble has a leader");
    let pid_file = format!("{}/zookeeper-ensemble/node{leader}.pid", services_dir());
    let pid = std::fs::read_to_string(&pid_file).unwrap().trim().to_string();
    assert!(Command::new("kill").args(["-9", &pid]).status().unwrap().success(), "kill the leader");
    let killed_at = Instant::now();
    // Locks keep working once the two survivors elect a new leader.
    eventually("acquisitions after the leader died", Duration::from_secs(40), || {
        ledger.lock().unwrap().iter().filter(|(at, _)| *at > killed_at + Duration::from_millis(100)).count() >= 20
    })
    .await;
    let new_leader = ensemble_leader().await;
    stop.store(true, Ordering::SeqCst);
    for worker in workers {
        timeout(Duration::from_secs(60), worker).await.expect("no worker hangs").unwrap().expect("worker");
    }
    // Put the killed server back, and wait until it serves again.
    let restart = format!("{}/zookeeper-ensemble/node{leader}/start.sh", services_dir());
    assert!(Command::new("bash").arg(&restart).status().unwrap().success());
    let until = Instant::now() + Duration::from_secs(60);
    while !four_letter_word(leader_port, "srvr").await.contains("Mode: ") {
        assert!(Instant::now() < until, "server {leader} did not rejoin");
        sleep(Duration::from_millis(200)).await;
    }
    assert!(new_leader.is_some_and(|(_, s)| s != leader), "a new leader was elected: {new_leader:?}");
    let tokens: Vec<u64> = ledger.lock().unwrap().iter().map(|(_, t)| *t).collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "fencing tokens follow the order of the holds");
    for client in clients {
        client.close().await;
    }
}

/// Issue 35: `/` nests levels, so a name could be a node inside another name's lock path.
/// Before, the lock `a/x-lock-0000000000` made `/a/x-lock-0000000000`, which the lock `a`
/// sorted first among its contenders and waited behind; and the lock `s/locks` was the mutex
/// every contender of the semaphore `s` takes. Such names are refused now, naming the level;
/// other nested names still nest, and never hold the name above them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_that_is_another_recipes_node_is_refused_and_nesting_never_blocks() {
    if common::servers_off() {
        return;
    }
    let client = connect(&zk_url()).await;
    let a = unique("nest");
    for bad in [
        format!("{a}/x-lock-0000000000"),
        format!("{a}/_c_5b0d-__WRIT__0000000001/b"),
        format!("{a}/lease-0000000004"),
        format!("{a}/locks"),
        format!("{a}/leases"),
    ] {
        let err = client.lock(&bad).unwrap().try_acquire().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{bad}: {err}");
        let level = bad.rsplit('/').find(|level| !level.is_empty() && *level != "b").unwrap();
        assert!(err.message().contains(level), "{bad}: {err}");
    }
    let err = client.semaphore(&format!("{a}/x-lock-1"), 2).unwrap().try_acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    // Nesting as Curator does still works, and a held nested name never holds the one above.
    let nested = client.lock(&format!("{a}/sub")).unwrap().acquire().await.unwrap();
    let top = client.lock(&a).unwrap().try_acquire().await.unwrap().expect("the name above a nested hold is free");
    let semaphore = client.semaphore(&format!("{a}/sem"), 1).unwrap().acquire().await.unwrap();
    assert!(!nested.is_lost() && !semaphore.is_lost());
    for guard in [top, nested] {
        guard.release().await.unwrap();
    }
    semaphore.release().await.unwrap();
    client.close().await;
}
