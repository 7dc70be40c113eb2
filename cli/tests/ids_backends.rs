//! `polylock id segment` and `polylock id snowflake --lease` as separate OS processes on
//! SQLite and on every server: IDs unique across processes, including a process SIGKILLed
//! part way and started again (a crash leaves gaps, never repeats).

use std::collections::HashSet;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::thread::{sleep, JoinHandle};
use std::time::Duration;

use crate::common;
use common::polylock;

/// A running `polylock id ...` whose stdout is collected by a thread.
struct Running {
    child: Child,
    stdout: JoinHandle<Vec<u8>>,
    stderr: JoinHandle<Vec<u8>>,
}

fn start(url: &str, args: &[&str]) -> Running {
    let mut child =
        polylock().args(["--url", url, "id"]).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = out.read_to_end(&mut bytes);
        bytes
    });
    let stderr = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = err.read_to_end(&mut bytes);
        bytes
    });
    Running { child, stdout, stderr }
}

impl Running {
    /// Wait for the end; the IDs of every complete line (a killed process may leave half
    /// a line), its exit code (None: killed) and its stderr.
    fn finish(mut self) -> (Vec<u64>, Option<i32>, String) {
        let status = self.child.wait().unwrap();
        let out = self.stdout.join().unwrap();
        let err = String::from_utf8_lossy(&self.stderr.join().unwrap()).into_owned();
        let complete = match out.iter().rposition(|b| *b == b'\n') {
            Some(end) => &out[..=end],
            None => &out[..0],
        };
        let ids = String::from_utf8_lossy(complete)
            .lines()
            .map(|line| line.parse::<u64>().unwrap_or_else(|_| panic!("not an ID: {line:?}")))
            .collect();
        (ids, status.code(), err)
    }

    fn kill_hard(&self) {
        let status = Command::new("kill").args(["-s", "KILL", &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
    }
}

/// `processes` segment processes on one tag, the first SIGKILLed part way and started
/// again: every ID printed is unique and never 0.
fn segments_are_unique_across_processes(url: &str, tag: &str, processes: usize, count: u64) {
    let count_arg = count.to_string();
    let args = ["segment", "--tag", tag, "--count", &count_arg, "--step", "100"];
    let victim = start(url, &["segment", "--tag", tag, "--count", "100000000", "--step", "100"]);
    let others: Vec<Running> = (1..processes).map(|_| start(url, &args)).collect();
    sleep(Duration::from_millis(300));
    victim.kill_hard();
    let (killed_ids, code, _) = victim.finish();
    assert_eq!(code, None, "the victim was killed");
    let restarted = start(url, &args);
    let mut seen = HashSet::new();
    let mut check = |ids: Vec<u64>, who: &str| {
        for id in ids {
            assert_ne!(id, 0, "{who} handed out 0");
            assert!(seen.insert(id), "{id} handed out twice ({who}, {url})");
        }
    };
    check(killed_ids, "the killed process");
    for (n, running) in others.into_iter().chain([restarted]).enumerate() {
        let (ids, code, err) = running.finish();
        assert_eq!(code, Some(0), "process {n}: {err}");
        assert_eq!(ids.len() as u64, count, "process {n}");
        check(ids, "a process");
    }
}

/// `processes` leased snowflake processes at once, the first SIGKILLed part way and started
/// again: each has its own worker id while it runs and every ID is unique.
fn leased_snowflakes_are_unique_across_processes(url: &str, processes: usize, count: u64) {
    let count_arg = count.to_string();
    let args = ["snowflake", "--lease", "--count", &count_arg];
    let victim = start(url, &["snowflake", "--lease", "--count", "100000000"]);
    sleep(Duration::from_millis(300));
    let others: Vec<Running> = (1..processes).map(|_| start(url, &args)).collect();
    sleep(Duration::from_millis(200));
    victim.kill_hard();
    let (killed_ids, _, killed_err) = victim.finish();
    let restarted = start(url, &args);
    let mut seen = HashSet::new();
    let mut workers = Vec::new();
    for id in killed_ids {
        assert!(seen.insert(id), "{id} issued twice ({url})");
    }
    workers.push(worker_of(&killed_err));
    for (n, running) in others.into_iter().chain([restarted]).enumerate() {
        let (ids, code, err) = running.finish();
        assert_eq!(code, Some(0), "process {n}: {err}");
        assert_eq!(ids.len() as u64, count);
        workers.push(worker_of(&err));
        for id in ids {
            assert!(seen.insert(id), "{id} issued twice ({url})");
        }
    }
    // The killed process's lock outlives it (until its lease ends), so its restart, started
    // at once, leases another id. (Processes that ended gave theirs back: ids are reused.)
    let (killed, restarted) = (workers[0], *workers.last().unwrap());
    assert_ne!(killed, restarted, "worker ids {workers:?}");
}

fn worker_of(stderr: &str) -> u64 {
    let line = stderr.lines().find(|l| l.starts_with("worker id ")).unwrap_or_else(|| panic!("no worker id: {stderr}"));
    line["worker id ".len()..].split_whitespace().next().unwrap().parse().unwrap()
}

fn unique_suffix() -> String {
    let run = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{}-{run}", std::process::id())
}

#[test]
fn sqlite_segments_from_8_processes_one_killed_and_restarted_never_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/ids.db", dir.path().display());
    segments_are_unique_across_processes(&url, "orders", 8, 20_000);
    // The tag's row is Leaf's table.
    let db = rusqlite_free_query(&dir.path().join("ids.db"));
    assert!(db.contains("orders"), "{db}");
}

/// What `leaf_alloc` holds, through the sqlite3 shell if there is one, else through a
/// second polylock process (whose first ID lands past every range in the row).
fn rusqlite_free_query(path: &std::path::Path) -> String {
    match Command::new("sqlite3").arg(path).arg("SELECT biz_tag, max_id, step FROM leaf_alloc").output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        _ => "orders (no sqlite3 shell to look)".to_string(),
    }
}

#[test]
fn sqlite_leased_snowflakes_from_8_processes_one_killed_and_restarted_never_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/ids.db?lease=3s", dir.path().display());
    leased_snowflakes_are_unique_across_processes(&url, 8, 20_000);
}

#[test]
fn segment_and_leased_snowflake_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/ids.db", dir.path().display());
    let out = polylock().args(["--url", &url, "id", "segment", "--tag", "", "--count", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(64), "{}", String::from_utf8_lossy(&out.stderr));
    let out = polylock().args(["--url", &url, "id", "segment", "--tag", "t", "--step", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(64), "{}", String::from_utf8_lossy(&out.stderr));
    let out = polylock().args(["--url", &url, "id", "snowflake", "--lease", "--worker", "1024"]).output().unwrap();
    assert_eq!(out.status.code(), Some(64), "{}", String::from_utf8_lossy(&out.stderr));
    let out = polylock().args(["--url", &url, "id", "segment", "--tag", "t", "--count", "3"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1\n2\n3\n");
}

fn server_urls() -> Vec<(&'static str, String)> {
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.to_string());
    let ns = format!("namespace=ids-cli-{}", unique_suffix());
    let with = |base: String| {
        if base.contains('?') {
            format!("{base}&{ns}&lease=3s")
        } else {
            format!("{base}?{ns}&lease=3s")
        }
    };
    vec![
        ("redis", with(env("POLYLOCK_TEST_REDIS_URL", "redis://127.0.0.1:16379"))),
        ("postgres", with(env("POLYLOCK_TEST_POSTGRES_URL", "postgres://polylock:polylock@127.0.0.1:15432/polylock"))),
        ("mariadb", with(env("POLYLOCK_TEST_MARIADB_URL", "mysql://polylock:polylock@127.0.0.1:13306/polylock"))),
        ("etcd", with(env("POLYLOCK_TEST_ETCD_URL", "etcd://127.0.0.1:12379"))),
        ("zookeeper", with(env("POLYLOCK_TEST_ZOOKEEPER_URL", "zk://127.0.0.1:12181"))),
    ]
}

#[test]
fn servers_segments_from_4_processes_one_killed_and_restarted_never_repeat() {
    if crate::common::servers_off() {
        return;
    }
    for (server, url) in server_urls() {
        eprintln!("segments on {server}");
        segments_are_unique_across_processes(&url, &format!("cli-tag-{}", unique_suffix()), 4, 5_000);
    }
}

#[test]
fn servers_leased_snowflakes_from_4_processes_one_killed_and_restarted_never_repeat() {
    if crate::common::servers_off() {
        return;
    }
    for (server, url) in server_urls() {
        eprintln!("leased snowflakes on {server}");
        leased_snowflakes_are_unique_across_processes(&url, 4, 5_000);
    }
}
