//! The proof of one acquisition: it carries the fencing token, tells whether the hold was
//! lost, and gives the hold back when released or dropped. One type for every primitive:
//! `Guard` (a mutex), `Guard<RwMode>` (one side of a read-write lock), `Guard<Permits>` (a
//! semaphore permit, see [`crate::Permit`]).

use std::fmt;

use crate::engine::{AcquireOptions, Handle};
use crate::error::{Error, ErrorKind, Result};
use crate::owner::Owner;
use crate::spi::{HoldKind, LockKind, LostReason, LostWatch};

/// One acquisition. Dropping it releases that acquisition in the background; call
/// [`Guard::release`] to learn whether the release worked.
#[must_use = "dropping a guard releases the lock at once"]
pub struct Guard<K: HoldKind = LockKind> {
    handle: Handle<K>,
    token: u64,
    lost: LostWatch,
    armed: bool,
}

impl<K: HoldKind> fmt::Debug for Guard<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard")
            .field("name", &self.handle.name())
            .field("kind", &self.handle.kind())
            .field("fencing_token", &self.token)
            .field("lost", &self.lost.reason())
            .finish()
    }
}

impl<K: HoldKind> Guard<K> {
    pub(crate) fn new(handle: Handle<K>, token: u64, lost: LostWatch) -> Guard<K> {
        Guard { handle, token, lost, armed: true }
    }

    pub(crate) fn handle(&self) -> &Handle<K> {
        &self.handle
    }

    /// Strictly greater than the token of every earlier hold of this name. Pass it to the
    /// storage you protect, and have that storage reject writes with an older token.
    ///
    /// On a backend without fencing tokens (RedLock, see [`Guard::has_fencing_token`]) this
    /// number only tells this client's holds apart: it is no fencing token, and
    /// [`Guard::fencing_token_opt`] answers `None` there.
    pub fn fencing_token(&self) -> u64 {
        self.token
    }

    /// Whether [`Guard::fencing_token`] is a fencing token. False only on RedLock
    /// (`redlock://`): a majority of independent Redis servers has no one counter that only
    /// grows, so no number it could hand out orders the holders (Kleppmann's critique; see
    /// the README's RedLock section).
    pub fn has_fencing_token(&self) -> bool {
        self.handle.engine().fencing_tokens()
    }

    /// The fencing token, or `None` on a backend that cannot issue one (RedLock).
    pub fn fencing_token_opt(&self) -> Option<u64> {
        self.has_fencing_token().then_some(self.token)
    }

    /// The name this guard holds.
    pub fn name(&self) -> &str {
        self.handle.name()
    }

    /// Who holds it: for a semaphore permit, the permit's own identity.
    pub fn owner(&self) -> Owner {
        self.handle.owner()
    }

    /// True once the backend no longer holds it for this owner.
    pub fn is_lost(&self) -> bool {
        self.lost.is_lost()
    }

    /// True while the backend has lost its connection and cannot tell whether the hold is
    /// still there: Curator's SUSPENDED. The hold may well still be there, but it is not safe
    /// to rely on: stop work that needs it until this clears (the connection came back with
    /// the session intact, Curator's RECONNECTED) or [`Guard::is_lost`] turns true (the
    /// session ended, Curator's LOST). Only session backends (ZooKeeper) raise it; it is false
    /// on the others, and false once the hold is lost.
    pub fn is_suspended(&self) -> bool {
        self.lost.is_suspended()
    }

    /// Resolves when the hold is lost (never, if it is released first).
    pub async fn lost(&self) -> LostReason {
        self.lost.wait().await
    }

    pub fn lost_watch(&self) -> LostWatch {
        self.lost.clone()
    }

    /// Give back this acquisition and report how that went: an error of kind `Lost` if the
    /// hold was lost meanwhile (even if its owner has taken it again since).
    pub async fn release(mut self) -> Result<()> {
        self.armed = false;
        match self.handle.release(Some(self.token)).await {
            Err(err) if err.kind() == ErrorKind::NotOwner => match self.lost.reason() {
                Some(reason) => Err(Error::lost(format!(
                    "{} '{}' was lost before it was released: {reason}",
                    self.handle.kind().noun(),
                    self.handle.name()
                ))),
                None => Err(err),
            },
            other => other,
        }
    }

    /// Take the same hold once more for the same owner (reentrancy through a guard), with
    /// the same token. A guard whose hold was lost (even if its owner has taken the lock
    /// again since) fails with an error of kind `Lost`: it never hands back a fresh hold.
    pub async fn reenter(&self, options: AcquireOptions) -> Result<Guard<K>> {
        self.reentry().reenter(options).await
    }

    /// What [`Guard::reenter`] needs, apart from the guard: for bindings that re-enter in a
    /// task of its own while the guard stays where it is.
    pub fn reentry(&self) -> Reentry<K> {
        Reentry { handle: self.handle.clone(), token: self.token, lost: self.lost.clone() }
    }

    /// Keep holding without this guard, for bindings whose users release by owner (a Java
    /// thread calling `unlock()`): the hold stays until the same owner releases it.
    /// Returns the fencing token.
    pub fn detach(mut self) -> u64 {
        self.armed = false;
        self.token
    }
}

/// A guard's right to re-enter its hold; see [`Guard::reentry`].
pub struct Reentry<K: HoldKind> {
    handle: Handle<K>,
    token: u64,
    lost: LostWatch,
}

impl<K: HoldKind> Reentry<K> {
    /// As [`Guard::reenter`].
    pub async fn reenter(self, options: AcquireOptions) -> Result<Guard<K>> {
        let lost = || {
            let reason = self.lost.reason().unwrap_or(LostReason::Taken);
            Error::lost(format!(
                "{} '{}' was lost, so it cannot be re-entered through this guard: {reason}",
                self.handle.kind().noun(),
                self.handle.name()
            ))
        };
        if self.lost.is_lost() || !self.handle.current_hold_has(self.token) {
            return Err(lost());
        }
        let granted = self.handle.acquire(options).await?;
        if granted.token != self.token {
            // The hold was lost in the meantime and this acquisition took the lock afresh.
            let _ = self.handle.release(Some(granted.token)).await;
            return Err(lost());
        }
        Ok(Guard::new(self.handle.clone(), granted.token, granted.lost))
    }
}

impl<K: HoldKind> Drop for Guard<K> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let handle = self.handle.clone();
        let token = self.token;
        // Errors have nowhere to go from a drop; a failed release leaves the lease to run out.
        self.handle.engine().runtime().spawn(async move {
            let _ = handle.release(Some(token)).await;
        });
    }
}
