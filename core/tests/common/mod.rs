//! What several integration suites share: where the test servers of tests/services are, and
//! checks that hold for more than one backend.
// Each suite is its own crate and uses only some of these.
#![allow(dead_code)]

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
