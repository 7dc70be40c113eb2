//! polylock-id: the ID algorithms and name mappings of polylock, with no I/O, so that they
//! build for every target polylock's bindings reach, WebAssembly included.
//!
//! - [`Snowflake`] generators and [`SnowflakeLayout`] parsing, reading time through a
//!   [`Clock`] (on `wasm32-unknown-unknown` there is no system clock: pass your own);
//! - [`segment`]: Leaf-style double-buffered ID ranges, as pure bookkeeping;
//! - [`worker_lease`]: when a leased Snowflake worker id may issue which timestamps;
//! - [`Uuid7Generator`] (RFC 9562, monotonic) and [`UlidGenerator`] (monotonic, with an
//!   overflow policy), reading random bits through a [`Random`] source;
//! - [`sql_names`]: how a lock name becomes a PostgreSQL advisory key, a MySQL lock name or a
//!   ShedLock row, which other languages must compute the same way.

mod clock;
mod error;
mod random;
pub mod segment;
mod snowflake;
pub mod sql_names;
mod ulid;
mod uuid7;
pub mod worker_lease;

#[cfg(not(target_arch = "wasm32"))]
pub use clock::SystemClock;
pub use clock::{Clock, ManualClock};
pub use error::{IdError, IdErrorKind, Result};
pub use random::{CountingRandom, Random};
#[cfg(not(target_arch = "wasm32"))]
pub use random::{OsRandom, POOL_BYTES};
pub use snowflake::{parse_snowflake, Snowflake, SnowflakeLayout, SnowflakeParts, DEFAULT_MAX_ROLLBACK};
pub use ulid::{format_ulid, parse_ulid, ulid_timestamp_ms, ulid_to_uuid, uuid_to_ulid, UlidGenerator, UlidOverflow};
pub use uuid7::{format_uuid, parse_uuid, uuid7_at, uuid7_timestamp_ms, Uuid7Generator};

/// The most IDs one batch call hands out (`next_ids`, `batch`, and polylock's segment and
/// leased Snowflake batches): one million, 8 MB of `u64`s or 16 MB of `u128`s. A larger count
/// is refused with `InvalidArgument` before anything is allocated, so no count from any
/// language can abort the host process on an allocation failure.
pub const MAX_BATCH: usize = 1_000_000;

/// `InvalidArgument` when `count` is above [`MAX_BATCH`].
pub fn check_batch(count: usize) -> Result<()> {
    if count > MAX_BATCH {
        return Err(IdError::invalid_argument(format!(
            "a batch of {count} IDs is more than the {MAX_BATCH} one call hands out; ask in several calls"
        )));
    }
    Ok(())
}
