//! The `Idempotency-Key` HTTP middleware's rules (`polylock::kit::http_idempotency`, issue 38)
//! for the gem's Rack middleware (`ruby/lib/polylock/rack/idempotency.rb`): the options
//! checked, the key read and checked, the request's fingerprint, the stored response's one
//! form, which statuses are stored and the 400/409/422 refusals. Translation only, so a record
//! written by any language's middleware replays from Rack's and back.

use std::sync::Arc;
use std::time::Duration;

use polylock::kit::http_idempotency as http;
use polylock::Error;

use crate::errors::Result;

/// The middleware's options, checked by the core.
#[derive(uniffi::Object)]
pub struct HttpIdempotencyOptions {
    options: http::Options,
}

#[uniffi::export]
impl HttpIdempotencyOptions {
    /// Options from what the user gave (nil: the default): the header that carries the key,
    /// how long a completed key replays its response (seconds), the methods. `InvalidArgument`
    /// naming the option that is wrong.
    #[uniffi::constructor]
    pub fn new(
        header: Option<String>,
        lifetime_seconds: Option<f64>,
        methods: Option<Vec<String>>,
    ) -> Result<Arc<HttpIdempotencyOptions>> {
        let lifetime = match lifetime_seconds {
            None => None,
            Some(seconds) => Some(Duration::try_from_secs_f64(seconds).map_err(|_| {
                Error::invalid_argument(format!(
                    "idempotency middleware option 'lifetime' must be a finite number of seconds > 0, got {seconds}"
                ))
            })?),
        };
        let options = http::Options::new(header.as_deref(), lifetime, methods.as_deref())?;
        Ok(Arc::new(HttpIdempotencyOptions { options }))
    }

    /// The header that carries the key, as given (matched without regard to case).
    pub fn header(&self) -> String {
        self.options.header.clone()
    }

    /// How long a completed key replays its response, in seconds.
    pub fn lifetime_seconds(&self) -> f64 {
        self.options.lifetime.as_secs_f64()
    }

    /// The methods the middleware applies to, upper case.
    pub fn methods(&self) -> Vec<String> {
        self.options.methods.clone()
    }

    /// Whether a request of `method` goes through the middleware.
    pub fn applies_to(&self, method: String) -> bool {
        self.options.applies_to(&method)
    }
}

/// One header of a response: the name (lower case when read back) and its value.
#[derive(uniffi::Record)]
pub struct HttpHeader {
    pub name: String,
    pub value: String,
}

/// A response as the middleware stores and replays it; a header name may repeat
/// (`set-cookie`).
#[derive(uniffi::Record)]
pub struct HttpResponse {
    pub status: u32,
    pub headers: Vec<HttpHeader>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    fn of(response: http::HttpResponse) -> HttpResponse {
        HttpResponse {
            status: u32::from(response.status),
            headers: response.headers.into_iter().map(|(name, value)| HttpHeader { name, value }).collect(),
            body: response.body,
        }
    }
}

/// The header a replayed response carries, with the value `true`.
#[uniffi::export]
pub fn http_replayed_header() -> String {
    http::REPLAYED_HEADER.to_string()
}

/// The key a header value carries: trimmed, without the quotes of the draft's string form.
#[uniffi::export]
pub fn http_key_of(header_value: String) -> String {
    http::key_of(&header_value).to_string()
}

/// nil if `key` can key a request, else why not (the 400's detail).
#[uniffi::export]
pub fn http_key_problem(key: String) -> Option<String> {
    http::key_problem(&key)
}

/// The default fingerprint of a request: its method, its path with the query, its body.
#[uniffi::export]
pub fn http_fingerprint(method: String, path: String, body: Vec<u8>) -> Vec<u8> {
    http::fingerprint(&method, &path, &body)
}

/// Whether a response of `status` is stored (a server error is not: a retry runs again).
#[uniffi::export]
pub fn http_stores(status: u32) -> bool {
    u16::try_from(status).is_ok_and(http::stores)
}

/// The stored form of `response` (the kit's, shared by every language's middleware), without
/// the per-connection headers. `InvalidArgument` for a status outside 100..=599.
#[uniffi::export]
pub fn http_encode_response(response: HttpResponse) -> Result<Vec<u8>> {
    let status = u16::try_from(response.status).map_err(|_| {
        Error::invalid_argument(format!("an HTTP status must be between 100 and 599, got {}", response.status))
    })?;
    let headers = response.headers.into_iter().map(|header| (header.name, header.value)).collect();
    Ok(http::encode_response(&http::HttpResponse { status, headers, body: response.body })?)
}

/// A stored response read back; `InvalidArgument` if the key's record holds something else.
#[uniffi::export]
pub fn http_decode_response(stored: Vec<u8>) -> Result<HttpResponse> {
    Ok(HttpResponse::of(http::decode_response(&stored)?))
}

/// The response for a request that is not run: `refusal` is "bad_key" (400), "in_progress"
/// (409, `Retry-After` from `retry_after_seconds`) or "mismatch" (422), a problem document
/// naming the key. `InvalidArgument` for another refusal or a negative `retry_after_seconds`.
#[uniffi::export]
pub fn http_refusal_response(refusal: String, key: String, retry_after_seconds: Option<f64>) -> Result<HttpResponse> {
    let refusal = match refusal.as_str() {
        "bad_key" => http::Refusal::BadKey,
        "mismatch" => http::Refusal::Mismatch,
        "in_progress" => {
            let seconds = retry_after_seconds.unwrap_or(0.0);
            let retry_after = Duration::try_from_secs_f64(seconds).map_err(|_| {
                Error::invalid_argument(format!("retry_after must be a finite number of seconds >= 0, got {seconds}"))
            })?;
            http::Refusal::InProgress { retry_after }
        }
        other => {
            return Err(Error::invalid_argument(format!(
                "a refusal is 'bad_key', 'in_progress' or 'mismatch', got '{}'",
                other.escape_debug()
            ))
            .into());
        }
    };
    Ok(HttpResponse::of(http::refusal_response(refusal, &key)))
}
