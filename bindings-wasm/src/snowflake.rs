//! Snowflake IDs as BigInts: `new Snowflake({ workerId, epochMs?, layout? })` (the option
//! names of the Node binding's `client.snowflake(...)`), and parsing of any layout.

use polylock_id::{SnowflakeLayout, SnowflakeParts as Parts};
use wasm_bindgen::prelude::*;

use crate::convert::{batch_size, exact_integer, id_from_js, present, u64_from_number_or_bigint};
use crate::errors::{invalid_argument, IntoJsResult};
use crate::host::HostClock;

/// The most IDs one `nextIds` call returns (as the Node binding).
const MAX_BATCH: u64 = 1 << 24;

/// Discord's epoch (2015-01-01T00:00:00Z), with Twitter's widths.
const DISCORD_EPOCH_MS: u64 = 1_420_070_400_000;

#[wasm_bindgen(typescript_custom_section)]
const SNOWFLAKE_TYPES: &str = r#"
/** Options of `new Snowflake(...)`: the names of the Node binding's `client.snowflake(...)`. */
export interface SnowflakeOptions {
  /** This generator's worker id, `0..=2**workerBits - 1` (1023 in Twitter's layout); no two live generators may share one. */
  workerId: number | bigint
  /** The epoch in ms since 1970 (default: the layout's; Twitter's is 1288834974657). */
  epochMs?: number
  /** `'twitter'` (the default: 41 bits of ms, 10 of worker, 12 of sequence), `'discord'` (the same widths, Discord's epoch), or your own widths (at most 63 bits in all, at least 31 of ms and 1 of sequence; absent ones are Twitter's). */
  layout?: SnowflakeLayoutName | SnowflakeLayoutBits
}

/** Options of `parseSnowflake` and `timestampOf`: which layout an ID is of. */
export interface SnowflakeLayoutOptions {
  epochMs?: number
  layout?: SnowflakeLayoutName | SnowflakeLayoutBits
}

export type SnowflakeLayoutName = 'twitter' | 'discord'

export interface SnowflakeLayoutBits {
  timestampBits?: number
  workerBits?: number
  sequenceBits?: number
}

/** The parts of a Snowflake ID. */
export interface SnowflakeParts {
  /** Milliseconds since the Unix epoch. */
  timestampMs: number
  workerId: number
  sequence: number
}
"#;

#[wasm_bindgen]
extern "C" {
    /// `{ workerId, epochMs, layout }`, read field by field.
    #[wasm_bindgen(typescript_type = "SnowflakeOptions")]
    pub type SnowflakeOptions;
    #[wasm_bindgen(method, getter, js_name = workerId)]
    fn worker_id(this: &SnowflakeOptions) -> JsValue;
    #[wasm_bindgen(method, getter, js_name = epochMs)]
    fn epoch_ms(this: &SnowflakeOptions) -> JsValue;
    #[wasm_bindgen(method, getter)]
    fn layout(this: &SnowflakeOptions) -> JsValue;

    #[wasm_bindgen(typescript_type = "SnowflakeLayoutOptions")]
    pub type SnowflakeLayoutOptions;

    #[wasm_bindgen(typescript_type = "SnowflakeLayoutBits")]
    type LayoutBits;
    #[wasm_bindgen(method, getter, js_name = timestampBits)]
    fn timestamp_bits(this: &LayoutBits) -> JsValue;
    #[wasm_bindgen(method, getter, js_name = workerBits)]
    fn worker_bits(this: &LayoutBits) -> JsValue;
    #[wasm_bindgen(method, getter, js_name = sequenceBits)]
    fn sequence_bits(this: &LayoutBits) -> JsValue;

    /// A plain object made here and filled by setters: `{ timestampMs, workerId, sequence }`.
    #[wasm_bindgen(js_name = Object, typescript_type = "SnowflakeParts")]
    pub type SnowflakeParts;
    #[wasm_bindgen(constructor, js_class = "Object")]
    fn new() -> SnowflakeParts;
    #[wasm_bindgen(method, setter, js_name = timestampMs)]
    fn set_timestamp_ms(this: &SnowflakeParts, value: f64);
    #[wasm_bindgen(method, setter, js_name = workerId)]
    fn set_worker_id(this: &SnowflakeParts, value: f64);
    #[wasm_bindgen(method, setter)]
    fn set_sequence(this: &SnowflakeParts, value: f64);

    /// `{ timestampBits, workerBits, sequenceBits }`, as the `layout` getter returns it.
    #[wasm_bindgen(js_name = Object, typescript_type = "Required<SnowflakeLayoutBits>")]
    pub type LayoutBitsOut;
    #[wasm_bindgen(constructor, js_class = "Object")]
    fn new() -> LayoutBitsOut;
    #[wasm_bindgen(method, setter, js_name = timestampBits)]
    fn set_timestamp_bits(this: &LayoutBitsOut, value: u32);
    #[wasm_bindgen(method, setter, js_name = workerBits)]
    fn set_worker_bits(this: &LayoutBitsOut, value: u32);
    #[wasm_bindgen(method, setter, js_name = sequenceBits)]
    fn set_sequence_bits(this: &LayoutBitsOut, value: u32);
}

/// Each part fits a Number exactly: workers and sequences have at most 31 bits, and a
/// timestamp past 2^53 ms (the year 287396) is past what `Date` holds anyway.
fn parts_to_js(parts: Parts) -> SnowflakeParts {
    let out = SnowflakeParts::new();
    out.set_timestamp_ms(parts.timestamp_ms as f64);
    out.set_worker_id(parts.worker as f64);
    out.set_sequence(parts.sequence as f64);
    out
}

fn width(what: &str, value: JsValue, default: u32) -> Result<u32, JsValue> {
    match present(value) {
        None => Ok(default),
        Some(value) => match value.as_f64() {
            Some(number) if number <= 64.0 => Ok(exact_integer(what, number)? as u32),
            _ => Err(invalid_argument(&format!("layout.{what} must be an integer from 0 to 63"))),
        },
    }
}

/// A layout by name: `twitter`, or `discord` (Twitter's widths from Discord's epoch).
pub fn named_layout(name: &str) -> Option<SnowflakeLayout> {
    let twitter = SnowflakeLayout::TWITTER;
    let (timestamp_bits, worker_bits, sequence_bits) = twitter.bits();
    match name {
        "twitter" => Some(twitter),
        "discord" => SnowflakeLayout::new(DISCORD_EPOCH_MS, timestamp_bits, worker_bits, sequence_bits).ok(),
        _ => None,
    }
}

/// The layout that `epochMs` and `layout` (both optional) describe.
fn layout_from(epoch_ms: JsValue, layout: JsValue) -> Result<SnowflakeLayout, JsValue> {
    let twitter = SnowflakeLayout::TWITTER;
    let (default_timestamp, default_worker, default_sequence) = twitter.bits();
    let (mut epoch, bits) = match present(layout) {
        None => (twitter.epoch_ms(), twitter.bits()),
        Some(layout) => match layout.as_string() {
            Some(name) => match named_layout(&name) {
                Some(layout) => (layout.epoch_ms(), layout.bits()),
                None => {
                    return Err(invalid_argument(&format!(
                        "layout must be 'twitter', 'discord' or {{ timestampBits, workerBits, sequenceBits }}, got '{name}'"
                    )))
                }
            },
            None if layout.is_object() => {
                let bits: LayoutBits = layout.unchecked_into();
                let widths = (
                    width("timestampBits", bits.timestamp_bits(), default_timestamp)?,
                    width("workerBits", bits.worker_bits(), default_worker)?,
                    width("sequenceBits", bits.sequence_bits(), default_sequence)?,
                );
                (twitter.epoch_ms(), widths)
            }
            None => {
                return Err(invalid_argument(
                    "layout must be 'twitter', 'discord' or { timestampBits, workerBits, sequenceBits }",
                ))
            }
        },
    };
    if let Some(value) = present(epoch_ms) {
        epoch = u64_from_number_or_bigint("epochMs", &value)?;
    }
    SnowflakeLayout::new(epoch, bits.0, bits.1, bits.2).into_js()
}

/// The layout of `parseSnowflake`'s and `timestampOf`'s options (absent: Twitter's).
pub fn layout_of_options(options: &JsValue) -> Result<SnowflakeLayout, JsValue> {
    if options.is_undefined() || options.is_null() {
        return Ok(SnowflakeLayout::TWITTER);
    }
    if !options.is_object() {
        return Err(invalid_argument("the options must be an object: { epochMs?, layout? }"));
    }
    let options: &SnowflakeOptions = options.unchecked_ref();
    layout_from(options.epoch_ms(), options.layout())
}

/// A Snowflake generator for one worker id. IDs never repeat and never go backwards within
/// it; within one millisecond the sequence counts up, and when it is used up the generator
/// waits for the next millisecond.
#[wasm_bindgen]
pub struct Snowflake {
    generator: polylock_id::Snowflake,
}

#[wasm_bindgen]
impl Snowflake {
    #[wasm_bindgen(constructor)]
    pub fn new(options: SnowflakeOptions) -> Result<Snowflake, JsValue> {
        if !options.is_object() {
            return Err(invalid_argument("new Snowflake needs an options object: { workerId, epochMs?, layout? }"));
        }
        let worker = match present(options.worker_id()) {
            Some(value) => u64_from_number_or_bigint("workerId", &value)?,
            None => return Err(invalid_argument("new Snowflake needs a workerId")),
        };
        let layout = layout_from(options.epoch_ms(), options.layout())?;
        let generator = polylock_id::Snowflake::with_layout_and_clock(layout, worker, HostClock).into_js()?;
        Ok(Snowflake { generator })
    }

    /// The next ID.
    #[wasm_bindgen(js_name = nextId)]
    pub fn next_id(&self) -> Result<u64, JsValue> {
        self.generator.next_id().into_js()
    }

    /// The next ID as a decimal string (for JSON, which has no BigInt).
    #[wasm_bindgen(js_name = nextIdString)]
    pub fn next_id_string(&self) -> Result<String, JsValue> {
        self.generator.next_id().map(|id| id.to_string()).into_js()
    }

    /// `count` IDs in increasing order, in one call.
    #[wasm_bindgen(js_name = nextIds)]
    pub fn next_ids(&self, count: f64) -> Result<Vec<u64>, JsValue> {
        self.generator.next_ids(batch_size("nextIds", count, MAX_BATCH)?).into_js()
    }

    /// The parts of an ID of this generator's layout.
    pub fn parse(
        &self,
        #[wasm_bindgen(unchecked_param_type = "bigint | string")] id: JsValue,
    ) -> Result<SnowflakeParts, JsValue> {
        self.generator.parse(id_from_js(&id)?).map(parts_to_js).into_js()
    }

    /// The smallest ID of this layout at `timestampMs` (worker 0, sequence 0): IDs issued at
    /// or after that millisecond are `>=` it, earlier ones `<` it.
    #[wasm_bindgen(js_name = idFromTimestamp)]
    pub fn id_from_timestamp(&self, #[wasm_bindgen(js_name = timestampMs)] timestamp_ms: f64) -> Result<u64, JsValue> {
        let timestamp_ms = exact_integer("timestampMs", timestamp_ms)?;
        self.generator.layout().id_from_timestamp(timestamp_ms).into_js()
    }

    #[wasm_bindgen(getter, js_name = workerId)]
    pub fn worker_id(&self) -> f64 {
        self.generator.worker() as f64
    }

    #[wasm_bindgen(getter, js_name = epochMs)]
    pub fn epoch_ms(&self) -> f64 {
        self.generator.layout().epoch_ms() as f64
    }

    /// The widths of the three parts.
    #[wasm_bindgen(getter)]
    pub fn layout(&self) -> LayoutBitsOut {
        let (timestamp, worker, sequence) = self.generator.layout().bits();
        let out = LayoutBitsOut::new();
        out.set_timestamp_bits(timestamp);
        out.set_worker_bits(worker);
        out.set_sequence_bits(sequence);
        out
    }
}

/// The parts of a Snowflake ID: of Twitter's layout, or of the one `options` describe.
#[wasm_bindgen(js_name = parseSnowflake)]
pub fn parse_snowflake(
    #[wasm_bindgen(unchecked_param_type = "bigint | string")] id: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "SnowflakeLayoutOptions")] options: JsValue,
) -> Result<SnowflakeParts, JsValue> {
    let layout = layout_of_options(&options)?;
    layout.parse(id_from_js(&id)?).map(parts_to_js).into_js()
}
