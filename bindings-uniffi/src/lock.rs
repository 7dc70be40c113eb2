//! `Lock`: one named mutex, or one side of a read-write lock, with the owner passed in by
//! every call. The gem passes the calling Ruby Thread's owner id; the core counts reentrancy
//! and checks ownership per owner.

use std::sync::Arc;

use polylock::kit::{AnyGuard, LockTarget};
use polylock::{Error, ErrorKind};
use tokio_util::sync::CancellationToken;

use crate::errors::Result;
use crate::options::AcquireOptions;
use crate::shared::ClientShared;

/// Told when a hold is lost (its lease ran out, the store no longer has it, its session
/// ended, its client closed), with the reason. Called from one of the client's threads.
#[uniffi::export(callback_interface)]
pub trait LostListener: Send + Sync {
    fn lost(&self, reason: String);
}

/// A listener waiting for one hold to be lost; `cancel` stops the wait (the gem cancels it
/// when the owner lets go of the hold).
#[derive(uniffi::Object)]
pub struct LostSubscription {
    cancel: CancellationToken,
}

impl LostSubscription {
    pub fn new(cancel: CancellationToken) -> Arc<LostSubscription> {
        Arc::new(LostSubscription { cancel })
    }
}

#[uniffi::export]
impl LostSubscription {
    pub fn cancel(&self) {
        self.cancel.cancel();
    }
}

#[derive(uniffi::Object)]
pub struct Lock {
    shared: Arc<ClientShared>,
    target: LockTarget,
}

impl Lock {
    pub fn new(shared: Arc<ClientShared>, target: LockTarget) -> Arc<Lock> {
        Arc::new(Lock { shared, target })
    }

    fn what(&self) -> String {
        format!("{} lock '{}'", self.target.kind_name(), self.target.name())
    }
}

#[uniffi::export]
impl Lock {
    /// The waiting form: take a hold for `owner` and return its fencing token; a wait that
    /// runs out is `Timeout` (nothing held).
    pub async fn acquire_waiting(&self, owner: u64, options: AcquireOptions) -> Result<u64> {
        let target = self.target.owned_by(owner);
        let options = options.to_core()?;
        // Detached on the caller's side, as in `acquire`.
        Ok(self.shared.run(self.what(), async move { target.acquire(options).await }).await?.detach())
    }

    /// The try form: take a hold for `owner`: its fencing token, or nil when the wait ran out.
    pub async fn acquire(&self, owner: u64, options: AcquireOptions) -> Result<Option<u64>> {
        let target = self.target.owned_by(owner);
        let options = options.to_core()?;
        let acquiring = async move {
            match target.acquire(options).await {
                Ok(guard) => Ok(Some(guard)),
                Err(err) if err.kind() == ErrorKind::Timeout => Ok(None),
                Err(err) => Err(err),
            }
        };
        // The guard is detached here, on the caller's side: if the caller gave up while the
        // grant was on its way, the task's output (the guard) is dropped, which gives it back.
        // The owner releases by id, so a detached hold outlives its guard.
        Ok(self.shared.run(self.what(), acquiring).await?.map(AnyGuard::detach))
    }

    /// Give back one hold of `owner`: `NotOwner` if it holds none, `Lost` if it was lost.
    pub async fn release(&self, owner: u64) -> Result<()> {
        let target = self.target.owned_by(owner);
        self.shared.run(self.what(), async move { target.release().await }).await
    }

    /// Whether `owner` holds it and the hold has not been lost.
    pub fn is_held(&self, owner: u64) -> bool {
        self.target.owned_by(owner).is_held()
    }

    /// How many times `owner` holds it (reentrancy).
    pub fn hold_count(&self, owner: u64) -> u32 {
        self.target.owned_by(owner).hold_count()
    }

    /// The fencing token of `owner`'s live hold, or nil.
    pub fn fencing_token(&self, owner: u64) -> Option<u64> {
        self.target.owned_by(owner).fencing_token()
    }

    /// Why `owner`'s current hold was lost, or nil if it holds nothing or holds it still.
    pub fn lost_reason(&self, owner: u64) -> Option<String> {
        let watch = self.target.owned_by(owner).lost_watch()?;
        watch.reason().map(|reason| reason.to_string())
    }

    /// Call `listener` when `owner`'s current hold is lost; `NotOwner` if it holds nothing.
    pub fn on_lost(&self, owner: u64, listener: Box<dyn LostListener>) -> Result<Arc<LostSubscription>> {
        let Some(watch) = self.target.owned_by(owner).lost_watch() else {
            return Err(
                Error::not_owner(format!("{} is not held by this owner, so it cannot be lost", self.what())).into()
            );
        };
        let cancel = CancellationToken::new();
        let cancelled = cancel.clone();
        self.shared.spawn(async move {
            tokio::select! {
                reason = watch.wait() => listener.lost(reason.to_string()),
                () = cancelled.cancelled() => {}
            }
        });
        Ok(Arc::new(LostSubscription { cancel }))
    }

    /// Whether anyone holds it, as the store says.
    pub async fn is_locked(&self) -> Result<bool> {
        let target = self.target.clone();
        self.shared.run(self.what(), async move { target.is_locked().await }).await
    }

    /// Seconds left of the current hold's lease (mutexes only), or nil if none is held.
    pub async fn remaining_lease_seconds(&self) -> Result<Option<f64>> {
        let target = self.target.clone();
        let remaining = async move { target.remaining_lease().await.map(|left| left.map(|d| d.as_secs_f64())) };
        self.shared.run(self.what(), remaining).await
    }

    /// Remove whoever holds it (mutexes only): whether there was a hold to remove.
    pub async fn force_unlock(&self) -> Result<bool> {
        let target = self.target.clone();
        self.shared.run(self.what(), async move { target.force_unlock().await }).await
    }

    pub fn name(&self) -> String {
        self.target.name().to_string()
    }

    /// `reentrant`, `fair`, `token` or `lease` for a mutex; `read` or `write` for a side.
    pub fn kind(&self) -> String {
        self.target.kind_name().to_string()
    }
}

/// A read-write lock: two `Lock`s, its sides.
#[derive(uniffi::Object)]
pub struct RwLock {
    read: Arc<Lock>,
    write: Arc<Lock>,
}

impl RwLock {
    pub fn new(shared: Arc<ClientShared>, rw: polylock::RwLock) -> Arc<RwLock> {
        let read = Lock::new(shared.clone(), LockTarget::Read(rw.clone()));
        Arc::new(RwLock { read, write: Lock::new(shared, LockTarget::Write(rw)) })
    }
}

#[uniffi::export]
impl RwLock {
    pub fn read(&self) -> Arc<Lock> {
        self.read.clone()
    }

    pub fn write(&self) -> Arc<Lock> {
        self.write.clone()
    }

    pub fn name(&self) -> String {
        self.read.name()
    }
}
