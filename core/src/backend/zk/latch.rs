//! Countdown latches on ZooKeeper: one PERSISTENT node per latch, `/polylock/latches/<key>`
//! (keys escaped as for counters), whose data is the count in decimal; `0`, empty data or no
//! node is open. The node is never deleted, so every change is a `setData` on the
//! `dataVersion` just read (`BadVersion`: another writer got there first, so read again), and
//! the first count of a name creates it.
//!
//! A waiter reads the node with a data watch (`getData` watching, as Curator's recipes do)
//! and, while the count is above zero, sleeps until the watch fires, then reads again. A
//! session event fires the watch too, so a lost connection leads to a fresh read.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;
use zookeeper_client as zk;

use super::counters::{make_parents, node_path, run};
use super::session::{acls, map_error};
use super::ZkBackend;
use crate::error::{Error, Result};
use crate::spi::LatchStore;

pub(super) struct ZkLatches {
    pub backend: Arc<ZkBackend>,
}

/// A node's count and its `dataVersion`; `None` when there is no node.
type Node = Option<(u64, i32)>;

fn parse_count(key: &str, data: &[u8]) -> Result<u64> {
    if data.is_empty() {
        return Ok(0);
    }
    std::str::from_utf8(data)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| Error::backend(format!("latch '{key}' holds data that is not a count in decimal")))
}

impl ZkLatches {
    async fn read(&self, key: &str, path: &str) -> Result<Node> {
        match run(&self.backend, "reading a latch", |client| async move { client.get_data(path).await }).await? {
            Ok((data, stat)) => Ok(Some((parse_count(key, &data)?, stat.version))),
            Err(zk::Error::NoNode) => Ok(None),
            Err(err) => Err(map_error(err, &format!("reading latch '{key}'"))),
        }
    }

    /// `setData` on `data_version`; false when the node moved meanwhile.
    async fn set(&self, path: &str, count: u64, data_version: i32, doing: &str) -> Result<bool> {
        let data = count.to_string();
        let data = data.as_bytes();
        match run(&self.backend, doing, |client| async move { client.set_data(path, data, Some(data_version)).await })
            .await?
        {
            Ok(_) => Ok(true),
            Err(zk::Error::BadVersion) => Ok(false),
            Err(err) => Err(map_error(err, doing)),
        }
    }

    /// Create the node with `count`; false when another writer created it first.
    async fn create(&self, path: &str, count: u64, doing: &str) -> Result<bool> {
        make_parents(&self.backend, path).await?;
        let persistent = zk::CreateMode::Persistent.with_acls(acls(&self.backend.config));
        let data = count.to_string();
        let data = data.as_bytes();
        let created = run(&self.backend, doing, |client| {
            let persistent = persistent.clone();
            async move { client.create(path, data, &persistent).await }
        })
        .await?;
        match created {
            Ok(_) => Ok(true),
            Err(zk::Error::NodeExists) => Ok(false),
            Err(err) => Err(map_error(err, doing)),
        }
    }
}

#[async_trait]
impl LatchStore for ZkLatches {
    async fn try_set_count(&self, key: &str, count: u64) -> Result<bool> {
        let path = node_path("latches", key)?;
        let doing = format!("setting latch '{key}'");
        loop {
            let done = match self.read(key, &path).await? {
                Some((left, _)) if left > 0 => return Ok(false),
                Some((_, data_version)) => self.set(&path, count, data_version, &doing).await?,
                None => self.create(&path, count, &doing).await?,
            };
            if done {
                return Ok(true);
            }
        }
    }

    async fn count_down(&self, key: &str) -> Result<()> {
        let path = node_path("latches", key)?;
        let doing = format!("counting latch '{key}' down");
        loop {
            match self.read(key, &path).await? {
                Some((left, data_version)) if left > 0 => {
                    if self.set(&path, left - 1, data_version, &doing).await? {
                        return Ok(());
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    async fn count(&self, key: &str) -> Result<u64> {
        let path = node_path("latches", key)?;
        Ok(self.read(key, &path).await?.map_or(0, |(count, _)| count))
    }

    async fn await_zero(&self, key: &str, deadline: Option<Instant>, cancel: &CancellationToken) -> Result<bool> {
        let path = node_path("latches", key)?;
        let path = path.as_str();
        loop {
            let watched =
                run(&self.backend, "watching a latch", |client| async move { client.get_and_watch_data(path).await })
                    .await?;
            let watcher = match watched {
                Ok((data, _, watcher)) if parse_count(key, &data)? > 0 => watcher,
                Ok(_) | Err(zk::Error::NoNode) => return Ok(true),
                Err(err) => return Err(map_error(err, &format!("watching latch '{key}'"))),
            };
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) || cancel.is_cancelled() {
                return Ok(false);
            }
            let far = Instant::now() + std::time::Duration::from_secs(86400 * 365);
            tokio::select! {
                _ = watcher.changed() => {}
                _ = sleep_until(deadline.unwrap_or(far)) => return Ok(false),
                _ = cancel.cancelled() => return Ok(false),
            }
        }
    }
}
