//! What several integration suites share: where the test servers of tests/services are, and
//! checks that hold for more than one backend.

pub mod redis_servers;

/// `$POLYLOCK_TEST_POSTGRES_URL`, else the `postgres` service's default.
pub fn postgres_url() -> String {
    std::env::var("POLYLOCK_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://polylock:polylock@127.0.0.1:15432/polylock".to_string())
}

/// `$POLYLOCK_TEST_MARIADB_URL`, else the `mariadb` service's default.
pub fn mariadb_url() -> String {
    std::env::var("POLYLOCK_TEST_MARIADB_URL")
        .unwrap_or_else(|_| "mysql://polylock:polylock@127.0.0.1:13306/polylock".to_string())
}

/// `$var`, else `default`: where a test server of tests/services is.
pub fn server_url(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_string())
}

/// Whether the server tier is on: `POLYLOCK_TEST_SERVERS=1`, which `tests/run-all.sh` sets
/// and `eval "$(tests/services/services.sh env)"` exports. Off (the default), the suites run
/// on `mem://` and SQLite only, so `cargo test -p polylock` passes on a machine without
/// servers; on, a server that is not there fails every test that needs it.
pub fn servers_on() -> bool {
    matches!(std::env::var("POLYLOCK_TEST_SERVERS").as_deref(), Ok("1" | "true" | "yes"))
}

/// The first line of a test that needs a server (or a server binary such as redis-server):
/// true, with a note on stderr, when the server tier is off and the test is to return.
pub fn servers_off() -> bool {
    if servers_on() {
        return false;
    }
    eprintln!("the server tier is off: set POLYLOCK_TEST_SERVERS=1 with tests/services running to run this test");
    true
}

/// Every backend's URL for a contract loop, fresh for each call: a private `mem://` store, a
/// new SQLite file in the returned directory (keep it alive while the URLs are used), and a
/// private namespace `<tag>-<pid>-<time>-<n>` on redis-server, PostgreSQL, MariaDB, etcd and
/// ZooKeeper when the server tier is on ([`servers_on`]). A server that is not there then
/// makes the test fail when it connects, never skip.
pub fn every_backend_urls(tag: &str) -> (Vec<String>, tempfile::TempDir) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    // The time keeps a rerun's namespaces apart from an earlier run's leftovers.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let private = format!("{tag}-{pid}-{nanos}-{n}");
    let dir = tempfile::tempdir().unwrap();
    let mut urls = vec![format!("mem://{private}"), format!("sqlite://{}/{tag}.db", dir.path().display())];
    if !servers_on() {
        return (urls, dir);
    }
    for server in [
        server_url("POLYLOCK_TEST_REDIS_URL", "redis://127.0.0.1:16379"),
        postgres_url(),
        mariadb_url(),
        server_url("POLYLOCK_TEST_ETCD_URL", "etcd://127.0.0.1:12379"),
        server_url("POLYLOCK_TEST_ZOOKEEPER_URL", "zk://127.0.0.1:12181"),
    ] {
        let sep = if server.contains('?') { '&' } else { '?' };
        urls.push(format!("{server}{sep}namespace={private}"));
    }
    (urls, dir)
}

/// The MariaDB service's second database, whose default character set is latin1.
pub fn mariadb_latin1_url() -> String {
    let url = mariadb_url();
    let (server, _database) = url.rsplit_once('/').expect("a database in the MariaDB URL");
    format!("{server}/polylock_latin1")
}

/// Local handoffs are bounded: a client whose four owners keep `name` busy between themselves
/// (1 ms holds) still lets another client's waiter in within `wait`.
pub async fn a_busy_client_does_not_starve_another_clients_waiter(
    url: &str,
    name: &str,
    kind: polylock::LockKind,
    wait: std::time::Duration,
) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    let busy = polylock::Client::connect(url).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (lock, stop) = (busy.lock(name).unwrap().with_kind(kind).unwrap(), stop.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let guard = lock.acquire().await.unwrap();
                tokio::time::sleep(Duration::from_millis(1)).await;
                guard.release().await.unwrap();
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let other = polylock::Client::connect(url).await.unwrap();
    let started = tokio::time::Instant::now();
    let got = other
        .lock(name)
        .unwrap()
        .with_kind(kind)
        .unwrap()
        .acquire_with(polylock::AcquireOptions::default().wait(wait))
        .await;
    stop.store(true, Ordering::Relaxed);
    let guard = got.unwrap_or_else(|e| panic!("{url} {kind}: the other client's waiter was starved: {e}"));
    eprintln!("{kind}: the other client's waiter got in after {:?}", started.elapsed());
    guard.release().await.unwrap();
    for task in tasks {
        task.await.unwrap();
    }
    busy.close().await;
    other.close().await;
}
