//! Counters on ZooKeeper: one PERSISTENT node per counter, `/polylock/counters/<key>`, whose
//! data is the counter's end in decimal. A reservation reads the node and writes `end + count`
//! with `setData` on the version it read, reading again after `BadVersion` (another writer got
//! there first), as Curator's DistributedAtomicLong does; a counter's first reservation
//! creates the node (`NodeExists`: read it and go on). ZooKeeper answers a write once a quorum
//! has logged it, so a range is durable before it is handed out.
//!
//! Keys are one level each: `%` and `/` are written `%25` and `%2F`, and a key of only dots
//! has them as `%2E`, so every key is one node name and two keys never share one. Lock names
//! under `polylock/` would share this tree; the nodes here are never deleted.

use std::future::Future;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use zookeeper_client as zk;

use super::path::check_path;
use super::recipe::{retry_on_loss, Stop, MAX_IO_RETRIES};
use super::session::{acls, map_error};
use super::ZkBackend;
use crate::error::{Error, Result};
use crate::spi::CounterStore;

/// How many times one operation starts over in a new session after its session ended.
const SESSION_RESTARTS: usize = 3;

/// The node of `key` under `/polylock/<area>`.
pub(super) fn node_path(area: &str, key: &str) -> Result<String> {
    let name = if !key.is_empty() && key.chars().all(|c| c == '.') {
        key.replace('.', "%2E")
    } else {
        key.replace('%', "%25").replace('/', "%2F")
    };
    let path = format!("/polylock/{area}/{name}");
    check_path(&path).map_err(|why| {
        Error::invalid_argument(format!("'{key}' cannot be used on ZooKeeper: its node '{path}' {why}"))
    })?;
    Ok(path)
}

/// Run one ZooKeeper call in the backend's live session, riding out a lost connection and
/// starting over in a new session when the old one ends. The call's own answer (a node that
/// is missing, a version that moved) is the caller's to read.
pub(super) async fn run<T, F, Fut>(backend: &ZkBackend, doing: &str, op: F) -> Result<std::result::Result<T, zk::Error>>
where
    F: Fn(zk::Client) -> Fut,
    Fut: Future<Output = std::result::Result<T, zk::Error>>,
{
    let never = CancellationToken::new();
    for _ in 0..SESSION_RESTARTS {
        let session = backend.session().await?;
        let answer: std::result::Result<_, Stop> = retry_on_loss!(session, &never, |client| op(client));
        match answer {
            Ok(answer) => return Ok(answer),
            Err(Stop::Failed(err)) => return Err(err),
            Err(Stop::Restart | Stop::GaveUp) => continue,
        }
    }
    Err(Error::connection(format!("ZooKeeper sessions kept ending while {doing}")))
}

/// Create `path`'s parents (PERSISTENT, so they never vanish under a node being created).
pub(super) async fn make_parents(backend: &ZkBackend, path: &str) -> Result<()> {
    let Some((parent, _)) = path.rsplit_once('/') else { return Ok(()) };
    let acls = acls(&backend.config);
    let persistent = zk::CreateMode::Persistent.with_acls(acls);
    match run(backend, "creating /polylock", |client| {
        let persistent = persistent.clone();
        async move { client.mkdir(parent, &persistent).await }
    })
    .await?
    {
        Ok(()) | Err(zk::Error::NodeExists) => Ok(()),
        Err(err) => Err(map_error(err, &format!("creating {parent}"))),
    }
}

pub(super) struct ZkCounters {
    pub backend: Arc<ZkBackend>,
}

fn parse_end(key: &str, data: &[u8]) -> Result<u64> {
    if data.is_empty() {
        return Ok(0);
    }
    std::str::from_utf8(data)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| Error::backend(format!("the ZooKeeper node of counter '{key}' does not hold a counter")))
}

impl ZkCounters {
    async fn read(&self, key: &str, path: &str) -> Result<Option<(u64, i32)>> {
        match run(&self.backend, "reading a counter", |client| async move { client.get_data(path).await }).await? {
            Ok((data, stat)) => Ok(Some((parse_end(key, &data)?, stat.version))),
            Err(zk::Error::NoNode) => Ok(None),
            Err(err) => Err(map_error(err, &format!("reading counter '{key}'"))),
        }
    }
}

#[async_trait]
impl CounterStore for ZkCounters {
    async fn reserve(&self, key: &str, count: u64) -> Result<Range<u64>> {
        if count == 0 {
            return Err(Error::invalid_argument("a counter range must hold at least one value"));
        }
        let path = node_path("counters", key)?;
        let path = path.as_str();
        let doing = format!("reserving a range of counter '{key}'");
        loop {
            let read = self.read(key, path).await?;
            let start = read.map_or(0, |(end, _)| end);
            let end = start
                .checked_add(count)
                .ok_or_else(|| Error::invalid_argument(format!("counter '{key}' cannot grow by {count} past u64")))?;
            let text = end.to_string();
            let text = text.as_bytes();
            let written = match read {
                Some((_, version)) => {
                    run(&self.backend, &doing, |client| async move {
                        client.set_data(path, text, Some(version)).await.map(drop)
                    })
                    .await?
                }
                None => {
                    make_parents(&self.backend, path).await?;
                    let persistent = zk::CreateMode::Persistent.with_acls(acls(&self.backend.config));
                    run(&self.backend, &doing, |client| {
                        let persistent = persistent.clone();
                        async move { client.create(path, text, &persistent).await.map(drop) }
                    })
                    .await?
                }
            };
            match written {
                Ok(()) => return Ok(start..end),
                // Another writer moved (or created) the counter first: read it again.
                Err(zk::Error::BadVersion | zk::Error::NodeExists) => continue,
                Err(err) => return Err(map_error(err, &doing)),
            }
        }
    }

    async fn current(&self, key: &str) -> Result<u64> {
        let path = node_path("counters", key)?;
        Ok(self.read(key, &path).await?.map_or(0, |(end, _)| end))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::spi::contract::{self, Prefixed};

    pub(in crate::backend::zk) fn server_urls() -> Vec<(&'static str, String)> {
        let env_url = |var: &str, default: &str| std::env::var(var).unwrap_or_else(|_| default.to_string());
        vec![
            ("single", env_url("POLYLOCK_TEST_ZOOKEEPER_URL", "zk://127.0.0.1:12181")),
            (
                "ensemble",
                env_url("POLYLOCK_TEST_ZOOKEEPER_ENSEMBLE_URL", "zk://127.0.0.1:12281,127.0.0.1:12282,127.0.0.1:12283"),
            ),
        ]
    }

    pub(in crate::backend::zk) async fn open(url: &str) -> Arc<ZkBackend> {
        Arc::new(ZkBackend::open(&mut crate::url::ConnectUrl::parse(url).unwrap()).await.unwrap())
    }

    /// A prefix of this run's own, so the contract's fixed keys start at zero on a shared server.
    pub(in crate::backend::zk) fn run_prefix(server: &str) -> String {
        format!("test-{server}-{}-{}:", std::process::id(), fastrand::u64(..))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn counters_keep_the_contract() {
        if crate::servers_off_in_tests() {
            return;
        }
        for (server, url) in server_urls() {
            let backend = open(&url).await;
            let counters = || Prefixed::new(ZkCounters { backend: backend.clone() }, run_prefix(server));
            contract::counters(&counters()).await;
            contract::counters_never_overlap(Arc::new(counters())).await;
        }
    }

    /// Two clients (two sessions, as two processes would have) reserving at once on one
    /// counter: together their ranges never overlap and leave no gap.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_clients_reserving_at_once_never_overlap() {
        if crate::servers_off_in_tests() {
            return;
        }
        let url = &server_urls()[0].1;
        let key = format!("{}both", run_prefix("single"));
        let mut tasks = Vec::new();
        for _ in 0..2 {
            let counters = ZkCounters { backend: open(url).await };
            let key = key.clone();
            tasks.push(tokio::spawn(async move {
                let mut ranges = Vec::new();
                for _ in 0..30 {
                    ranges.push(counters.reserve(&key, 3).await.unwrap());
                }
                ranges
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.unwrap());
        }
        all.sort_by_key(|r| r.start);
        for pair in all.windows(2) {
            assert_eq!(pair[0].end, pair[1].start, "{:?} then {:?}", pair[0], pair[1]);
        }
        assert_eq!(all.last().unwrap().end, 2 * 30 * 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn keys_are_one_node_each_and_bad_ones_are_refused() {
        if crate::servers_off_in_tests() {
            return;
        }
        assert_eq!(node_path("counters", "a/b%").unwrap(), "/polylock/counters/a%2Fb%25");
        assert_eq!(node_path("counters", "..").unwrap(), "/polylock/counters/%2E%2E");
        assert_ne!(node_path("counters", "a/b").unwrap(), node_path("counters", "a%2Fb").unwrap());
        let err = node_path("counters", "tab\there").unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);

        let counters = ZkCounters { backend: open(&server_urls()[0].1).await };
        let key = format!("{}a/b", run_prefix("single"));
        assert_eq!(counters.reserve(&key, u64::MAX - 1).await.unwrap(), 0..u64::MAX - 1);
        assert_eq!(counters.reserve(&key, 2).await.unwrap_err().kind(), crate::ErrorKind::InvalidArgument);
        assert_eq!(counters.current(&key).await.unwrap(), u64::MAX - 1);
    }
}
