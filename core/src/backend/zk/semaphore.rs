//! Semaphores that Curator's InterProcessSemaphoreV2 sees as its own.
//!
//! ```text
//! /<name>                                     the semaphore path; its data: N, in decimal (polylock's)
//! /<name>/locks/_c_<uuid>-lock-<seq>          InterProcessMutex that contenders take in turn
//! /<name>/leases/_c_<uuid>-lease-<seq>        one EPHEMERAL_SEQUENTIAL node per lease
//! ```
//!
//! Curator's algorithm (`internalAcquire1Lease`), step by step: take the mutex under `locks`;
//! create our lease node; list the leases (watching them) until there are at most N, our node
//! among them; release the mutex. Holding the mutex while waiting makes the semaphore FIFO,
//! and means lease nodes are created, and granted, one contender at a time, in czxid order:
//! the fencing token is the lease node's czxid, as for the mutex. A release deletes the lease
//! node, which wakes the contender waiting under the mutex.
//!
//! Curator does not store N: every participant passes the same number. polylock fixes it by
//! the first use of the name, as everywhere: the semaphore path is created PERSISTENT with N
//! as its data (or, created empty by Curator, given N by the first polylock contender), and a
//! contender asking with another N is refused with `InvalidArgument`. Curator ignores that
//! data. A path whose data is something else than a count is not polylock's to check.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use zookeeper_client as zk;

use super::path::{self, node_prefix};
use super::recipe::{self, create_protected, retry_on_loss, Abandon, Held, Stop, MAX_IO_RETRIES, MUTEX};
use super::rw_lock::session_ended_while_waiting;
use super::session::{acls, give_up_token, map_error, Session};
use super::{hold_of, release_hold, renew_hold, scopeguard, start_hold, ZkBackend};
use crate::backend::checked_counts::CheckedCounts;
use crate::error::{Error, Result};
use crate::spi::{AcquireRequest, Acquired, HeldLock, HoldStore, Permits, Release, Renewal};

/// Curator's `InterProcessSemaphoreV2.LOCK_PARENT`, `LEASE_PARENT` and `LEASE_BASE_NAME`.
const LOCK_PARENT: &str = "locks";
const LEASE_PARENT: &str = "leases";
const LEASE_NAME: &str = "lease-";

pub(super) struct ZkSemaphores {
    backend: Arc<ZkBackend>,
    /// Semaphore paths whose count this client has checked, with that count.
    checked: Mutex<CheckedCounts>,
}

impl ZkSemaphores {
    pub(super) fn new(backend: Arc<ZkBackend>) -> Self {
        ZkSemaphores { backend, checked: Mutex::default() }
    }

    fn checked(&self) -> std::sync::MutexGuard<'_, CheckedCounts> {
        self.checked.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fix the count of `path` to `permits` if it has none yet; refuse another count.
    async fn check_count(&self, session: &Arc<Session>, path: &str, permits: u32) -> std::result::Result<(), Stop> {
        if let Some(&fixed) = self.checked().get(path) {
            return if fixed == permits { Ok(()) } else { Err(other_count(path, fixed, permits).into()) };
        }
        let never = CancellationToken::new();
        let text = permits.to_string();
        let acls = acls(&self.backend.config);
        loop {
            match retry_on_loss!(session, &never, |client| client.get_data(path))? {
                Ok((data, stat)) if data.is_empty() => {
                    let set = retry_on_loss!(session, &never, |client| client.set_data(
                        path,
                        text.as_bytes(),
                        Some(stat.version)
                    ))?;
                    match set {
                        Ok(_) => break,
                        Err(zk::Error::BadVersion | zk::Error::NoNode) => continue,
                        Err(err) => return Err(map_error(err, &format!("fixing the count of {path}")).into()),
                    }
                }
                Ok((data, _)) => match std::str::from_utf8(&data).ok().and_then(|text| text.parse::<u32>().ok()) {
                    Some(fixed) if fixed != permits => return Err(other_count(path, fixed, permits).into()),
                    _ => break,
                },
                Err(zk::Error::NoNode) => {
                    if let Some((parent, _)) = path.rsplit_once('/').filter(|(parent, _)| !parent.is_empty()) {
                        let containers = zk::CreateMode::Container.with_acls(acls);
                        match retry_on_loss!(session, &never, |client| client.mkdir(parent, &containers))? {
                            Ok(()) => {}
                            Err(err) => return Err(map_error(err, &format!("creating {parent}")).into()),
                        }
                    }
                    let persistent = zk::CreateMode::Persistent.with_acls(acls);
                    match retry_on_loss!(session, &never, |client| client.create(path, text.as_bytes(), &persistent))? {
                        Ok(_) => break,
                        Err(zk::Error::NodeExists | zk::Error::NoNode) => continue,
                        Err(err) => return Err(map_error(err, &format!("creating the semaphore path {path}")).into()),
                    }
                }
                Err(err) => return Err(map_error(err, &format!("reading the count of {path}")).into()),
            }
        }
        self.checked().insert(path.to_string(), permits);
        Ok(())
    }

    /// One lease, Curator's way: under the mutex, create our lease node and wait until at
    /// most `permits` lease nodes are left, ours among them.
    async fn take_lease(
        &self,
        session: &Arc<Session>,
        path: &str,
        permits: u32,
        data: &[u8],
        give_up: &CancellationToken,
    ) -> std::result::Result<Held, Stop> {
        self.check_count(session, path, permits).await?;
        let acls = acls(&self.backend.config);
        let locks = format!("{path}/{LOCK_PARENT}");
        let mutex = recipe::contend(session, acls, &locks, &MUTEX, data, give_up).await?;
        let mut mutex_node = Abandon::new(session, &locks, &mutex.node);
        mutex_node.created(&mutex.node);
        let outcome = lease_under_mutex(session, acls, path, permits, data, give_up).await;
        // Whatever happened, the next contender goes now (or, if the delete is slow, when
        // it lands in the background).
        mutex_node.delete_now().await;
        outcome
    }
}

/// The part of [`ZkSemaphores::take_lease`] done while holding the mutex.
async fn lease_under_mutex(
    session: &Arc<Session>,
    acls: zk::Acls<'static>,
    path: &str,
    permits: u32,
    data: &[u8],
    give_up: &CancellationToken,
) -> std::result::Result<Held, Stop> {
    let leases = format!("{path}/{LEASE_PARENT}");
    let prefix = format!("{leases}/{}", node_prefix(&uuid::Uuid::new_v4(), LEASE_NAME));
    let mut ours = Abandon::new(session, &leases, &prefix);
    let at = Instant::now();
    let sequential = zk::CreateMode::EphemeralSequential;
    let (node, czxid, listed) = create_protected(session, acls, sequential, &leases, &prefix, data, give_up).await?;
    ours.created(&node);
    let name = node.rsplit('/').next().unwrap_or_default().to_string();
    // The listing sent right behind the create, without a watch: enough when it grants.
    if let Some(children) = listed {
        if children.contains(&name) && children.len() <= permits as usize {
            ours.kept = true;
            return Ok(Held { node, token: czxid, at });
        }
    }
    loop {
        let at = Instant::now();
        let (children, watcher) =
            match retry_on_loss!(session, give_up, |client| client.list_and_watch_children(&leases))? {
                Ok(listed) => listed,
                Err(zk::Error::NoNode) => return Err(Stop::Restart),
                Err(err) => return Err(map_error(err, &format!("listing the leases of {path}")).into()),
            };
        if !children.contains(&name) {
            return Err(Stop::Restart); // Curator's RETRY_DUE_TO_MISSING_NODE
        }
        if children.len() <= permits as usize {
            ours.kept = true;
            return Ok(Held { node, token: czxid, at });
        }
        tokio::select! {
            _ = watcher.changed() => {}
            _ = give_up.cancelled() => {
                ours.delete_now().await;
                return Err(Stop::GaveUp);
            }
        }
    }
}

fn other_count(path: &str, fixed: u32, permits: u32) -> Error {
    Permits(permits).other_count(path, fixed)
}

#[async_trait]
impl HoldStore<Permits> for ZkSemaphores {
    async fn acquire(&self, request: &AcquireRequest<Permits>) -> Result<Option<Acquired>> {
        let path = path::lock_path(&request.key)?;
        let (give_up, timer) = give_up_token(request.deadline, &request.cancel);
        let _stop_timer = scopeguard(move || timer.abort());
        let data = request.owner.to_string();
        loop {
            let session = self.backend.session().await?;
            match self.take_lease(&session, &path, request.kind.0, data.as_bytes(), &give_up).await {
                Ok(held) => return Ok(Some(start_hold(request.lease, &request.lost, session, held))),
                Err(Stop::GaveUp) => return Ok(None),
                Err(Stop::Restart) if give_up.is_cancelled() => return Ok(None),
                Err(Stop::Restart) if session.is_ended() => return Err(session_ended_while_waiting(request)),
                Err(Stop::Restart) => continue,
                Err(Stop::Failed(err)) => return Err(err),
            }
        }
    }

    async fn renew(&self, held: &HeldLock<Permits>, lease: Duration) -> Result<Renewal> {
        renew_hold(hold_of(held)?, lease).await
    }

    async fn release(&self, held: &HeldLock<Permits>, _holds_left: u32) -> Result<Release> {
        release_hold(hold_of(held)?).await
    }

    /// Whether any lease is out (any client's, Curator's included).
    async fn is_locked(&self, key: &str, _permits: Permits) -> Result<bool> {
        let leases = format!("{}/{LEASE_PARENT}", path::lock_path(key)?);
        match self.backend.session().await?.client()?.list_children(&leases).await {
            Ok(children) => Ok(!children.is_empty()),
            Err(zk::Error::NoNode) => Ok(false),
            Err(err) => Err(map_error(err, &format!("listing the leases of {leases}"))),
        }
    }
}
