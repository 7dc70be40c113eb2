//! etcd-specific behaviour against real servers from tests/services: etcd's Mutex layout,
//! `etcdctl lock` both ways, a waiter whose predecessor vanishes, a revoked session lease,
//! and a 3-member cluster whose leader is killed while 8 workers contend.

use crate::common;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::GetOptions;
use polylock::{AcquireOptions, Client, ErrorKind, LostReason};
use tokio::time::{sleep, timeout, Instant};

fn etcd_url() -> String {
    std::env::var("POLYLOCK_TEST_ETCD_URL").unwrap_or_else(|_| "etcd://127.0.0.1:12379".to_string())
}

fn cluster_url() -> String {
    std::env::var("POLYLOCK_TEST_ETCD_CLUSTER_URL")
        .unwrap_or_else(|_| "etcd://127.0.0.1:12479,127.0.0.1:12579,127.0.0.1:12679".to_string())
}

/// A lock name no other test (or earlier run) uses.
fn unique(name: &str) -> String {
    format!("{name}-{}-{}", std::process::id(), fastrand::u64(..))
}

/// `http://h:p,http://h:p` for etcdctl and etcd-client, from a polylock URL.
fn endpoints(url: &str) -> Vec<String> {
    let hosts = url.trim_start_matches("etcd://").split('?').next().unwrap();
    hosts.split(',').map(|h| format!("http://{h}")).collect()
}

fn etcdctl(url: &str) -> Command {
    let mut command = Command::new("etcdctl");
    command.env("ETCDCTL_API", "3").arg("--endpoints").arg(endpoints(url).join(","));
    command
}

async fn connect(url: &str) -> Client {
    Client::connect(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e} (start the servers with tests/services/services.sh start)"))
}

async fn raw(url: &str) -> etcd_client::Client {
    etcd_client::Client::connect(endpoints(url), None).await.unwrap()
}

/// The keys under `<name>/`, oldest first: (key, create revision, lease).
async fn contenders(raw: &mut etcd_client::Client, name: &str) -> Vec<(String, i64, i64)> {
    let options =
        GetOptions::new().with_prefix().with_sort(etcd_client::SortTarget::Create, etcd_client::SortOrder::Ascend);
    let answer = raw.get(format!("{name}/"), Some(options)).await.unwrap();
    answer.kvs().iter().map(|kv| (kv.key_str().unwrap().to_string(), kv.create_revision(), kv.lease())).collect()
}

async fn wait_for_contenders(raw: &mut etcd_client::Client, name: &str, count: usize) -> Vec<(String, i64, i64)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = contenders(raw, name).await;
        if found.len() >= count {
            return found;
        }
        assert!(Instant::now() < deadline, "{name}: {count} contenders never showed up: {found:?}");
        sleep(Duration::from_millis(20)).await;
    }
}

/// Wait for a child process with a limit, killing it if it overstays.
async fn wait_child(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("child process still running after {limit:?}");
        }
        sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_follow_etcds_mutex_layout_under_one_session_lease() {
    if common::servers_off() {
        return;
    }
    let client = connect(&etcd_url()).await;
    let mut raw = raw(&etcd_url()).await;
    let (first, second) = (unique("layout-a"), unique("layout-b"));
    let a = client.lock(&first).unwrap().acquire().await.unwrap();
    let b = client.lock(&second).unwrap().acquire().await.unwrap();
    let a_keys = contenders(&mut raw, &first).await;
    let b_keys = contenders(&mut raw, &second).await;
    assert_eq!(a_keys.len(), 1, "{a_keys:?}");
    let (key, revision, lease) = a_keys[0].clone();
    assert_eq!(key, format!("{first}/{lease:x}"), "key is <name>/<lease id in lowercase hex>");
    assert_eq!(a.fencing_token(), revision as u64, "the token is the key's create revision");
    assert_eq!(b_keys[0].2, lease, "one session lease for every lock of the client");
    a.release().await.unwrap();
    b.release().await.unwrap();
    assert!(contenders(&mut raw, &first).await.is_empty(), "release deletes the key");

    let namespaced = connect(&format!("{}?namespace=orders", etcd_url())).await;
    let guard = namespaced.lock(&first).unwrap().acquire().await.unwrap();
    let keys = contenders(&mut raw, &format!("orders:{first}")).await;
    assert_eq!(keys.len(), 1, "the namespace prefixes the name as in every backend: {keys:?}");
    guard.release().await.unwrap();
}

/// A holder of `name` in `client` and `waiters` more owners of it queued behind, once etcd
/// shows all their keys.
struct Queue {
    holder: polylock::Guard,
    waiters: Vec<tokio::task::JoinHandle<()>>,
    keys: Vec<(String, i64, i64)>,
}

async fn queue_up(client: &Client, raw: &mut etcd_client::Client, name: &str, waiters: usize) -> Queue {
    let holder = client.lock(name).unwrap().acquire().await.unwrap();
    let waiters = (0..waiters)
        .map(|_| {
            let lock = client.lock(name).unwrap();
            tokio::spawn(async move { lock.acquire().await.unwrap().release().await.unwrap() })
        })
        .collect::<Vec<_>>();
    let keys = wait_for_contenders(raw, name, waiters.len() + 1).await;
    Queue { holder, waiters, keys }
}

impl Queue {
    /// Release the holder and let every waiter have its turn; returns the keys seen queued.
    async fn finish(self) -> Vec<(String, i64, i64)> {
        self.holder.release().await.unwrap();
        for waiter in self.waiters {
            timeout(Duration::from_secs(10), waiter).await.expect("every waiter got its turn").unwrap();
        }
        self.keys
    }
}

/// Owners of one client that contend for one name each queue a key of their own, under a
/// session lease of their own (etcd's layout allows one key per lease and name); the
/// sessions are reused by later contention, and closing the client revokes them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_of_one_client_queue_under_leases_of_their_own_and_close_revokes_them() {
    if common::servers_off() {
        return;
    }
    let client = connect(&etcd_url()).await;
    let mut raw = raw(&etcd_url()).await;
    let name = unique("lanes");
    let queued = queue_up(&client, &mut raw, &name, 3).await;
    let leases: std::collections::HashSet<i64> = queued.keys.iter().map(|(_, _, lease)| *lease).collect();
    assert_eq!(leases.len(), 4, "one lease per queued owner: {:?}", queued.keys);
    for (key, _, lease) in &queued.keys {
        assert_eq!(key, &format!("{name}/{lease:x}"), "etcd's Mutex layout for every owner");
    }
    queued.finish().await;
    // The same contention again reuses those sessions instead of granting more.
    let again = queue_up(&client, &mut raw, &name, 3).await;
    assert!(again.keys.iter().all(|(_, _, lease)| leases.contains(lease)), "sessions are reused: {:?}", again.keys);
    again.finish().await;
    client.close().await;
    for lease in leases {
        let left = raw.lease_time_to_live(lease, None).await.unwrap().ttl();
        assert!(left <= 0, "lease {lease:x} was revoked on close (ttl {left})");
    }
}

/// The extra session leases of a burst of contention are revoked once idle for a session TTL;
/// the first one stays, and later contention gets new ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extra_session_leases_are_revoked_once_idle_for_a_ttl() {
    if common::servers_off() {
        return;
    }
    let client = connect(&format!("{}?ttl=2s", etcd_url())).await;
    let mut raw = raw(&etcd_url()).await;
    let name = unique("idle-lanes");
    let queued = queue_up(&client, &mut raw, &name, 3).await.finish().await;
    let first = queued[0].2; // the holder's: the client's first session
    let alive = |raw: &mut etcd_client::Client, lease: i64| {
        let mut leases = raw.lease_client();
        async move { leases.time_to_live(lease, None).await.unwrap().ttl() > 0 }
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut extra_alive = 0;
        for (_, _, lease) in &queued[1..] {
            extra_alive += usize::from(alive(&mut raw, *lease).await);
        }
        if extra_alive == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{extra_alive} idle extra leases were never revoked");
        sleep(Duration::from_millis(250)).await;
    }
    assert!(alive(&mut raw, first).await, "the first session stays");
    // Contention after that gets sessions again.
    let holder = client.lock(&name).unwrap().acquire().await.unwrap();
    let waiter = client.lock(&name).unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.unwrap().release().await.unwrap() });
    let again = wait_for_contenders(&mut raw, &name, 2).await;
    assert_ne!(again[0].2, again[1].2, "a lease of its own for the waiter: {again:?}");
    holder.release().await.unwrap();
    timeout(Duration::from_secs(10), waiting).await.unwrap().unwrap();
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcdctl_holds_and_polylock_waits() {
    if common::servers_off() {
        return;
    }
    let name = unique("ctl-holds");
    let mut raw = raw(&etcd_url()).await;
    let mut ctl = etcdctl(&etcd_url()).args(["lock", &name, "--", "sleep", "3"]).stdout(Stdio::null()).spawn().unwrap();
    let held = wait_for_contenders(&mut raw, &name, 1).await;
    let client = connect(&etcd_url()).await;
    let started = Instant::now();
    let guard = client
        .lock(&name)
        .unwrap()
        .acquire_with(AcquireOptions::default().wait(Duration::from_secs(15)))
        .await
        .unwrap();
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(1), "polylock took the lock while etcdctl held it ({waited:?})");
    let status = wait_child(&mut ctl, Duration::from_secs(5)).await;
    assert!(status.success(), "etcdctl lock failed: {status}");
    assert!(guard.fencing_token() > held[0].1 as u64, "tokens grow across etcdctl and polylock");
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polylock_holds_and_etcdctl_waits() {
    if common::servers_off() {
        return;
    }
    let name = unique("poly-holds");
    let client = connect(&etcd_url()).await;
    let mut raw = raw(&etcd_url()).await;
    let guard = client.lock(&name).unwrap().acquire().await.unwrap();
    let mut ctl = etcdctl(&etcd_url())
        .args(["lock", &name, "--", "echo", "etcdctl-acquired"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let queued = wait_for_contenders(&mut raw, &name, 2).await;
    assert_eq!(queued[0].1 as u64, guard.fencing_token(), "polylock's key is the oldest: it holds");
    sleep(Duration::from_millis(1000)).await;
    assert!(ctl.try_wait().unwrap().is_none(), "etcdctl got the lock while polylock held it");
    guard.release().await.unwrap();
    let status = wait_child(&mut ctl, Duration::from_secs(5)).await;
    assert!(status.success(), "etcdctl lock failed: {status}");
    let mut out = String::new();
    std::io::Read::read_to_string(ctl.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(out.contains("etcdctl-acquired"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polylock_sees_and_force_unlocks_an_etcdctl_holder() {
    if common::servers_off() {
        return;
    }
    let name = unique("ctl-forced");
    let mut raw = raw(&etcd_url()).await;
    let mut ctl =
        etcdctl(&etcd_url()).args(["lock", &name, "--", "sleep", "30"]).stdout(Stdio::null()).spawn().unwrap();
    wait_for_contenders(&mut raw, &name, 1).await;
    let client = connect(&etcd_url()).await;
    let lock = client.lock(&name).unwrap();
    assert!(lock.is_locked().await.unwrap(), "etcdctl's hold is visible");
    // etcdctl lock's session lease: its `--ttl`, 10 s by default.
    let left = lock.remaining_lease().await.unwrap().expect("held");
    assert!(left > Duration::from_secs(5) && left <= Duration::from_secs(10), "{left:?}");
    assert!(lock.try_acquire().await.unwrap().is_none());
    assert!(lock.force_unlock().await.unwrap(), "etcdctl's key was removed");
    let guard = lock.try_acquire().await.unwrap().expect("free after the forced unlock");
    assert!(contenders(&mut raw, &name).await.len() == 1, "only polylock's key is left");
    guard.release().await.unwrap();
    let _ = ctl.kill();
    let _ = ctl.wait();
    assert!(!lock.is_locked().await.unwrap());
    assert!(!lock.force_unlock().await.unwrap(), "nothing left to remove");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_predecessor_vanishes_keeps_waiting_for_the_holder() {
    if common::servers_off() {
        return;
    }
    let name = unique("vanishing-predecessor");
    let (holder, middle, last) = (connect(&etcd_url()).await, connect(&etcd_url()).await, connect(&etcd_url()).await);
    let mut raw = raw(&etcd_url()).await;
    let guard = holder.lock(&name).unwrap().acquire().await.unwrap();
    let holder_token = guard.fencing_token();
    let waiter = |client: Client| {
        let lock = client.lock(&name).unwrap();
        tokio::spawn(async move { lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(20))).await })
    };
    let middle_waiter = waiter(middle.clone());
    wait_for_contenders(&mut raw, &name, 2).await;
    let last_waiter = waiter(last.clone());
    let keys = wait_for_contenders(&mut raw, &name, 3).await;
    // The last waiter watches only the middle key; deleting it must not let the last waiter
    // past the holder.
    raw.delete(keys[1].0.clone(), None).await.unwrap();
    sleep(Duration::from_millis(500)).await;
    assert!(!last_waiter.is_finished(), "the last waiter took the lock from under the holder");
    assert!(!middle_waiter.is_finished());
    guard.release().await.unwrap();
    // The last waiter is now the oldest; the middle one, its key gone, queued again behind it.
    let last_guard = timeout(Duration::from_secs(5), last_waiter).await.expect("last waiter hangs").unwrap().unwrap();
    let last_token = last_guard.fencing_token();
    assert!(last_token > holder_token);
    assert!(!middle_waiter.is_finished(), "the middle waiter re-queued behind the last one");
    last_guard.release().await.unwrap();
    let middle_guard =
        timeout(Duration::from_secs(5), middle_waiter).await.expect("middle waiter hangs").unwrap().unwrap();
    assert!(middle_guard.fencing_token() > last_token);
    middle_guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_session_lease_loses_the_hold_and_the_next_waiter_gets_it() {
    if common::servers_off() {
        return;
    }
    let name = unique("revoked");
    // A short session TTL: keep-alives every second notice the revocation.
    let url = format!("{}?ttl=3s", etcd_url());
    let holder = connect(&url).await;
    let other = connect(&url).await;
    let mut raw = raw(&etcd_url()).await;
    let guard = holder.lock(&name).unwrap().acquire().await.unwrap();
    let waiting = {
        let lock = other.lock(&name).unwrap();
        tokio::spawn(async move { lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(20))).await })
    };
    let keys = wait_for_contenders(&mut raw, &name, 2).await;
    let lease = format!("{:x}", keys[0].2);
    let status = etcdctl(&etcd_url()).args(["lease", "revoke", &lease]).stdout(Stdio::null()).status().unwrap();
    assert!(status.success());
    let next = timeout(Duration::from_secs(5), waiting).await.expect("the waiter hangs").unwrap().unwrap();
    assert!(next.fencing_token() > guard.fencing_token());
    let reason = timeout(Duration::from_secs(5), guard.lost()).await.expect("the loss went unnoticed");
    assert!(matches!(reason, LostReason::SessionEnded(_)), "{reason:?}");
    assert!(!guard.lock().is_held());
    assert_eq!(guard.release().await.unwrap_err().kind(), ErrorKind::Lost);
    let next_token = next.fencing_token();
    next.release().await.unwrap();
    // The holder's client starts a new session and locks again.
    let again =
        holder.lock(&name).unwrap().acquire_with(AcquireOptions::default().wait(Duration::from_secs(5))).await.unwrap();
    assert!(again.fencing_token() > next_token);
    again.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_servers_and_bad_urls_get_typed_errors() {
    if common::servers_off() {
        return;
    }
    let err = Client::connect("etcd://127.0.0.1:1?timeout=1s").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.to_string().contains("127.0.0.1:1"), "{err}");
    let err = Client::connect("etcd://user:hunter2@127.0.0.1:1?timeout=1s").await.unwrap_err();
    assert!(!err.to_string().contains("hunter2"), "{err}");
    let misspelt = format!("{}?tll=3s", etcd_url());
    for (url, needle) in [("etcd://h?ttl=0s", "at least 1s"), (misspelt.as_str(), "unknown option 'tll'")] {
        let err = Client::connect(url).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{url}: {err}");
        assert!(err.to_string().contains(needle), "{url}: {err}");
    }
    // Credentials for a server without authentication: a Connection error that says so.
    let with_credentials = etcd_url().replacen("etcd://", "etcd://alice:hunter2@", 1);
    let err = Client::connect(&with_credentials).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.to_string().contains("authentication is not enabled on this etcd server"), "{err}");
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

/// Each cluster member's client port, and whether it is the leader.
fn cluster_status() -> Vec<(u16, bool)> {
    let out = etcdctl(&cluster_url()).args(["endpoint", "status", "-w", "simple"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // "http://127.0.0.1:12479, 66f1f0dad697d232, 3.4.23, 20 kB, true, false, 2, 8, 8, "
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(", ").collect();
            let port = fields.first()?.rsplit(':').next()?.parse().ok()?;
            Some((port, *fields.get(4)? == "true"))
        })
        .collect()
}

fn services_dir() -> std::path::PathBuf {
    std::env::var("POLYLOCK_SERVICES_DIR").unwrap_or_else(|_| "/tmp/polylock-services".into()).into()
}

/// Kill the leader with SIGKILL; return what it takes to restart it (its command line and
/// pid file).
fn kill_leader() -> (Vec<String>, std::path::PathBuf) {
    let leader_port = cluster_status().into_iter().find(|(_, leads)| *leads).expect("the cluster has a leader").0;
    let member = (leader_port - 12379) / 100;
    let pid_file = services_dir().join("etcd-cluster").join(format!("member{member}.pid"));
    let pid = std::fs::read_to_string(&pid_file).unwrap().trim().to_string();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let argv =
        cmdline.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into()).collect();
    assert!(Command::new("kill").args(["-KILL", &pid]).status().unwrap().success());
    (argv, pid_file)
}

/// Start a killed member again the way services.sh does: its own session, its log appended.
/// The member must outlive the test (services.sh stops it), so it is never waited for.
#[allow(clippy::zombie_processes)]
fn restart_member(argv: &[String], pid_file: &std::path::Path) {
    let log = pid_file.with_extension("log");
    let log = std::fs::OpenOptions::new().append(true).create(true).open(log).unwrap();
    let child = Command::new("setsid")
        .args(argv)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    std::fs::write(pid_file, format!("{}\n", child.id())).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_cluster_leader_while_eight_workers_contend() {
    if common::servers_off() {
        return;
    }
    let url = cluster_url();
    let name = unique("leader-kill");
    let clients = [connect(&url).await, connect(&url).await, connect(&url).await, connect(&url).await];
    let inside = Arc::new(AtomicU64::new(0));
    let overlaps = Arc::new(AtomicU64::new(0));
    // The token of every hold, in the order the holds began.
    let ledger = Arc::new(Mutex::new(Vec::<u64>::new()));
    let times = Arc::new(Mutex::new(Vec::<(Instant, usize)>::new()));
    let stop_at = Instant::now() + Duration::from_secs(12);
    let mut workers = Vec::new();
    for w in 0..8 {
        let lock = clients[w % clients.len()].lock(&name).unwrap();
        let (inside, overlaps, ledger, times) = (inside.clone(), overlaps.clone(), ledger.clone(), times.clone());
        workers.push(tokio::spawn(async move {
            let mut holds = 0u32;
            while Instant::now() < stop_at {
                // Every wait is bounded: a waiter that hangs across the failover fails the test.
                let guard = lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(15))).await;
                let guard = guard.unwrap_or_else(|e| panic!("worker {w}: {e}"));
                if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                ledger.lock().unwrap().push(guard.fencing_token());
                times.lock().unwrap().push((Instant::now(), w));
                sleep(Duration::from_millis(5)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                // A release may fail during the election; the hold's key then goes with a
                // retried delete or the session, which the next holders' waits ride out.
                let _ = guard.release().await;
                holds += 1;
            }
            holds
        }));
    }
    sleep(Duration::from_secs(3)).await;
    let before_kill = ledger.lock().unwrap().len();
    let (argv, pid_file) = kill_leader();
    let killed_at = Instant::now();
    let mut totals = Vec::new();
    for worker in workers {
        let holds = timeout(Duration::from_secs(60), worker).await.expect("a worker hangs").unwrap();
        totals.push(holds);
    }
    restart_member(&argv, &pid_file);
    for pair in times.lock().unwrap().windows(2) {
        let gap = pair[1].0 - pair[0].0;
        if gap > Duration::from_millis(300) {
            eprintln!(
                "gap {gap:?} at {:?} after the kill, next worker {}",
                pair[0].0.checked_duration_since(killed_at),
                pair[1].1
            );
        }
    }
    let tokens = ledger.lock().unwrap().clone();
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "two holders at once");
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "fencing tokens out of order in time");
    assert!(before_kill > 0, "no progress before the kill");
    assert!(tokens.len() > before_kill + 8, "locks stopped working after the leader was killed ({totals:?})");
    assert!(totals.iter().all(|&n| n > 0), "a worker never got the lock: {totals:?}");
    eprintln!(
        "{} holds, {before_kill} before the kill {:?} ago; per worker {totals:?}",
        tokens.len(),
        killed_at.elapsed()
    );
    // The restarted member rejoins: every member answers again.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !etcdctl(&url).args(["endpoint", "health"]).stderr(Stdio::null()).status().unwrap().success() {
        assert!(Instant::now() < deadline, "the restarted member did not rejoin");
        sleep(Duration::from_millis(200)).await;
    }
}

// ---------------------------------------------------------------------------------------
// TLS and credentials, against the etcd-tls service (client TLS from a throwaway CA,
// authentication enabled).

fn tls_url() -> String {
    std::env::var("POLYLOCK_TEST_ETCD_TLS_URL").unwrap_or_else(|_| {
        "etcds://polylock:polylock-etcd-secret@127.0.0.1:12779?ca=/tmp/polylock-services/etcd-tls/ca.crt".to_string()
    })
}

/// The TLS URL with its `user:password@` replaced by `userinfo` (empty: no credentials).
fn tls_url_with_userinfo(userinfo: &str) -> String {
    let url = tls_url();
    let (scheme, rest) = url.split_once("://").unwrap();
    let hosts = rest.rsplit_once('@').map_or(rest, |(_, hosts)| hosts);
    format!("{scheme}://{userinfo}{hosts}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_wait_and_release_over_tls_with_credentials() {
    if common::servers_off() {
        return;
    }
    let name = unique("tls");
    let (holder, waiter) = (connect(&tls_url()).await, connect(&tls_url()).await);
    let guard = holder.lock(&name).unwrap().acquire().await.unwrap();
    let waiting = {
        let lock = waiter.lock(&name).unwrap();
        tokio::spawn(async move { lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(10))).await })
    };
    sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "the waiter got the lock while it was held");
    assert!(waiter.lock(&name).unwrap().try_acquire().await.unwrap().is_none());
    let first_token = guard.fencing_token();
    guard.release().await.unwrap();
    let next = timeout(Duration::from_secs(5), waiting).await.expect("the waiter hangs").unwrap().unwrap();
    assert!(next.fencing_token() > first_token);
    next.release().await.unwrap();
    holder.close().await;
    waiter.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_a_connection_error_that_hides_it() {
    if common::servers_off() {
        return;
    }
    let url = tls_url_with_userinfo("polylock:not-the-Secret-42@");
    let err = Client::connect(&url).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.to_string().contains("password"), "the message points at the credentials: {err}");
    assert!(!err.to_string().contains("not-the-Secret-42"), "{err}");
    let err = Client::connect(&tls_url_with_userinfo("nobody-such:whatever-pw@")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(!err.to_string().contains("whatever-pw"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_credentials_or_the_ca_the_server_refuses() {
    if common::servers_off() {
        return;
    }
    // Authentication is on: a client without credentials may not take (or even see) a lock.
    let name = unique("tls-anonymous");
    let anonymous = Client::connect(&tls_url_with_userinfo("")).await;
    let err = match anonymous {
        Err(err) => err,
        Ok(client) => client.lock(&name).unwrap().try_acquire().await.map(|_| ()).unwrap_err(),
    };
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.to_string().contains("user name"), "the message says credentials are needed: {err}");

    // The server's certificate comes from a private CA: without `ca=` it is not trusted.
    let untrusted = tls_url().split('?').next().unwrap().to_string() + "?timeout=2s";
    let err = Client::connect(&untrusted).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(!err.to_string().contains("polylock-etcd-secret"), "{err}");

    // Plain text to the TLS port fails too, as a connection error.
    let plain = tls_url_with_userinfo("polylock:polylock-etcd-secret@").replacen("etcds://", "etcd://", 1);
    let plain = plain.split('?').next().unwrap().to_string() + "?timeout=2s";
    let err = Client::connect(&plain).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(!err.to_string().contains("polylock-etcd-secret"), "{err}");
}

/// Issue 35: a mutex counts only its own contender keys `<name>/<lease hex>`. Before, the
/// lease-less count key a semaphore leaves (`<name>/permits`), a semaphore's permits, a
/// nested name's keys (`kz/sub/<hex>` blocked `kz`, as in Go's Mutex) and any other key under
/// `<name>/` held the lock (for ever, for a key without a lease), `status` named them as the
/// holder, and `force_unlock` deleted them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_names_own_contender_keys_hold_a_mutex() {
    if common::servers_off() {
        return;
    }
    let client = connect(&etcd_url()).await;
    let mut raw = raw(&etcd_url()).await;
    let inspect = client.inspect();

    // A semaphore of the name: its count key stays, its permits are held.
    let kx = unique("kx");
    let semaphore = client.semaphore(&kx, 2).unwrap();
    semaphore.acquire().await.unwrap().release().await.unwrap();
    let permit = semaphore.acquire().await.unwrap();
    assert!(contenders(&mut raw, &kx).await.iter().any(|(key, _, lease)| key.ends_with("/permits") && *lease == 0));
    let lock = client.lock(&kx).unwrap();
    assert!(!lock.is_locked().await.unwrap(), "a semaphore's keys do not hold the mutex");
    let status = inspect.status(&kx, None).await.unwrap();
    assert!(!status.held && status.holder.is_none(), "{status:?}");
    assert!(!lock.force_unlock().await.unwrap(), "nothing of the mutex's to delete");
    let guard = lock.try_acquire().await.unwrap().expect("the mutex is free beside the semaphore");
    assert!(!permit.is_lost());
    guard.release().await.unwrap();
    permit.release().await.unwrap();
    assert_eq!(contenders(&mut raw, &kx).await.len(), 1, "the semaphore's count key is left alone");

    // A nested name, a read-write lock of the name, a stray key: none holds `kz`.
    let kz = unique("kz");
    let nested = client.lock(&format!("{kz}/sub")).unwrap().acquire().await.unwrap();
    let nested_hex = client.lock(&format!("{kz}/abc")).unwrap().acquire().await.unwrap();
    let write = client.rw_lock(&kz).unwrap().write().acquire().await.unwrap();
    raw.put(format!("{kz}/not-a-lease"), "", None).await.unwrap();
    let lock = client.lock(&kz).unwrap();
    assert!(!lock.is_locked().await.unwrap());
    assert!(!inspect.status(&kz, None).await.unwrap().held);
    assert!(!lock.force_unlock().await.unwrap());
    let guard = lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(2))).await.unwrap();
    assert!(!nested.is_lost() && !nested_hex.is_lost() && !write.is_lost());
    // Forcing the mutex open deletes only its own keys.
    assert!(lock.force_unlock().await.unwrap());
    timeout(Duration::from_secs(5), guard.lost()).await.expect("the forced-open hold is lost");
    assert!(!nested.is_lost() && !nested_hex.is_lost() && !write.is_lost());
    let left: Vec<_> = contenders(&mut raw, &kz).await.into_iter().map(|(key, ..)| key).collect();
    assert!(left.iter().any(|key| key.ends_with("/not-a-lease")), "{left:?}");
    assert_eq!(left.len(), 4, "the nested locks', the write lock's and the stray key: {left:?}");
    for guard in [nested, nested_hex] {
        guard.release().await.unwrap();
    }
    write.release().await.unwrap();
    raw.delete(format!("{kz}/not-a-lease"), None).await.unwrap();
    // The mutex still excludes `etcdctl lock` of its own name. (Go's Mutex counts every key
    // under `kz/`, so etcdctl would also wait behind the keys released above.)
    let guard = lock.acquire().await.unwrap();
    let mut ctl = etcdctl(&etcd_url()).args(["lock", &kz, "--", "true"]).stdout(Stdio::null()).spawn().unwrap();
    wait_for_contenders(&mut raw, &kz, 2).await;
    sleep(Duration::from_millis(500)).await;
    assert!(ctl.try_wait().unwrap().is_none(), "etcdctl lock got the name polylock holds");
    let status = inspect.status(&kz, None).await.unwrap();
    assert_eq!(status.waiters, Some(1), "etcdctl's key waits: {status:?}");
    assert!(status.holder.as_deref().unwrap().starts_with(&format!("{kz}/")), "{status:?}");
    guard.release().await.unwrap();
    assert!(wait_child(&mut ctl, Duration::from_secs(5)).await.success());
    client.close().await;
}
