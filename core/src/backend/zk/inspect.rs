//! Reading Curator's InterProcessMutex layout for the operator, whoever wrote it (polylock,
//! Curator): the contenders are the sequential nodes under the lock path, the lowest holds
//! (its czxid is the fencing token, its ephemeral owner the holder's session), the others
//! wait. Nodes have no TTL: a hold lasts while its session does.

use std::time::Duration;

use async_trait::async_trait;
use zookeeper_client as zk;

use super::path::{lock_path, sorted_contenders};
use super::session::map_error;
use super::ZkBackend;
use crate::error::Result;
use crate::spi::{InspectStore, ListedLock, LockKind, LockStatus};

impl ZkBackend {
    async fn children(&self, path: &str) -> Result<Vec<String>> {
        match self.session().await?.client()?.list_children(path).await {
            Ok(children) => Ok(children),
            Err(zk::Error::NoNode) => Ok(Vec::new()),
            Err(err) => Err(map_error(err, &format!("listing the children of {path}"))),
        }
    }

    /// `children`, or `None` for a node whose ACL keeps this session out (another
    /// application's, or a chroot with digest auth): not a lock an operator's list can show.
    async fn readable_children(&self, path: &str) -> Result<Option<Vec<String>>> {
        match self.session().await?.client()?.list_children(path).await {
            Ok(children) => Ok(Some(children)),
            Err(zk::Error::NoNode) => Ok(Some(Vec::new())),
            Err(zk::Error::NoAuth) => Ok(None),
            Err(err) => Err(map_error(err, &format!("listing the children of {path}"))),
        }
    }
}

#[async_trait]
impl InspectStore for ZkBackend {
    async fn status(&self, key: &str, _kind: LockKind) -> Result<LockStatus> {
        let path = lock_path(key)?;
        loop {
            let contenders = sorted_contenders(self.children(&path).await?);
            let mut status = LockStatus {
                layout: "Curator InterProcessMutex nodes",
                waiters: Some(contenders.len().saturating_sub(1) as u64),
                ..LockStatus::default()
            };
            let Some((_, holder)) = contenders.into_iter().next() else { return Ok(status) };
            let node = format!("{path}/{holder}");
            let stat = match self.session().await?.client()?.check_stat(&node).await {
                Ok(Some(stat)) => stat,
                Ok(None) | Err(zk::Error::NoNode) => continue, // released meanwhile: look again
                Err(err) => return Err(map_error(err, &format!("reading the holder's node {node}"))),
            };
            status.held = true;
            status.holder = Some(node);
            status.fencing_token = u64::try_from(stat.czxid).ok();
            status.remaining_lease = Some(Duration::MAX);
            status.details.push(("holder session", format!("0x{:x}", stat.ephemeral_owner)));
            return Ok(status);
        }
    }

    /// Top-level lock paths whose name starts with `prefix` and that have contenders (a
    /// prefix with '/' looks under its parent path). Read-write locks and semaphores keep
    /// other node names and are left out.
    async fn list(&self, prefix: &str) -> Result<Vec<ListedLock>> {
        let (parent, start) = match prefix.trim_start_matches('/').rsplit_once('/') {
            Some((parent, start)) => (format!("/{parent}"), start.to_string()),
            None => ("/".to_string(), prefix.trim_start_matches('/').to_string()),
        };
        let mut locks = Vec::new();
        for child in self.children(&parent).await? {
            if !child.starts_with(&start) || (parent == "/" && child == "zookeeper") {
                continue;
            }
            let path = if parent == "/" { format!("/{child}") } else { format!("{parent}/{child}") };
            let Some(contenders) = self.readable_children(&path).await? else { continue };
            if contenders.iter().any(|node| node.contains(super::path::LOCK_NAME)) {
                let key = if prefix.starts_with('/') { path } else { path[1..].to_string() };
                locks.push(ListedLock { key, kind: LockKind::Reentrant, held: true });
            }
        }
        Ok(locks)
    }
}
