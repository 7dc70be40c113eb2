//! Versioned values on ZooKeeper: one PERSISTENT node per value, `/polylock/values/<key>`
//! (keys escaped as for counters). The node's data is `0x01` followed by the value's bytes;
//! a deleted value leaves the node with no data (a tombstone), so the node is never deleted
//! and re-created. The version is the node's `mzxid`, the zxid of its last write: zxids are
//! global and only grow, so a value deleted and written again gets a greater version than any
//! it had, which the node's own `dataVersion` (reset by a re-create) would not give.
//!
//! A write reads the node, compares its `mzxid` with the version expected, and writes with
//! `setData` on the `dataVersion` it read (`BadVersion`: it moved meanwhile, so read again);
//! the first write of a key creates the node. Because the node is never re-created, its
//! `dataVersion` never repeats, so a write can never land on a node other than the one read.
//!
//! Watchers of a value are woken by a ZooKeeper watch on its node (an `exists` watch, which
//! fires on the node's creation, each `setData` and a session's end), set again each time it
//! fires, before the watcher reads.
//!
//! The store's clock (for idempotency records' times): ZooKeeper has no call that reads the
//! time, but every write stamps the node's `mtime` with the leader's clock. So a reading is
//! an empty `setData` on `/polylock/clock/now` (created on first use), taken at most every
//! `CLOCK_REFRESH` and carried forward on this process's monotonic clock in between.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use zookeeper_client as zk;

use super::counters::{make_parents, node_path, run};
use super::session::{acls, map_error};
use super::ZkBackend;
use crate::error::{Error, Result};
use crate::spi::{MeasuredClock, ValueChanges, VersionStore, Versioned, Write};

/// How long a reading of the leader's clock is carried forward before it is read again (a
/// reading is a write, so not too often).
const CLOCK_REFRESH: Duration = Duration::from_secs(10);

/// The first byte of a live value's data; a tombstone has none.
const LIVE: u8 = 1;

pub(super) struct ZkValues {
    pub backend: Arc<ZkBackend>,
    clock: MeasuredClock,
}

/// What a read of the node found.
enum Node {
    Missing,
    Deleted { data_version: i32 },
    Live { current: Versioned, data_version: i32 },
}

impl ZkValues {
    pub fn new(backend: Arc<ZkBackend>) -> ZkValues {
        ZkValues { backend, clock: MeasuredClock::new(CLOCK_REFRESH) }
    }

    /// The leader's clock, as the `mtime` it stamps on a write of the clock node.
    async fn server_millis(&self) -> Result<u64> {
        let path = node_path("clock", "now")?;
        let doing = "reading ZooKeeper's clock";
        let path = path.as_str();
        let stamped =
            match run(&self.backend, doing, |client| async move { client.set_data(path, &[], None).await }).await? {
                Ok(stat) => stat.mtime,
                Err(zk::Error::NoNode) => {
                    make_parents(&self.backend, path).await?;
                    let persistent = zk::CreateMode::Persistent.with_acls(acls(&self.backend.config));
                    let created = run(&self.backend, doing, |client| {
                        let persistent = persistent.clone();
                        async move { client.create(path, &[], &persistent).await }
                    })
                    .await?;
                    match created {
                        Ok((stat, _)) => stat.mtime,
                        // Created by another client meanwhile: stamp it.
                        Err(zk::Error::NodeExists) => {
                            run(&self.backend, doing, |client| async move { client.set_data(path, &[], None).await })
                                .await?
                                .map_err(|err| map_error(err, doing))?
                                .mtime
                        }
                        Err(err) => return Err(map_error(err, doing)),
                    }
                }
                Err(err) => return Err(map_error(err, doing)),
            };
        u64::try_from(stamped).map_err(|_| Error::backend(format!("ZooKeeper stamped a write at {stamped}ms")))
    }

    async fn read(&self, key: &str, path: &str) -> Result<Node> {
        // `sync` first: the server this session talks to catches up with the leader, so a value
        // another client wrote (and was told of) is read, as etcd's linearizable reads do. A
        // lagging follower otherwise answered an idempotency key completed a moment before as
        // still in progress (seen on the 3-member ensemble).
        let reading = |client: zk::Client| async move {
            client.sync(path).await?;
            client.get_data(path).await
        };
        match run(&self.backend, "reading a value", reading).await? {
            Ok((data, stat)) => Ok(match data.split_first() {
                Some((&LIVE, value)) => Node::Live {
                    current: Versioned { value: value.to_vec(), version: stat.mzxid as u64 },
                    data_version: stat.version,
                },
                _ => Node::Deleted { data_version: stat.version },
            }),
            Err(zk::Error::NoNode) => Ok(Node::Missing),
            Err(err) => Err(map_error(err, &format!("reading value '{key}'"))),
        }
    }

    /// `setData` on `data_version`: the new mzxid, `None` when the node moved meanwhile.
    async fn set(&self, path: &str, data: &[u8], data_version: i32, doing: &str) -> Result<Option<u64>> {
        match run(&self.backend, doing, |client| async move { client.set_data(path, data, Some(data_version)).await })
            .await?
        {
            Ok(stat) => Ok(Some(stat.mzxid as u64)),
            Err(zk::Error::BadVersion) => Ok(None),
            Err(err) => Err(map_error(err, doing)),
        }
    }

    /// Create the node with `data`: its mzxid, `None` when another writer created it first.
    async fn create(&self, path: &str, data: &[u8], doing: &str) -> Result<Option<u64>> {
        make_parents(&self.backend, path).await?;
        let persistent = zk::CreateMode::Persistent.with_acls(acls(&self.backend.config));
        let created = run(&self.backend, doing, |client| {
            let persistent = persistent.clone();
            async move { client.create(path, data, &persistent).await }
        })
        .await?;
        match created {
            Ok((stat, _)) => Ok(Some(stat.mzxid as u64)),
            Err(zk::Error::NodeExists) => Ok(None),
            Err(err) => Err(map_error(err, doing)),
        }
    }
}

#[async_trait]
impl VersionStore for ZkValues {
    async fn get(&self, key: &str) -> Result<Option<Versioned>> {
        let path = node_path("values", key)?;
        Ok(match self.read(key, &path).await? {
            Node::Live { current, .. } => Some(current),
            Node::Missing | Node::Deleted { .. } => None,
        })
    }

    async fn compare_and_set(&self, key: &str, expected: Option<u64>, value: &[u8]) -> Result<Write> {
        let path = node_path("values", key)?;
        let doing = format!("writing value '{key}'");
        let mut data = Vec::with_capacity(value.len() + 1);
        data.push(LIVE);
        data.extend_from_slice(value);
        loop {
            let written = match (self.read(key, &path).await?, expected) {
                (Node::Live { current, data_version }, Some(version)) if current.version == version => {
                    self.set(&path, &data, data_version, &doing).await?
                }
                (Node::Deleted { data_version }, None) => self.set(&path, &data, data_version, &doing).await?,
                (Node::Missing, None) => self.create(&path, &data, &doing).await?,
                (Node::Live { current, .. }, _) => return Ok(Write::Conflict { current: Some(current) }),
                (Node::Missing | Node::Deleted { .. }, Some(_)) => return Ok(Write::Conflict { current: None }),
            };
            if let Some(version) = written {
                return Ok(Write::Written { version });
            }
            // The node moved between the read and the write: read again and decide again.
        }
    }

    async fn delete(&self, key: &str, expected: u64) -> Result<bool> {
        let path = node_path("values", key)?;
        let doing = format!("deleting value '{key}'");
        loop {
            match self.read(key, &path).await? {
                Node::Live { current, data_version } if current.version == expected => {
                    if self.set(&path, &[], data_version, &doing).await?.is_some() {
                        return Ok(true);
                    }
                }
                _ => return Ok(false),
            }
        }
    }

    async fn now_millis(&self) -> Result<Option<u64>> {
        self.clock.now_millis(|| self.server_millis()).await.map(Some)
    }

    async fn changes(&self, key: &str) -> Result<Option<Box<dyn ValueChanges>>> {
        let path = node_path("values", key)?;
        let watcher = watch_node(&self.backend, &path).await?;
        Ok(Some(Box::new(ZkChanges { backend: self.backend.clone(), path, watcher: Some(watcher) })))
    }
}

/// Set an `exists` watch on `path` (whether or not the node is there yet).
async fn watch_node(backend: &ZkBackend, path: &str) -> Result<zk::OneshotWatcher> {
    let doing = "watching a value";
    let watched = run(backend, doing, |client| async move { client.check_and_watch_stat(path).await }).await?;
    watched.map(|(_, watcher)| watcher).map_err(|err| map_error(err, doing))
}

/// One value's node, watched again each time its watch fires.
struct ZkChanges {
    backend: Arc<ZkBackend>,
    path: String,
    watcher: Option<zk::OneshotWatcher>,
}

#[async_trait]
impl ValueChanges for ZkChanges {
    async fn changed(&mut self) -> Result<()> {
        if let Some(watcher) = self.watcher.take() {
            watcher.changed().await;
        }
        // Armed again before the watcher reads what changed.
        self.watcher = Some(watch_node(&self.backend, &self.path).await?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::zk::counters::tests::{open, run_prefix, server_urls};
    use crate::spi::contract::{self, Prefixed};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn values_keep_the_contract() {
        if crate::servers_off_in_tests() {
            return;
        }
        for (server, url) in server_urls() {
            contract::versions(&Prefixed::new(ZkValues::new(open(&url).await), run_prefix(server))).await;
        }
    }

    /// Bytes round-trip, an empty value is a value (not a tombstone), and two clients writing
    /// one value by compare-and-set, re-reading on conflict, lose no write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn bytes_round_trip_and_concurrent_writers_lose_nothing() {
        if crate::servers_off_in_tests() {
            return;
        }
        let url = &server_urls()[0].1;
        let values = ZkValues::new(open(url).await);
        let key = format!("{}bytes", run_prefix("single"));
        let bytes = [0u8, 255, 10, 13, 0, 1];
        let Write::Written { version } = values.compare_and_set(&key, None, &bytes).await.unwrap() else { panic!() };
        assert_eq!(values.get(&key).await.unwrap(), Some(Versioned { value: bytes.to_vec(), version }));
        let Write::Written { version: empty } = values.compare_and_set(&key, Some(version), b"").await.unwrap() else {
            panic!()
        };
        assert_eq!(values.get(&key).await.unwrap(), Some(Versioned { value: Vec::new(), version: empty }));
        assert!(matches!(
            values.compare_and_set(&key, None, b"x").await.unwrap(),
            Write::Conflict { current: Some(_) }
        ));

        let key = format!("{}count", run_prefix("single"));
        let mut tasks = Vec::new();
        for _ in 0..2 {
            let values = ZkValues::new(open(url).await);
            let key = key.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..15 {
                    loop {
                        let current = values.get(&key).await.unwrap();
                        let n: u64 = current.as_ref().map_or(0, |c| String::from_utf8_lossy(&c.value).parse().unwrap());
                        let next = (n + 1).to_string();
                        match values.compare_and_set(&key, current.map(|c| c.version), next.as_bytes()).await.unwrap() {
                            Write::Written { .. } => break,
                            Write::Conflict { .. } => continue,
                        }
                    }
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(values.get(&key).await.unwrap().unwrap().value, b"30");
    }
}
