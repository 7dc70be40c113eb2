//! Idempotency keys: "do this once" for a retried request, a redelivered message, a job two
//! workers picked. `begin(key, fingerprint)` claims the key for one attempt, or answers
//! with the stored response of the attempt that finished, or says another attempt is under
//! way, or that the key was used with another payload. Built on `VersionStore` alone (one
//! versioned record per key, every step a compare-and-set), so it works on every backend
//! that offers versioned values.
//!
//! Every attempt carries a token that grows with each attempt that takes the key (a
//! takeover of a crashed attempt, a run after an abandoned or expired one); a ticket whose
//! attempt was taken over can no longer complete (`Lost`), so a slow first attempt never
//! overwrites the result of the attempt that replaced it.
//!
//! Times: the store's clock where its `VersionStore::now_millis` reads one, else this
//! process's wall clock; then the processes sharing a namespace are assumed to agree on the
//! time to well within `in_progress_ttl`. Expiry is lazy: a record past its retention is
//! treated as absent (and reused) by the next `begin` of its key; nothing sweeps records
//! that are never asked for again (a store without key expiry keeps them).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::idempotency_codec::{decode_response, encode_response, StoredResponse};
use super::idempotency_record::{IdempotencyRecord, Status};
use super::name::{storage_key, validate_name};
use crate::engine::Engine;
use crate::error::{Error, ErrorDetails, Result};
use crate::spi::{VersionStore, Versioned, Write};

/// Where a key's record is kept among the store's values.
const RECORD_PREFIX: &str = "polylock:idempotency:";

/// The namespace as its records' keys spell it: `%` and `:` percent-encoded, so that the
/// first `:` after the prefix ends it and keys (which may contain `:`) follow. Records are
/// `<prefix><namespace>:<key>`, and with `:` spelled as itself the namespace `a` with the key
/// `b:c` and the namespace `a:b` with the key `c` were one record (issue 35). A namespace
/// without `%` or `:` is spelled as itself, as before.
pub(crate) fn record_namespace(namespace: &str) -> std::borrow::Cow<'_, str> {
    if !namespace.contains(['%', ':']) {
        return namespace.into();
    }
    namespace.replace('%', "%25").replace(':', "%3A").into()
}

/// What `begin` found.
#[derive(Debug)]
pub enum Begin {
    /// This caller runs the work, and must `complete` (or `abandon`) the ticket.
    Acquired(Ticket),
    /// An attempt finished before: its stored response.
    Replay(Vec<u8>),
    /// Another attempt is under way; it may be taken over after `retry_after` if it does
    /// not finish or extend (HTTP 409).
    InProgress { retry_after: Duration },
    /// The key was used before with another fingerprint (HTTP 422).
    Mismatch,
}

struct Shared {
    engine: Arc<Engine>,
    store: Arc<dyn VersionStore>,
    namespace: String,
    record_prefix: String,
    retention: Duration,
    in_progress_ttl: Duration,
}

impl Shared {
    /// Milliseconds since the Unix epoch, from the store's clock if it has one.
    async fn now_ms(&self) -> Result<u64> {
        if let Some(now) = self.store.now_millis().await? {
            return Ok(now);
        }
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|_| Error::backend("this machine's clock is set before 1970"))?;
        Ok(since_epoch.as_millis() as u64)
    }

    fn decode(&self, key: &str, stored: &Versioned) -> Result<IdempotencyRecord> {
        IdempotencyRecord::decode(key, &stored.value)
    }
}

fn plus(now_ms: u64, duration: Duration) -> u64 {
    now_ms.saturating_add(duration.as_millis().min(u64::MAX as u128) as u64)
}

/// Idempotency keys of one namespace. Cheap to clone.
#[derive(Clone)]
pub struct Idempotency {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Idempotency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Idempotency")
            .field("namespace", &self.shared.namespace)
            .field("retention", &self.shared.retention)
            .field("in_progress_ttl", &self.shared.in_progress_ttl)
            .finish()
    }
}

impl Idempotency {
    /// How long a completed key replays its response by default (Stripe keeps keys 24 h).
    pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 3600);
    /// How long an attempt may run without `extend()` before another may take the key over.
    pub const DEFAULT_IN_PROGRESS_TTL: Duration = Duration::from_secs(60);
    /// Longest fingerprint accepted, in bytes: pass a hash of the payload, not the payload.
    pub const MAX_FINGERPRINT_LEN: usize = 1024;

    pub(crate) fn new(
        engine: Arc<Engine>,
        store: Arc<dyn VersionStore>,
        client_namespace: Option<&str>,
        namespace: &str,
        retention: Duration,
        in_progress_ttl: Duration,
    ) -> Result<Idempotency> {
        if namespace.is_empty() {
            return Err(Error::invalid_argument("an idempotency namespace must not be empty"));
        }
        validate_name(namespace)?;
        for (what, duration) in [("retention", retention), ("in_progress_ttl", in_progress_ttl)] {
            if duration < Duration::from_millis(1) {
                return Err(Error::invalid_argument(format!(
                    "idempotency {what} must be at least 1ms, got {}µs",
                    duration.as_micros()
                )));
            }
        }
        let record_prefix = storage_key(client_namespace, &format!("{RECORD_PREFIX}{}:", record_namespace(namespace)));
        let shared =
            Shared { engine, store, namespace: namespace.to_string(), record_prefix, retention, in_progress_ttl };
        Ok(Idempotency { shared: Arc::new(shared) })
    }

    pub fn namespace(&self) -> &str {
        &self.shared.namespace
    }

    pub fn retention(&self) -> Duration {
        self.shared.retention
    }

    pub fn in_progress_ttl(&self) -> Duration {
        self.shared.in_progress_ttl
    }

    /// Claim `key` for this attempt, or say why not. `fingerprint` identifies the payload
    /// (a hash of it; at most [`Idempotency::MAX_FINGERPRINT_LEN`] bytes): the key used again with
    /// another fingerprint is `Mismatch`.
    pub async fn begin(&self, key: &str, fingerprint: &[u8]) -> Result<Begin> {
        self.shared.engine.check_open()?;
        let record_key = self.record_key(key, fingerprint)?;
        let shared = &self.shared;
        loop {
            let current = shared.store.get(&record_key).await?;
            let now = shared.now_ms().await?;
            let (expected, token) = match &current {
                None => (None, 1),
                Some(stored) => {
                    let record = shared.decode(key, stored)?;
                    let free = record.expires_at_ms <= now || record.status == Status::Abandoned;
                    if !free {
                        if record.fingerprint != fingerprint {
                            return Ok(Begin::Mismatch);
                        }
                        match record.status {
                            Status::Completed => return Ok(Begin::Replay(record.response)),
                            Status::InProgress if now < record.in_progress_until_ms => {
                                let retry_after = Duration::from_millis(record.in_progress_until_ms - now);
                                return Ok(Begin::InProgress { retry_after });
                            }
                            // A crashed (or stuck) attempt: taken over below.
                            Status::InProgress | Status::Abandoned => {}
                        }
                    }
                    (Some(stored.version), record.token.saturating_add(1))
                }
            };
            let record = IdempotencyRecord {
                status: Status::InProgress,
                token,
                in_progress_until_ms: plus(now, shared.in_progress_ttl),
                expires_at_ms: plus(now, shared.retention),
                fingerprint: fingerprint.to_vec(),
                response: Vec::new(),
            };
            // Someone else wrote between the read and here: look again.
            if let Write::Written { version } =
                shared.store.compare_and_set(&record_key, expected, &record.encode()).await?
            {
                return Ok(Begin::Acquired(Ticket {
                    shared: self.shared.clone(),
                    key: key.to_string(),
                    record_key,
                    token,
                    fingerprint: fingerprint.to_vec(),
                    version: Mutex::new(Some(version)),
                }));
            }
        }
    }

    /// Do `work` once for `key`: run it if this call claims the key (completing the key
    /// with its response, or abandoning the key if it fails, so a retry runs again), or
    /// return the stored response of the attempt that finished. With `wait`, an attempt
    /// under way is waited for (polling, up to `wait`) and its response replayed; without,
    /// or when the wait runs out, `InProgress` (with a retry-after). `Mismatch` if the key
    /// was used with another fingerprint. The response is stored in the tagged form of
    /// [`super::idempotency_codec`] that every binding's `run` reads and writes, so a key is
    /// replayed across languages; a response stored as JSON by another language comes back
    /// as its text.
    pub async fn run<F, Fut, E>(
        &self,
        key: &str,
        fingerprint: &[u8],
        wait: Option<Duration>,
        work: F,
    ) -> Result<Vec<u8>, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Vec<u8>, E>>,
        E: From<Error>,
    {
        let encoded = move || async move {
            let response = work().await?;
            Ok::<_, E>(encode_response(&StoredResponse::Bytes(response)))
        };
        let stored = self.run_stored(key, fingerprint, wait, encoded).await?;
        Ok(match decode_response(&stored)? {
            StoredResponse::Bytes(bytes) => bytes,
            // A response another language stored as JSON: its text.
            StoredResponse::Json(text) => text.into_bytes(),
        })
    }

    /// [`Idempotency::run`]'s loop with the response stored exactly as `work` returns it
    /// and handed back as stored: for a caller that writes the tagged form itself (a
    /// binding whose work may return bytes or structured data, encoded with
    /// [`super::idempotency_codec::encode_response`]).
    pub async fn run_stored<F, Fut, E>(
        &self,
        key: &str,
        fingerprint: &[u8],
        wait: Option<Duration>,
        work: F,
    ) -> Result<Vec<u8>, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Vec<u8>, E>>,
        E: From<Error>,
    {
        let deadline = wait.map(|wait| Instant::now() + wait);
        let mut poll = Duration::from_millis(20);
        loop {
            match self.begin(key, fingerprint).await? {
                Begin::Acquired(ticket) => {
                    return match work().await {
                        Ok(response) => {
                            ticket.complete(&response).await?;
                            Ok(response)
                        }
                        Err(err) => {
                            // The work's error is what the caller needs; a lost ticket has
                            // nothing left to abandon.
                            let _ = ticket.abandon().await;
                            Err(err)
                        }
                    };
                }
                Begin::Replay(stored) => return Ok(stored),
                Begin::Mismatch => return Err(mismatch_error(key).into()),
                Begin::InProgress { retry_after } => {
                    let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                    match remaining {
                        Some(remaining) if !remaining.is_zero() => {
                            tokio::time::sleep(poll.min(retry_after).min(remaining).max(Duration::from_millis(1)))
                                .await;
                            poll = (poll * 2).min(Duration::from_secs(1));
                        }
                        _ => return Err(in_progress_error(key, retry_after).into()),
                    }
                }
            }
        }
    }

    fn record_key(&self, key: &str, fingerprint: &[u8]) -> Result<String> {
        if key.is_empty() {
            return Err(Error::invalid_argument("an idempotency key must not be empty"));
        }
        if fingerprint.len() > Self::MAX_FINGERPRINT_LEN {
            return Err(Error::invalid_argument(format!(
                "an idempotency fingerprint is {} bytes long; the limit is {} (pass a hash of the payload)",
                fingerprint.len(),
                Self::MAX_FINGERPRINT_LEN
            )));
        }
        let record_key = format!("{}{key}", self.shared.record_prefix);
        validate_name(&record_key).map_err(|err| {
            Error::invalid_argument(format!("idempotency key '{}': {}", key.escape_debug(), err.message()))
        })?;
        Ok(record_key)
    }
}

/// The `Mismatch` error `run` and the bindings raise.
pub fn mismatch_error(key: &str) -> Error {
    Error::mismatch(format!("idempotency key '{key}' was used before with another payload (a different fingerprint)"))
}

/// The `InProgress` error `run` and the bindings raise, with its retry-after.
pub fn in_progress_error(key: &str, retry_after: Duration) -> Error {
    Error::in_progress(format!(
        "idempotency key '{key}' is being worked on by another attempt; retry after {}ms",
        retry_after.as_millis()
    ))
    .with_details(ErrorDetails::RetryAfter { after: retry_after })
}

/// One attempt's claim on a key: `complete` it with the response to replay, or `abandon`
/// it so a retry runs again; `extend` it while the work runs longer than `in_progress_ttl`.
pub struct Ticket {
    shared: Arc<Shared>,
    key: String,
    record_key: String,
    token: u64,
    fingerprint: Vec<u8>,
    /// The record's version as this attempt last wrote it; `None` once completed or
    /// abandoned.
    version: Mutex<Option<u64>>,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket").field("key", &self.key).field("token", &self.token).finish()
    }
}

impl Ticket {
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Grows with every attempt that takes the key: usable as a fencing token for the
    /// work's own writes (`Value::write_fenced`).
    pub fn token(&self) -> u64 {
        self.token
    }

    /// Store `response` for every later `begin` of this key to replay (until the retention
    /// ends). `Lost` if another attempt took the key over: its result is never overwritten.
    pub async fn complete(&self, response: &[u8]) -> Result<()> {
        let now = self.shared.now_ms().await?;
        let record = IdempotencyRecord {
            status: Status::Completed,
            token: self.token,
            in_progress_until_ms: now,
            expires_at_ms: plus(now, self.shared.retention),
            fingerprint: self.fingerprint.clone(),
            response: response.to_vec(),
        };
        self.write(&record, "complete").await.map(|_| ())
    }

    /// Give the key up (the work failed and may be retried): the next `begin` runs again.
    /// `Lost` if another attempt took the key over.
    pub async fn abandon(&self) -> Result<()> {
        let now = self.shared.now_ms().await?;
        let record = IdempotencyRecord {
            status: Status::Abandoned,
            token: self.token,
            in_progress_until_ms: now,
            expires_at_ms: plus(now, self.shared.retention),
            fingerprint: self.fingerprint.clone(),
            response: Vec::new(),
        };
        self.write(&record, "abandon").await.map(|_| ())
    }

    /// Keep the key for another `in_progress_ttl` from now. `Lost` if another attempt took
    /// it over.
    pub async fn extend(&self) -> Result<()> {
        let now = self.shared.now_ms().await?;
        let record = IdempotencyRecord {
            status: Status::InProgress,
            token: self.token,
            in_progress_until_ms: plus(now, self.shared.in_progress_ttl),
            expires_at_ms: plus(now, self.shared.retention),
            fingerprint: self.fingerprint.clone(),
            response: Vec::new(),
        };
        self.write(&record, "extend").await
    }

    /// Write `record` over this attempt's own record, and only over it: the version this
    /// ticket last wrote, or (after a clone of it raced) a record still in progress with
    /// this ticket's token. Completing and abandoning end the ticket.
    async fn write(&self, record: &IdempotencyRecord, what: &str) -> Result<()> {
        self.shared.engine.check_open()?;
        let ends_ticket = record.status != Status::InProgress;
        let mut expected = self.current_version(what)?;
        loop {
            match self.shared.store.compare_and_set(&self.record_key, Some(expected), &record.encode()).await? {
                Write::Written { version } => {
                    *self.version.lock().unwrap_or_else(|p| p.into_inner()) = (!ends_ticket).then_some(version);
                    return Ok(());
                }
                Write::Conflict { current } => {
                    let still_ours = match &current {
                        Some(stored) => {
                            let now = self.shared.decode(&self.key, stored)?;
                            (now.token == self.token && now.status == Status::InProgress).then_some(stored.version)
                        }
                        None => None,
                    };
                    match still_ours {
                        Some(version) => expected = version,
                        None => return Err(self.lost_error(what, current.as_ref())),
                    }
                }
            }
        }
    }

    fn current_version(&self, what: &str) -> Result<u64> {
        self.version.lock().unwrap_or_else(|p| p.into_inner()).ok_or_else(|| {
            Error::invalid_argument(format!(
                "cannot {what} the ticket for idempotency key '{}': it was already completed or abandoned",
                self.key
            ))
        })
    }

    fn lost_error(&self, what: &str, current: Option<&Versioned>) -> Error {
        let by = current
            .and_then(|stored| self.shared.decode(&self.key, stored).ok())
            .map(|record| format!("attempt {} has it now", record.token))
            .unwrap_or_else(|| "its record is gone".to_string());
        Error::lost(format!(
            "cannot {what} idempotency key '{}' with attempt {}: it was taken over ({by}); \
             that attempt's result stands",
            self.key, self.token
        ))
    }
}
