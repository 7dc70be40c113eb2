//! Read-write locks: many readers or one writer, reentrant per owner on each side. The
//! write holder may also take the read side (a downgrade: take read, then release write);
//! a read holder asking for the write side is refused at once, since two readers doing so
//! would wait for each other for ever.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::guard::Guard;
use super::none_if_timed_out;
use crate::engine::{AcquireOptions, Engine, Handle};
use crate::error::{Error, Result};
use crate::owner::Owner;
use crate::spi::{LostWatch, RwMode};

/// A named read-write lock as seen by one owner; [`RwLock::read`] and [`RwLock::write`] are
/// its two sides. Cheap to create and clone; holds nothing until a side is acquired.
#[derive(Clone)]
pub struct RwLock {
    read: RwLockSide,
    write: RwLockSide,
}

impl fmt::Debug for RwLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RwLock").field("name", &self.name()).field("owner", &self.read.owner()).finish()
    }
}

impl RwLock {
    pub(crate) fn new(engine: Arc<Engine>, name: &str, key: String, owner: Owner) -> RwLock {
        let read = Handle::new(engine.clone(), name, key.clone(), RwMode::Read, owner);
        let write = Handle::new(engine, name, key, RwMode::Write, owner);
        RwLock {
            read: RwLockSide { side: read.clone(), other: write.clone() },
            write: RwLockSide { side: write, other: read },
        }
    }

    pub fn name(&self) -> &str {
        self.read.side.name()
    }

    /// The shared side.
    pub fn read(&self) -> &RwLockSide {
        &self.read
    }

    /// The exclusive side.
    pub fn write(&self) -> &RwLockSide {
        &self.write
    }

    /// The same lock owned by `local_id` of this client (a thread or task id of a binding).
    pub fn with_local_id(self, local_id: u64) -> RwLock {
        let owner = Owner { local_id, ..self.read.owner() };
        let read = self.read.side.with_owner(owner);
        let write = self.write.side.with_owner(owner);
        RwLock {
            read: RwLockSide { side: read.clone(), other: write.clone() },
            write: RwLockSide { side: write, other: read },
        }
    }
}

/// One side of a read-write lock, used like a [`crate::Lock`].
#[derive(Clone)]
pub struct RwLockSide {
    side: Handle<RwMode>,
    /// The other side, same owner: checked to refuse an upgrade.
    other: Handle<RwMode>,
}

impl fmt::Debug for RwLockSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RwLockSide").field("name", &self.side.name()).field("mode", &self.side.kind()).finish()
    }
}

impl RwLockSide {
    pub fn name(&self) -> &str {
        self.side.name()
    }

    pub fn mode(&self) -> RwMode {
        self.side.kind()
    }

    pub fn owner(&self) -> Owner {
        self.side.owner()
    }

    /// Wait as long as it takes, then hold under the watchdog.
    pub async fn acquire(&self) -> Result<Guard<RwMode>> {
        self.acquire_with(AcquireOptions::default()).await
    }

    /// Try once; `None` if the other side is held by someone else.
    pub async fn try_acquire(&self) -> Result<Option<Guard<RwMode>>> {
        self.try_acquire_with(AcquireOptions::default().wait(Duration::ZERO)).await
    }

    /// The try form of [`RwLockSide::acquire_with`]: `Ok(None)` when the wait runs out (an
    /// upgrade is still refused with kind `InvalidArgument`).
    pub async fn try_acquire_with(&self, options: AcquireOptions) -> Result<Option<Guard<RwMode>>> {
        none_if_timed_out(self.acquire_with(options).await)
    }

    /// Acquire with an explicit wait and lease, as [`crate::Lock::acquire_with`]. Asking for
    /// the write side while this owner holds the read side fails at once (kind
    /// `InvalidArgument`): an upgrade could deadlock.
    pub async fn acquire_with(&self, options: AcquireOptions) -> Result<Guard<RwMode>> {
        if self.side.kind() == RwMode::Write && self.side.hold_count() == 0 && self.other.hold_count() > 0 {
            return Err(Error::invalid_argument(format!(
                "read-write lock '{}': this owner holds the read lock, so it cannot take the write lock \
                 (an upgrade could deadlock); release the read lock first",
                self.side.name()
            )));
        }
        let granted = self.side.acquire(options).await?;
        Ok(Guard::new(self.side.clone(), granted.token, granted.lost))
    }

    /// Give back one hold of this side by this owner (`NotOwner` if it holds none).
    pub async fn release(&self) -> Result<()> {
        self.side.release(None).await
    }

    /// How many times this owner holds this side.
    pub fn hold_count(&self) -> u32 {
        self.side.hold_count()
    }

    pub fn is_held(&self) -> bool {
        self.side.fencing_token().is_some()
    }

    pub fn fencing_token(&self) -> Option<u64> {
        self.side.fencing_token()
    }

    pub fn lost_watch(&self) -> Option<LostWatch> {
        self.side.lost_watch()
    }

    /// Whether anyone holds this side in the store right now.
    pub async fn is_locked(&self) -> Result<bool> {
        self.side.is_locked().await
    }
}
