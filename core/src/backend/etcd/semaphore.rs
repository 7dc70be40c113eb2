//! Semaphores on etcd (no incumbent layout; concurrency.Mutex's, widened to N holders):
//!
//! ```text
//! <name>/permits              N, in decimal, without a lease: written by the first user of the name
//! <name>/permit-<lease hex>    one key per contender, value "", under its session lease
//! ```
//!
//! A contender holds a permit while its key is among the N oldest (lowest create revision)
//! contender keys; waiters watch `<name>/permit-` for DELETEs and count again. One key per
//! session, as the Mutex, so each permit of a client is taken in a session of its own
//! (session_pool.rs). Only keys `<name>/permit-<lease hex>` count ([`is_permit_key`]): a
//! nested name's keys (`<name>/permit-x/..`) do not. Contender keys were `<name>/<lease hex>`
//! before issue 35, which made every permit a holder of the mutex `<name>` (and a mutex key a
//! permit): that layout is gone, so a semaphore taken by an earlier polylock and one taken by
//! this one on the same name do not see each other.
//!
//! Fencing (fence.rs): every grant writes the key `<name>:semaphore-fence` and takes that
//! write's revision as its token (a permit granted at once, with nobody granted since its key
//! was written, keeps its key's create revision: the fence key was written with it). So every
//! permit's token is greater than every earlier one, permits freed by one release included.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{Client, Compare, CompareOp, EventType, GetOptions, PutOptions, Txn, TxnOp, TxnOpResponse};
use tokio::time::{sleep, Instant};

use super::fence::{Family, Fence};
use super::hold::EtcdHold;
use super::mutex::{call, delete_if_revision};
use super::rw_lock::{lease_gone, past, session_ended, RETRY_PAUSE};
use super::waits::next_event;
use super::{etcd_hold, renew_hold, sleep_until_some, EtcdBackend, FinishOnDrop};
use crate::backend::checked_counts::CheckedCounts;
use crate::error::{Error, ErrorKind, Result};
use crate::spi::{AcquireRequest, Acquired, HeldLock, HoldStore, Permits, Release, Renewal};

pub(super) struct EtcdSemaphores {
    backend: Arc<EtcdBackend>,
    /// Names whose count this client has checked, with that count.
    checked: Mutex<CheckedCounts>,
}

fn count_key(name: &str) -> String {
    format!("{name}/permits")
}

/// The prefix of a semaphore's contender keys.
fn permit_prefix(name: &str) -> String {
    format!("{name}/permit-")
}

/// Whether `key` is a contender key of the semaphore whose keys start with `prefix`
/// ([`permit_prefix`]): the prefix, then a session lease id in lowercase hex.
fn is_permit_key(prefix: &str, key: &[u8]) -> bool {
    super::mutex::is_contender(prefix, key)
}

impl EtcdSemaphores {
    pub(super) fn new(backend: Arc<EtcdBackend>) -> Self {
        EtcdSemaphores { backend, checked: Mutex::default() }
    }

    fn client(&self) -> &Client {
        &self.backend.client
    }

    fn checked(&self) -> std::sync::MutexGuard<'_, CheckedCounts> {
        self.checked.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Write the count if the name has none; refuse another count.
    async fn check_count(&self, name: &str, permits: u32) -> Result<()> {
        let cached = self.checked().get(name).copied();
        let fixed = match cached {
            Some(fixed) => fixed,
            None => {
                let key = count_key(name);
                let txn = Txn::new()
                    .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(key.as_str(), permits.to_string(), None)])
                    .or_else([TxnOp::get(key.as_str(), None)]);
                let answer = call("writing the semaphore's count", || {
                    let (mut kv, txn) = (self.client().kv_client(), txn.clone());
                    async move { kv.txn(txn).await }
                })
                .await?;
                let fixed = if answer.succeeded() {
                    permits
                } else {
                    let value = match answer.op_responses().first() {
                        Some(TxnOpResponse::Get(get)) => get.kvs().first().map(|kv| kv.value().to_vec()),
                        _ => None,
                    };
                    value
                        .and_then(|v| String::from_utf8(v).ok())
                        .and_then(|v| v.parse().ok())
                        .ok_or_else(|| Error::backend(format!("etcd key '{key}' does not hold a semaphore's count")))?
                };
                self.checked().insert(name.to_string(), fixed);
                fixed
            }
        };
        Permits(permits).check_fixed(name, fixed)
    }

    /// How many contender keys are older than `revision`, and whether our key is still
    /// there, as seen at the returned revision. The third value is the revision the fence key
    /// was last written at.
    async fn older_than(
        &self,
        name: &str,
        fence: &Fence,
        key: &str,
        revision: i64,
    ) -> Result<(Option<i64>, i64, Option<i64>)> {
        let prefix = permit_prefix(name);
        // No limit: keys of nested names inside the range are filtered out here.
        let older = GetOptions::new().with_prefix().with_keys_only().with_max_create_revision(revision - 1);
        let txn = Txn::new().and_then([
            TxnOp::get(prefix.as_str(), Some(older)),
            TxnOp::get(key, Some(GetOptions::new().with_keys_only())),
            fence.read(),
        ]);
        let answer = call("counting the semaphore's holders", || {
            let (mut kv, txn) = (self.client().kv_client(), txn.clone());
            async move { kv.txn(txn).await }
        })
        .await?;
        let at = answer.header().map(|h| h.revision()).ok_or_else(|| Error::backend("etcd sent no revision"))?;
        let responses = answer.op_responses();
        let get = |i: usize| match responses.get(i) {
            Some(TxnOpResponse::Get(get)) => Ok(get),
            _ => Err(Error::backend("etcd answered the semaphore look-up with unexpected responses")),
        };
        let fence_written = Fence::last_written(get(2)?.kvs());
        if get(1)?.kvs().first().is_none_or(|kv| kv.create_revision() != revision) {
            return Ok((None, at, fence_written));
        }
        let older = get(0)?.kvs().iter().filter(|kv| is_permit_key(&prefix, kv.key())).count();
        Ok((Some(older as i64), at, fence_written))
    }

    async fn give_up(&self, key: &str, revision: i64) {
        // If etcd cannot be reached now, the key goes with the session lease.
        let _ = delete_if_revision(self.client(), key, revision).await;
    }
}

#[async_trait]
impl HoldStore<Permits> for EtcdSemaphores {
    async fn acquire(&self, request: &AcquireRequest<Permits>) -> Result<Option<Acquired>> {
        let name = request.key.as_str();
        let permits = request.kind.0;
        self.check_count(name, permits).await?;
        let prefix = permit_prefix(name);
        let fence = Fence::of(name, Family::Semaphore);
        loop {
            let give_up = async {
                tokio::select! {
                    _ = request.cancel.cancelled() => {}
                    _ = sleep_until_some(request.deadline) => {}
                }
            };
            let Some(lane) = self.backend.pool.take(&prefix, give_up).await? else { return Ok(None) };
            let session = lane.session.clone();
            let key = format!("{prefix}{:x}", session.lease_id);
            let started = Instant::now();
            let txn = Txn::new()
                .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
                .and_then([
                    TxnOp::put(key.as_str(), "", Some(PutOptions::new().with_lease(session.lease_id))),
                    fence.write(session.lease_id),
                ])
                .or_else([TxnOp::get(key.as_str(), Some(GetOptions::new().with_keys_only()))]);
            let written = call("writing the semaphore key", || {
                let (mut kv, txn) = (self.client().kv_client(), txn.clone());
                async move { kv.txn(txn).await }
            })
            .await;
            let answer = match written {
                // Revoked or expired before the keep-alives noticed: end it, take another.
                Err(err) if err.message().contains("lease not found") => {
                    session.end("etcd says the session lease expired or was revoked".into());
                    continue;
                }
                written => written?,
            };
            if !answer.succeeded() {
                // Left by an earlier permit of this session whose delete did not get through.
                if let Some(TxnOpResponse::Get(get)) = answer.op_responses().first() {
                    if let Some(kv) = get.kvs().first() {
                        delete_if_revision(self.client(), &key, kv.create_revision()).await?;
                    }
                }
                continue;
            }
            let revision = answer.header().map(|h| h.revision()).ok_or_else(|| Error::backend("no revision"))?;
            let mut first = true;
            loop {
                let (older, seen_at, fence_written) = match self.older_than(name, &fence, &key, revision).await {
                    Ok(looked) => looked,
                    Err(_) if session.is_ended() => return Err(session_ended(request, &session)),
                    // A member went away under the read: look again until the deadline.
                    Err(err) if err.kind() == ErrorKind::Connection && !past(request.deadline) => {
                        sleep(RETRY_PAUSE).await;
                        continue;
                    }
                    Err(err) => return Err(err),
                };
                match older {
                    None if lease_gone(self.client(), &session).await? => return Err(session_ended(request, &session)),
                    None => break, // our key was deleted from outside: queue again
                    Some(older) if older < i64::from(permits) => {
                        let lease_id = session.lease_id;
                        let token = fence.token(self.client(), &key, revision, lease_id, fence_written).await?;
                        let Some(token) = token else {
                            return Err(Error::lost(format!(
                                "the semaphore key {key} vanished as its permit was granted"
                            )));
                        };
                        // The lease counts from the grant: a waiter's wait is not part of it.
                        let attempt_started = if first { started } else { Instant::now() };
                        let expires_at = attempt_started + request.lease;
                        let lost = request.lost.clone();
                        let hold = EtcdHold::start(self.client(), key, revision, lost, session, Some(lane), expires_at);
                        return Ok(Some(Acquired { token, attempt_started, state: Some(hold) }));
                    }
                    Some(_) => {}
                }
                first = false;
                if request.deadline.is_some_and(|d| d <= Instant::now()) {
                    self.give_up(&key, revision).await;
                    return Ok(None);
                }
                tokio::select! {
                    biased;
                    _ = request.cancel.cancelled() => {
                        self.give_up(&key, revision).await;
                        return Ok(None);
                    }
                    _ = sleep_until_some(request.deadline) => {
                        self.give_up(&key, revision).await;
                        return Ok(None);
                    }
                    _ = session.ended.cancelled() => return Err(session_ended(request, &session)),
                    _ = next_event(self.client(), &prefix, true, seen_at, EventType::Delete) => {}
                }
            }
        }
    }

    async fn renew(&self, held: &HeldLock<Permits>, lease: Duration) -> Result<Renewal> {
        renew_hold(self.client(), held, lease).await
    }

    async fn release(&self, held: &HeldLock<Permits>, _holds_left: u32) -> Result<Release> {
        let Some(hold) = etcd_hold(held) else { return Ok(Release::Gone) };
        let _finish = FinishOnDrop(hold.clone());
        match delete_if_revision(self.client(), &hold.key, hold.revision).await {
            Ok(true) => Ok(Release::Released),
            Ok(false) => Ok(Release::Gone),
            Err(err) => {
                self.give_up(&hold.key, hold.revision).await;
                Err(err)
            }
        }
    }

    async fn is_locked(&self, key: &str, _permits: Permits) -> Result<bool> {
        let options = GetOptions::new().with_prefix().with_keys_only();
        let prefix = permit_prefix(key);
        let answer = call("counting the semaphore's holders", || {
            let (mut kv, options, prefix) = (self.client().kv_client(), options.clone(), prefix.clone());
            async move { kv.get(prefix, Some(options)).await }
        })
        .await?;
        Ok(answer.kvs().iter().any(|kv| is_permit_key(&prefix, kv.key())))
    }
}
