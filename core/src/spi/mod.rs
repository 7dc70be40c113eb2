//! The store interface: what a backend implements, and all the engine knows of backends.
//! Arrows point here from both sides (engine -> spi <- backend); nothing here imports either.
//!
//! A backend is a [`Store`]: it declares its [`Capabilities`] and hands out one
//! [`HoldStore`] per primitive family it offers, and, where it has them, a [`CounterStore`]
//! and a [`VersionStore`]. Losing a hold is reported through the
//! [`LostNotifier`] each request carries.

mod capabilities;
mod election;
mod holds;
mod inspect;
mod kind;
mod latch;
mod lost;
mod plain_permits;
mod values;

use std::sync::Arc;

use async_trait::async_trait;

pub use capabilities::{Capabilities, Primitive, SessionBound, MAX_PERMITS, MAX_SQL_PERMITS};
pub use election::{
    poll_leader, CampaignRequest, Elected, ElectionStore, HeldLeadership, LeaderRecord, LeaderSink, OBSERVE_POLL,
};
pub use holds::{
    AcquireRequest, Acquired, ExclusiveStore, HeldLock, HoldState, HoldStore, PermitStore, Release, Renewal,
    SharedStore,
};
pub use inspect::{InspectStore, ListedLock, LockStatus};
pub use kind::{HoldKind, LockKind, Permits, RwMode};
#[cfg(test)]
pub(crate) use latch::contract as latch_contract;
pub use latch::LatchStore;
pub(crate) use lost::{lost_latch, lost_latch_of};
pub use lost::{LostNotifier, LostReason, LostWatch};
pub use plain_permits::PlainPermitStore;
#[cfg(test)]
pub(crate) use values::contract;
// Used by the backends that read a server's clock (not in the embedded-only build).
#[cfg(any(feature = "redis", feature = "zookeeper", feature = "postgres", feature = "mysql"))]
pub(crate) use values::MeasuredClock;
pub use values::{CounterStore, ValueChanges, VersionStore, Versioned, Write};

/// [`Store::retry_within`] of a backend that does not say: the default of the URL option
/// `timeout` on Redis and etcd.
pub const DEFAULT_RETRY_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// One backend, opened from a URL.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// What this backend offers; checked when a handle is made.
    fn capabilities(&self) -> Capabilities;

    /// Mutexes, of the kinds [`Capabilities::lock_kinds`] lists. Every backend has them.
    fn locks(self: Arc<Self>) -> Arc<ExclusiveStore>;

    /// Read-write locks, if [`Capabilities::rw_locks`].
    fn rw_locks(self: Arc<Self>) -> Option<Arc<SharedStore>> {
        None
    }

    /// Semaphores, if [`Capabilities::semaphores`].
    fn semaphores(self: Arc<Self>) -> Option<Arc<PermitStore>> {
        None
    }

    /// Counters that hand out ranges, if [`Capabilities::counters`].
    fn counters(self: Arc<Self>) -> Option<Arc<dyn CounterStore>> {
        None
    }

    /// Values written by compare-and-set, if [`Capabilities::versioned_values`].
    fn versions(self: Arc<Self>) -> Option<Arc<dyn VersionStore>> {
        None
    }

    /// The bound on holds that each keep a connection of their own, if the backend has one.
    fn session_bound(&self) -> Option<SessionBound> {
        None
    }

    /// Whether every grant's token is a fencing token (strictly greater than every earlier
    /// one for the name). False only for RedLock: a majority of independent servers has no
    /// one counter that only grows, so its tokens merely tell this client's holds apart.
    fn fencing_tokens(&self) -> bool {
        true
    }

    /// Semaphores as a plain counter nobody owns (Redisson's `RSemaphore`), an explicit
    /// opt-in; `None` (the default) where the backend has no such layout.
    fn plain_semaphores(self: Arc<Self>) -> Option<Arc<dyn PlainPermitStore>> {
        None
    }

    /// Reading mutex layouts whoever holds them (status, list), where the backend can;
    /// `None` leaves the engine's generic answers (`is_locked`, `remaining_lease`).
    fn inspect(self: Arc<Self>) -> Option<Arc<dyn InspectStore>> {
        None
    }

    /// Countdown latches (Redisson's `RCountDownLatch`); `None` (the default) where the
    /// backend has none.
    fn latches(self: Arc<Self>) -> Option<Arc<dyn LatchStore>> {
        None
    }

    /// Leader elections in a layout of the backend's own (etcd, ZooKeeper), if
    /// [`Capabilities::elections`]; `None` (the default) builds them from a lock hold and a
    /// versioned value (see `primitives/election.rs`).
    fn elections(self: Arc<Self>) -> Option<Arc<dyn ElectionStore>> {
        None
    }

    /// Refuse a storage key (namespace applied) that this backend's layout would make the
    /// same as a key it keeps for another name (issue 35: "one name, one lock"), with
    /// `InvalidArgument` naming the form. Checked when a handle is made, before anything is
    /// written; the default accepts every key.
    fn check_key(&self, _key: &str) -> crate::error::Result<()> {
        Ok(())
    }

    /// How long the engine may keep sending an idempotent call (a release, a renewal, a read)
    /// again after transport errors (kind `Connection`) before the caller sees the error
    /// (engine/retry.rs): the URL's `timeout=` where the backend has one, else its connect
    /// timeout. The default suits stores without a network (mem, SQLite), which never fail so.
    fn retry_within(&self) -> std::time::Duration {
        DEFAULT_RETRY_WITHIN
    }

    /// Close connections and stop background tasks.
    async fn close(&self) {}
}
