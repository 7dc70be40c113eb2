//! What a lock call from Java is about: a mutex of some kind, or one side of a read-write
//! lock (the kit's `LockTarget`), picked by the kind code `io.polylock.NativeBridge` passes
//! (KIND_*).

use polylock::kit::LockTarget;
use polylock::{Client, Error, LockKind, MultiLockPart};

use crate::entry::JResult;

/// The kind codes of `io.polylock.NativeBridge`.
const KIND_REENTRANT: i32 = 0;
const KIND_FAIR: i32 = 1;
const KIND_TOKEN: i32 = 2;
const KIND_LEASE: i32 = 3;
const KIND_READ: i32 = 4;
const KIND_WRITE: i32 = 5;

/// The lock `name` of kind code `kind`, owned by `thread_id` of `client` (Redisson's field
/// `<client uuid>:<thread id>`). Java thread ids are never reused within a JVM, so they serve
/// as owners as they are.
pub fn lock_target(client: &Client, name: &str, kind: i32, thread_id: u64) -> JResult<LockTarget> {
    let mutex = |kind: LockKind| -> JResult<LockTarget> {
        Ok(LockTarget::Lock(client.lock(name)?.with_kind(kind)?.with_local_id(thread_id)))
    };
    match kind {
        KIND_REENTRANT => mutex(LockKind::Reentrant),
        KIND_FAIR => mutex(LockKind::Fair),
        KIND_TOKEN => mutex(LockKind::Token),
        KIND_LEASE => mutex(LockKind::Lease),
        KIND_READ => Ok(LockTarget::Read(client.rw_lock(name)?.with_local_id(thread_id))),
        KIND_WRITE => Ok(LockTarget::Write(client.rw_lock(name)?.with_local_id(thread_id))),
        other => Err(Error::invalid_argument(format!("unknown lock kind code {other}"))),
    }
}

/// The multi-lock part for the lock `name` of kind code `kind`, as `lock_target` reads it.
pub fn multi_lock_part(name: &str, kind: i32) -> JResult<MultiLockPart> {
    Ok(match kind {
        KIND_REENTRANT => MultiLockPart::lock_of_kind(name, LockKind::Reentrant),
        KIND_FAIR => MultiLockPart::lock_of_kind(name, LockKind::Fair),
        KIND_TOKEN => MultiLockPart::lock_of_kind(name, LockKind::Token),
        KIND_LEASE => MultiLockPart::lock_of_kind(name, LockKind::Lease),
        KIND_READ => MultiLockPart::read(name),
        KIND_WRITE => MultiLockPart::write(name),
        other => return Err(Error::invalid_argument(format!("unknown lock kind code {other}"))),
    })
}
