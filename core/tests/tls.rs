//! TLS and passwords (issue 35 §2) against real servers of tests/services: RedLock over TLS
//! (`redlocks://`, on redis-tls), a TLS Redis Cluster (`rediss+cluster://`, redis-tls-cluster:
//! the cluster bus over TLS too), Sentinel over TLS with client certificates
//! (`rediss+sentinel://`, redis-tls-sentinel: master and sentinel both ask for one); no
//! warning about an unverified password for servers on this machine; and a RedLock node
//! whose password holds '?', '/', '@' and '#' (a private redis-server started here).

use crate::common;
use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use polylock::{Client, ErrorKind};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

fn services_dir() -> String {
    std::env::var("POLYLOCK_SERVICES_DIR").unwrap_or_else(|_| "/tmp/polylock-services".into())
}

fn unique(name: &str) -> String {
    format!("tls-{name}-{}", uuid::Uuid::new_v4().simple())
}

fn redis_tls_url() -> String {
    std::env::var("POLYLOCK_TEST_REDIS_TLS_URL").unwrap_or_else(|_| {
        format!("rediss://:polylock-tls-secret@127.0.0.1:16390?ca={}/redis-tls/ca.crt", services_dir())
    })
}

fn tls_cluster_url() -> String {
    std::env::var("POLYLOCK_TEST_REDIS_TLS_CLUSTER_URL").unwrap_or_else(|_| {
        format!(
            "rediss+cluster://:polylock-tls-secret@127.0.0.1:17101,127.0.0.1:17102,127.0.0.1:17103?ca={}/redis-tls-cluster/ca.crt",
            services_dir()
        )
    })
}

fn tls_sentinel_url() -> String {
    std::env::var("POLYLOCK_TEST_REDIS_TLS_SENTINEL_URL").unwrap_or_else(|_| {
        let dir = format!("{}/redis-tls-sentinel", services_dir());
        format!(
            "rediss+sentinel://:polylock-tls-secret@127.0.0.1:26391/polylock-tls-master?sentinel_password=polylock-tls-secret\
             &ca={dir}/ca.crt&cert={dir}/client.crt&key={dir}/client.key"
        )
    })
}

/// Take, check and give back a lock and a two-permit semaphore on `client`.
async fn use_it(client: &Client, what: &str) {
    let name = unique(what);
    let guard = client.lock(&name).unwrap().acquire().await.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(client.lock(&name).unwrap().try_acquire().await.unwrap().is_none(), "{what}: held twice");
    guard.release().await.unwrap();
    let permit = client.semaphore(&format!("{name}-s"), 2).unwrap().acquire().await.unwrap();
    permit.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_over_tls_checks_the_certificate() {
    if common::servers_off() {
        return;
    }
    // redis-tls's URL, as a one-server RedLock over TLS.
    let url = redis_tls_url().replacen("rediss://", "redlocks://", 1);
    let client = Client::connect(&url).await.unwrap_or_else(|e| panic!("{url}: {e}"));
    let name = unique("redlock");
    let lock = client.lock(&name).unwrap();
    let guard = lock.acquire().await.unwrap();
    assert!(client.lock(&name).unwrap().try_acquire().await.unwrap().is_none());
    guard.release().await.unwrap();

    // Another CA (redis-tls-cluster's): the server's certificate is refused.
    let other_ca = format!("{}/redis-tls-cluster/ca.crt", services_dir());
    let (base, _) = url.split_once("?ca=").unwrap();
    let err = Client::connect(&format!("{base}?ca={other_ca}")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    // Plain TCP to a TLS-only port: no answer a RedLock counts.
    let err = Client::connect(&format!("{}?node_timeout=500ms", base.replacen("redlocks://", "redlock://", 1)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    // TLS options on a plain URL are refused, not ignored.
    let err =
        Client::connect(&format!("{}?ca={other_ca}", base.replacen("redlocks://", "redlock://", 1))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.to_string().contains("need a redlocks:// URL"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_cluster_over_tls() {
    if common::servers_off() {
        return;
    }
    let url = tls_cluster_url();
    let client = Client::connect(&url).await.unwrap_or_else(|e| panic!("{url}: {e}"));
    // Names over every slot range: the nodes each take some.
    for i in 0..6 {
        use_it(&client, &format!("cluster{i}")).await;
    }
    // A waiter hears the release (sharded pub/sub over TLS).
    let name = unique("cluster-wait");
    let guard = client.lock(&name).unwrap().acquire().await.unwrap();
    let other = Client::connect(&url).await.unwrap();
    let waiter = tokio::spawn(async move {
        let started = std::time::Instant::now();
        let guard = other
            .lock(&name)
            .unwrap()
            .acquire_with(polylock::AcquireOptions::default().wait(Duration::from_secs(10)))
            .await
            .unwrap();
        guard.release().await.unwrap();
        started.elapsed()
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    guard.release().await.unwrap();
    let waited = waiter.await.unwrap();
    assert!(waited < Duration::from_secs(5), "the waiter was not woken by the release: {waited:?}");
    let err = Client::connect(&url.replace("polylock-tls-secret", "wrong-secret")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_over_tls_with_a_client_certificate() {
    if common::servers_off() {
        return;
    }
    let url = tls_sentinel_url();
    let client = Client::connect(&url).await.unwrap_or_else(|e| panic!("{url}: {e}"));
    use_it(&client, "sentinel").await;
    // The sentinel and the master ask for a client certificate: without one, no connection.
    let (base, query) = url.split_once('?').unwrap();
    let without: Vec<&str> = query.split('&').filter(|o| !o.starts_with("cert=") && !o.starts_with("key=")).collect();
    let err = Client::connect(&format!("{base}?{}&timeout=2s", without.join("&"))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    // Plain TCP to the TLS-only sentinel fails too.
    let plain = base.replacen("rediss+", "redis+", 1);
    let err = Client::connect(&format!("{plain}?sentinel_password=x&timeout=2s")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
}

/// The message of every warning of the core this thread's tasks log while it lives.
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<String>>>);

struct Message<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Message<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_string(), format!("{value:?}"));
    }
}

impl<S: Subscriber> Layer<S> for Warnings {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if event.metadata().target().starts_with("polylock") && *event.metadata().level() == tracing::Level::WARN {
            let mut fields = BTreeMap::new();
            event.record(&mut Message(&mut fields));
            self.0.lock().unwrap().push(format!("{fields:?}"));
        }
    }
}

/// Passwords to servers on this machine (127.0.0.1) get no warning, over plain text
/// (PostgreSQL and MariaDB without sslmode, as CI's URLs are) as over TLS.
#[tokio::test]
async fn no_password_warning_for_servers_on_this_machine() {
    if common::servers_off() {
        return;
    }
    let warnings = Warnings::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(warnings.clone()));
    for url in [crate::common::postgres_url(), crate::common::mariadb_url(), redis_tls_url()] {
        assert!(url.contains("@127.0.0.1:"), "a password to loopback: {url}");
        let client = Client::connect(&url).await.unwrap_or_else(|e| panic!("{url}: {e}"));
        client.close().await;
    }
    let seen = warnings.0.lock().unwrap().clone();
    assert!(seen.iter().all(|w| !w.contains("without verified TLS")), "{seen:#?}");
}

/// A private redis-server whose password holds characters a URL parser would cut at.
struct PrivateServer {
    port: u16,
    child: Child,
}

impl PrivateServer {
    fn start(password: &str) -> PrivateServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--daemonize", "no", "--requirepass", password])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (tests/services installs it)");
        PrivateServer { port, child }
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redlock_password_may_hold_any_character() {
    if common::servers_off() {
        return;
    }
    let password = "pa?ss/w@rd#1:x%";
    let server = PrivateServer::start(password);
    // Raw, as a user pastes it (the user info runs to the last '@'), and percent-encoded.
    let raw = format!("redlock://:{password}@127.0.0.1:{}", server.port);
    let encoded = format!(
        "redlock://:{}@127.0.0.1:{}",
        form_urlencoded::byte_serialize(password.as_bytes()).collect::<String>(),
        server.port
    );
    for url in [raw.replace('%', "%25"), encoded] {
        let mut connected = None;
        for _ in 0..100 {
            match Client::connect(&url).await {
                Ok(client) => {
                    connected = Some(client);
                    break;
                }
                Err(err) => {
                    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
                    assert!(!err.to_string().contains("w@rd"), "password leaked: {err}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
        let client = connected.unwrap_or_else(|| panic!("no connect with {}", polylock::url::redact(&url)));
        let guard = client.lock(&unique("qmark")).unwrap().acquire().await.unwrap();
        guard.release().await.unwrap();
    }
    let wrong = format!("redlock://:pa?ss@127.0.0.1:{}", server.port);
    let err = Client::connect(&wrong).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
}
