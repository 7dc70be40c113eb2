//! `etcd://` and `etcds://`: etcd's own concurrency.Mutex, shared with `etcdctl lock` and Go
//! services that lock the same name.
//!
//! - A session lease per client, kept alive in the background and revoked on close; every
//!   lock key of the client lives under one ([`session`]). When it ends, every hold under it
//!   is lost. Owners of one client that contend for one name at once each get a session of
//!   their own, so each has its own key in the queue ([`session_pool`]).
//! - The key layout and the wait are concurrency.Mutex's ([`mutex`]): `<name>/<lease hex>`,
//!   lowest create revision holds, each waiter watches only the key just older than its own;
//!   when that key is a hold of this client, its release wakes the waiter at once
//!   (backend/successors.rs).
//! - The fencing token is the holder key's create revision.
//! - polylock's per-hold lease is kept by the client ([`hold`]): the key is deleted when the
//!   hold's lease runs out unrenewed; the session TTL bounds what a crashed client leaves.
//! - Read-write locks in the layout of etcd's recipe ([`rw_lock`]: `<name>/read/<n>`,
//!   `<name>/write/<n>`) and semaphores of N permits ([`semaphore`]: `<name>/<lease hex>`
//!   keys, the N oldest hold, the count in `<name>/permits`).

mod counters;
mod election;
mod endpoint;
mod fence;
mod hold;
mod inspect;
mod latch;
mod mutex;
mod rw_lock;
mod semaphore;
mod session;
mod session_pool;
mod values;
mod waits;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use etcd_client::Client;
use tokio::time::{sleep, sleep_until, timeout, Instant};

use super::successors::Successors;
use crate::error::{Error, ErrorKind, Result};
use crate::spi::{
    AcquireRequest, Acquired, Capabilities, ExclusiveStore, HeldLock, HoldStore, LockKind, PermitStore, Release,
    Renewal, SharedStore, Store,
};
use crate::spi::{CounterStore, VersionStore};
use crate::url::ConnectUrl;
use endpoint::Endpoint;
use hold::EtcdHold;
use mutex::{Older, Standing};
use session::Session;
use session_pool::SessionPool;

pub(crate) struct EtcdBackend {
    client: Client,
    endpoint: Endpoint,
    pool: Arc<SessionPool>,
    /// Waiters of this client, by the key (and its create revision) each waits behind.
    successors: Arc<Successors<(Vec<u8>, i64)>>,
}

/// How one pass of the Mutex protocol ended.
enum Pass {
    Acquired {
        revision: i64,
        started: Instant,
    },
    /// The deadline passed or the caller went away; our key is deleted.
    GaveUp,
    /// The session ended or our key vanished while we waited: start over.
    Again,
}

/// Pauses between passes that failed on a connection error (a member died, a leader changed).
/// Short: the client's balancer keeps offering a dead member's connection for a while, and a
/// call refused there costs nothing, so the next try on a live member should come soon.
const RETRY_MIN: Duration = Duration::from_millis(20);
const RETRY_MAX: Duration = Duration::from_millis(250);

impl EtcdBackend {
    pub(crate) async fn open(url: &mut ConnectUrl) -> Result<Self> {
        let endpoint = Endpoint::parse(url)?;
        let options = endpoint.connect_options()?;
        let unreachable = |e: Error| {
            Error::new(e.kind(), format!("cannot connect to etcd at {}: {}", endpoint.redacted, e.message()))
        };
        let client = timeout(endpoint.timeout, Client::connect(&endpoint.members, Some(options)))
            .await
            .map_err(|_| Error::connection(format!("etcd at {} did not answer in time", endpoint.redacted)))?
            .map_err(|e| unreachable(map_error("connecting", e)))?;
        let pool = SessionPool::start(client.clone(), endpoint.session_ttl_secs, endpoint.timeout)
            .await
            .map_err(unreachable)?;
        Ok(EtcdBackend { client, endpoint, pool, successors: Arc::default() })
    }

    /// One pass: write our key; while an older key is left, wait for the newest of them to
    /// go and look again; hold once none is left and our key is still there.
    async fn pass(&self, request: &AcquireRequest, session: &Session, prefix: &str, key: &str) -> Result<Pass> {
        let started = Instant::now();
        let contention = mutex::contend(&self.client, prefix, key, session.lease_id).await?;
        if contention.existed {
            // Left by an earlier hold of this session whose delete did not get through (a lane
            // serves one owner of this client at a time). Reusing it would repeat an old
            // fencing token, so replace it.
            mutex::delete_if_revision(&self.client, key, contention.revision).await?;
            return Ok(Pass::Again);
        }
        let revision = contention.revision;
        let (mut standing, mut started) = match contention.predecessor {
            None => (Standing::Holds, started),
            Some(older) => (Standing::Behind(older), started),
        };
        let deadline = request.deadline;
        loop {
            let older = match standing {
                Standing::Holds if !session.is_ended() => return Ok(Pass::Acquired { revision, started }),
                Standing::Holds | Standing::Vanished => return Ok(Pass::Again),
                Standing::Behind(older) => older,
            };
            if deadline.is_some_and(|d| d <= Instant::now()) {
                self.give_up(session, key, revision).await;
                return Ok(Pass::GaveUp);
            }
            // Set up before the watch, so that a release here in between is not missed.
            let successor = self.successors.wait_behind((older.key.clone(), older.created));
            let next = tokio::select! {
                biased;
                _ = request.cancel.cancelled() => None,
                _ = sleep_until_some(deadline) => None,
                _ = session.ended.cancelled() => return Ok(Pass::Again),
                // The key we wait behind was held here, and its owner has let go.
                _ = successor.released.cancelled() => Some((Standing::Holds, Instant::now())),
                next = self.after_delete(prefix, key, revision, &older) => Some(next?),
            };
            let Some(next) = next else {
                self.give_up(session, key, revision).await;
                return Ok(Pass::GaveUp);
            };
            (standing, started) = next;
        }
    }

    /// Wait for `older` (seen at revision `at`) to be deleted, then look at the lock again,
    /// in one read: the newest key older than ours, and ours. Connection errors are ridden
    /// out (the caller bounds the wait by its deadline, cancellation and the session's end);
    /// a failed watch just means looking again sooner. Returns when the look was sent, as
    /// the lease of a hold runs from no earlier.
    async fn after_delete(&self, prefix: &str, key: &str, revision: i64, older: &Older) -> Result<(Standing, Instant)> {
        let mut pause = RETRY_MIN;
        if mutex::wait_for_delete(&self.client, older).await.is_err() {
            sleep(pause).await;
        }
        loop {
            let sent = Instant::now();
            match mutex::look(&self.client, prefix, key, revision).await {
                Ok(standing) => return Ok((standing, sent)),
                Err(err) if err.kind() != ErrorKind::Connection => return Err(err),
                Err(_) => {
                    pause = (pause * 2).min(RETRY_MAX);
                    sleep(pause).await;
                }
            }
        }
    }

    /// Delete our key after giving up; if etcd cannot be reached now, keep trying in the
    /// background until it can, or until the session (and the key with it) is gone.
    async fn give_up(&self, session: &Session, key: &str, revision: i64) {
        if mutex::delete_if_revision(&self.client, key, revision).await.is_ok() {
            return;
        }
        let (client, key, ended) = (self.client.clone(), key.to_string(), session.ended.clone());
        tokio::spawn(async move {
            while !ended.is_cancelled() {
                if mutex::delete_if_revision(&client, &key, revision).await.is_ok() {
                    return;
                }
                sleep(RETRY_MAX).await; // short: the next holder waits on this delete
            }
        });
    }
}

#[async_trait]
impl HoldStore for EtcdBackend {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Option<Acquired>> {
        let prefix = format!("{}/", request.key);
        let mut pause = RETRY_MIN;
        loop {
            let give_up = async {
                tokio::select! {
                    _ = request.cancel.cancelled() => {}
                    _ = sleep_until_some(request.deadline) => {}
                }
            };
            let Some(lane) = self.pool.take(&prefix, give_up).await? else { return Ok(None) };
            let session = lane.session.clone();
            let key = format!("{prefix}{:x}", session.lease_id);
            match self.pass(request, &session, &prefix, &key).await {
                Ok(Pass::Acquired { revision, started }) => {
                    let expires_at = started + request.lease;
                    let lost = request.lost.clone();
                    let hold = EtcdHold::start(&self.client, key, revision, lost, session, Some(lane), expires_at);
                    let token = u64::try_from(revision).map_err(|_| Error::backend("etcd sent a negative revision"))?;
                    return Ok(Some(Acquired { token, attempt_started: started, state: Some(hold) }));
                }
                Ok(Pass::GaveUp) => return Ok(None),
                Ok(Pass::Again) => continue,
                Err(err) if err.kind() != ErrorKind::Connection => return Err(err),
                Err(err) => {
                    // A member died or a leader is being elected: try again until the deadline
                    // (a try-once acquisition reports the error). A lasting outage ends the
                    // session, and starting a new one then fails with the error.
                    tracing::info!(op = "retry", backend = "etcd", name = %request.key, error = %err.message(),
                        "etcd could not be reached (a member down, a leader election?): trying another member");
                    let retry_at = Instant::now() + pause;
                    if request.deadline.is_some_and(|d| d <= retry_at) {
                        return Err(err);
                    }
                    tokio::select! {
                        _ = request.cancel.cancelled() => return Ok(None),
                        _ = sleep_until(retry_at) => {}
                    }
                    pause = (pause * 2).min(RETRY_MAX);
                }
            }
        }
    }

    async fn renew(&self, held: &HeldLock, lease: Duration) -> Result<Renewal> {
        renew_hold(&self.client, held, lease).await
    }

    async fn release(&self, held: &HeldLock, holds_left: u32) -> Result<Release> {
        if holds_left > 0 {
            return Ok(Release::Released);
        }
        let Some(hold) = etcd_hold(held) else { return Ok(Release::Gone) };
        // However this ends (even if the caller stops waiting), the hold is over.
        let _finish = FinishOnDrop(hold.clone());
        // A waiter of this client queued right behind us goes now (backend/successors.rs).
        self.successors.released(&(hold.key.as_bytes().to_vec(), hold.revision));
        match mutex::delete_if_revision(&self.client, &hold.key, hold.revision).await {
            Ok(true) => Ok(Release::Released),
            Ok(false) => Ok(Release::Gone),
            Err(err) => {
                self.give_up(&hold.session, &hold.key, hold.revision).await;
                Err(err)
            }
        }
    }

    async fn is_locked(&self, key: &str, _kind: LockKind) -> Result<bool> {
        // Any key under the prefix: the oldest holds, and a waiter's key outlives its
        // predecessors only until it finds it is the oldest.
        Ok(mutex::holder(&self.client, &format!("{key}/")).await?.is_some())
    }

    /// The holder key's lease TTL as etcd counts it: the session lease of whichever client
    /// holds (polylock, etcdctl or a Go service). A polylock holder with a shorter hold lease
    /// deletes its key sooner, so this is an upper bound for polylock holders.
    async fn remaining_lease(&self, key: &str, _kind: LockKind) -> Result<Option<Duration>> {
        let prefix = format!("{key}/");
        loop {
            let Some(holder) = mutex::holder(&self.client, &prefix).await? else { return Ok(None) };
            if holder.lease == 0 {
                return Ok(Some(Duration::MAX)); // written without a lease: kept until deleted
            }
            match mutex::lease_left(&self.client, holder.lease).await? {
                Some(left) => return Ok(Some(left)),
                // The holder's lease just ran out: its key is going, look again.
                None => tokio::task::yield_now().await,
            }
        }
    }

    /// Delete the holder's key (the oldest under the prefix), only if it is still the one
    /// read, so a new holder's key is never taken by mistake. The waiter watching it wakes
    /// and takes the lock, as after a release.
    async fn force_unlock(&self, key: &str, _kind: LockKind) -> Result<bool> {
        let prefix = format!("{key}/");
        loop {
            let Some(holder) = mutex::holder(&self.client, &prefix).await? else { return Ok(false) };
            if mutex::delete_if_revision(&self.client, &holder.key, holder.revision).await? {
                // One of ours: end the hold here too, so that its lane is free again.
                for session in self.pool.sessions().await {
                    session.finish_hold(&holder.key, holder.revision);
                }
                return Ok(true);
            }
        }
    }
}

#[async_trait]
impl Store for EtcdBackend {
    fn inspect(self: Arc<Self>) -> Option<Arc<dyn crate::spi::InspectStore>> {
        Some(self)
    }

    /// The URL's `timeout`: a release or renewal refused by a member that went away is sent
    /// again (to another member, through the client's balanced channel) within it.
    fn retry_within(&self) -> Duration {
        self.endpoint.timeout
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            rw_locks: true,
            semaphores: true,
            counters: true,
            versioned_values: true,
            elections: true,
            ..Capabilities::locks_only("etcd", &[LockKind::Reentrant])
        }
    }

    fn locks(self: Arc<Self>) -> Arc<ExclusiveStore> {
        self
    }

    fn rw_locks(self: Arc<Self>) -> Option<Arc<SharedStore>> {
        Some(Arc::new(rw_lock::EtcdRwLocks::new(self)))
    }

    fn semaphores(self: Arc<Self>) -> Option<Arc<PermitStore>> {
        Some(Arc::new(semaphore::EtcdSemaphores::new(self)))
    }

    fn latches(self: Arc<Self>) -> Option<Arc<dyn crate::spi::LatchStore>> {
        Some(Arc::new(latch::EtcdLatches { client: self.client.clone() }))
    }

    fn counters(self: Arc<Self>) -> Option<Arc<dyn CounterStore>> {
        Some(Arc::new(counters::EtcdCounters { client: self.client.clone() }))
    }

    fn versions(self: Arc<Self>) -> Option<Arc<dyn VersionStore>> {
        Some(Arc::new(values::EtcdValues { client: self.client.clone() }))
    }

    fn elections(self: Arc<Self>) -> Option<Arc<dyn crate::spi::ElectionStore>> {
        Some(Arc::new(election::EtcdElections::new(self)))
    }

    async fn close(&self) {
        for session in self.pool.close().await {
            session.close(&self.client, self.endpoint.timeout).await;
        }
    }
}

impl Drop for EtcdBackend {
    /// Dropped without close: stop the keep-alives; the lease then runs out on its own.
    fn drop(&mut self) {
        for session in self.pool.try_sessions() {
            session.end("the client was dropped".into());
        }
    }
}

struct FinishOnDrop(Arc<EtcdHold>);

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        self.0.finish();
    }
}

fn etcd_hold<K>(held: &HeldLock<K>) -> Option<Arc<EtcdHold>> {
    held.state.clone()?.downcast::<EtcdHold>().ok()
}

/// Renew any family's hold. The session's keep-alives keep the key; renewing the hold
/// confirms it is still ours and pushes back the moment the client deletes it.
async fn renew_hold<K>(client: &Client, held: &HeldLock<K>, lease: Duration) -> Result<Renewal> {
    let Some(hold) = etcd_hold(held) else { return Ok(Renewal::Gone) };
    if hold.session.is_ended() {
        return Ok(Renewal::Gone);
    }
    match mutex::key_revision(client, &hold.key).await? {
        Some(revision) if revision == hold.revision => {
            hold.extend(lease);
            Ok(Renewal::Renewed)
        }
        _ => Ok(Renewal::Gone),
    }
}

async fn sleep_until_some(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// etcd-client's errors in polylock's terms: unreachable members and refused credentials are
/// `Connection` errors, anything else etcd says is a `Backend` error.
pub(super) fn map_error(doing: &str, err: etcd_client::Error) -> Error {
    use etcd_client::Error as E;
    use tonic::Code;
    let kind = match &err {
        E::TransportError(_) | E::IoError(_) | E::LeaseKeepAliveError(_) | E::WatchError(_) => ErrorKind::Connection,
        E::GRpcStatus(status) => match status.code() {
            Code::Unavailable
            | Code::DeadlineExceeded
            | Code::Cancelled
            | Code::Unknown
            | Code::Aborted
            | Code::Unauthenticated
            | Code::PermissionDenied => ErrorKind::Connection,
            // A wrong password, or no credentials for a server that requires them.
            Code::InvalidArgument
                if status.message().contains("authentication failed")
                    || status.message().contains("user name is empty") =>
            {
                ErrorKind::Connection
            }
            // Credentials in the URL, for a server that does not check them: perhaps not the
            // cluster the user meant, so polylock does not go on without saying so.
            Code::FailedPrecondition if status.message().contains("authentication is not enabled") => {
                ErrorKind::Connection
            }
            _ => ErrorKind::Backend,
        },
        _ => ErrorKind::Backend,
    };
    let text = err.to_string();
    let hint = if text.contains("authentication failed") || text.contains("permission denied") {
        " (check the user name and password in the URL)"
    } else if text.contains("authentication is not enabled") {
        " (the URL gives a user name and password, but authentication is not enabled on this etcd server: \
         remove them from the URL, or enable authentication on the server)"
    } else if text.contains("user name is empty") {
        " (the server requires authentication: put user:password@ in the URL)"
    } else {
        ""
    };
    Error::new(kind, format!("etcd failed while {doing}{hint}: {text}"))
}
