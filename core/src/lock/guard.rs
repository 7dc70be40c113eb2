//! The proof of one acquisition: it carries the fencing token, tells whether the hold was
//! lost, and gives the hold back when released or dropped.

use std::fmt;

use super::lost::{LostReason, LostWatch};
use super::Lock;
use crate::error::Result;

/// One acquisition of a lock. Dropping it releases that acquisition in the background;
/// call [`Guard::release`] to learn whether the release worked.
#[must_use = "dropping a guard releases the lock at once"]
pub struct Guard {
    lock: Lock,
    token: u64,
    lost: LostWatch,
    armed: bool,
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard")
            .field("lock", &self.lock.name())
            .field("fencing_token", &self.token)
            .field("lost", &self.lost.reason())
            .finish()
    }
}

impl Guard {
    pub(crate) fn new(lock: Lock, token: u64, lost: LostWatch) -> Guard {
        Guard { lock, token, lost, armed: true }
    }

    /// Strictly greater than the token of every earlier hold of this lock name. Pass it to
    /// the storage you protect, and have that storage reject writes with an older token.
    pub fn fencing_token(&self) -> u64 {
        self.token
    }

    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    /// True once the backend no longer holds the lock for this owner.
    pub fn is_lost(&self) -> bool {
        self.lost.is_lost()
    }

    /// True while the backend has lost its connection and cannot tell whether the lock is
    /// still held: Curator's SUSPENDED. The lock may well still be held, but it is not safe to
    /// rely on: stop work that needs it until this clears (the connection came back with the
    /// session intact, Curator's RECONNECTED) or [`Guard::is_lost`] turns true (the session
    /// ended, Curator's LOST). Only session backends (ZooKeeper) raise it; it is false on the
    /// others, and false once the hold is lost.
    pub fn is_suspended(&self) -> bool {
        self.lost.is_suspended()
    }

    /// Resolves when the lock is lost (never, if it is released first).
    pub async fn lost(&self) -> LostReason {
        self.lost.wait().await
    }

    pub fn lost_watch(&self) -> LostWatch {
        self.lost.clone()
    }

    /// Give back this acquisition and report how that went: an error of kind `Lost` if the
    /// hold was lost meanwhile (even if its owner has taken the lock again since).
    pub async fn release(mut self) -> Result<()> {
        self.armed = false;
        match self.lock.release_hold(Some(self.token)).await {
            Err(err) if err.kind() == crate::ErrorKind::NotOwner => match self.lost.reason() {
                Some(reason) => Err(crate::Error::lost(format!(
                    "lock '{}' was lost before it was released: {reason}",
                    self.lock.name()
                ))),
                None => Err(err),
            },
            other => other,
        }
    }

    /// Keep holding without this guard, for bindings whose users release by owner (a Java
    /// thread calling `unlock()`): the hold stays until [`Lock::release`] is called for the
    /// same owner. Returns the fencing token.
    pub fn detach(mut self) -> u64 {
        self.armed = false;
        self.token
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let lock = self.lock.clone();
        let token = self.token;
        // Errors have nowhere to go from a drop; a failed release leaves the lease to run out.
        self.lock.client().inner().runtime.spawn(async move {
            let _ = lock.release_hold(Some(token)).await;
        });
    }
}
