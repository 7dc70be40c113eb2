//! `polylock run` on PostgreSQL and MariaDB as separate OS processes, for both kinds (session
//! and lease): mutual exclusion checked by a fencing ledger, and a SIGKILLed session-lock
//! holder freed as soon as its connection drops.

use std::process::Stdio;
use std::thread::sleep;
use std::time::{Duration, Instant};

mod common;
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
    for url in urls("") {
        for kind in ["reentrant", "lease"] {
            common::exclusion_with_fencing_ledger(&url, &["--kind", kind], 4, 8);
        }
    }
}

#[test]
fn a_sigkilled_session_holder_frees_the_lock_at_once() {
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
