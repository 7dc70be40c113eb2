//! Read-write locks and semaphores on ZooKeeper against the real server (tests/services:
//! `zookeeper`) and the real Curator (tests/interop/curator, built with Maven): Curator's
//! InterProcessReadWriteLock and InterProcessSemaphoreV2 layouts, node for node; sharing,
//! exclusion, reentrancy, downgrade, FIFO order, fencing, timeouts, permits under contention,
//! sessions that end (through a TCP relay the test cuts), and both recipes mixed with Curator.

use crate::common;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use polylock::{AcquireOptions, Client, ErrorKind};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{sleep, timeout, Instant};
use zookeeper_client as zk;

fn zk_url() -> String {
    std::env::var("POLYLOCK_TEST_ZOOKEEPER_URL").unwrap_or_else(|_| "zk://127.0.0.1:12181".to_string())
}

/// `host:port,...` of a zk:// URL without options, as ZooKeeper clients take it.
fn hosts_of(url: &str) -> String {
    url.trim_start_matches("zk://").split(['?', '/']).next().unwrap().to_string()
}

/// A lock name no other test run uses.
fn unique(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("zkrs-{name}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

async fn connect(url: &str) -> Client {
    Client::connect(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e} (start it with tests/services/services.sh start zookeeper)"))
}

async fn raw_client() -> zk::Client {
    zk::Client::connect(&hosts_of(&zk_url())).await.expect("raw ZooKeeper client")
}

fn wait(ms: u64) -> AcquireOptions {
    AcquireOptions::default().wait(Duration::from_millis(ms))
}

/// `_c_<36-char uuid>-<lock name><10 digits>`: a node as Curator names it.
fn is_curator_node(node: &str, lock_name: &str) -> Option<String> {
    let rest = node.strip_prefix("_c_")?;
    let (uuid, rest) = rest.split_at_checked(36)?;
    uuid::Uuid::parse_str(uuid).ok()?;
    let digits = rest.strip_prefix('-')?.strip_prefix(lock_name)?;
    (digits.len() == 10 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.to_string())
}

async fn children(raw: &zk::Client, path: &str) -> Vec<String> {
    let mut children = raw.list_children(path).await.unwrap_or_default();
    children.sort();
    children
}

// ---------------------------------------------------------------------------------------
// Read-write lock

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_a_writer_excludes_and_the_layout_is_curators() {
    if common::servers_off() {
        return;
    }
    let (a, b) = (connect(&zk_url()).await, connect(&zk_url()).await);
    let raw = raw_client().await;
    let name = unique("share");
    let path = format!("/{name}");
    let (ra, rb) = (a.rw_lock(&name).unwrap(), b.rw_lock(&name).unwrap());
    let read_a = ra.read().acquire().await.unwrap();
    let read_b = rb.read().acquire_with(wait(2000)).await.unwrap();
    assert!(read_b.fencing_token() > read_a.fencing_token(), "tokens grow");
    let nodes = children(&raw, &path).await;
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    assert!(nodes.iter().all(|n| is_curator_node(n, "__READ__").is_some()), "{nodes:?}");
    for node in &nodes {
        let (_, stat) = raw.get_data(&format!("{path}/{node}")).await.unwrap();
        assert_ne!(stat.ephemeral_owner, 0, "{node} is ephemeral");
    }

    let writer = b.rw_lock(&name).unwrap(); // another owner of client b
    let err = writer.write().acquire_with(wait(300)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "a writer waits for readers");
    assert_eq!(children(&raw, &path).await.len(), 2, "the writer that gave up left no node behind");
    let last_read = read_b.fencing_token();
    read_a.release().await.unwrap();
    read_b.release().await.unwrap();

    let write = writer.write().acquire_with(wait(2000)).await.unwrap();
    assert!(write.fencing_token() > last_read, "every grant outgrows every earlier one");
    let nodes = children(&raw, &path).await;
    assert!(nodes.len() == 1 && is_curator_node(&nodes[0], "__WRIT__").is_some(), "{nodes:?}");
    assert!(ra.read().is_locked().await.unwrap() || ra.write().is_locked().await.unwrap());
    assert!(ra.write().is_locked().await.unwrap(), "the write side is held");
    assert_eq!(ra.read().acquire_with(wait(200)).await.unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(ra.write().acquire_with(wait(200)).await.unwrap_err().kind(), ErrorKind::Timeout);
    assert!(ra.read().try_acquire().await.unwrap().is_none(), "try once: refused while written");

    // Reentrant per owner: one node, one token.
    let again = writer.write().acquire().await.unwrap();
    assert_eq!(again.fencing_token(), write.fencing_token());
    assert_eq!(writer.write().hold_count(), 2);
    assert_eq!(children(&raw, &path).await.len(), 1);
    again.release().await.unwrap();
    assert_eq!(children(&raw, &path).await.len(), 1, "still held once");
    write.release().await.unwrap();
    let read = ra.read().acquire_with(wait(2000)).await.unwrap();
    let read_again = ra.read().acquire().await.unwrap();
    assert_eq!(ra.read().hold_count(), 2);
    read_again.release().await.unwrap();
    read.release().await.unwrap();
    assert!(children(&raw, &path).await.is_empty());
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downgrade_writes_curators_read_node_beside_the_write_node() {
    if common::servers_off() {
        return;
    }
    let (a, b) = (connect(&zk_url()).await, connect(&zk_url()).await);
    let raw = raw_client().await;
    let name = unique("downgrade");
    let path = format!("/{name}");
    let lock = a.rw_lock(&name).unwrap();
    let write = lock.write().acquire().await.unwrap();
    let read = lock.read().acquire_with(wait(0)).await.expect("the write holder reads at once");
    assert!(read.fencing_token() > write.fencing_token());
    let nodes = children(&raw, &path).await;
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    let write_seq = nodes.iter().find_map(|n| is_curator_node(n, "__WRIT__")).expect("a write node");
    let read_seq = nodes.iter().find_map(|n| is_curator_node(n, "__READ__")).expect("a read node");
    assert_eq!(read_seq, write_seq, "CURATOR-621: the read node carries the writer's sequence: {nodes:?}");

    write.release().await.unwrap();
    let other = b.rw_lock(&name).unwrap();
    assert_eq!(other.write().acquire_with(wait(300)).await.unwrap_err().kind(), ErrorKind::Timeout);
    let shared = other.read().acquire_with(wait(2000)).await.expect("readers share with the downgraded reader");
    // An upgrade is refused at once, never deadlocked.
    let err = lock.write().acquire_with(wait(5000)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    shared.release().await.unwrap();
    read.release().await.unwrap();
    let write = other.write().acquire_with(wait(2000)).await.unwrap();
    write.release().await.unwrap();
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_arrives_after_a_waiting_writer_waits_behind_it() {
    if common::servers_off() {
        return;
    }
    let (a, b, c) = (connect(&zk_url()).await, connect(&zk_url()).await, connect(&zk_url()).await);
    let name = unique("fifo");
    let first_reader = a.rw_lock(&name).unwrap().read().acquire().await.unwrap();
    let writer = {
        let lock = b.rw_lock(&name).unwrap();
        tokio::spawn(async move { lock.write().acquire_with(wait(20_000)).await })
    };
    sleep(Duration::from_millis(500)).await; // the writer is queued
    let late = c.rw_lock(&name).unwrap();
    assert_eq!(
        late.read().acquire_with(wait(500)).await.unwrap_err().kind(),
        ErrorKind::Timeout,
        "a new reader queues behind the waiting writer, though only readers hold"
    );
    let late_reader = {
        let late = late.clone();
        tokio::spawn(async move { late.read().acquire_with(wait(20_000)).await })
    };
    sleep(Duration::from_millis(300)).await;
    first_reader.release().await.unwrap();
    let write = writer.await.unwrap().expect("the writer is served first");
    sleep(Duration::from_millis(300)).await;
    assert!(!late_reader.is_finished(), "the late reader still waits for the writer");
    let write_token = write.fencing_token();
    write.release().await.unwrap();
    let read = late_reader.await.unwrap().expect("then the late reader");
    assert!(read.fencing_token() > write_token);
    read.release().await.unwrap();
    for client in [a, b, c] {
        client.close().await;
    }
}

// ---------------------------------------------------------------------------------------
// Semaphore

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_semaphore_layout_is_curators_and_the_count_is_fixed() {
    if common::servers_off() {
        return;
    }
    let (a, b) = (connect(&zk_url()).await, connect(&zk_url()).await);
    let raw = raw_client().await;
    let name = unique("sem-layout");
    let path = format!("/{name}");
    let semaphore = a.semaphore(&name, 2).unwrap();
    let one = semaphore.acquire().await.unwrap();
    let two = b.semaphore(&name, 2).unwrap().acquire_with(wait(2000)).await.unwrap();
    assert!(two.fencing_token() > one.fencing_token());
    let (count, _) = raw.get_data(&path).await.unwrap();
    assert_eq!(count, b"2", "the count lives in the semaphore path's data");
    let leases = children(&raw, &format!("{path}/leases")).await;
    assert_eq!(leases.len(), 2, "{leases:?}");
    assert!(leases.iter().all(|n| is_curator_node(n, "lease-").is_some()), "{leases:?}");
    assert!(children(&raw, &format!("{path}/locks")).await.is_empty(), "the mutex is released after each grant");

    assert!(semaphore.try_acquire().await.unwrap().is_none(), "both permits are out");
    let err = semaphore.acquire_with(wait(300)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert_eq!(children(&raw, &format!("{path}/leases")).await.len(), 2, "the waiter that gave up left no lease");

    let err = b.semaphore(&name, 3).unwrap().try_acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.message().contains("2 permits"), "{err}");
    let fresh = connect(&zk_url()).await; // no cached count
    let err = fresh.semaphore(&name, 1).unwrap().acquire_with(wait(100)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");

    let last = two.fencing_token();
    one.release().await.unwrap();
    let three = semaphore.acquire_with(wait(2000)).await.unwrap();
    assert!(three.fencing_token() > last);
    two.release().await.unwrap();
    three.release().await.unwrap();
    assert!(children(&raw, &format!("{path}/leases")).await.is_empty());
    for client in [a, b, fresh] {
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_never_exceed_n_under_contention() {
    if common::servers_off() {
        return;
    }
    const PERMITS: u32 = 3;
    let name = unique("sem-contention");
    let inside = Arc::new(AtomicU32::new(0));
    let most = Arc::new(AtomicU32::new(0));
    let mut clients = Vec::new();
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let client = connect(&zk_url()).await;
        for _ in 0..3 {
            let semaphore = client.semaphore(&name, PERMITS).unwrap();
            let (inside, most) = (inside.clone(), most.clone());
            tasks.push(tokio::spawn(async move {
                let mut last_token = 0;
                for _ in 0..6 {
                    let permit = semaphore.acquire_with(wait(60_000)).await.unwrap();
                    assert!(permit.fencing_token() > last_token);
                    last_token = permit.fencing_token();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    sleep(Duration::from_millis(15)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    permit.release().await.unwrap();
                }
            }));
        }
        clients.push(client);
    }
    for task in tasks {
        task.await.unwrap();
    }
    let most = most.load(Ordering::SeqCst);
    eprintln!("at most {most} of {PERMITS} permits held at once");
    assert!(most <= PERMITS, "{most} holders at once");
    assert!(most >= 2, "the permits were shared ({most})");
    for client in clients {
        client.close().await;
    }
}

// ---------------------------------------------------------------------------------------
// Sessions that end

/// A TCP relay to the ZooKeeper server that the test can cut: a network partition between
/// one client and the server, long enough for its session to expire.
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_ends_frees_its_holds_and_its_waiters_stop_with_lost() {
    if common::servers_off() {
        return;
    }
    let relay = Relay::start(hosts_of(&zk_url())).await;
    // The standalone server's tick is 1 s, so 4 s is a session timeout it accepts as is.
    let doomed = connect(&format!("zk://127.0.0.1:{}?session_timeout=4s", relay.port)).await;
    let other = connect(&zk_url()).await;
    let (rw_name, sem_name, busy_name) = (unique("end-rw"), unique("end-sem"), unique("end-busy"));

    let read = doomed.rw_lock(&rw_name).unwrap().read().acquire().await.unwrap();
    let permit = doomed.semaphore(&sem_name, 1).unwrap().acquire().await.unwrap();
    let busy_write = other.rw_lock(&busy_name).unwrap().write().acquire().await.unwrap();
    let busy_permit = other.semaphore(&busy_name, 1).unwrap().acquire().await.unwrap();
    // The doomed client also waits, on both families, behind the other client's holds.
    let doomed_reader = {
        let lock = doomed.rw_lock(&busy_name).unwrap();
        tokio::spawn(async move { lock.read().acquire_with(wait(60_000)).await })
    };
    let doomed_permit = {
        let semaphore = doomed.semaphore(&busy_name, 1).unwrap();
        tokio::spawn(async move { semaphore.acquire_with(wait(60_000)).await })
    };
    // And the other client waits behind the doomed client's holds.
    let writer = {
        let lock = other.rw_lock(&rw_name).unwrap();
        tokio::spawn(async move { lock.write().acquire_with(wait(60_000)).await })
    };
    let second_permit = {
        let semaphore = other.semaphore(&sem_name, 1).unwrap();
        tokio::spawn(async move { semaphore.acquire_with(wait(60_000)).await })
    };
    sleep(Duration::from_millis(500)).await;
    assert!(!writer.is_finished() && !second_permit.is_finished());
    relay.cut();
    let cut_at = Instant::now();

    let write = writer.await.unwrap().expect("the writer gets in once the reader's session is gone");
    let permit_two = second_permit.await.unwrap().expect("the permit comes back with the session");
    assert!(cut_at.elapsed() >= Duration::from_secs(3), "taken before the session could expire");
    let err = timeout(Duration::from_secs(30), doomed_reader).await.expect("the waiting reader stops").unwrap();
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Lost, "a waiter whose session ended stops with Lost");
    let err = timeout(Duration::from_secs(30), doomed_permit).await.expect("the waiting permit stops").unwrap();
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Lost, "a waiter whose session ended stops with Lost");
    timeout(Duration::from_secs(20), read.lost()).await.expect("the reader learns its session ended");
    timeout(Duration::from_secs(20), permit.lost()).await.expect("the permit holder learns its session ended");
    write.release().await.unwrap();
    permit_two.release().await.unwrap();
    busy_write.release().await.unwrap();
    busy_permit.release().await.unwrap();
    other.close().await;
    doomed.close().await;
}

// ---------------------------------------------------------------------------------------
// Curator interop

/// `java -cp ... io.polylock.interop.CuratorRecipes`, built once per test run with Maven.
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
    command.args(["-cp", classpath, "io.polylock.interop.CuratorRecipes", &hosts_of(&zk_url())]);
    command
}

/// Start Curator with `args` and return its stdout lines as they come.
async fn curator(args: &[&str]) -> (tokio::process::Child, tokio::sync::mpsc::Receiver<String>) {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let command = tokio::task::spawn_blocking(curator_command).await.unwrap();
    let mut child = tokio::process::Command::from(command)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("java");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (tx, rx) = tokio::sync::mpsc::channel(16);
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
async fn curator_readers_share_with_polylock_readers_and_writers_exclude_both_ways() {
    if common::servers_off() {
        return;
    }
    let client = connect(&zk_url()).await;
    let name = unique("curator-rw");
    let path = format!("/{name}");
    let lock = client.rw_lock(&name).unwrap();

    // A Curator reader holds: a polylock reader shares, a polylock writer waits.
    let (mut java, mut lines) = curator(&["rw", &path, "read", "hold", "3000"]).await;
    assert_eq!(next_line(&mut lines).await, "ACQUIRED");
    let read = lock.read().try_acquire().await.unwrap().expect("a polylock reader shares with Curator's reader");
    read.release().await.unwrap();
    let writer = client.rw_lock(&name).unwrap();
    assert!(writer.write().try_acquire().await.unwrap().is_none(), "Curator's reader keeps polylock's writer out");
    let write = writer.write().acquire_with(wait(30_000)).await.unwrap();
    assert_eq!(next_line(&mut lines).await, "RELEASED", "polylock wrote only after Curator's reader left");
    java.wait().await.unwrap();

    // A polylock writer holds: Curator's reader and writer wait.
    let (mut java, mut lines) = curator(&["rw", &path, "read", "acquire", "1000"]).await;
    assert_eq!(next_line(&mut lines).await, "TIMEOUT", "polylock's writer keeps Curator's reader out");
    java.wait().await.unwrap();
    let (mut java, mut lines) = curator(&["rw", &path, "write", "acquire", "1000"]).await;
    assert_eq!(next_line(&mut lines).await, "TIMEOUT", "polylock's writer keeps Curator's writer out");
    java.wait().await.unwrap();
    let (mut java, mut lines) = curator(&["rw", &path, "read", "acquire", "60000"]).await;
    sleep(Duration::from_secs(2)).await; // Curator is up and waiting behind our write node
    write.release().await.unwrap();
    assert_eq!(next_line(&mut lines).await, "ACQUIRED", "Curator's reader gets in when polylock's writer leaves");
    java.wait().await.unwrap();

    // A Curator writer holds: polylock's readers wait.
    let (mut java, mut lines) = curator(&["rw", &path, "write", "hold", "2000"]).await;
    assert_eq!(next_line(&mut lines).await, "ACQUIRED");
    assert!(lock.read().try_acquire().await.unwrap().is_none(), "Curator's writer keeps polylock's reader out");
    let read = lock.read().acquire_with(wait(30_000)).await.unwrap();
    assert_eq!(next_line(&mut lines).await, "RELEASED", "polylock read only after Curator's writer left");
    java.wait().await.unwrap();

    // A polylock reader holds: Curator's reader shares, Curator's writer waits.
    let (mut java, mut lines) = curator(&["rw", &path, "read", "acquire", "5000"]).await;
    assert_eq!(next_line(&mut lines).await, "ACQUIRED", "Curator's reader shares with polylock's reader");
    java.wait().await.unwrap();
    let (mut java, mut lines) = curator(&["rw", &path, "write", "acquire", "1000"]).await;
    assert_eq!(next_line(&mut lines).await, "TIMEOUT", "polylock's reader keeps Curator's writer out");
    java.wait().await.unwrap();
    read.release().await.unwrap();
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polylock_reader_queues_behind_a_waiting_curator_writer() {
    if common::servers_off() {
        return;
    }
    let (a, b) = (connect(&zk_url()).await, connect(&zk_url()).await);
    let name = unique("curator-fifo");
    let path = format!("/{name}");
    let read = a.rw_lock(&name).unwrap().read().acquire().await.unwrap();
    let (mut java, mut lines) = curator(&["rw", &path, "write", "hold", "1500"]).await;
    let raw = raw_client().await;
    let until = Instant::now() + Duration::from_secs(30);
    while !children(&raw, &path).await.iter().any(|n| is_curator_node(n, "__WRIT__").is_some()) {
        assert!(Instant::now() < until, "Curator's writer never queued");
        sleep(Duration::from_millis(50)).await;
    }
    let late = b.rw_lock(&name).unwrap();
    assert_eq!(
        late.read().acquire_with(wait(500)).await.unwrap_err().kind(),
        ErrorKind::Timeout,
        "polylock's new reader waits behind Curator's waiting writer"
    );
    read.release().await.unwrap();
    assert_eq!(next_line(&mut lines).await, "ACQUIRED");
    let late_read = late.read().acquire_with(wait(30_000)).await.unwrap();
    assert_eq!(next_line(&mut lines).await, "RELEASED", "the late reader got in after Curator's writer");
    late_read.release().await.unwrap();
    java.wait().await.unwrap();
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curators_downgrade_node_matches_polylocks_and_keeps_writers_out() {
    if common::servers_off() {
        return;
    }
    let client = connect(&zk_url()).await;
    let raw = raw_client().await;
    let name = unique("curator-downgrade");
    let path = format!("/{name}");
    let (mut java, mut lines) = curator(&["rw", &path, "downgrade", "3000"]).await;
    assert_eq!(next_line(&mut lines).await, "DOWNGRADING");
    let nodes = children(&raw, &path).await;
    let write_seq = nodes.iter().find_map(|n| is_curator_node(n, "__WRIT__"));
    let read_seq = nodes.iter().find_map(|n| is_curator_node(n, "__READ__"));
    assert!(write_seq.is_some() && write_seq == read_seq, "Curator's downgrade node, as polylock writes it: {nodes:?}");
    // Curator holds both sides until told to go on.
    tokio::io::AsyncWriteExt::write_all(java.stdin.as_mut().unwrap(), b"go\n").await.unwrap();
    assert_eq!(next_line(&mut lines).await, "DOWNGRADED");
    let lock = client.rw_lock(&name).unwrap();
    assert!(lock.write().try_acquire().await.unwrap().is_none(), "Curator's downgraded reader keeps writers out");
    let read = lock.read().try_acquire().await.unwrap().expect("and shares with polylock's readers");
    read.release().await.unwrap();
    let write = lock.write().acquire_with(wait(30_000)).await.unwrap();
    assert_eq!(next_line(&mut lines).await, "RELEASED");
    write.release().await.unwrap();
    java.wait().await.unwrap();
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_polylock_permits_together_never_exceed_n() {
    if common::servers_off() {
        return;
    }
    const PERMITS: u32 = 3;
    let name = unique("curator-sem");
    let path = format!("/{name}");
    let markers = format!("/{name}-holders");
    let raw = Arc::new(raw_client().await);
    raw.create(&markers, b"", &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())).await.unwrap();
    let (mut java, mut lines) = curator(&["semaphore", &path, &PERMITS.to_string(), "4", "8", "20", &markers]).await;
    assert_eq!(next_line(&mut lines).await, "STARTED");
    let client = connect(&zk_url()).await;
    let most = Arc::new(AtomicU32::new(0));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (semaphore, raw, markers, most) =
            (client.semaphore(&name, PERMITS).unwrap(), raw.clone(), markers.clone(), most.clone());
        tasks.push(tokio::spawn(async move {
            let ephemeral = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
            for _ in 0..8 {
                let permit = semaphore.acquire_with(wait(120_000)).await.unwrap();
                // A marker lives inside the hold, so more markers than N means more holders.
                let (_, sequence) = raw.create(&format!("{markers}/polylock-"), b"", &ephemeral).await.unwrap();
                let holders = raw.list_children(&markers).await.unwrap().len() as u32;
                most.fetch_max(holders, Ordering::SeqCst);
                sleep(Duration::from_millis(20)).await;
                raw.delete(&format!("{markers}/polylock-{sequence}"), None).await.unwrap();
                permit.release().await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let curator_most: u32 = loop {
        let line = next_line(&mut lines).await;
        if let Some(most) = line.strip_prefix("MAX ") {
            break most.parse().unwrap();
        }
    };
    assert_eq!(next_line(&mut lines).await, "DONE");
    java.wait().await.unwrap();
    let most = most.load(Ordering::SeqCst).max(curator_most);
    eprintln!("at most {most} of {PERMITS} permits held at once by Curator and polylock together");
    assert!(most <= PERMITS, "{most} holders at once");
    assert!(most >= 2, "the permits were shared ({most})");
    // Curator never wrote a count; the first polylock user fixed it.
    let (count, _) = raw.get_data(&path).await.unwrap();
    assert_eq!(count, PERMITS.to_string().as_bytes());
    client.close().await;
}
