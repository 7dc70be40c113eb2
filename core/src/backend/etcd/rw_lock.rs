//! Read-write locks in the layout of etcd's own recipe (client/v3/experimental/recipes/
//! rwmutex.go), so Go services using `recipe.NewRWMutex(session, NAME)` share and exclude
//! with polylock:
//!
//! ```text
//! <name>/read/<n>    a reader's key, value "", under the session lease
//! <name>/write/<n>   a writer's key, value "", under the session lease
//! ```
//!
//! `<n>` is `<session lease id in hex>-<hold number>` (the recipe uses the time in
//! nanoseconds): unique per hold, so every owner of a client can queue under one session.
//! Keys are written once and never modified, so their create and mod revisions are equal
//! (the recipe ranks by mod revision). A reader waits for the newest writer key older than
//! its own; a writer for the newest key of either side older than its own; each watches that
//! key's DELETE and looks again. So the queue is FIFO: a reader that arrives after a waiting
//! writer waits behind it, and writers are never starved. Unlike the recipe (etcd #16221), a
//! waiter whose session ends stops with `Lost` instead of "acquiring".
//!
//! Only the lock's own keys count (issue 35): `<name>/read/<n>` and `<name>/write/<n>` with no
//! further `/` in `<n>` ([`Keys::is_own`]). The recipe counts every key under `<name>/`, so a
//! mutex, a semaphore or a nested name (`<name>/sub/..`) held a Go writer; here they do not.
//!
//! Downgrade (the recipe has none): a write holder that takes the read side writes
//! `<name>/read/<n of its write key>`. When it then releases the write side, its write key
//! stays (so Go clients, which know nothing of downgrades, keep excluding it as a writer) and
//! the read key's value becomes `downgraded`: polylock readers pass a write key whose
//! same-numbered read key says so. Both keys go when the read side is released.
//!
//! Fencing (fence.rs): every grant writes the key `<name>:rw-fence`, outside the recipe's
//! prefix, and takes that write's revision as its token (a hold granted at once, with nobody
//! granted since its key was written, keeps its key's create revision: the fence key was
//! written with it). So every grant's token is greater than every earlier one, readers let
//! in by one release included, and the recipe's keys are never modified.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{
    Client, Compare, CompareOp, EventType, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse,
};
use tokio::time::{sleep, Instant};

use super::fence::{Family, Fence};
use super::hold::EtcdHold;
use super::mutex::{call, delete_if_revision, lease_left};
use super::session::Session;
use super::waits::next_event;
use super::{etcd_hold, renew_hold, sleep_until_some, EtcdBackend, FinishOnDrop};
use crate::error::{Error, ErrorKind, Result};
use crate::owner::Owner;
use crate::spi::{AcquireRequest, Acquired, HeldLock, HoldStore, Release, Renewal, RwMode};

/// The read key's value once its owner's write side is released (a downgrade).
const DOWNGRADED: &str = "downgraded";

static NEXT_HOLD: AtomicU64 = AtomicU64::new(1);

/// The key prefixes of one lock.
struct Keys {
    all: String,
    read: String,
    write: String,
}

impl Keys {
    fn of(name: &str) -> Keys {
        Keys { all: format!("{name}/"), read: format!("{name}/read/"), write: format!("{name}/write/") }
    }

    /// Whether `key` is a reader's or a writer's key of this lock (not a nested name's, nor
    /// another primitive's under the same prefix).
    fn is_own(&self, key: &[u8]) -> bool {
        [&self.read, &self.write]
            .iter()
            .any(|side| key.strip_prefix(side.as_bytes()).is_some_and(|n| !n.is_empty() && !n.contains(&b'/')))
    }
}

/// A write hold of this client: what its owner's downgrade needs.
struct WriteKey {
    key: String,
    revision: i64,
    suffix: String,
    session: Arc<Session>,
}

pub(super) struct EtcdRwLocks {
    backend: Arc<EtcdBackend>,
    /// This client's write holds, by lock name and owner.
    writers: Mutex<HashMap<(String, Owner), WriteKey>>,
    /// Read holds taken by write holders, by their write key.
    downgrades: Mutex<HashMap<String, Arc<EtcdHold>>>,
}

/// Where a waiter stands after a look.
enum Standing {
    /// Granted; the fence key was last written at this revision (fence.rs).
    Holds { fence_written: Option<i64> },
    /// Our key is gone.
    Vanished,
    /// Wait for this key's DELETE (and, for a reader behind a write key, for its read key's
    /// change to `downgraded`), after the revision the look was made at.
    Behind { key: String, downgrade_key: Option<String>, seen_at: i64 },
}

fn map<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl EtcdRwLocks {
    pub(super) fn new(backend: Arc<EtcdBackend>) -> Self {
        EtcdRwLocks { backend, writers: Mutex::default(), downgrades: Mutex::default() }
    }

    fn client(&self) -> &Client {
        &self.backend.client
    }

    /// The write holder's read: `<name>/read/<n of its write key>`, granted at once.
    async fn downgrade(
        &self,
        request: &AcquireRequest<RwMode>,
        keys: &Keys,
        fence: &Fence,
    ) -> Result<Option<Acquired>> {
        let Some((write_key, write_revision, suffix, session)) = map(&self.writers)
            .get(&(request.key.clone(), request.owner))
            .filter(|write| !write.session.is_ended())
            .map(|write| (write.key.clone(), write.revision, write.suffix.clone(), write.session.clone()))
        else {
            return Ok(None);
        };
        let started = Instant::now();
        let key = format!("{}{suffix}", keys.read);
        let txn = Txn::new()
            .when([
                Compare::create_revision(key.as_str(), CompareOp::Equal, 0),
                Compare::create_revision(write_key.as_str(), CompareOp::Equal, write_revision),
            ])
            .and_then([
                TxnOp::put(key.as_str(), "", Some(PutOptions::new().with_lease(session.lease_id))),
                fence.write(session.lease_id),
            ]);
        let answer = call("writing the downgrade's read key", || {
            let (mut kv, txn) = (self.client().kv_client(), txn.clone());
            async move { kv.txn(txn).await }
        })
        .await?;
        if !answer.succeeded() {
            return Ok(None); // the write key is gone: queue as anyone
        }
        let revision = header_revision(answer.header())?;
        let hold =
            EtcdHold::start(self.client(), key, revision, request.lost.clone(), session, None, started + request.lease);
        map(&self.downgrades).insert(write_key, hold.clone());
        Ok(Some(Acquired { token: token(revision)?, attempt_started: started, state: Some(hold) }))
    }

    /// The newest key older than `revision` that a contender of `mode` waits behind.
    async fn look(&self, keys: &Keys, fence: &Fence, mode: RwMode, key: &str, revision: i64) -> Result<Standing> {
        let mut below = revision;
        loop {
            let range = match mode {
                RwMode::Read => &keys.write,
                RwMode::Write => &keys.all,
            };
            // No limit: keys that are not the lock's own are filtered out below.
            let newest_older = GetOptions::new()
                .with_prefix()
                .with_sort(SortTarget::Create, SortOrder::Descend)
                .with_keys_only()
                .with_max_create_revision(below - 1);
            let txn = Txn::new().and_then([
                TxnOp::get(range.as_str(), Some(newest_older)),
                TxnOp::get(key, Some(GetOptions::new().with_keys_only())),
                fence.read(),
            ]);
            let answer = call("reading the lock's keys", || {
                let (mut kv, txn) = (self.client().kv_client(), txn.clone());
                async move { kv.txn(txn).await }
            })
            .await?;
            let at = header_revision(answer.header())?;
            let first = |i: usize| match answer.op_responses().get(i) {
                Some(TxnOpResponse::Get(get)) => Ok(get
                    .kvs()
                    .iter()
                    .find(|kv| i == 1 || keys.is_own(kv.key()))
                    .map(|kv| (String::from_utf8_lossy(kv.key()).into_owned(), kv.create_revision()))),
                _ => Err(Error::backend("etcd answered the lock look-up with unexpected responses")),
            };
            if first(1)?.is_none_or(|(_, ours)| ours != revision) {
                return Ok(Standing::Vanished);
            }
            let Some((older, created)) = first(0)? else {
                let fence_written = match answer.op_responses().get(2) {
                    Some(TxnOpResponse::Get(get)) => Fence::last_written(get.kvs()),
                    _ => return Err(Error::backend("etcd answered the lock look-up with unexpected responses")),
                };
                return Ok(Standing::Holds { fence_written });
            };
            let downgrade_key =
                older.strip_prefix(&keys.write).filter(|_| mode == RwMode::Read).map(|n| format!("{}{n}", keys.read));
            if let Some(read_key) = &downgrade_key {
                if self.is_downgraded(read_key).await? {
                    below = created; // a downgraded writer holds as a reader: look further back
                    continue;
                }
            }
            return Ok(Standing::Behind { key: older, downgrade_key, seen_at: at });
        }
    }

    async fn is_downgraded(&self, read_key: &str) -> Result<bool> {
        let answer = call("reading a downgrade's read key", || {
            let mut kv = self.client().kv_client();
            async move { kv.get(read_key, None).await }
        })
        .await?;
        Ok(answer.kvs().first().is_some_and(|kv| kv.value() == DOWNGRADED.as_bytes()))
    }

    /// Write our key; wait until nothing we wait behind is left. `Ok(None)`: gave up.
    async fn contend(&self, request: &AcquireRequest<RwMode>, keys: &Keys, fence: &Fence) -> Result<Option<Acquired>> {
        loop {
            let session = self.backend.pool.any().await?;
            let suffix = format!("{:x}-{}", session.lease_id, NEXT_HOLD.fetch_add(1, Ordering::Relaxed));
            let key = match request.kind {
                RwMode::Read => format!("{}{suffix}", keys.read),
                RwMode::Write => format!("{}{suffix}", keys.write),
            };
            let started = Instant::now();
            let txn = Txn::new().when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)]).and_then([
                TxnOp::put(key.as_str(), "", Some(PutOptions::new().with_lease(session.lease_id))),
                fence.write(session.lease_id),
            ]);
            let written = call("writing the lock key", || {
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
                continue; // cannot happen with a fresh hold number; try another
            }
            let revision = header_revision(answer.header())?;
            let mut first = true;
            loop {
                let standing = match self.look(keys, fence, request.kind, &key, revision).await {
                    Ok(standing) => standing,
                    Err(_) if session.is_ended() => return Err(session_ended(request, &session)),
                    // A member went away under the read: look again until the deadline.
                    Err(err) if err.kind() == ErrorKind::Connection && !past(request.deadline) => {
                        sleep(RETRY_PAUSE).await;
                        continue;
                    }
                    Err(err) => return Err(err),
                };
                let (older, downgrade_key, seen_at) = match standing {
                    Standing::Holds { fence_written } => {
                        let lease_id = session.lease_id;
                        let token = fence.token(self.client(), &key, revision, lease_id, fence_written).await?;
                        let Some(token) = token else {
                            // Our key went between the look and the fence write.
                            if lease_gone(self.client(), &session).await? {
                                return Err(session_ended(request, &session));
                            }
                            break; // deleted from outside: queue again
                        };
                        if request.kind == RwMode::Write {
                            let write = WriteKey { key: key.clone(), revision, suffix, session: session.clone() };
                            map(&self.writers).insert((request.key.clone(), request.owner), write);
                        }
                        // The lease counts from the grant: a waiter's wait is not part of it.
                        let attempt_started = if first { started } else { Instant::now() };
                        let expires_at = attempt_started + request.lease;
                        let lost = request.lost.clone();
                        let hold = EtcdHold::start(self.client(), key, revision, lost, session, None, expires_at);
                        return Ok(Some(Acquired { token, attempt_started, state: Some(hold) }));
                    }
                    Standing::Vanished if lease_gone(self.client(), &session).await? => {
                        return Err(session_ended(request, &session));
                    }
                    Standing::Vanished => break, // deleted from outside: queue again
                    Standing::Behind { key, downgrade_key, seen_at } => (key, downgrade_key, seen_at),
                };
                first = false;
                if request.deadline.is_some_and(|d| d <= Instant::now()) {
                    self.give_up(&key, revision).await;
                    return Ok(None);
                }
                let downgraded = async {
                    match &downgrade_key {
                        Some(read_key) => next_event(self.client(), read_key, false, seen_at, EventType::Put).await,
                        None => std::future::pending().await,
                    }
                };
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
                    _ = next_event(self.client(), &older, false, seen_at, EventType::Delete) => {}
                    _ = downgraded => {}
                }
            }
        }
    }

    async fn give_up(&self, key: &str, revision: i64) {
        // If etcd cannot be reached now, the key goes with the session lease.
        let _ = delete_if_revision(self.client(), key, revision).await;
    }
}

/// The pause before looking again after a read failed on a connection error.
pub(super) const RETRY_PAUSE: Duration = Duration::from_millis(50);

pub(super) fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| d <= Instant::now())
}

fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Result<i64> {
    header.map(|h| h.revision()).ok_or_else(|| Error::backend("etcd sent no revision"))
}

fn token(revision: i64) -> Result<u64> {
    u64::try_from(revision).map_err(|_| Error::backend("etcd sent a negative revision"))
}

/// Whether the session's lease is gone (our key vanished: revoked or expired before the
/// keep-alives noticed?); if so, the session ends here and now.
pub(super) async fn lease_gone(client: &Client, session: &Session) -> Result<bool> {
    if !session.is_ended() && lease_left(client, session.lease_id).await?.is_some() {
        return Ok(false);
    }
    session.end("etcd says the session lease expired or was revoked".into());
    Ok(true)
}

/// A waiter whose session ended stops: its key went with the lease.
pub(super) fn session_ended<K: std::fmt::Display>(request: &AcquireRequest<K>, session: &Session) -> Error {
    Error::lost(format!(
        "the etcd session ended while '{}' was waiting for the {} ({}); its place in the queue is gone",
        request.key,
        request.kind,
        session.end_reason()
    ))
}

#[async_trait]
impl HoldStore<RwMode> for EtcdRwLocks {
    async fn acquire(&self, request: &AcquireRequest<RwMode>) -> Result<Option<Acquired>> {
        let keys = Keys::of(&request.key);
        let fence = Fence::of(&request.key, Family::RwLock);
        if request.kind == RwMode::Read {
            if let Some(acquired) = self.downgrade(request, &keys, &fence).await? {
                return Ok(Some(acquired));
            }
        }
        self.contend(request, &keys, &fence).await
    }

    async fn renew(&self, held: &HeldLock<RwMode>, lease: Duration) -> Result<Renewal> {
        renew_hold(self.client(), held, lease).await
    }

    async fn release(&self, held: &HeldLock<RwMode>, holds_left: u32) -> Result<Release> {
        if holds_left > 0 {
            return Ok(Release::Released);
        }
        let Some(hold) = etcd_hold(held) else { return Ok(Release::Gone) };
        let _finish = FinishOnDrop(hold.clone());
        if held.kind == RwMode::Write {
            {
                let mut writers = map(&self.writers);
                let owner_key = (held.key.clone(), held.owner);
                if writers.get(&owner_key).is_some_and(|write| write.key == hold.key) {
                    writers.remove(&owner_key);
                }
            }
            let downgrade = map(&self.downgrades).remove(&hold.key);
            if let Some(read) = downgrade.filter(|read| !read.session.is_ended()) {
                // Keep the write key for the read hold, and tell polylock readers they may pass.
                let put = PutOptions::new().with_lease(read.session.lease_id);
                let txn = Txn::new()
                    .when([Compare::create_revision(read.key.as_str(), CompareOp::Equal, read.revision)])
                    .and_then([TxnOp::put(read.key.as_str(), DOWNGRADED, Some(put))]);
                let answer = call("marking a downgrade", || {
                    let (mut kv, txn) = (self.client().kv_client(), txn.clone());
                    async move { kv.txn(txn).await }
                })
                .await?;
                if answer.succeeded() {
                    *map(&read.companion) = Some((hold.key.clone(), hold.revision));
                    return Ok(Release::Released);
                }
            }
        } else {
            map(&self.downgrades).retain(|_, read| !Arc::ptr_eq(read, &hold));
        }
        let companion = map(&hold.companion).take();
        let released = delete_if_revision(self.client(), &hold.key, hold.revision).await?;
        if let Some((key, revision)) = companion {
            delete_if_revision(self.client(), &key, revision).await?;
        }
        Ok(if released { Release::Released } else { Release::Gone })
    }

    /// Whether the oldest key is of `mode`'s side (a downgraded write key counts as a read).
    async fn is_locked(&self, key: &str, mode: RwMode) -> Result<bool> {
        let keys = Keys::of(key);
        let oldest = GetOptions::new().with_prefix().with_sort(SortTarget::Create, SortOrder::Ascend).with_keys_only();
        let answer = call("reading the lock's holder", || {
            let (mut kv, options) = (self.client().kv_client(), oldest.clone());
            let prefix = keys.all.clone();
            async move { kv.get(prefix, Some(options)).await }
        })
        .await?;
        let Some(kv) = answer.kvs().iter().find(|kv| keys.is_own(kv.key())) else { return Ok(false) };
        let oldest = String::from_utf8_lossy(kv.key()).into_owned();
        let downgraded = match oldest.strip_prefix(&keys.write) {
            Some(n) => self.is_downgraded(&format!("{}{n}", keys.read)).await?,
            None => false,
        };
        Ok(match mode {
            RwMode::Write => oldest.starts_with(&keys.write) && !downgraded,
            RwMode::Read => oldest.starts_with(&keys.read) || downgraded,
        })
    }
}
