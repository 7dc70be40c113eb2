//! The `Idempotency-Key` HTTP middleware's rules (`polylock::kit::http_idempotency`, issue 38)
//! for `express.js` and `fastify.js`: the options checked, the key read and checked, the
//! request's fingerprint, the stored response's one form and the 400/409/422 refusals. The
//! two middlewares only adapt their framework's request and response to these and to
//! `Idempotency.begin` / `Ticket.complete` / `Ticket.abandon`, so a record written by any
//! language's middleware replays from theirs.

use std::time::Duration;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::kit::http_idempotency as http;

use crate::errors::{invalid_argument, IntoNapiResult};
use crate::values::bytes_of;

/// The header a replayed response carries, with the value `true`.
// Read from JavaScript only; the unit-test build of this crate registers no exports.
#[cfg_attr(test, allow(dead_code))]
#[napi]
pub const HTTP_REPLAYED_HEADER: &str = http::REPLAYED_HEADER;

#[napi(object, object_to_js = false)]
pub struct HttpIdempotencyRulesOptions {
    /// The request header that carries the key (default `Idempotency-Key`).
    pub header: Option<String>,
    /// How long a completed key replays its response, in ms (default 24 h).
    pub lifetime_ms: Option<f64>,
    /// The methods the middleware applies to (default `['POST', 'PATCH']`).
    pub methods: Option<Vec<String>>,
}

/// The middleware's options, checked by the core: which requests it applies to and how long
/// their responses replay.
#[napi]
pub struct HttpIdempotencyRules {
    options: http::Options,
}

#[napi]
impl HttpIdempotencyRules {
    /// Throws `POLYLOCK_INVALID_ARGUMENT` naming the option that is wrong.
    #[napi(constructor)]
    pub fn new(options: Option<HttpIdempotencyRulesOptions>) -> Result<HttpIdempotencyRules> {
        let (header, lifetime_ms, methods) = match options {
            Some(o) => (o.header, o.lifetime_ms, o.methods),
            None => (None, None, None),
        };
        let lifetime = match lifetime_ms {
            None => None,
            Some(ms) if ms.is_finite() && ms >= 0.0 => Some(
                Duration::try_from_secs_f64(ms / 1000.0)
                    .map_err(|_| invalid_argument(format!("lifetimeMs is out of range: {ms}")))?,
            ),
            Some(ms) => {
                return Err(invalid_argument(format!("lifetimeMs must be a finite number of ms > 0, got {ms}")));
            }
        };
        let options = http::Options::new(header.as_deref(), lifetime, methods.as_deref()).into_napi()?;
        Ok(HttpIdempotencyRules { options })
    }

    /// The header that carries the key, as given.
    #[napi(getter)]
    pub fn header(&self) -> String {
        self.options.header.clone()
    }

    /// How long a completed key replays its response, in ms.
    #[napi(getter)]
    pub fn lifetime_ms(&self) -> f64 {
        self.options.lifetime.as_secs_f64() * 1000.0
    }

    /// The methods, upper case.
    #[napi(getter)]
    pub fn methods(&self) -> Vec<String> {
        self.options.methods.clone()
    }

    /// Whether a request of `method` goes through the middleware.
    #[napi]
    pub fn applies_to(&self, method: String) -> bool {
        self.options.applies_to(&method)
    }
}

/// The key a header value carries: trimmed, without the quotes of the draft's string form.
#[napi]
pub fn http_idempotency_key_of(header_value: String) -> String {
    http::key_of(&header_value).to_string()
}

/// `null` if `key` can key a request, else why not (for a 400).
#[napi]
pub fn http_idempotency_key_problem(key: String) -> Option<String> {
    http::key_problem(&key)
}

/// The default fingerprint of a request: its method, its path with the query, its body.
#[napi(ts_args_type = "method: string, path: string, body: Buffer | Uint8Array | string")]
pub fn http_idempotency_fingerprint(method: String, path: String, body: Either<Buffer, String>) -> Buffer {
    http::fingerprint(&method, &path, &bytes_of(body)).into()
}

/// Whether a response of `status` is stored (a server error is not: a retry runs again).
#[napi]
pub fn http_idempotency_stores(status: u32) -> bool {
    u16::try_from(status).is_ok_and(http::stores)
}

/// A response as the middleware stores and replays it. Header names are lower case; a
/// name may repeat (`set-cookie`).
#[napi(object)]
pub struct HttpResponse {
    pub status: u32,
    #[napi(ts_type = "Array<[string, string]>")]
    pub headers: Vec<Vec<String>>,
    pub body: Buffer,
}

impl HttpResponse {
    fn of(response: http::HttpResponse) -> HttpResponse {
        HttpResponse {
            status: u32::from(response.status),
            headers: response.headers.into_iter().map(|(name, value)| vec![name, value]).collect(),
            body: response.body.into(),
        }
    }
}

/// The stored form of `response` (the kit's, shared by every language's middleware),
/// without the per-connection headers. `POLYLOCK_INVALID_ARGUMENT` for a status outside
/// 100..=599 or a header that is not a `[name, value]` pair.
#[napi]
pub fn encode_http_response(response: HttpResponse) -> Result<Buffer> {
    let status = u16::try_from(response.status).map_err(|_| {
        invalid_argument(format!("an HTTP status must be between 100 and 599, got {}", response.status))
    })?;
    let mut headers = Vec::with_capacity(response.headers.len());
    for pair in response.headers {
        let [name, value]: [String; 2] =
            pair.try_into().map_err(|_| invalid_argument("each header must be a [name, value] pair"))?;
        headers.push((name, value));
    }
    let response = http::HttpResponse { status, headers, body: response.body.to_vec() };
    Ok(http::encode_response(&response).into_napi()?.into())
}

/// A stored response read back; `POLYLOCK_INVALID_ARGUMENT` if the key's record holds
/// something else.
#[napi]
pub fn decode_http_response(stored: Buffer) -> Result<HttpResponse> {
    Ok(HttpResponse::of(http::decode_response(&stored).into_napi()?))
}

/// The response for a request that is not run: `'badKey'` (400), `'inProgress'` (409, with
/// `Retry-After` from `retryAfterMs`) or `'mismatch'` (422), as a problem document naming
/// the key.
#[napi(
    ts_args_type = "refusal: 'badKey' | 'inProgress' | 'mismatch', key: string, retryAfterMs?: number | undefined | null"
)]
pub fn http_refusal_response(refusal: String, key: String, retry_after_ms: Option<f64>) -> Result<HttpResponse> {
    let refusal = match refusal.as_str() {
        "badKey" => http::Refusal::BadKey,
        "mismatch" => http::Refusal::Mismatch,
        "inProgress" => {
            let ms = retry_after_ms.unwrap_or(0.0);
            let retry_after = if ms.is_finite() && ms > 0.0 {
                Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::MAX)
            } else {
                Duration::ZERO
            };
            http::Refusal::InProgress { retry_after }
        }
        other => {
            return Err(invalid_argument(format!(
                "a refusal is 'badKey', 'inProgress' or 'mismatch', got '{}'",
                other.escape_debug()
            )));
        }
    };
    Ok(HttpResponse::of(http::refusal_response(refusal, &key)))
}
