//! Counters on PostgreSQL and MySQL/MariaDB are rows of Leaf's own table,
//! `leaf_alloc(biz_tag, max_id, step, description, update_time)` (created if missing), so a
//! Leaf server and polylock can hand out IDs of one tag side by side: each takes a range by
//! adding to `max_id`, and the range is `[max_id after - count, max_id after)`.
//!
//! A reservation is one statement that reads the new `max_id` back as it writes it, committed
//! before it returns (`INSERT … ON CONFLICT DO UPDATE … RETURNING max_id` on PostgreSQL,
//! `INSERT … ON DUPLICATE KEY UPDATE max_id = LAST_INSERT_ID(max_id + ?)` on MySQL/MariaDB):
//! never Leaf's commit-then-select, which can hand two servers the same range. A tag polylock
//! creates starts at 0 (its first range of 10 is 0..10) with `step` set to that first count
//! for Leaf's sake; a row Leaf created (`max_id` 1) just goes on from where it stands.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;

use super::dialect::Dialect;
use super::store::SqlStore;
use crate::error::{Error, Result};
use crate::spi::CounterStore;

/// Leaf's `biz_tag VARCHAR(128)`.
const TAG_CHARS: usize = 128;

pub(crate) struct SqlCounters<D: Dialect> {
    store: Arc<SqlStore<D>>,
}

impl<D: Dialect> SqlCounters<D> {
    pub fn new(store: Arc<SqlStore<D>>) -> Self {
        SqlCounters { store }
    }
}

fn check_tag(tag: &str) -> Result<()> {
    if tag.chars().count() > TAG_CHARS {
        return Err(Error::invalid_argument(format!(
            "counter '{tag}' is longer than {TAG_CHARS} characters, the most Leaf's leaf_alloc.biz_tag holds"
        )));
    }
    Ok(())
}

#[async_trait]
impl<D: Dialect> CounterStore for SqlCounters<D> {
    async fn reserve(&self, key: &str, count: u64) -> Result<Range<u64>> {
        if count == 0 {
            return Err(Error::invalid_argument("a counter range must hold at least one value"));
        }
        check_tag(key)?;
        let step = i64::try_from(count).map_err(|_| {
            Error::invalid_argument(format!(
                "a counter range of {count} is too large for {} (at most 2^63-1)",
                D::DATABASE
            ))
        })?;
        // Leaf's `step` is an INT; it only matters to a Leaf server sharing the tag.
        let leaf_step = i32::try_from(count).unwrap_or(i32::MAX);
        let end = D::reserve(&self.store.shared, key, step, leaf_step).await.map_err(|err| {
            if is_out_of_range(&err) {
                Error::invalid_argument(format!("counter '{key}' cannot grow by {count} past 2^63-1"))
            } else {
                self.store.err(err)
            }
        })?;
        let start = end.checked_sub(step).filter(|start| *start >= 0).ok_or_else(|| {
            Error::backend(format!("counter '{key}' stands at {end} in leaf_alloc after a reservation of {count}"))
        })?;
        Ok(start as u64..end as u64)
    }

    async fn current(&self, key: &str) -> Result<u64> {
        check_tag(key)?;
        let max_id = D::counter_max_id(&self.store.shared, key).await.map_err(|err| self.store.err(err))?;
        u64::try_from(max_id.unwrap_or(0))
            .map_err(|_| Error::backend(format!("counter '{key}' has a negative max_id in leaf_alloc")))
    }
}

/// `max_id` would pass 2^63-1: PostgreSQL's numeric_value_out_of_range, MySQL's
/// ER_DATA_OUT_OF_RANGE. The row is left as it was.
fn is_out_of_range(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => {
            matches!(db.code().as_deref(), Some("22003")) || db.message().contains("out of range")
        }
        _ => false,
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::spi::contract::{self, Prefixed};
    use crate::url::ConnectUrl;

    pub(in crate::backend::sql) fn postgres_url() -> String {
        std::env::var("POLYLOCK_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://polylock:polylock@127.0.0.1:15432/polylock".to_string())
    }

    pub(in crate::backend::sql) fn mariadb_url() -> String {
        std::env::var("POLYLOCK_TEST_MARIADB_URL")
            .unwrap_or_else(|_| "mysql://polylock:polylock@127.0.0.1:13306/polylock".to_string())
    }

    pub(in crate::backend::sql) async fn open<D: Dialect>(url: &str) -> Arc<SqlStore<D>> {
        Arc::new(SqlStore::<D>::open(&mut ConnectUrl::parse(url).unwrap()).await.unwrap())
    }

    /// A prefix of this run's own, so the contract's fixed keys start at zero on a shared server.
    pub(in crate::backend::sql) fn run_prefix() -> String {
        format!("t{}-{}:", std::process::id(), fastrand::u32(..))
    }

    async fn keeps_the_contract<D: Dialect>(url: &str) {
        let store = open::<D>(url).await;
        contract::counters(&Prefixed::new(SqlCounters::new(store.clone()), run_prefix())).await;
        contract::counters_never_overlap(Arc::new(Prefixed::new(SqlCounters::new(store.clone()), run_prefix()))).await;
        let err = SqlCounters::new(store.clone()).reserve(&"x".repeat(TAG_CHARS + 1), 1).await.unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        store.shut_down().await;
    }

    /// Two stores (two pools, as two processes would have) reserving at once on one tag: the
    /// ranges of both together never overlap and leave no gap.
    async fn two_stores_never_overlap<D: Dialect>(url: &str) {
        let tag = format!("{}both", run_prefix());
        let mut tasks = Vec::new();
        for _ in 0..2 {
            let counters = SqlCounters::new(open::<D>(url).await);
            let tag = tag.clone();
            tasks.push(tokio::spawn(async move {
                let mut ranges = Vec::new();
                for _ in 0..40 {
                    ranges.push(counters.reserve(&tag, 3).await.unwrap());
                }
                counters.store.shut_down().await;
                ranges
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.unwrap());
        }
        all.sort_by_key(|r| r.start);
        for pair in all.windows(2) {
            assert_eq!(pair[0].end, pair[1].start, "{}: {:?} then {:?}", D::DATABASE, pair[0], pair[1]);
        }
        assert_eq!(all.last().unwrap().end, 2 * 40 * 3, "{}", D::DATABASE);
    }

    /// A row as Leaf's users insert it (`max_id` 1, `step` 1000), reserved from by Leaf's own
    /// statement and by polylock in turn: every range follows the last, none overlaps.
    async fn shares_a_leaf_tag<D: Dialect>(
        url: &str,
        leaf_insert: impl AsyncFn(&SqlStore<D>, &str),
        leaf_segment: impl AsyncFn(&SqlStore<D>, &str) -> Range<u64>,
    ) {
        let store = open::<D>(url).await;
        let counters = SqlCounters::new(store.clone());
        let tag = format!("{}leaf", run_prefix());
        leaf_insert(&store, &tag).await;
        assert_eq!(counters.current(&tag).await.unwrap(), 1);
        assert_eq!(leaf_segment(&store, &tag).await, 1..1001);
        assert_eq!(counters.reserve(&tag, 10).await.unwrap(), 1001..1011);
        assert_eq!(leaf_segment(&store, &tag).await, 1011..2011);
        assert_eq!(counters.reserve(&tag, 1).await.unwrap(), 2011..2012);
        assert_eq!(counters.current(&tag).await.unwrap(), 2012);
        store.shut_down().await;
    }

    async fn refuses_to_pass_i64<D: Dialect>(url: &str) {
        let store = open::<D>(url).await;
        let counters = SqlCounters::new(store.clone());
        let tag = format!("{}big", run_prefix());
        let half = 1u64 << 62;
        assert_eq!(counters.reserve(&tag, half).await.unwrap(), 0..half);
        assert_eq!(counters.reserve(&tag, half - 1).await.unwrap(), half..2 * half - 1);
        let err = counters.reserve(&tag, 2).await.unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument, "{}: {err}", D::DATABASE);
        assert_eq!(counters.current(&tag).await.unwrap(), 2 * half - 1);
        store.shut_down().await;
    }

    #[cfg(feature = "postgres")]
    mod postgres {
        use super::*;
        use crate::backend::sql::postgres::Pg;

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn counters_keep_the_contract() {
            if crate::servers_off_in_tests() {
                return;
            }
            keeps_the_contract::<Pg>(&postgres_url()).await;
            two_stores_never_overlap::<Pg>(&postgres_url()).await;
            refuses_to_pass_i64::<Pg>(&postgres_url()).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn counters_share_a_leaf_tag() {
            if crate::servers_off_in_tests() {
                return;
            }
            shares_a_leaf_tag::<Pg>(
                &postgres_url(),
                async |store, tag| {
                    sqlx::query(
                        "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ($1, 1, 1000, 'leaf')",
                    )
                    .bind(tag)
                    .execute(&store.shared)
                    .await
                    .unwrap();
                },
                // Leaf's updateMaxIdAndGetLeafAlloc, its UPDATE and SELECT in one transaction.
                async |store, tag| {
                    let mut tx = store.shared.begin().await.unwrap();
                    sqlx::query("UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = $1")
                        .bind(tag)
                        .execute(&mut *tx)
                        .await
                        .unwrap();
                    let (max_id, step): (i64, i32) =
                        sqlx::query_as("SELECT max_id, step FROM leaf_alloc WHERE biz_tag = $1")
                            .bind(tag)
                            .fetch_one(&mut *tx)
                            .await
                            .unwrap();
                    tx.commit().await.unwrap();
                    (max_id - i64::from(step)) as u64..max_id as u64
                },
            )
            .await;
        }
    }

    #[cfg(feature = "mysql")]
    mod mysql {
        use super::*;
        use crate::backend::sql::mysql::MySqlDialect;

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn counters_keep_the_contract() {
            if crate::servers_off_in_tests() {
                return;
            }
            keeps_the_contract::<MySqlDialect>(&mariadb_url()).await;
            two_stores_never_overlap::<MySqlDialect>(&mariadb_url()).await;
            refuses_to_pass_i64::<MySqlDialect>(&mariadb_url()).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn counters_share_a_leaf_tag() {
            if crate::servers_off_in_tests() {
                return;
            }
            shares_a_leaf_tag::<MySqlDialect>(
                &mariadb_url(),
                async |store, tag| {
                    sqlx::query(
                        "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, 1, 1000, 'leaf')",
                    )
                    .bind(tag)
                    .execute(&store.shared)
                    .await
                    .unwrap();
                },
                async |store, tag| {
                    let mut tx = store.shared.begin().await.unwrap();
                    sqlx::query("UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?")
                        .bind(tag)
                        .execute(&mut *tx)
                        .await
                        .unwrap();
                    let (max_id, step): (i64, i32) =
                        sqlx::query_as("SELECT max_id, step FROM leaf_alloc WHERE biz_tag = ?")
                            .bind(tag)
                            .fetch_one(&mut *tx)
                            .await
                            .unwrap();
                    tx.commit().await.unwrap();
                    (max_id - i64::from(step)) as u64..max_id as u64
                },
            )
            .await;
        }
    }
}
