//! `Segment`: Leaf-style segment IDs of one tag, from ranges the core reserves in the store.
//! IDs are BigInts (or decimal strings), never Numbers. IDs already loaded are handed out on
//! the JavaScript thread without a hop to the runtime; only a wait for a range goes there.

use std::time::Duration;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::{SegmentGenerator, SegmentOptions as CoreOptions};

use crate::errors::{detailed, invalid_argument, Detailed, IntoNapiResult};
use crate::settle;

/// The most IDs one `nextIds` call returns, so that a typo cannot ask for terabytes.
const MAX_BATCH: u32 = 1 << 24;

#[napi(object, object_to_js = false)]
pub struct SegmentOptions {
    /// The first and smallest range reserved at a time (Leaf's `step`; default 1000).
    pub step: Option<u32>,
    /// The largest range the adaptive step may grow to (default: Leaf's 1,000,000, or
    /// `step` if larger).
    pub max_step: Option<u32>,
    /// Load the next range once this share of the current one is used (default 0.1).
    pub load_at: Option<f64>,
    /// How long a call waits for a range being loaded before `POLYLOCK_EXHAUSTED`, in ms
    /// (default 5000).
    pub wait_ms: Option<f64>,
}

pub fn core_options(options: Option<SegmentOptions>) -> Result<CoreOptions> {
    let defaults = CoreOptions::default();
    let Some(options) = options else { return Ok(defaults) };
    let step = options.step.map_or(defaults.step, u64::from);
    let wait = match options.wait_ms {
        None => defaults.wait,
        Some(ms) if ms.is_finite() && ms >= 0.0 => Duration::from_secs_f64(ms / 1000.0),
        Some(ms) => return Err(invalid_argument(format!("waitMs must be a finite number of ms >= 0, got {ms}"))),
    };
    Ok(CoreOptions {
        step,
        max_step: options.max_step.map_or(defaults.max_step.max(step), u64::from),
        load_at: options.load_at.unwrap_or(defaults.load_at),
        wait,
    })
}

fn batch_size(count: u32) -> Result<usize> {
    if count > MAX_BATCH {
        return Err(invalid_argument(format!("nextIds takes at most {MAX_BATCH} at a time, got {count}")));
    }
    Ok(count as usize)
}

/// IDs of one tag: never 0, never handed out twice by any process using the same store.
/// A crash or a dropped generator leaves gaps.
#[napi]
pub struct Segment {
    generator: SegmentGenerator,
}

impl Segment {
    pub fn new(generator: SegmentGenerator) -> Segment {
        Segment { generator }
    }

    /// `count` IDs: those loaded now, then the rest waited for on the runtime.
    fn ids<'env, T, F>(&self, env: &'env Env, count: usize, shape: F) -> Result<PromiseRaw<'env, Detailed<T>>>
    where
        T: ToNapiValue + Send + 'static,
        F: FnOnce(Vec<u64>) -> T + Send + 'static,
    {
        let mut ids = self.generator.take_ready(count);
        if ids.len() == count {
            return settle::spawn_here(env, async move { Ok(Detailed::Done(shape(ids))) });
        }
        let generator = self.generator.clone();
        let rest = count - ids.len();
        settle::spawn(env, async move {
            detailed(generator.next_ids(rest).await.map(|more| {
                ids.extend(more);
                shape(ids)
            }))
        })
    }
}

#[napi]
impl Segment {
    /// The next ID, as a BigInt. Rejects with `POLYLOCK_EXHAUSTED` (with `retryAfterMs`) when
    /// no range could be loaded within the wait.
    #[napi(ts_return_type = "Promise<bigint>")]
    pub fn next_id<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Detailed<BigInt>>> {
        self.ids(env, 1, |ids| BigInt::from(ids[0]))
    }

    /// The next ID as a decimal string (for JSON, which has no BigInt).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn next_id_string<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Detailed<String>>> {
        self.ids(env, 1, |ids| ids[0].to_string())
    }

    /// `count` IDs in one call (increasing within each reserved range).
    #[napi(ts_return_type = "Promise<BigUint64Array>")]
    pub fn next_ids<'env>(&self, env: &'env Env, count: u32) -> Result<PromiseRaw<'env, Detailed<BigUint64Array>>> {
        self.ids(env, batch_size(count)?, BigUint64Array::new)
    }

    /// `count` IDs as decimal strings.
    #[napi(ts_return_type = "Promise<string[]>")]
    pub fn next_id_strings<'env>(&self, env: &'env Env, count: u32) -> Result<PromiseRaw<'env, Detailed<Vec<String>>>> {
        self.ids(env, batch_size(count)?, |ids| ids.iter().map(u64::to_string).collect())
    }

    /// The tag (Leaf's `biz_tag`).
    #[napi(getter)]
    pub fn tag(&self) -> String {
        self.generator.tag().to_string()
    }

    /// The size of the range asked for last (adapted to how fast ranges are used).
    #[napi(getter)]
    pub fn step(&self) -> f64 {
        self.generator.step() as f64
    }
}

/// `Unsupported` etc. from making a generator.
pub fn open(client: &polylock::Client, tag: &str, options: Option<SegmentOptions>) -> Result<Segment> {
    Ok(Segment::new(client.segments(tag, core_options(options)?).into_napi()?))
}
