//! Leader elections with the incumbents, against the real servers (tests/services: `etcd`,
//! `zookeeper`): the real `etcdctl elect` (etcd's `concurrency.Election`) and the real
//! Curator `LeaderLatch` (tests/interop/curator, built with Maven) take part in the same
//! election as polylock, both ways, and see polylock's leader; the layouts node for node and
//! key for key; a leader whose key or node is deleted from outside, or whose session ends, is
//! lost, and a candidate whose session ends stops with `Lost`.

use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use polylock::{Client, ErrorKind};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio::time::{sleep, timeout};
use zookeeper_client as zk;

use crate::common;

fn etcd_url() -> String {
    common::server_url("POLYLOCK_TEST_ETCD_URL", "etcd://127.0.0.1:12379")
}

fn zk_url() -> String {
    common::server_url("POLYLOCK_TEST_ZOOKEEPER_URL", "zk://127.0.0.1:12181")
}

/// An election name no other test (or earlier run) uses.
fn unique(name: &str) -> String {
    format!("elect-{name}-{}-{}", std::process::id(), fastrand::u64(..))
}

async fn connect(url: &str) -> Client {
    Client::connect(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e} (start the servers with tests/services/services.sh start)"))
}

/// `http://h:p,...` for etcdctl and etcd-client, from an etcd:// URL.
fn etcd_endpoints() -> Vec<String> {
    let url = etcd_url();
    let hosts = url.trim_start_matches("etcd://").split(['?', '/']).next().unwrap().to_string();
    hosts.split(',').map(|h| format!("http://{h}")).collect()
}

fn etcdctl() -> Command {
    let mut command = Command::new("etcdctl");
    command.env("ETCDCTL_API", "3").arg("--endpoints").arg(etcd_endpoints().join(","));
    command
}

/// `host:port,...` of a zk:// URL, as ZooKeeper clients take it.
fn zk_hosts() -> String {
    zk_url().trim_start_matches("zk://").split(['?', '/']).next().unwrap().to_string()
}

/// Start `command` with its stdin and stdout piped; its stdout lines come as they are written.
fn spawn_lines(command: Command) -> (Child, mpsc::Receiver<String>) {
    let mut child = tokio::process::Command::from(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the incumbent's program starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = tx.send(line).await;
        }
    });
    (child, rx)
}

async fn next_line(lines: &mut mpsc::Receiver<String>) -> String {
    timeout(Duration::from_secs(60), lines.recv()).await.expect("a line in time").expect("the program's output")
}

/// SIGINT, as a user's Ctrl-C: `etcdctl elect` resigns on it.
fn interrupt(child: &Child) {
    let pid = child.id().expect("still running").to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
}

/// The keys under `<name>/`, oldest first: (key, value, create revision, lease).
async fn election_keys(name: &str) -> Vec<(String, String, i64, i64)> {
    let mut raw = etcd_client::Client::connect(etcd_endpoints(), None).await.unwrap();
    let options = etcd_client::GetOptions::new()
        .with_prefix()
        .with_sort(etcd_client::SortTarget::Create, etcd_client::SortOrder::Ascend);
    let answer = raw.get(format!("{name}/"), Some(options)).await.unwrap();
    answer
        .kvs()
        .iter()
        .map(|kv| {
            let key = kv.key_str().unwrap().to_string();
            (key, kv.value_str().unwrap().to_string(), kv.create_revision(), kv.lease())
        })
        .collect()
}

async fn wait_for_keys(name: &str, count: usize) -> Vec<(String, String, i64, i64)> {
    for _ in 0..200 {
        let keys = election_keys(name).await;
        if keys.len() >= count {
            return keys;
        }
        sleep(Duration::from_millis(50)).await;
    }
    panic!("{count} candidates never stood for {name}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcdctl_leads_and_polylock_sees_it_waits_behind_it_and_follows_it() {
    if common::servers_off() {
        return;
    }
    let name = unique("ctl-leads");
    let client = connect(&etcd_url()).await;
    let election = client.election(&name).unwrap();
    let mut changes = election.observe().unwrap();
    assert_eq!(changes.next().await.unwrap().unwrap(), None, "nobody leads yet");

    let mut command = etcdctl();
    command.args(["elect", &name, "ctl-value"]);
    let (ctl, mut ctl_lines) = spawn_lines(command);
    let ctl_key = next_line(&mut ctl_lines).await;
    assert!(ctl_key.starts_with(&format!("{name}/")), "etcdctl's key {ctl_key}");
    assert_eq!(next_line(&mut ctl_lines).await, "ctl-value", "etcdctl leads");

    let leader = election.leader().await.unwrap().expect("polylock sees etcdctl's leader");
    assert_eq!(leader.value, b"ctl-value");
    assert_eq!(leader.term, election_keys(&name).await[0].2 as u64, "the term is the leader key's create revision");
    let seen = timeout(Duration::from_secs(10), changes.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(seen, Some(leader.clone()), "observe reports etcdctl's leader");

    let err = election.campaign(b"poly-value", Some(Duration::from_millis(500))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "etcdctl's leader keeps polylock from leading");
    assert_eq!(election_keys(&name).await.len(), 1, "a campaign that timed out leaves no key behind");

    let waiting = tokio::spawn({
        let election = election.clone();
        async move { election.campaign(b"poly-value", Some(Duration::from_secs(60))).await }
    });
    wait_for_keys(&name, 2).await;
    sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "polylock leads while etcdctl still does");

    interrupt(&ctl); // etcdctl resigns
    let leadership = timeout(Duration::from_secs(30), waiting).await.unwrap().unwrap().unwrap();
    assert!(leadership.is_leader());
    assert!(leadership.term() > leader.term, "terms grow across etcdctl and polylock");
    let now = election.leader().await.unwrap().unwrap();
    assert_eq!((now.value.as_slice(), now.term), (&b"poly-value"[..], leadership.term()));
    let seen = timeout(Duration::from_secs(10), async {
        loop {
            if let Some(seen) = changes.next().await.unwrap().unwrap() {
                if seen.value == b"poly-value" {
                    return seen;
                }
            }
        }
    })
    .await
    .expect("observe reports polylock's leader after etcdctl's");
    assert_eq!(seen.term, leadership.term());
    leadership.resign().await.unwrap();
    assert_eq!(election.leader().await.unwrap(), None);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polylock_leads_in_etcds_layout_etcdctl_observes_it_and_waits_behind_it() {
    if common::servers_off() {
        return;
    }
    let name = unique("poly-leads");
    let client = connect(&etcd_url()).await;
    let election = client.election(&name).unwrap();
    let leadership = election.campaign(b"poly-value", Some(Duration::from_secs(10))).await.unwrap();

    // concurrency.Election's layout: <name>/<lease id in hex>, the value, the session lease.
    let keys = election_keys(&name).await;
    assert_eq!(keys.len(), 1, "{keys:?}");
    let (key, value, created, lease) = &keys[0];
    assert_eq!(key, &format!("{name}/{lease:x}"), "the key is named after its session lease");
    assert!(*lease != 0);
    assert_eq!(value, "poly-value");
    assert_eq!(leadership.term(), *created as u64);

    let mut command = etcdctl();
    command.args(["elect", "-l", &name]);
    let (observer, mut observed) = spawn_lines(command);
    assert_eq!(next_line(&mut observed).await, *key, "etcdctl elect -l sees polylock's leader key");
    assert_eq!(next_line(&mut observed).await, "poly-value");
    leadership.proclaim(b"poly-proclaimed").await.unwrap();
    assert_eq!(next_line(&mut observed).await, *key);
    assert_eq!(next_line(&mut observed).await, "poly-proclaimed", "etcdctl sees polylock's proclaim");
    assert_eq!(election.leader().await.unwrap().unwrap().value, b"poly-proclaimed");

    let mut command = etcdctl();
    command.args(["elect", &name, "ctl-value"]);
    let (ctl, mut ctl_lines) = spawn_lines(command);
    wait_for_keys(&name, 2).await;
    sleep(Duration::from_millis(1000)).await;
    assert!(ctl_lines.try_recv().is_err(), "etcdctl leads while polylock does");

    leadership.resign().await.unwrap();
    let ctl_key = next_line(&mut ctl_lines).await;
    assert_eq!(next_line(&mut ctl_lines).await, "ctl-value", "etcdctl leads once polylock resigned");
    assert_eq!(next_line(&mut observed).await, ctl_key, "etcdctl elect -l follows to the next leader");
    assert_eq!(next_line(&mut observed).await, "ctl-value");
    let leader = election.leader().await.unwrap().unwrap();
    assert!(leader.term > leadership.term(), "terms grow across polylock and etcdctl");
    assert!(!leadership.is_leader());
    interrupt(&ctl);
    interrupt(&observer);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_etcd_leader_whose_key_is_deleted_or_whose_session_ends_is_lost() {
    if common::servers_off() {
        return;
    }
    let name = unique("lost");
    let client = connect(&etcd_url()).await;
    let election = client.election(&name).unwrap();

    // The key deleted from outside (an operator's `etcdctl del`).
    let leadership = election.campaign(b"one", Some(Duration::from_secs(10))).await.unwrap();
    let key = election_keys(&name).await[0].0.clone();
    assert!(etcdctl().args(["del", &key]).stdout(Stdio::null()).status().unwrap().success());
    timeout(Duration::from_secs(10), leadership.lost_watch().wait()).await.expect("the leader learns its key went");
    assert!(!leadership.is_leader());
    assert_eq!(leadership.proclaim(b"two").await.unwrap_err().kind(), ErrorKind::Lost);
    assert_eq!(election.leader().await.unwrap(), None, "a lost leader writes nothing back");

    // The session lease revoked under a leader and under a waiting candidate.
    let other = connect(&etcd_url()).await;
    let leadership = election.campaign(b"leader", Some(Duration::from_secs(10))).await.unwrap();
    let waiting = tokio::spawn({
        let election = other.election(&name).unwrap();
        async move { election.campaign(b"waiter", Some(Duration::from_secs(60))).await }
    });
    let keys = wait_for_keys(&name, 2).await;
    let waiter_lease = format!("{:x}", keys[1].3);
    assert!(etcdctl().args(["lease", "revoke", &waiter_lease]).stdout(Stdio::null()).status().unwrap().success());
    let err = timeout(Duration::from_secs(20), waiting).await.unwrap().unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost, "a candidate whose session ended stops with Lost: {err}");
    assert!(leadership.is_leader(), "the leader is untouched");
    let leader_lease = format!("{:x}", keys[0].3);
    assert!(etcdctl().args(["lease", "revoke", &leader_lease]).stdout(Stdio::null()).status().unwrap().success());
    timeout(Duration::from_secs(20), leadership.lost_watch().wait())
        .await
        .expect("the leader learns its session ended");
    assert!(!leadership.is_leader());
    // A later campaign of the same client leads under a new session.
    let again = election.campaign(b"again", Some(Duration::from_secs(10))).await.unwrap();
    assert!(again.term() > leadership.term());
    again.resign().await.unwrap();
    other.close().await;
    client.close().await;
}

// ---------------------------------------------------------------------------------------
// Curator's LeaderLatch

/// `java -cp ... io.polylock.interop.CuratorLeaderLatch CONNECT`, built once per test run.
/// Maven runs under a lock on a file beside the project, so that two suites of this binary
/// building it at once do not write the same classes together.
fn curator_command() -> Command {
    static CLASSPATH: OnceLock<String> = OnceLock::new();
    let classpath = CLASSPATH.get_or_init(|| {
        let project = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/interop/curator");
        let status = Command::new("flock")
            .arg(std::env::temp_dir().join("polylock-curator-mvn.lock"))
            .args(["mvn", "-q", "-B", "package", "-DskipTests", "dependency:build-classpath"])
            .arg("-Dmdep.outputFile=target/classpath.txt")
            .current_dir(project)
            .status()
            .expect("mvn (Maven) must be installed for the Curator interop tests");
        assert!(status.success(), "building tests/interop/curator failed");
        let deps = std::fs::read_to_string(format!("{project}/target/classpath.txt")).unwrap();
        format!("{project}/target/classes:{}", deps.trim())
    });
    let mut command = Command::new("java");
    command.args(["-cp", classpath, "io.polylock.interop.CuratorLeaderLatch", &zk_hosts()]);
    command
}

async fn curator(args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut command = tokio::task::spawn_blocking(curator_command).await.unwrap();
    command.args(args);
    spawn_lines(command)
}

/// `_c_<36-char uuid>-latch-<10 digits>`: a node as LeaderLatch names it.
fn is_latch_node(node: &str) -> bool {
    let Some(rest) = node.strip_prefix("_c_") else { return false };
    let Some((uuid, rest)) = rest.split_at_checked(36) else { return false };
    let Some(digits) = rest.strip_prefix("-latch-") else { return false };
    uuid::Uuid::parse_str(uuid).is_ok() && digits.len() == 10 && digits.bytes().all(|b| b.is_ascii_digit())
}

async fn raw_zk() -> zk::Client {
    zk::Client::connect(&zk_hosts()).await.expect("raw ZooKeeper client")
}

async fn latch_nodes(raw: &zk::Client, path: &str) -> Vec<String> {
    let mut children = raw.list_children(path).await.unwrap_or_default();
    children.sort_by_key(|node| node.rsplit('-').next().unwrap_or_default().to_string());
    children
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_leader_latch_leads_and_polylock_sees_it_waits_behind_it_and_follows_it() {
    if common::servers_off() {
        return;
    }
    let name = unique("curator-leads");
    let path = format!("/{name}");
    let client = connect(&zk_url()).await;
    let election = client.election(&name).unwrap();

    let (mut java, mut lines) = curator(&["lead", &path, "curator-id"]).await;
    assert_eq!(next_line(&mut lines).await, "LEADER");
    let leader = election.leader().await.unwrap().expect("polylock sees Curator's leader");
    assert_eq!(leader.value, b"curator-id", "the node's data is the participant id");
    let err = election.campaign(b"poly-value", Some(Duration::from_millis(500))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "Curator's leader keeps polylock from leading");

    let waiting = tokio::spawn({
        let election = election.clone();
        async move { election.campaign(b"poly-value", Some(Duration::from_secs(60))).await }
    });
    let raw = raw_zk().await;
    for _ in 0..200 {
        if latch_nodes(&raw, &path).await.len() == 2 {
            break;
        }
        sleep(Duration::from_millis(50)).await;
    }
    let nodes = latch_nodes(&raw, &path).await;
    assert!(nodes.len() == 2 && nodes.iter().all(|n| is_latch_node(n)), "both in LeaderLatch's layout: {nodes:?}");
    sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "polylock leads while Curator does");

    let stdin = java.stdin.as_mut().unwrap();
    stdin.write_all(b"close\n").await.unwrap();
    stdin.flush().await.unwrap();
    assert_eq!(next_line(&mut lines).await, "CLOSED");
    let leadership = timeout(Duration::from_secs(30), waiting).await.unwrap().unwrap().unwrap();
    assert!(leadership.term() > leader.term, "terms (czxids) grow across Curator and polylock");
    let (_probe, mut seen) = curator(&["leader", &path]).await;
    assert_eq!(next_line(&mut seen).await, "LEADER poly-value", "Curator's getLeader() sees polylock's value");
    leadership.resign().await.unwrap();
    java.wait().await.unwrap();
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polylock_leads_in_leader_latchs_layout_and_a_curator_latch_waits_behind_it() {
    if common::servers_off() {
        return;
    }
    let name = unique("poly-leads");
    let path = format!("/{name}");
    let client = connect(&zk_url()).await;
    let election = client.election(&name).unwrap();
    let leadership = election.campaign(b"poly-value", Some(Duration::from_secs(10))).await.unwrap();

    let raw = raw_zk().await;
    let nodes = latch_nodes(&raw, &path).await;
    assert!(nodes.len() == 1 && is_latch_node(&nodes[0]), "LeaderLatch's node name: {nodes:?}");
    let (data, stat) = raw.get_data(&format!("{path}/{}", nodes[0])).await.unwrap();
    assert_eq!(data, b"poly-value", "the node's data is the candidate's value, as LeaderLatch's id");
    assert_eq!(leadership.term(), stat.czxid as u64, "the term is the node's czxid");
    assert!(stat.ephemeral_owner != 0, "an ephemeral node");

    let (mut java, mut lines) = curator(&["await", &path, "curator-id", "1000"]).await;
    assert_eq!(next_line(&mut lines).await, "TIMEOUT", "polylock's leader keeps Curator's latch from leading");
    java.wait().await.unwrap();
    let (_probe, mut seen) = curator(&["leader", &path]).await;
    assert_eq!(next_line(&mut seen).await, "LEADER poly-value");

    let (mut java, mut lines) = curator(&["await", &path, "curator-id", "60000"]).await;
    for _ in 0..400 {
        if latch_nodes(&raw, &path).await.len() == 2 {
            break;
        }
        sleep(Duration::from_millis(50)).await;
    }
    assert!(lines.try_recv().is_err(), "Curator leads while polylock does");
    leadership.resign().await.unwrap();
    assert_eq!(next_line(&mut lines).await, "LEADER", "Curator's latch leads once polylock resigned");
    assert_eq!(next_line(&mut lines).await, "CLOSED");
    java.wait().await.unwrap();
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zookeeper_leader_whose_node_is_deleted_is_lost_and_the_next_leads() {
    if common::servers_off() {
        return;
    }
    let name = unique("zk-lost");
    let path = format!("/{name}");
    let (a, b) = (connect(&zk_url()).await, connect(&zk_url()).await);
    let leadership = a.election(&name).unwrap().campaign(b"a", Some(Duration::from_secs(10))).await.unwrap();
    let waiting = tokio::spawn({
        let election = b.election(&name).unwrap();
        async move { election.campaign(b"b", Some(Duration::from_secs(60))).await }
    });
    let raw = raw_zk().await;
    for _ in 0..200 {
        if latch_nodes(&raw, &path).await.len() == 2 {
            break;
        }
        sleep(Duration::from_millis(50)).await;
    }
    let leader_node = format!("{path}/{}", latch_nodes(&raw, &path).await[0]);
    raw.delete(&leader_node, None).await.unwrap();
    timeout(Duration::from_secs(10), leadership.lost_watch().wait()).await.expect("the leader learns its node went");
    assert!(!leadership.is_leader());
    assert_eq!(leadership.proclaim(b"a2").await.unwrap_err().kind(), ErrorKind::Lost);
    let next = timeout(Duration::from_secs(10), waiting).await.unwrap().unwrap().unwrap();
    assert!(next.term() > leadership.term());
    let seen = b.election(&name).unwrap().leader().await.unwrap().unwrap();
    assert_eq!((seen.value.as_slice(), seen.term), (&b"b"[..], next.term()));
    next.proclaim(b"b2").await.unwrap();
    assert_eq!(a.election(&name).unwrap().leader().await.unwrap().unwrap().value, b"b2");
    next.resign().await.unwrap();
    assert_eq!(a.election(&name).unwrap().leader().await.unwrap(), None);
    a.close().await;
    b.close().await;
}
