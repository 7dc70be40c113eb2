//! Questions about a lock whoever holds it (Redisson's `isLocked`, `remainTimeToLive`,
//! `forceUnlock`), answered from the contenders under the lock path, so they see Curator
//! holders as well as polylock's.

use std::time::Duration;

use zookeeper_client as zk;

use super::path::sorted_contenders;
use super::session::{map_error, Session};
use crate::error::Result;

/// The lock path's contenders, holder first; none if the path does not exist.
async fn contenders(session: &Session, lock_path: &str) -> Result<Vec<String>> {
    match session.client()?.list_children(lock_path).await {
        Ok(children) => Ok(sorted_contenders(children).into_iter().map(|(_, node)| node).collect()),
        Err(zk::Error::NoNode) => Ok(Vec::new()),
        Err(err) => Err(map_error(err, &format!("listing the contenders of {lock_path}"))),
    }
}

pub(super) async fn is_locked(session: &Session, lock_path: &str) -> Result<bool> {
    Ok(!contenders(session, lock_path).await?.is_empty())
}

/// ZooKeeper nodes have no TTL: a holder's node lasts as long as its session, which its
/// client keeps alive. So a held lock has no lease to report (`Duration::MAX`, the trait's
/// "kept without expiry"). Curator offers no such query; its locks have no lease either.
pub(super) async fn remaining_lease(session: &Session, lock_path: &str) -> Result<Option<Duration>> {
    Ok(is_locked(session, lock_path).await?.then_some(Duration::MAX))
}

/// Delete the holder's node (the lowest sequence). Its watcher, the next contender, wakes and
/// takes the lock as after a release. If the holder's node went meanwhile, the next one is
/// the holder now: look again.
pub(super) async fn force_unlock(session: &Session, lock_path: &str) -> Result<bool> {
    loop {
        let Some(holder) = contenders(session, lock_path).await?.into_iter().next() else { return Ok(false) };
        let node = format!("{lock_path}/{holder}");
        match session.client()?.delete(&node, None).await {
            Ok(()) => return Ok(true),
            Err(zk::Error::NoNode) => continue,
            Err(err) => return Err(map_error(err, &format!("deleting the holder's node {node}"))),
        }
    }
}
