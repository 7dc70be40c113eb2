//! The polylock side of the lock comparison: a polylock client on `sqlite://`.

use std::time::Duration;

use polylock::{AcquireOptions, Client, Guard, Lock};

use crate::locks::LockSide;
use crate::Result;

/// A fixed lease, so no watchdog runs; long enough never to expire during a run, short
/// enough that a crashed worker frees the lock soon.
const LEASE: Duration = Duration::from_secs(30);

pub struct PolylockSqlite {
    client: Client,
}

impl PolylockSqlite {
    pub async fn connect(url: &str) -> Result<Self> {
        Ok(PolylockSqlite { client: Client::connect(url).await? })
    }

    pub async fn close(&self) {
        self.client.close().await;
    }
}

impl LockSide for PolylockSqlite {
    type Handle = Lock;
    type Held = Guard;

    async fn handle(&self, name: &str) -> Result<Lock> {
        Ok(self.client.lock(name)?)
    }

    async fn acquire(&self, lock: &Lock) -> Result<Guard> {
        Ok(lock.acquire_with(AcquireOptions::default().lease(LEASE)).await?)
    }

    async fn release(&self, guard: Guard) -> Result<()> {
        Ok(guard.release().await?)
    }
}
