//! `polylock run` on Redis as separate OS processes, for every lock kind: mutual exclusion
//! checked by a fencing ledger, and a SIGKILLed holder freed at the end of its lease.

use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

fn polylock() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_polylock"));
    cmd.env_remove("POLYLOCK_URL");
    cmd
}

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
    for kind in ["reentrant", "fair", "token"] {
        let dir = tempfile::tempdir().unwrap();
        let url = redis_url("");
        let counter = dir.path().join("counter");
        let ledger = dir.path().join("ledger");
        std::fs::write(&counter, "0").unwrap();
        let script = format!(
            "start=$(date +%s%N); n=$(cat {c}); sleep 0.01; echo $((n + 1)) > {c}; \
             echo \"$POLYLOCK_FENCING_TOKEN $start $(date +%s%N)\" >> {l}",
            c = counter.display(),
            l = ledger.display()
        );
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let (url, script) = (url.clone(), script.clone());
                std::thread::spawn(move || {
                    for _ in 0..8 {
                        let out = polylock()
                            .args(["--url", &url, "run", "--lock", "job", "--kind", kind, "--", "sh", "-c", &script])
                            .output()
                            .unwrap();
                        assert!(out.status.success(), "{kind}: {}", String::from_utf8_lossy(&out.stderr));
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        assert_eq!(std::fs::read_to_string(&counter).unwrap().trim(), "32", "{kind}: an increment was lost");
        let mut holds: Vec<(u64, u128, u128)> = std::fs::read_to_string(&ledger)
            .unwrap()
            .lines()
            .map(|line| {
                let f: Vec<&str> = line.split(' ').collect();
                (f[0].parse().unwrap(), f[1].parse().unwrap(), f[2].parse().unwrap())
            })
            .collect();
        holds.sort_by_key(|h| h.1);
        for pair in holds.windows(2) {
            assert!(pair[1].1 >= pair[0].2, "{kind}: holds overlap: {:?} and {:?}", pair[0], pair[1]);
            assert!(pair[1].0 > pair[0].0, "{kind}: tokens out of time order: {:?} then {:?}", pair[0], pair[1]);
        }
    }
}

#[test]
fn a_sigkilled_holder_frees_the_lock_after_its_lease() {
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
