//! UUIDv7 and ULID from the core's process generators (`kit::ids`), as text.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::id::{self as ids, format_ulid, format_uuid, parse_ulid, parse_uuid};
use polylock::kit::ids as process_ids;

use crate::errors::{invalid_argument, IntoNapiResult};

/// The most IDs one batch call returns, so that a typo cannot ask for gigabytes.
const MAX_BATCH: u32 = 1 << 20;

fn batch_size(what: &str, count: u32) -> Result<usize> {
    if count > MAX_BATCH {
        return Err(invalid_argument(format!("{what} takes at most {MAX_BATCH} at a time, got {count}")));
    }
    Ok(count as usize)
}

/// A UUIDv7 (RFC 9562, method 1), greater than every earlier one of this process, even when
/// the wall clock steps back: `01895f4c-4d2a-7aaa-…`.
#[napi]
pub fn uuid7() -> Result<String> {
    process_ids::uuid7().map(format_uuid).into_napi()
}

/// `count` UUIDv7s in increasing order.
#[napi]
pub fn uuid7_batch(count: u32) -> Result<Vec<String>> {
    Ok(process_ids::uuid7_batch(batch_size("uuid7Batch", count)?).into_napi()?.into_iter().map(format_uuid).collect())
}

/// A ULID (26 characters of Crockford base32), greater than every earlier one of this process.
#[napi]
pub fn ulid() -> Result<String> {
    process_ids::ulid().map(format_ulid).into_napi()
}

/// `count` ULIDs in increasing order.
#[napi]
pub fn ulid_batch(count: u32) -> Result<Vec<String>> {
    Ok(process_ids::ulid_batch(batch_size("ulidBatch", count)?).into_napi()?.into_iter().map(format_ulid).collect())
}

/// The Unix milliseconds of a UUIDv7 (an error for another version).
#[napi]
pub fn uuid7_timestamp_ms(uuid: String) -> Result<f64> {
    let value = parse_uuid(&uuid).into_napi()?;
    ids::uuid7_timestamp_ms(value).map(|ms| ms as f64).into_napi()
}

/// The Unix milliseconds of a ULID.
#[napi]
pub fn ulid_timestamp_ms(ulid: String) -> Result<f64> {
    parse_ulid(&ulid).map(|value| ids::ulid_timestamp_ms(value) as f64).into_napi()
}

/// The same 128 bits as a UUID, to store a ULID in a UUID column.
#[napi]
pub fn ulid_to_uuid(ulid: String) -> Result<String> {
    parse_ulid(&ulid).map(format_uuid).into_napi()
}

/// The 128 bits of a UUID as a ULID (a UUIDv7 gives the ULID of the same millisecond).
#[napi]
pub fn uuid_to_ulid(uuid: String) -> Result<String> {
    parse_uuid(&uuid).map(format_ulid).into_napi()
}
