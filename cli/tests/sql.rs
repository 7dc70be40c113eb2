//! `polylock run` on PostgreSQL and MariaDB as separate OS processes, for both kinds (session
//! and lease): mutual exclusion checked by a fencing ledger, and a SIGKILLed session-lock
//! holder freed as soon as its connection drops.

use std::process::Stdio;
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::common;
use common::polylock;

fn urls(options: &str) -> Vec<String> {
    let postgres = std::env::var("POLYLOCK_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://polylock:polylock@127.0.0.1:15432/polylock".to_string());
    let mariadb = std::env::var("POLYLOCK_TEST_MARIADB_URL")
        .unwrap_or_else(|_| "mysql://polylock:polylock@127.0.0.1:13306/polylock".to_string());
    let run = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    // A namespace per run keeps runs (and earlier failures) apart.
    [postgres, mariadb]
        .into_iter()
        .map(|base| format!("{base}?namespace=cli-{}-{run}{options}", std::process::id()))
        .collect()
}

#[test]
fn processes_exclude_each_other_on_both_databases_and_kinds() {
    if crate::common::servers_off() {
        return;
    }
    for url in urls("") {
        for kind in ["reentrant", "lease"] {
            common::exclusion_with_fencing_ledger(&url, &["--kind", kind], 4, 8);
        }
    }
}

#[test]
fn a_sigkilled_session_holder_frees_the_lock_at_once() {
    if crate::common::servers_off() {
        return;
    }
    for url in urls("") {
        let is_held = || {
            let out =
                polylock().args(["--url", &url, "run", "--lock", "job", "--wait", "0", "--", "true"]).output().unwrap();
            out.status.code() == Some(75)
        };
        let mut holder = polylock()
            .args(["--url", &url, "run", "--lock", "job", "--", "sleep", "30"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while !is_held() {
            assert!(started.elapsed() < Duration::from_secs(10), "{url}: the holder never got the lock");
            sleep(Duration::from_millis(20));
        }
        holder.kill().unwrap(); // SIGKILL: the connection drops, and the session lock with it
        holder.wait().unwrap();
        let killed_at = Instant::now();
        let out =
            polylock().args(["--url", &url, "run", "--lock", "job", "--wait", "10s", "--", "true"]).output().unwrap();
        assert!(out.status.success(), "{url}: {}", String::from_utf8_lossy(&out.stderr));
        let freed_after = killed_at.elapsed();
        // Far below the 30 s watchdog lease: the server freed it when the connection dropped.
        assert!(freed_after < Duration::from_secs(5), "{url}: freed only after {freed_after:?}");
    }
}

/// The example, shortened: a holder with a 1s lease runs 2s; a second `polylock run`
/// waits longer than its own lease for the lock and must run its command to the end, because
/// a lease counts from the grant, not from the start of the wait.
#[test]
fn a_waiter_that_waited_longer_than_its_lease_runs_its_command_to_the_end() {
    if crate::common::servers_off() {
        return;
    }
    for url in urls("&lease=1s") {
        for kind in ["reentrant", "lease"] {
            let mut holder = polylock()
                .args(["--url", &url, "run", "--lock", "waited", "--kind", kind, "--", "sleep", "2"])
                .stdin(Stdio::null())
                .spawn()
                .unwrap();
            sleep(Duration::from_millis(300));
            let started = Instant::now();
            let out = polylock()
                .args(["--url", &url, "run", "--lock", "waited", "--kind", kind, "--wait", "30s"])
                .args(["--", "sh", "-c", "sleep 1.5; echo finished"])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{url} {kind}: {:?} {stderr}", out.status);
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "finished", "{url} {kind}: {stderr}");
            assert!(started.elapsed() >= Duration::from_millis(2500), "{url} {kind}: did not wait for the holder");
            assert!(holder.wait().unwrap().success());
        }
    }
}

/// Leases and waits no backend can honour exit 64 (usage) before anything is written, never
/// 101 (a panic), on every backend.
#[test]
fn leases_and_waits_out_of_range_exit_with_a_usage_error() {
    if crate::common::servers_off() {
        return;
    }
    let mut all = urls("");
    all.push(std::env::var("POLYLOCK_TEST_ETCD_URL").unwrap_or_else(|_| "etcd://127.0.0.1:12379".into()));
    all.push(std::env::var("POLYLOCK_TEST_ZOOKEEPER_URL").unwrap_or_else(|_| "zk://127.0.0.1:12181".into()));
    all.push(std::env::var("POLYLOCK_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:16379".into()));
    for url in all {
        for bad in [
            &["--lease", "18446744073709551615"][..],
            &["--lease", "400d"],
            &["--lease", "5ms"],
            &["--wait", "18446744073709551615"],
        ] {
            let out = polylock()
                .args(["--url", &url, "run", "--lock", "huge"])
                .args(bad)
                .args(["--", "true"])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(64), "{url} {bad:?}: {stderr}");
            assert!(stderr.contains("must be"), "{url} {bad:?}: {stderr}");
        }
    }
}
