//! `LeasedSnowflake`: a Snowflake generator on a worker id leased from the backend (the
//! core's `LeasedSnowflake`: the id is a lock kept by the watchdog, with a high-water mark
//! beside it, so two generators of one store never issue the same ID). IDs are BigInts or
//! decimal strings, never Numbers.

use std::time::Duration;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::id::SnowflakeLayout;
use polylock::{LeasedSnowflake as CoreSnowflake, SnowflakeOptions as CoreOptions};

use crate::convert::{id_from_bigint_or_string, u64_from_number_or_bigint};
use crate::errors::{detailed, invalid_argument, Detailed, IntoNapiResult};
use crate::settle;
use crate::snowflake::SnowflakeParts;

/// The most IDs one `nextIds` call returns, so that a typo cannot ask for terabytes.
const MAX_BATCH: u32 = 1 << 24;

#[napi(object, object_to_js = false)]
pub struct SnowflakeLayoutOptions {
    /// The epoch in ms since 1970 (default: Twitter's, 1288834974657).
    pub epoch_ms: Option<f64>,
    /// Bits of milliseconds, of worker id and of sequence (default 41, 10, 12).
    pub timestamp_bits: Option<u32>,
    pub worker_bits: Option<u32>,
    pub sequence_bits: Option<u32>,
}

#[napi(object, object_to_js = false)]
pub struct LeasedSnowflakeOptions {
    /// Lease this worker id (rejects with `POLYLOCK_TIMEOUT` if another generator holds it);
    /// absent: the lowest free one.
    pub worker_id: Option<Either<f64, BigInt>>,
    /// The ID layout (default: Twitter's).
    pub layout: Option<SnowflakeLayoutOptions>,
    /// How long a new holder may wait for its clock to pass the previous holder's mark, in
    /// ms (default 2000).
    pub max_wait_ms: Option<f64>,
}

fn core_layout(layout: Option<SnowflakeLayoutOptions>) -> Result<SnowflakeLayout> {
    let Some(layout) = layout else { return Ok(SnowflakeLayout::TWITTER) };
    let twitter = SnowflakeLayout::TWITTER;
    let epoch = match layout.epoch_ms {
        None => twitter.epoch_ms(),
        Some(epoch) => u64_from_number_or_bigint("layout.epochMs", Either::A(epoch))?,
    };
    SnowflakeLayout::new(
        epoch,
        layout.timestamp_bits.unwrap_or(41),
        layout.worker_bits.unwrap_or(10),
        layout.sequence_bits.unwrap_or(12),
    )
    .into_napi()
}

/// The core's worker id and options from the JavaScript ones.
pub fn core_options(options: Option<LeasedSnowflakeOptions>) -> Result<(Option<u64>, CoreOptions)> {
    let options = options.unwrap_or(LeasedSnowflakeOptions { worker_id: None, layout: None, max_wait_ms: None });
    let worker = options.worker_id.map(|id| u64_from_number_or_bigint("workerId", id)).transpose()?;
    let defaults = CoreOptions::default();
    let max_wait = match options.max_wait_ms {
        None => defaults.max_wait,
        Some(ms) if ms.is_finite() && ms >= 0.0 => Duration::from_secs_f64(ms / 1000.0),
        Some(ms) => return Err(invalid_argument(format!("maxWaitMs must be a finite number of ms >= 0, got {ms}"))),
    };
    Ok((worker, CoreOptions { layout: core_layout(options.layout)?, max_wait, ..defaults }))
}

/// A Snowflake generator holding a leased worker id. `close()` it when done: the id is then
/// free for the next generator at once (otherwise at its lease end).
#[napi]
pub struct LeasedSnowflake {
    generator: CoreSnowflake,
}

impl LeasedSnowflake {
    pub fn new(generator: CoreSnowflake) -> Self {
        LeasedSnowflake { generator }
    }

    fn ids<'env, T, F>(&self, env: &'env Env, count: usize, shape: F) -> Result<PromiseRaw<'env, Detailed<T>>>
    where
        T: ToNapiValue + Send + 'static,
        F: FnOnce(Vec<u64>) -> T + Send + 'static,
    {
        let generator = self.generator.clone();
        settle::spawn(env, async move { detailed(generator.next_ids(count).await.map(shape)) })
    }
}

#[napi]
impl LeasedSnowflake {
    /// The next ID. Rejects with `POLYLOCK_LOST` when the lease ended (the next call leases
    /// another id, unless a `workerId` was asked for), `POLYLOCK_EXHAUSTED` (with
    /// `retryAfterMs`) when the clock cannot yet pass the previous holder's mark.
    #[napi(ts_return_type = "Promise<bigint>")]
    pub fn next_id<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Detailed<BigInt>>> {
        self.ids(env, 1, |ids| BigInt::from(ids[0]))
    }

    /// The next ID as a decimal string (for JSON, which has no BigInt).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn next_id_string<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Detailed<String>>> {
        self.ids(env, 1, |ids| ids[0].to_string())
    }

    /// `count` IDs in increasing order, all under one lease.
    #[napi(ts_return_type = "Promise<BigUint64Array>")]
    pub fn next_ids<'env>(&self, env: &'env Env, count: u32) -> Result<PromiseRaw<'env, Detailed<BigUint64Array>>> {
        if count > MAX_BATCH {
            return Err(invalid_argument(format!("nextIds takes at most {MAX_BATCH} at a time, got {count}")));
        }
        self.ids(env, count as usize, BigUint64Array::new)
    }

    /// The worker id held now; `null` between a lost lease and the next call.
    #[napi(ts_return_type = "Promise<number | null>")]
    pub fn worker_id<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Option<u32>>> {
        let generator = self.generator.clone();
        // A worker id fits the layout's at most 22 worker bits.
        settle::spawn(env, async move { Ok(generator.worker_id().await.map(|id| id as u32)) })
    }

    /// The epoch of the lease held now: greater than that of every earlier take of the id.
    #[napi(ts_return_type = "Promise<bigint | null>")]
    pub fn epoch<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Option<BigInt>>> {
        let generator = self.generator.clone();
        settle::spawn(env, async move { Ok(generator.epoch().await.map(BigInt::from)) })
    }

    /// The parts of an ID of this generator's layout.
    #[napi]
    pub fn parse(&self, id: Either<BigInt, String>) -> Result<SnowflakeParts> {
        self.generator.layout().parse(id_from_bigint_or_string(id)?).map(SnowflakeParts::from).into_napi()
    }

    #[napi(getter)]
    pub fn epoch_ms(&self) -> f64 {
        self.generator.layout().epoch_ms() as f64
    }

    /// Stop renewing, write the mark down to the last ID issued and give the id back.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Detailed<()>>> {
        let generator = self.generator.clone();
        settle::spawn(env, async move { detailed(generator.close().await) })
    }
}
