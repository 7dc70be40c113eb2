//! What users hold: named mutexes, read-write locks and semaphores, each a thin face over
//! the engine's shared protocol (crate::engine), checked against the backend's capabilities
//! when the handle is made.

mod election;
mod guard;
mod idempotency;
pub mod idempotency_codec;
mod idempotency_record;
mod inspect;
mod latch;
mod lock;
mod multi_lock;
mod name;
mod plain_semaphore;
mod rw_lock;
mod segment;
mod semaphore;
mod snowflake_lease;
mod value;
mod value_record;

pub use election::{Election, LeaderChanges, Leadership};
pub use guard::{Guard, Reentry};
pub use idempotency::{Begin, Idempotency, Ticket};
pub use inspect::{lease_millis, Inspector, LockEntry};
pub use latch::Latch;
pub use lock::Lock;
pub use multi_lock::{MultiGuard, MultiLock, MultiLockPart};
pub use name::MAX_NAME_LEN;
pub(crate) use name::{check_namespace, check_value_name, storage_key, validate_name};
pub use plain_semaphore::PlainSemaphore;
pub use rw_lock::{RwLock, RwLockSide};
pub use segment::{SegmentGenerator, SegmentOptions};
pub use semaphore::{Permit, Semaphore};
pub use snowflake_lease::{LeasedSnowflake, SharedClock, SnowflakeOptions};
pub use value::{Value, ValueWatch, VersionedValue};

/// A try-once acquisition's answer: `None` when someone else holds it (a `Timeout` error).
fn none_if_timed_out<T>(acquired: crate::Result<T>) -> crate::Result<Option<T>> {
    match acquired {
        Ok(guard) => Ok(Some(guard)),
        Err(err) if err.kind() == crate::ErrorKind::Timeout => Ok(None),
        Err(err) => Err(err),
    }
}
