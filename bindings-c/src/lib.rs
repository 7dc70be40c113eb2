//! The C ABI of polylock. No lock logic lives here: each function checks its arguments,
//! runs one core call on the client's runtime, and turns the result into a
//! [`polylock_status`] plus a thread-local message (`polylock_last_error()`).
//!
//! Ownership follows pthread recursive mutexes: the owner of a hold is the calling thread.
//! The header `include/polylock.h` is generated from these sources by `build.rs`.

mod args;
mod boundary;
mod client;
mod last_error;
mod lock;
mod runtime;
mod rwlock;
mod semaphore;
mod snowflake;
mod status;
mod uuid_ulid;

pub use client::{polylock_client, polylock_client_close, polylock_client_free, polylock_connect};
pub use last_error::polylock_last_error;
pub use lock::{
    polylock_client_lock, polylock_client_lock_kind, polylock_lock, polylock_lock_acquire, polylock_lock_free,
    polylock_lock_hold_count, polylock_lock_is_held, polylock_lock_is_lost, polylock_lock_release,
};
pub use rwlock::{
    polylock_client_rwlock, polylock_rwlock, polylock_rwlock_free, polylock_rwlock_read_acquire,
    polylock_rwlock_read_release, polylock_rwlock_write_acquire, polylock_rwlock_write_release,
};
pub use semaphore::{
    polylock_client_semaphore, polylock_semaphore, polylock_semaphore_acquire, polylock_semaphore_free,
    polylock_semaphore_release,
};
pub use snowflake::{polylock_snowflake, polylock_snowflake_free, polylock_snowflake_new, polylock_snowflake_next};
pub use status::{polylock_status, polylock_status_name};
pub use uuid_ulid::{polylock_ulid, polylock_uuid7, POLYLOCK_ULID_TEXT_SIZE, POLYLOCK_UUID_TEXT_SIZE};
