//! The two store interfaces beside holds, for the ID and "do it once" work built on the
//! engine's stores: counters that hand out ranges (segment IDs, worker-lease epochs) and
//! versioned values written by compare-and-set (idempotency records, worker high-water marks,
//! fenced writes). Both keep their data past any lease: nothing here expires.

use std::ops::Range;

use async_trait::async_trait;

use crate::error::Result;

/// Named counters that only grow. A reserved range is durable in the store before
/// `reserve` returns, so no two callers, of any process, are ever handed overlapping
/// ranges (gaps are possible, repeats never).
#[async_trait]
pub trait CounterStore: Send + Sync + 'static {
    /// Reserve the next `count` values of counter `key` (created at zero on first use): the
    /// range `[previous end, previous end + count)`. `count` is at least one.
    async fn reserve(&self, key: &str, count: u64) -> Result<Range<u64>>;

    /// Where counter `key` stands (the end of the last range handed out; 0 if never used).
    async fn current(&self, key: &str) -> Result<u64>;
}

/// A value and its version. Versions of one key only grow; equality is the only comparison
/// callers should rely on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned {
    pub value: Vec<u8>,
    pub version: u64,
}

/// What a conditional write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// Written; the value now has this version.
    Written { version: u64 },
    /// Not written: the value was not as expected. `current` is what is there (`None`: no
    /// value).
    Conflict { current: Option<Versioned> },
}

/// Named values written by compare-and-set on a version that only grows.
#[async_trait]
pub trait VersionStore: Send + Sync + 'static {
    async fn get(&self, key: &str) -> Result<Option<Versioned>>;

    /// Write `value` if the current version is `expected` (`None`: only if there is no value).
    async fn compare_and_set(&self, key: &str, expected: Option<u64>, value: &[u8]) -> Result<Write>;

    /// Remove the value if its version is `expected`; whether it was removed.
    async fn delete(&self, key: &str, expected: u64) -> Result<bool>;

    /// The store's own clock, in milliseconds since the Unix epoch, for records that expire
    /// (idempotency): `None` (the default) when the store has no clock to read, and callers
    /// use their own.
    async fn now_millis(&self) -> Result<Option<u64>> {
        Ok(None)
    }

    /// Wake-ups for the writes and deletes of `key`, armed before this returns, so nothing
    /// written after it is missed: `None` (the default) when the store cannot notify, and
    /// watchers poll instead.
    async fn changes(&self, key: &str) -> Result<Option<Box<dyn ValueChanges>>> {
        let _ = key;
        Ok(None)
    }
}

/// Wake-ups for one value's writes, from a store that can notify (etcd watches, ZooKeeper
/// data watches, Redis pub/sub, PostgreSQL `LISTEN`). A wake-up says only that the value may
/// have changed: watchers read it again, so wake-ups that come together, or one with no
/// change behind it (a lost connection, after which anything may have happened), are fine.
#[async_trait]
pub trait ValueChanges: Send {
    /// Returns at the next wake-up since the last call (or since this was made).
    async fn changed(&mut self) -> Result<()>;
}

/// A store's clock as a backend that can read it hands it to `VersionStore::now_millis`:
/// read from the server now and then, and carried forward between reads on this process's
/// monotonic clock, so a record's times cost no round trip of their own and no process's
/// wall clock enters them. A reading is placed at the middle of its round trip, so it is off
/// by at most half of it; it is taken again once `refresh` old, which bounds how far the two
/// clocks' rates can drift apart and follows a server whose clock was stepped.
#[cfg(any(feature = "redis", feature = "zookeeper", feature = "postgres", feature = "mysql"))]
pub struct MeasuredClock {
    refresh: std::time::Duration,
    /// (when on the monotonic clock, the server's milliseconds then).
    last: std::sync::Mutex<Option<(std::time::Instant, u64)>>,
}

#[cfg(any(feature = "redis", feature = "zookeeper", feature = "postgres", feature = "mysql"))]
impl MeasuredClock {
    pub const fn new(refresh: std::time::Duration) -> MeasuredClock {
        MeasuredClock { refresh, last: std::sync::Mutex::new(None) }
    }

    /// The server's milliseconds now: carried forward from the last reading while it is
    /// fresh, else read again with `read`.
    pub async fn now_millis<F, Fut>(&self, read: F) -> Result<u64>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<u64>>,
    {
        let last = *self.last.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, server_ms)) = last {
            let age = at.elapsed();
            if age < self.refresh {
                return Ok(server_ms.saturating_add(age.as_millis() as u64));
            }
        }
        let sent = std::time::Instant::now();
        let server_ms = read().await?;
        let at = sent + sent.elapsed() / 2;
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some((at, server_ms));
        Ok(server_ms.saturating_add(at.elapsed().as_millis() as u64))
    }
}

#[cfg(test)]
pub(crate) mod contract {
    //! What every `CounterStore` and `VersionStore` must do, run by each backend's tests.
    use super::*;

    /// A backend's store with every key under a prefix of this run's own, so the contract's
    /// fixed keys start afresh on a server other runs share.
    pub struct Prefixed<S> {
        inner: S,
        prefix: String,
    }

    impl<S> Prefixed<S> {
        pub fn new(inner: S, prefix: impl Into<String>) -> Prefixed<S> {
            Prefixed { inner, prefix: prefix.into() }
        }

        fn key(&self, key: &str) -> String {
            format!("{}{key}", self.prefix)
        }
    }

    #[async_trait]
    impl<S: CounterStore> CounterStore for Prefixed<S> {
        async fn reserve(&self, key: &str, count: u64) -> Result<Range<u64>> {
            self.inner.reserve(&self.key(key), count).await
        }

        async fn current(&self, key: &str) -> Result<u64> {
            self.inner.current(&self.key(key)).await
        }
    }

    #[async_trait]
    impl<S: VersionStore> VersionStore for Prefixed<S> {
        async fn get(&self, key: &str) -> Result<Option<Versioned>> {
            self.inner.get(&self.key(key)).await
        }

        async fn compare_and_set(&self, key: &str, expected: Option<u64>, value: &[u8]) -> Result<Write> {
            self.inner.compare_and_set(&self.key(key), expected, value).await
        }

        async fn delete(&self, key: &str, expected: u64) -> Result<bool> {
            self.inner.delete(&self.key(key), expected).await
        }

        async fn now_millis(&self) -> Result<Option<u64>> {
            self.inner.now_millis().await
        }

        async fn changes(&self, key: &str) -> Result<Option<Box<dyn ValueChanges>>> {
            self.inner.changes(&self.key(key)).await
        }
    }

    pub async fn counters(store: &dyn CounterStore) {
        assert_eq!(store.current("ids").await.unwrap(), 0);
        assert_eq!(store.reserve("ids", 10).await.unwrap(), 0..10);
        assert_eq!(store.reserve("ids", 5).await.unwrap(), 10..15);
        assert_eq!(store.reserve("other", 3).await.unwrap(), 0..3);
        assert_eq!(store.current("ids").await.unwrap(), 15);
        assert!(store.reserve("ids", 0).await.is_err(), "an empty range is refused");
    }

    /// Many concurrent reservers are never handed overlapping ranges.
    pub async fn counters_never_overlap(store: std::sync::Arc<dyn CounterStore>) {
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let mut ranges = Vec::new();
                for _ in 0..20 {
                    ranges.push(store.reserve("shared", 7).await.unwrap());
                }
                ranges
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.unwrap());
        }
        all.sort_by_key(|range| range.start);
        for pair in all.windows(2) {
            assert!(pair[0].end <= pair[1].start, "{:?} overlaps {:?}", pair[0], pair[1]);
        }
        assert_eq!(all.last().unwrap().end, 8 * 20 * 7);
    }

    pub async fn versions(store: &dyn VersionStore) {
        assert_eq!(store.get("v").await.unwrap(), None);
        let Write::Written { version: first } = store.compare_and_set("v", None, b"one").await.unwrap() else {
            panic!("creating a new value")
        };
        let conflict = store.compare_and_set("v", None, b"again").await.unwrap();
        assert_eq!(conflict, Write::Conflict { current: Some(Versioned { value: b"one".to_vec(), version: first }) });
        let Write::Written { version: second } = store.compare_and_set("v", Some(first), b"two").await.unwrap() else {
            panic!("writing on the current version")
        };
        assert!(second > first);
        let stale = store.compare_and_set("v", Some(first), b"stale").await.unwrap();
        assert!(matches!(stale, Write::Conflict { current: Some(Versioned { version, .. }) } if version == second));
        assert!(!store.delete("v", first).await.unwrap(), "a stale delete removes nothing");
        assert!(store.delete("v", second).await.unwrap());
        assert_eq!(store.get("v").await.unwrap(), None);
        // Versions keep growing across a delete, so an old version never matches again.
        let Write::Written { version: third } = store.compare_and_set("v", None, b"three").await.unwrap() else {
            panic!("re-creating")
        };
        assert!(third > second, "{third} after {second}");
    }
}
