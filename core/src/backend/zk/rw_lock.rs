//! Read-write locks that Curator's InterProcessReadWriteLock sees as its own.
//!
//! ```text
//! /<name>                                    the lock path (a container node)
//! /<name>/_c_<uuid>-__READ__<10-digit seq>   a reader, EPHEMERAL_SEQUENTIAL
//! /<name>/_c_<uuid>-__WRIT__<10-digit seq>   a writer, EPHEMERAL_SEQUENTIAL
//! /<name>/_c_<uuid>-__READ__<writer's seq>   a write holder's read (downgrade), EPHEMERAL
//! ```
//!
//! Children are ranked by their sequence only (what follows the last `__READ__` or
//! `__WRIT__`, Curator's `SortingLockInternalsDriver`). A writer holds when it is first, and
//! waits behind its predecessor; a reader holds when no writer ranks before it, and waits
//! behind the nearest writer before it (Curator watches the first; either way the reader
//! looks again when it goes). So the queue is FIFO: a reader that arrives after a waiting
//! writer waits behind it, and writers are never starved.
//!
//! A write holder that asks for the read side gets it at once, with the node Curator has
//! written since CURATOR-621: EPHEMERAL (not sequential), named with the writer's sequence,
//! so that it ranks beside the write node and keeps later writers out once the write side
//! is released.
//!
//! Fencing: a reader's node does not rank its grant among other readers' (readers behind one
//! writer are granted together, and a downgrade node is created after writers that wait for
//! it), so the token is not the node's czxid, as for the mutex, but the mzxid of a `setData`
//! on the lock path made right after the grant: a zxid, larger than every zxid before it,
//! so larger than every token granted earlier on this lock. Curator neither reads nor writes
//! the lock path's data.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use zookeeper_client as zk;

use super::path::{self, node_prefix};
use super::recipe::{self, create_protected, retry_on_loss, Abandon, Held, Recipe, Stop, MAX_IO_RETRIES};
use super::session::{acls, give_up_token, map_error, Session};
use super::{hold_of, release_hold, renew_hold, scopeguard, start_hold, ZkBackend};
use crate::error::{Error, Result};
use crate::owner::Owner;
use crate::spi::{AcquireRequest, Acquired, HeldLock, HoldStore, Release, Renewal, RwMode};

/// Curator's `InterProcessReadWriteLock.READ_LOCK_NAME`.
pub(super) const READ_NAME: &str = "__READ__";
/// Curator's `InterProcessReadWriteLock.WRITE_LOCK_NAME`.
pub(super) const WRITE_NAME: &str = "__WRIT__";

const READ: Recipe =
    Recipe { lock_name: READ_NAME, sort: rank, wait_behind: reader_waits_behind, successor_holds: false };
const WRITE: Recipe =
    Recipe { lock_name: WRITE_NAME, sort: rank, wait_behind: |_, index| index.checked_sub(1), successor_holds: false };

/// Curator's `fixForSorting`: what follows the last `__READ__`, then the last `__WRIT__`.
fn sequence_key(node: &str) -> &str {
    let after = |text: &'static str, node: &str| -> usize { node.rfind(text).map_or(0, |at| at + text.len()) };
    let node = &node[after(READ_NAME, node)..];
    &node[after(WRITE_NAME, node)..]
}

/// Every child, by sequence (ties, a write node and its downgrade node, by name).
fn rank(mut children: Vec<String>) -> Vec<String> {
    children.sort_by(|a, b| sequence_key(a).cmp(sequence_key(b)).then_with(|| a.cmp(b)));
    children
}

/// A reader holds when no writer ranks before it; else it waits behind the nearest one.
fn reader_waits_behind(children: &[String], index: usize) -> Option<usize> {
    children[..index].iter().rposition(|node| node.contains(WRITE_NAME))
}

/// The write node of a write hold of this client, for its owner's downgrade.
struct WriteNode {
    session: Arc<Session>,
    node: String,
}

pub(super) struct ZkRwLocks {
    backend: Arc<ZkBackend>,
    /// This client's write holds, by lock path and owner.
    writers: Mutex<HashMap<(String, Owner), WriteNode>>,
}

impl ZkRwLocks {
    pub(super) fn new(backend: Arc<ZkBackend>) -> Self {
        ZkRwLocks { backend, writers: Mutex::default() }
    }

    fn writers(&self) -> std::sync::MutexGuard<'_, HashMap<(String, Owner), WriteNode>> {
        self.writers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The owner's write node, if it holds the write side here and its session lives.
    fn write_node(&self, lock_path: &str, owner: Owner) -> Option<(Arc<Session>, String)> {
        let writers = self.writers();
        let write = writers.get(&(lock_path.to_string(), owner))?;
        (!write.session.is_ended()).then(|| (write.session.clone(), write.node.clone()))
    }

    /// The downgrade: the write holder's read node, `_c_<uuid>-__READ__<writer's seq>`,
    /// EPHEMERAL, granted at once. `Ok(None)` if the write node is no longer there.
    async fn downgrade(
        &self,
        session: &Arc<Session>,
        lock_path: &str,
        write_node: &str,
        data: &[u8],
        give_up: &CancellationToken,
    ) -> std::result::Result<Option<Held>, Stop> {
        let at = Instant::now();
        match retry_on_loss!(session, give_up, |client| client.check_stat(write_node))? {
            Ok(Some(stat)) if stat.ephemeral_owner == session.id.0 => {}
            Ok(_) => return Ok(None),
            Err(err) => return Err(map_error(err, &format!("checking the write node {write_node}")).into()),
        }
        let sequence = &write_node[write_node.len().saturating_sub(10)..];
        let node = format!("{lock_path}/{}{sequence}", node_prefix(&uuid::Uuid::new_v4(), READ_NAME));
        let mut ours = Abandon::new(session, lock_path, &node);
        let acls = acls(&self.backend.config);
        let (node, _, _) =
            create_protected(session, acls, zk::CreateMode::Ephemeral, lock_path, &node, data, give_up).await?;
        ours.created(&node);
        let token = stamp(session, lock_path).await?;
        ours.kept = true;
        Ok(Some(Held { node, token, at }))
    }

    async fn contend(
        &self,
        request: &AcquireRequest<RwMode>,
        lock_path: &str,
        give_up: &CancellationToken,
    ) -> Result<Option<(Arc<Session>, Held)>> {
        let data = request.owner.to_string();
        if request.kind == RwMode::Read {
            if let Some((session, write_node)) = self.write_node(lock_path, request.owner) {
                match self.downgrade(&session, lock_path, &write_node, data.as_bytes(), give_up).await {
                    Ok(Some(held)) => return Ok(Some((session, held))),
                    Ok(None) | Err(Stop::Restart) => {} // the write hold is gone: queue as anyone
                    Err(Stop::GaveUp) => return Ok(None),
                    Err(Stop::Failed(err)) => return Err(err),
                }
            }
        }
        let recipe = match request.kind {
            RwMode::Read => &READ,
            RwMode::Write => &WRITE,
        };
        loop {
            let session = self.backend.session().await?;
            let acls = acls(&self.backend.config);
            let outcome = match recipe::contend(&session, acls, lock_path, recipe, data.as_bytes(), give_up).await {
                Ok(held) => stamp(&session, lock_path).await.map(|token| Held { token, ..held }),
                Err(stop) => Err(stop),
            };
            match outcome {
                Ok(held) => return Ok(Some((session, held))),
                Err(Stop::GaveUp) => return Ok(None),
                Err(Stop::Restart) if give_up.is_cancelled() => return Ok(None),
                Err(Stop::Restart) if session.is_ended() => return Err(session_ended_while_waiting(request)),
                // Our node went from under us (deleted by someone else): queue again.
                Err(Stop::Restart) => continue,
                Err(Stop::Failed(err)) => return Err(err),
            }
        }
    }
}

/// The fencing token: the mzxid of a `setData` on the lock path, made after the grant.
/// Not bounded by the caller's wait: the hold is granted already.
async fn stamp(session: &Arc<Session>, lock_path: &str) -> std::result::Result<u64, Stop> {
    let never = CancellationToken::new();
    match retry_on_loss!(session, &never, |client| client.set_data(lock_path, &[], None))? {
        Ok(stat) => Ok(stat.mzxid as u64),
        Err(err) => Err(map_error(err, &format!("stamping the lock path {lock_path} for a fencing token")).into()),
    }
}

/// A waiter whose session ended stops: its node went with the session.
pub(super) fn session_ended_while_waiting<K: std::fmt::Display>(request: &AcquireRequest<K>) -> Error {
    Error::lost(format!(
        "the ZooKeeper session ended while '{}' was waiting for the {}; its place in the queue is gone",
        request.key, request.kind
    ))
}

#[async_trait]
impl HoldStore<RwMode> for ZkRwLocks {
    async fn acquire(&self, request: &AcquireRequest<RwMode>) -> Result<Option<Acquired>> {
        let lock_path = path::lock_path(&request.key)?;
        let (give_up, timer) = give_up_token(request.deadline, &request.cancel);
        let _stop_timer = scopeguard(move || timer.abort());
        let Some((session, held)) = self.contend(request, &lock_path, &give_up).await? else { return Ok(None) };
        if request.kind == RwMode::Write {
            let write = WriteNode { session: session.clone(), node: held.node.clone() };
            self.writers().insert((lock_path, request.owner), write);
        }
        Ok(Some(start_hold(request.lease, &request.lost, session, held)))
    }

    async fn renew(&self, held: &HeldLock<RwMode>, lease: Duration) -> Result<Renewal> {
        renew_hold(hold_of(held)?, lease).await
    }

    async fn release(&self, held: &HeldLock<RwMode>, holds_left: u32) -> Result<Release> {
        if holds_left > 0 {
            return Ok(Release::Released);
        }
        let hold = hold_of(held)?;
        if held.kind == RwMode::Write {
            let mut writers = self.writers();
            let key = (path::lock_path(&held.key)?, held.owner);
            if writers.get(&key).is_some_and(|write| write.node == hold.node) {
                writers.remove(&key);
            }
        }
        release_hold(hold).await
    }

    /// Whether a hold of `mode` is granted right now (any client's, Curator's included).
    async fn is_locked(&self, key: &str, mode: RwMode) -> Result<bool> {
        let lock_path = path::lock_path(key)?;
        let session = self.backend.session().await?;
        let children = match session.client()?.list_children(&lock_path).await {
            Ok(children) => rank(children),
            Err(zk::Error::NoNode) => return Ok(false),
            Err(err) => return Err(map_error(err, &format!("listing the contenders of {lock_path}"))),
        };
        Ok(match mode {
            RwMode::Write => children.first().is_some_and(|node| node.contains(WRITE_NAME)),
            RwMode::Read => children
                .iter()
                .enumerate()
                .any(|(index, node)| node.contains(READ_NAME) && reader_waits_behind(&children, index).is_none()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_rank_by_sequence_as_curators_sorting_driver() {
        let children = vec![
            "_c_b-__WRIT__0000000003".to_string(),
            "_c_a-__READ__0000000001".to_string(),
            "_c_d-__READ__0000000004".to_string(),
            "_c_c-__READ__0000000003".to_string(), // a downgrade node beside its write node
            "_c_e-__WRIT__0000000002".to_string(),
        ];
        let ranked = rank(children);
        assert_eq!(
            ranked,
            [
                "_c_a-__READ__0000000001",
                "_c_e-__WRIT__0000000002",
                "_c_b-__WRIT__0000000003",
                "_c_c-__READ__0000000003",
                "_c_d-__READ__0000000004"
            ]
        );
        assert_eq!(reader_waits_behind(&ranked, 0), None);
        assert_eq!(reader_waits_behind(&ranked, 4), Some(2), "the nearest writer before it");
        assert_eq!((WRITE.wait_behind)(&ranked, 1), Some(0), "a writer waits behind its predecessor");
        assert_eq!((WRITE.wait_behind)(&ranked, 0), None);
    }
}
