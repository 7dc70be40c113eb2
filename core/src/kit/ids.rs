//! One UUIDv7 and one ULID generator per process, shared by every binding that hands out IDs
//! without a handle (Node, C, the JVM), so every caller's IDs are increasing.

use std::sync::LazyLock;

use crate::error::Result;
use crate::id::{UlidGenerator, Uuid7Generator};

static UUID7: LazyLock<Uuid7Generator> = LazyLock::new(Uuid7Generator::new);
static ULID: LazyLock<UlidGenerator> = LazyLock::new(UlidGenerator::new);

/// The next UUIDv7 of this process.
pub fn uuid7() -> Result<u128> {
    Ok(UUID7.next()?)
}

/// `count` UUIDv7s of this process, in increasing order.
pub fn uuid7_batch(count: usize) -> Result<Vec<u128>> {
    Ok(UUID7.batch(count)?)
}

/// The next ULID of this process.
pub fn ulid() -> Result<u128> {
    Ok(ULID.next()?)
}

/// `count` ULIDs of this process, in increasing order.
pub fn ulid_batch(count: usize) -> Result<Vec<u128>> {
    Ok(ULID.batch(count)?)
}
