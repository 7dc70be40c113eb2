//! What the CLI suites share: the `polylock` binary, and the cross-process exclusion check.

// Private redis-servers for RedLock, the same as the core's suites use.
#[path = "../../../core/tests/common/redis_servers.rs"]
pub mod redis_servers;

use std::path::Path;
use std::process::Command;

/// Whether the server tier is on (`POLYLOCK_TEST_SERVERS=1`, as core's suites read it):
/// off, only the SQLite and mem:// tests run, so the suite passes with no server.
pub fn servers_on() -> bool {
    matches!(std::env::var("POLYLOCK_TEST_SERVERS").as_deref(), Ok("1" | "true" | "yes"))
}

/// The first line of a test that needs a server: true, with a note, when the tier is off.
pub fn servers_off() -> bool {
    if servers_on() {
        return false;
    }
    eprintln!("the server tier is off: set POLYLOCK_TEST_SERVERS=1 with tests/services running to run this test");
    true
}

pub fn polylock() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_polylock"));
    cmd.env_remove("POLYLOCK_URL");
    cmd
}

/// `workers` threads each run `polylock run` `runs_each` times on lock `job` (with `extra`
/// arguments before `--`). The command is an unprotected read-increment-write of a counter
/// file that appends `token start end` (wall-clock ns) to a ledger. Checks that no increment
/// was lost, that no two holds overlapped, and that tokens grew with time.
pub fn exclusion_with_fencing_ledger(url: &str, extra: &[&str], workers: usize, runs_each: usize) {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("counter");
    let ledger = dir.path().join("ledger");
    std::fs::write(&counter, "0").unwrap();
    let script = format!(
        "start=$(date +%s%N); n=$(cat {c}); sleep 0.01; echo $((n + 1)) > {c}; \
         echo \"$POLYLOCK_FENCING_TOKEN $start $(date +%s%N)\" >> {l}",
        c = counter.display(),
        l = ledger.display()
    );
    let threads: Vec<_> = (0..workers)
        .map(|_| {
            let url = url.to_string();
            let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
            let script = script.clone();
            std::thread::spawn(move || {
                for _ in 0..runs_each {
                    let out = polylock()
                        .args(["--url", &url, "run", "--lock", "job"])
                        .args(&extra)
                        .args(["--", "sh", "-c", &script])
                        .output()
                        .unwrap();
                    assert!(out.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&out.stderr));
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let expected = workers * runs_each;
    let count = std::fs::read_to_string(&counter).unwrap();
    assert_eq!(count.trim(), expected.to_string(), "{extra:?}: an increment was lost");
    check_ledger(&ledger, expected, extra);
}

/// The holds a ledger recorded: (fencing token, start ns, end ns), one per line.
pub fn read_ledger(ledger: &Path) -> Vec<(u64, u128, u128)> {
    std::fs::read_to_string(ledger)
        .unwrap()
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            (f[0].parse().unwrap(), f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect()
}

fn check_ledger(ledger: &Path, expected: usize, context: &[&str]) {
    let mut holds = read_ledger(ledger);
    assert_eq!(holds.len(), expected, "{context:?}");
    holds.sort_by_key(|h| h.1);
    for pair in holds.windows(2) {
        assert!(pair[1].1 >= pair[0].2, "{context:?}: holds overlap: {:?} and {:?}", pair[0], pair[1]);
        assert!(pair[1].0 > pair[0].0, "{context:?}: tokens out of time order: {:?} then {:?}", pair[0], pair[1]);
    }
}
