//! What a lock call from Java is about: a mutex of some kind, or one side of a read-write
//! lock, picked by the kind code `io.polylock.NativeBridge` passes (KIND_*).

use std::time::Duration;

use polylock::{AcquireOptions, Client, Error, Lock, LockKind, RwLock};

use crate::entry::JResult;

/// The kind codes of `io.polylock.NativeBridge`.
const KIND_REENTRANT: i32 = 0;
const KIND_FAIR: i32 = 1;
const KIND_TOKEN: i32 = 2;
const KIND_LEASE: i32 = 3;
const KIND_READ: i32 = 4;
const KIND_WRITE: i32 = 5;

/// A mutex, or a side of a read-write lock, owned by one Java thread.
pub enum Target {
    Lock(Lock),
    Read(RwLock),
    Write(RwLock),
}

impl Target {
    /// The lock `name` of kind code `kind`, owned by `thread_id` of `client` (Redisson's field
    /// `<client uuid>:<thread id>`). Java thread ids are never reused within a JVM, so they
    /// serve as owners as they are.
    pub fn new(client: &Client, name: &str, kind: i32, thread_id: u64) -> JResult<Target> {
        let mutex = |kind: LockKind| -> JResult<Target> {
            Ok(Target::Lock(client.lock(name)?.with_kind(kind)?.with_local_id(thread_id)))
        };
        match kind {
            KIND_REENTRANT => mutex(LockKind::Reentrant),
            KIND_FAIR => mutex(LockKind::Fair),
            KIND_TOKEN => mutex(LockKind::Token),
            KIND_LEASE => mutex(LockKind::Lease),
            KIND_READ => Ok(Target::Read(client.rw_lock(name)?.with_local_id(thread_id))),
            KIND_WRITE => Ok(Target::Write(client.rw_lock(name)?.with_local_id(thread_id))),
            other => Err(Error::invalid_argument(format!("unknown lock kind code {other}"))),
        }
    }

    /// Acquire and keep the hold for the owner (who releases by owner): the fencing token.
    pub async fn acquire(&self, options: AcquireOptions) -> polylock::Result<u64> {
        match self {
            Target::Lock(lock) => lock.acquire_with(options).await.map(polylock::Guard::detach),
            Target::Read(rw) => rw.read().acquire_with(options).await.map(polylock::Guard::detach),
            Target::Write(rw) => rw.write().acquire_with(options).await.map(polylock::Guard::detach),
        }
    }

    pub async fn release(&self) -> polylock::Result<()> {
        match self {
            Target::Lock(lock) => lock.release().await,
            Target::Read(rw) => rw.read().release().await,
            Target::Write(rw) => rw.write().release().await,
        }
    }

    pub fn hold_count(&self) -> u32 {
        match self {
            Target::Lock(lock) => lock.hold_count(),
            Target::Read(rw) => rw.read().hold_count(),
            Target::Write(rw) => rw.write().hold_count(),
        }
    }

    pub fn fencing_token(&self) -> Option<u64> {
        match self {
            Target::Lock(lock) => lock.fencing_token(),
            Target::Read(rw) => rw.read().fencing_token(),
            Target::Write(rw) => rw.write().fencing_token(),
        }
    }

    pub async fn is_locked(&self) -> polylock::Result<bool> {
        match self {
            Target::Lock(lock) => lock.is_locked().await,
            Target::Read(rw) => rw.read().is_locked().await,
            Target::Write(rw) => rw.write().is_locked().await,
        }
    }

    pub async fn remaining_lease(&self) -> polylock::Result<Option<Duration>> {
        match self {
            Target::Lock(lock) => lock.remaining_lease().await,
            Target::Read(_) | Target::Write(_) => Err(self.mutex_only("remainTimeToLive")),
        }
    }

    pub async fn force_unlock(&self) -> polylock::Result<bool> {
        match self {
            Target::Lock(lock) => lock.force_unlock().await,
            Target::Read(_) | Target::Write(_) => Err(self.mutex_only("forceUnlock")),
        }
    }

    fn mutex_only(&self, what: &str) -> Error {
        Error::unsupported(format!("{what} is offered for mutexes, not for the sides of a read-write lock"))
    }
}
