//! `Value`: a named value written by compare-and-set on a version that only grows
//! (optimistic locking, the `@Version` pattern), and written fenced: only by the holder of
//! the highest fencing token it has seen. Built on the store interface's `VersionStore`
//! alone, so it works on every backend that offers versioned values.
//!
//! `watch()` follows a value's changes: woken by the store where it can notify (etcd
//! watches, ZooKeeper data watches, Redis pub/sub, PostgreSQL `LISTEN`), else by polling with
//! a bounded backoff (SQLite, MySQL/MariaDB, memory), reading the value again each time.

use std::sync::Arc;
use std::time::Duration;

use super::value_record::ValueRecord;
use crate::engine::Engine;
use crate::error::{Error, ErrorDetails, Result};
use crate::spi::{ValueChanges, VersionStore, Write};

/// A poll's first pause after a change, doubled while nothing changes, up to `POLL_MAX`.
const POLL_FIRST: Duration = Duration::from_millis(10);
const POLL_MAX: Duration = Duration::from_millis(500);
/// Where the store notifies, it is still read this often, in case a wake-up was lost.
const NOTIFIED_RECHECK: Duration = Duration::from_secs(5);

/// A value as it is in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedValue {
    pub value: Vec<u8>,
    /// Grows on every write of this name, and across a delete and re-create; compare it
    /// for equality only.
    pub version: u64,
    /// The highest fencing token the value has accepted, once it has been written fenced.
    /// A plain `compare_and_set` keeps it; `delete` forgets it.
    pub fencing_token: Option<u64>,
}

/// A handle on the value `name`. Cheap; holds nothing and reads nothing until used.
#[derive(Clone)]
pub struct Value {
    engine: Arc<Engine>,
    store: Arc<dyn VersionStore>,
    name: String,
    key: String,
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Value").field("name", &self.name).finish()
    }
}

impl Value {
    pub(crate) fn new(engine: Arc<Engine>, store: Arc<dyn VersionStore>, name: &str, key: String) -> Value {
        Value { engine, store, name: name.to_string(), key }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The value and its version, or `None` if there is none.
    pub async fn get(&self) -> Result<Option<VersionedValue>> {
        self.engine.check_open()?;
        self.read().await
    }

    /// Create the value; its first version. `Conflict` (carrying the current value) if it
    /// exists.
    pub async fn create(&self, value: &[u8]) -> Result<u64> {
        self.engine.check_open()?;
        match self.store.compare_and_set(&self.key, None, &ValueRecord::encode(None, value)).await? {
            Write::Written { version } => Ok(version),
            Write::Conflict { current } => Err(self.conflict("it already exists", current)?),
        }
    }

    /// Replace the value if it is still at `version`; the new version. `Conflict`, carrying
    /// the current value and version, if someone else wrote first (or it is gone). A fenced
    /// value keeps its highest accepted token.
    pub async fn compare_and_set(&self, version: u64, value: &[u8]) -> Result<u64> {
        self.engine.check_open()?;
        // Read first to carry a fenced value's token over; the write itself is still
        // conditional on the version, so nothing written in between is overwritten.
        let current = self.read().await?;
        let fence = match &current {
            Some(current) if current.version == version => current.fencing_token,
            _ => return Err(conflict_error(&self.name, &format!("it is not at version {version}"), current)),
        };
        match self.store.compare_and_set(&self.key, Some(version), &ValueRecord::encode(fence, value)).await? {
            Write::Written { version } => Ok(version),
            Write::Conflict { current } => {
                Err(self.conflict(&format!("it was written after version {version}"), current)?)
            }
        }
    }

    /// Remove the value if it is still at `version`. `Conflict`, carrying the current value,
    /// if it is not (or is already gone).
    pub async fn delete(&self, version: u64) -> Result<()> {
        self.engine.check_open()?;
        if self.store.delete(&self.key, version).await? {
            return Ok(());
        }
        let current = self.read().await?;
        Err(conflict_error(&self.name, &format!("it is not at version {version}"), current))
    }

    /// Write `value` if `token` is at least the highest fencing token this value has
    /// accepted (a value never written fenced accepts any); the new version. The token is
    /// recorded with the value. `Fenced`, carrying the winning token, if a higher token
    /// has written: the caller's lock was taken over while it was paused, and the write
    /// must not happen.
    pub async fn write_fenced(&self, token: u64, value: &[u8]) -> Result<u64> {
        self.engine.check_open()?;
        let record = ValueRecord::encode(Some(token), value);
        loop {
            let current = self.read().await?;
            if let Some(winning) = current.as_ref().and_then(|c| c.fencing_token).filter(|&won| won > token) {
                return Err(Error::fenced(format!(
                    "value '{}' refused the write fenced by token {token}: it has accepted token {winning}",
                    self.name
                ))
                .with_details(ErrorDetails::Fenced { winning_token: winning }));
            }
            let expected = current.map(|c| c.version);
            // Another writer between the read and the write: read again and re-check the token.
            if let Write::Written { version } = self.store.compare_and_set(&self.key, expected, &record).await? {
                return Ok(version);
            }
        }
    }

    /// Follow this value's changes from now on: `ValueWatch::changed` returns each new state
    /// (a new version, or the value gone). Where several writes land close together a watcher
    /// may see only the last of them; it never sees a state twice, nor an older one after a
    /// newer.
    pub async fn watch(&self) -> Result<ValueWatch> {
        self.engine.check_open()?;
        // Armed before the first read, so a write in between is not missed.
        let changes = self.store.changes(&self.key).await?;
        let last = self.read().await?;
        Ok(ValueWatch { value: self.clone(), changes, last, poll: POLL_FIRST })
    }

    async fn read(&self) -> Result<Option<VersionedValue>> {
        let Some(stored) = self.store.get(&self.key).await? else { return Ok(None) };
        self.decode(stored)
    }

    fn decode(&self, stored: crate::spi::Versioned) -> Result<Option<VersionedValue>> {
        let record = ValueRecord::decode(&self.name, &stored.value)?;
        Ok(Some(VersionedValue { value: record.payload, version: stored.version, fencing_token: record.fence }))
    }

    /// The `Conflict` error for a write the store refused, with the current value decoded.
    fn conflict(&self, why: &str, current: Option<crate::spi::Versioned>) -> Result<Error> {
        let current = match current {
            Some(stored) => self.decode(stored)?,
            None => None,
        };
        Ok(conflict_error(&self.name, why, current))
    }
}

/// A value's changes, as `Value::watch` follows them.
pub struct ValueWatch {
    value: Value,
    changes: Option<Box<dyn ValueChanges>>,
    last: Option<VersionedValue>,
    poll: Duration,
}

impl std::fmt::Debug for ValueWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValueWatch")
            .field("name", &self.value.name)
            .field("notified", &self.changes.is_some())
            .field("version", &self.last.as_ref().map(|v| v.version))
            .finish()
    }
}

impl ValueWatch {
    /// The state last seen: when the watch started, or the last `changed` returned.
    pub fn current(&self) -> Option<&VersionedValue> {
        self.last.as_ref()
    }

    /// Whether the store wakes this watch (else it polls).
    pub fn is_notified(&self) -> bool {
        self.changes.is_some()
    }

    /// Wait for the value's next state: a new version (`Some`), or the value deleted
    /// (`None`). Waits as long as nothing changes; wrap it in a timeout to bound the wait.
    pub async fn changed(&mut self) -> Result<Option<VersionedValue>> {
        loop {
            match &mut self.changes {
                Some(changes) => {
                    // A lost wake-up costs at most one recheck's delay.
                    if let Ok(woken) = tokio::time::timeout(NOTIFIED_RECHECK, changes.changed()).await {
                        woken?;
                    }
                }
                None => {
                    tokio::time::sleep(self.poll).await;
                    self.poll = (self.poll * 2).min(POLL_MAX);
                }
            }
            self.value.engine.check_open()?;
            let now = self.value.read().await?;
            let seen = |state: &Option<VersionedValue>| state.as_ref().map(|v| v.version);
            if seen(&now) != seen(&self.last) {
                self.poll = POLL_FIRST;
                self.last = now.clone();
                return Ok(now);
            }
        }
    }
}

fn conflict_error(name: &str, why: &str, current: Option<VersionedValue>) -> Error {
    let now = match &current {
        Some(current) => format!("it is at version {}", current.version),
        None => "there is no value".to_string(),
    };
    Error::conflict(format!("value '{name}' was not written: {why} ({now})"))
        .with_details(ErrorDetails::Conflict { current: current.map(|c| (c.value, c.version)) })
}
