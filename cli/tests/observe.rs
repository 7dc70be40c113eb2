//! `-v`/`--log-level`/`--log-format` and the metrics page (`serve-metrics`,
//! `--metrics-listen`), as separate OS processes on the embedded default.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::polylock;

fn sqlite_url(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}/locks.db", dir.path().display())
}

/// The JSON objects of stderr, one a line; panics on a line that is not one.
fn json_lines(stderr: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}")))
        .collect()
}

#[test]
fn v_with_json_prints_one_json_object_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    let out = polylock()
        .args(["-v", "--log-format", "json", "--url", &url, "run", "--lock", "job", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = json_lines(&out.stderr);
    let connect = lines.iter().find(|l| l["op"] == "connect").expect("a connect event");
    assert_eq!(connect["level"], "INFO");
    assert_eq!(connect["backend"], "sqlite");
    assert!(connect["url"].as_str().unwrap().starts_with("sqlite://"));
    assert!(connect["timestamp"].is_string());
    // -v is info: the per-acquisition events are debug.
    assert!(!lines.iter().any(|l| l["op"] == "acquire"), "{lines:#?}");

    let out = polylock()
        .args(["-vv", "--log-format", "json", "--url", &url, "run", "--lock", "job", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let lines = json_lines(&out.stderr);
    let acquire = lines.iter().find(|l| l["op"] == "acquire").expect("an acquire event at -vv");
    assert_eq!(acquire["name"], "job");
    assert_eq!(acquire["outcome"], "acquired");
    assert_eq!(acquire["kind"], "reentrant");
    assert!(acquire["wait_ms"].is_number() && acquire["token"].is_number(), "{acquire}");
    let release = lines.iter().find(|l| l["op"] == "release").expect("a release event");
    assert_eq!(release["outcome"], "released");
}

#[test]
fn a_newline_in_a_lock_name_cannot_forge_a_text_log_line() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    let out = polylock()
        .args(["-vv", "--url", &url, "run", "--lock", "job\nINFO forged=1\r\u{1b}[2J", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.lines().any(|l| l.contains("op=") && l.contains("job\\nINFO forged=1")), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("INFO forged")), "{text}");
    assert!(!text.contains(['\r', '\u{1b}']), "{text:?}");
}

#[test]
fn logging_is_off_by_default_and_log_level_picks_text() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    let out = polylock()
        .env_remove("POLYLOCK_LOG")
        .args(["--url", &url, "run", "--lock", "job", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));

    let out = polylock()
        .args(["--url", &url, "run", "--log-level", "debug", "--lock", "job", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.lines().any(|l| l.contains("DEBUG") && l.contains("acquired") && l.contains("name=job")), "{text}");

    // A lock that is not free within --wait: the same status as before, and its event.
    let holder = polylock()
        .args(["--url", &url, "run", "--lock", "busy", "--", "sleep", "3"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut holder = Kill(holder);
    std::thread::sleep(Duration::from_millis(500));
    let out = polylock()
        .args(["-vv", "--url", &url, "run", "--lock", "busy", "--wait", "50ms", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(75));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("outcome=\"timeout\"") || text.contains("outcome=timeout"), "{text}");
    let _ = holder.0.wait();
    holder.0.kill().ok();

    let out = polylock().args(["--log-level", "loud", "--url", &url, "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(64), "a bad level is a usage error");
}

/// A child killed when the test ends, however it ends.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` on `addr`: the status line and the body.
fn get(addr: &str, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/plain\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

/// The value of the sample `name{labels}` in a scrape, if there is one.
fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The address a child announced on stderr ("serving metrics on http://ADDR/metrics").
fn announced(child: &mut Child) -> String {
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.strip_suffix("/metrics\n"))
        .unwrap_or_else(|| panic!("{line}"));
    addr.to_string()
}

/// Connections are bounded (64 at once): idle ones past the bound are closed at once, not
/// kept for the five seconds a request head may take, and a scrape works again once the idle
/// ones are gone.
#[test]
fn serve_metrics_bounds_its_connections() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    let child = polylock()
        .args(["--url", &url, "serve-metrics", "--listen", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Kill(child);
    let addr = announced(&mut child.0);
    let idle: Vec<TcpStream> = (0..64 + 16).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let mut closed = 0;
    for mut stream in &idle {
        stream.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let mut byte = [0u8; 1];
        if matches!(stream.read(&mut byte), Ok(0)) {
            closed += 1;
        }
    }
    assert!(closed >= 16, "{closed} of {} idle connections closed at once", idle.len());
    assert!(started.elapsed() < Duration::from_secs(4));
    drop(idle);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(get(&addr, "/metrics").0, "HTTP/1.1 200 OK");
}

#[test]
fn serve_metrics_answers_a_scrape_with_its_probes() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    let child = polylock()
        .args(["--url", &url, "serve-metrics", "--listen", "127.0.0.1:0", "--probe", "probe", "--every", "50ms"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Kill(child);
    let addr = announced(&mut child.0);
    let acquired = "polylock_acquires_total{backend=\"sqlite\",kind=\"reentrant\",outcome=\"acquired\"}";
    let deadline = Instant::now() + Duration::from_secs(10);
    let body = loop {
        let (status, body) = get(&addr, "/metrics");
        assert_eq!(status, "HTTP/1.1 200 OK");
        if sample(&body, acquired).is_some_and(|n| n >= 3.0) {
            break body;
        }
        assert!(Instant::now() < deadline, "no three probes in 10 s:\n{body}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let releases = sample(&body, "polylock_releases_total{backend=\"sqlite\",kind=\"reentrant\"}").unwrap();
    assert!(releases >= 2.0, "{body}");
    assert_eq!(sample(&body, "polylock_connects_total{backend=\"sqlite\"}"), Some(1.0));
    let count = sample(&body, "polylock_acquire_wait_seconds_count{backend=\"sqlite\",kind=\"reentrant\"}").unwrap();
    let inf = sample(&body, "polylock_acquire_wait_seconds_bucket{backend=\"sqlite\",kind=\"reentrant\",le=\"+Inf\"}");
    assert_eq!(inf, Some(count), "the +Inf bucket counts every observation");
    assert!(body.contains("# TYPE polylock_acquire_wait_seconds histogram"));
    assert!(get(&addr, "/other").0.starts_with("HTTP/1.1 404"));
    // SIGTERM ends it with status 0.
    unsafe { libc::kill(child.0.id() as libc::pid_t, libc::SIGTERM) };
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn metrics_listen_serves_the_counts_of_a_run_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    let child = polylock()
        .args(["--metrics-listen", "127.0.0.1:0", "--url", &url, "run", "--lock", "job", "--", "sleep", "3"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Kill(child);
    let addr = announced(&mut child.0);
    let acquired = "polylock_acquires_total{backend=\"sqlite\",kind=\"reentrant\",outcome=\"acquired\"}";
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = get(&addr, "/metrics");
        assert_eq!(status, "HTTP/1.1 200 OK");
        if sample(&body, acquired) == Some(1.0) {
            assert_eq!(sample(&body, "polylock_releases_total{backend=\"sqlite\",kind=\"reentrant\"}"), Some(0.0));
            break;
        }
        assert!(Instant::now() < deadline, "the run's acquisition never showed:\n{body}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(child.0.wait().unwrap().code(), Some(0), "the run's own status is kept");

    // An address already taken: the service is unavailable (69), nothing is run.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let marker = dir.path().join("ran");
    let out = polylock()
        .args(["--metrics-listen", &addr, "--url", &url, "run", "--lock", "job", "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(69), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!marker.exists());
    let out = polylock().args(["--url", &url, "serve-metrics", "--listen", &addr]).output().unwrap();
    assert_eq!(out.status.code(), Some(69));
}
