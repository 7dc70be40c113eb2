//! Leader election in Curator's `LeaderLatch` layout, so a Curator `LeaderLatch` on the same
//! path and polylock take part in one election:
//!
//! ```text
//! /<name>                                   the latch path (a container node)
//! /<name>/_c_<uuid>-latch-<10-digit seq>    one EPHEMERAL_SEQUENTIAL node per candidate,
//!                                           holding the candidate's value (Curator: its id)
//! ```
//!
//! - The leader is the first node by sequence, and a candidate leads only while its own
//!   session owns that node (the ephemeral owner check of CURATOR-696). The others wait
//!   behind their predecessor (a getData watch, as Curator sets it); the contention loop is
//!   the mutex's (recipe.rs) with the latch's node name.
//! - The term (a fencing token) is the leader node's czxid: a later leader's node was created
//!   after every earlier leader's, and zxids only grow.
//! - Session states, as for a lock: a lost connection raises "suspended" (Curator SUSPENDED:
//!   not sure whether it still leads), a reconnect in the same session lowers it, and an
//!   expired session marks the leadership lost. A leader's node is watched while it leads: its
//!   delete from outside marks the leadership lost too.
//! - A campaign whose session ends, or whose node is deleted from outside, stops with `Lost`,
//!   as on etcd.
//! - Proclaim sets the node's data. Curator's LeaderLatch has no proclaim, and a LeaderLatch
//!   queued right behind a leader that proclaims loses its one-shot watch to the data change
//!   (it acts on NodeDeleted only), so it learns of the leader's end only at its next
//!   reconnect: do not proclaim where Curator candidates queue (the README says so).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::task::AbortHandle;
use tokio::time::{sleep, Instant};
use tokio_util::sync::CancellationToken;
use zookeeper_client as zk;

use super::path::lock_path;
use super::recipe::{contend, delete_node, Recipe, Stop};
use super::session::{acls, give_up_token, map_error, Session};
use super::ZkBackend;
use crate::error::{Error, Result};
use crate::spi::{
    CampaignRequest, Elected, ElectionStore, HeldLeadership, LeaderRecord, LeaderSink, LostNotifier, LostReason,
    Release, Renewal,
};

/// Curator's `LeaderLatch.LOCK_NAME`.
const LATCH_NAME: &str = "latch-";

/// Curator's LeaderLatch: first by sequence leads, each waits behind its predecessor.
const LATCH: Recipe = Recipe {
    lock_name: LATCH_NAME,
    sort: sorted_candidates,
    wait_behind: |_, index| index.checked_sub(1),
    // Waiters are woken by the server's watch only: a leadership is not a lock hold, and
    // resigning does not go through the hold release that wakes waiters of this session.
    successor_holds: false,
};

/// The sequence a candidate's node sorts by, as Curator's `standardFixForSorting`: what
/// follows the last `latch-`. `None` for nodes that are not candidates.
fn latch_sequence(node: &str) -> Option<u64> {
    let at = node.rfind(LATCH_NAME)? + LATCH_NAME.len();
    let digits = &node[at..];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The candidates among a latch path's children, the leader first.
fn sorted_candidates(children: Vec<String>) -> Vec<String> {
    let mut candidates: Vec<(u64, String)> =
        children.into_iter().filter_map(|node| latch_sequence(&node).map(|seq| (seq, node))).collect();
    candidates.sort();
    candidates.into_iter().map(|(_, node)| node).collect()
}

pub(super) struct ZkElections {
    backend: Arc<ZkBackend>,
}

/// One leadership: the leader node in its session, and the task watching it.
pub(super) struct ZkLeadership {
    pub node: String,
    pub term: u64,
    pub lost: LostNotifier,
    session: Arc<Session>,
    hold_id: u64,
    /// Cancelled by resign, so that the node's delete is not taken for a loss.
    resigned: CancellationToken,
    watcher: Mutex<Option<AbortHandle>>,
}

impl ZkLeadership {
    fn finish(&self) {
        self.session.forget(self.hold_id);
        if let Some(watcher) = self.watcher.lock().unwrap_or_else(|e| e.into_inner()).take() {
            watcher.abort();
        }
    }
}

impl Drop for ZkLeadership {
    fn drop(&mut self) {
        self.finish();
    }
}

impl ZkElections {
    pub(super) fn new(backend: Arc<ZkBackend>) -> Self {
        ZkElections { backend }
    }

    /// Stand for election `name` with `value` until leading, `deadline` or `cancel`
    /// (`None`). A deadline already past means "try once".
    async fn stand_for(
        &self,
        name: &str,
        value: &[u8],
        deadline: Option<Instant>,
        cancel: &CancellationToken,
        lost: &LostNotifier,
    ) -> Result<Option<Arc<ZkLeadership>>> {
        let path = lock_path(name)?;
        let (give_up, timer) = give_up_token(deadline, cancel);
        let _stop_timer = AbortOnDrop(timer);
        let session = self.backend.session().await?;
        let acls = acls(&self.backend.config);
        let held = match contend(&session, acls, &path, &LATCH, value, &give_up).await {
            Ok(held) => held,
            Err(Stop::GaveUp) => return Ok(None),
            Err(Stop::Restart) if session.is_ended() => return Err(session_ended(&session)),
            Err(Stop::Restart) if give_up.is_cancelled() => return Ok(None),
            Err(Stop::Restart) => {
                return Err(Error::lost(format!(
                    "the candidate node under {path} was deleted from outside while it waited to lead"
                )))
            }
            Err(Stop::Failed(err)) => return Err(err),
        };
        // Lead only while our own session owns the first node (CURATOR-696).
        let owner = session.client()?.check_stat(&held.node).await;
        match owner {
            Ok(Some(stat)) if stat.ephemeral_owner == session.id.0 => {}
            Ok(_) => {
                let _ = delete_node(&session, &held.node).await;
                return Err(Error::lost(format!("the leader node {} is not this session's", held.node)));
            }
            Err(err) => {
                let _ = delete_node(&session, &held.node).await;
                return Err(map_error(err, &format!("checking the leader node {}", held.node)));
            }
        }
        let hold_id = session.register(lost.clone());
        let leadership = Arc::new(ZkLeadership {
            node: held.node,
            term: held.token,
            lost: lost.clone(),
            session,
            hold_id,
            resigned: CancellationToken::new(),
            watcher: Mutex::new(None),
        });
        let watcher = tokio::spawn(watch_leader_node(Arc::downgrade(&leadership)));
        *leadership.watcher.lock().unwrap_or_else(|e| e.into_inner()) = Some(watcher.abort_handle());
        Ok(Some(leadership))
    }

    /// A new value on the leader's node; `Gone` (and the leadership marked lost) if the node
    /// is gone.
    async fn set_value(&self, leadership: &ZkLeadership, value: &[u8]) -> Result<Renewal> {
        if leadership.lost.is_lost() || leadership.session.is_ended() {
            return Ok(Renewal::Gone);
        }
        match leadership.session.client()?.set_data(&leadership.node, value, None).await {
            Ok(_) => Ok(Renewal::Renewed),
            Err(zk::Error::NoNode) => {
                leadership.lost.mark(LostReason::Taken);
                leadership.finish();
                Ok(Renewal::Gone)
            }
            Err(err) => Err(map_error(err, &format!("proclaiming on the leader node {}", leadership.node))),
        }
    }

    /// Delete the leader's node. True if this call deleted it.
    async fn remove_node(&self, leadership: &ZkLeadership) -> Result<bool> {
        leadership.resigned.cancel();
        leadership.finish();
        delete_node(&leadership.session, &leadership.node).await
    }

    /// The first candidate's value and czxid, whoever created it.
    async fn read_leader(&self, name: &str) -> Result<Option<LeaderRecord>> {
        let path = lock_path(name)?;
        let session = self.backend.session().await?;
        loop {
            let children = match session.client()?.list_children(&path).await {
                Ok(children) => children,
                Err(zk::Error::NoNode) => return Ok(None),
                Err(err) => return Err(map_error(err, &format!("listing the candidates of {path}"))),
            };
            let Some(first) = sorted_candidates(children).into_iter().next() else { return Ok(None) };
            match session.client()?.get_data(&format!("{path}/{first}")).await {
                Ok((value, stat)) => return Ok(Some(LeaderRecord { value, term: stat.czxid as u64 })),
                Err(zk::Error::NoNode) => continue, // it just left: look again
                Err(err) => return Err(map_error(err, &format!("reading the leader node under {path}"))),
            }
        }
    }

    /// Send the leader as it changes (a new leader, a proclaimed value; `None` while nobody
    /// leads) until `changes` is closed. Errors are ridden out: the leader is read again.
    async fn follow(&self, name: &str, changes: &LeaderSink) -> Result<()> {
        let path = lock_path(name)?;
        let mut last: Option<Option<LeaderRecord>> = None;
        loop {
            let round = tokio::select! {
                _ = changes.closed() => return Ok(()),
                round = self.observe_once(&path, changes, &mut last) => round,
            };
            match round {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(_) => sleep(Duration::from_millis(250)).await,
            }
        }
    }

    /// Read the leader with watches on the candidates and on the leader's node, send it if it
    /// changed, and wait for either watch. `Ok(false)` once nobody listens.
    async fn observe_once(
        &self,
        path: &str,
        changes: &LeaderSink,
        last: &mut Option<Option<LeaderRecord>>,
    ) -> Result<bool> {
        let session = self.backend.session().await?;
        let client = session.client()?;
        let mut send = |seen: Option<LeaderRecord>| {
            let changed = last.as_ref() != Some(&seen);
            *last = Some(seen.clone());
            async move { !changed || changes.send(Ok(seen)).await.is_ok() }
        };
        let (children, candidates_changed) = match client.list_and_watch_children(path).await {
            Ok(listed) => listed,
            Err(zk::Error::NoNode) => {
                // No latch path yet: wait for it to be created.
                let (stat, created) = client
                    .check_and_watch_stat(path)
                    .await
                    .map_err(|err| map_error(err, &format!("watching {path}")))?;
                if stat.is_none() {
                    if !send(None).await {
                        return Ok(false);
                    }
                    created.changed().await;
                }
                return Ok(true);
            }
            Err(err) => return Err(map_error(err, &format!("listing the candidates of {path}"))),
        };
        let Some(first) = sorted_candidates(children).into_iter().next() else {
            if !send(None).await {
                return Ok(false);
            }
            candidates_changed.changed().await;
            return Ok(true);
        };
        let (value, stat, value_changed) = match client.get_and_watch_data(&format!("{path}/{first}")).await {
            Ok(read) => read,
            Err(zk::Error::NoNode) => return Ok(true), // it just left: look again
            Err(err) => return Err(map_error(err, &format!("reading the leader node under {path}"))),
        };
        if !send(Some(LeaderRecord { value, term: stat.czxid as u64 })).await {
            return Ok(false);
        }
        tokio::select! {
            _ = candidates_changed.changed() => {}
            _ = value_changed.changed() => {}
        }
        Ok(true)
    }
}

#[async_trait]
impl ElectionStore for ZkElections {
    async fn campaign(&self, request: &CampaignRequest) -> Result<Option<Elected>> {
        let started = Instant::now();
        let value = request.value.as_slice();
        let stood = self.stand_for(&request.key, value, request.deadline, &request.cancel, &request.lost).await?;
        let Some(leadership) = stood else { return Ok(None) };
        Ok(Some(Elected { term: leadership.term, attempt_started: started, state: Some(leadership) }))
    }

    /// The session keeps the node: renewing checks it is still there, in our session.
    async fn renew(&self, held: &HeldLeadership, _lease: Duration) -> Result<Renewal> {
        let Some(leadership) = leadership_of(held) else { return Ok(Renewal::Gone) };
        if leadership.session.is_ended() || leadership.lost.is_lost() {
            return Ok(Renewal::Gone);
        }
        let stat = leadership
            .session
            .client()?
            .check_stat(&leadership.node)
            .await
            .map_err(|err| map_error(err, &format!("checking the leader node {}", leadership.node)))?;
        match stat {
            Some(stat) if stat.ephemeral_owner == leadership.session.id.0 => Ok(Renewal::Renewed),
            _ => Ok(Renewal::Gone),
        }
    }

    async fn proclaim(&self, held: &HeldLeadership, value: &[u8]) -> Result<Renewal> {
        let Some(leadership) = leadership_of(held) else { return Ok(Renewal::Gone) };
        self.set_value(&leadership, value).await
    }

    async fn resign(&self, held: &HeldLeadership) -> Result<Release> {
        let Some(leadership) = leadership_of(held) else { return Ok(Release::Gone) };
        Ok(if self.remove_node(&leadership).await? { Release::Released } else { Release::Gone })
    }

    async fn leader(&self, key: &str) -> Result<Option<LeaderRecord>> {
        self.read_leader(key).await
    }

    async fn observe(&self, key: &str, sink: &LeaderSink) -> Result<()> {
        self.follow(key, sink).await
    }
}

fn leadership_of(held: &HeldLeadership) -> Option<Arc<ZkLeadership>> {
    held.state.clone()?.downcast::<ZkLeadership>().ok()
}

fn session_ended(session: &Session) -> Error {
    Error::lost(format!("the ZooKeeper session {} of this candidate ended before it could lead", session.id))
}

struct AbortOnDrop(AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// While leading: wait for the leader node's delete (by anyone but our own resign) and mark
/// the leadership lost then. The session's own end is marked by the session (register).
async fn watch_leader_node(leadership: std::sync::Weak<ZkLeadership>) {
    let never = CancellationToken::new();
    loop {
        let Some(current) = leadership.upgrade() else { return };
        let session = current.session.clone();
        let node = current.node.clone();
        drop(current);
        let Ok(client) = session.client() else { return };
        let watched = client.check_and_watch_stat(&node).await;
        // Not held across the wait: the client's last clone going away is what closes the
        // session when the backend closes.
        drop(client);
        let gone = match watched {
            Ok((Some(stat), watcher)) if stat.ephemeral_owner == session.id.0 => {
                let event = tokio::select! {
                    event = watcher.changed() => event,
                    _ = session.closed.cancelled() => return,
                };
                if event.event_type != zk::EventType::NodeDeleted {
                    continue; // a proclaim, or a session event: look again
                }
                true
            }
            Ok(_) => true,
            Err(zk::Error::ConnectionLoss) => {
                if !session.reconnected(&never).await.unwrap_or(false) {
                    return;
                }
                false
            }
            Err(_) if session.is_ended() => return,
            Err(_) => {
                sleep(Duration::from_millis(250)).await;
                false
            }
        };
        if gone {
            let Some(current) = leadership.upgrade() else { return };
            if !current.resigned.is_cancelled() && !session.is_ended() {
                current.lost.mark(LostReason::Taken);
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_sort_by_their_latch_sequence_as_curator_does() {
        let children = vec![
            "_c_0b1e8d4e-6b55-4b8b-9b1a-2f4c8a9d0e11-latch-0000000012".to_string(),
            "_c_5b0d-latch-0000000003".into(),
            "_c_y-lock-0000000001".into(),
            "_c_x-latch-".into(),
        ];
        assert_eq!(
            sorted_candidates(children),
            ["_c_5b0d-latch-0000000003", "_c_0b1e8d4e-6b55-4b8b-9b1a-2f4c8a9d0e11-latch-0000000012"]
        );
    }
}
