//! How an idempotency record's fingerprint and stored response are written, once for every
//! binding: a Python service and a Node service sharing a namespace must agree on what counts
//! as "the same payload" and must replay each other's responses.
//!
//! - A fingerprint of bytes (or text, as UTF-8) is kept as it is up to
//!   [`MAX_PLAIN_FINGERPRINT`] bytes, else as `sha256:` followed by the 32-byte digest.
//! - A fingerprint of a structured payload (a dict, an object, a map) is given as JSON text;
//!   it is parsed and written again canonically (object keys in byte order, no spaces,
//!   numbers as JSON parsers read them) and always hashed, so key order and spacing do not
//!   matter. `1` and `1.0` are different numbers to it, as they are to JSON.
//! - A response stored by `run` is one tag byte and a body: `b` + the bytes as they are, or
//!   `j` + JSON text that the binding encodes and decodes in its language's JSON.

use sha2::{Digest, Sha256};

use crate::{Error, ErrorKind, Result};

/// Fingerprints up to this many bytes are stored as they are; longer ones are hashed.
pub const MAX_PLAIN_FINGERPRINT: usize = 1024;

const HASHED_PREFIX: &[u8] = b"sha256:";
const TAG_BYTES: u8 = b'b';
const TAG_JSON: u8 = b'j';

/// The fingerprint of a payload given as bytes (or text as UTF-8).
pub fn fingerprint_of_bytes(payload: &[u8]) -> Vec<u8> {
    if payload.len() <= MAX_PLAIN_FINGERPRINT {
        payload.to_vec()
    } else {
        hashed(payload)
    }
}

/// The fingerprint of a structured payload given as JSON text: canonical JSON, hashed.
pub fn fingerprint_of_json(json: &str) -> Result<Vec<u8>> {
    let value: serde_json::Value = serde_json::from_str(json).map_err(|err| {
        Error::new(ErrorKind::InvalidArgument, format!("an idempotency fingerprint is not JSON: {err}"))
    })?;
    let mut canonical = String::with_capacity(json.len());
    write_canonical(&value, &mut canonical);
    Ok(hashed(canonical.as_bytes()))
}

/// A response as `run` stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredResponse {
    /// Bytes, handed back as they are.
    Bytes(Vec<u8>),
    /// JSON text, decoded by the binding in its own language.
    Json(String),
}

/// The stored form of a response: a tag byte, then the body.
pub fn encode_response(response: &StoredResponse) -> Vec<u8> {
    let (tag, body) = match response {
        StoredResponse::Bytes(bytes) => (TAG_BYTES, bytes.as_slice()),
        StoredResponse::Json(text) => (TAG_JSON, text.as_bytes()),
    };
    let mut stored = Vec::with_capacity(body.len() + 1);
    stored.push(tag);
    stored.extend_from_slice(body);
    stored
}

/// A stored response read back. A record completed with raw bytes through `begin` and a
/// ticket (not through `run`) has no tag: that is `InvalidArgument`, saying so.
pub fn decode_response(stored: &[u8]) -> Result<StoredResponse> {
    let not_ours = || {
        Error::new(
            ErrorKind::InvalidArgument,
            "this idempotency key's response was not stored by polylock's run(); read it with begin()",
        )
    };
    match stored.split_first() {
        Some((&TAG_BYTES, body)) => Ok(StoredResponse::Bytes(body.to_vec())),
        Some((&TAG_JSON, body)) => {
            let text = std::str::from_utf8(body).map_err(|_| not_ours())?;
            Ok(StoredResponse::Json(text.to_owned()))
        }
        _ => Err(not_ours()),
    }
}

fn hashed(data: &[u8]) -> Vec<u8> {
    let mut out = HASHED_PREFIX.to_vec();
    out.extend_from_slice(&Sha256::digest(data));
    out
}

/// JSON with object keys sorted by their bytes and no insignificant whitespace. Sorted here
/// rather than trusting serde_json's map order, which a feature elsewhere in a build can change.
fn write_canonical(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_fingerprints_stay_as_they_are_and_long_ones_are_hashed() {
        assert_eq!(fingerprint_of_bytes(b"card=42"), b"card=42");
        let long = vec![7u8; MAX_PLAIN_FINGERPRINT + 1];
        let hashed = fingerprint_of_bytes(&long);
        assert!(hashed.starts_with(b"sha256:"));
        assert_eq!(hashed.len(), 7 + 32);
        assert_eq!(fingerprint_of_bytes(&long[..MAX_PLAIN_FINGERPRINT]).len(), MAX_PLAIN_FINGERPRINT);
    }

    #[test]
    fn json_fingerprints_ignore_key_order_and_spacing() {
        let a = fingerprint_of_json(r#"{"amount": 10, "card": {"b": [1, 2], "a": null}}"#).unwrap();
        let b = fingerprint_of_json(r#"{"card":{"a":null,"b":[1,2]},"amount":10}"#).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, fingerprint_of_json(r#"{"card":{"a":null,"b":[2,1]},"amount":10}"#).unwrap());
        // The same digest every binding must reproduce (Python: json.dumps(sort_keys=True,
        // separators=(",", ":")), then SHA-256).
        let expected = Sha256::digest(br#"{"amount":10,"card":{"a":null,"b":[1,2]}}"#);
        assert_eq!(&a[7..], expected.as_slice());
        let err = fingerprint_of_json("{not json").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn responses_round_trip_and_untagged_ones_are_refused() {
        for response in [StoredResponse::Bytes(b"\x00ok".to_vec()), StoredResponse::Json("[1,\"a\"]".into())] {
            assert_eq!(decode_response(&encode_response(&response)).unwrap(), response);
        }
        assert_eq!(encode_response(&StoredResponse::Json("{}".into())), b"j{}");
        for stored in [&b""[..], b"x{}", b"j\xff"] {
            assert_eq!(decode_response(stored).unwrap_err().kind(), ErrorKind::InvalidArgument);
        }
    }
}
