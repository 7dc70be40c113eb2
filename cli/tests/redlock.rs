//! `polylock --url 'redlock://h1:p1,h2:p2,h3:p3' run --lock NAME -- CMD` as separate OS
//! processes over three private redis-servers (ports above 30000, killed at the end): the
//! URL alone picks RedLock and its token lock; processes exclude each other (checked by a
//! ledger of start and end times, as RedLock has no fencing token, so the command sees no
//! `POLYLOCK_FENCING_TOKEN`); a busy lock with `--wait 0` exits 75; and with no majority of
//! servers left the command is not run.

use std::process::Stdio;
use std::time::Duration;

use crate::common;
use common::polylock;
use common::redis_servers::RedisServers;

#[test]
fn processes_exclude_each_other_by_url_alone() {
    if crate::common::servers_off() {
        return;
    }
    let servers = RedisServers::start(3, 50);
    let url = servers.url("");
    let dir = tempfile::tempdir().unwrap();
    let (counter, ledger) = (dir.path().join("counter"), dir.path().join("ledger"));
    std::fs::write(&counter, "0").unwrap();
    // An unprotected read-increment-write, and a line per hold: token variable (must be
    // unset), start and end in ns.
    let script = format!(
        "start=$(date +%s%N); n=$(cat {c}); sleep 0.01; echo $((n + 1)) > {c}; \
         echo \"${{POLYLOCK_FENCING_TOKEN-none}} $start $(date +%s%N)\" >> {l}",
        c = counter.display(),
        l = ledger.display()
    );
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (url, script) = (url.clone(), script.clone());
            std::thread::spawn(move || {
                for _ in 0..5 {
                    let out = polylock()
                        .args(["--url", &url, "run", "--lock", "job", "--wait", "30s", "--", "sh", "-c", &script])
                        .output()
                        .unwrap();
                    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(std::fs::read_to_string(&counter).unwrap().trim(), "20", "an increment was lost");
    let mut holds: Vec<(String, u128, u128)> = std::fs::read_to_string(&ledger)
        .unwrap()
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            (f[0].to_string(), f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    assert_eq!(holds.len(), 20);
    assert!(holds.iter().all(|h| h.0 == "none"), "RedLock must not hand out a fencing token: {holds:?}");
    holds.sort_by_key(|h| h.1);
    for pair in holds.windows(2) {
        assert!(pair[1].1 >= pair[0].2, "holds overlap: {:?} and {:?}", pair[0], pair[1]);
    }
}

#[test]
fn a_busy_lock_exits_75_and_no_majority_runs_nothing() {
    if crate::common::servers_off() {
        return;
    }
    let mut servers = RedisServers::start(3, 51);
    let url = servers.url("");
    let mut holder = polylock()
        .args(["--url", &url, "run", "--lock", "busy", "--", "sleep", "30"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    loop {
        let out =
            polylock().args(["--url", &url, "run", "--lock", "busy", "--wait", "0", "--", "true"]).output().unwrap();
        if out.status.code() == Some(75) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the holder never got the lock");
        std::thread::sleep(Duration::from_millis(50));
    }
    holder.kill().unwrap();
    holder.wait().unwrap();
    // Two of three servers gone: no majority, so the command never runs.
    servers.kill(0);
    servers.kill(1);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let out = polylock()
        .args(["--url", &url, "run", "--lock", "other", "--wait", "1s", "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(!marker.exists(), "the command ran without a majority");
}
