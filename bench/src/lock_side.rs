//! The interface both sides of the lock benchmarks implement (polylock_side.rs, flock.rs),
//! so the workloads (locks.rs, redis/, sql/) run the same steps on each.

use std::future::Future;

use crate::Result;

/// One way to take an exclusive named lock: polylock, or its peer.
pub trait LockSide: Send + Sync + 'static {
    /// What a name resolves to before locking (a polylock `Lock`, an open file).
    type Handle: Send + Sync + 'static;
    /// Proof of holding, given back to release.
    type Held: Send;

    fn handle(&self, name: &str) -> impl Future<Output = Result<Self::Handle>> + Send;
    /// Wait as long as it takes, then hold exclusively.
    fn acquire(&self, handle: &Self::Handle) -> impl Future<Output = Result<Self::Held>> + Send;
    fn release(&self, held: Self::Held) -> impl Future<Output = Result<()>> + Send;
}
