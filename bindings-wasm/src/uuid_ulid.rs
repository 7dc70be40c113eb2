//! UUIDv7 and ULID as text, from generators that read `Date.now()` and
//! `crypto.getRandomValues`, and the conversions and timestamps of every ID kind.

use std::sync::OnceLock;

use polylock_id::{
    format_ulid, format_uuid, parse_ulid, parse_uuid, ulid_timestamp_ms, uuid7_timestamp_ms, UlidGenerator as Ulids,
    UlidOverflow, Uuid7Generator,
};
use wasm_bindgen::prelude::*;

use crate::convert::{batch_size, id_from_js, present, string_from_js};
use crate::errors::{invalid_argument, or_throw, IntoJsResult};
use crate::host::{HostClock, HostRandom};
use crate::snowflake::layout_of_options;
use crate::text::{ulid_to_js, uuid_to_js};

/// The most IDs one batch call returns (as the Node binding).
const MAX_BATCH: u64 = 1 << 20;

/// The module's generators: one of each per instance of the module (a page, a worker, a
/// Node process that loads it once), as `uuid` and `ulid`'s module-level functions.
fn uuid7s() -> &'static Uuid7Generator {
    static GENERATOR: OnceLock<Uuid7Generator> = OnceLock::new();
    GENERATOR.get_or_init(|| Uuid7Generator::with_sources(HostClock, HostRandom))
}

fn ulids() -> &'static Ulids {
    static GENERATOR: OnceLock<Ulids> = OnceLock::new();
    GENERATOR.get_or_init(|| Ulids::with_sources(HostClock, HostRandom))
}

/// A UUIDv7 (RFC 9562, method 1: a 42-bit counter within a millisecond), greater than every
/// earlier one of this module, even when the clock steps back: `01895f4c-4d2a-7aaa-…`.
#[wasm_bindgen(unchecked_return_type = "string")]
pub fn uuid7() -> JsValue {
    uuid_to_js(or_throw(uuid7s().next()))
}

/// `count` UUIDv7s in increasing order.
#[wasm_bindgen(js_name = uuid7Batch, unchecked_return_type = "string[]")]
pub fn uuid7_batch(count: f64) -> Result<Vec<JsValue>, JsValue> {
    let uuids = uuid7s().batch(batch_size("uuid7Batch", count, MAX_BATCH)?).into_js()?;
    Ok(uuids.into_iter().map(uuid_to_js).collect())
}

/// A ULID (26 characters of Crockford base32), greater than every earlier one of this
/// module: within a millisecond (or while the clock stands still or steps back) the random
/// part counts up by one.
#[wasm_bindgen(unchecked_return_type = "string")]
pub fn ulid() -> JsValue {
    ulid_to_js(or_throw(ulids().next()))
}

/// `count` ULIDs in increasing order.
#[wasm_bindgen(js_name = ulidBatch, unchecked_return_type = "string[]")]
pub fn ulid_batch(count: f64) -> Result<Vec<JsValue>, JsValue> {
    let values = ulids().batch(batch_size("ulidBatch", count, MAX_BATCH)?).into_js()?;
    Ok(values.into_iter().map(ulid_to_js).collect())
}

#[wasm_bindgen(typescript_custom_section)]
const ULID_TYPES: &str = r#"
/** Options of `new UlidGenerator(...)`. */
export interface UlidGeneratorOptions {
  /** When the 80 random bits of one millisecond are used up: `'nextMillisecond'` (the default) moves on to the next millisecond with fresh bits, so the generator never fails; `'error'` throws `POLYLOCK_BACKEND`, as the ULID spec's reference implementation does. */
  overflow?: 'nextMillisecond' | 'error'
}
"#;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(typescript_type = "UlidGeneratorOptions")]
    pub type UlidGeneratorOptions;
    #[wasm_bindgen(method, getter)]
    fn overflow(this: &UlidGeneratorOptions) -> JsValue;
}

/// A monotonic ULID generator of its own (the module-level `ulid()` shares one), with a
/// choice of what happens when a millisecond's random part is used up.
#[wasm_bindgen]
pub struct UlidGenerator {
    generator: Ulids,
}

#[wasm_bindgen]
impl UlidGenerator {
    #[wasm_bindgen(constructor)]
    pub fn new(options: Option<UlidGeneratorOptions>) -> Result<UlidGenerator, JsValue> {
        let overflow = match options.and_then(|options| present(options.overflow())) {
            None => UlidOverflow::NextMillisecond,
            Some(value) => match value.as_string().as_deref() {
                Some("nextMillisecond") => UlidOverflow::NextMillisecond,
                Some("error") => UlidOverflow::Error,
                _ => return Err(invalid_argument("overflow must be 'nextMillisecond' or 'error'")),
            },
        };
        Ok(UlidGenerator { generator: Ulids::with_sources(HostClock, HostRandom).with_overflow(overflow) })
    }

    /// The next ULID, greater than every earlier one of this generator.
    #[wasm_bindgen(unchecked_return_type = "string")]
    pub fn next(&self) -> JsValue {
        ulid_to_js(or_throw(self.generator.next()))
    }

    /// `count` ULIDs in increasing order.
    #[wasm_bindgen(unchecked_return_type = "string[]")]
    pub fn batch(&self, count: f64) -> Result<Vec<JsValue>, JsValue> {
        let values = self.generator.batch(batch_size("batch", count, MAX_BATCH)?).into_js()?;
        Ok(values.into_iter().map(ulid_to_js).collect())
    }
}

/// The same 128 bits as a UUID (lowercase, dashed), to store a ULID in a UUID column.
#[wasm_bindgen(js_name = ulidToUuid)]
pub fn ulid_to_uuid(#[wasm_bindgen(unchecked_param_type = "string")] ulid: JsValue) -> Result<String, JsValue> {
    parse_ulid(&string_from_js("ulid", &ulid)?).map(format_uuid).into_js()
}

/// The 128 bits of a UUID as a ULID (a UUIDv7 gives the ULID of the same millisecond).
#[wasm_bindgen(js_name = uuidToUlid)]
pub fn uuid_to_ulid(#[wasm_bindgen(unchecked_param_type = "string")] uuid: JsValue) -> Result<String, JsValue> {
    parse_uuid(&string_from_js("uuid", &uuid)?).map(format_ulid).into_js()
}

/// The Unix milliseconds an ID was made at: a UUIDv7 (36 characters, or 32 hex digits), a
/// ULID (26 characters), or a Snowflake (a BigInt or a decimal string of at most 20 digits)
/// of Twitter's layout or of the one `options` describe. Any other UUID version is an error.
#[wasm_bindgen(js_name = timestampOf)]
pub fn timestamp_of(
    #[wasm_bindgen(unchecked_param_type = "bigint | string")] id: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "SnowflakeLayoutOptions")] options: JsValue,
) -> Result<f64, JsValue> {
    if let Some(text) = id.as_string() {
        let trimmed = text.trim();
        if trimmed.len() == 26 {
            return parse_ulid(trimmed).map(|value| ulid_timestamp_ms(value) as f64).into_js();
        }
        // 32 characters cannot be a Snowflake's decimal (at most 20 digits).
        if trimmed.len() == 36 || trimmed.len() == 32 {
            let value = parse_uuid(trimmed).into_js()?;
            return uuid7_timestamp_ms(value).map(|ms| ms as f64).into_js();
        }
    }
    let layout = layout_of_options(&options)?;
    let snowflake = id_from_js(&id).map_err(|_| {
        invalid_argument("timestampOf takes a UUIDv7, a ULID, or a Snowflake as a BigInt or decimal string")
    })?;
    layout.parse(snowflake).map(|parts| parts.timestamp_ms as f64).into_js()
}
