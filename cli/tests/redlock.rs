//! `polylock --url 'redlock://h1:p1,h2:p2,h3:p3' run --lock NAME -- CMD` as separate OS
//! processes over three private redis-servers (ports above 30000, killed at the end): the
//! URL alone picks RedLock and its token lock; processes exclude each other (checked by a
//! ledger of start and end times, as RedLock has no fencing token, so the command sees no
//! `POLYLOCK_FENCING_TOKEN`); a busy lock with `--wait 0` exits 75; and with no majority of
//! servers left the command is not run.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

#[allow(dead_code)] // the shared helpers this suite does not use
mod common;
use common::polylock;

struct Servers {
    ports: Vec<u16>,
    children: Vec<Child>,
}

impl Servers {
    /// `slot` keeps the tests of this binary (which run at once) on ports of their own.
    fn start(slot: u16) -> Servers {
        for attempt in 0..20u16 {
            let base = 30_000 + ((std::process::id() as u16 % 500) * 50 + 25_000 + slot * 100 + attempt * 3) % 30_000;
            let ports: Vec<u16> = (base..base + 3).collect();
            if !ports.iter().all(|port| std::net::TcpListener::bind(("127.0.0.1", *port)).is_ok()) {
                continue;
            }
            let children = ports
                .iter()
                .map(|port| {
                    Command::new("redis-server")
                        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                        .args(["--daemonize", "no"])
                        .stdout(Stdio::null())
                        .spawn()
                        .expect("redis-server must be installed (tests/services installs it)")
                })
                .collect();
            let mut servers = Servers { ports, children };
            if servers.all_answer() {
                return servers;
            }
        }
        panic!("could not start three redis-servers on free ports above 30000");
    }

    /// Whether every server accepts connections within 10 s (false once one has exited).
    fn all_answer(&mut self) -> bool {
        (0..self.ports.len()).all(|index| {
            for _ in 0..200 {
                if std::net::TcpStream::connect(("127.0.0.1", self.ports[index])).is_ok() {
                    return true;
                }
                if matches!(self.children[index].try_wait(), Ok(Some(_))) {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            false
        })
    }

    fn url(&self) -> String {
        let hosts: Vec<String> = self.ports.iter().map(|port| format!("127.0.0.1:{port}")).collect();
        format!("redlock://{}", hosts.join(","))
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn processes_exclude_each_other_by_url_alone() {
    let servers = Servers::start(0);
    let url = servers.url();
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
    let mut servers = Servers::start(1);
    let url = servers.url();
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
    for child in servers.children.iter_mut().take(2) {
        child.kill().unwrap();
        child.wait().unwrap();
    }
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
