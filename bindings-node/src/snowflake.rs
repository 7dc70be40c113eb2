//! Snowflake IDs as BigInts (or decimal strings): never through a JavaScript Number.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::id::{SnowflakeLayout, SnowflakeParts as CoreParts};

use crate::convert::{id_from_bigint_or_string, u64_from_number_or_bigint};
use crate::errors::{invalid_argument, IntoNapiResult};

/// Twitter's widths: 41 bits of milliseconds, 10 of worker, 12 of sequence.
const TIMESTAMP_BITS: u32 = 41;
const WORKER_BITS: u32 = 10;
const SEQUENCE_BITS: u32 = 12;

/// The most IDs one `nextIds` call returns, so that a typo cannot ask for terabytes.
const MAX_BATCH: u32 = 1 << 24;

#[napi(object, object_to_js = false)]
pub struct SnowflakeOptions {
    /// This generator's worker id, 0..=1023; no two live generators may share one.
    pub worker_id: Either<f64, BigInt>,
    /// The epoch in ms since 1970 (default: Twitter's, 1288834974657).
    pub epoch_ms: Option<f64>,
}

#[napi(object, object_from_js = false)]
pub struct SnowflakeParts {
    /// Milliseconds since the Unix epoch.
    pub timestamp_ms: f64,
    pub worker: u32,
    pub sequence: u32,
}

impl From<CoreParts> for SnowflakeParts {
    fn from(parts: CoreParts) -> Self {
        // Each part fits: at most 41 + epoch bits of ms (< 2^53), 10 bits, 12 bits.
        SnowflakeParts {
            timestamp_ms: parts.timestamp_ms as f64,
            worker: parts.worker as u32,
            sequence: parts.sequence as u32,
        }
    }
}

fn layout(epoch_ms: Option<f64>) -> Result<SnowflakeLayout> {
    match epoch_ms {
        None => Ok(SnowflakeLayout::TWITTER),
        Some(epoch) => {
            let epoch = u64_from_number_or_bigint("epochMs", Either::A(epoch))?;
            SnowflakeLayout::new(epoch, TIMESTAMP_BITS, WORKER_BITS, SEQUENCE_BITS).into_napi()
        }
    }
}

/// A snowflake generator for one worker id you assign. IDs never repeat and never go backwards within
/// it, even if the wall clock does.
#[napi]
pub struct Snowflake {
    generator: polylock::id::Snowflake,
}

#[napi]
impl Snowflake {
    /// A generator on a worker id you assign (no backend). Two live generators must never
    /// share one; `client.snowflake()` leases one from the backend instead.
    #[napi(constructor)]
    pub fn new(options: SnowflakeOptions) -> Result<Snowflake> {
        let worker = u64_from_number_or_bigint("workerId", options.worker_id)?;
        let generator = polylock::id::Snowflake::with_layout(layout(options.epoch_ms)?, worker).into_napi()?;
        Ok(Snowflake { generator })
    }

    #[napi]
    pub fn next_id(&self) -> Result<BigInt> {
        self.generator.next_id().map(BigInt::from).into_napi()
    }

    /// The next ID as a decimal string (for JSON, which has no BigInt).
    #[napi]
    pub fn next_id_string(&self) -> Result<String> {
        self.generator.next_id().map(|id| id.to_string()).into_napi()
    }

    /// `count` IDs in increasing order, in one call.
    #[napi]
    pub fn next_ids(&self, count: u32) -> Result<BigUint64Array> {
        if count > MAX_BATCH {
            return Err(invalid_argument(format!("nextIds takes at most {MAX_BATCH} at a time, got {count}")));
        }
        self.generator.next_ids(count as usize).map(BigUint64Array::new).into_napi()
    }

    /// The parts of an ID of this generator's layout.
    #[napi]
    pub fn parse(&self, id: Either<BigInt, String>) -> Result<SnowflakeParts> {
        self.generator.parse(id_from_bigint_or_string(id)?).map(SnowflakeParts::from).into_napi()
    }

    #[napi(getter)]
    pub fn worker_id(&self) -> u32 {
        self.generator.worker() as u32
    }

    #[napi(getter)]
    pub fn epoch_ms(&self) -> f64 {
        self.generator.layout().epoch_ms() as f64
    }
}

/// The parts of a Twitter-layout ID (or of the layout with epoch `epochMs`).
#[napi]
pub fn parse_snowflake(id: Either<BigInt, String>, epoch_ms: Option<f64>) -> Result<SnowflakeParts> {
    layout(epoch_ms)?.parse(id_from_bigint_or_string(id)?).map(SnowflakeParts::from).into_napi()
}
