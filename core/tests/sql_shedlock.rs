//! ShedLock interop, both ways: the real ShedLock JDBC provider (tests/interop/shedlock, a
//! small Maven project run with `java`) and polylock lease locks on the same name exclude each
//! other, on PostgreSQL and MariaDB. Needs `mvn`, a JDK 17 and
//! `tests/services/services.sh start postgres mariadb`; Maven caches its downloads in ~/.m2.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common;
use common::{mariadb_url, postgres_url};
use polylock::{AcquireOptions, Client, LockKind};

/// `scheme://user:password@host:port/db` as (JDBC URL, user, password).
fn jdbc(url: &str, jdbc_scheme: &str) -> (String, String, String) {
    let rest = url.split_once("://").unwrap().1;
    let rest = rest.split('?').next().unwrap();
    let (userinfo, hostpath) = rest.rsplit_once('@').unwrap();
    let (user, password) = userinfo.split_once(':').unwrap();
    (format!("jdbc:{jdbc_scheme}://{hostpath}"), user.to_string(), password.to_string())
}

fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/shedlock")
}

/// Build the Java side once per test binary.
fn built() -> &'static str {
    static CLASSPATH: OnceLock<String> = OnceLock::new();
    CLASSPATH.get_or_init(|| {
        let status = Command::new("mvn")
            .args([
                "-q",
                "-B",
                "-Dstyle.color=never",
                "compile",
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
            ])
            .current_dir(project())
            .status()
            .expect("mvn must be installed for the ShedLock interop test");
        assert!(status.success(), "building tests/interop/shedlock failed");
        let dir = project();
        format!("{}:{}/target/dependency/*", dir.join("target/classes").display(), dir.display())
    })
}

fn shedlock(jdbc: &(String, String, String), name: &str, mode: &str) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new("java")
        .args(["-cp", built(), "io.polylock.interop.ShedLockCli", &jdbc.0, &jdbc.1, &jdbc.2, name, mode, "30000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("java must be installed for the ShedLock interop test");
    let out = BufReader::new(child.stdout.take().unwrap());
    (child, out)
}

fn line(out: &mut BufReader<ChildStdout>) -> String {
    let mut text = String::new();
    out.read_line(&mut text).unwrap();
    text.trim().to_string()
}

async fn java_try(jdbc: &(String, String, String), name: &str) -> String {
    let (jdbc, name) = (jdbc.clone(), name.to_string());
    tokio::task::spawn_blocking(move || {
        let (mut child, mut out) = shedlock(&jdbc, &name, "try");
        let answer = line(&mut out);
        child.wait().unwrap();
        answer
    })
    .await
    .unwrap()
}

async fn both_ways(url: &str, jdbc: (String, String, String)) {
    let client = Client::connect(url).await.unwrap(); // creates the shedlock table if missing
    let name = format!("interop-{}-{}", std::process::id(), url.len());
    let lock = client.lock(&name).unwrap().with_kind(LockKind::Lease).unwrap();

    // polylock holds: ShedLock stays out; once released, ShedLock gets it.
    let guard = lock.acquire().await.unwrap();
    assert_eq!(java_try(&jdbc, &name).await, "BUSY", "{url}: ShedLock took a lock polylock holds");
    guard.release().await.unwrap();
    assert_eq!(java_try(&jdbc, &name).await, "LOCKED", "{url}: ShedLock could not take a released lock");

    // ShedLock holds: polylock stays out, waits, and gets it once ShedLock unlocks.
    let (mut child, mut out) = {
        let (jdbc, name) = (jdbc.clone(), name.clone());
        tokio::task::spawn_blocking(move || {
            let (child, mut out) = shedlock(&jdbc, &name, "hold");
            assert_eq!(line(&mut out), "LOCKED");
            (child, out)
        })
        .await
        .unwrap()
    };
    assert!(lock.try_acquire().await.unwrap().is_none(), "{url}: polylock took a lock ShedLock holds");
    let waiter = {
        let lock = lock.clone();
        tokio::spawn(async move { lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(20))).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "{url}: polylock got the lock while ShedLock held it");
    let unlocked_at = tokio::task::spawn_blocking(move || {
        child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
        assert_eq!(line(&mut out), "UNLOCKED");
        let at = Instant::now();
        child.wait().unwrap();
        at
    })
    .await
    .unwrap();
    let guard = waiter.await.unwrap().unwrap();
    assert!(unlocked_at.elapsed() < Duration::from_secs(2), "{url}: the waiter took too long after the unlock");
    guard.release().await.unwrap();
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shedlock_and_polylock_exclude_each_other_on_postgres() {
    if common::servers_off() {
        return;
    }
    let url = postgres_url();
    both_ways(&url, jdbc(&url, "postgresql")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shedlock_and_polylock_exclude_each_other_on_mariadb() {
    if common::servers_off() {
        return;
    }
    let url = mariadb_url();
    both_ways(&url, jdbc(&url, "mariadb")).await;
}
