//! The polylock side of every lock comparison: a polylock `Client` on any URL, acquiring
//! one kind of lock with a fixed lease or under the watchdog.

use std::time::Duration;

use polylock::{AcquireOptions, Client, Guard, Lock, LockKind};

use crate::lock_side::LockSide;
use crate::Result;

/// A fixed lease, so no watchdog runs; long enough never to expire during a run, short
/// enough that a crashed worker frees the lock soon.
pub const LEASE: Duration = Duration::from_secs(30);

pub struct PolylockSide {
    client: Client,
    kind: LockKind,
    options: AcquireOptions,
}

impl PolylockSide {
    /// Reentrant locks with the fixed [`LEASE`]; waits as long as it takes.
    pub async fn connect(url: &str) -> Result<Self> {
        let client = Client::connect(url).await?;
        Ok(PolylockSide { client, kind: LockKind::Reentrant, options: AcquireOptions::default().lease(LEASE) })
    }

    /// Another side on the same client: `kind` locks, with `lease` or (`None`) the watchdog.
    pub fn with(&self, kind: LockKind, lease: Option<Duration>) -> Self {
        PolylockSide { client: self.client.clone(), kind, options: AcquireOptions { lease, ..self.options } }
    }

    pub async fn close(&self) {
        self.client.close().await;
    }
}

impl LockSide for PolylockSide {
    type Handle = Lock;
    type Held = Guard;

    /// A new handle is a new owner: handles never reenter each other's holds.
    async fn handle(&self, name: &str) -> Result<Lock> {
        Ok(self.client.lock(name)?.with_kind(self.kind)?)
    }

    async fn acquire(&self, lock: &Lock) -> Result<Guard> {
        Ok(lock.acquire_with(self.options).await?)
    }

    async fn release(&self, guard: Guard) -> Result<()> {
        Ok(guard.release().await?)
    }
}
