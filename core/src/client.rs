//! The entry point: a connection to one backend, named by URL, and the handles made from it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::backend;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::owner::{next_handle_local_id, ClientId, Owner};
use crate::primitives::{storage_key, validate_name, Lock, RwLock, Semaphore};
use crate::primitives::{Idempotency, Value};
use crate::primitives::{LeasedSnowflake, SegmentGenerator, SegmentOptions, SnowflakeOptions};
use crate::primitives::{MultiLock, MultiLockPart};
use crate::spi::{Capabilities, Primitive};
use crate::url::{default_url, ConnectUrl};
use tracing::Instrument;

/// The watchdog's lease when the URL does not set one: Redisson's `lockWatchdogTimeout`.
pub const DEFAULT_WATCHDOG_LEASE: Duration = Duration::from_secs(30);

/// A connection to one backend. Cheap to clone; clones share the connection and the holds.
/// Closing it (or dropping the last clone and every handle made from it) stops its
/// watchdogs.
#[derive(Clone)]
pub struct Client {
    engine: Arc<Engine>,
    namespace: Option<Arc<str>>,
    capabilities: Capabilities,
    /// The backend's layout reader for [`Client::inspect`], if it has one.
    inspect_store: Option<Arc<dyn crate::spi::InspectStore>>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").field("id", &self.engine.id()).field("url", &self.engine.url()).finish()
    }
}

impl Client {
    /// Connect to the backend `url` names. Options in the query string:
    /// `namespace` (prefix keys with `<namespace>:`) and `lease` (the watchdog's lease,
    /// renewed every third of it; default 30s), plus each backend's own.
    ///
    /// Must be called within a tokio runtime; the client spawns its watchdogs there.
    pub async fn connect(url: &str) -> Result<Client> {
        let started = std::time::Instant::now();
        // Only the redacted URL is ever logged; a URL that does not parse shows its scheme alone.
        let (scheme, shown) = match ConnectUrl::parse(url) {
            Ok(parsed) => (parsed.scheme().to_string(), parsed.redacted().to_string()),
            Err(_) => (url.split_once("://").map_or("invalid", |(s, _)| s).to_string(), String::new()),
        };
        let span = tracing::debug_span!("connect", backend = %scheme, url = %shown);
        // A backend may quote part of the URL as it split it; whatever redaction hides never shows.
        let connected = Self::connect_inner(url)
            .instrument(span)
            .await
            .map_err(|err| err.without_secrets(&crate::url::secrets(url)));
        crate::metrics::connected(&scheme, connected.is_ok());
        let elapsed_ms = crate::metrics::millis(started.elapsed());
        match &connected {
            Ok(client) => tracing::info!(op = "connect", backend = %scheme, url = %shown, client = %client.id(),
                elapsed_ms, "connected"),
            Err(err) => tracing::warn!(op = "connect", backend = %scheme, url = %shown, elapsed_ms,
                error_kind = err.kind().as_str(), error = %err.message(), "connect failed"),
        }
        connected
    }

    async fn connect_inner(url: &str) -> Result<Client> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::invalid_argument("polylock needs a tokio runtime: call Client::connect from inside one")
        })?;
        let mut url = ConnectUrl::parse(url)?;
        let namespace = url.take_option("namespace").filter(|ns| !ns.is_empty());
        if let Some(ns) = &namespace {
            crate::primitives::check_namespace(ns)?;
        }
        let watchdog_lease = url.take_duration("lease")?.unwrap_or(DEFAULT_WATCHDOG_LEASE);
        if watchdog_lease < Duration::from_millis(30) {
            return Err(Error::invalid_argument(format!(
                "URL option 'lease' must be at least 30ms, got {}ms: the watchdog renews every third of it",
                watchdog_lease.as_millis()
            )));
        }
        crate::duration::check_lease("URL option 'lease'", watchdog_lease)?;
        let store = backend::open(&mut url).await?;
        if let Err(err) = url.ensure_no_options_left() {
            store.close().await;
            return Err(err);
        }
        let capabilities = store.capabilities();
        let engine = Engine::start(ClientId::random(), store, url.redacted().to_string(), watchdog_lease, runtime);
        let inspect_store = engine.inspect_store();
        Ok(Client { engine, namespace: namespace.map(Into::into), capabilities, inspect_store })
    }

    /// Connect to `$POLYLOCK_URL`, else to `sqlite://polylock.db`.
    pub async fn connect_default() -> Result<Client> {
        Self::connect(&default_url()).await
    }

    pub fn id(&self) -> ClientId {
        self.engine.id()
    }

    /// The URL this client connected to, with any password replaced by `***`.
    pub fn url(&self) -> &str {
        self.engine.url()
    }

    /// This client's own counts (acquisitions, holds, renewals, losses, errors), by kind;
    /// [`crate::metrics::snapshot`] sums every client of the process.
    pub fn metrics(&self) -> crate::metrics::Snapshot {
        self.engine.metrics().snapshot()
    }

    /// The lease the watchdog keeps when an acquisition gives none.
    pub fn watchdog_lease(&self) -> Duration {
        self.engine.watchdog_lease()
    }

    /// What this client's backend offers.
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    /// A handle on the lock `name`, owned by the new handle (and its clones). Holds nothing.
    pub fn lock(&self, name: &str) -> Result<Lock> {
        let key = self.key(name)?;
        let lock = Lock::new(self.engine.clone(), name, key, self.new_owner());
        // A backend without reentrant locks (RedLock) hands out the one kind it has.
        match self.capabilities.lock_kinds {
            [only] if !self.capabilities.offers(Primitive::Lock(lock.kind())) => lock.with_kind(*only),
            _ => Ok(lock),
        }
    }

    /// The mutexes `names` (of the backend's default kind), acquired and released as one,
    /// always in the byte order of their storage keys whatever order they are listed in, so
    /// that two multi-locks over the same names never deadlock. Holds nothing yet.
    pub fn multi_lock<S: AsRef<str>>(&self, names: &[S]) -> Result<MultiLock> {
        self.multi_lock_of(names.iter().map(|name| MultiLockPart::lock(name.as_ref())))
    }

    /// A multi-lock over any mix of mutexes and read or write sides of read-write locks.
    pub fn multi_lock_of(&self, parts: impl IntoIterator<Item = MultiLockPart>) -> Result<MultiLock> {
        MultiLock::new(self.engine.clone(), self.namespace.as_deref(), parts, self.new_owner())
    }

    /// A handle on the read-write lock `name`, owned by the new handle (and its clones).
    /// `Unsupported` if the backend has no read-write locks.
    pub fn rw_lock(&self, name: &str) -> Result<RwLock> {
        let key = self.key(name)?;
        self.engine.check(Primitive::ReadWriteLock)?;
        Ok(RwLock::new(self.engine.clone(), name, key, self.new_owner()))
    }

    /// A handle on the semaphore `name` of `permits` permits. `Unsupported` if the backend
    /// has no semaphores.
    pub fn semaphore(&self, name: &str, permits: u32) -> Result<Semaphore> {
        let key = self.key(name)?;
        self.engine.check(Primitive::Semaphore)?;
        Semaphore::new(self.engine.clone(), name, key, self.new_owner(), permits)
    }

    /// A handle on the plain semaphore `name`: Redisson's RSemaphore, an unowned counter of
    /// permits (Redis only; `Unsupported` elsewhere). Its permits have no owner and no lease,
    /// so a holder that crashes leaks them for good: prefer [`Client::semaphore`] unless
    /// Redisson's RSemaphore users must see the same permits.
    pub fn plain_semaphore(&self, name: &str) -> Result<crate::primitives::PlainSemaphore> {
        let key = self.key(name)?;
        crate::primitives::PlainSemaphore::new(self.engine.clone(), name, key)
    }

    /// A handle on the versioned value `name`: compare-and-set on a version that only
    /// grows, and fenced writes. `Unsupported` if the backend has no versioned values.
    pub fn value(&self, name: &str) -> Result<Value> {
        let key = self.key(name)?;
        crate::primitives::check_value_name(name)?;
        let store = self.engine.versions()?;
        Ok(Value::new(self.engine.clone(), store, name, key))
    }

    /// A handle on the countdown latch `name` (Redisson's `RCountDownLatch` on Redis).
    /// `Unsupported` if the backend has no latches (RedLock).
    pub fn latch(&self, name: &str) -> Result<crate::primitives::Latch> {
        let key = self.key(name)?;
        crate::primitives::Latch::new(self.engine.clone(), name, key)
    }

    /// A handle on the leader election `name`: campaign, leader, observe. `Unsupported` if
    /// the backend has no elections (RedLock).
    pub fn election(&self, name: &str) -> Result<crate::primitives::Election> {
        let key = self.key(name)?;
        crate::primitives::Election::new(self.engine.clone(), name, key)
    }

    /// Idempotency keys of `namespace`: a completed key replays its response for
    /// `Idempotency::DEFAULT_RETENTION` (24 h); an attempt that neither completes nor
    /// extends is taken over after `Idempotency::DEFAULT_IN_PROGRESS_TTL` (60 s).
    /// `Unsupported` if the backend has no versioned values.
    pub fn idempotency(&self, namespace: &str) -> Result<Idempotency> {
        self.idempotency_with(namespace, Idempotency::DEFAULT_RETENTION, Idempotency::DEFAULT_IN_PROGRESS_TTL)
    }

    /// Idempotency keys of `namespace` with their own retention and in-progress TTL.
    pub fn idempotency_with(
        &self,
        namespace: &str,
        retention: Duration,
        in_progress_ttl: Duration,
    ) -> Result<Idempotency> {
        let store = self.engine.versions()?;
        Idempotency::new(self.engine.clone(), store, self.namespace.as_deref(), namespace, retention, in_progress_ttl)
    }

    /// Leaf-style segment IDs of `tag` (Leaf's `biz_tag`, under the namespace), with the
    /// default options (step 1000, next range loaded at 10 % used). `Unsupported` if the
    /// backend has no counters.
    pub fn segment(&self, tag: &str) -> Result<SegmentGenerator> {
        self.segments(tag, SegmentOptions::default())
    }

    /// Segment IDs of `tag` with their own step, bounds, load share and wait.
    pub fn segments(&self, tag: &str, options: SegmentOptions) -> Result<SegmentGenerator> {
        let key = self.key(tag)?;
        let store = self.engine.counter_store()?;
        SegmentGenerator::new(tag, key, store, self.engine.runtime().clone(), options)
    }

    /// A Snowflake generator on a leased worker id: `worker_id` if given (`Timeout` if
    /// another generator holds it), else the lowest free one. `Unsupported` if the backend
    /// has no versioned values.
    pub async fn snowflake(&self, worker_id: Option<u64>, options: SnowflakeOptions) -> Result<LeasedSnowflake> {
        LeasedSnowflake::start(self.engine.clone(), self.namespace.clone(), worker_id, options).await
    }

    /// The operator's view of this backend's mutexes, whoever holds them: status, list and
    /// force unlock (`polylock status`, `list`, `unlock --force`).
    pub fn inspect(&self) -> crate::primitives::Inspector {
        crate::primitives::Inspector::new(self.engine.clone(), self.namespace.clone(), self.inspect_store.clone())
    }

    /// Stop every watchdog, mark every hold lost, give the holds back to the store (best
    /// effort, bounded) and close the backend. Acquisitions still waiting fail with a
    /// `Connection` error, as do later calls on this client. Closing twice is harmless.
    pub async fn close(&self) {
        self.engine.close().await
    }

    pub fn is_closed(&self) -> bool {
        self.engine.is_closed()
    }

    fn key(&self, name: &str) -> Result<String> {
        validate_name(name)?;
        let key = storage_key(self.namespace.as_deref(), name);
        self.engine.check_key(&key)?;
        Ok(key)
    }

    fn new_owner(&self) -> Owner {
        Owner { client_id: self.engine.id(), local_id: next_handle_local_id() }
    }

    #[cfg(test)]
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }
}
