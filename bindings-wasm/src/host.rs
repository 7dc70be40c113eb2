//! The host's clock and randomness: `Date.now()` and `crypto.getRandomValues`, the only two
//! things the ID generators need from outside. There is no `SystemTime` on
//! `wasm32-unknown-unknown` (it panics) and no fixed seed anywhere.

use std::sync::Mutex;

use polylock_id::{Clock, IdError, IdErrorKind, Random};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// Wall-clock milliseconds since 1970. Not `performance.timeOrigin + performance.now()`:
    /// that sum drifts away from the wall clock while a machine sleeps, and IDs must carry
    /// the time the server sees. The generators keep their own order when it steps back.
    #[wasm_bindgen(js_namespace = Date, js_name = now)]
    fn date_now() -> f64;

    /// Web Crypto's CSPRNG (browsers, Deno, workers, Node >= 19 as `globalThis.crypto`).
    #[wasm_bindgen(catch, js_namespace = crypto, js_name = getRandomValues)]
    fn get_random_values(bytes: &mut [u8]) -> Result<JsValue, JsValue>;
}

/// `Date.now()` as a [`Clock`]. A clock before 1970 (or not a number) reads as 0, which
/// every generator refuses as before its epoch.
#[derive(Debug, Default, Clone, Copy)]
pub struct HostClock;

impl Clock for HostClock {
    fn now_ms(&self) -> u64 {
        let now = date_now();
        if now.is_finite() && now > 0.0 {
            now as u64
        } else {
            0
        }
    }
}

/// The most bytes `crypto.getRandomValues` hands out per call (the Web Crypto limit), read
/// ahead into one pool: one host call per 4096 bytes instead of one per ID, as the `uuid`
/// package does. The bytes are the CSPRNG's own, each used once.
const POOL_BYTES: usize = 4096;

struct Pool {
    bytes: [u8; POOL_BYTES],
    used: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool { bytes: [0; POOL_BYTES], used: POOL_BYTES });

/// `crypto.getRandomValues` as a [`Random`] source.
#[derive(Debug, Default, Clone, Copy)]
pub struct HostRandom;

impl Random for HostRandom {
    fn fill(&self, out: &mut [u8]) -> polylock_id::Result<()> {
        if out.len() > POOL_BYTES {
            return fill_from_host(out);
        }
        let mut pool = POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if pool.used + out.len() > POOL_BYTES {
            fill_from_host(&mut pool.bytes)?;
            pool.used = 0;
        }
        let start = pool.used;
        out.copy_from_slice(&pool.bytes[start..start + out.len()]);
        pool.used += out.len();
        Ok(())
    }
}

fn fill_from_host(bytes: &mut [u8]) -> polylock_id::Result<()> {
    get_random_values(bytes).map(|_| ()).map_err(|_| {
        IdError::new(
            IdErrorKind::Randomness,
            "crypto.getRandomValues is not available or failed; UUIDv7 and ULID need the host's CSPRNG",
        )
    })
}
