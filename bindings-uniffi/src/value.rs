//! `Value`: a named versioned value (compare-and-set on a version that only grows) with fenced
//! writes, the core's `Value` translated. Refused writes are `Conflict` (with the current
//! value and version) or `Fenced` (with the winning token). `ValueWatch` is the core's
//! `kit::value_watch::SharedValueWatch`: its sharing, bounded waits and close are the kit's.

use std::mem::ManuallyDrop;
use std::sync::Arc;

use polylock::kit::value_watch::{SharedValueWatch, WatchStep};

use crate::errors::Result;
use crate::options::wait_from_seconds;
use crate::shared::ClientShared;

/// A value as `get` found it.
#[derive(uniffi::Record)]
pub struct VersionedValue {
    pub value: Vec<u8>,
    pub version: u64,
    /// The highest fencing token it has accepted, once written fenced.
    pub fencing_token: Option<u64>,
}

fn versioned(found: polylock::VersionedValue) -> VersionedValue {
    VersionedValue { value: found.value, version: found.version, fencing_token: found.fencing_token }
}

#[derive(uniffi::Object)]
pub struct Value {
    shared: Arc<ClientShared>,
    value: polylock::Value,
}

impl Value {
    pub fn new(shared: Arc<ClientShared>, value: polylock::Value) -> Arc<Value> {
        Arc::new(Value { shared, value })
    }

    fn what(&self) -> String {
        format!("value '{}'", self.value.name())
    }
}

#[uniffi::export]
impl Value {
    pub fn name(&self) -> String {
        self.value.name().to_string()
    }

    /// The value and its version, or nil.
    pub async fn get(&self) -> Result<Option<VersionedValue>> {
        let value = self.value.clone();
        let found = self.shared.run(self.what(), async move { value.get().await }).await?;
        Ok(found.map(versioned))
    }

    /// Create it; its first version. `Conflict` if it exists.
    pub async fn create(&self, value: Vec<u8>) -> Result<u64> {
        let handle = self.value.clone();
        self.shared.run(self.what(), async move { handle.create(&value).await }).await
    }

    /// Replace it if still at `version`; the new version. `Conflict` otherwise.
    pub async fn compare_and_set(&self, version: u64, value: Vec<u8>) -> Result<u64> {
        let handle = self.value.clone();
        self.shared.run(self.what(), async move { handle.compare_and_set(version, &value).await }).await
    }

    /// Remove it if still at `version`. `Conflict` otherwise.
    pub async fn delete(&self, version: u64) -> Result<()> {
        let handle = self.value.clone();
        self.shared.run(self.what(), async move { handle.delete(version).await }).await
    }

    /// Write it if `token` is at least the highest token it has accepted; the new version.
    /// `Fenced`, with the winning token, otherwise.
    pub async fn write_fenced(&self, token: u64, value: Vec<u8>) -> Result<u64> {
        let handle = self.value.clone();
        self.shared.run(self.what(), async move { handle.write_fenced(token, &value).await }).await
    }

    /// Follow this value's changes from now on (the watch is armed before this returns).
    pub async fn watch(&self) -> Result<Arc<ValueWatch>> {
        let value = self.value.clone();
        let watch = self.shared.run(self.what(), async move { value.watch().await }).await?;
        Ok(Arc::new(ValueWatch {
            shared: self.shared.clone(),
            name: self.value.name().to_string(),
            watch: ManuallyDrop::new(SharedValueWatch::new(watch)),
        }))
    }
}

/// How a wait on a `ValueWatch` ended: `outcome` is "changed" (with `state`, nil once the
/// value is deleted), "no_change" (the wait's bound ran out) or "closed".
#[derive(uniffi::Record)]
pub struct ValueWatchStep {
    pub outcome: String,
    pub state: Option<VersionedValue>,
}

/// A value's changes, from the moment `Value::watch` was called. Threads may share it: one
/// wait at a time (the others queue behind it), `current` readable meanwhile, `close` from
/// any thread ending a wait in progress.
#[derive(uniffi::Object)]
pub struct ValueWatch {
    shared: Arc<ClientShared>,
    name: String,
    /// ManuallyDrop: `Drop` lets go of it inside the client's runtime.
    watch: ManuallyDrop<SharedValueWatch>,
}

impl ValueWatch {
    fn what(&self) -> String {
        format!("watch of value '{}'", self.name)
    }
}

impl Drop for ValueWatch {
    fn drop(&mut self) {
        // The store's change feed (a Redis subscription) is let go of inside the runtime it
        // was opened on (in a forked child, abandoned).
        // SAFETY: taken exactly once, here, and never used again.
        let watch = unsafe { ManuallyDrop::take(&mut self.watch) };
        self.shared.let_go(watch);
    }
}

#[uniffi::export]
impl ValueWatch {
    /// The state last seen: when the watch started, or the last change a wait returned.
    pub fn current(&self) -> Option<VersionedValue> {
        self.watch.current().map(versioned)
    }

    /// Wait for the value's next state, at most `wait_seconds` (nil: until it changes or the
    /// watch is closed). `Connection` once the client is closed.
    pub async fn changed(&self, wait_seconds: Option<f64>) -> Result<ValueWatchStep> {
        let wait = wait_from_seconds(wait_seconds)?;
        let waiting = self.watch.changed_within(wait);
        let step = self.shared.run(self.what(), waiting).await?;
        Ok(match step {
            WatchStep::Changed(state) => ValueWatchStep { outcome: "changed".into(), state: state.map(versioned) },
            WatchStep::NoChange => ValueWatchStep { outcome: "no_change".into(), state: None },
            WatchStep::Closed => ValueWatchStep { outcome: "closed".into(), state: None },
        })
    }

    /// End the watch: a wait in progress and every later one end with "closed". Twice is
    /// harmless; in a forked child, nothing (the watch is the parent's).
    pub async fn close(&self) -> Result<()> {
        if self.shared.is_inherited_across_fork() {
            return Ok(());
        }
        let watch = self.watch.clone();
        self.shared
            .run(self.what(), async move {
                watch.close().await;
                Ok(())
            })
            .await
    }

    pub fn is_closed(&self) -> bool {
        self.watch.is_closed()
    }

    pub fn name(&self) -> String {
        self.name.clone()
    }
}
