//! `Idempotency` and `Ticket`: idempotency keys of one namespace (the core's `Idempotency`).
//! `begin` claims a key; `index.js` builds `run(key, fingerprint, fn)` on it, as Python's
//! `run` is built on `begin`. Fingerprints and stored responses are encoded by the core's one
//! codec (`polylock::kit::idempotency_codec`), so a Node and a Python service sharing a
//! namespace agree on payloads and replay each other's responses.

use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::kit::idempotency_codec::{self as codec, StoredResponse};
use polylock::Begin;

use crate::errors::{detailed, invalid_argument, Detailed, IntoNapiResult};
use crate::settle;
use crate::values::bytes_of;

#[napi(object, object_to_js = false)]
pub struct IdempotencyOptions {
    /// How long a completed key replays its response, in ms (default 24 h).
    pub retention_ms: Option<f64>,
    /// How long an attempt may run without `extend()` before another takes the key over,
    /// in ms (default 60 s).
    pub in_progress_ttl_ms: Option<f64>,
}

fn duration_of(what: &str, ms: Option<f64>, default: Duration) -> Result<Duration> {
    match ms {
        None => Ok(default),
        Some(ms) if ms.is_finite() && ms > 0.0 => Ok(Duration::from_secs_f64(ms / 1000.0)),
        Some(ms) => Err(invalid_argument(format!("{what} must be a finite number of ms > 0, got {ms}"))),
    }
}

pub fn open(client: &polylock::Client, namespace: &str, options: Option<IdempotencyOptions>) -> Result<Idempotency> {
    let (retention, ttl) = options.map_or((None, None), |o| (o.retention_ms, o.in_progress_ttl_ms));
    let retention = duration_of("retentionMs", retention, polylock::Idempotency::DEFAULT_RETENTION)?;
    let ttl = duration_of("inProgressTtlMs", ttl, polylock::Idempotency::DEFAULT_IN_PROGRESS_TTL)?;
    let idempotency = client.idempotency_with(namespace, retention, ttl).into_napi()?;
    Ok(Idempotency { idempotency })
}

/// What `begin` found. `outcome` says which; the other fields are set for that outcome only.
#[napi(object, object_from_js = false)]
pub struct BeginResult {
    #[napi(ts_type = "'acquired' | 'replay' | 'inProgress' | 'mismatch'")]
    pub outcome: String,
    /// `acquired`: this caller does the work, then `ticket.complete(response)`.
    pub ticket: Option<Ticket>,
    /// `replay`: the stored response of the attempt that finished.
    pub response: Option<Buffer>,
    /// `inProgress`: another attempt may be taken over after this many ms (HTTP 409).
    pub retry_after_ms: Option<f64>,
}

impl BeginResult {
    fn of(begin: Begin) -> BeginResult {
        let empty = BeginResult { outcome: String::new(), ticket: None, response: None, retry_after_ms: None };
        match begin {
            Begin::Acquired(ticket) => {
                BeginResult { outcome: "acquired".into(), ticket: Some(Ticket { ticket: Arc::new(ticket) }), ..empty }
            }
            Begin::Replay(response) => {
                BeginResult { outcome: "replay".into(), response: Some(response.into()), ..empty }
            }
            Begin::InProgress { retry_after } => BeginResult {
                outcome: "inProgress".into(),
                retry_after_ms: Some(retry_after.as_secs_f64() * 1000.0),
                ..empty
            },
            Begin::Mismatch => BeginResult { outcome: "mismatch".into(), ..empty },
        }
    }
}

/// Idempotency keys of one namespace.
#[napi]
pub struct Idempotency {
    idempotency: polylock::Idempotency,
}

#[napi]
impl Idempotency {
    #[napi(getter)]
    pub fn namespace(&self) -> String {
        self.idempotency.namespace().to_string()
    }

    /// @internal `begin` as `index.js` calls it: the fingerprint as bytes, or (for any other
    /// payload) as the JSON text `index.js` made of it.
    #[napi(skip_typescript)]
    pub fn begin_native<'env>(
        &self,
        env: &'env Env,
        key: String,
        fingerprint: Option<Either<Buffer, String>>,
        fingerprint_json: Option<String>,
    ) -> Result<PromiseRaw<'env, Detailed<BeginResult>>> {
        let fingerprint = match fingerprint_json {
            Some(json) => codec::fingerprint_of_json(&json).into_napi()?,
            None => codec::fingerprint_of_bytes(&fingerprint.map(bytes_of).unwrap_or_default()),
        };
        let idempotency = self.idempotency.clone();
        settle::spawn(env, async move { detailed(idempotency.begin(&key, &fingerprint).await.map(BeginResult::of)) })
    }
}

/// One attempt's claim on a key: `complete` it with the response to replay, or `abandon` it
/// so that a retry runs again; `extend` it while the work runs longer than the in-progress TTL.
#[napi]
pub struct Ticket {
    ticket: Arc<polylock::Ticket>,
}

#[napi]
impl Ticket {
    #[napi(getter)]
    pub fn key(&self) -> String {
        self.ticket.key().to_string()
    }

    /// Grows with every attempt that takes the key: usable as a fencing token
    /// (`value.writeFenced(ticket.token, ...)`).
    #[napi(getter)]
    pub fn token(&self) -> BigInt {
        BigInt::from(self.ticket.token())
    }

    /// Store `response` (bytes, as they are) for later `begin`s to replay. Rejects with
    /// `POLYLOCK_LOST` if another attempt took the key over (its result stands).
    #[napi(ts_args_type = "response: Buffer | Uint8Array | string", ts_return_type = "Promise<void>")]
    pub fn complete<'env>(
        &self,
        env: &'env Env,
        response: Either<Buffer, String>,
    ) -> Result<PromiseRaw<'env, Detailed<()>>> {
        let (ticket, response) = (self.ticket.clone(), bytes_of(response));
        settle::spawn(env, async move { detailed(ticket.complete(&response).await) })
    }

    /// @internal `complete` with a response in `run`'s stored form (the core's codec): bytes
    /// as they are, or JSON text.
    #[napi(skip_typescript)]
    pub fn complete_run<'env>(
        &self,
        env: &'env Env,
        response: Either<Buffer, String>,
    ) -> Result<PromiseRaw<'env, Detailed<()>>> {
        let stored = codec::encode_response(&match response {
            Either::A(bytes) => StoredResponse::Bytes(bytes.to_vec()),
            Either::B(json) => StoredResponse::Json(json),
        });
        let ticket = self.ticket.clone();
        settle::spawn(env, async move { detailed(ticket.complete(&stored).await) })
    }

    /// Give the key up (the work failed): the next `begin` runs again. Rejects with
    /// `POLYLOCK_LOST` if another attempt took the key over.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn abandon<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Detailed<()>>> {
        let ticket = self.ticket.clone();
        settle::spawn(env, async move { detailed(ticket.abandon().await) })
    }

    /// Keep the key for another in-progress TTL from now. Rejects with `POLYLOCK_LOST` if
    /// another attempt took it over.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn extend<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Detailed<()>>> {
        let ticket = self.ticket.clone();
        settle::spawn(env, async move { detailed(ticket.extend().await) })
    }
}

/// @internal A response `run` stored, read back by the core's codec: `{ bytes }` or
/// `{ json }` (text `index.js` parses). `POLYLOCK_INVALID_ARGUMENT` for a response stored
/// through a ticket's plain `complete`.
#[napi(object, object_from_js = false)]
pub struct StoredRunResponse {
    pub bytes: Option<Buffer>,
    pub json: Option<String>,
}

#[napi(skip_typescript)]
pub fn decode_run_response(stored: Buffer) -> Result<StoredRunResponse> {
    Ok(match codec::decode_response(&stored).into_napi()? {
        StoredResponse::Bytes(bytes) => StoredRunResponse { bytes: Some(bytes.into()), json: None },
        StoredResponse::Json(json) => StoredRunResponse { bytes: None, json: Some(json) },
    })
}

/// @internal Throws the error the core's `run` ends with when it cannot run or replay: with
/// `retryAfterMs`, `POLYLOCK_IN_PROGRESS` carrying it; without, `POLYLOCK_MISMATCH`.
#[napi(skip_typescript)]
pub fn throw_run_error(env: &Env, key: String, retry_after_ms: Option<f64>) -> Result<()> {
    // The words of the core's own `run` (primitives/idempotency.rs), whose error builders
    // are not exported.
    let err = match retry_after_ms {
        Some(ms) if ms.is_finite() && ms >= 0.0 => {
            let after = Duration::from_secs_f64(ms / 1000.0);
            polylock::Error::in_progress(format!(
                "idempotency key '{key}' is being worked on by another attempt; retry after {}ms",
                after.as_millis()
            ))
            .with_details(polylock::ErrorDetails::RetryAfter { after })
        }
        _ => polylock::Error::mismatch(format!(
            "idempotency key '{key}' was used before with another payload (a different fingerprint)"
        )),
    };
    Err(unsafe { crate::errors::error_with_details(env.raw(), err) })
}
