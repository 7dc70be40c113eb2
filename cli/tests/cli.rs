//! The `polylock` command against the embedded default, as separate OS processes: mutual
//! exclusion with a fencing ledger, a SIGKILLed holder, signals, exit statuses, IDs.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

const NOT_ACQUIRED: i32 = 75;

use crate::common;
use common::polylock;

struct Db {
    dir: tempfile::TempDir,
}

impl Db {
    fn new() -> Db {
        Db { dir: tempfile::tempdir().unwrap() }
    }

    fn url(&self) -> String {
        format!("sqlite://{}/locks.db", self.dir.path().display())
    }

    fn url_with(&self, options: &str) -> String {
        format!("{}?{options}", self.url())
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `polylock run` of a shell snippet, returning its output.
    fn run_sh(&self, url: &str, extra: &[&str], script: &str) -> Output {
        polylock()
            .args(["--url", url, "run", "--lock", "job"])
            .args(extra)
            .args(["--", "sh", "-c", script])
            .output()
            .unwrap()
    }

    /// Whether someone holds `job` right now (a zero-wait run says so by exiting 75).
    fn is_held(&self, url: &str) -> bool {
        self.run_sh(url, &["--wait", "0"], "true").status.code() == Some(NOT_ACQUIRED)
    }
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "timed out waiting until {what}");
        sleep(Duration::from_millis(20));
    }
}

fn kill(child: &Child, signal: &str) {
    let status = Command::new("kill").args(["-s", signal, &child.id().to_string()]).status().unwrap();
    assert!(status.success());
}

/// Four OS processes, each running the critical section ten times through `polylock run`.
#[test]
fn processes_exclude_each_other_checked_by_a_fencing_ledger() {
    let db = Db::new();
    common::exclusion_with_fencing_ledger(&db.url(), &[], 4, 10);
}

#[test]
fn the_demo_counts_exactly_with_no_overlaps() {
    let db = Db::new();
    let out = polylock().args(["--url", &db.url(), "demo", "--workers", "4", "--iterations", "50"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("expected count:          200"), "{stdout}");
    assert!(stdout.contains("actual count:            200"), "{stdout}");
    assert!(stdout.contains("fencing-token overlaps:  0"), "{stdout}");
    assert!(stdout.contains("fencing-token inversions: 0"), "{stdout}");
    assert!(stdout.contains("acquisitions per second:"), "{stdout}");
}

#[test]
fn a_sigkilled_holder_frees_the_lock_after_its_lease() {
    let db = Db::new();
    let url = db.url_with("lease=1s");
    let mut holder = polylock()
        .args(["--url", &url, "run", "--lock", "job", "--", "sleep", "30"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the holder has the lock", Duration::from_secs(10), || db.is_held(&url));
    kill(&holder, "KILL");
    let killed_at = Instant::now();
    holder.wait().unwrap();
    let out = db.run_sh(&url, &["--wait", "10s"], "true");
    let freed_after = killed_at.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The watchdog renewed a 1 s lease every 333 ms, so it frees within about a second.
    assert!(freed_after < Duration::from_secs(3), "freed only after {freed_after:?}");
    // The orphaned `sleep 30` is harmless; it was never the lock holder.
}

#[test]
fn the_watchdog_keeps_the_lock_while_the_command_runs() {
    let db = Db::new();
    let url = db.url_with("lease=300ms");
    let holder = std::thread::spawn({
        let url = url.clone();
        move || polylock().args(["--url", &url, "run", "--lock", "job", "--", "sleep", "1.5"]).status().unwrap()
    });
    wait_until("the holder has the lock", Duration::from_secs(10), || db.is_held(&url));
    sleep(Duration::from_millis(900)); // three leases later
    assert!(db.is_held(&url), "the lock expired under a live holder");
    assert!(holder.join().unwrap().success());
    assert!(!db.is_held(&url), "released when the command exited");
}

#[test]
fn exit_status_token_and_timeout() {
    let db = Db::new();
    let out = db.run_sh(&db.url(), &[], "echo token=$POLYLOCK_FENCING_TOKEN; exit 7");
    assert_eq!(out.status.code(), Some(7));
    let first: u64 = String::from_utf8_lossy(&out.stdout).trim().trim_start_matches("token=").parse().unwrap();
    let out = db.run_sh(&db.url(), &[], "echo $POLYLOCK_FENCING_TOKEN");
    let second: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(second > first);

    let mut holder =
        polylock().args(["--url", &db.url(), "run", "--lock", "job", "--", "sleep", "30"]).spawn().unwrap();
    wait_until("the holder has the lock", Duration::from_secs(10), || db.is_held(&db.url()));
    let started = Instant::now();
    let out = db.run_sh(&db.url(), &["--wait", "300ms"], "echo should-not-run");
    assert_eq!(out.status.code(), Some(NOT_ACQUIRED));
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(String::from_utf8_lossy(&out.stdout).is_empty(), "the command ran without the lock");
    assert!(String::from_utf8_lossy(&out.stderr).contains("lock 'job' is held by someone else"));
    kill(&holder, "TERM");
    holder.wait().unwrap();
}

#[test]
fn sigterm_and_sigint_reach_the_command_and_the_lock_is_released() {
    let db = Db::new();
    for (signal, expected) in [("TERM", 42), ("INT", 43)] {
        let marker = db.path(&format!("trapped-{signal}"));
        let script = format!(
            "trap 'touch {m}; exit {expected}' {signal}; touch {m}.ready; while true; do sleep 0.05; done",
            m = marker.display()
        );
        // As from an interactive shell: SIGINT and SIGTERM at their defaults, whatever this
        // test was started with (a background job of a script has SIGINT ignored).
        let mut holder = with_default_signals(polylock())
            .args(["--url", &db.url(), "run", "--lock", "job", "--", "sh", "-c", &script])
            .spawn()
            .unwrap();
        let ready = PathBuf::from(format!("{}.ready", marker.display()));
        wait_until("the command is running", Duration::from_secs(10), || ready.exists());
        kill(&holder, signal);
        let status = wait_bounded(&mut holder, Duration::from_secs(20));
        assert_eq!(status.code(), Some(expected), "SIG{signal} not forwarded, or status not passed on");
        assert!(marker.exists());
        assert!(!db.is_held(&db.url()), "lock still held after SIG{signal}");
    }
}

/// Started with SIGINT ignored (as a script's background job is), polylock ignores it too and
/// the command inherits it ignored, as it would without polylock in between; SIGTERM, at its
/// default, is still passed on.
#[test]
fn a_signal_ignored_at_start_stays_ignored_for_the_command() {
    let db = Db::new();
    let marker = db.path("trapped-TERM");
    let ignored = db.path("sigign");
    let script = format!(
        "grep SigIgn /proc/$$/status > {i}; trap 'touch {m}; exit 42' TERM; touch {m}.ready; \
         while true; do sleep 0.05; done",
        i = ignored.display(),
        m = marker.display()
    );
    let mut command = with_default_signals(polylock());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, || {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut holder =
        command.args(["--url", &db.url(), "run", "--lock", "job", "--", "sh", "-c", &script]).spawn().unwrap();
    let ready = PathBuf::from(format!("{}.ready", marker.display()));
    wait_until("the command is running", Duration::from_secs(10), || ready.exists());
    let mask = std::fs::read_to_string(&ignored).unwrap();
    let bits = u64::from_str_radix(mask.trim().trim_start_matches("SigIgn:").trim(), 16).unwrap();
    assert_ne!(bits & (1 << (libc::SIGINT - 1)), 0, "SIGINT not ignored in the command: {mask}");
    assert_eq!(bits & (1 << (libc::SIGTERM - 1)), 0, "SIGTERM ignored in the command: {mask}");
    kill(&holder, "INT");
    sleep(Duration::from_millis(300));
    assert!(holder.try_wait().unwrap().is_none(), "an ignored SIGINT ended polylock or the command");
    kill(&holder, "TERM");
    let status = wait_bounded(&mut holder, Duration::from_secs(20));
    assert_eq!(status.code(), Some(42), "SIGTERM not forwarded, or status not passed on");
    assert!(!db.is_held(&db.url()), "lock still held after SIGTERM");
}

/// `command` with SIGINT and SIGTERM reset to their default actions in the child.
fn with_default_signals(mut command: Command) -> Command {
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }
    command
}

/// Wait for `child` at most `limit`; past it, kill it and fail (a test never hangs).
fn wait_bounded(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the process did not end within {limit:?}");
        }
        sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_lost_lock_stops_the_command() {
    let db = Db::new();
    let url = db.url_with("lease=300ms");
    let mut holder = polylock()
        .args(["--url", &url, "run", "--lock", "job", "--", "sleep", "30"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the holder has the lock", Duration::from_secs(10), || db.is_held(&url));
    // Someone deletes the lock row behind the holder's back.
    let outsider = rusqlite::Connection::open(db.path("locks.db")).unwrap();
    outsider.busy_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(outsider.execute("DELETE FROM polylock_locks WHERE name = 'job'", []).unwrap(), 1);
    let started = Instant::now();
    let status = holder.wait().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(status.code(), Some(128 + 15), "the command should have been sent SIGTERM");
    let mut stderr = String::new();
    std::io::Read::read_to_string(holder.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("lost lock 'job'"), "{stderr}");
}

#[test]
fn usage_errors_and_missing_commands() {
    let db = Db::new();
    let cases: &[(&[&str], i32, &str)] = &[
        (&["run", "--lock", "", "--", "true"], 64, "must not be empty"),
        (&["run", "--lock", "x", "--lease", "0", "--", "true"], 64, "lease must be between 10ms and 365 days"),
        (&["run", "--lock", "x", "--wait", "soon", "--", "true"], 64, "not a duration"),
        (&["run", "--lock", "x", "--kind", "fair", "--", "true"], 64, "does not offer fair locks"),
        (&["run", "--lock", "x"], 64, "CMD"),
        (&["run", "--lock", "x", "--", "/no/such/program"], 127, "cannot run '/no/such/program'"),
        (&["--url", "bogus://h", "run", "--lock", "x", "--", "true"], 64, "unknown URL scheme"),
        (
            &["--url", "sqlite:///no/such/dir/x.db", "run", "--lock", "x", "--", "true"],
            69,
            "cannot use sqlite database",
        ),
        (&["id", "parse", "12ab"], 64, "not an ID"),
        (&["id", "snowflake", "--worker", "1024"], 64, "does not fit"),
    ];
    for (args, code, needle) in cases {
        let mut cmd = polylock();
        if args[0] != "--url" {
            cmd.args(["--url", &db.url()]);
        }
        let out = cmd.args(*args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

#[test]
fn snowflake_ids_are_unique_increasing_and_parse_back() {
    let out = polylock().args(["id", "snowflake", "--worker", "5", "--count", "20000"]).output().unwrap();
    assert!(out.status.success());
    let ids: Vec<u64> = String::from_utf8_lossy(&out.stdout).lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(ids.len(), 20000);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len());
    let out = polylock().args(["id", "parse", &ids[0].to_string()]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("worker:    5"), "{text}");
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let ts: u64 =
        text.lines().find(|l| l.starts_with("timestamp:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(now_ms.abs_diff(ts) < 60_000, "timestamp {ts} is not now ({now_ms})");
}

#[test]
fn uuid7s_and_ulids_are_unique_and_increasing_as_text() {
    for (kind, length) in [("uuid7", 36), ("ulid", 26)] {
        let out = polylock().args(["id", kind, "--count", "20000"]).output().unwrap();
        assert!(out.status.success(), "{kind}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let ids: Vec<&str> = text.lines().collect();
        assert_eq!(ids.len(), 20000, "{kind}");
        assert!(ids.iter().all(|id| id.len() == length), "{kind}: {}", ids[0]);
        assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{kind}: not increasing");
    }
    let out = polylock().args(["id", "uuid7"]).output().unwrap();
    let uuid = String::from_utf8(out.stdout).unwrap();
    assert_eq!(&uuid[14..15], "7", "version nibble: {uuid}");
}
