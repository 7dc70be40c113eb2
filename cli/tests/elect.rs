//! `polylock elect` (issue #18) on SQLite and the real redis-server of tests/services:
//! candidates run their command one at a time with growing terms; `--observe` prints each new
//! leader's value; a leader process frozen (SIGSTOP) past its lease is replaced, and once it
//! runs again its command gets SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::common::polylock;

fn redis_url() -> String {
    std::env::var("POLYLOCK_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:16379".to_string())
}

/// SQLite in `dir`, and redis-server; each test uses election names of its own.
fn urls(dir: &std::path::Path) -> Vec<String> {
    let sqlite = format!("sqlite://{}/elect.db", dir.display());
    if crate::common::servers_on() {
        vec![sqlite, redis_url()]
    } else {
        vec![sqlite]
    }
}

fn unique(what: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("elect-{what}-{}-{nanos}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

#[test]
fn candidates_run_one_at_a_time_with_growing_terms() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(dir.path()) {
        let name = unique("one");
        let ledger = dir.path().join(format!("{name}.ledger"));
        let script = format!(
            "start=$(date +%s%N); sleep 0.2; echo \"$POLYLOCK_ELECTION_TERM $start $(date +%s%N)\" >> {}",
            ledger.display()
        );
        let candidates: Vec<_> = (0..3)
            .map(|i| {
                polylock()
                    .args(["--url", &url, "elect", "--name", &name, "--value", &format!("c{i}"), "--"])
                    .args(["sh", "-c", &script])
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut candidate in candidates {
            assert!(candidate.wait().unwrap().success(), "{url}");
        }
        let mut runs: Vec<(u64, u128, u128)> = std::fs::read_to_string(&ledger)
            .unwrap()
            .lines()
            .map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                (fields[0].parse().unwrap(), fields[1].parse().unwrap(), fields[2].parse().unwrap())
            })
            .collect();
        assert_eq!(runs.len(), 3, "{url}: every candidate led once");
        runs.sort_by_key(|run| run.1);
        for pair in runs.windows(2) {
            assert!(pair[0].2 <= pair[1].1, "{url}: two leaders at once: {pair:?}");
            assert!(pair[0].0 < pair[1].0, "{url}: terms did not grow: {pair:?}");
        }
    }
}

#[test]
fn observe_prints_each_new_leaders_value() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(dir.path()) {
        let name = unique("observe");
        let mut observer = polylock()
            .args(["--url", &url, "elect", "--name", &name, "--observe"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(observer.stdout.take().unwrap()).lines();
        for value in ["first", "second"] {
            let status = polylock()
                .args(["--url", &url, "elect", "--name", &name, "--value", value, "--", "sleep", "0.6"])
                .status()
                .unwrap();
            assert!(status.success(), "{url}");
        }
        assert_eq!(lines.next().unwrap().unwrap(), "first", "{url}");
        assert_eq!(lines.next().unwrap().unwrap(), "second", "{url}");
        observer.kill().unwrap();
        observer.wait().unwrap();
    }
}

#[test]
fn a_frozen_leader_is_replaced_and_its_command_terminated_when_it_resumes() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(dir.path()) {
        let url = format!("{url}{}lease=900ms", if url.contains('?') { '&' } else { '?' });
        let name = unique("frozen");
        let marker = dir.path().join(format!("{name}.terminated"));
        let script =
            format!("trap 'echo terminated > {}; exit 143' TERM; while true; do sleep 0.05; done", marker.display());
        let mut old = polylock()
            .args(["--url", &url, "elect", "--name", &name, "--value", "old", "--", "sh", "-c", &script])
            .spawn()
            .unwrap();
        // Wait until the old candidate leads, as its observers see it.
        let leader = |url: &str| {
            let mut observer = polylock()
                .args(["--url", url, "elect", "--name", &name, "--observe"])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let line = BufReader::new(observer.stdout.take().unwrap()).lines().next().unwrap().unwrap();
            observer.kill().unwrap();
            observer.wait().unwrap();
            line
        };
        assert_eq!(leader(&url), "old", "{url}");
        // SAFETY: signalling our own child, not yet reaped.
        unsafe { libc::kill(old.id() as libc::pid_t, libc::SIGSTOP) };
        let new = polylock()
            .args(["--url", &url, "elect", "--name", &name, "--value", "new", "--wait", "20s", "--"])
            .args(["sh", "-c", "echo \"$POLYLOCK_ELECTION_TERM\""])
            .output()
            .unwrap();
        assert!(new.status.success(), "{url}: {}", String::from_utf8_lossy(&new.stderr));
        unsafe { libc::kill(old.id() as libc::pid_t, libc::SIGCONT) };
        let started = Instant::now();
        let status = loop {
            if let Some(status) = old.try_wait().unwrap() {
                break status;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{url}: the old leader never learnt it lost");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(status.code(), Some(143), "{url}: the command's SIGTERM exit is passed on");
        assert_eq!(std::fs::read_to_string(&marker).unwrap().trim(), "terminated", "{url}");
    }
}
