//! Curator's InterProcessMutex algorithm (`LockInternals.attemptLock`), step by step:
//!
//! 1. Create `/<name>/_c_<uuid>-lock-` as EPHEMERAL_SEQUENTIAL, creating `/<name>` (as a
//!    container) if missing. If the connection drops during the create, the reply is lost
//!    but the node may exist: after reconnecting, look for a child with our uuid before
//!    creating another (Curator's `withProtection`).
//! 2. List the children and sort them by sequence. Lowest holds the lock.
//! 3. Otherwise watch the next-lower node only (getData with a watch, as Curator does) and go
//!    back to 2 when it changes. No polling: the watch is the only wake-up from outside.
//!    When the next-lower node is a hold of this same session, its release wakes the waiter
//!    directly, before the delete reaches the server (backend/successors.rs says why that is
//!    safe). Both nodes live in one session: if it ends before the delete lands, the waiter's
//!    hold is lost with it.
//! 4. A contender that gives up (deadline, cancellation) deletes its node, retrying until the
//!    delete succeeds or the session is gone (Curator's guaranteed delete).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use zookeeper_client as zk;

use super::path::{node_prefix, sorted_contenders};
use super::session::{map_error, Session};
use crate::error::{Error, Result};

/// Why a contention stopped without the lock.
pub(super) enum Stop {
    /// The deadline passed or the caller cancelled.
    GaveUp,
    /// The session ended (or our node disappeared): start again in a live session.
    Restart,
    Failed(Error),
}

impl From<Error> for Stop {
    fn from(err: Error) -> Self {
        Stop::Failed(err)
    }
}

pub(super) struct Held {
    /// Full path of our node (relative to the chroot).
    pub node: String,
    /// czxid of our node: every later holder's node was created later, so has a larger one.
    pub token: u64,
    /// When the listing that showed us first was sent: the lease runs from no earlier.
    pub at: Instant,
}

/// Run one ZooKeeper operation, riding out connection losses while the session lives.
/// Evaluates to the operation's result for any error other than a lost connection or an
/// ended session, so callers can match on `NoNode` and the like.
/// A dropped server connection surfaces as `ConnectionLoss`, or (when the socket fails under
/// a request, as when the server is killed) as a `Custom` error carrying the I/O error; both
/// are ridden out the same way, the latter a bounded number of times in a row.
macro_rules! retry_on_loss {
    ($session:expr, $give_up:expr, |$client:ident| $op:expr) => {{
        let mut io_failures = 0;
        loop {
            let $client = $session.client()?;
            match $op.await {
                Err(zk::Error::Custom(_)) if io_failures < MAX_IO_RETRIES => {
                    io_failures += 1;
                    if !$session.reconnected($give_up).await? {
                        break Err(if $give_up.is_cancelled() { Stop::GaveUp } else { Stop::Restart });
                    }
                }
                Err(zk::Error::ConnectionLoss) => {
                    if !$session.reconnected($give_up).await? {
                        break Err(if $give_up.is_cancelled() { Stop::GaveUp } else { Stop::Restart });
                    }
                }
                Err(zk::Error::SessionExpired | zk::Error::SessionMoved) => break Err(Stop::Restart),
                Err(zk::Error::ClientClosed) => {
                    break Err(Stop::Failed(Error::connection("the ZooKeeper client was closed")));
                }
                other => break Ok(other),
            }
        }
    }};
}

pub(super) use retry_on_loss;

/// How many `Custom` (I/O) failures in a row one operation rides out before it fails.
pub(super) const MAX_IO_RETRIES: u32 = 5;

/// One queue-shaped recipe of Curator's over the children of a lock path: how its node is
/// named, how the children are ordered, and which child a contender waits behind.
pub(super) struct Recipe {
    /// What follows the protection prefix: `lock-` (InterProcessMutex), `__READ__` or
    /// `__WRIT__` (InterProcessReadWriteLock), `lease-` (InterProcessSemaphoreV2's leases).
    pub lock_name: &'static str,
    /// The children, in the order the recipe ranks them.
    pub sort: fn(Vec<String>) -> Vec<String>,
    /// Given the ranked children and our index among them: `None` if we hold, else the
    /// index of the child to wait behind.
    pub wait_behind: fn(&[String], usize) -> Option<usize>,
    /// Whether the release of the child we wait behind, by an owner of this session, makes
    /// us the holder at once (true for the mutex, where we wait behind our predecessor
    /// only; backend/successors.rs).
    pub successor_holds: bool,
}

/// Curator's InterProcessMutex: lowest sequence holds, each waits behind its predecessor.
pub(super) const MUTEX: Recipe = Recipe {
    lock_name: super::path::LOCK_NAME,
    sort: |children| sorted_contenders(children).into_iter().map(|(_, node)| node).collect(),
    wait_behind: |_, index| index.checked_sub(1),
    successor_holds: true,
};

/// Contend for the lock at `path` in `session` until we hold it or `give_up` fires. A
/// `give_up` that has already fired means "try once": create, look, and leave if not first.
pub(super) async fn contend(
    session: &Arc<Session>,
    acls: zk::Acls<'static>,
    path: &str,
    recipe: &Recipe,
    data: &[u8],
    give_up: &CancellationToken,
) -> std::result::Result<Held, Stop> {
    let prefix = format!("{path}/{}", node_prefix(&uuid::Uuid::new_v4(), recipe.lock_name));
    let mut ours = Abandon::new(session, path, &prefix);
    let outcome = contend_as(&mut ours, session, acls, path, recipe, &prefix, data, give_up).await;
    if matches!(outcome, Err(Stop::GaveUp)) {
        // The caller stops here, and may exit the process next: delete our node before
        // answering, so that it does not stand in the queue until the session times out.
        ours.delete_now().await;
    }
    outcome
}

/// [`contend`], with `ours` recording our node for the cleanup.
#[allow(clippy::too_many_arguments)]
async fn contend_as(
    ours: &mut Abandon,
    session: &Arc<Session>,
    acls: zk::Acls<'static>,
    path: &str,
    recipe: &Recipe,
    prefix: &str,
    data: &[u8],
    give_up: &CancellationToken,
) -> std::result::Result<Held, Stop> {
    let at = Instant::now();
    let sequential = zk::CreateMode::EphemeralSequential;
    let (node, czxid, listed) = create_protected(session, acls, sequential, path, prefix, data, give_up).await?;
    ours.node = Some(node.clone());
    let name = node.rsplit('/').next().unwrap_or_default().to_string();
    let mut listed = listed.map(|children| (at, children));
    loop {
        let (at, children) = match listed.take() {
            Some(listed) => listed,
            None => {
                let at = Instant::now();
                match retry_on_loss!(session, give_up, |client| client.list_children(path))? {
                    Ok(children) => (at, children),
                    Err(zk::Error::NoNode) => return Err(Stop::Restart),
                    Err(err) => return Err(map_error(err, &format!("listing the contenders of {path}")).into()),
                }
            }
        };
        let contenders = (recipe.sort)(children);
        let Some(index) = contenders.iter().position(|n| *n == name) else {
            // Our node is gone (its session ended, or someone deleted it): start again.
            return Err(Stop::Restart);
        };
        let Some(behind) = (recipe.wait_behind)(&contenders, index) else {
            ours.kept = true;
            return Ok(Held { node, token: czxid, at });
        };
        if give_up.is_cancelled() {
            return Err(Stop::GaveUp);
        }
        let predecessor = format!("{path}/{}", contenders[behind]);
        // Set up before the watch, so that a release by a holder of this client in between
        // is not missed.
        let successor = recipe.successor_holds.then(|| session.successors.wait_behind(predecessor.clone()));
        let never = CancellationToken::new();
        let successor_released = successor.as_ref().map_or(&never, |successor| &successor.released);
        let watcher = match retry_on_loss!(session, give_up, |client| client.get_and_watch_data(&predecessor))? {
            Ok((_, _, watcher)) => watcher,
            Err(zk::Error::NoNode) => continue,
            Err(err) => return Err(map_error(err, &format!("watching {predecessor}")).into()),
        };
        tokio::select! {
            biased;
            _ = successor_released.cancelled() => {
                // Our predecessor held the lock, and its owner, in this client, has let go:
                // no node older than ours is left but its own, whose delete is on its way.
                if session.is_ended() {
                    return Err(Stop::Restart);
                }
                ours.kept = true;
                return Ok(Held { node, token: czxid, at: Instant::now() });
            }
            _ = watcher.changed() => {}
            _ = give_up.cancelled() => return Err(Stop::GaveUp),
        }
    }
}

/// Step 1, with Curator's protection against creating twice. Returns the node, its czxid
/// and, when the pipelined listing worked, the children as they were right after the create.
///
/// The listing is sent right behind the create, without waiting for its reply: ZooKeeper
/// answers a session's requests in order, so the listing sees our node, and an uncontended
/// acquisition costs one round trip instead of Curator's two.
///
/// `mode` is EPHEMERAL_SEQUENTIAL for every recipe's contender; EPHEMERAL only for the read
/// node of a write holder's downgrade, whose `prefix` is then its whole path.
pub(super) async fn create_protected(
    session: &Arc<Session>,
    acls: zk::Acls<'static>,
    mode: zk::CreateMode,
    parent: &str,
    prefix: &str,
    data: &[u8],
    give_up: &CancellationToken,
) -> std::result::Result<(String, u64, Option<Vec<String>>), Stop> {
    let sequential = matches!(mode, zk::CreateMode::EphemeralSequential);
    let mode = mode.with_acls(acls);
    let mut io_failures = 0;
    loop {
        let client = session.client()?;
        // Both requests are sent when these calls return, in this order.
        let create = client.create(prefix, data, &mode);
        let list = client.list_children(parent);
        let (created, listed) = tokio::join!(create, list);
        match created {
            Ok((stat, sequence)) => {
                let node = if sequential { format!("{prefix}{sequence}") } else { prefix.to_string() };
                return Ok((node, stat.czxid as u64, listed.ok()));
            }
            Err(zk::Error::NoNode) => {
                let parents = zk::CreateMode::Container.with_acls(acls);
                match retry_on_loss!(session, give_up, |client| client.mkdir(parent, &parents))? {
                    Ok(()) => {}
                    Err(err) => return Err(map_error(err, &format!("creating the lock path {parent}")).into()),
                }
            }
            Err(zk::Error::SessionExpired | zk::Error::SessionMoved) => return Err(Stop::Restart),
            Err(err) => {
                // A dropped connection is `ConnectionLoss`, or an I/O error (`Custom`) when the
                // socket fails under the request (the server killed: "Connection reset by
                // peer"); the latter a bounded number of times in a row, as retry_on_loss!.
                let dropped = match err {
                    zk::Error::ConnectionLoss => true,
                    zk::Error::Custom(_) if io_failures < MAX_IO_RETRIES => {
                        io_failures += 1;
                        true
                    }
                    _ => false,
                };
                if !dropped {
                    return Err(map_error(err, &format!("creating a contender node under {parent}")).into());
                }
                // The create may have happened: find it by our uuid once the connection is back.
                if !session.reconnected(give_up).await? {
                    return Err(if give_up.is_cancelled() { Stop::GaveUp } else { Stop::Restart });
                }
                if let Some((node, czxid)) = find_protected(session, parent, prefix, give_up).await? {
                    return Ok((node, czxid, None));
                }
            }
        }
    }
}

/// The node this contender created under `parent`, found by its protected prefix.
async fn find_protected(
    session: &Arc<Session>,
    parent: &str,
    prefix: &str,
    give_up: &CancellationToken,
) -> std::result::Result<Option<(String, u64)>, Stop> {
    let name_prefix = prefix.rsplit('/').next().unwrap_or_default();
    let children = match retry_on_loss!(session, give_up, |client| client.list_children(parent))? {
        Ok(children) => children,
        Err(zk::Error::NoNode) => return Ok(None),
        Err(err) => return Err(map_error(err, &format!("listing {parent}")).into()),
    };
    let Some(name) = children.into_iter().find(|c| c.starts_with(name_prefix)) else {
        return Ok(None);
    };
    let node = format!("{parent}/{name}");
    match retry_on_loss!(session, give_up, |client| client.check_stat(&node))? {
        Ok(Some(stat)) => Ok(Some((node, stat.czxid as u64))),
        Ok(None) => Ok(None),
        Err(err) => Err(map_error(err, &format!("reading {node}")).into()),
    }
}

/// Delete a node, retrying through connection losses until it is gone: `Ok(true)` if this
/// call deleted it, `Ok(false)` if it was already gone or its session ended (taking it along).
pub(super) async fn delete_node(session: &Session, node: &str) -> Result<bool> {
    let never = CancellationToken::new();
    let outcome: std::result::Result<std::result::Result<(), zk::Error>, Stop> =
        async { retry_on_loss!(session, &never, |client| client.delete(node, None)) }.await;
    match outcome {
        Ok(Ok(())) => Ok(true),
        Ok(Err(zk::Error::NoNode)) | Err(Stop::Restart | Stop::GaveUp) => Ok(false),
        Ok(Err(err)) => Err(map_error(err, &format!("deleting {node}"))),
        Err(Stop::Failed(err)) => Err(err),
    }
}

/// A contender's node that must not outlive its contention: dropped while still armed, it
/// deletes the node (or, if the create's reply was lost, whatever node carries our uuid) in
/// the background until that succeeds.
pub(super) struct Abandon {
    session: Arc<Session>,
    parent: String,
    prefix: String,
    /// The create's outcome, once known.
    node: Option<String>,
    /// Set when there is nothing to clean up: the node became the lock holder's, or it was
    /// deleted already (`delete_now`).
    pub kept: bool,
}

/// How long a contender that gives up waits for its node's delete before leaving the rest
/// to the background.
const DELETE_NOW_LIMIT: Duration = Duration::from_secs(2);

impl Abandon {
    /// Armed for the node to be created under `parent` with the protected `prefix`.
    pub fn new(session: &Arc<Session>, parent: &str, prefix: &str) -> Abandon {
        Abandon {
            session: session.clone(),
            parent: parent.to_string(),
            prefix: prefix.to_string(),
            node: None,
            kept: false,
        }
    }

    /// The create went through: this is the node to clean up.
    pub fn created(&mut self, node: &str) {
        self.node = Some(node.to_string());
    }

    /// Delete our node now, if it is known and the delete is quick; otherwise the drop goes on
    /// trying in the background.
    pub async fn delete_now(&mut self) {
        let Some(node) = self.node.clone() else { return };
        if let Ok(Ok(_)) = tokio::time::timeout(DELETE_NOW_LIMIT, delete_node(&self.session, &node)).await {
            self.kept = true; // nothing left to clean up
        }
    }
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        let (session, parent, prefix, node) = (
            self.session.clone(),
            std::mem::take(&mut self.parent),
            std::mem::take(&mut self.prefix),
            self.node.take(),
        );
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        runtime.spawn(async move {
            let node = match node {
                Some(node) => Some(node),
                None => {
                    let never = CancellationToken::new();
                    match find_protected(&session, &parent, &prefix, &never).await {
                        Ok(found) => found.map(|(node, _)| node),
                        Err(_) => None,
                    }
                }
            };
            if let Some(node) = node {
                let _ = delete_node(&session, &node).await;
            }
        });
    }
}
