//! The one interface between the engine and the stores behind it, shared by every
//! primitive family: take a hold, renew its lease, re-enter it, give it back. A store
//! implements it once per family it offers, with that family's kind ([`LockKind`] for
//! mutexes, [`RwMode`] for read-write locks, [`Permits`] for semaphores); everything else
//! (reentrancy, watchdog, lost detection, cancellation, local handoff) lives once in the
//! engine.
//!
//! [`RwMode`]: super::RwMode
//! [`Permits`]: super::Permits

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::kind::{HoldKind, LockKind};
use super::lost::LostNotifier;
use crate::error::{Error, Result};
use crate::owner::Owner;

/// Backend-private data that rides along with a hold (an etcd key, a ZooKeeper node path,
/// a dedicated SQL connection).
pub type HoldState = Option<Arc<dyn Any + Send + Sync>>;

/// A request to take a lock for an owner that does not hold it yet.
pub struct AcquireRequest<K = LockKind> {
    /// The storage key (namespace applied).
    pub key: String,
    pub owner: Owner,
    pub kind: K,
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
pub struct HeldLock<K = LockKind> {
    pub key: String,
    pub owner: Owner,
    pub kind: K,
    pub token: u64,
    pub state: HoldState,
}

impl<K> HeldLock<K> {
    pub fn new(key: String, owner: Owner, kind: K, acquired: Acquired) -> Self {
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

/// Holds of one family on one store. `ExclusiveStore`, `SharedStore` and `PermitStore` name
/// its three uses.
#[async_trait]
pub trait HoldStore<K: HoldKind = LockKind>: Send + Sync + 'static {
    /// Take the lock, waiting until the deadline. `Ok(None)` means the deadline passed or the
    /// request was cancelled, and nothing is held.
    async fn acquire(&self, request: &AcquireRequest<K>) -> Result<Option<Acquired>>;

    /// Extend the hold's lease to `lease` from now, if it is still this owner's.
    async fn renew(&self, held: &HeldLock<K>, lease: Duration) -> Result<Renewal>;

    /// The owner acquired the lock again while holding it. Backends whose store records hold
    /// counts (Redisson's hash) update them; the default does nothing.
    async fn reenter(&self, _held: &HeldLock<K>) -> Result<Renewal> {
        Ok(Renewal::Renewed)
    }

    /// Give back one hold. `holds_left` is how many the owner still has after this one; the
    /// lock leaves the store only when it reaches zero.
    async fn release(&self, held: &HeldLock<K>, holds_left: u32) -> Result<Release>;

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
        _from: &HeldLock<K>,
        _to: Owner,
        _lease: Duration,
        _lost: &LostNotifier,
    ) -> Result<Option<Acquired>> {
        Ok(None)
    }

    /// Which kinds of lock can change hands through `transfer`. Kinds that promise an order
    /// among waiters (fair locks) must not.
    fn transfers(&self, _kind: K) -> bool {
        false
    }

    /// Whether every hold of `kind` this backend grants, by `acquire` or `transfer`, has its
    /// token + 1 set aside (drawn from the counter, issued to nobody) for the owner it may be
    /// handed to, and `transfer` issues exactly that token. The new owner can then start
    /// before the transfer has landed (see lock/handoff.rs). The new owner's hold carries
    /// `from`'s [`HoldState`] as it is, so a transfer must keep that state valid.
    fn reserves_next_token(&self, _kind: K) -> bool {
        false
    }

    /// Whether the store itself hands a released lock of `kind` to whoever has waited for it
    /// longest, any client's, in one step (PostgreSQL's and MySQL's lock queues). A run of
    /// local handoffs then ends with a plain release: waiters elsewhere are first in that
    /// queue. Elsewhere this client's owners stand aside for a moment first, so that a waiter
    /// woken by a message gets in (see lock/handoff.rs).
    fn grants_in_order(&self, _kind: K) -> bool {
        false
    }

    /// How long a waiter for `kind` in another client may go between two attempts when no
    /// release message reaches it: `Some` where such waiters poll (MySQL's lease rows: MySQL
    /// has no NOTIFY), `None` where a release wakes them. A run of local handoffs that ends
    /// stands aside at least this long, or a polling waiter elsewhere would rarely try while
    /// the lock is free and could wait forever (see engine/handoff.rs).
    fn others_poll_within(&self, _kind: K) -> Option<Duration> {
        None
    }

    /// Whether anyone (any client, any owner) holds the lock `key` right now.
    async fn is_locked(&self, _key: &str, _kind: K) -> Result<bool> {
        Err(not_supported("is_locked"))
    }

    /// How long the current holder's lease has left: `None` when nobody holds the lock,
    /// `Some(Duration::MAX)` for a hold the store keeps without expiry (a foreign client's).
    async fn remaining_lease(&self, _key: &str, _kind: K) -> Result<Option<Duration>> {
        Err(not_supported("remaining_lease"))
    }

    /// Remove the lock whoever holds it and wake its waiters (Redisson's `forceUnlock`).
    /// Returns whether there was a hold to remove.
    async fn force_unlock(&self, _key: &str, _kind: K) -> Result<bool> {
        Err(not_supported("force_unlock"))
    }
}

/// Mutexes: one holder at a time.
pub type ExclusiveStore = dyn HoldStore<LockKind>;
/// Read-write locks: many readers or one writer.
pub type SharedStore = dyn HoldStore<super::RwMode>;
/// Semaphores: up to N holders, each with its own permit.
pub type PermitStore = dyn HoldStore<super::Permits>;

/// The answer of a store that has not implemented an optional query yet.
fn not_supported(operation: &str) -> Error {
    Error::unsupported(format!("{operation} is not supported by this backend yet"))
}
