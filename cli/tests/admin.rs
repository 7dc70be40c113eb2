//! `polylock status`, `unlock --force` and `list` on every backend, against a lock held by
//! another process (a `polylock run` child): what status shows free and held, the `--json`
//! fields, a forced unlock that frees the lock and makes the holder learn it lost it, a
//! listing by prefix, and the refusal to force-unlock without --yes off a terminal.

use std::process::{Child, Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::common::polylock;

fn env_url(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_string())
}

/// A unique lock name prefix, since other suites share the servers.
fn unique(backend: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("ops-admin-{backend}-{}-{nanos}", std::process::id())
}

fn run(url: &str, args: &[&str]) -> Output {
    polylock().arg("--url").arg(url).args(args).stdin(Stdio::null()).output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The value of `"field":` in a one-line JSON object, as written (a number, null, a string).
fn json_field<'a>(json: &'a str, field: &str) -> &'a str {
    let start = json.find(&format!("\"{field}\":")).unwrap_or_else(|| panic!("no {field} in {json}")) + field.len() + 3;
    let rest = &json[start..];
    let end = if let Some(quoted) = rest.strip_prefix('"') {
        quoted.find('"').unwrap() + 2
    } else {
        rest.find([',', '}']).unwrap()
    };
    &rest[..end]
}

fn status_json(url: &str, name: &str, kind: Option<&str>) -> String {
    let mut args = vec!["status", name, "--json"];
    if let Some(kind) = kind {
        args.extend(["--kind", kind]);
    }
    let out = run(url, &args);
    assert!(out.status.success(), "status {name}: {}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    stdout(&out)
}

/// A `polylock run` child holding `name` for long, under a short watchdog lease so that it
/// learns of a forced unlock within a renewal.
fn holder(url: &str, name: &str, kind: Option<&str>) -> Child {
    let mut cmd = polylock();
    cmd.args(["--url", url, "run", "--lock", name]);
    if let Some(kind) = kind {
        cmd.args(["--kind", kind]);
    }
    cmd.args(["--", "sleep", "60"]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap()
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "timed out waiting until {what}");
        sleep(Duration::from_millis(50));
    }
}

fn with_lease(url: &str, lease: &str) -> String {
    let joiner = if url.contains('?') { '&' } else { '?' };
    format!("{url}{joiner}lease={lease}")
}

/// The whole admin story on one backend and kind.
fn admin_story(url: &str, backend: &str, kind: Option<&str>, lists: bool) {
    let prefix = unique(backend);
    let name = format!("{prefix}-held");
    let held_url = with_lease(url, "600ms");

    // Free: held false, every optional field null or absent.
    let free = status_json(url, &name, kind);
    assert_eq!(json_field(&free, "name"), format!("\"{name}\""), "{free}");
    assert_eq!(json_field(&free, "held"), "false", "{free}");
    assert_eq!(json_field(&free, "holder"), "null", "{free}");
    assert_eq!(json_field(&free, "remaining_lease_ms"), "null", "{free}");
    let text = stdout(&run(url, &["status", &name]));
    assert!(text.contains("held:") && text.contains("no"), "{text}");

    // Held by another process.
    let mut child = holder(&held_url, &name, kind);
    wait_until("the child holds the lock", Duration::from_secs(20), || {
        json_field(&status_json(url, &name, kind), "held") == "true"
    });
    let held = status_json(url, &name, kind);
    assert!(json_field(&held, "holder").starts_with('"'), "{held}");
    for field in ["fencing_token", "remaining_lease_ms", "waiters", "token_counter"] {
        let value = json_field(&held, field);
        assert!(value == "null" || value.parse::<u64>().is_ok(), "{field}: {held}");
    }
    match backend {
        "sqlite" | "etcd" | "zookeeper" => {
            assert!(json_field(&held, "fencing_token").parse::<u64>().unwrap() > 0, "{held}")
        }
        _ => {}
    }
    match (backend, kind) {
        ("sqlite", _) | ("redis", _) | ("postgres" | "mariadb", Some("lease")) => {
            let left: u64 = json_field(&held, "remaining_lease_ms").parse().unwrap();
            assert!(left > 0 && left <= 600, "{held}");
        }
        ("etcd", _) => assert!(json_field(&held, "remaining_lease_ms").parse::<u64>().unwrap() > 0, "{held}"),
        _ => {}
    }
    let mut text_args = vec!["status", name.as_str()];
    if let Some(kind) = kind {
        text_args.extend(["--kind", kind]);
    }
    let text = stdout(&run(url, &text_args));
    assert!(text.contains("yes") && text.contains("holder:"), "{text}");

    if lists {
        let listed = run(url, &["list", "--prefix", &prefix]);
        assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
        assert_eq!(stdout(&listed).lines().count(), 1, "{}", stdout(&listed));
        assert!(stdout(&listed).starts_with(&format!("{name}\t")), "{}", stdout(&listed));
        let json = stdout(&run(url, &["list", "--prefix", &prefix, "--json"]));
        assert!(json.contains(&format!("\"name\":\"{name}\"")) && json.contains("\"held\":true"), "{json}");
        let none = stdout(&run(url, &["list", "--prefix", &format!("{prefix}-nothing")]));
        assert!(none.is_empty(), "{none}");
    }

    // Without --yes and with no terminal: refused, still held.
    let mut args = vec!["unlock", "--force", name.as_str()];
    if let Some(kind) = kind {
        args.extend(["--kind", kind]);
    }
    let refused = run(url, &args);
    assert_eq!(refused.status.code(), Some(64), "{}", String::from_utf8_lossy(&refused.stderr));
    assert_eq!(json_field(&status_json(url, &name, kind), "held"), "true");

    // Forced: the lock is free (or taken by nobody else) and the holder learns it lost it.
    args.push("--yes");
    let forced = run(url, &args);
    assert!(forced.status.success(), "{}{}", stdout(&forced), String::from_utf8_lossy(&forced.stderr));
    assert!(stdout(&forced).contains("unlocked"), "{}", stdout(&forced));
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("lost"), "the holder was not told: {status:?} {stderr}");
    assert_eq!(json_field(&status_json(url, &name, kind), "held"), "false");
    let again = run(url, &args);
    assert!(stdout(&again).contains("was not held"), "{}", stdout(&again));
}

#[test]
fn sqlite_status_unlock_and_list() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/locks.db", dir.path().display());
    admin_story(&url, "sqlite", None, true);
}

#[test]
fn redis_status_unlock_and_list() {
    if crate::common::servers_off() {
        return;
    }
    let url = env_url("POLYLOCK_TEST_REDIS_URL", "redis://127.0.0.1:16379");
    admin_story(&url, "redis", None, true);
    admin_story(&url, "redis", Some("token"), false);
}

#[test]
fn etcd_status_unlock_and_list() {
    if crate::common::servers_off() {
        return;
    }
    let url = env_url("POLYLOCK_TEST_ETCD_URL", "etcd://127.0.0.1:12379");
    admin_story(&url, "etcd", None, true);
}

#[test]
fn zookeeper_status_unlock_and_list() {
    if crate::common::servers_off() {
        return;
    }
    let url = env_url("POLYLOCK_TEST_ZOOKEEPER_URL", "zk://127.0.0.1:12181");
    admin_story(&url, "zookeeper", None, true);
}

#[test]
fn postgres_status_unlock_and_list() {
    if crate::common::servers_off() {
        return;
    }
    let url = env_url("POLYLOCK_TEST_POSTGRES_URL", "postgres://polylock:polylock@127.0.0.1:15432/polylock");
    admin_story(&url, "postgres", Some("lease"), true);
    session_lock_status(&url, "postgres");
}

#[test]
fn mariadb_status_unlock_and_list() {
    if crate::common::servers_off() {
        return;
    }
    let url = env_url("POLYLOCK_TEST_MARIADB_URL", "mysql://polylock:polylock@127.0.0.1:13306/polylock");
    admin_story(&url, "mariadb", Some("lease"), true);
    session_lock_status(&url, "mariadb");
}

/// SQL session locks: status shows the holding connection; a forced unlock is refused
/// (only the session holding one can release it), so the child is stopped by hand.
fn session_lock_status(url: &str, backend: &str) {
    let name = format!("{}-session", unique(backend));
    assert_eq!(json_field(&status_json(url, &name, None), "held"), "false");
    let mut child = holder(url, &name, None);
    wait_until("the child holds the session lock", Duration::from_secs(20), || {
        json_field(&status_json(url, &name, None), "held") == "true"
    });
    let held = status_json(url, &name, None);
    assert!(json_field(&held, "holder").contains(if backend == "postgres" { "pid" } else { "connection" }), "{held}");
    let refused = run(url, &["unlock", "--force", &name, "--yes"]);
    // Unsupported for that kind: a usage error, not a failure of the backend.
    assert_eq!(refused.status.code(), Some(64), "{}", String::from_utf8_lossy(&refused.stderr));
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let _ = child.wait();
}

#[test]
fn a_bad_kind_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/locks.db", dir.path().display());
    let out = run(&url, &["status", "x", "--kind", "fair"]);
    assert_eq!(out.status.code(), Some(64), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&url, &["unlock", "x", "--yes"]);
    assert_eq!(out.status.code(), Some(64), "unlock needs --force: {}", String::from_utf8_lossy(&out.stderr));
}
