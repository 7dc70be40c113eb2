//! `Idempotency` and `Ticket`: idempotency keys step by step, and the core's codec
//! (`polylock::kit::idempotency_codec`) for the gem's `run` helper: fingerprints of bytes or
//! JSON text, and the tagged stored response. The gem encodes JSON in Ruby; the tags and the
//! canonical form are the core's.

use std::sync::Arc;

use polylock::kit::idempotency_codec::{self, StoredResponse};
use polylock::Begin;

use crate::errors::Result;
use crate::shared::ClientShared;

#[derive(uniffi::Object)]
pub struct Idempotency {
    shared: Arc<ClientShared>,
    keys: polylock::Idempotency,
}

impl Idempotency {
    pub fn new(shared: Arc<ClientShared>, keys: polylock::Idempotency) -> Arc<Idempotency> {
        Arc::new(Idempotency { shared, keys })
    }
}

/// What `begin` found: `outcome` is "acquired" (with `ticket`), "replay" (with `response`),
/// "in_progress" (with `retry_after_ms`) or "mismatch".
#[derive(uniffi::Record)]
pub struct BeginResult {
    pub outcome: String,
    pub ticket: Option<Arc<Ticket>>,
    pub response: Option<Vec<u8>>,
    pub retry_after_ms: Option<u64>,
}

#[uniffi::export]
impl Idempotency {
    pub fn namespace(&self) -> String {
        self.keys.namespace().to_string()
    }

    /// Claim `key` for this attempt, or say why not.
    pub async fn begin(&self, key: String, fingerprint: Vec<u8>) -> Result<BeginResult> {
        let keys = self.keys.clone();
        let what = format!("idempotency key '{key}'");
        let found = self.shared.run(what, async move { keys.begin(&key, &fingerprint).await }).await?;
        let mut result = BeginResult { outcome: String::new(), ticket: None, response: None, retry_after_ms: None };
        match found {
            Begin::Acquired(ticket) => {
                result.outcome = "acquired".into();
                result.ticket = Some(Arc::new(Ticket { shared: self.shared.clone(), ticket: Arc::new(ticket) }));
            }
            Begin::Replay(response) => {
                result.outcome = "replay".into();
                result.response = Some(response);
            }
            Begin::InProgress { retry_after } => {
                result.outcome = "in_progress".into();
                result.retry_after_ms = Some(u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX));
            }
            Begin::Mismatch => result.outcome = "mismatch".into(),
        }
        Ok(result)
    }
}

/// One attempt's claim on a key.
#[derive(uniffi::Object)]
pub struct Ticket {
    shared: Arc<ClientShared>,
    ticket: Arc<polylock::Ticket>,
}

impl Ticket {
    fn what(&self) -> String {
        format!("idempotency key '{}'", self.ticket.key())
    }
}

#[uniffi::export]
impl Ticket {
    pub fn key(&self) -> String {
        self.ticket.key().to_string()
    }

    /// Grows with every attempt that takes the key.
    pub fn token(&self) -> u64 {
        self.ticket.token()
    }

    /// Store `response` for later begins to replay. `Lost` if the key was taken over.
    pub async fn complete(&self, response: Vec<u8>) -> Result<()> {
        let ticket = self.ticket.clone();
        self.shared.run(self.what(), async move { ticket.complete(&response).await }).await
    }

    /// Give the key up: the next begin runs again.
    pub async fn abandon(&self) -> Result<()> {
        let ticket = self.ticket.clone();
        self.shared.run(self.what(), async move { ticket.abandon().await }).await
    }

    /// Keep the key for another in-progress TTL.
    pub async fn extend(&self) -> Result<()> {
        let ticket = self.ticket.clone();
        self.shared.run(self.what(), async move { ticket.extend().await }).await
    }
}

/// The fingerprint of a payload of bytes (kept up to 1024 bytes, else hashed).
#[uniffi::export]
pub fn fingerprint_of_bytes(payload: Vec<u8>) -> Vec<u8> {
    idempotency_codec::fingerprint_of_bytes(&payload)
}

/// The fingerprint of a structured payload given as JSON text (canonical, hashed).
#[uniffi::export]
pub fn fingerprint_of_json(json: String) -> Result<Vec<u8>> {
    Ok(idempotency_codec::fingerprint_of_json(&json)?)
}

/// The stored form of a `run` response: bytes as they are, or JSON text (`json` true).
#[uniffi::export]
pub fn encode_response(body: Vec<u8>, json: bool) -> Result<Vec<u8>> {
    let response = if json {
        let text = String::from_utf8(body)
            .map_err(|_| polylock::Error::invalid_argument("a JSON response is not UTF-8 text"))?;
        StoredResponse::Json(text)
    } else {
        StoredResponse::Bytes(body)
    };
    Ok(idempotency_codec::encode_response(&response))
}

/// A stored `run` response read back.
#[derive(uniffi::Record)]
pub struct DecodedResponse {
    pub json: bool,
    pub body: Vec<u8>,
}

#[uniffi::export]
pub fn decode_response(stored: Vec<u8>) -> Result<DecodedResponse> {
    Ok(match idempotency_codec::decode_response(&stored)? {
        StoredResponse::Bytes(body) => DecodedResponse { json: false, body },
        StoredResponse::Json(text) => DecodedResponse { json: true, body: text.into_bytes() },
    })
}
