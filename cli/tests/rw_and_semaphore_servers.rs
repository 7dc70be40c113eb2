//! `polylock run --shared|--exclusive` and `--semaphore NAME --permits N` as separate OS
//! processes on every server backend (the embedded default has its own file): many readers
//! at once, writers alone (checked by a fencing ledger), never more than N permit holders
//! among 16 contending processes, and a SIGKILLed holder's permit coming back at its lease
//! end (or when the server notices the dead session, whichever the backend does first).

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::polylock;

/// Every server the suite runs against, as (label, URL with a private namespace and a short
/// watchdog lease). Servers come from tests/services (`services.sh env`).
fn servers(test: &str) -> Vec<(&'static str, String)> {
    let pid = std::process::id();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    [
        ("redis", "POLYLOCK_TEST_REDIS_URL", "redis://127.0.0.1:16379"),
        ("postgres", "POLYLOCK_TEST_POSTGRES_URL", "postgres://polylock:polylock@127.0.0.1:15432/polylock"),
        ("mariadb", "POLYLOCK_TEST_MARIADB_URL", "mysql://polylock:polylock@127.0.0.1:13306/polylock"),
        ("etcd", "POLYLOCK_TEST_ETCD_URL", "etcd://127.0.0.1:12379"),
        ("zookeeper", "POLYLOCK_TEST_ZOOKEEPER_URL", "zk://127.0.0.1:12181"),
    ]
    .into_iter()
    .map(|(label, var, default)| {
        let base = std::env::var(var).unwrap_or_else(|_| default.to_string());
        let sep = if base.contains('?') { '&' } else { '?' };
        // A dead client's etcd keys last its session lease's TTL, and its ZooKeeper nodes its
        // session timeout: both short here, so a SIGKILLed holder's permit returns in seconds.
        let session = match label {
            "etcd" => "&ttl=3s",
            "zookeeper" => "&session_timeout=4s",
            _ => "",
        };
        (label, format!("{base}{sep}namespace=cli-{test}-{pid}-{nanos}&lease=1s{session}"))
    })
    .collect()
}

fn spawn(url: &str, what: &[&str], script: &str) -> Child {
    polylock()
        .args(["--url", url, "run"])
        .args(what)
        .args(["--", "sh", "-c", script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A command that appends `token start end` (wall-clock ns) to `ledger` around a pause.
fn ledger_script(ledger: &std::path::Path, pause: &str) -> String {
    format!("s=$(date +%s%N); sleep {pause}; echo \"$POLYLOCK_FENCING_TOKEN $s $(date +%s%N)\" >> {}", ledger.display())
}

/// The most holds any one moment of the ledger saw at once.
fn most_at_once(holds: &[(u64, u128, u128)]) -> usize {
    holds
        .iter()
        .map(|&(_, start, _)| holds.iter().filter(|&&(_, s, e)| s <= start && start < e).count())
        .max()
        .unwrap_or(0)
}

#[test]
fn readers_in_separate_processes_hold_together_and_writers_alone() {
    if crate::common::servers_off() {
        return;
    }
    for (label, url) in servers("rw") {
        let dir = tempfile::tempdir().unwrap();
        let ledger = dir.path().join("ledger");
        let readers: Vec<Child> = (0..3)
            .map(|_| spawn(&url, &["--lock", "doc", "--shared", "--wait", "20s"], &ledger_script(&ledger, "0.5")))
            .collect();
        for child in readers {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{label}: {}", String::from_utf8_lossy(&out.stderr));
        }
        let holds = common::read_ledger(&ledger);
        assert_eq!(holds.len(), 3, "{label}");
        assert!(most_at_once(&holds) >= 2, "{label}: readers never overlapped: {holds:?}");
        // Writers never overlap with one another, and their tokens grow in ledger order.
        common::exclusion_with_fencing_ledger(&url, &["--exclusive", "--wait", "30s"], 3, 3);
    }
}

#[test]
fn sixteen_processes_never_hold_more_than_n_permits() {
    if crate::common::servers_off() {
        return;
    }
    for (label, url) in servers("sem") {
        let dir = tempfile::tempdir().unwrap();
        let ledger = dir.path().join("ledger");
        let what = ["--semaphore", "pool", "--permits", "3", "--wait", "60s"];
        let children: Vec<Child> = (0..16).map(|_| spawn(&url, &what, &ledger_script(&ledger, "0.2"))).collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{label}: {}", String::from_utf8_lossy(&out.stderr));
        }
        let holds = common::read_ledger(&ledger);
        assert_eq!(holds.len(), 16, "{label}");
        let most = most_at_once(&holds);
        assert!(most <= 3, "{label}: {most} permits were held at once: {holds:?}");
        assert!(most >= 2, "{label}: permits were never shared: {holds:?}");
        let mut tokens: Vec<u64> = holds.iter().map(|h| h.0).collect();
        tokens.sort();
        tokens.dedup();
        assert_eq!(tokens.len(), 16, "{label}: every permit has its own fencing token");
    }
}

#[test]
fn a_sigkilled_holders_permit_comes_back() {
    if crate::common::servers_off() {
        return;
    }
    for (label, url) in servers("kill") {
        let what = ["--semaphore", "one", "--permits", "1"];
        let mut holder = polylock()
            .args(["--url", &url, "run"])
            .args(what)
            .args(["--", "sh", "-c", "echo $POLYLOCK_FENCING_TOKEN; exec sleep 30"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until it holds the permit: it prints its token first.
        let mut stdout = std::io::BufReader::new(holder.stdout.take().unwrap());
        let mut token = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut token).unwrap();
        let token: u64 = token.trim().parse().unwrap_or_else(|_| panic!("{label}: no token: {token:?}"));
        let busy =
            polylock().args(["--url", &url, "run"]).args(what).args(["--wait", "0", "--", "true"]).output().unwrap();
        assert_eq!(busy.status.code(), Some(75), "{label}: the permit was free while held");
        // SIGKILL the polylock process itself: nothing gives the permit back but its lease
        // (or the server's end of its session).
        holder.kill().unwrap(); // SIGKILL
        holder.wait().unwrap();
        let started = Instant::now();
        let next = polylock()
            .args(["--url", &url, "run"])
            .args(what)
            .args(["--wait", "30s", "--", "sh", "-c", "echo $POLYLOCK_FENCING_TOKEN"])
            .output()
            .unwrap();
        assert!(next.status.success(), "{label}: {}", String::from_utf8_lossy(&next.stderr));
        let next_token: u64 = String::from_utf8_lossy(&next.stdout).trim().parse().unwrap();
        assert!(next_token > token, "{label}: tokens {token} then {next_token}");
        assert!(started.elapsed() < Duration::from_secs(30), "{label}");
    }
}
