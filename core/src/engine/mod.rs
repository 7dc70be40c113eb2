//! The lock engine: what every primitive shares on top of the store interface. Per client,
//! it keeps the table of holds (reentrancy counts per owner, fencing tokens, lost latches),
//! starts watchdogs for holds that last, hands a released hold to a waiting owner of the
//! same client, and makes sure that no way out of an acquisition (timeout, cancellation,
//! client close) leaves anything held.
//!
//! It knows stores only through `crate::spi`, and nothing of the primitives built on it.
//! Primitives reach it through [`Engine`] (one per client) and [`Handle`] (one named hold
//! target for one owner).

mod acquire;
mod handoff;
mod hold;
mod retry;
mod transfer_watch;

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use acquire::AcquireOptions;
pub(crate) use acquire::Handle;
use handoff::LocalWaiters;
use hold::{surrender, HoldTable};
use retry::{Retry, RetryingCounters, RetryingHolds, RetryingInspect, RetryingVersions};

use crate::error::{Error, Result};
use crate::metrics::ClientMetrics;
use crate::owner::ClientId;
use crate::spi::{Capabilities, HoldKind, HoldStore, LockKind, LostReason, Permits, Primitive, RwMode, Store};

/// The holds and waiters of one primitive family in one client.
struct Family<K: HoldKind> {
    /// `None` when the backend does not offer the family (handles are refused first).
    store: Option<Arc<dyn HoldStore<K>>>,
    holds: HoldTable<K>,
    /// Owners of this client waiting for a hold, so a release can hand it straight over.
    waiters: Arc<LocalWaiters<K>>,
}

impl<K: HoldKind> Family<K> {
    fn new(store: Option<Arc<dyn HoldStore<K>>>) -> Self {
        Family { store, holds: HoldTable::default(), waiters: Arc::default() }
    }
}

/// One client's engine: its backend, its holds, and its lifecycle.
pub(crate) struct Engine {
    id: ClientId,
    store: Arc<dyn Store>,
    capabilities: Capabilities,
    url: String,
    /// The URL's scheme: the `backend` of every event and metric.
    scheme: Arc<str>,
    /// This client's counts (and, through them, the process-wide ones).
    metrics: ClientMetrics,
    watchdog_lease: Duration,
    locks: Family<LockKind>,
    rw_locks: Family<RwMode>,
    semaphores: Family<Permits>,
    runtime: tokio::runtime::Handle,
    closed: AtomicBool,
    /// Cancelled by `close`: acquisitions still waiting stop at once.
    closing: CancellationToken,
    /// The retry policy of idempotent store calls (retry.rs); it stops retrying once the
    /// store is being closed.
    retry: Retry,
    store_closing: CancellationToken,
    /// Acquisitions under way, from the store call until their hold is recorded or given
    /// back: `close` waits for them before it drains the holds and closes the backend.
    acquisitions: TaskTracker,
}

/// How long `close` waits for acquisitions under way to record or give back their holds.
const SETTLE_WAIT: Duration = Duration::from_secs(5);
/// How long closing the backend may take (revoking an etcd session, closing a ZooKeeper
/// session or a pool): milliseconds when the server answers; cut off from it (a partition),
/// the server frees what the client had at its lease or session end anyway, and `polylock
/// run` must exit soon after its command.
const STORE_CLOSE_WAIT: Duration = Duration::from_secs(2);

impl Engine {
    /// Start the engine of a freshly connected client; its watchdog sweep runs until the
    /// client closes or is dropped.
    pub fn start(
        id: ClientId,
        store: Arc<dyn Store>,
        url: String,
        watchdog_lease: Duration,
        runtime: tokio::runtime::Handle,
    ) -> Arc<Engine> {
        let capabilities = store.capabilities();
        let scheme: Arc<str> = url.split_once("://").map_or(capabilities.backend, |(scheme, _)| scheme).into();
        let store_closing = CancellationToken::new();
        let retry = Retry::new(store.retry_within(), scheme.clone(), store_closing.clone());
        let engine = Arc::new(Engine {
            metrics: ClientMetrics::new(&scheme),
            scheme,
            id,
            capabilities,
            locks: Family::new(Some(RetryingHolds::wrap(store.clone().locks(), &retry))),
            rw_locks: Family::new(store.clone().rw_locks().map(|s| RetryingHolds::wrap(s, &retry))),
            semaphores: Family::new(store.clone().semaphores().map(|s| RetryingHolds::wrap(s, &retry))),
            retry,
            store_closing,
            store,
            url,
            watchdog_lease,
            runtime,
            closed: AtomicBool::new(false),
            closing: CancellationToken::new(),
            acquisitions: TaskTracker::new(),
        });
        engine.sweep_watchdogs();
        engine
    }

    /// The table of family `K` (mutexes, read-write locks or semaphores).
    fn family<K: HoldKind>(&self) -> &Family<K> {
        let families: [&dyn Any; 3] = [&self.locks, &self.rw_locks, &self.semaphores];
        families
            .into_iter()
            .find_map(|family| family.downcast_ref::<Family<K>>())
            .expect("the engine keeps a table for each kind of hold a handle can be made for")
    }

    pub fn id(&self) -> ClientId {
        self.id
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL's scheme, as events and metrics label the backend.
    pub fn scheme(&self) -> &Arc<str> {
        &self.scheme
    }

    pub fn metrics(&self) -> &ClientMetrics {
        &self.metrics
    }

    pub fn watchdog_lease(&self) -> Duration {
        self.watchdog_lease
    }

    pub fn runtime(&self) -> &tokio::runtime::Handle {
        &self.runtime
    }

    /// What the backend offers.
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    /// The backend's bound on holds that keep a connection each (see `Store::session_bound`).
    pub fn session_bound(&self) -> Option<crate::spi::SessionBound> {
        self.store.session_bound()
    }

    /// Whether the backend's grants carry fencing tokens (see `Store::fencing_tokens`).
    pub fn fencing_tokens(&self) -> bool {
        self.store.fencing_tokens()
    }

    /// `Ok` unless the backend's layout would give `key` to another name's records as well
    /// (see `Store::check_key`).
    pub fn check_key(&self, key: &str) -> Result<()> {
        self.store.check_key(key)
    }

    /// `Ok` if the backend offers `primitive`, else `Unsupported`.
    pub fn check(&self, primitive: Primitive) -> Result<()> {
        self.capabilities.check(primitive)
    }

    /// The backend's versioned values (values, fenced writes, idempotency records), or
    /// `Unsupported` if it has none.
    pub fn versions(&self) -> Result<Arc<dyn crate::spi::VersionStore>> {
        self.check(Primitive::VersionedValues)?;
        let store = self.store.clone().versions().ok_or_else(|| {
            Error::internal(format!(
                "the {} backend declares versioned values but has no store for them",
                self.capabilities.backend
            ))
        })?;
        Ok(RetryingVersions::wrap(store, &self.retry))
    }

    /// The backend's reads of mutex layouts whoever holds them (status, list), if it has them.
    pub fn inspect_store(&self) -> Option<Arc<dyn crate::spi::InspectStore>> {
        Some(RetryingInspect::wrap(self.store.clone().inspect()?, &self.retry))
    }

    /// `Ok` while the client is open, else the `Connection` error every closed call gets.
    pub fn check_open(&self) -> Result<()> {
        self.ensure_open()
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// The backend's counters (segment IDs), or `Unsupported`. Fails once the client is closed.
    pub fn counter_store(&self) -> Result<Arc<dyn crate::spi::CounterStore>> {
        self.ensure_open()?;
        self.capabilities.check(Primitive::Counters)?;
        let store = self.store.clone().counters().ok_or_else(|| Error::unsupported("this backend has no counters"))?;
        Ok(RetryingCounters::wrap(store, &self.retry))
    }

    /// The backend's plain semaphores (unowned counters), or `Unsupported`. Fails once the
    /// client is closed.
    pub fn plain_permit_store(&self) -> Result<Arc<dyn crate::spi::PlainPermitStore>> {
        self.ensure_open()?;
        self.store.clone().plain_semaphores().ok_or_else(|| {
            Error::unsupported(format!(
                "the {} backend does not offer plain semaphores (Redisson's RSemaphore layout, Redis only); \
                 use a semaphore of owned permits instead",
                self.capabilities.backend
            ))
        })
    }

    /// The backend's countdown latches, or `Unsupported`, and the token cancelled when this
    /// client closes (which ends a latch's waits). Fails once the client is closed.
    pub fn latch_store(&self) -> Result<(Arc<dyn crate::spi::LatchStore>, CancellationToken)> {
        self.ensure_open()?;
        let store = self.store.clone().latches().ok_or_else(|| {
            Error::unsupported(format!("the {} backend does not offer countdown latches", self.capabilities.backend))
        })?;
        Ok((store, self.closing.clone()))
    }

    /// The backend's own election layout (etcd, ZooKeeper), `None` where elections are built
    /// from a lock hold and a value, and the token cancelled when this client closes (which
    /// stops a leadership's renewals). Fails once the client is closed.
    pub fn election_store(&self) -> Result<(Option<Arc<dyn crate::spi::ElectionStore>>, CancellationToken)> {
        self.ensure_open()?;
        self.capabilities.check(Primitive::Election)?;
        Ok((self.store.clone().elections(), self.closing.clone()))
    }

    fn ensure_open(&self) -> Result<()> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        Ok(())
    }

    fn closed_error(&self) -> Error {
        Error::connection(format!("the client for {} is closed; connect again", self.url))
    }

    /// Stop every watchdog, mark every hold lost, give the holds back to the store (best
    /// effort, bounded) and close the backend. Acquisitions still waiting fail with a
    /// `Connection` error, as do later calls. Closing twice is harmless.
    pub async fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        tracing::debug!(op = "close", backend = %self.scheme, client = %self.id, "closing the client");
        self.closing.cancel();
        // An acquisition that was already talking to the store may still take its hold; let
        // each one record it (drained below) or give it back, while the backend is open.
        // Every step is bounded: cut off from the server (a partition), each would wait for
        // the network, and `polylock run` must still exit soon after its command. At most
        // SETTLE_WAIT + GIVE_BACK_WAIT + STORE_CLOSE_WAIT, however many holds there are.
        self.acquisitions.close();
        let _ = tokio::time::timeout(SETTLE_WAIT, self.acquisitions.wait()).await;
        let mut surrenders = tokio::task::JoinSet::new();
        surrender_all(&self.locks, &mut surrenders);
        surrender_all(&self.rw_locks, &mut surrenders);
        surrender_all(&self.semaphores, &mut surrenders);
        while surrenders.join_next().await.is_some() {}
        self.store_closing.cancel();
        let _ = tokio::time::timeout(STORE_CLOSE_WAIT, self.store.close()).await;
    }

    /// Every sixth of the watchdog lease, start the watchdogs of the holds that still need
    /// one, well before their first renewal is due at a third (see hold.rs `Keeper`).
    fn sweep_watchdogs(self: &Arc<Self>) {
        let every = self.watchdog_lease / 6;
        let (engine, closing) = (Arc::downgrade(self), self.closing.clone());
        self.runtime.spawn(async move {
            loop {
                tokio::select! {
                    _ = closing.cancelled() => return,
                    _ = tokio::time::sleep(every) => {}
                }
                let Some(engine) = engine.upgrade() else { return };
                engine.locks.holds.start_watchdogs(&engine.runtime);
                engine.rw_locks.holds.start_watchdogs(&engine.runtime);
                engine.semaphores.holds.start_watchdogs(&engine.runtime);
            }
        });
    }

    #[cfg(test)]
    pub fn lock_store(&self) -> Arc<dyn HoldStore<LockKind>> {
        self.locks.store.clone().expect("every backend has locks")
    }

    #[cfg(test)]
    pub fn hold_count_in_table(&self) -> usize {
        self.locks.holds.len()
    }
}

/// Give back every hold of `family` at once, each bounded by `GIVE_BACK_WAIT`.
fn surrender_all<K: HoldKind>(family: &Family<K>, surrenders: &mut tokio::task::JoinSet<()>) {
    let Some(store) = &family.store else { return };
    for hold in family.holds.drain() {
        let store = store.clone();
        surrenders.spawn(async move { surrender(store.as_ref(), hold).await });
    }
}

/// Give back, in the background, the holds of a client dropped without `close()`.
fn surrender_in_background<K: HoldKind>(family: &Family<K>, runtime: &tokio::runtime::Handle) {
    let holds = family.holds.drain();
    let Some(store) = family.store.clone().filter(|_| !holds.is_empty()) else { return };
    for hold in &holds {
        hold.lost.mark(LostReason::ClientClosed);
    }
    runtime.spawn(async move {
        for hold in holds {
            surrender(store.as_ref(), hold).await;
        }
    });
}

impl Drop for Engine {
    /// The last handle is gone without `close()`: stop the watchdogs (dropping a hold aborts
    /// its keeper) and give the holds back in the background.
    fn drop(&mut self) {
        surrender_in_background(&self.locks, &self.runtime);
        surrender_in_background(&self.rw_locks, &self.runtime);
        surrender_in_background(&self.semaphores, &self.runtime);
    }
}
