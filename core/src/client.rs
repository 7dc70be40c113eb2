//! The entry point: a connection to one backend, named by URL, and the holds it keeps.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::backend::{self, Backend};
use crate::error::{Error, Result};
use crate::lock::handoff::LocalWaiters;
use crate::lock::hold::{surrender, HoldTable};
use crate::lock::{storage_key, validate_name, Lock, LostReason};
use crate::owner::{next_handle_local_id, ClientId, Owner};
use crate::url::{default_url, ConnectUrl};

/// The watchdog's lease when the URL does not set one: Redisson's `lockWatchdogTimeout`.
pub const DEFAULT_WATCHDOG_LEASE: Duration = Duration::from_secs(30);

/// A connection to one backend. Cheap to clone; clones share the connection and the holds.
/// Closing it (or dropping the last clone and every lock made from it) stops its watchdogs.
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

pub(crate) struct ClientInner {
    pub id: ClientId,
    pub backend: Arc<dyn Backend>,
    pub scheme: String,
    pub url: String,
    pub namespace: Option<String>,
    pub watchdog_lease: Duration,
    pub holds: HoldTable,
    /// Owners of this client waiting for a lock, so a release can hand it straight over.
    pub waiters: Arc<LocalWaiters>,
    pub runtime: tokio::runtime::Handle,
    closed: AtomicBool,
    /// Cancelled by `close`: acquisitions still waiting stop at once.
    pub closing: CancellationToken,
    /// Acquisitions under way, from the store call until their hold is recorded or given
    /// back: `close` waits for them before it drains the holds and closes the backend.
    pub acquisitions: TaskTracker,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").field("id", &self.inner.id).field("url", &self.inner.url).finish()
    }
}

impl Client {
    /// Connect to the backend `url` names. Options in the query string:
    /// `namespace` (prefix lock keys with `<namespace>:`) and `lease` (the watchdog's lease,
    /// renewed every third of it; default 30s), plus each backend's own.
    ///
    /// Must be called within a tokio runtime; the client spawns its watchdogs there.
    pub async fn connect(url: &str) -> Result<Client> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::invalid_argument("polylock needs a tokio runtime: call Client::connect from inside one")
        })?;
        let mut url = ConnectUrl::parse(url)?;
        let namespace = url.take_option("namespace").filter(|ns| !ns.is_empty());
        let watchdog_lease = url.take_duration("lease")?.unwrap_or(DEFAULT_WATCHDOG_LEASE);
        if watchdog_lease < Duration::from_millis(30) {
            return Err(Error::invalid_argument(format!(
                "URL option 'lease' must be at least 30ms, got {}ms: the watchdog renews every third of it",
                watchdog_lease.as_millis()
            )));
        }
        let backend = backend::open(&mut url).await?;
        if let Err(err) = url.ensure_no_options_left() {
            backend.close().await;
            return Err(err);
        }
        let client = Client {
            inner: Arc::new(ClientInner {
                id: ClientId::random(),
                backend,
                scheme: url.scheme().to_string(),
                url: url.redacted().to_string(),
                namespace,
                watchdog_lease,
                holds: HoldTable::default(),
                waiters: Arc::default(),
                runtime,
                closed: AtomicBool::new(false),
                closing: CancellationToken::new(),
                acquisitions: TaskTracker::new(),
            }),
        };
        client.inner.sweep_watchdogs();
        Ok(client)
    }

    /// Connect to `$POLYLOCK_URL`, else to `sqlite://polylock.db`.
    pub async fn connect_default() -> Result<Client> {
        Self::connect(&default_url()).await
    }

    pub fn id(&self) -> ClientId {
        self.inner.id
    }

    /// The URL this client connected to, with any password replaced by `***`.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// The lease the watchdog keeps when an acquisition gives none.
    pub fn watchdog_lease(&self) -> Duration {
        self.inner.watchdog_lease
    }

    /// A handle on the lock `name`, owned by the new handle (and its clones). Holds nothing.
    pub fn lock(&self, name: &str) -> Result<Lock> {
        validate_name(name)?;
        let key = storage_key(self.inner.namespace.as_deref(), name);
        let owner = Owner { client_id: self.inner.id, local_id: next_handle_local_id() };
        Ok(Lock::new(self.clone(), name, key, owner))
    }

    /// Stop every watchdog, mark every hold lost, give the holds back to the store (best
    /// effort, bounded) and close the backend. Acquisitions still waiting fail with a
    /// `Connection` error, as do later calls on this client. Closing twice is harmless.
    pub async fn close(&self) {
        if self.inner.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        self.inner.closing.cancel();
        // An acquisition that was already talking to the store may still take the lock; let
        // each one record its hold (drained below) or give it back, while the backend is open.
        self.inner.acquisitions.close();
        let _ = tokio::time::timeout(CLOSE_WAIT, self.inner.acquisitions.wait()).await;
        for hold in self.inner.holds.drain() {
            surrender(self.inner.backend.as_ref(), hold).await;
        }
        self.inner.backend.close().await;
    }

    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }

    pub(crate) fn inner(&self) -> &ClientInner {
        &self.inner
    }
}

/// How long `close` waits for acquisitions under way to settle.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

impl ClientInner {
    pub fn ensure_open(&self) -> Result<()> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        Ok(())
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Every sixth of the watchdog lease, start the watchdogs of the holds that still need
    /// one, well before their first renewal is due at a third (see lock/hold.rs `Keeper`).
    /// Ends when the client closes or is dropped.
    fn sweep_watchdogs(self: &Arc<Self>) {
        let every = self.watchdog_lease / 6;
        let (client, closing) = (Arc::downgrade(self), self.closing.clone());
        self.runtime.spawn(async move {
            loop {
                tokio::select! {
                    _ = closing.cancelled() => return,
                    _ = tokio::time::sleep(every) => {}
                }
                let Some(client) = client.upgrade() else { return };
                client.holds.start_watchdogs(&client.runtime);
            }
        });
    }

    pub fn closed_error(&self) -> Error {
        Error::connection(format!("the client for {} is closed; connect again", self.url))
    }
}

impl Drop for ClientInner {
    /// The last handle is gone without `close()`: stop the watchdogs (dropping a hold aborts
    /// its keeper) and give the holds back in the background.
    fn drop(&mut self) {
        let holds = self.holds.drain();
        if holds.is_empty() {
            return;
        }
        let backend = self.backend.clone();
        for hold in &holds {
            hold.lost.mark(LostReason::ClientClosed);
        }
        self.runtime.spawn(async move {
            for hold in holds {
                surrender(backend.as_ref(), hold).await;
            }
        });
    }
}
