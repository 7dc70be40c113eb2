//! The rules of the `Idempotency-Key` HTTP middleware, once for every language (issue 38),
//! after the IETF HTTPAPI draft "The Idempotency-Key HTTP Header Field": the first request
//! with a key runs and its response (status, headers, body) is stored; a repeat with the same
//! key and the same request fingerprint gets the stored response; a repeat with another
//! fingerprint gets 422; one that arrives while the first is under way gets 409 with a
//! `Retry-After`; a key that is no key gets 400. Each middleware (ASGI, Django, Express,
//! Fastify, net/http, Rack) only adapts its framework's request and response to these
//! functions and to the idempotency primitive's `begin`/`complete`/`abandon`, so a record
//! written by one language's middleware replays from another's.
//!
//! A stored response is the idempotency codec's JSON form (`j` + JSON text):
//! `{"status":201,"headers":[["content-type","application/json"]],"body":"<base64>"}`.
//! Headers that describe one connection or one transfer (`connection`, `transfer-encoding`,
//! `content-length`, `date`, ...) are not stored: the replaying server writes its own.
//! A server error (5xx) is not stored: the attempt is abandoned so that a retry runs again.

use std::time::Duration;

use sha2::{Digest, Sha256};

use super::idempotency_codec::{decode_response as decode_stored, encode_response as encode_stored, StoredResponse};
use crate::{Error, ErrorKind, Result};

/// The request header that carries the key, by default.
pub const DEFAULT_HEADER: &str = "Idempotency-Key";
/// The methods the middleware applies to by default (the draft's non-idempotent ones).
pub const DEFAULT_METHODS: [&str; 2] = ["POST", "PATCH"];
/// How long a completed key replays its response by default (as Stripe keeps keys).
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// The header a replayed response carries, `true` (as Stripe's API answers).
pub const REPLAYED_HEADER: &str = "Idempotent-Replayed";
/// The longest key accepted, in bytes (the draft suggests UUIDs; 255 leaves room for any).
pub const MAX_KEY_LEN: usize = 255;

/// Headers never stored: hop-by-hop (RFC 9110 section 7.6.1) and those the replaying
/// server computes itself.
const NOT_STORED: [&str; 11] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "content-length",
    "date",
    "server",
    "idempotent-replayed",
];

/// A middleware's options, checked: the same three in every language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The header that carries the key (matched without regard to case).
    pub header: String,
    /// How long a completed key replays its response.
    pub lifetime: Duration,
    /// The methods the middleware applies to, upper case.
    pub methods: Vec<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            header: DEFAULT_HEADER.to_string(),
            lifetime: DEFAULT_LIFETIME,
            methods: DEFAULT_METHODS.iter().map(|m| m.to_string()).collect(),
        }
    }
}

impl Options {
    /// Options from what the user gave (`None`: the default); `InvalidArgument` naming the
    /// option for a header that is no header name, a lifetime out of range, or an empty or
    /// malformed method list.
    pub fn new(header: Option<&str>, lifetime: Option<Duration>, methods: Option<&[String]>) -> Result<Options> {
        let mut options = Options::default();
        if let Some(header) = header {
            if header.is_empty() || !header.bytes().all(is_token_byte) {
                return Err(invalid(format!(
                    "idempotency middleware option 'header': '{}' is not a header name (letters, digits and !#$%&'*+-.^_`|~)",
                    header.escape_debug()
                )));
            }
            options.header = header.to_string();
        }
        if let Some(lifetime) = lifetime {
            crate::duration::check_lease("idempotency middleware option 'lifetime'", lifetime)?;
            options.lifetime = lifetime;
        }
        if let Some(methods) = methods {
            if methods.is_empty() {
                return Err(invalid("idempotency middleware option 'methods' must name at least one method"));
            }
            let mut upper = Vec::with_capacity(methods.len());
            for method in methods {
                if method.is_empty() || !method.bytes().all(is_token_byte) {
                    return Err(invalid(format!(
                        "idempotency middleware option 'methods': '{}' is not an HTTP method",
                        method.escape_debug()
                    )));
                }
                upper.push(method.to_ascii_uppercase());
            }
            options.methods = upper;
        }
        Ok(options)
    }

    /// Whether a request of `method` goes through the middleware.
    pub fn applies_to(&self, method: &str) -> bool {
        self.methods.iter().any(|m| m.eq_ignore_ascii_case(method))
    }
}

/// A `tchar` of RFC 9110: what header names and methods are made of.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

/// `None` if `key` (the header's value, trimmed) can key a request; else why not, for a 400.
/// A key is 1 to [`MAX_KEY_LEN`] visible ASCII characters; the draft's quoted form
/// (`"8e03978e-..."`) is read without its quotes by [`key_of`].
pub fn key_problem(key: &str) -> Option<String> {
    if key.is_empty() {
        return Some("the idempotency key is empty".to_string());
    }
    if key.len() > MAX_KEY_LEN {
        return Some(format!("the idempotency key is {} bytes long; the limit is {MAX_KEY_LEN}", key.len()));
    }
    if !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Some("the idempotency key must be visible ASCII characters (a UUID, for example)".to_string());
    }
    None
}

/// The key a header value carries: trimmed, and without the quotes of the draft's
/// structured-field string (`"abc"` is the key `abc`).
pub fn key_of(header_value: &str) -> &str {
    let value = header_value.trim();
    value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(value)
}

/// The fingerprint of a request, the default one: its method (upper case), its path with
/// the query, and its body, hashed (`sha256:` and the digest, as the codec writes hashed
/// fingerprints). Each part is length-prefixed so that no two requests share a form.
pub fn fingerprint(method: &str, path: &str, body: &[u8]) -> Vec<u8> {
    let mut hasher = Sha256::new();
    for part in [method.to_ascii_uppercase().as_bytes(), path.as_bytes(), body] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    let mut out = b"sha256:".to_vec();
    out.extend_from_slice(&hasher.finalize());
    out
}

/// A response as the middleware stores and replays it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    /// Names lower case, in the order given; a name may repeat (`set-cookie`).
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Whether a response of `status` is stored: everything but a server error, which is
/// abandoned so that the client's retry runs again.
pub fn stores(status: u16) -> bool {
    !(500..=599).contains(&status)
}

/// The stored form of a response (the codec's tagged JSON), without the headers that are
/// not stored. `InvalidArgument` for a status outside 100..=599.
pub fn encode_response(response: &HttpResponse) -> Result<Vec<u8>> {
    if !(100..=599).contains(&response.status) {
        return Err(invalid(format!("an HTTP status must be between 100 and 599, got {}", response.status)));
    }
    let headers: Vec<serde_json::Value> = response
        .headers
        .iter()
        .filter(|(name, _)| !NOT_STORED.contains(&name.to_ascii_lowercase().as_str()))
        .map(|(name, value)| serde_json::json!([name.to_ascii_lowercase(), value]))
        .collect();
    let json = serde_json::json!({
        "status": response.status,
        "headers": headers,
        "body": base64_encode(&response.body),
    });
    Ok(encode_stored(&StoredResponse::Json(json.to_string())))
}

/// A stored response read back; `InvalidArgument` if the key's record holds something else
/// (a `run` of the same namespace stored another kind of response under this key).
pub fn decode_response(stored: &[u8]) -> Result<HttpResponse> {
    let not_http =
        || invalid("this idempotency key's stored response is not an HTTP response stored by the middleware");
    let StoredResponse::Json(text) = decode_stored(stored)? else { return Err(not_http()) };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|_| not_http())?;
    let status = value["status"].as_u64().and_then(|s| u16::try_from(s).ok()).ok_or_else(not_http)?;
    let mut headers = Vec::new();
    for pair in value["headers"].as_array().ok_or_else(not_http)? {
        match pair.as_array().map(Vec::as_slice) {
            Some([name, value]) => match (name.as_str(), value.as_str()) {
                (Some(name), Some(value)) => headers.push((name.to_string(), value.to_string())),
                _ => return Err(not_http()),
            },
            _ => return Err(not_http()),
        }
    }
    let body = value["body"].as_str().and_then(base64_decode).ok_or_else(not_http)?;
    Ok(HttpResponse { status, headers, body })
}

/// Why a request was not run: the response to give instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The key is malformed (400).
    BadKey,
    /// Another request with this key is under way (409, with `Retry-After`).
    InProgress { retry_after: Duration },
    /// The key was used with another request (422).
    Mismatch,
}

/// The response for a refusal: an RFC 9457 problem document (`application/problem+json`)
/// naming the key; 409 carries `Retry-After` in whole seconds, at least 1.
pub fn refusal_response(refusal: Refusal, key: &str) -> HttpResponse {
    let (status, title, detail) = match refusal {
        Refusal::BadKey => (
            400,
            "Bad idempotency key",
            key_problem(key).unwrap_or_else(|| "the idempotency key is malformed".to_string()),
        ),
        Refusal::InProgress { .. } => (
            409,
            "Request in progress",
            format!("a request with idempotency key '{key}' is being processed; retry later"),
        ),
        Refusal::Mismatch => (
            422,
            "Idempotency key reused",
            format!("idempotency key '{key}' was used with a different request (method, path or body)"),
        ),
    };
    let mut headers = vec![("content-type".to_string(), "application/problem+json".to_string())];
    if let Refusal::InProgress { retry_after } = refusal {
        let seconds = retry_after.as_millis().div_ceil(1000).max(1);
        headers.push(("retry-after".to_string(), seconds.to_string()));
    }
    let body = serde_json::json!({ "type": "about:blank", "title": title, "status": status, "detail": detail });
    HttpResponse { status, headers, body: body.to_string().into_bytes() }
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (RFC 4648 section 4).
fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The bytes of padded standard base64; `None` if it is not that.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.as_bytes();
    if text.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    for (index, quad) in text.chunks(4).enumerate() {
        let last = index == text.len() / 4 - 1;
        let pad = quad.iter().rev().take_while(|b| **b == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for (i, b) in quad[..4 - pad].iter().enumerate() {
            let value = BASE64.iter().position(|c| c == b)? as u32;
            n |= value << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..4 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_and_matches_rfc_4648() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64_encode(plain.as_bytes()), encoded);
            assert_eq!(base64_decode(encoded).unwrap(), plain.as_bytes());
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(base64_decode(&base64_encode(&all)).unwrap(), all);
        for bad in ["Zg=", "Z===", "Zg==Zg==", "Zm9*", "Zm9v\n"] {
            assert_eq!(base64_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_response_is_stored_without_per_connection_headers_and_read_back() {
        let response = HttpResponse {
            status: 201,
            headers: vec![
                ("Content-Type".into(), "application/json".into()),
                ("Content-Length".into(), "11".into()),
                ("Set-Cookie".into(), "a=1".into()),
                ("set-cookie".into(), "b=2".into()),
                ("Transfer-Encoding".into(), "chunked".into()),
            ],
            body: b"{\"id\": 42}\n".to_vec(),
        };
        let stored = encode_response(&response).unwrap();
        assert_eq!(stored[0], b'j');
        let back = decode_response(&stored).unwrap();
        assert_eq!(back.status, 201);
        assert_eq!(back.body, response.body);
        assert_eq!(
            back.headers,
            [("content-type", "application/json"), ("set-cookie", "a=1"), ("set-cookie", "b=2")]
                .map(|(n, v)| (n.to_string(), v.to_string()))
        );
        // What another language's middleware writes is the same JSON.
        let json = std::str::from_utf8(&stored[1..]).unwrap();
        assert!(json.contains("\"body\":\"eyJpZCI6IDQyfQo=\""), "{json}");
        assert_eq!(
            encode_response(&HttpResponse { status: 99, ..back }).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }

    #[test]
    fn another_kind_of_stored_response_is_refused() {
        for stored in [b"bhello".to_vec(), b"j{\"status\":\"x\"}".to_vec(), b"j[1]".to_vec(), b"plain".to_vec()] {
            assert_eq!(decode_response(&stored).unwrap_err().kind(), ErrorKind::InvalidArgument);
        }
    }

    #[test]
    fn fingerprints_tell_method_path_and_body_apart() {
        let a = fingerprint("post", "/orders", b"{}");
        assert_eq!(a, fingerprint("POST", "/orders", b"{}"));
        assert!(a.starts_with(b"sha256:") && a.len() == 7 + 32);
        assert_ne!(a, fingerprint("PATCH", "/orders", b"{}"));
        assert_ne!(a, fingerprint("POST", "/orders?x=1", b"{}"));
        assert_ne!(a, fingerprint("POST", "/orders", b"{ }"));
        // Length prefixes: moving a byte from the path into the body is another request.
        assert_ne!(fingerprint("POST", "/ab", b"c"), fingerprint("POST", "/a", b"bc"));
    }

    #[test]
    fn keys_options_and_refusals() {
        assert_eq!(key_of("  \"8e03978e-40d5\" "), "8e03978e-40d5");
        assert_eq!(key_problem("8e03978e-40d5"), None);
        assert!(key_problem("").is_some());
        assert!(key_problem("has space").is_some());
        assert!(key_problem(&"k".repeat(256)).is_some());
        let options = Options::new(None, None, None).unwrap();
        assert!(options.applies_to("post") && options.applies_to("PATCH") && !options.applies_to("GET"));
        let custom = Options::new(Some("X-Request-Id"), Some(Duration::from_secs(60)), Some(&["put".into()])).unwrap();
        assert_eq!(custom.methods, ["PUT"]);
        for bad in [
            Options::new(Some("Bad Header"), None, None),
            Options::new(None, Some(Duration::ZERO), None),
            Options::new(None, None, Some(&[])),
            Options::new(None, None, Some(&["GE T".into()])),
        ] {
            assert_eq!(bad.unwrap_err().kind(), ErrorKind::InvalidArgument);
        }
        let busy = refusal_response(Refusal::InProgress { retry_after: Duration::from_millis(1500) }, "k1");
        assert_eq!(busy.status, 409);
        assert!(busy.headers.contains(&("retry-after".into(), "2".into())));
        assert_eq!(refusal_response(Refusal::Mismatch, "k1").status, 422);
        let bad = refusal_response(Refusal::BadKey, "a b");
        assert_eq!(bad.status, 400);
        let problem: serde_json::Value = serde_json::from_slice(&bad.body).unwrap();
        assert_eq!(problem["status"], 400);
        assert!(stores(201) && stores(422) && !stores(500) && !stores(503));
    }
}
