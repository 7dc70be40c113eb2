//! What a binding's lock handle stands for, and what its acquisition hands back, across the
//! primitive families: the one place the Python, Node and JVM bindings dispatch between a
//! mutex, the two sides of a read-write lock and a semaphore permit, instead of each keeping
//! its own copy of the same match.

use std::time::Duration;

use crate::engine::AcquireOptions;
use crate::error::{Error, Result};
use crate::primitives::{Guard, Lock, RwLock};
use crate::spi::{LostWatch, Permits, RwMode};

/// A mutex, or one side of a read-write lock, as one owner sees it.
#[derive(Clone, Debug)]
pub enum LockTarget {
    Lock(Lock),
    Read(RwLock),
    Write(RwLock),
}

impl LockTarget {
    /// The same target owned by `local_id` (a thread's or task's id).
    pub fn owned_by(&self, local_id: u64) -> LockTarget {
        match self {
            LockTarget::Lock(lock) => LockTarget::Lock(lock.clone().with_local_id(local_id)),
            LockTarget::Read(rw) => LockTarget::Read(rw.clone().with_local_id(local_id)),
            LockTarget::Write(rw) => LockTarget::Write(rw.clone().with_local_id(local_id)),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            LockTarget::Lock(lock) => lock.name(),
            LockTarget::Read(rw) | LockTarget::Write(rw) => rw.name(),
        }
    }

    /// The mutex's kind (`reentrant`, `fair`, `token`, `lease`), or `read` / `write`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            LockTarget::Lock(lock) => lock.kind().as_str(),
            LockTarget::Read(_) => "read",
            LockTarget::Write(_) => "write",
        }
    }

    pub async fn acquire(&self, options: AcquireOptions) -> Result<AnyGuard> {
        match self {
            LockTarget::Lock(lock) => lock.acquire_with(options).await.map(AnyGuard::Lock),
            LockTarget::Read(rw) => rw.read().acquire_with(options).await.map(AnyGuard::Rw),
            LockTarget::Write(rw) => rw.write().acquire_with(options).await.map(AnyGuard::Rw),
        }
    }

    /// Give back one hold of the owner.
    pub async fn release(&self) -> Result<()> {
        match self {
            LockTarget::Lock(lock) => lock.release().await,
            LockTarget::Read(rw) => rw.read().release().await,
            LockTarget::Write(rw) => rw.write().release().await,
        }
    }

    pub fn is_held(&self) -> bool {
        match self {
            LockTarget::Lock(lock) => lock.is_held(),
            LockTarget::Read(rw) => rw.read().is_held(),
            LockTarget::Write(rw) => rw.write().is_held(),
        }
    }

    pub fn hold_count(&self) -> u32 {
        match self {
            LockTarget::Lock(lock) => lock.hold_count(),
            LockTarget::Read(rw) => rw.read().hold_count(),
            LockTarget::Write(rw) => rw.write().hold_count(),
        }
    }

    pub fn fencing_token(&self) -> Option<u64> {
        match self {
            LockTarget::Lock(lock) => lock.fencing_token(),
            LockTarget::Read(rw) => rw.read().fencing_token(),
            LockTarget::Write(rw) => rw.write().fencing_token(),
        }
    }

    pub fn lost_watch(&self) -> Option<LostWatch> {
        match self {
            LockTarget::Lock(lock) => lock.lost_watch(),
            LockTarget::Read(rw) => rw.read().lost_watch(),
            LockTarget::Write(rw) => rw.write().lost_watch(),
        }
    }

    pub async fn is_locked(&self) -> Result<bool> {
        match self {
            LockTarget::Lock(lock) => lock.is_locked().await,
            LockTarget::Read(rw) => rw.read().is_locked().await,
            LockTarget::Write(rw) => rw.write().is_locked().await,
        }
    }

    /// Mutexes only; the sides of a read-write lock answer `Unsupported`.
    pub async fn remaining_lease(&self) -> Result<Option<Duration>> {
        match self {
            LockTarget::Lock(lock) => lock.remaining_lease().await,
            LockTarget::Read(_) | LockTarget::Write(_) => Err(Self::mutex_only("the remaining lease")),
        }
    }

    /// Mutexes only; the sides of a read-write lock answer `Unsupported`.
    pub async fn force_unlock(&self) -> Result<bool> {
        match self {
            LockTarget::Lock(lock) => lock.force_unlock().await,
            LockTarget::Read(_) | LockTarget::Write(_) => Err(Self::mutex_only("a forced unlock")),
        }
    }

    fn mutex_only(what: &str) -> Error {
        Error::unsupported(format!("{what} is offered for mutexes, not for the sides of a read-write lock"))
    }
}

/// The guard of whatever was acquired: a mutex, a side of a read-write lock, a permit.
#[derive(Debug)]
pub enum AnyGuard {
    Lock(Guard),
    Rw(Guard<RwMode>),
    Permit(Guard<Permits>),
}

impl AnyGuard {
    pub fn name(&self) -> &str {
        match self {
            AnyGuard::Lock(guard) => guard.name(),
            AnyGuard::Rw(guard) => guard.name(),
            AnyGuard::Permit(guard) => guard.name(),
        }
    }

    pub fn fencing_token(&self) -> u64 {
        match self {
            AnyGuard::Lock(guard) => guard.fencing_token(),
            AnyGuard::Rw(guard) => guard.fencing_token(),
            AnyGuard::Permit(guard) => guard.fencing_token(),
        }
    }

    pub fn lost_watch(&self) -> LostWatch {
        match self {
            AnyGuard::Lock(guard) => guard.lost_watch(),
            AnyGuard::Rw(guard) => guard.lost_watch(),
            AnyGuard::Permit(guard) => guard.lost_watch(),
        }
    }

    /// A permit's id (what `Semaphore::release_permit` takes); `None` for a lock.
    pub fn permit_id(&self) -> Option<u64> {
        match self {
            AnyGuard::Permit(guard) => Some(guard.id()),
            AnyGuard::Lock(_) | AnyGuard::Rw(_) => None,
        }
    }

    /// Whether releasing would hand the hold to a waiter of this client (mutexes only), so a
    /// binding can run that release where the waiter runs.
    pub fn is_waited_for_here(&self) -> bool {
        match self {
            AnyGuard::Lock(guard) => guard.lock().is_waited_for_here(),
            AnyGuard::Rw(_) | AnyGuard::Permit(_) => false,
        }
    }

    pub async fn release(self) -> Result<()> {
        match self {
            AnyGuard::Lock(guard) => guard.release().await,
            AnyGuard::Rw(guard) => guard.release().await,
            AnyGuard::Permit(guard) => guard.release().await,
        }
    }

    /// Keep the hold without the guard (the owner, or the permit id, releases it); the
    /// fencing token.
    pub fn detach(self) -> u64 {
        match self {
            AnyGuard::Lock(guard) => guard.detach(),
            AnyGuard::Rw(guard) => guard.detach(),
            AnyGuard::Permit(guard) => guard.detach(),
        }
    }

    /// A future that re-enters this guard's hold as the same owner, at once (a lost hold is
    /// `Lost`, never a fresh one); a permit cannot be re-entered (`InvalidArgument`).
    pub fn reentry(&self) -> Result<Reentering> {
        // Try once: the owner holds it, so re-entry never waits.
        let options = AcquireOptions::default().wait(Duration::ZERO);
        match self {
            AnyGuard::Lock(guard) => {
                let reentry = guard.reentry();
                Ok(Box::pin(async move { reentry.reenter(options).await.map(AnyGuard::Lock) }))
            }
            AnyGuard::Rw(guard) => {
                let reentry = guard.reentry();
                Ok(Box::pin(async move { reentry.reenter(options).await.map(AnyGuard::Rw) }))
            }
            AnyGuard::Permit(guard) => Err(Error::invalid_argument(format!(
                "a permit of semaphore '{}' cannot be re-entered; take another permit",
                guard.name()
            ))),
        }
    }
}

/// A re-entry under way, free of the guard it came from.
pub type Reentering = std::pin::Pin<Box<dyn std::future::Future<Output = Result<AnyGuard>> + Send>>;
