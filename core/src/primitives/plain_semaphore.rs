//! Plain semaphores: a counter of permits that nobody owns, in Redisson's `RSemaphore` layout
//! (Redis only). An explicit opt-in for sharing a name with Redisson's RSemaphore users.
//!
//! **Permits taken here are not owned and have no lease.** A process that crashes (or
//! forgets) before giving its permits back leaks them for good: the count stays lower until
//! someone calls [`PlainSemaphore::add_permits`] or [`PlainSemaphore::release`] for them. Any
//! caller may give back any number of permits, taken or not. There is no fencing token, no
//! watchdog and no lost signal. [`crate::Semaphore`] (owned permits with leases) is the
//! semaphore to use unless Redisson's RSemaphore must see the same permits.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::spi::PlainPermitStore;

/// A named plain semaphore. Cheap to clone; holds nothing.
#[derive(Clone)]
pub struct PlainSemaphore {
    engine: Arc<Engine>,
    store: Arc<dyn PlainPermitStore>,
    name: Arc<str>,
    key: Arc<str>,
}

impl fmt::Debug for PlainSemaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlainSemaphore").field("name", &self.name).finish()
    }
}

/// Permits taken by a call that may be given up on before it hears so: given back unless
/// the caller takes them ([`Taken::keep`]), so a call dropped at any moment leaks nothing.
struct Taken {
    store: Arc<dyn PlainPermitStore>,
    key: Arc<str>,
    permits: u32,
    runtime: tokio::runtime::Handle,
    kept: bool,
}

impl Taken {
    fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        let (store, key, permits) = (self.store.clone(), self.key.clone(), self.permits);
        self.runtime.spawn(async move {
            let _ = store.release(&key, permits).await;
        });
    }
}

impl PlainSemaphore {
    pub(crate) fn new(engine: Arc<Engine>, name: &str, key: String) -> Result<Self> {
        let store = engine.plain_permit_store()?;
        Ok(PlainSemaphore { engine, store, name: name.into(), key: key.into() })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Set the count to `permits` if the semaphore has none yet (Redisson's `trySetPermits`);
    /// whether it was set. A semaphore without a count has no permits to take.
    pub async fn try_set_permits(&self, permits: u32) -> Result<bool> {
        self.ensure_open()?;
        self.store.try_set_permits(&self.key, permits).await
    }

    /// Take `permits` at once (none: at once, as Redisson), waiting as long as it takes.
    pub async fn acquire(&self, permits: u32) -> Result<()> {
        self.acquire_with(permits, None).await
    }

    /// Take `permits` at once, waiting at most `wait` (`None`: for ever); `Timeout` when the
    /// wait runs out. Dropping the call stops the wait, and permits it took are given back.
    pub async fn acquire_with(&self, permits: u32, wait: Option<Duration>) -> Result<()> {
        if self.take(permits, wait).await? {
            return Ok(());
        }
        Err(Error::timeout(format!(
            "{permits} permit(s) of plain semaphore '{}' did not come free within {}ms",
            self.name,
            wait.unwrap_or_default().as_millis()
        )))
    }

    /// Take `permits` if that many are available now; whether they were taken.
    pub async fn try_acquire(&self, permits: u32) -> Result<bool> {
        self.take(permits, Some(Duration::ZERO)).await
    }

    /// Give `permits` back (anyone may, whoever took them) and wake the waiters.
    pub async fn release(&self, permits: u32) -> Result<()> {
        self.ensure_open()?;
        if permits == 0 {
            return Ok(()); // as Redisson: nothing to give back
        }
        self.store.release(&self.key, permits).await.map(drop)
    }

    /// The count available now (0 for a semaphore without a count; negative after
    /// `add_permits` took more than there were).
    pub async fn available_permits(&self) -> Result<i64> {
        self.ensure_open()?;
        self.store.available(&self.key).await
    }

    /// Change the count by `delta`, which may be negative (Redisson's `addPermits`).
    pub async fn add_permits(&self, delta: i32) -> Result<()> {
        self.ensure_open()?;
        self.store.add_permits(&self.key, delta).await
    }

    /// Take every available permit; how many that was (Redisson's `drainPermits`).
    pub async fn drain_permits(&self) -> Result<i64> {
        self.ensure_open()?;
        self.store.drain(&self.key).await
    }

    fn ensure_open(&self) -> Result<()> {
        if self.engine.is_closed() {
            return Err(Error::connection(format!("the client for {} is closed; connect again", self.engine.url())));
        }
        Ok(())
    }

    /// The store's wait runs in a task of its own, so that permits it takes after the caller
    /// went away are given back (see `Taken`).
    async fn take(&self, permits: u32, wait: Option<Duration>) -> Result<bool> {
        self.ensure_open()?;
        if permits == 0 {
            return Ok(true); // as Redisson: nothing to take
        }
        let deadline = wait.map(|wait| Instant::now() + wait);
        let cancel = CancellationToken::new();
        let _stop_on_drop = cancel.clone().drop_guard();
        let (answer, taken) = tokio::sync::oneshot::channel();
        let (store, key, runtime) = (self.store.clone(), self.key.clone(), self.engine.runtime().clone());
        self.engine.runtime().spawn(async move {
            let outcome = store.acquire(&key, permits, deadline, &cancel).await;
            let outcome = outcome.map(|taken| taken.then(|| Taken { store, key, permits, runtime, kept: false }));
            let _ = answer.send(outcome); // a caller gone drops the `Taken`: given back
        });
        match taken.await {
            Ok(outcome) => Ok(outcome?.map(Taken::keep).is_some()),
            Err(_) => Err(Error::connection(format!(
                "the client stopped while plain semaphore '{}' was being acquired",
                self.name
            ))),
        }
    }
}
