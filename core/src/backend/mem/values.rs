//! Counters and versioned values in memory, kept for the life of the store.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;

use super::Memory;
use crate::error::{Error, Result};
use crate::spi::{CounterStore, VersionStore, Versioned, Write};

pub(super) struct MemValues {
    pub(super) store: Arc<Memory>,
}

#[async_trait]
impl CounterStore for MemValues {
    async fn reserve(&self, key: &str, count: u64) -> Result<Range<u64>> {
        if count == 0 {
            return Err(Error::invalid_argument("a counter range must hold at least one value"));
        }
        let mut tables = self.store.tables();
        let end = tables.counters.entry(key.to_string()).or_insert(0);
        let start = *end;
        *end = start
            .checked_add(count)
            .ok_or_else(|| Error::invalid_argument(format!("counter '{key}' cannot grow by {count} past u64")))?;
        Ok(start..*end)
    }

    async fn current(&self, key: &str) -> Result<u64> {
        Ok(self.store.tables().counters.get(key).copied().unwrap_or(0))
    }
}

#[async_trait]
impl VersionStore for MemValues {
    async fn get(&self, key: &str) -> Result<Option<Versioned>> {
        Ok(self.store.tables().values.get(key).cloned())
    }

    async fn compare_and_set(&self, key: &str, expected: Option<u64>, value: &[u8]) -> Result<Write> {
        let mut tables = self.store.tables();
        let current = tables.values.get(key).cloned();
        if current.as_ref().map(|v| v.version) != expected {
            return Ok(Write::Conflict { current });
        }
        // Versions grow across deletes too: drawn from the key's one fencing counter.
        let version = tables.next_token(&format!("value:{key}"));
        tables.values.insert(key.to_string(), Versioned { value: value.to_vec(), version });
        Ok(Write::Written { version })
    }

    async fn delete(&self, key: &str, expected: u64) -> Result<bool> {
        let mut tables = self.store.tables();
        if tables.values.get(key).is_some_and(|v| v.version == expected) {
            tables.values.remove(key);
            return Ok(true);
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spi::contract;

    fn values(name: &str) -> Arc<MemValues> {
        Arc::new(MemValues { store: super::super::store_named(name) })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn counters_and_versions_keep_the_contract() {
        contract::counters(values("values-counters").as_ref()).await;
        contract::counters_never_overlap(values("values-overlap")).await;
        contract::versions(values("values-versions").as_ref()).await;
    }
}
