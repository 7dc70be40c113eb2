//! The one seam between the lock model and the stores behind it. A backend knows how to
//! take, renew and give back one hold on its store; everything else (reentrancy, watchdog,
//! lost detection, cancellation, fencing checks) lives once in `lock/`.

mod etcd;
mod mem;
pub(crate) mod poll;
mod redis;
pub mod sql;
mod sqlite;
mod successors;
mod zk;

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::lock::{LockKind, LostNotifier};
use crate::owner::Owner;
use crate::url::ConnectUrl;

/// Backend-private data that rides along with a hold (an etcd key, a ZooKeeper node path,
/// a dedicated SQL connection).
pub type HoldState = Option<Arc<dyn Any + Send + Sync>>;

/// A request to take a lock for an owner that does not hold it yet.
pub struct AcquireRequest {
    /// The storage key (namespace applied).
    pub key: String,
    pub owner: Owner,
    pub kind: LockKind,
    /// The lease to write: the caller's explicit lease, or the watchdog's.
    pub lease: Duration,
    /// `None` waits forever; a deadline in the past means "try once".
    pub deadline: Option<Instant>,
    /// Set when the caller has gone away. A backend stops waiting and returns `Ok(None)`;
    /// it need not interrupt a store operation already under way.
    pub cancel: CancellationToken,
    /// For backends that learn of loss by events (session expiry, connection loss). The
    /// lease-table backends (mem, SQLite) learn it from renewals instead and leave it unused.
    #[allow(dead_code)]
    pub lost: LostNotifier,
}

/// A successful acquisition.
pub struct Acquired {
    /// Strictly greater than every token issued before for this key.
    pub token: u64,
    /// When the successful attempt was sent: the lease runs from no earlier than this.
    pub attempt_started: Instant,
    pub state: HoldState,
}

/// What a backend needs to renew or release a hold it granted.
#[allow(dead_code)] // `kind` and `state` are for backends with several kinds or per-hold state
pub struct HeldLock {
    pub key: String,
    pub owner: Owner,
    pub kind: LockKind,
    pub token: u64,
    pub state: HoldState,
}

impl HeldLock {
    pub fn new(key: String, owner: Owner, kind: LockKind, acquired: Acquired) -> Self {
        HeldLock { key, owner, kind, token: acquired.token, state: acquired.state }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewal {
    Renewed,
    /// The hold is no longer in the store for this owner and token.
    Gone,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    Released,
    /// There was nothing left to release: the hold had expired or was taken.
    Gone,
}

#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Take the lock, waiting until the deadline. `Ok(None)` means the deadline passed or the
    /// request was cancelled, and nothing is held.
    async fn acquire(&self, request: &AcquireRequest) -> Result<Option<Acquired>>;

    /// Extend the hold's lease to `lease` from now, if it is still this owner's.
    async fn renew(&self, held: &HeldLock, lease: Duration) -> Result<Renewal>;

    /// The owner acquired the lock again while holding it. Backends whose store records hold
    /// counts (Redisson's hash) update them; the default does nothing.
    async fn reenter(&self, _held: &HeldLock) -> Result<Renewal> {
        Ok(Renewal::Renewed)
    }

    /// Give back one hold. `holds_left` is how many the owner still has after this one; the
    /// lock leaves the store only when it reaches zero.
    async fn release(&self, held: &HeldLock, holds_left: u32) -> Result<Release>;

    /// Make `to` the holder of `from`'s hold in one step, with a fresh fencing token and a
    /// lease of `lease`, without the lock ever being free in between: a release handed
    /// straight to a waiter of the same client (see lock/handoff.rs). `Ok(None)` when `from`
    /// no longer held the lock, and then nothing changed. If the store shows `to` as the
    /// holder already (its own attempt, abandoned in flight, won the lock after `from`'s
    /// lease ran out), `to` takes it as a fresh hold. Only called for kinds `transfers` names.
    /// `lost` is the new owner's latch: backends that learn of loss by events (a session
    /// ending, a connection dying) point the hold at it.
    async fn transfer(
        &self,
        _from: &HeldLock,
        _to: Owner,
        _lease: Duration,
        _lost: &LostNotifier,
    ) -> Result<Option<Acquired>> {
        Ok(None)
    }

    /// Which kinds of lock can change hands through `transfer`. Kinds that promise an order
    /// among waiters (fair locks) must not.
    fn transfers(&self, _kind: LockKind) -> bool {
        false
    }

    /// Whether every hold of `kind` this backend grants, by `acquire` or `transfer`, has its
    /// token + 1 set aside (drawn from the counter, issued to nobody) for the owner it may be
    /// handed to, and `transfer` issues exactly that token. The new owner can then start
    /// before the transfer has landed (see lock/handoff.rs). The new owner's hold carries
    /// `from`'s [`HoldState`] as it is, so a transfer must keep that state valid.
    fn reserves_next_token(&self, _kind: LockKind) -> bool {
        false
    }

    /// Whether the store itself hands a released lock of `kind` to whoever has waited for it
    /// longest, any client's, in one step (PostgreSQL's and MySQL's lock queues). A run of
    /// local handoffs then ends with a plain release: waiters elsewhere are first in that
    /// queue. Elsewhere this client's owners stand aside for a moment first, so that a waiter
    /// woken by a message gets in (see lock/handoff.rs).
    fn grants_in_order(&self, _kind: LockKind) -> bool {
        false
    }

    /// Whether anyone (any client, any owner) holds the lock `key` right now.
    async fn is_locked(&self, _key: &str, _kind: LockKind) -> Result<bool> {
        Err(not_supported("is_locked"))
    }

    /// How long the current holder's lease has left: `None` when nobody holds the lock,
    /// `Some(Duration::MAX)` for a hold the store keeps without expiry (a foreign client's).
    async fn remaining_lease(&self, _key: &str, _kind: LockKind) -> Result<Option<Duration>> {
        Err(not_supported("remaining_lease"))
    }

    /// Remove the lock whoever holds it and wake its waiters (Redisson's `forceUnlock`).
    /// Returns whether there was a hold to remove.
    async fn force_unlock(&self, _key: &str, _kind: LockKind) -> Result<bool> {
        Err(not_supported("force_unlock"))
    }

    /// Close connections and stop background tasks.
    async fn close(&self) {}

    /// Which kinds of lock this backend offers.
    fn supports(&self, kind: LockKind) -> bool {
        kind == LockKind::Reentrant
    }
}

/// The answer of a backend that has not implemented an optional query yet.
fn not_supported(operation: &str) -> Error {
    Error::backend(format!("{operation} is not supported by this backend yet"))
}

/// Open the backend a URL names, taking the options it knows from the URL.
pub(crate) async fn open(url: &mut ConnectUrl) -> Result<Arc<dyn Backend>> {
    match url.scheme() {
        "mem" => Ok(Arc::new(mem::MemBackend::open(url)?)),
        "sqlite" => Ok(Arc::new(sqlite::SqliteBackend::open(url).await?)),
        "redis" | "rediss" | "redis+cluster" | "redis+sentinel" => Ok(Arc::new(redis::RedisBackend::open(url).await?)),
        "zk" => Ok(Arc::new(zk::ZkBackend::open(url).await?)),
        "etcd" | "etcds" | "etcd+tls" => Ok(Arc::new(etcd::EtcdBackend::open(url).await?)),
        "postgres" | "postgresql" => Ok(Arc::new(sql::PgBackend::open(url).await?)),
        "mysql" | "mariadb" => Ok(Arc::new(sql::MySqlBackend::open(url).await?)),
        other => Err(Error::invalid_argument(format!(
            "unknown URL scheme '{other}' in {}; use one of mem, sqlite, redis, rediss, redis+cluster, \
             redis+sentinel, etcd, etcds, zk, postgres, mysql, mariadb",
            url.redacted()
        ))),
    }
}
