//! `Value`: a named versioned value (compare-and-set on a version that only grows) with fenced
//! writes, the core's `Value` translated. Refused writes are `Conflict` (with the current
//! value and version) or `Fenced` (with the winning token).

use std::sync::Arc;

use crate::errors::Result;
use crate::shared::ClientShared;

/// A value as `get` found it.
#[derive(uniffi::Record)]
pub struct VersionedValue {
    pub value: Vec<u8>,
    pub version: u64,
    /// The highest fencing token it has accepted, once written fenced.
    pub fencing_token: Option<u64>,
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
        Ok(found.map(|found| VersionedValue {
            value: found.value,
            version: found.version,
            fencing_token: found.fencing_token,
        }))
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
}
