//! Named mutex handles: Redisson's RLock, Curator's InterProcessMutex, etcd's Mutex, a
//! PostgreSQL or MySQL session lock, a ShedLock row, as the backend and kind say.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::guard::Guard;
use super::none_if_timed_out;
use crate::engine::{AcquireOptions, Engine, Handle};
use crate::error::Result;
use crate::owner::Owner;
use crate::spi::{LockKind, LostWatch, Primitive};

/// A named lock as seen by one owner. Cheap to create and clone; it holds nothing until it
/// is acquired. Clones share the owner, so acquiring through two clones is reentrant.
#[derive(Clone)]
pub struct Lock {
    handle: Handle<LockKind>,
}

impl fmt::Debug for Lock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("name", &self.handle.name())
            .field("kind", &self.handle.kind())
            .field("owner", &self.handle.owner())
            .finish()
    }
}

impl Lock {
    pub(crate) fn new(engine: Arc<Engine>, name: &str, key: String, owner: Owner) -> Lock {
        Lock { handle: Handle::new(engine, name, key, LockKind::default(), owner) }
    }

    pub(crate) fn from_handle(handle: Handle<LockKind>) -> Lock {
        Lock { handle }
    }

    pub fn name(&self) -> &str {
        self.handle.name()
    }

    pub fn kind(&self) -> LockKind {
        self.handle.kind()
    }

    pub fn owner(&self) -> Owner {
        self.handle.owner()
    }

    /// The same name as another kind of lock. A backend that does not offer `kind` refuses
    /// here, with an error of kind `Unsupported`, before anything is written.
    pub fn with_kind(self, kind: LockKind) -> Result<Lock> {
        self.handle.engine().check(Primitive::Lock(kind))?;
        let handle = Handle::new(
            self.handle.engine().clone(),
            self.handle.name(),
            self.handle.key().to_string(),
            kind,
            self.handle.owner(),
        );
        Ok(Lock { handle })
    }

    /// The same lock owned by `local_id` of this client: bindings pass the thread or task id
    /// here, so that ownership follows their language's rules.
    pub fn with_local_id(self, local_id: u64) -> Lock {
        let owner = Owner { local_id, ..self.handle.owner() };
        Lock { handle: self.handle.with_owner(owner) }
    }

    /// Wait as long as it takes, then hold under the watchdog.
    pub async fn acquire(&self) -> Result<Guard> {
        self.acquire_with(AcquireOptions::default()).await
    }

    /// Try once; `None` if someone else holds the lock.
    pub async fn try_acquire(&self) -> Result<Option<Guard>> {
        self.try_acquire_with(AcquireOptions::default().wait(Duration::ZERO)).await
    }

    /// The try form of [`Lock::acquire_with`]: the same wait and lease, but a wait that runs
    /// out is `Ok(None)` rather than an error of kind `Timeout` (the conventions of
    /// docs/conventions.md: a try form returns nothing, a waiting form returns the error).
    pub async fn try_acquire_with(&self, options: AcquireOptions) -> Result<Option<Guard>> {
        none_if_timed_out(self.acquire_with(options).await)
    }

    /// Acquire with an explicit wait and lease. A wait that runs out is an error of kind
    /// `Timeout`. If this owner already holds the lock, the acquisition joins the hold
    /// (reentrancy), returns its token and keeps its lease mode.
    pub async fn acquire_with(&self, options: AcquireOptions) -> Result<Guard> {
        let granted = self.handle.acquire(options).await?;
        Ok(Guard::new(self.handle.clone(), granted.token, granted.lost))
    }

    /// Give back one hold of this lock's owner. Releasing a lock the owner does not hold is
    /// an error of kind `NotOwner`; releasing one that was lost is an error of kind `Lost`.
    pub async fn release(&self) -> Result<()> {
        self.handle.release(None).await
    }

    /// Whether another owner of this client is waiting for this lock now, so that a full
    /// release would hand it over within the client (engine/handoff.rs). A hint: the answer
    /// may be stale by the time it is used. Bindings use it to run such a release where the
    /// waiter runs.
    pub fn is_waited_for_here(&self) -> bool {
        self.handle.is_waited_for_here()
    }

    /// How many times this owner holds the lock, as far as this client knows.
    pub fn hold_count(&self) -> u32 {
        self.handle.hold_count()
    }

    /// Whether this owner holds the lock and it has not been lost.
    pub fn is_held(&self) -> bool {
        self.handle.fencing_token().is_some()
    }

    /// The fencing token of this owner's current hold: `None` while it holds nothing, and on
    /// a backend that issues no fencing tokens (RedLock; see [`Guard::has_fencing_token`]).
    pub fn fencing_token(&self) -> Option<u64> {
        self.handle.fencing_token().filter(|_| self.handle.engine().fencing_tokens())
    }

    /// The lost latch of this owner's current hold, lost or not.
    pub fn lost_watch(&self) -> Option<LostWatch> {
        self.handle.lost_watch()
    }

    /// Whether anyone, of any client or language, holds this lock in the store right now
    /// (Redisson's `isLocked`).
    pub async fn is_locked(&self) -> Result<bool> {
        self.handle.is_locked().await
    }

    /// How long the current holder's lease has left (Redisson's `remainTimeToLive`): `None`
    /// when nobody holds the lock, `Some(Duration::MAX)` for a hold kept without expiry.
    pub async fn remaining_lease(&self) -> Result<Option<Duration>> {
        self.handle.remaining_lease().await
    }

    /// Remove the lock whoever holds it and wake its waiters (Redisson's `forceUnlock`).
    /// This client's own holds of it are marked lost at once; other clients' holders learn
    /// it at their next renewal or release. Returns whether there was a hold to remove.
    pub async fn force_unlock(&self) -> Result<bool> {
        self.handle.force_unlock().await
    }
}

impl Guard<LockKind> {
    /// The lock this guard holds, as a handle of the same owner.
    pub fn lock(&self) -> Lock {
        Lock::from_handle(self.handle().clone())
    }
}
