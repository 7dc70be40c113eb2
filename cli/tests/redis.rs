//! `polylock run` on Redis as separate OS processes, for every lock kind: mutual exclusion
//! checked by a fencing ledger, and a SIGKILLed holder freed at the end of its lease.

use std::process::Stdio;
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::common;
use common::polylock;

fn redis_url(options: &str) -> String {
    let base = std::env::var("POLYLOCK_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:16379".to_string());
    // A namespace per run keeps runs (and earlier failures) apart.
    format!("{base}?namespace=cli-{}-{}{options}", std::process::id(), fastrand_like())
}

fn fastrand_like() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

#[test]
fn processes_exclude_each_other_on_every_kind() {
    if crate::common::servers_off() {
        return;
    }
    for kind in ["reentrant", "fair", "token"] {
        common::exclusion_with_fencing_ledger(&redis_url(""), &["--kind", kind], 4, 8);
    }
}

#[test]
fn a_sigkilled_holder_frees_the_lock_after_its_lease() {
    if crate::common::servers_off() {
        return;
    }
    for kind in ["reentrant", "fair", "token"] {
        let url = redis_url("&lease=1s");
        let is_held = || {
            let out = polylock()
                .args(["--url", &url, "run", "--lock", "job", "--kind", kind, "--wait", "0", "--", "true"])
                .output()
                .unwrap();
            out.status.code() == Some(75)
        };
        let mut holder = polylock()
            .args(["--url", &url, "run", "--lock", "job", "--kind", kind, "--", "sleep", "30"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while !is_held() {
            assert!(started.elapsed() < Duration::from_secs(10), "{kind}: the holder never got the lock");
            sleep(Duration::from_millis(20));
        }
        holder.kill().unwrap(); // SIGKILL: no release, no more renewals
        holder.wait().unwrap();
        let killed_at = Instant::now();
        let out = polylock()
            .args(["--url", &url, "run", "--lock", "job", "--kind", kind, "--wait", "10s", "--", "true"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{kind}: {}", String::from_utf8_lossy(&out.stderr));
        let freed_after = killed_at.elapsed();
        assert!(freed_after < Duration::from_secs(3), "{kind}: freed only after {freed_after:?}");
    }
}

/// What Redis does not offer (ShedLock's lease table is SQL's) is refused before anything is
/// written: exit 64 (usage).
#[test]
fn a_kind_redis_lacks_exits_with_a_usage_error() {
    if crate::common::servers_off() {
        return;
    }
    let what = ["--lock", "job", "--kind", "lease"];
    let out = polylock().args(["--url", &redis_url(""), "run"]).args(what).args(["--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(64), "{what:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not offer"), "{what:?}");
}
