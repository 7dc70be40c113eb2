//! Owner ids for Ruby threads, Snowflake, UUIDv7 and ULID: the core's, translated.

use polylock::id::{format_ulid, format_uuid, parse_ulid, parse_uuid, SnowflakeLayout};
use polylock::kit::{ids, owner_ids};

use crate::errors::Result;

/// A fresh owner id, never handed out before in this process: the gem gives one to each
/// Ruby Thread the first time it locks (Ruby threads, not the OS threads under them, are
/// the owners, and their ids are never reused).
#[uniffi::export]
pub fn next_owner_id() -> u64 {
    owner_ids::next_owner_id()
}

/// The next UUIDv7 of this process, as text.
#[uniffi::export]
pub fn uuid7() -> Result<String> {
    Ok(format_uuid(ids::uuid7()?))
}

/// The next ULID of this process, as its 26 characters.
#[uniffi::export]
pub fn ulid() -> Result<String> {
    Ok(format_ulid(ids::ulid()?))
}

/// The milliseconds since the Unix epoch in a UUIDv7 (text); `InvalidArgument` for text that
/// is no UUID or a UUID of another version.
#[uniffi::export]
pub fn uuid7_timestamp(uuid: String) -> Result<u64> {
    Ok(polylock::id::uuid7_timestamp_ms(parse_uuid(&uuid)?)?)
}

/// The milliseconds since the Unix epoch in a ULID (text); `InvalidArgument` for text that is
/// no ULID.
#[uniffi::export]
pub fn ulid_timestamp(ulid: String) -> Result<u64> {
    Ok(polylock::id::ulid_timestamp_ms(parse_ulid(&ulid)?))
}

/// The same 128 bits as a UUID's text.
#[uniffi::export]
pub fn ulid_to_uuid(ulid: String) -> Result<String> {
    Ok(format_uuid(polylock::id::ulid_to_uuid(parse_ulid(&ulid)?)))
}

/// The same 128 bits as a ULID's text.
#[uniffi::export]
pub fn uuid_to_ulid(uuid: String) -> Result<String> {
    Ok(format_ulid(polylock::id::uuid_to_ulid(parse_uuid(&uuid)?)))
}

/// Twitter's widths: 41 bits of milliseconds, 10 of worker, 12 of sequence.
const TIMESTAMP_BITS: u32 = 41;
const WORKER_BITS: u32 = 10;
const SEQUENCE_BITS: u32 = 12;

fn layout(epoch_ms: Option<u64>) -> Result<SnowflakeLayout> {
    match epoch_ms {
        None => Ok(SnowflakeLayout::TWITTER),
        Some(epoch) => Ok(SnowflakeLayout::new(epoch, TIMESTAMP_BITS, WORKER_BITS, SEQUENCE_BITS)?),
    }
}

/// The parts of a Snowflake ID.
#[derive(uniffi::Record)]
pub struct SnowflakeParts {
    pub timestamp_ms: u64,
    pub worker: u64,
    pub sequence: u64,
}

impl From<polylock::id::SnowflakeParts> for SnowflakeParts {
    fn from(parts: polylock::id::SnowflakeParts) -> Self {
        SnowflakeParts { timestamp_ms: parts.timestamp_ms, worker: parts.worker, sequence: parts.sequence }
    }
}

/// A Snowflake generator for one worker id (Twitter layout, optionally another epoch);
/// threads may share it.
#[derive(uniffi::Object)]
pub struct Snowflake {
    generator: polylock::id::Snowflake,
}

#[uniffi::export]
impl Snowflake {
    #[uniffi::constructor(default(epoch_ms = None))]
    pub fn new(worker_id: u64, epoch_ms: Option<u64>) -> Result<Self> {
        Ok(Snowflake { generator: polylock::id::Snowflake::with_layout(layout(epoch_ms)?, worker_id)? })
    }

    pub fn next_id(&self) -> Result<u64> {
        Ok(self.generator.next_id()?)
    }

    /// `count` IDs, in increasing order.
    pub fn next_ids(&self, count: u32) -> Result<Vec<u64>> {
        Ok(self.generator.next_ids(count as usize)?)
    }

    /// The parts of an ID of this generator's layout.
    pub fn parse(&self, id: u64) -> Result<SnowflakeParts> {
        Ok(self.generator.parse(id)?.into())
    }

    pub fn worker_id(&self) -> u64 {
        self.generator.worker()
    }

    pub fn epoch_ms(&self) -> u64 {
        self.generator.layout().epoch_ms()
    }
}

/// The parts of a Twitter-layout ID, or of a layout with `epoch_ms`.
#[uniffi::export(default(epoch_ms = None))]
pub fn parse_snowflake(id: u64, epoch_ms: Option<u64>) -> Result<SnowflakeParts> {
    Ok(layout(epoch_ms)?.parse(id)?.into())
}
