//! Counters (Leaf's `leaf_alloc`, one row per tag) and versioned values (`polylock_values`)
//! in SQLite. Each
//! change is one IMMEDIATE transaction, durable (WAL, synchronous=NORMAL) before it returns.
//! The store's clock (for idempotency records' times) is the database's, `NOW_MS`, as the
//! locks' leases read it: on one host that is the host's clock, shared by every process
//! using the file.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::{SqliteBackend, NEXT_TOKEN, NOW_MS};
use crate::error::{Error, Result};
use crate::spi::{CounterStore, VersionStore, Versioned, Write};

pub(super) struct SqliteValues {
    pub(super) db: Arc<SqliteBackend>,
}

/// Counters and values live in SQLite's signed 64-bit integers.
fn as_i64(what: &str, n: u64) -> Result<i64> {
    i64::try_from(n)
        .map_err(|_| Error::invalid_argument(format!("{what} {n} is too large for sqlite (at most 2^63-1)")))
}

#[async_trait]
impl CounterStore for SqliteValues {
    /// One statement on Leaf's `leaf_alloc` row of the tag (`biz_tag` = the key), committed
    /// before the range is returned: `UPDATE ... RETURNING` of the new `max_id`, so no second
    /// reader can be handed the same range (Leaf's DAO commits before it reads back). A row
    /// polylock creates starts at 0 (a Leaf-created one at 1); the step column is set only
    /// on creation, as Leaf never writes it back either.
    async fn reserve(&self, key: &str, count: u64) -> Result<Range<u64>> {
        if count == 0 {
            return Err(Error::invalid_argument("a counter range must hold at least one value"));
        }
        let (key, count) = (key.to_string(), as_i64("a counter range of", count)?);
        let step = count.min(i64::from(i32::MAX));
        let end: Option<i64> = self
            .db
            .with_conn(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let end = tx
                    .prepare_cached(
                        "INSERT INTO leaf_alloc (biz_tag, max_id, step, description, update_time)
                         VALUES (?1, ?2, ?3, 'polylock', CURRENT_TIMESTAMP)
                         ON CONFLICT (biz_tag) DO UPDATE
                            SET max_id = max_id + ?2, update_time = CURRENT_TIMESTAMP
                            WHERE max_id <= 9223372036854775807 - ?2
                         RETURNING max_id",
                    )?
                    .query_row(params![key, count, step], |row| row.get(0))
                    .optional()?;
                tx.commit()?;
                Ok(end)
            })
            .await?;
        let end = end.ok_or_else(|| Error::invalid_argument("the counter cannot grow past 2^63-1"))? as u64;
        Ok(end - count as u64..end)
    }

    async fn current(&self, key: &str) -> Result<u64> {
        let key = key.to_string();
        let max_id: Option<i64> = self
            .db
            .with_conn(move |conn| {
                conn.prepare_cached("SELECT max_id FROM leaf_alloc WHERE biz_tag = ?1")?
                    .query_row(params![key], |row| row.get(0))
                    .optional()
            })
            .await?;
        Ok(max_id.unwrap_or(0).max(0) as u64)
    }
}

#[async_trait]
impl VersionStore for SqliteValues {
    async fn get(&self, key: &str) -> Result<Option<Versioned>> {
        let key = key.to_string();
        self.db
            .with_conn(move |conn| {
                conn.prepare_cached("SELECT value, version FROM polylock_values WHERE name = ?1")?
                    .query_row(params![key], |row| {
                        Ok(Versioned { value: row.get(0)?, version: row.get::<_, i64>(1)? as u64 })
                    })
                    .optional()
            })
            .await
    }

    async fn compare_and_set(&self, key: &str, expected: Option<u64>, value: &[u8]) -> Result<Write> {
        let expected = expected.map(|v| as_i64("a version", v)).transpose()?;
        let (key, value) = (key.to_string(), value.to_vec());
        self.db
            .with_conn(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let current = tx
                    .prepare_cached("SELECT value, version FROM polylock_values WHERE name = ?1")?
                    .query_row(params![key], |row| {
                        Ok(Versioned { value: row.get(0)?, version: row.get::<_, i64>(1)? as u64 })
                    })
                    .optional()?;
                if current.as_ref().map(|v| v.version as i64) != expected {
                    return Ok(Write::Conflict { current });
                }
                // Versions grow across deletes too: drawn from a counter that is never cleared.
                let version: i64 =
                    tx.prepare_cached(NEXT_TOKEN)?.query_row(params![format!("value:{key}")], |row| row.get(0))?;
                tx.prepare_cached(
                    "INSERT INTO polylock_values (name, value, version) VALUES (?1, ?2, ?3)
                     ON CONFLICT (name) DO UPDATE SET value = excluded.value, version = excluded.version",
                )?
                .execute(params![key, value, version])?;
                tx.commit()?;
                Ok(Write::Written { version: version as u64 })
            })
            .await
    }

    async fn delete(&self, key: &str, expected: u64) -> Result<bool> {
        let (key, expected) = (key.to_string(), as_i64("a version", expected)?);
        let deleted = self
            .db
            .with_conn(move |conn| {
                conn.prepare_cached("DELETE FROM polylock_values WHERE name = ?1 AND version = ?2")?
                    .execute(params![key, expected])
            })
            .await?;
        Ok(deleted == 1)
    }

    async fn now_millis(&self) -> Result<Option<u64>> {
        let now: i64 = self
            .db
            .with_conn_fast(|conn| conn.prepare_cached(&format!("SELECT {NOW_MS}"))?.query_row([], |row| row.get(0)))
            .await?;
        Ok(Some(now.max(0) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spi::contract;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn counters_and_versions_keep_the_contract() {
        let dir = tempfile::tempdir().unwrap();
        let open = |file: &str| {
            let mut url =
                crate::url::ConnectUrl::parse(&format!("sqlite://{}", dir.path().join(file).display())).unwrap();
            async move { Arc::new(SqliteValues { db: Arc::new(SqliteBackend::open(&mut url).await.unwrap()) }) }
        };
        contract::counters(open("counters.db").await.as_ref()).await;
        contract::counters_never_overlap(open("overlap.db").await).await;
        contract::versions(open("versions.db").await.as_ref()).await;
    }

    /// A tag Leaf created (max_id 1, its own step) hands out ranges from where Leaf stands,
    /// and polylock's ranges land in Leaf's row.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn counters_share_leafs_table() {
        let dir = tempfile::tempdir().unwrap();
        let mut url =
            crate::url::ConnectUrl::parse(&format!("sqlite://{}", dir.path().join("leaf.db").display())).unwrap();
        let values = SqliteValues { db: Arc::new(SqliteBackend::open(&mut url).await.unwrap()) };
        values
            .db
            .with_conn(|conn| {
                conn.execute("INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('leaf-test', 1, 2000, 'Test leaf Segment Mode Get Id')", [])
            })
            .await
            .unwrap();
        assert_eq!(values.current("leaf-test").await.unwrap(), 1);
        assert_eq!(values.reserve("leaf-test", 100).await.unwrap(), 1..101);
        let (max_id, step): (i64, i64) = values
            .db
            .with_conn(|conn| {
                conn.query_row("SELECT max_id, step FROM leaf_alloc WHERE biz_tag = 'leaf-test'", [], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })
            })
            .await
            .unwrap();
        assert_eq!((max_id, step), (101, 2000), "Leaf's step is left as Leaf set it");
        assert_eq!(values.reserve("new-tag", 10).await.unwrap(), 0..10, "a row polylock creates starts at 0");
    }
}
