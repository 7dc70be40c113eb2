//! Leader election in etcd's own `concurrency.Election` layout, so `etcdctl elect NAME VALUE`,
//! `etcdctl elect -l NAME` and Go services using `concurrency.NewElection(session, NAME)` take
//! part in the same election as polylock:
//!
//! - A candidate's key is `<name>/<session lease id in lowercase hex>`, written with the session
//!   lease by a transaction only if absent; its value is the candidate's value.
//! - The leader is the candidate key (`<name>/<lease hex>`, mutex.rs `is_contender`: a nested
//!   name's keys, `<name>/sub/..`, are not candidates, unlike in Go) with the lowest create
//!   revision. A candidate
//!   waits for the delete of the key just older than its own (`waitDeletes`), then looks again.
//! - Proclaim puts a new value on the leader's key only while it is still the key created at
//!   the leader's revision; resign deletes it under the same compare.
//! - `leader()` is the first key by create revision; observing watches that key's puts until
//!   its delete, then reads the first key again (Go's `Election.observe`).
//! - The term (a fencing token) is the leader key's create revision: every key older than the
//!   leader's was deleted before it led, and every later key is created later, so each new
//!   leader's term is greater than every earlier one's.
//!
//! Unlike Go's `Campaign`, a campaign whose session ends, or whose key is deleted from outside,
//! stops with `Lost`: it never reports leadership for a key that is gone. A leader's key is
//! watched while it leads, and its session's end or the key's delete marks the leadership lost.
//! The key takes a lane of the session pool for its prefix (session_pool.rs), as a lock key
//! does: a polylock mutex and an election on one name exclude each other, as in Go.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{
    Client, Compare, CompareOp, EventType, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse,
    WatchOptions,
};
use tokio::task::AbortHandle;
use tokio::time::{sleep, Instant};
use tokio_util::sync::CancellationToken;

use super::mutex::{
    call, contender_range, contender_range_start, delete_if_revision, is_contender, key_revision, wait_for_delete,
    Older, Standing,
};
use super::session::{Session, SessionHold};
use super::session_pool::PoolSlot;
use super::{map_error, sleep_until_some, EtcdBackend, RETRY_MAX, RETRY_MIN};
use crate::error::{Error, ErrorKind, Result};
use crate::spi::{
    CampaignRequest, Elected, ElectionStore, HeldLeadership, LeaderRecord, LeaderSink, LostNotifier, LostReason,
    Release, Renewal,
};

pub(super) struct EtcdElections {
    backend: Arc<EtcdBackend>,
}

/// How one campaign pass ended.
enum Campaign {
    Leads {
        revision: i64,
    },
    /// The deadline passed or the caller went away; our key is deleted.
    GaveUp,
    /// A key of this lane's session was left over from an earlier use: replaced, go again.
    Again,
}

impl EtcdElections {
    pub(super) fn new(backend: Arc<EtcdBackend>) -> Self {
        EtcdElections { backend }
    }

    fn client(&self) -> &Client {
        &self.backend.client
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
    ) -> Result<Option<Arc<EtcdLeadership>>> {
        let prefix = format!("{name}/");
        let mut pause = RETRY_MIN;
        loop {
            let give_up = async {
                tokio::select! {
                    _ = cancel.cancelled() => {}
                    _ = sleep_until_some(deadline) => {}
                }
            };
            let Some(lane) = self.backend.pool.take(&prefix, give_up).await? else { return Ok(None) };
            let session = lane.session.clone();
            let key = format!("{prefix}{:x}", session.lease_id);
            match self.pass(&prefix, &key, value, &session, deadline, cancel).await {
                Ok(Campaign::Leads { revision }) => {
                    let leadership = EtcdLeadership::start(self.client(), key, revision, lost.clone(), session, lane);
                    return Ok(Some(leadership));
                }
                Ok(Campaign::GaveUp) => return Ok(None),
                Ok(Campaign::Again) => continue,
                Err(err) if err.kind() != ErrorKind::Connection => return Err(err),
                Err(err) => {
                    // A member died or a leader is being elected: as the lock does, try again
                    // until the deadline; a lasting outage ends the session, and then Lost.
                    let retry_at = Instant::now() + pause;
                    if deadline.is_some_and(|d| d <= retry_at) || session.is_ended() {
                        return Err(err);
                    }
                    tokio::select! {
                        _ = cancel.cancelled() => return Ok(None),
                        _ = tokio::time::sleep_until(retry_at) => {}
                    }
                    pause = (pause * 2).min(RETRY_MAX);
                }
            }
        }
    }

    /// Write our key, then wait until no older key is left under the prefix and ours is still
    /// there, in this session.
    async fn pass(
        &self,
        prefix: &str,
        key: &str,
        value: &[u8],
        session: &Session,
        deadline: Option<Instant>,
        cancel: &CancellationToken,
    ) -> Result<Campaign> {
        let (revision, mut standing) = match stand(self.client(), prefix, key, value, session.lease_id).await {
            Ok(Stood::Written { revision, standing }) => (revision, standing),
            Ok(Stood::LeftOver { revision }) => {
                // An earlier candidacy or hold of this lane whose delete did not get through:
                // reusing it would repeat an old term, so replace it.
                delete_if_revision(self.client(), key, revision).await?;
                return Ok(Campaign::Again);
            }
            Err(err) if err.message().contains("lease not found") => {
                // Revoked or expired before the keep-alives noticed: this lane gets a new one.
                session.end("etcd says the session lease expired or was revoked".into());
                return Ok(Campaign::Again);
            }
            Err(err) => return Err(err),
        };
        loop {
            let older = match standing {
                Standing::Holds if !session.is_ended() => return Ok(Campaign::Leads { revision }),
                Standing::Holds => return Err(session_ended(session)),
                Standing::Vanished if session.is_ended() => return Err(session_ended(session)),
                Standing::Vanished => {
                    return Err(Error::lost(format!(
                        "the candidate key {key} was deleted from outside while it waited to lead"
                    )))
                }
                Standing::Behind(older) => older,
            };
            if deadline.is_some_and(|d| d <= Instant::now()) {
                self.backend.give_up(session, key, revision).await;
                return Ok(Campaign::GaveUp);
            }
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => None,
                _ = sleep_until_some(deadline) => None,
                _ = session.ended.cancelled() => return Err(session_ended(session)),
                next = self.backend.after_delete(prefix, key, revision, &older) => Some(next?),
            };
            let Some((next, _)) = next else {
                self.backend.give_up(session, key, revision).await;
                return Ok(Campaign::GaveUp);
            };
            standing = next;
        }
    }

    /// `Proclaim`: a new value on the leader's key, only if it is still the key created at the
    /// leader's revision; `Gone` (and the leadership marked lost) if it is not.
    async fn put_value(&self, leadership: &EtcdLeadership, value: &[u8]) -> Result<Renewal> {
        if leadership.lost.is_lost() {
            return Ok(Renewal::Gone);
        }
        let key = leadership.key.as_str();
        let txn = Txn::new()
            .when([Compare::create_revision(key, CompareOp::Equal, leadership.revision)])
            .and_then([TxnOp::put(key, value, Some(PutOptions::new().with_lease(leadership.session.lease_id)))]);
        let answer = call("proclaiming a new leader value", || {
            let (mut kv, txn) = (self.client().kv_client(), txn.clone());
            async move { kv.txn(txn).await }
        })
        .await?;
        if answer.succeeded() {
            return Ok(Renewal::Renewed);
        }
        leadership.lost.mark(LostReason::Taken);
        leadership.finish();
        Ok(Renewal::Gone)
    }

    /// `Resign`: delete the leader's key if it is still ours. True if this call deleted it.
    async fn delete_key(&self, leadership: &EtcdLeadership) -> Result<bool> {
        leadership.resigned.cancel();
        leadership.finish();
        match delete_if_revision(self.client(), &leadership.key, leadership.revision).await {
            Ok(deleted) => Ok(deleted),
            Err(err) => {
                // Keep trying in the background while the session lives: the next candidate
                // waits on this delete.
                self.backend.give_up(&leadership.session, &leadership.key, leadership.revision).await;
                Err(err)
            }
        }
    }

    /// `Observe`: send the leader as it changes (a new leader, a proclaimed value; `None` while
    /// nobody leads) until `changes` is closed. Connection errors are ridden out: after one,
    /// the leader is read again and sent if it changed meanwhile.
    async fn follow(&self, name: &str, changes: &LeaderSink) {
        let prefix = format!("{name}/");
        let mut last: Option<Option<LeaderRecord>> = None;
        let mut send = |seen: Option<LeaderRecord>| {
            let changed = last.as_ref() != Some(&seen);
            last = Some(seen.clone());
            let changes = changes.clone();
            async move { !changed || changes.send(Ok(seen)).await.is_ok() }
        };
        loop {
            let watched = tokio::select! {
                _ = changes.closed() => return,
                watched = self.observe_once(&prefix, &mut send) => watched,
            };
            match watched {
                Ok(true) => {}
                Ok(false) => return, // the receiver is gone
                Err(_) => sleep(RETRY_MAX).await,
            }
        }
    }

    /// One round of observing: read the first key (or wait for one), send it, then follow its
    /// puts until it is deleted. `Ok(false)` once nobody listens any more.
    async fn observe_once<F, Fut>(&self, prefix: &str, send: &mut F) -> Result<bool>
    where
        F: FnMut(Option<LeaderRecord>) -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let (key, seen, at) = match first_key(self.client(), prefix).await? {
            Some((key, seen, at)) => (key, seen, at),
            None => {
                let at = current_revision(self.client(), prefix).await?;
                if !send(None).await {
                    return Ok(false);
                }
                // The first put under the prefix after that read is the new leader's key.
                match first_put(self.client(), prefix, at).await? {
                    Some(found) => found,
                    None => return Ok(true), // the watch ended: read again
                }
            }
        };
        if !send(Some(seen.clone())).await {
            return Ok(false);
        }
        let options = WatchOptions::new().with_start_revision(at + 1);
        let mut stream = call("watching the election's leader key", || {
            let (mut watch, options, key) = (self.client().watch_client(), options.clone(), key.clone());
            async move { watch.watch(key, Some(options)).await }
        })
        .await?;
        loop {
            let Some(answer) =
                stream.message().await.map_err(|e| map_error("watching the election's leader key", e))?
            else {
                return Err(Error::connection("etcd closed the watch on the election's leader key"));
            };
            for event in answer.events() {
                if event.event_type() == EventType::Delete {
                    return Ok(true);
                }
                if let Some(kv) = event.kv() {
                    if !send(Some(LeaderRecord { value: kv.value().to_vec(), term: seen.term })).await {
                        return Ok(false);
                    }
                }
            }
            if answer.canceled() {
                return Ok(true); // compacted past our revision: read again
            }
        }
    }
}

#[async_trait]
impl ElectionStore for EtcdElections {
    async fn campaign(&self, request: &CampaignRequest) -> Result<Option<Elected>> {
        let started = Instant::now();
        let value = request.value.as_slice();
        let stood = self.stand_for(&request.key, value, request.deadline, &request.cancel, &request.lost).await?;
        let Some(leadership) = stood else { return Ok(None) };
        let term = leadership.term();
        Ok(Some(Elected { term, attempt_started: started, state: Some(leadership) }))
    }

    /// The session's keep-alives keep the key: renewing checks it is still ours.
    async fn renew(&self, held: &HeldLeadership, _lease: Duration) -> Result<Renewal> {
        let Some(leadership) = leadership_of(held) else { return Ok(Renewal::Gone) };
        if leadership.session.is_ended() || leadership.lost.is_lost() {
            return Ok(Renewal::Gone);
        }
        match key_revision(self.client(), &leadership.key).await? {
            Some(revision) if revision == leadership.revision => Ok(Renewal::Renewed),
            _ => Ok(Renewal::Gone),
        }
    }

    async fn proclaim(&self, held: &HeldLeadership, value: &[u8]) -> Result<Renewal> {
        let Some(leadership) = leadership_of(held) else { return Ok(Renewal::Gone) };
        self.put_value(&leadership, value).await
    }

    async fn resign(&self, held: &HeldLeadership) -> Result<Release> {
        let Some(leadership) = leadership_of(held) else { return Ok(Release::Gone) };
        Ok(if self.delete_key(&leadership).await? { Release::Released } else { Release::Gone })
    }

    /// `Leader`: the first key by create revision under the prefix, whoever wrote it.
    async fn leader(&self, key: &str) -> Result<Option<LeaderRecord>> {
        Ok(first_key(self.client(), &format!("{key}/")).await?.map(|(_, seen, _)| seen))
    }

    async fn observe(&self, key: &str, sink: &LeaderSink) -> Result<()> {
        self.follow(key, sink).await;
        Ok(())
    }
}

fn leadership_of(held: &HeldLeadership) -> Option<Arc<EtcdLeadership>> {
    held.state.clone()?.downcast::<EtcdLeadership>().ok()
}

fn session_ended(session: &Session) -> Error {
    Error::lost(format!("the etcd session of this candidate ended before it could lead ({})", session.end_reason()))
}

/// What writing a candidate key found.
enum Stood {
    /// Our key was written at `revision`; where it stands in the queue.
    Written { revision: i64, standing: Standing },
    /// A key of this session was there already, created at `revision`.
    LeftOver { revision: i64 },
}

/// Put our key with its value and the session lease if absent, and read the two newest keys
/// under the prefix, in one transaction: just written, ours is the newest, so the second
/// newest (if any) is the key to wait for.
async fn stand(client: &Client, prefix: &str, key: &str, value: &[u8], lease_id: i64) -> Result<Stood> {
    let newest = contender_range(prefix).with_sort(SortTarget::Create, SortOrder::Descend).with_keys_only();
    let start = contender_range_start(prefix);
    let txn = Txn::new()
        .when([Compare::create_revision(key, CompareOp::Equal, 0)])
        .and_then([
            TxnOp::put(key, value, Some(PutOptions::new().with_lease(lease_id))),
            TxnOp::get(start.as_str(), Some(newest)),
        ])
        .or_else([TxnOp::get(key, Some(GetOptions::new().with_keys_only()))]);
    let answer = call("writing the candidate key", || {
        let (mut kv, txn) = (client.kv_client(), txn.clone());
        async move { kv.txn(txn).await }
    })
    .await?;
    let at = answer.header().map(|h| h.revision()).ok_or_else(|| Error::backend("etcd sent no revision"))?;
    let unexpected = || Error::backend("etcd answered the candidate transaction with unexpected responses");
    let responses = answer.op_responses();
    if !answer.succeeded() {
        let Some(TxnOpResponse::Get(get)) = responses.first() else { return Err(unexpected()) };
        let kv =
            get.kvs().first().ok_or_else(|| Error::backend("the candidate key vanished inside its transaction"))?;
        return Ok(Stood::LeftOver { revision: kv.create_revision() });
    }
    let Some(TxnOpResponse::Get(get)) = responses.get(1) else { return Err(unexpected()) };
    let newest: Vec<(Vec<u8>, i64)> = get
        .kvs()
        .iter()
        .filter(|kv| is_contender(prefix, kv.key()))
        .take(2)
        .map(|kv| (kv.key().to_vec(), kv.create_revision()))
        .collect();
    let standing = match newest.as_slice() {
        [(ours, revision)] if ours == key.as_bytes() && *revision == at => Standing::Holds,
        [(ours, revision), (older, created)] if ours == key.as_bytes() && *revision == at && *created < at => {
            Standing::Behind(Older { key: older.clone(), created: *created, seen_at: at })
        }
        _ => return Err(Error::backend("etcd's candidate transaction did not show the key just written as newest")),
    };
    Ok(Stood::Written { revision: at, standing })
}

/// The first key by create revision under `prefix`, as the leader, and the revision read at.
async fn first_key(client: &Client, prefix: &str) -> Result<Option<(String, LeaderRecord, i64)>> {
    let first = contender_range(prefix).with_sort(SortTarget::Create, SortOrder::Ascend);
    let start = contender_range_start(prefix);
    let answer = call("reading the election's leader", || {
        let (mut kv, options, start) = (client.kv_client(), first.clone(), start.clone());
        async move { kv.get(start, Some(options)).await }
    })
    .await?;
    let at = answer.header().map(|h| h.revision()).ok_or_else(|| Error::backend("etcd sent no revision"))?;
    let Some(kv) = answer.kvs().iter().find(|kv| is_contender(prefix, kv.key())) else { return Ok(None) };
    let term = u64::try_from(kv.create_revision()).map_err(|_| Error::backend("etcd sent a negative revision"))?;
    let key = String::from_utf8_lossy(kv.key()).into_owned();
    Ok(Some((key, LeaderRecord { value: kv.value().to_vec(), term }, at)))
}

/// etcd's current revision, read under `prefix` (a count-only read).
async fn current_revision(client: &Client, prefix: &str) -> Result<i64> {
    let options = GetOptions::new().with_prefix().with_count_only();
    let answer = call("reading the election's revision", || {
        let (mut kv, options) = (client.kv_client(), options.clone());
        async move { kv.get(prefix, Some(options)).await }
    })
    .await?;
    answer.header().map(|h| h.revision()).ok_or_else(|| Error::backend("etcd sent no revision"))
}

/// Wait for the first put under `prefix` after revision `at`: the key, the leader it makes,
/// and the revision of the put. `None` if the watch was cancelled (compaction).
async fn first_put(client: &Client, prefix: &str, at: i64) -> Result<Option<(String, LeaderRecord, i64)>> {
    let options = WatchOptions::new().with_prefix().with_start_revision(at + 1);
    let mut stream = call("watching the election's keys", || {
        let (mut watch, options) = (client.watch_client(), options.clone());
        async move { watch.watch(prefix, Some(options)).await }
    })
    .await?;
    loop {
        let Some(answer) = stream.message().await.map_err(|e| map_error("watching the election's keys", e))? else {
            return Err(Error::connection("etcd closed the watch on the election's keys"));
        };
        for event in answer.events() {
            if event.event_type() != EventType::Put {
                continue;
            }
            if let Some(kv) = event.kv().filter(|kv| is_contender(prefix, kv.key())) {
                let term =
                    u64::try_from(kv.create_revision()).map_err(|_| Error::backend("etcd sent a negative revision"))?;
                let key = String::from_utf8_lossy(kv.key()).into_owned();
                return Ok(Some((key, LeaderRecord { value: kv.value().to_vec(), term }, kv.mod_revision())));
            }
        }
        if answer.canceled() {
            return Ok(None);
        }
    }
}

/// One leadership: the leader key, its create revision (the term), the session it lives in
/// and the lane it keeps taken; a task watches the key while it leads.
pub(super) struct EtcdLeadership {
    pub key: String,
    pub revision: i64,
    pub lost: LostNotifier,
    pub session: Arc<Session>,
    /// Cancelled by resign, so that the key's delete is not taken for a loss.
    resigned: CancellationToken,
    state: Mutex<LeadershipState>,
}

#[derive(Default)]
struct LeadershipState {
    lane: Option<PoolSlot>,
    watcher: Option<AbortHandle>,
    session_entry: Option<u64>,
}

impl EtcdLeadership {
    fn start(
        client: &Client,
        key: String,
        revision: i64,
        lost: LostNotifier,
        session: Arc<Session>,
        lane: PoolSlot,
    ) -> Arc<EtcdLeadership> {
        let leadership = Arc::new(EtcdLeadership {
            key,
            revision,
            lost,
            session: session.clone(),
            resigned: CancellationToken::new(),
            state: Mutex::new(LeadershipState { lane: Some(lane), ..LeadershipState::default() }),
        });
        let watcher = tokio::spawn(watch_leader_key(client.clone(), Arc::downgrade(&leadership)));
        leadership.state().watcher = Some(watcher.abort_handle());
        // Remembered last: a session that has ended already marks the leadership lost at once.
        let entry = session.remember(leadership.clone() as Arc<dyn SessionHold>);
        leadership.state().session_entry = Some(entry);
        leadership
    }

    /// The term: the leader key's create revision.
    pub(super) fn term(&self) -> u64 {
        self.revision as u64
    }

    fn state(&self) -> std::sync::MutexGuard<'_, LeadershipState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The leadership is over: stop watching, leave the session's list, free the lane.
    fn finish(&self) {
        let (lane, watcher, entry) = {
            let mut state = self.state();
            (state.lane.take(), state.watcher.take(), state.session_entry.take())
        };
        if let Some(watcher) = watcher {
            watcher.abort();
        }
        if let Some(entry) = entry {
            self.session.forget(entry);
        }
        drop(lane);
    }
}

impl Drop for EtcdLeadership {
    fn drop(&mut self) {
        if let Some(watcher) = self.state().watcher.take() {
            watcher.abort();
        }
    }
}

impl SessionHold for EtcdLeadership {
    fn is(&self, key: &str, revision: i64) -> bool {
        self.key == key && self.revision == revision
    }

    fn session_ended(&self, why: &str) {
        self.lost.mark(LostReason::SessionEnded(why.to_string()));
        self.finish();
    }

    fn finish(&self) {
        EtcdLeadership::finish(self)
    }
}

/// While leading: wait for the leader key's delete (by anyone but our own resign) and mark the
/// leadership lost then. A failed watch is followed by a read of the key.
async fn watch_leader_key(client: Client, leadership: std::sync::Weak<EtcdLeadership>) {
    let Some((key, revision)) = leadership.upgrade().map(|l| (l.key.clone(), l.revision)) else { return };
    loop {
        let present = key_revision(&client, &key).await;
        let Some(current) = leadership.upgrade() else { return };
        match present {
            Ok(Some(found)) if found == revision => {}
            Ok(_) => {
                if !current.resigned.is_cancelled() {
                    current.lost.mark(LostReason::Taken);
                    current.finish();
                }
                return;
            }
            Err(_) if current.session.is_ended() => return, // the session's end marks it
            Err(_) => {
                drop(current);
                sleep(RETRY_MAX).await;
                continue;
            }
        }
        drop(current);
        let older = Older { key: key.as_bytes().to_vec(), created: revision, seen_at: 0 };
        if wait_for_delete(&client, &older).await.is_err() {
            sleep(Duration::from_millis(100)).await;
        }
    }
}
