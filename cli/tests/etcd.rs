//! `polylock run` on etcd as separate OS processes: mutual exclusion checked by a fencing
//! ledger, and a SIGKILLed holder freed when its session lease runs out.

use std::process::Stdio;
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::common;
use common::polylock;

fn etcd_url(options: &str) -> String {
    let base = std::env::var("POLYLOCK_TEST_ETCD_URL").unwrap_or_else(|_| "etcd://127.0.0.1:12379".to_string());
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    // A namespace per run keeps runs (and earlier failures) apart.
    format!("{base}?namespace=cli-{}-{nanos}{options}", std::process::id())
}

#[test]
fn processes_exclude_each_other() {
    if crate::common::servers_off() {
        return;
    }
    common::exclusion_with_fencing_ledger(&etcd_url(""), &[], 4, 8);
}

#[test]
fn a_sigkilled_holder_frees_the_lock_when_its_session_lease_runs_out() {
    if crate::common::servers_off() {
        return;
    }
    // Nothing renews a dead process's session: its keys go with the lease, after the TTL.
    let url = etcd_url("&ttl=2s");
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
        assert!(started.elapsed() < Duration::from_secs(10), "the holder never got the lock");
        sleep(Duration::from_millis(20));
    }
    holder.kill().unwrap(); // SIGKILL: no release, no more keep-alives
    holder.wait().unwrap();
    let killed_at = Instant::now();
    let out = polylock().args(["--url", &url, "run", "--lock", "job", "--wait", "15s", "--", "true"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let freed_after = killed_at.elapsed();
    // etcd grants at least its minimum TTL (2 s with default timings) and counts from the
    // last keep-alive; anything near a minute would mean the default TTL was used.
    assert!(freed_after < Duration::from_secs(6), "freed only after {freed_after:?}");
}
