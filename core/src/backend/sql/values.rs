//! Versioned values on PostgreSQL and MySQL/MariaDB: `polylock_values(name, value, version)`,
//! written with the `@Version` pattern of JPA, Rails and SQLAlchemy: `UPDATE polylock_values
//! SET value = ?, version = version + 1 WHERE name = ? AND version = ?`, one statement per
//! write. A delete sets `value` to NULL and keeps the row, so the row's version is a counter
//! that is never cleared: a value created again goes on from it (`version + 1`), and an old
//! version never matches again.
//!
//! Statements per call: `get` 1; a write over a version 1 (plus a read on conflict, for what is
//! there); a create 1 on PostgreSQL (an upsert that revives a deleted row), 1 on MySQL/MariaDB
//! for a name used before and 2 for a new one (a revive, then an INSERT); a delete 1.
//!
//! The store's clock (for idempotency records' times) is the database server's
//! (`clock_timestamp()` on PostgreSQL, `UNIX_TIMESTAMP(NOW(3))` on MySQL/MariaDB), read at most
//! every `CLOCK_REFRESH` and carried forward on this process's monotonic clock in between.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::dialect::{Dialect, VALUE_NAME_BYTES};
use super::store::SqlStore;
use crate::error::{Error, Result};
use crate::spi::{MeasuredClock, VersionStore, Versioned, Write};

/// How long a reading of the server's clock is carried forward before it is read again.
const CLOCK_REFRESH: Duration = Duration::from_secs(5);

/// How often a create that met a value which was then deleted before it could be read tries
/// again, before reporting a conflict with nothing there.
const CREATE_TRIES: usize = 3;

pub(crate) struct SqlValues<D: Dialect> {
    store: Arc<SqlStore<D>>,
    clock: MeasuredClock,
}

impl<D: Dialect> SqlValues<D> {
    pub fn new(store: Arc<SqlStore<D>>) -> Self {
        SqlValues { store, clock: MeasuredClock::new(CLOCK_REFRESH) }
    }

    fn check_name(name: &str) -> Result<()> {
        if name.len() > VALUE_NAME_BYTES {
            return Err(Error::invalid_argument(format!(
                "value name is {} bytes long; {} holds at most {VALUE_NAME_BYTES}",
                name.len(),
                D::DATABASE
            )));
        }
        Ok(())
    }

    async fn read(&self, name: &str) -> Result<Option<Versioned>> {
        let got = D::value_get(&self.store.shared, name).await.map_err(|e| self.store.err(e))?;
        got.map(|(value, version)| Ok(Versioned { value, version: as_u64(name, version)? })).transpose()
    }
}

/// Versions are BIGINTs that start at 1 and only grow.
fn as_i64(n: u64) -> Option<i64> {
    i64::try_from(n).ok()
}

fn as_u64(name: &str, version: i64) -> Result<u64> {
    u64::try_from(version).map_err(|_| Error::backend(format!("value '{name}' has a negative version ({version})")))
}

#[async_trait]
impl<D: Dialect> VersionStore for SqlValues<D> {
    async fn get(&self, key: &str) -> Result<Option<Versioned>> {
        Self::check_name(key)?;
        self.read(key).await
    }

    async fn compare_and_set(&self, key: &str, expected: Option<u64>, value: &[u8]) -> Result<Write> {
        Self::check_name(key)?;
        let shared = &self.store.shared;
        let Some(expected) = expected else {
            for _ in 0..CREATE_TRIES {
                if let Some(version) = D::value_create(shared, key, value).await.map_err(|e| self.store.err(e))? {
                    return Ok(Write::Written { version: as_u64(key, version)? });
                }
                if let Some(current) = self.read(key).await? {
                    return Ok(Write::Conflict { current: Some(current) });
                }
            }
            return Ok(Write::Conflict { current: None });
        };
        // A version no row can have (past 2^63-1) matches nothing.
        let written = match as_i64(expected) {
            Some(expected) => D::value_replace(shared, key, expected, value).await.map_err(|e| self.store.err(e))?,
            None => None,
        };
        Ok(match written {
            Some(version) => Write::Written { version: as_u64(key, version)? },
            None => Write::Conflict { current: self.read(key).await? },
        })
    }

    async fn delete(&self, key: &str, expected: u64) -> Result<bool> {
        Self::check_name(key)?;
        let Some(expected) = as_i64(expected) else { return Ok(false) };
        D::value_delete(&self.store.shared, key, expected).await.map_err(|e| self.store.err(e))
    }

    async fn now_millis(&self) -> Result<Option<u64>> {
        let read = || async {
            let now = D::server_millis(&self.store.shared).await.map_err(|e| self.store.err(e))?;
            u64::try_from(now).map_err(|_| Error::backend(format!("{} says its clock is at {now}ms", D::DATABASE)))
        };
        self.clock.now_millis(read).await.map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::sql::counters::tests::{mariadb_url, open, postgres_url, run_prefix};
    use crate::spi::contract::{self, Prefixed};

    async fn keeps_the_contract<D: Dialect>(url: &str) {
        let store = open::<D>(url).await;
        contract::versions(&Prefixed::new(SqlValues::new(store.clone()), run_prefix())).await;

        // Bytes round-trip, an empty value is a value, and names differ by case.
        let values = SqlValues::new(store.clone());
        let name = format!("{}Bytes", run_prefix());
        let bytes = [0u8, 255, 10, 13, 0, 1];
        let Write::Written { version } = values.compare_and_set(&name, None, &bytes).await.unwrap() else { panic!() };
        assert_eq!(values.get(&name).await.unwrap(), Some(Versioned { value: bytes.to_vec(), version }));
        let Write::Written { version: empty } = values.compare_and_set(&name, Some(version), b"").await.unwrap() else {
            panic!("{}", D::DATABASE)
        };
        assert_eq!(values.get(&name).await.unwrap(), Some(Versioned { value: Vec::new(), version: empty }));
        assert_eq!(values.get(&name.to_lowercase()).await.unwrap(), None, "{}", D::DATABASE);
        assert!(matches!(values.compare_and_set(&name, Some(u64::MAX), b"x").await.unwrap(), Write::Conflict { .. }));
        assert!(!values.delete(&name, u64::MAX).await.unwrap());
        let err = values.get(&"n".repeat(VALUE_NAME_BYTES + 1)).await.unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        store.shut_down().await;
    }

    /// Two stores (two pools) writing one value by compare-and-set, each re-reading on
    /// conflict: every write lands once, none is lost.
    async fn concurrent_writers_lose_nothing<D: Dialect>(url: &str) {
        let name = format!("{}count", run_prefix());
        let mut tasks = Vec::new();
        for _ in 0..2 {
            let values = SqlValues::new(open::<D>(url).await);
            let name = name.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..25 {
                    loop {
                        let current = values.get(&name).await.unwrap();
                        let n: u64 = current.as_ref().map_or(0, |c| String::from_utf8_lossy(&c.value).parse().unwrap());
                        let next = (n + 1).to_string();
                        match values.compare_and_set(&name, current.map(|c| c.version), next.as_bytes()).await.unwrap()
                        {
                            Write::Written { .. } => break,
                            Write::Conflict { .. } => continue,
                        }
                    }
                }
                values.store.shut_down().await;
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let values = SqlValues::new(open::<D>(url).await);
        assert_eq!(values.get(&name).await.unwrap().unwrap().value, b"50", "{}", D::DATABASE);
    }

    #[cfg(feature = "postgres")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_values_keep_the_contract() {
        keeps_the_contract::<crate::backend::sql::postgres::Pg>(&postgres_url()).await;
        concurrent_writers_lose_nothing::<crate::backend::sql::postgres::Pg>(&postgres_url()).await;
    }

    #[cfg(feature = "mysql")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mysql_values_keep_the_contract() {
        keeps_the_contract::<crate::backend::sql::mysql::MySqlDialect>(&mariadb_url()).await;
        concurrent_writers_lose_nothing::<crate::backend::sql::mysql::MySqlDialect>(&mariadb_url()).await;
    }
}
