//! What is particular to the PostgreSQL and MySQL/MariaDB backends (the shared contract is in
//! lock_contract.rs): the documented name mapping, computed by the databases themselves;
//! killed sessions; bad connection input. Needs `tests/services/services.sh start postgres mariadb`.

use std::time::Duration;

use crate::common;
use common::{mariadb_url, postgres_url};
use polylock::{sql_names, AcquireOptions, Client, ErrorKind, LostReason};
use sqlx::Row;
use tokio::time::timeout;

fn unique(name: &str) -> String {
    format!("sqltest-{}-{name}", std::process::id())
}

async fn pg_admin() -> sqlx::PgPool {
    sqlx::PgPool::connect(&postgres_url()).await.expect("postgres (tests/services/services.sh start postgres)")
}

async fn my_admin() -> sqlx::MySqlPool {
    sqlx::MySqlPool::connect(&mariadb_url()).await.expect("mariadb (tests/services/services.sh start mariadb)")
}

/// The advisory key PostgreSQL computes itself from the documented rule, and the key it shows
/// in pg_locks for the lock polylock holds, are the key `sql_names` documents.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_advisory_keys_follow_the_documented_hash() {
    if common::servers_off() {
        return;
    }
    let admin = pg_admin().await;
    let client = Client::connect(&postgres_url()).await.unwrap();
    for name in [unique("orders:42"), unique("Ünïcode ✓"), unique(&"long".repeat(100))] {
        let by_sql: i64 = sqlx::query_scalar(
            "SELECT ('x' || substr(encode(sha256(convert_to($1, 'UTF8')), 'hex'), 1, 16))::bit(64)::bigint",
        )
        .bind(&name)
        .fetch_one(&admin)
        .await
        .unwrap();
        assert_eq!(sql_names::postgres_advisory_key(&name), by_sql, "{name}");
        let guard = client.lock(&name).unwrap().acquire().await.unwrap();
        let held: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
             AND ((classid::bigint << 32) | objid::bigint) = ($1::bigint & x'ffffffffffffffff'::bigint)",
        )
        .bind(by_sql)
        .fetch_one(&admin)
        .await
        .unwrap();
        assert_eq!(held, 1, "{name}: no advisory lock under the documented key");
        guard.release().await.unwrap();
    }
    // A fixed vector, so other languages can check their implementation against it.
    assert_eq!(sql_names::postgres_advisory_key("orders:42"), i64::from_be_bytes(sha256_first8("orders:42")));
}

fn sha256_first8(text: &str) -> [u8; 8] {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(text.as_bytes());
    digest[..8].try_into().unwrap()
}

/// MariaDB sees the lock under the documented GET_LOCK name: verbatim for short lowercase
/// names, `polylock:` + 48 hex digits of SHA-256 otherwise (computed here by SHA2()).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_lock_names_follow_the_documented_rule() {
    if common::servers_off() {
        return;
    }
    let admin = my_admin().await;
    let client = Client::connect(&mariadb_url()).await.unwrap();
    for name in [unique("orders:42"), unique("Orders:42"), unique(&"x".repeat(80))] {
        let by_sql: String = sqlx::query_scalar(
            "SELECT IF(CHAR_LENGTH(?) <= 64 AND BINARY LOWER(?) = BINARY ?, ?, CONCAT('polylock:', LEFT(SHA2(?, 256), 48)))",
        )
        .bind(&name)
        .bind(&name)
        .bind(&name)
        .bind(&name)
        .bind(&name)
        .fetch_one(&admin)
        .await
        .unwrap();
        assert_eq!(sql_names::mysql_lock_name(&name), by_sql, "{name}");
        let guard = client.lock(&name).unwrap().acquire().await.unwrap();
        let used: Option<i64> =
            sqlx::query_scalar("SELECT IS_USED_LOCK(?)").bind(&by_sql).fetch_one(&admin).await.unwrap();
        assert!(used.is_some(), "{name}: GET_LOCK name {by_sql} is not held");
        guard.release().await.unwrap();
        let used: Option<i64> =
            sqlx::query_scalar("SELECT IS_USED_LOCK(?)").bind(&by_sql).fetch_one(&admin).await.unwrap();
        assert!(used.is_none(), "{name}: still held after release");
    }
    assert_eq!(sql_names::lease_name("Orders:42"), "Orders:42");
}

/// Killing the holder's session: its guard reports lost, and a waiter in another client
/// gets the lock with a greater fencing token.
async fn killed_session_is_lost<F: std::future::Future<Output = ()>>(url: &str, kill: impl FnOnce(String) -> F) {
    let url = format!("{url}?session_check=100ms");
    let name = unique(&format!("killed-{}", url.len()));
    let holder = Client::connect(&url).await.unwrap();
    let waiter = Client::connect(&url).await.unwrap();
    let guard = holder.lock(&name).unwrap().acquire().await.unwrap();
    let waiting = {
        let lock = waiter.lock(&name).unwrap();
        tokio::spawn(async move { lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(10))).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "the waiter got a held lock");
    kill(name.clone()).await;
    let reason = timeout(Duration::from_secs(3), guard.lost()).await.expect("the guard never learned it was lost");
    assert!(matches!(reason, LostReason::SessionEnded(_)), "{reason:?}");
    let theirs = timeout(Duration::from_secs(5), waiting).await.unwrap().unwrap().unwrap();
    assert!(theirs.fencing_token() > guard.fencing_token());
    assert_eq!(guard.release().await.unwrap_err().kind(), ErrorKind::Lost);
    theirs.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_terminate_backend_marks_the_guard_lost() {
    if common::servers_off() {
        return;
    }
    let admin = pg_admin().await;
    killed_session_is_lost(&postgres_url(), |name| async move {
        let key = sql_names::postgres_advisory_key(&name);
        let killed: i64 = sqlx::query_scalar(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND granted
             AND ((classid::bigint << 32) | objid::bigint) = ($1::bigint & x'ffffffffffffffff'::bigint)",
        )
        .bind(key)
        .fetch_one(&admin)
        .await
        .unwrap();
        assert_eq!(killed, 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_kill_marks_the_guard_lost() {
    if common::servers_off() {
        return;
    }
    let admin = my_admin().await;
    killed_session_is_lost(&mariadb_url(), |name| async move {
        let holder: Option<i64> = sqlx::query_scalar("SELECT IS_USED_LOCK(?)")
            .bind(sql_names::mysql_lock_name(&name))
            .fetch_one(&admin)
            .await
            .unwrap();
        sqlx::query(&format!("KILL {}", holder.expect("held"))).execute(&admin).await.unwrap();
    })
    .await;
}

/// Unreachable servers, wrong passwords and missing databases: a `Connection` error that
/// names the problem and never shows the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_connection_input_gets_typed_errors_without_the_password() {
    if common::servers_off() {
        return;
    }
    let secret = "Sup3r-s3cret-pw";
    let cases = [
        (format!("postgres://polylock:{secret}@127.0.0.1:1/polylock?connect_timeout=3s"), "cannot reach"),
        (format!("mysql://polylock:{secret}@127.0.0.1:1/polylock?connect_timeout=3s"), "cannot reach"),
        (format!("postgres://polylock:{secret}@127.0.0.1:15432/polylock"), "password"),
        (format!("mariadb://polylock:{secret}@127.0.0.1:13306/polylock"), "password"),
        ("postgres://polylock:polylock@127.0.0.1:15432/no_such_db".to_string(), "does not exist"),
        ("mysql://polylock:polylock@127.0.0.1:13306/no_such_db".to_string(), "does not exist"),
    ];
    for (url, says) in cases {
        let err = Client::connect(&url).await.unwrap_err();
        let text = err.to_string();
        assert_eq!(err.kind(), ErrorKind::Connection, "{url}: {text}");
        assert!(text.contains(says), "{text} should say '{says}'");
        assert!(!text.contains(secret), "the password leaked: {text}");
        assert!(!text.contains(":polylock@"), "the password leaked: {text}");
    }
    for url in [
        "postgres://polylock:polylock@127.0.0.1:15432/polylock?max_sessions=0",
        "postgres://polylock:polylock@127.0.0.1:15432/polylock?table=shed;drop",
        "mysql://polylock:polylock@127.0.0.1:13306/polylock?sslmod=require",
        "mysql:///polylock",
    ] {
        let err = Client::connect(url).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{url}: {err}");
        assert!(!err.to_string().contains(":polylock@"), "the password leaked: {err}");
    }
}

/// A lease lock is a ShedLock row: polylock writes the documented columns with the
/// database's clock, and a row written by ShedLock's SQL keeps polylock out until it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_locks_are_shedlock_rows() {
    if common::servers_off() {
        return;
    }
    let admin = pg_admin().await;
    let client = Client::connect(&postgres_url()).await.unwrap();
    let name = unique("shedlock-row");
    let guard = client.lock(&name).unwrap().with_kind(polylock::LockKind::Lease).unwrap().acquire().await.unwrap();
    let row = sqlx::query(
        "SELECT locked_by, extract(epoch FROM lock_until - timezone('utc', now()))::float8 FROM shedlock WHERE name = $1",
    )
    .bind(&name)
    .fetch_one(&admin)
    .await
    .unwrap();
    let (by, left): (String, f64) = (row.get(0), row.get(1));
    assert!(by.starts_with("polylock:"), "{by}");
    assert!(left > 20.0 && left <= 30.5, "lock_until is the 30s watchdog lease from the db clock: {left}");
    guard.release().await.unwrap();
    // What ShedLock's PostgreSQL provider (usingDbTime) writes for a 2 s lockAtMostFor.
    sqlx::query(
        "UPDATE shedlock SET lock_until = timezone('utc', CURRENT_TIMESTAMP) + interval '2 seconds',
         locked_at = timezone('utc', CURRENT_TIMESTAMP), locked_by = 'java-host' WHERE name = $1",
    )
    .bind(&name)
    .execute(&admin)
    .await
    .unwrap();
    let lock = client.lock(&name).unwrap().with_kind(polylock::LockKind::Lease).unwrap();
    assert!(lock.try_acquire().await.unwrap().is_none(), "a ShedLock holder must keep polylock out");
    let started = std::time::Instant::now();
    let guard = lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(5))).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(1500), "taken before ShedLock's lock_until");
    guard.release().await.unwrap();
}

/// The throwaway CA tests/services made for a service's TLS certificate.
fn service_ca(service: &str) -> String {
    let var = format!("POLYLOCK_TEST_{}_CA", service.to_uppercase());
    std::env::var(var).unwrap_or_else(|_| {
        let dir = std::env::var("POLYLOCK_SERVICES_DIR").unwrap_or_else(|_| "/tmp/polylock-services".to_string());
        format!("{dir}/{service}/ca.crt")
    })
}

/// A CA that signed nothing the test servers use (its key was thrown away): a wrong CA.
const UNRELATED_CA: &str = "-----BEGIN CERTIFICATE-----
MIIBsTCCAVegAwIBAgIUZk9PKzokuEPxGxkxbg1vCZq+9uIwCgYIKoZIzj0EAwIw
JTEjMCEGA1UEAwwacG9seWxvY2sgdW5yZWxhdGVkIHRlc3QgQ0EwIBcNMjYxMTIy
MjAyMDQ4WhgPMjEyNjEwMjkyMDIwNDhaMCUxIzAhBgNVBAMMGnBvbHlsb2NrIHVu
cmVsYXRlZCB0ZXN0IENBMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE5Lksnp59
nCnt/jAbOzs5lLwwRfNA5QNv9Wbs0HEgyjAS5vM4+q4bLFtXDs45sIhoI6uDw21I
6pHWMs1ny1wc0KNjMGEwHQYDVR0OBBYEFPUz/C/AW43RhCnfGP6CV+ty8DeqMB8G
A1UdIwQYMBaAFPUz/C/AW43RhCnfGP6CV+ty8DeqMA8GA1UdEwEB/wQFMAMBAf8w
DgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMCA0gAMEUCIET8gy/S/dS96oiSSZw0
KtGyAkcLcGcIyePRjxrOJEnGAiEAyl0WsuUboNngZO8FNt1lNpXXS2NaPI/WcLo0
3ETy688=
-----END CERTIFICATE-----\n";

fn unrelated_ca_file() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("unrelated-ca.crt");
    std::fs::write(&path, UNRELATED_CA).unwrap();
    let path = path.display().to_string();
    (dir, path)
}

fn with_options(url: &str, options: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{options}")
}

/// Over a verified TLS connection, a lock is taken, a second client waits for it and gets
/// it when it is released.
async fn lock_and_wait_over(url: &str) {
    let name = unique(&format!("tls-{}", url.len()));
    let a = Client::connect(url).await.unwrap_or_else(|e| panic!("{e}"));
    let b = Client::connect(url).await.unwrap();
    let guard = a.lock(&name).unwrap().acquire().await.unwrap();
    let waiting = {
        let lock = b.lock(&name).unwrap();
        tokio::spawn(async move { lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(10))).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "{url}: the waiter got a held lock");
    let token = guard.fencing_token();
    guard.release().await.unwrap();
    let theirs = timeout(Duration::from_secs(5), waiting).await.unwrap().unwrap().unwrap();
    assert!(theirs.fencing_token() > token);
    theirs.release().await.unwrap();
}

/// Asserts a TLS failure: a `Connection` error that says TLS and never shows the password.
async fn tls_refused(url: &str) {
    let err = Client::connect(url).await.unwrap_err();
    let text = err.to_string();
    assert_eq!(err.kind(), ErrorKind::Connection, "{text}");
    assert!(text.contains("TLS"), "{text} should name TLS");
    assert!(!text.contains(":polylock@"), "the password leaked: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_tls_modes_verify_as_they_say() {
    if common::servers_off() {
        return;
    }
    let (ours, (_dir, other)) = (service_ca("postgres"), unrelated_ca_file());
    // The server's certificate names 127.0.0.1, so verify-full checks the chain and the host.
    lock_and_wait_over(&with_options(&postgres_url(), &format!("sslmode=verify-full&sslrootcert={ours}"))).await;
    // require encrypts without checking the certificate: no CA needed.
    lock_and_wait_over(&with_options(&postgres_url(), "sslmode=require")).await;
    // verify-full with a CA that did not sign the server's certificate, or with none (the
    // public roots do not know a private CA), is refused.
    tls_refused(&with_options(&postgres_url(), &format!("sslmode=verify-full&sslrootcert={other}"))).await;
    tls_refused(&with_options(&postgres_url(), "sslmode=verify-full")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_tls_modes_verify_as_they_say() {
    if common::servers_off() {
        return;
    }
    let (ours, (_dir, other)) = (service_ca("mariadb"), unrelated_ca_file());
    lock_and_wait_over(&with_options(&mariadb_url(), &format!("ssl-mode=VERIFY_CA&ssl-ca={ours}"))).await;
    lock_and_wait_over(&with_options(&mariadb_url(), &format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={ours}"))).await;
    lock_and_wait_over(&with_options(&mariadb_url(), "ssl-mode=REQUIRED")).await;
    tls_refused(&with_options(&mariadb_url(), &format!("ssl-mode=VERIFY_CA&ssl-ca={other}"))).await;
    tls_refused(&with_options(&mariadb_url(), "ssl-mode=VERIFY_CA")).await;
}

/// Issue 35: the semaphore `x` takes its permits as the session locks `x#0`, `x#1`, .. through
/// the mutex's name mapping, so the mutex `x#0` was slot 0 of the semaphore `x`: holding one
/// blocked the other. Names ending in `#` and digits (and the hashed form `polylock:<48 hex>`)
/// are refused on PostgreSQL and MySQL now, on every primitive, naming the character.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_that_is_a_semaphore_slot_or_a_hashed_name_is_refused() {
    if common::servers_off() {
        return;
    }
    for url in [postgres_url(), mariadb_url()] {
        let client = Client::connect(&url).await.unwrap();
        let name = unique("slots");
        let permit = client.semaphore(&name, 1).unwrap().acquire().await.unwrap();
        let slot = format!("{name}#0");
        let err = client.lock(&slot).unwrap().try_acquire().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{url}: {err}");
        assert!(err.message().contains("'#'"), "{url}: {err}");
        let err = client.rw_lock(&slot).unwrap().write().try_acquire().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{url}: {err}");
        let err = client.semaphore(&slot, 2).unwrap().try_acquire().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{url}: {err}");
        let err = client.lock(&slot).unwrap().with_kind(polylock::LockKind::Lease).unwrap().try_acquire().await;
        assert_eq!(err.unwrap_err().kind(), ErrorKind::InvalidArgument, "{url}");
        let hashed = format!("polylock:{}", "0123456789abcdef".repeat(3));
        let err = client.lock(&hashed).unwrap().try_acquire().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{url}: {err}");
        // Other uses of '#' are ordinary names.
        let ordinary = client.lock(&format!("{name}#x")).unwrap().try_acquire().await.unwrap().expect("free");
        assert!(!permit.is_lost());
        ordinary.release().await.unwrap();
        permit.release().await.unwrap();
        client.close().await;
    }
}

// A paused holder of a session lock (issue 35 section 7): the holder runs in a child process
// (this test binary, `paused_session_holder_child`), which the test freezes with SIGSTOP.

const PAUSED_URL: &str = "POLYLOCK_SQL_PAUSED_HOLDER_URL";
const PAUSED_NAME: &str = "POLYLOCK_SQL_PAUSED_HOLDER_NAME";
/// The lease of both the paused holder and the waiter (`?lease=`, the watchdog's).
const PAUSE_LEASE: Duration = Duration::from_secs(3);

fn with_lease(url: &str, lease: Duration) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}lease={}ms", lease.as_millis())
}

fn signal(child: &std::process::Child, signal: &str) {
    let status = std::process::Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
    assert!(status.success(), "kill {signal}");
}

/// The child's next line that starts with `tag`, after `tag` (`None` if it ended first).
fn line_after(lines: &mut impl Iterator<Item = std::io::Result<String>>, tag: &str) -> Option<String> {
    lines.map_while(|line| line.ok()).find_map(|line| line.strip_prefix(tag).map(|rest| rest.trim().to_string()))
}

/// A holder whose process is paused keeps its connection open, so before the server limited
/// a holding session's silence the waiter was kept out for the whole pause (12 s here, for ever
/// if the pause never ends) although the holder's 3 s lease had long run out. Now the server
/// ends the silent session within the lease and a second (`idle_session_timeout` on
/// PostgreSQL 14+, `wait_timeout` on MySQL/MariaDB): the waiter gets the lock within the lease
/// plus 3 s of the pause, with a greater token, and the holder, resumed, is told it lost it.
async fn a_paused_holder_loses_its_session_lock(url: &str) {
    use std::io::BufRead;
    let backend = url.split("://").next().unwrap();
    let name = unique(&format!("paused-holder-{backend}"));
    let module = module_path!().split_once("::").map_or(module_path!(), |(_, rest)| rest);
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &format!("{module}::paused_session_holder_child"), "--ignored", "--nocapture"])
        .env(PAUSED_URL, with_lease(url, PAUSE_LEASE))
        .env(PAUSED_NAME, &name)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let holder_token: u64 = line_after(&mut lines, "HELD ").expect("the child never held the lock").parse().unwrap();
    // Past a check or two of the holder's session, so the pause falls anywhere between them.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    signal(&child, "-STOP");
    let paused = std::time::Instant::now();

    let waiter = Client::connect(&with_lease(url, PAUSE_LEASE)).await.unwrap();
    let pause = Duration::from_secs(12);
    let got = waiter.lock(&name).unwrap().acquire_with(AcquireOptions::default().wait(pause)).await;
    let waited = paused.elapsed();
    signal(&child, "-CONT");
    let resumed = std::time::Instant::now();
    let guard = match got {
        Ok(guard) => guard,
        Err(err) => {
            let _ = child.kill();
            panic!("{backend}: the waiter was kept out for the whole {pause:?} pause ({waited:?}): {err}");
        }
    };
    eprintln!("{backend}: the waiter got the lock {waited:?} after the holder's pause (lease {PAUSE_LEASE:?})");
    assert!(
        waited < PAUSE_LEASE + Duration::from_secs(3),
        "{backend}: the waiter got the lock only {waited:?} after the holder's pause (lease {PAUSE_LEASE:?})"
    );
    assert!(
        waited >= PAUSE_LEASE * 2 / 3,
        "{backend}: the lock was free {waited:?} after the pause, before the lease ran out"
    );
    assert!(guard.fencing_token() > holder_token, "{backend}: token {} after {holder_token}", guard.fencing_token());

    let lost = line_after(&mut lines, "LOST ").expect("the resumed holder never said it lost the lock");
    eprintln!("{backend}: the resumed holder was told {:?} after SIGCONT: {lost}", resumed.elapsed());
    assert!(
        resumed.elapsed() < Duration::from_secs(3),
        "{backend}: the holder heard of its loss {:?} late",
        resumed.elapsed()
    );
    assert!(child.wait().unwrap().success(), "{backend}: the holder's process failed");
    // The holder's failed release disturbed nothing: the waiter still holds, and gives back.
    assert!(!guard.is_lost(), "{backend}: the waiter's hold was lost");
    assert!(waiter.lock(&name).unwrap().is_locked().await.unwrap(), "{backend}: the lock was freed under the waiter");
    guard.release().await.unwrap();
    waiter.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_paused_holder_loses_its_session_lock_within_its_lease() {
    if common::servers_off() {
        return;
    }
    a_paused_holder_loses_its_session_lock(&postgres_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_a_paused_holder_loses_its_session_lock_within_its_lease() {
    if common::servers_off() {
        return;
    }
    a_paused_holder_loses_its_session_lock(&mariadb_url()).await;
}

/// The holder of the tests above (run by them as a child process; ignored when run directly):
/// holds the session lock, then says how it learnt it lost it, and releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_paused_holder_loses_its_session_lock as its child process"]
async fn paused_session_holder_child() {
    let url = std::env::var(PAUSED_URL).expect("run by a_paused_holder_loses_its_session_lock");
    let client = Client::connect(&url).await.unwrap();
    let guard = client.lock(&std::env::var(PAUSED_NAME).unwrap()).unwrap().acquire().await.unwrap();
    println!("HELD {}", guard.fencing_token());
    let reason = timeout(Duration::from_secs(60), guard.lost()).await.expect("the hold was never lost");
    println!("LOST {reason:?}");
    let released = guard.release().await;
    println!("RELEASED {released:?}");
    client.close().await;
}

/// The limit on a holding session's silence goes when the connection returns to its pool: a
/// connection that held a lock for a 1 s lease (a 2 s limit), then idled 3 s in the pool, is
/// the one that takes the next lock (the same server session), not one the server ended.
async fn a_released_session_idles_in_its_pool_unlimited(url: &str) {
    let backend = url.split("://").next().unwrap();
    let client = Client::connect(&with_lease(url, Duration::from_secs(1))).await.unwrap();
    let name = unique(&format!("pooled-{backend}"));
    let lock = client.lock(&name).unwrap();
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let guard = lock.acquire().await.unwrap();
        let session: i64 = if url.starts_with("postgres") {
            sqlx::query_scalar(
                "SELECT pid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
                 AND ((classid::bigint << 32) | objid::bigint) = ($1::bigint & x'ffffffffffffffff'::bigint)",
            )
            .bind(sql_names::postgres_advisory_key(&name))
            .fetch_one(&pg_admin().await)
            .await
            .unwrap()
        } else {
            sqlx::query_scalar("SELECT IS_USED_LOCK(?)")
                .bind(sql_names::mysql_lock_name(&name))
                .fetch_one(&my_admin().await)
                .await
                .unwrap()
        };
        sessions.push(session);
        guard.release().await.unwrap();
        if sessions.len() == 1 {
            tokio::time::sleep(Duration::from_secs(3)).await;
        }
    }
    assert_eq!(sessions[0], sessions[1], "{backend}: the pooled session was ended by the server while it idled");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_released_session_idles_in_its_pool_unlimited() {
    if common::servers_off() {
        return;
    }
    a_released_session_idles_in_its_pool_unlimited(&postgres_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_a_released_session_idles_in_its_pool_unlimited() {
    if common::servers_off() {
        return;
    }
    a_released_session_idles_in_its_pool_unlimited(&mariadb_url()).await;
}
