//! What operators see: the core's tracing events (captured by a layer of the test's own, on
//! the test's thread only, so parallel tests do not mix in) and its metrics, on mem://,
//! SQLite and, when POLYLOCK_TEST_REDIS_URL is set, Redis.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common;
use polylock::metrics::{SeriesSnapshot, Snapshot};
use polylock::{AcquireOptions, Client, ErrorKind};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// One captured event: its level and every field, as text.
#[derive(Debug, Clone)]
struct Captured {
    level: Level,
    fields: BTreeMap<String, String>,
}

impl Captured {
    fn get(&self, field: &str) -> Option<&str> {
        self.fields.get(field).map(String::as_str)
    }
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Captured>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if !event.metadata().target().starts_with("polylock") {
            return;
        }
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(Captured { level: *event.metadata().level(), fields });
    }
}

impl Capture {
    /// Capture every event of this thread (the test's current-thread runtime and all it
    /// spawns) until the guard is dropped.
    fn start() -> (Capture, tracing::subscriber::DefaultGuard) {
        let capture = Capture::default();
        let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
        (capture, guard)
    }

    fn events(&self) -> Vec<Captured> {
        self.0.lock().unwrap().clone()
    }

    /// The events of operation `op` on lock `name`.
    fn of(&self, op: &str, name: &str) -> Vec<Captured> {
        self.events().into_iter().filter(|e| e.get("op") == Some(op) && e.get("name") == Some(name)).collect()
    }
}

fn series<'a>(snapshot: &'a Snapshot, backend: &str, kind: &str) -> &'a SeriesSnapshot {
    snapshot.series(backend, kind).unwrap_or_else(|| panic!("no series {backend}/{kind} in {snapshot:#?}"))
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Acquire, reenter, release, time out, lose a lease and have a hold taken: each shows as an
/// event with its fields and moves this client's counters by exactly one.
async fn events_and_counts(url: &str, backend: &str) {
    let (capture, _guard) = Capture::start();
    let client = Client::connect(url).await.unwrap();
    let other = Client::connect(url).await.unwrap();
    let connects = capture.events().into_iter().filter(|e| e.get("op") == Some("connect")).count();
    assert_eq!(connects, 2, "{backend}: {:#?}", capture.events());
    let name = format!("obs-{backend}-{}", std::process::id());

    // N acquisitions and releases.
    let lock = client.lock(&name).unwrap();
    const N: u64 = 5;
    for _ in 0..N {
        lock.acquire().await.unwrap().release().await.unwrap();
    }
    let acquired = capture.of("acquire", &name);
    assert_eq!(acquired.len() as u64, N, "{backend}: {acquired:#?}");
    for event in &acquired {
        assert_eq!(event.get("outcome"), Some("acquired"));
        assert_eq!(event.get("backend"), Some(backend));
        assert_eq!(event.get("kind"), Some("reentrant"));
        assert!(event.get("wait_ms").unwrap().parse::<f64>().unwrap() >= 0.0);
        assert!(event.get("token").unwrap().parse::<u64>().unwrap() > 0);
    }
    let released = capture.of("release", &name);
    assert_eq!(released.len() as u64, N);
    assert!(released.iter().all(|e| e.get("outcome") == Some("released") && e.get("held_ms").is_some()));

    // A reentry, and another client timing out while it is held.
    let guard = lock.acquire().await.unwrap();
    let again = lock.acquire().await.unwrap();
    let tried = other.lock(&name).unwrap().acquire_with(AcquireOptions::default().wait(Duration::ZERO)).await;
    assert_eq!(tried.unwrap_err().kind(), ErrorKind::Timeout);
    again.release().await.unwrap();
    guard.release().await.unwrap();
    let outcomes: Vec<_> = capture.of("acquire", &name).iter().map(|e| e.get("outcome").unwrap().to_string()).collect();
    assert_eq!(&outcomes[N as usize..], ["acquired", "reentered", "timeout"], "{backend}");

    // A lease that runs out: the release fails with Lost, and the loss is an event.
    let leased = lock.acquire_with(AcquireOptions::default().lease(Duration::from_millis(60))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(leased.release().await.unwrap_err().kind(), ErrorKind::Lost);
    let lost = capture.of("lost", &name);
    assert_eq!(lost.len(), 1, "{backend}: {lost:#?}");
    assert_eq!(lost[0].get("reason"), Some("lease_expired"));
    assert_eq!(lost[0].level, Level::WARN);
    assert_eq!(capture.of("release", &name).last().unwrap().get("outcome"), Some("lost"));

    // A hold taken by a forced unlock from this client.
    let taken = lock.acquire().await.unwrap();
    assert!(client.lock(&name).unwrap().force_unlock().await.unwrap());
    wait_until("the forced hold is lost", || taken.is_lost()).await;
    assert_eq!(capture.of("lost", &name).last().unwrap().get("reason"), Some("taken"));
    let _ = taken.release().await;

    // A closed client's acquisition fails with a Connection error: counted by kind.
    let closed = Client::connect(url).await.unwrap();
    let closed_lock = closed.lock(&name).unwrap();
    closed.close().await;
    assert_eq!(closed_lock.acquire().await.unwrap_err().kind(), ErrorKind::Connection);

    let own = client.metrics();
    let s = series(&own, backend, "reentrant");
    // N + the reentry's hold + the leased + the taken one.
    assert_eq!(s.acquires("acquired"), N + 3, "{backend}: {s:#?}");
    assert_eq!(s.acquires("reentered"), 1);
    assert_eq!(s.acquires("timeout"), 0, "the timeout was the other client's");
    assert_eq!(s.acquire_wait.count, N + 3);
    assert_eq!(s.releases, N + 3);
    assert_eq!(s.hold_time.count, N + 3);
    assert_eq!(s.lost("lease_expired"), 1);
    assert_eq!(s.lost("taken"), 1);
    assert_eq!(s.lost.iter().map(|(_, n)| n).sum::<u64>(), 2);
    assert_eq!(series(&other.metrics(), backend, "reentrant").acquires("timeout"), 1);
    let closed_counts = closed.metrics();
    assert_eq!(series(&closed_counts, backend, "reentrant").errors(ErrorKind::Connection), 1);
    assert_eq!(series(&closed_counts, backend, "reentrant").acquires("error"), 1);

    // The process-wide view holds at least this client's counts, and renders them.
    let all = polylock::metrics::snapshot();
    assert!(series(&all, backend, "reentrant").acquires("acquired") >= N + 3);
    assert!(all.backend(backend).unwrap().connects >= 3);
    let text = polylock::metrics::render_prometheus(&all);
    assert!(text.contains(&format!(
        "polylock_acquires_total{{backend=\"{backend}\",kind=\"reentrant\",outcome=\"acquired\"}}"
    )));
    client.close().await;
    other.close().await;
}

/// The watchdog's renewals are events with their lateness and margin, and counted.
async fn renewals(url_with_short_lease: &str, backend: &str) {
    let (capture, _guard) = Capture::start();
    let client = Client::connect(url_with_short_lease).await.unwrap();
    let name = format!("obs-renew-{backend}-{}", std::process::id());
    let guard = client.lock(&name).unwrap().acquire().await.unwrap();
    wait_until("three renewals", || capture.of("renew", &name).len() >= 3).await;
    guard.release().await.unwrap();
    let renewed = capture.of("renew", &name);
    for event in &renewed {
        let lateness: f64 = event.get("lateness_ms").unwrap().parse().unwrap();
        let margin: f64 = event.get("margin_ms").unwrap().parse().unwrap();
        assert!((0.0..150.0).contains(&lateness), "{event:?}");
        assert!(margin > 0.0 && margin <= 150.0, "{event:?}");
    }
    let own = client.metrics();
    let s = series(&own, backend, "reentrant");
    assert!(s.renewals >= renewed.len() as u64, "{s:#?}");
    assert_eq!(s.renewal_lateness.count, s.renewals);
    assert_eq!(s.renewal_failures, 0);
    assert_eq!(s.lost.iter().map(|(_, n)| n).sum::<u64>(), 0);
    client.close().await;
}

#[tokio::test]
async fn mem_events_and_metrics() {
    events_and_counts("mem://observe", "mem").await;
    renewals("mem://observe-renew?lease=150ms", "mem").await;
}

#[tokio::test]
async fn sqlite_events_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("observe.db").display());
    events_and_counts(&url, "sqlite").await;
    renewals(&format!("{url}?lease=150ms"), "sqlite").await;
}

#[tokio::test]
async fn redis_events_and_metrics() {
    if common::servers_off() {
        return;
    }
    let url = common::server_url("POLYLOCK_TEST_REDIS_URL", "redis://127.0.0.1:16379");
    events_and_counts(&url, url.split_once("://").unwrap().0).await;
    let sep = if url.contains('?') { '&' } else { '?' };
    renewals(&format!("{url}{sep}lease=150ms"), url.split_once("://").unwrap().0).await;
}

/// A password in the URL never reaches an event, whether the connection works or not.
#[tokio::test]
async fn no_event_carries_a_password() {
    const SECRET: &str = "s3cret-Pa55";
    let (capture, _guard) = Capture::start();
    let dir = tempfile::tempdir().unwrap();
    let mut urls = vec![
        format!("redis://:{SECRET}@127.0.0.1:1/0?timeout=300ms"),
        format!("redis://app:{SECRET}@127.0.0.1:1/0?timeout=300ms"),
        format!("postgres://app:{SECRET}@127.0.0.1:1/locks?connect_timeout=1"),
        format!("sqlite://{}?password={SECRET}", dir.path().join("x.db").display()),
        format!("etcd://root:{SECRET}@127.0.0.1:1?timeout=300ms"),
        // A '?' in the password is the password's, not the start of the options.
        format!("redis://u:pa?{SECRET}@127.0.0.1:1"),
        format!("postgres://app:x?{SECRET}@127.0.0.1:1/locks"),
        format!("redis+sentinel://127.0.0.1:1/m?sentinel_p%61ssword={SECRET}&timeout=300ms"),
    ];
    if common::servers_on() {
        // The real server: AUTH with a password it does not know, or one it takes.
        let redis = common::server_url("POLYLOCK_TEST_REDIS_URL", "redis://127.0.0.1:16379");
        if let Some(rest) = redis.strip_prefix("redis://") {
            urls.push(format!("redis://:{SECRET}@{}", rest.rsplit('@').next().unwrap()));
        }
    }
    for url in &urls {
        if let Ok(Err(err)) = tokio::time::timeout(Duration::from_secs(10), Client::connect(url)).await {
            assert!(!err.to_string().contains(SECRET), "the error shows a password: {err}");
        }
    }
    // Real servers that take a password (services.sh's TLS Redis and etcd): connect, hold,
    // release and close with it, so every kind of event passes with the password in the URL.
    let mut secrets = vec![SECRET.to_string()];
    let mut working = 0;
    for var in ["POLYLOCK_TEST_REDIS_TLS_URL", "POLYLOCK_TEST_ETCD_TLS_URL"] {
        let Ok(url) = std::env::var(var) else { continue };
        let Some(password) = password_of(&url) else { continue };
        secrets.push(password);
        let client = Client::connect(&url).await.unwrap_or_else(|e| panic!("{var}: {e}"));
        let guard = client.lock("obs-secret").unwrap().acquire().await.unwrap();
        guard.release().await.unwrap();
        client.close().await;
        working += 1;
    }
    let events = capture.events();
    let connects: Vec<_> = events.iter().filter(|e| e.get("op") == Some("connect")).collect();
    assert_eq!(connects.len(), urls.len() + working, "one connect event per attempt: {events:#?}");
    assert_eq!(capture.of("release", "obs-secret").len(), working);
    for event in &events {
        for (field, value) in &event.fields {
            for secret in &secrets {
                assert!(!value.contains(secret.as_str()), "field {field} shows a password: {event:#?}");
            }
        }
    }
    // Redacted, not dropped: the URL is still there to read.
    assert!(connects.iter().any(|e| e.get("url").is_some_and(|u| u.contains("***@127.0.0.1:1"))), "{connects:#?}");
}

/// The password of `scheme://user:password@host...`, if the URL has one.
fn password_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let userinfo = rest.split_once('@')?.0;
    let password = userinfo.split_once(':')?.1;
    (!password.is_empty()).then(|| password.to_string())
}
