//! One ZooKeeper session and what its state means for the holds made in it.
//!
//! The client library reconnects by itself while the session lives, and re-registers watches.
//! What polylock adds, as Curator's ConnectionStateListener does for its recipes:
//! - Disconnected: every hold of the session is *suspended* (Curator SUSPENDED). The
//!   ephemeral node may still be there, but nobody can tell until the connection is back.
//! - Connected again with the same session: suspension lifts (Curator RECONNECTED).
//! - Expired (by the server, or by the client after a whole session timeout without a
//!   server), auth failure or close: every hold is *lost* (Curator LOST); ZooKeeper has
//!   deleted, or is about to delete, the session's ephemeral nodes. The backend opens a new
//!   session for later acquisitions.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::task::AbortHandle;
use tokio::time::{sleep, Instant};
use tokio_util::sync::CancellationToken;
use zookeeper_client as zk;

use super::config::ZkConfig;
use super::spawner::on_tokio;
use crate::backend::successors::Successors;
use crate::error::{Error, Result};
use crate::spi::{LostNotifier, LostReason};

/// A pause before retrying an operation that failed on a lost connection, so a client that
/// is reconnecting is not flooded with requests that fail at once.
const RECONNECT_PAUSE: Duration = Duration::from_millis(20);

pub(super) struct Session {
    /// `None` once the backend is closed: dropping the last clone closes the session.
    client: Mutex<Option<zk::Client>>,
    pub id: zk::SessionId,
    registry: Arc<Registry>,
    /// Waiters in this session, by the node each waits behind (see backend/successors.rs).
    pub successors: Arc<Successors<String>>,
    monitor: AbortHandle,
    /// Cancelled by `close`: tasks that wait on a watch while the session lives (a leader's
    /// node watch) stop then, so that no clone of the client outlives the close and keeps
    /// the session, and its ephemeral nodes, alive until it times out.
    pub closed: CancellationToken,
}

/// The notifiers of the holds made in one session, and how the session stands.
#[derive(Default)]
struct Registry {
    inner: Mutex<RegistryInner>,
}

#[derive(Default)]
struct RegistryInner {
    holds: HashMap<u64, LostNotifier>,
    suspended: bool,
    /// Why the session ended, once it has.
    ended: Option<String>,
}

/// What a session state change is to report, once the registry's lock is let go.
enum SessionEvent {
    Disconnected { holds: usize },
    Reconnected { holds: usize },
    Ended { why: String },
}

impl Registry {
    fn inner(&self) -> std::sync::MutexGuard<'_, RegistryInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn apply(&self, id: zk::SessionId, state: zk::SessionState) {
        // Decided under the registry's lock; logged and marked lost after it is let go, since
        // a binding's log sink (Python's, which needs the GIL) must never run under a lock of
        // the core's.
        let mut ended: Vec<LostNotifier> = Vec::new();
        let event = {
            let mut inner = self.inner();
            if inner.ended.is_some() {
                return;
            }
            let holds = inner.holds.len();
            match state {
                zk::SessionState::Disconnected => {
                    let was_suspended = std::mem::replace(&mut inner.suspended, true);
                    inner.holds.values().for_each(|n| n.set_suspended(true));
                    (!was_suspended).then_some(SessionEvent::Disconnected { holds })
                }
                zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
                    let was_suspended = std::mem::replace(&mut inner.suspended, false);
                    inner.holds.values().for_each(|n| n.set_suspended(false));
                    was_suspended.then_some(SessionEvent::Reconnected { holds })
                }
                zk::SessionState::Expired | zk::SessionState::AuthFailed | zk::SessionState::Closed => {
                    let why = match state {
                        zk::SessionState::Expired => format!("ZooKeeper session {id} expired"),
                        zk::SessionState::AuthFailed => format!("ZooKeeper session {id} failed authentication"),
                        _ => format!("ZooKeeper session {id} was closed"),
                    };
                    ended = std::mem::take(&mut inner.holds).into_values().collect();
                    inner.ended = Some(why.clone());
                    Some(SessionEvent::Ended { why })
                }
            }
        };
        match event {
            None => {}
            Some(SessionEvent::Disconnected { holds }) => {
                tracing::warn!(op = "disconnect", backend = "zk", session = %id, holds,
                    "ZooKeeper connection lost; holds suspended until the session reconnects or expires");
            }
            Some(SessionEvent::Reconnected { holds }) => {
                crate::metrics::reconnected("zk");
                tracing::info!(op = "reconnect", backend = "zk", session = %id, holds,
                    "ZooKeeper session reconnected; its holds are intact");
            }
            Some(SessionEvent::Ended { why }) => {
                for notifier in ended {
                    notifier.set_suspended(false);
                    notifier.mark(LostReason::SessionEnded(why.clone()));
                }
                tracing::warn!(op = "session_ended", backend = "zk", session = %id, detail = %why,
                    "ZooKeeper session ended; its holds are lost");
            }
        }
    }
}

static NEXT_HOLD_ID: AtomicU64 = AtomicU64::new(1);

/// The process that opened this process image's first session. The client library's sockets
/// are polled by async-io's reactor thread, started once per process; a child forked after
/// that inherits the reactor's state but not the thread, so a session opened there would
/// wait for replies nothing reads and fail only at the connect timeout, as if no server ran.
static FIRST_SESSION_PROCESS: OnceLock<u32> = OnceLock::new();

/// A clear error in a child forked from a process that had opened a session already.
fn ensure_not_forked_after_first_session() -> Result<()> {
    let this_process = std::process::id();
    let first = *FIRST_SESSION_PROCESS.get_or_init(|| this_process);
    if first == this_process {
        return Ok(());
    }
    Err(Error::connection(format!(
        "cannot open a ZooKeeper session in process {this_process}: it was forked from process {first} after that \
         process had opened one, and the ZooKeeper client's I/O thread does not survive fork(). Open ZooKeeper \
         clients only after forking (in each worker), or start children with exec/spawn"
    )))
}

impl Session {
    pub async fn connect(config: &ZkConfig) -> Result<Arc<Session>> {
        ensure_not_forked_after_first_session()?;
        // Not `with_fail_eagerly`: it would also stop the library cycling through the hosts
        // when it reconnects; the connect timeout below bounds an unreachable URL instead.
        let mut connector = zk::Client::connector().with_session_timeout(config.session_timeout);
        if let Some(digest) = &config.digest {
            connector = connector.with_auth("digest", digest.as_bytes());
        }
        let unreachable = |err: zk::Error| {
            Error::connection(format!(
                "cannot open a ZooKeeper session at {}; check that the servers are up and reachable",
                config.redacted
            ))
            .with_source(err)
        };
        // The chroot may not exist yet: connect at the root, create it, then move into it.
        let client = tokio::time::timeout(config.connect_timeout, on_tokio(connector.connect(&config.hosts)))
            .await
            .map_err(|_| {
                Error::connection(format!(
                    "no ZooKeeper server at {} answered within {}ms",
                    config.redacted,
                    config.connect_timeout.as_millis()
                ))
            })?
            .map_err(unreachable)?;
        let client = if config.chroot.is_empty() {
            client
        } else {
            match client.mkdir(&config.chroot, &zk::CreateMode::Persistent.with_acls(acls(config))).await {
                Ok(()) => {}
                Err(err) => return Err(map_error(err, &format!("creating the chroot {}", config.chroot))),
            }
            client.chroot(config.chroot.clone()).map_err(|_| {
                Error::invalid_argument(format!("the chroot in {} is not a valid path", config.redacted))
            })?
        };
        let id = client.session_id();
        let registry = Arc::new(Registry::default());
        let mut states = client.state_watcher();
        let monitor = tokio::spawn({
            let registry = registry.clone();
            async move {
                loop {
                    let state = states.changed().await;
                    registry.apply(id, state);
                    if state.is_terminated() {
                        return;
                    }
                }
            }
        });
        Ok(Arc::new(Session {
            client: Mutex::new(Some(client)),
            id,
            registry,
            successors: Arc::default(),
            monitor: monitor.abort_handle(),
            closed: CancellationToken::new(),
        }))
    }

    /// A handle for one operation; a `Connection` error once the backend is closed.
    pub fn client(&self) -> Result<zk::Client> {
        self.client
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| Error::connection("the ZooKeeper client is closed"))
    }

    pub fn is_ended(&self) -> bool {
        match self.client.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            Some(client) => client.state().is_terminated(),
            None => true,
        }
    }

    /// Tie a hold's lost latch to this session; returns the id to [`Session::forget`] it by.
    pub fn register(&self, notifier: LostNotifier) -> u64 {
        let id = NEXT_HOLD_ID.fetch_add(1, Ordering::Relaxed);
        let mut inner = self.registry.inner();
        match &inner.ended {
            Some(why) => notifier.mark(LostReason::SessionEnded(why.clone())),
            None => {
                notifier.set_suspended(inner.suspended);
                inner.holds.insert(id, notifier);
            }
        }
        id
    }

    pub fn forget(&self, hold_id: u64) {
        self.registry.inner().holds.remove(&hold_id);
    }

    /// After an operation failed on a lost connection: wait until the session is connected
    /// again (`Ok(true)`), has ended (`Ok(false)`), or `give_up` fires (`Ok(false)`).
    pub async fn reconnected(&self, give_up: &CancellationToken) -> Result<bool> {
        let mut states = self.client()?.state_watcher();
        sleep(RECONNECT_PAUSE).await;
        loop {
            let state = states.state();
            if state.is_terminated() {
                return Ok(false);
            }
            if matches!(state, zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly) {
                return Ok(true);
            }
            tokio::select! {
                _ = states.changed() => {}
                _ = give_up.cancelled() => return Ok(false),
            }
        }
    }

    /// Close the session: ZooKeeper deletes its ephemeral nodes at once.
    pub fn close(&self) {
        self.closed.cancel();
        self.client.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.monitor.abort();
    }
}

/// The ACL of the nodes polylock creates: open, as Curator's default, unless the URL gives a
/// digest identity, in which case only that identity may touch them.
pub(super) fn acls(config: &ZkConfig) -> zk::Acls<'static> {
    if config.digest.is_some() {
        zk::Acls::creator_all()
    } else {
        zk::Acls::anyone_all()
    }
}

/// A token that fires at `deadline` (if any) or when `cancel` fires.
pub(super) fn give_up_token(deadline: Option<Instant>, cancel: &CancellationToken) -> (CancellationToken, AbortHandle) {
    let token = cancel.child_token();
    let timer = tokio::spawn({
        let token = token.clone();
        async move {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
            token.cancel();
        }
    });
    (token, timer.abort_handle())
}

/// Map a ZooKeeper error to polylock's kinds; `doing` says what was being done.
pub(super) fn map_error(err: zk::Error, doing: &str) -> Error {
    let message = format!("ZooKeeper failed while {doing}");
    match err {
        zk::Error::NoAuth | zk::Error::AuthFailed => Error::connection(format!(
            "ZooKeeper refused access while {doing}; check the user and password in the zk:// URL"
        ))
        .with_source(err),
        zk::Error::ConnectionLoss
        | zk::Error::SessionExpired
        | zk::Error::SessionMoved
        | zk::Error::ClientClosed
        | zk::Error::NoHosts
        | zk::Error::Timeout => Error::connection(message).with_source(err),
        _ => Error::backend(message).with_source(err),
    }
}
