//! Semaphores of N owned permits. Each acquisition takes one permit of its own, with its
//! own lease (renewed by the watchdog, or fixed), fencing token and lost signal, so a crashed
//! holder's permit comes back at its lease end (Redisson's RPermitExpirableSemaphore, not
//! its RSemaphore, whose permits leak with their holders).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::guard::Guard;
use super::none_if_timed_out;
use crate::engine::{AcquireOptions, Engine, Handle};
use crate::error::{Error, Result};
use crate::owner::{next_handle_local_id, Owner};
use crate::spi::Permits;

/// One permit of a semaphore: release it, or drop it to release in the background.
/// [`Guard::id`] is the permit's identity; [`Semaphore::release_permit`] releases by it.
pub type Permit = Guard<Permits>;

impl Guard<Permits> {
    /// The permit's identity, for [`Semaphore::release_permit`] (Redisson's permit id).
    pub fn id(&self) -> u64 {
        self.owner().local_id
    }
}

/// A named semaphore with a fixed number of permits. The count is fixed by the first use
/// of the name in the store; using the name with another count is an error that says so.
#[derive(Clone)]
pub struct Semaphore {
    handle: Handle<Permits>,
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore").field("name", &self.handle.name()).field("permits", &self.permits()).finish()
    }
}

impl Semaphore {
    pub(crate) fn new(engine: Arc<Engine>, name: &str, key: String, client_owner: Owner, permits: u32) -> Result<Self> {
        if permits == 0 {
            return Err(Error::invalid_argument(format!("semaphore '{name}' needs at least one permit")));
        }
        let capabilities = engine.capabilities();
        if permits > capabilities.max_permits() {
            return Err(Error::invalid_argument(format!(
                "semaphore '{name}' asks for {permits} permits; the {} backend takes at most {}",
                capabilities.backend,
                capabilities.max_permits()
            )));
        }
        Ok(Semaphore { handle: Handle::new(engine, name, key, Permits(permits), client_owner) })
    }

    pub fn name(&self) -> &str {
        self.handle.name()
    }

    /// How many permits the semaphore has in all.
    pub fn permits(&self) -> u32 {
        self.handle.kind().0
    }

    /// Wait for a permit as long as it takes, then hold it under the watchdog.
    pub async fn acquire(&self) -> Result<Permit> {
        self.acquire_with(AcquireOptions::default()).await
    }

    /// Try once; `None` if every permit is taken.
    pub async fn try_acquire(&self) -> Result<Option<Permit>> {
        self.try_acquire_with(AcquireOptions::default().wait(Duration::ZERO)).await
    }

    /// The try form of [`Semaphore::acquire_with`]: `Ok(None)` when the wait runs out.
    pub async fn try_acquire_with(&self, options: AcquireOptions) -> Result<Option<Permit>> {
        none_if_timed_out(self.acquire_with(options).await)
    }

    /// Take one permit, with an explicit wait and lease as [`crate::Lock::acquire_with`].
    pub async fn acquire_with(&self, options: AcquireOptions) -> Result<Permit> {
        // Every permit is an owner of its own: permits are not reentrant.
        let owner = Owner { local_id: next_handle_local_id(), ..self.handle.owner() };
        let handle = self.handle.clone().with_owner(owner);
        let granted = handle.acquire(options).await?;
        Ok(Guard::new(handle, granted.token, granted.lost))
    }

    /// Release the permit whose identity is `permit` (a [`Permit`]'s [`Guard::id`]),
    /// for bindings whose users release by id (Redisson's `release(permitId)`). A permit this
    /// client does not hold is an error of kind `NotOwner`.
    pub async fn release_permit(&self, permit: u64) -> Result<()> {
        let owner = Owner { local_id: permit, ..self.handle.owner() };
        self.handle.clone().with_owner(owner).release(None).await
    }

    /// Whether any permit is held in the store right now.
    pub async fn is_locked(&self) -> Result<bool> {
        self.handle.is_locked().await
    }
}
