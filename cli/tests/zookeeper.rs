//! `polylock run` on ZooKeeper as separate OS processes: mutual exclusion checked by a
//! fencing ledger, a SIGKILLed holder freed when its session times out, and a holder frozen
//! (SIGSTOP) past its session timeout that learns on waking that it lost the lock.

use std::process::Stdio;
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::common;
use common::polylock;

/// The standalone test server's tick is 1 s, so it accepts a 4 s session timeout as asked.
const SESSION_TIMEOUT: Duration = Duration::from_secs(4);

fn zk_url() -> String {
    let base = std::env::var("POLYLOCK_TEST_ZOOKEEPER_URL").unwrap_or_else(|_| "zk://127.0.0.1:12181".to_string());
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    // A namespace per run keeps runs (and earlier failures) apart.
    format!("{base}?namespace=cli-{}-{nanos}&session_timeout={}s", std::process::id(), SESSION_TIMEOUT.as_secs())
}

fn is_held(url: &str) -> bool {
    let out = polylock().args(["--url", url, "run", "--lock", "job", "--wait", "0", "--", "true"]).output().unwrap();
    out.status.code() == Some(75)
}

fn hold_in_background(url: &str) -> std::process::Child {
    let holder = polylock()
        .args(["--url", url, "run", "--lock", "job", "--", "sleep", "30"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !is_held(url) {
        assert!(started.elapsed() < Duration::from_secs(10), "the holder never got the lock");
        sleep(Duration::from_millis(20));
    }
    holder
}

#[test]
fn processes_exclude_each_other() {
    if crate::common::servers_off() {
        return;
    }
    common::exclusion_with_fencing_ledger(&zk_url(), &[], 4, 6);
}

#[test]
fn a_sigkilled_holder_frees_the_lock_when_its_session_times_out() {
    if crate::common::servers_off() {
        return;
    }
    let url = zk_url();
    let mut holder = hold_in_background(&url);
    holder.kill().unwrap(); // SIGKILL: the session is left for the server to expire
    holder.wait().unwrap();
    let killed_at = Instant::now();
    let out = polylock().args(["--url", &url, "run", "--lock", "job", "--wait", "20s", "--", "true"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let freed_after = killed_at.elapsed();
    assert!(
        freed_after >= SESSION_TIMEOUT - Duration::from_secs(1) && freed_after < SESSION_TIMEOUT * 3,
        "freed after {freed_after:?}, expected about the session timeout"
    );
}

#[test]
fn a_holder_frozen_past_its_session_timeout_learns_it_lost_the_lock() {
    if crate::common::servers_off() {
        return;
    }
    let url = zk_url();
    let holder = hold_in_background(&url);
    let pid = holder.id().to_string();
    let signal = |sig: &str| assert!(std::process::Command::new("kill").args([sig, &pid]).status().unwrap().success());
    signal("-STOP");
    // Its session expires on the server while it cannot answer; another process gets the lock.
    let out = polylock().args(["--url", &url, "run", "--lock", "job", "--wait", "20s", "--", "true"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    signal("-CONT");
    let out = holder.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("lost lock 'job'") && stderr.contains("expired"), "{stderr}");
    assert_eq!(out.status.code(), Some(128 + 15), "the command was sent SIGTERM: {stderr}");
}
