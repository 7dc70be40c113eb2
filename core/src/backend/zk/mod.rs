//! `zk://host:2181,host:2181/chroot`: locks that Curator's InterProcessMutex sees as its own.
//!
//! Layout and algorithm are Curator's (see `path` and `recipe`). The fencing token is the
//! czxid of the holder's node: zxids grow across the whole ensemble, and a later holder's node
//! was always created after an earlier holder's.
//!
//! Session states are reported as Curator reports them to a ConnectionStateListener:
//! connection lost, session alive -> [`crate::Guard::is_suspended`] (SUSPENDED: the lock may
//! still be held, but do not rely on it); reconnected in time -> not suspended (RECONNECTED);
//! session expired -> the guard is lost (LOST), since ZooKeeper deletes the session's
//! ephemeral nodes. Later acquisitions open a new session.
//!
//! Leases: ZooKeeper has no TTL for ephemeral nodes, so a lease (explicit, or the watchdog's
//! between renewals) is kept by the holding client, which deletes its node when the lease
//! runs out. A holder that dies loses its node with its session, after the session timeout.

mod config;
mod counters;
mod election;
mod inspect;
mod latch;
mod path;
mod query;
mod recipe;
mod rw_lock;
mod semaphore;
mod session;
mod spawner;
mod values;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::spi::{
    AcquireRequest, Acquired, Capabilities, ExclusiveStore, HeldLock, HoldStore, LockKind, LostNotifier, PermitStore,
    Release, Renewal, SharedStore, Store,
};
use crate::spi::{CounterStore, VersionStore};
use crate::url::ConnectUrl;
use config::ZkConfig;
use recipe::{delete_node, Stop};
use session::{acls, give_up_token, map_error, Session};

/// How long a release waits for its delete before leaving it to the background (the delete
/// keeps being retried there until it succeeds or the session ends).
const RELEASE_WAIT: Duration = Duration::from_secs(2);

pub(crate) struct ZkBackend {
    config: ZkConfig,
    /// The live session; replaced by a new one when it ends. `None` once closed.
    current: tokio::sync::Mutex<Option<Arc<Session>>>,
}

/// What a hold carries: its node, its session, and its lease timer.
struct ZkHold {
    session: Arc<Session>,
    node: String,
    hold_id: u64,
    lease_end: watch::Sender<Instant>,
    released: CancellationToken,
}

impl ZkBackend {
    pub(crate) async fn open(url: &mut ConnectUrl) -> Result<Self> {
        let config = ZkConfig::parse(url)?;
        let session = Session::connect(&config).await?;
        Ok(ZkBackend { config, current: tokio::sync::Mutex::new(Some(session)) })
    }

    /// The live session, opening a new one if the last has ended.
    async fn session(&self) -> Result<Arc<Session>> {
        let mut current = self.current.lock().await;
        let session = current.as_ref().ok_or_else(|| Error::connection("the ZooKeeper client is closed"))?;
        if session.is_ended() {
            *current = Some(Session::connect(&self.config).await?);
        }
        Ok(current.clone().expect("set above"))
    }
}

/// Keep a granted node as a hold: tie it to the session's fate (lost, suspended) and delete
/// it when `lease` runs out unrenewed.
fn start_hold(lease: Duration, lost: &LostNotifier, session: Arc<Session>, held: recipe::Held) -> Acquired {
    let hold_id = session.register(lost.clone());
    let (lease_end, lease_rx) = watch::channel(held.at + lease);
    let released = CancellationToken::new();
    tokio::spawn(keep_lease(session.clone(), held.node.clone(), hold_id, lease_rx, released.clone()));
    let hold = ZkHold { session, node: held.node, hold_id, lease_end, released };
    Acquired { token: held.token, attempt_started: held.at, state: Some(Arc::new(hold)) }
}

/// Delete the node when its lease runs out without a renewal.
async fn keep_lease(
    session: Arc<Session>,
    node: String,
    hold_id: u64,
    mut lease_end: watch::Receiver<Instant>,
    released: CancellationToken,
) {
    loop {
        let end = *lease_end.borrow_and_update();
        tokio::select! {
            _ = sleep_until(end) => {
                if *lease_end.borrow() == end {
                    session.forget(hold_id);
                    let _ = delete_node(&session, &node).await;
                    return;
                }
            }
            changed = lease_end.changed() => if changed.is_err() { return },
            _ = released.cancelled() => return,
        }
    }
}

fn hold_of<K>(held: &HeldLock<K>) -> Result<&ZkHold> {
    held.state
        .as_deref()
        .and_then(|state| state.downcast_ref::<ZkHold>())
        .ok_or_else(|| Error::backend("a ZooKeeper hold is missing its node"))
}

/// Renew a hold of any family: its node must still be there, in its session.
async fn renew_hold(hold: &ZkHold, lease: Duration) -> Result<Renewal> {
    let sent = Instant::now();
    if hold.session.is_ended() || hold.released.is_cancelled() {
        return Ok(Renewal::Gone);
    }
    let stat = hold
        .session
        .client()?
        .check_stat(&hold.node)
        .await
        .map_err(|err| map_error(err, &format!("checking the lock node {}", hold.node)))?;
    match stat {
        Some(stat) if stat.ephemeral_owner == hold.session.id.0 => {
            hold.lease_end.send_replace(sent + lease);
            Ok(Renewal::Renewed)
        }
        _ => Ok(Renewal::Gone),
    }
}

/// Give back the last hold of an owner, of any family: delete its node.
async fn release_hold(hold: &ZkHold) -> Result<Release> {
    hold.released.cancel();
    hold.session.forget(hold.hold_id);
    // A waiter of this session queued right behind us goes now (backend/successors.rs).
    hold.session.successors.released(&hold.node);
    let deleting = tokio::spawn({
        let (session, node) = (hold.session.clone(), hold.node.clone());
        async move { delete_node(&session, &node).await }
    });
    match tokio::time::timeout(RELEASE_WAIT, deleting).await {
        Ok(Ok(Ok(true))) => Ok(Release::Released),
        Ok(Ok(Ok(false))) => Ok(Release::Gone),
        Ok(Ok(Err(err))) => Err(err),
        Ok(Err(join)) => Err(Error::backend("deleting a ZooKeeper lock node stopped").with_source(join)),
        // Still retrying through a lost connection; it goes on in the background.
        Err(_) => Ok(Release::Released),
    }
}

#[async_trait]
impl HoldStore for ZkBackend {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Option<Acquired>> {
        let lock_path = path::lock_path(&request.key)?;
        let (give_up, timer) = give_up_token(request.deadline, &request.cancel);
        let _stop_timer = scopeguard(move || timer.abort());
        let data = request.owner.to_string();
        loop {
            let session = self.session().await?;
            let acls = acls(&self.config);
            match recipe::contend(&session, acls, &lock_path, &recipe::MUTEX, data.as_bytes(), &give_up).await {
                Ok(held) => return Ok(Some(start_hold(request.lease, &request.lost, session, held))),
                Err(Stop::GaveUp) => return Ok(None),
                Err(Stop::Restart) if give_up.is_cancelled() => return Ok(None),
                Err(Stop::Restart) => continue,
                Err(Stop::Failed(err)) => return Err(err),
            }
        }
    }

    async fn renew(&self, held: &HeldLock, lease: Duration) -> Result<Renewal> {
        renew_hold(hold_of(held)?, lease).await
    }

    async fn release(&self, held: &HeldLock, holds_left: u32) -> Result<Release> {
        if holds_left > 0 {
            return Ok(Release::Released);
        }
        release_hold(hold_of(held)?).await
    }

    async fn is_locked(&self, key: &str, _kind: LockKind) -> Result<bool> {
        query::is_locked(&*self.session().await?, &path::lock_path(key)?).await
    }

    async fn remaining_lease(&self, key: &str, _kind: LockKind) -> Result<Option<Duration>> {
        query::remaining_lease(&*self.session().await?, &path::lock_path(key)?).await
    }

    async fn force_unlock(&self, key: &str, _kind: LockKind) -> Result<bool> {
        query::force_unlock(&*self.session().await?, &path::lock_path(key)?).await
    }
}

#[async_trait]
impl Store for ZkBackend {
    fn inspect(self: Arc<Self>) -> Option<Arc<dyn crate::spi::InspectStore>> {
        Some(self)
    }

    /// `connect_timeout`: the session reconnects (to another server) within it.
    fn retry_within(&self) -> Duration {
        self.config.connect_timeout
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            rw_locks: true,
            semaphores: true,
            counters: true,
            versioned_values: true,
            elections: true,
            ..Capabilities::locks_only("zookeeper", &[LockKind::Reentrant])
        }
    }

    fn locks(self: Arc<Self>) -> Arc<ExclusiveStore> {
        self
    }

    fn rw_locks(self: Arc<Self>) -> Option<Arc<SharedStore>> {
        Some(Arc::new(rw_lock::ZkRwLocks::new(self)))
    }

    fn semaphores(self: Arc<Self>) -> Option<Arc<PermitStore>> {
        Some(Arc::new(semaphore::ZkSemaphores::new(self)))
    }

    fn latches(self: Arc<Self>) -> Option<Arc<dyn crate::spi::LatchStore>> {
        Some(Arc::new(latch::ZkLatches { backend: self }))
    }

    fn counters(self: Arc<Self>) -> Option<Arc<dyn CounterStore>> {
        Some(Arc::new(counters::ZkCounters { backend: self }))
    }

    fn versions(self: Arc<Self>) -> Option<Arc<dyn VersionStore>> {
        Some(Arc::new(values::ZkValues::new(self)))
    }

    fn elections(self: Arc<Self>) -> Option<Arc<dyn crate::spi::ElectionStore>> {
        Some(Arc::new(election::ZkElections::new(self)))
    }

    async fn close(&self) {
        if let Some(session) = self.current.lock().await.take() {
            session.close();
        }
    }
}

/// Run `f` when the returned value is dropped.
fn scopeguard(f: impl FnOnce()) -> impl Drop {
    struct Guard<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    Guard(Some(f))
}
