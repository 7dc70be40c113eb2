//! `polylock run --lock NAME --shared|--exclusive` and `--semaphore NAME --permits N` on the
//! embedded default, as separate OS processes.

use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::polylock;

const NOT_ACQUIRED: i32 = 75;
const USAGE: i32 = 64;

fn sqlite_url(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}/locks.db", dir.path().display())
}

fn run(url: &str, what: &[&str], script: &str) -> Output {
    polylock().args(["--url", url, "run"]).args(what).args(["--", "sh", "-c", script]).output().unwrap()
}

fn spawn(url: &str, what: &[&str], script: &str) -> Child {
    polylock()
        .args(["--url", url, "run"])
        .args(what)
        .args(["--", "sh", "-c", script])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A shell snippet that marks itself inside, waits (at most 5 s) until `n` holders are
/// inside at once, and fails if they never are.
fn rendezvous(dir: &std::path::Path, n: usize) -> String {
    let d = dir.display();
    format!(
        "touch {d}/in-$$; i=0; while [ $(ls {d} | grep -c '^in-') -lt {n} ]; do \
         i=$((i+1)); [ $i -gt 500 ] && exit 9; sleep 0.01; done"
    )
}

#[test]
fn shared_holders_run_together_and_exclusive_ones_alone() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    let meet = tempfile::tempdir().unwrap();
    let script = rendezvous(meet.path(), 2);
    let a = spawn(&url, &["--lock", "doc", "--shared"], &script);
    let b = spawn(&url, &["--lock", "doc", "--shared"], &script);
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "two readers were inside at once: {}", String::from_utf8_lossy(&out.stderr));
    }
    // A writer excludes readers, and its command sees its fencing token.
    let writer = spawn(&url, &["--lock", "doc", "--exclusive"], "echo $POLYLOCK_FENCING_TOKEN; sleep 1");
    std::thread::sleep(Duration::from_millis(300));
    let reader = run(&url, &["--lock", "doc", "--shared", "--wait", "0"], "true");
    assert_eq!(reader.status.code(), Some(NOT_ACQUIRED), "{}", String::from_utf8_lossy(&reader.stderr));
    let out = writer.wait_with_output().unwrap();
    assert!(out.status.success());
    // The mutex of the same name is a different lock.
    assert!(run(&url, &["--lock", "doc", "--wait", "0"], "true").status.success());
}

#[test]
fn exclusive_holders_never_overlap_checked_by_a_fencing_ledger() {
    let dir = tempfile::tempdir().unwrap();
    common::exclusion_with_fencing_ledger(&sqlite_url(&dir), &["--exclusive"], 3, 5);
}

#[test]
fn a_semaphore_lets_n_commands_in_at_once_and_no_more() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    let ledger = dir.path().join("ledger");
    let script = format!(
        "s=$(date +%s%N); sleep 0.3; echo \"$POLYLOCK_FENCING_TOKEN $s $(date +%s%N)\" >> {}",
        ledger.display()
    );
    let what = ["--semaphore", "pool", "--permits", "2", "--wait", "20s"];
    let children: Vec<Child> = (0..5).map(|_| spawn(&url, &what, &script)).collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let holds = common::read_ledger(&ledger);
    assert_eq!(holds.len(), 5);
    let most =
        holds.iter().map(|&(_, start, _)| holds.iter().filter(|&&(_, s, e)| s <= start && start < e).count()).max();
    assert_eq!(most, Some(2), "at most two permits at once, and two were used together: {holds:?}");
    let mut tokens: Vec<u64> = holds.iter().map(|h| h.0).collect();
    tokens.sort();
    tokens.dedup();
    assert_eq!(tokens.len(), 5, "every permit has its own fencing token");
}

#[test]
fn bad_combinations_and_counts_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    let started = Instant::now();
    for what in [
        &["--semaphore", "pool"][..],
        &["--semaphore", "pool", "--permits", "0"],
        &["--lock", "x", "--shared", "--exclusive"],
        &["--shared"],
        &["--lock", "x", "--shared", "--kind", "fair"],
        &["--lock", "x", "--permits", "2"],
    ] {
        assert_eq!(run(&url, what, "true").status.code(), Some(USAGE), "{what:?}");
    }
    assert!(run(&url, &["--semaphore", "pool", "--permits", "2"], "true").status.success());
    let out = run(&url, &["--semaphore", "pool", "--permits", "3"], "true");
    assert_eq!(out.status.code(), Some(USAGE), "the count is fixed by the first use");
    assert!(String::from_utf8_lossy(&out.stderr).contains("has 2 permits"));
    assert!(started.elapsed() < Duration::from_secs(20));
}
