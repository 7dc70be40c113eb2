//! Leader elections: candidates campaign with a value, one of them leads at a time, and each
//! new leader's term is a fencing token greater than every earlier leader's.
//!
//! Two layouts, chosen by the backend:
//! - Its own ([`ElectionStore`]: etcd's `concurrency.Election`, Curator's `LeaderLatch`): the
//!   store campaigns; this file renews every third of the watchdog lease, turns a refused
//!   renewal into `Lost`, and withdraws a candidacy whose caller went away.
//! - Everywhere else (mem, SQLite, Redis, PostgreSQL, MySQL): the leader holds the lock of
//!   the election's name (ShedLock's lease row on SQL, else the backend's default mutex)
//!   through the engine, so its watchdog, lost latch and cancellation rules are the lock's,
//!   and the term is that hold's fencing token. Beside it, the versioned value
//!   `<name>:leader` is the leader's record: term, holder and value (see [`encode_record`]).
//!   A record counts only while the lock is held, since a leader whose lease ran out leaves
//!   its record behind; a record with a higher term is never overwritten by a lower one.
//!
//! Either way a leadership that is lost is lost for good: `is_leader` never turns true again.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::guard::Guard;
use crate::engine::{AcquireOptions, Engine, Handle};
use crate::error::{Error, ErrorKind, Result};
use crate::owner::{next_handle_local_id, Owner};
use crate::spi::{
    lost_latch, poll_leader, CampaignRequest, ElectionStore, HeldLeadership, LeaderRecord, LockKind, LostNotifier,
    LostReason, LostWatch, Primitive, Release, Renewal, VersionStore, Write,
};

/// The suffix of the leader's record beside the lock, on lease-backed elections.
const RECORD_SUFFIX: &str = super::name::LEADER_RECORD_SUFFIX;

/// A named election as seen by this client. Cheap to clone; campaigning takes part.
#[derive(Clone)]
pub struct Election {
    engine: Arc<Engine>,
    name: Arc<str>,
    key: Arc<str>,
    layout: Layout,
    /// Cancelled when the client closes.
    closing: CancellationToken,
}

#[derive(Clone)]
enum Layout {
    Native(Arc<dyn ElectionStore>),
    Leased { versions: Arc<dyn VersionStore>, kind: LockKind },
}

impl fmt::Debug for Election {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let layout = match self.layout {
            Layout::Native(_) => "backend's own",
            Layout::Leased { .. } => "lock and record",
        };
        f.debug_struct("Election").field("name", &self.name).field("layout", &layout).finish()
    }
}

impl Election {
    pub(crate) fn new(engine: Arc<Engine>, name: &str, key: String) -> Result<Election> {
        let (native, closing) = engine.election_store()?;
        let layout = match native {
            Some(store) => Layout::Native(store),
            None => {
                let capabilities = engine.capabilities();
                let kind = if capabilities.offers(Primitive::Lock(LockKind::Lease)) {
                    LockKind::Lease
                } else {
                    LockKind::default()
                };
                capabilities.check(Primitive::Lock(kind))?;
                Layout::Leased { versions: engine.versions()?, kind }
            }
        };
        Ok(Election { engine, name: name.into(), key: key.into(), layout, closing })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Campaign with `value` until this candidate leads. `timeout`: `None` waits as long as
    /// it takes, `Some(ZERO)` tries once; a wait that runs out is an error of kind `Timeout`
    /// and leaves no candidacy behind. Each campaign is a candidate of its own, even two of
    /// one `Election`.
    pub async fn campaign(&self, value: &[u8], timeout: Option<Duration>) -> Result<Leadership> {
        self.engine.check_open()?;
        let owner = Owner { client_id: self.engine.id(), local_id: next_handle_local_id() };
        match &self.layout {
            Layout::Native(store) => self.campaign_native(store.clone(), owner, value, timeout).await,
            Layout::Leased { versions, kind } => {
                self.campaign_leased(versions.clone(), *kind, owner, value, timeout).await
            }
        }
    }

    /// The try form of [`Election::campaign`]: `Ok(None)` when `timeout` runs out before this
    /// candidate leads (no candidacy is left behind), where `campaign` returns kind `Timeout`.
    pub async fn try_campaign(&self, value: &[u8], timeout: Option<Duration>) -> Result<Option<Leadership>> {
        match self.campaign(value, timeout).await {
            Ok(leadership) => Ok(Some(leadership)),
            Err(err) if err.kind() == ErrorKind::Timeout => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// The current leader, or `None` when nobody leads.
    pub async fn leader(&self) -> Result<Option<LeaderRecord>> {
        self.engine.check_open()?;
        match &self.layout {
            Layout::Native(store) => store.leader(&self.key).await,
            Layout::Leased { versions, kind } => self.leased_leader(versions.as_ref(), *kind).await,
        }
    }

    /// The leader now and after every change (a new leader, a proclaimed value, nobody
    /// leading), until the stream is dropped or the client closes.
    pub fn observe(&self) -> Result<LeaderChanges> {
        self.engine.check_open()?;
        let (sink, changes) = mpsc::channel(16);
        let election = self.clone();
        let closing = self.closing.clone();
        self.engine.runtime().spawn(async move {
            let watching = async {
                let ended = match &election.layout {
                    Layout::Native(store) => store.observe(&election.key, &sink).await,
                    Layout::Leased { .. } => poll_leader(&sink, || election.leader()).await,
                };
                if let Err(err) = ended {
                    let _ = sink.send(Err(err)).await;
                }
            };
            tokio::select! {
                _ = watching => {}
                _ = closing.cancelled() => {}
            }
        });
        Ok(LeaderChanges { changes, last: None })
    }

    async fn campaign_native(
        &self,
        store: Arc<dyn ElectionStore>,
        owner: Owner,
        value: &[u8],
        timeout: Option<Duration>,
    ) -> Result<Leadership> {
        let (notifier, lost) = lost_latch();
        let cancel = self.closing.child_token();
        let request = CampaignRequest {
            key: self.key.to_string(),
            owner,
            value: value.to_vec(),
            lease: self.engine.watchdog_lease(),
            deadline: timeout.map(|wait| Instant::now() + wait),
            cancel: cancel.clone(),
            lost: notifier.clone(),
        };
        // The store's campaign runs on its own task, so a caller that goes away mid-call
        // cannot strand a won candidacy: the task resigns it when nobody takes the answer.
        let (answer, answered) = oneshot::channel();
        let campaigning = store.clone();
        self.engine.runtime().spawn(async move {
            let won = campaigning.campaign(&request).await;
            if let Err(Ok(Some(elected))) = answer.send(won) {
                let held = HeldLeadership::new(request.key, request.owner, elected);
                let _ = campaigning.resign(&held).await;
            }
        });
        let withdraw_if_dropped = cancel.clone().drop_guard();
        let elected = match answered.await {
            Ok(Ok(Some(elected))) => {
                withdraw_if_dropped.disarm();
                elected
            }
            Ok(Ok(None)) => return Err(self.not_elected(timeout)),
            Ok(Err(err)) => return Err(err),
            Err(_) => return Err(Error::internal("the campaign task ended without an answer")),
        };
        let term = elected.term;
        let held = Arc::new(HeldLeadership::new(self.key.to_string(), owner, elected));
        let leadership = Leadership::start(
            self,
            owner,
            term,
            value,
            (notifier, lost),
            Backing::Native { store: store.clone(), held: held.clone() },
        );
        let stop = leadership.inner.stop.clone();
        let renewing = RenewNative {
            store,
            held,
            lease: self.engine.watchdog_lease(),
            notifier: leadership.inner.notifier.clone(),
            stop,
            closing: self.closing.clone(),
        };
        self.engine.runtime().spawn(renewing.run());
        Ok(leadership)
    }

    async fn campaign_leased(
        &self,
        versions: Arc<dyn VersionStore>,
        kind: LockKind,
        owner: Owner,
        value: &[u8],
        timeout: Option<Duration>,
    ) -> Result<Leadership> {
        let handle = Handle::new(self.engine.clone(), &self.name, self.key.to_string(), kind, owner);
        let options = AcquireOptions { wait: timeout, lease: None };
        let granted = handle.acquire(options).await.map_err(|err| match err.kind() {
            ErrorKind::Timeout => self.not_elected(timeout),
            _ => err,
        })?;
        let guard = Guard::new(handle, granted.token, granted.lost.clone());
        let term = granted.token;
        let record_key = format!("{}{RECORD_SUFFIX}", self.key);
        if !write_record(versions.as_ref(), &record_key, term, owner, value).await? {
            let _ = guard.release().await;
            return Err(Error::lost(format!(
                "election '{}': a later leader took over before term {term} began",
                self.name
            )));
        }
        let (notifier, lost) = lost_latch();
        let leadership = Leadership::start(
            self,
            owner,
            term,
            value,
            (notifier.clone(), lost),
            Backing::Leased { guard: Mutex::new(Some(guard)), lock_lost: granted.lost.clone(), versions, record_key },
        );
        // The lock's lost latch is the leadership's: pass its reason on.
        let stop = leadership.inner.stop.clone();
        self.engine.runtime().spawn(async move {
            tokio::select! {
                reason = granted.lost.wait() => notifier.mark(reason),
                _ = stop.cancelled() => {}
            }
        });
        Ok(leadership)
    }

    async fn leased_leader(&self, versions: &dyn VersionStore, kind: LockKind) -> Result<Option<LeaderRecord>> {
        let record_key = format!("{}{RECORD_SUFFIX}", self.key);
        let Some(stored) = versions.get(&record_key).await? else { return Ok(None) };
        let record = decode_record(&stored.value)?;
        // A leader whose lease ran out leaves its record: only a held lock makes it current.
        let owner = Owner { client_id: self.engine.id(), local_id: 0 };
        let lock = Handle::new(self.engine.clone(), &self.name, self.key.to_string(), kind, owner);
        match lock.is_locked().await {
            Ok(true) => Ok(Some(LeaderRecord { value: record.value, term: record.term })),
            Ok(false) => Ok(None),
            Err(err) if err.kind() == ErrorKind::Unsupported => {
                Ok(Some(LeaderRecord { value: record.value, term: record.term }))
            }
            Err(err) => Err(err),
        }
    }

    fn not_elected(&self, timeout: Option<Duration>) -> Error {
        if self.engine.is_closed() {
            return Error::connection(format!("the client for {} is closed; connect again", self.engine.url()));
        }
        let waited = timeout.map(|wait| format!(" within {} ms", wait.as_millis())).unwrap_or_default();
        Error::timeout(format!("election '{}': not elected{waited}", self.name))
    }
}

/// Renews a leadership kept by the backend's own layout every third of the lease.
struct RenewNative {
    store: Arc<dyn ElectionStore>,
    held: Arc<HeldLeadership>,
    lease: Duration,
    notifier: LostNotifier,
    stop: CancellationToken,
    closing: CancellationToken,
}

impl RenewNative {
    async fn run(self) {
        let mut last_renewed = Instant::now();
        loop {
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = self.closing.cancelled() => {
                    self.notifier.mark(LostReason::ClientClosed);
                    return;
                }
                _ = tokio::time::sleep(self.lease / 3) => {}
            }
            if self.notifier.is_lost() {
                return;
            }
            let sent = Instant::now();
            match self.store.renew(&self.held, self.lease).await {
                Ok(Renewal::Renewed) => last_renewed = sent,
                Ok(Renewal::Gone) => {
                    self.notifier.mark(LostReason::Taken);
                    return;
                }
                Err(err) if sent.duration_since(last_renewed) + self.lease / 3 >= self.lease => {
                    self.notifier.mark(LostReason::RenewalFailed(err.message().to_string()));
                    return;
                }
                Err(_) => {}
            }
        }
    }
}

/// What keeps a leadership in the store.
enum Backing {
    Native {
        store: Arc<dyn ElectionStore>,
        held: Arc<HeldLeadership>,
    },
    /// `lock_lost` is the lock's own latch: read directly as well as passed on by a task,
    /// since a client that closes marks it at once, while that task may never run again.
    Leased {
        guard: Mutex<Option<Guard>>,
        lock_lost: LostWatch,
        versions: Arc<dyn VersionStore>,
        record_key: String,
    },
}

/// One won campaign: the proof of leading, for one term. Cheap to clone; clones share it.
/// Dropping the last clone without [`Leadership::resign`] resigns in the background.
#[derive(Clone)]
pub struct Leadership {
    inner: Arc<LeadershipInner>,
}

struct LeadershipInner {
    name: Arc<str>,
    owner: Owner,
    term: u64,
    value: Mutex<Vec<u8>>,
    notifier: LostNotifier,
    lost: LostWatch,
    resigned: AtomicBool,
    /// Stops the renewals and the lost forwarding once resigned or dropped.
    stop: CancellationToken,
    runtime: tokio::runtime::Handle,
    backing: Backing,
}

impl fmt::Debug for Leadership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leadership")
            .field("name", &self.inner.name)
            .field("term", &self.inner.term)
            .field("is_leader", &self.is_leader())
            .field("lost", &self.inner.lost.reason())
            .finish()
    }
}

impl Leadership {
    fn start(
        election: &Election,
        owner: Owner,
        term: u64,
        value: &[u8],
        (notifier, lost): (LostNotifier, LostWatch),
        backing: Backing,
    ) -> Leadership {
        Leadership {
            inner: Arc::new(LeadershipInner {
                name: election.name.clone(),
                owner,
                term,
                value: Mutex::new(value.to_vec()),
                notifier,
                lost,
                resigned: AtomicBool::new(false),
                stop: CancellationToken::new(),
                runtime: election.engine.runtime().clone(),
                backing,
            }),
        }
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The candidate this leadership belongs to.
    pub fn owner(&self) -> Owner {
        self.inner.owner
    }

    /// The term: a fencing token strictly greater than every earlier leader's term.
    pub fn term(&self) -> u64 {
        self.inner.term
    }

    /// The value this leader campaigned with or last proclaimed.
    pub fn value(&self) -> Vec<u8> {
        self.inner.value.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// True until it is resigned or lost; once false, never true again.
    pub fn is_leader(&self) -> bool {
        !self.inner.resigned.load(Ordering::SeqCst) && !self.is_lost()
    }

    /// Whether the store no longer has this leader (lease passed, session ended, taken).
    pub fn is_lost(&self) -> bool {
        self.lost_reason().is_some()
    }

    /// Why it was lost, if it was.
    pub fn lost_reason(&self) -> Option<LostReason> {
        self.inner.lost.reason().or_else(|| match &self.inner.backing {
            Backing::Leased { lock_lost, .. } => lock_lost.reason(),
            Backing::Native { .. } => None,
        })
    }

    /// The lost latch: awaitable, cheap to clone.
    pub fn lost_watch(&self) -> LostWatch {
        self.inner.lost.clone()
    }

    /// While the connection is down and the backend cannot tell whether this is still the
    /// leader (ZooKeeper's SUSPENDED).
    pub fn is_suspended(&self) -> bool {
        self.inner.lost.is_suspended()
    }

    /// Replace the leader's value, without a new election or term. An error of kind `Lost`
    /// if this is no longer the leader (and then it never is again).
    pub async fn proclaim(&self, value: &[u8]) -> Result<()> {
        self.ensure_leading()?;
        let still = match &self.inner.backing {
            Backing::Native { store, held } => store.proclaim(held, value).await? == Renewal::Renewed,
            Backing::Leased { versions, record_key, .. } => {
                write_record(versions.as_ref(), record_key, self.inner.term, self.inner.owner, value).await?
            }
        };
        if !still {
            self.inner.notifier.mark(LostReason::Taken);
            return Err(self.lost_error());
        }
        *self.inner.value.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = value.to_vec();
        Ok(())
    }

    /// Stop leading, so that the next candidate leads. Resigning twice is harmless; an error
    /// of kind `Lost` if the leadership had been lost before.
    pub async fn resign(&self) -> Result<()> {
        if self.inner.resigned.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        self.inner.stop.cancel();
        let was_lost = self.inner.lost.is_lost();
        let gone = match &self.inner.backing {
            Backing::Native { store, held } => store.resign(held).await? == Release::Gone,
            Backing::Leased { guard, versions, record_key, .. } => {
                remove_record(versions.as_ref(), record_key, self.inner.term).await?;
                let guard = guard.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
                match guard {
                    Some(guard) => match guard.release().await {
                        Ok(()) => false,
                        Err(err) if err.kind() == ErrorKind::Lost => true,
                        Err(err) => return Err(err),
                    },
                    None => false,
                }
            }
        };
        if was_lost || gone {
            return Err(self.lost_error());
        }
        Ok(())
    }

    fn ensure_leading(&self) -> Result<()> {
        if self.inner.resigned.load(Ordering::SeqCst) {
            return Err(Error::not_owner(format!(
                "election '{}': term {} was resigned",
                self.inner.name, self.inner.term
            )));
        }
        if self.is_lost() {
            return Err(self.lost_error());
        }
        Ok(())
    }

    fn lost_error(&self) -> Error {
        let why = self.lost_reason().map(|reason| format!(": {reason}")).unwrap_or_default();
        Error::lost(format!("election '{}': leadership of term {} was lost{why}", self.inner.name, self.inner.term))
    }
}

impl Drop for LeadershipInner {
    /// The last clone is gone without `resign`: stop renewing and resign in the background
    /// (a lease-backed leadership's lock guard releases itself as it drops).
    fn drop(&mut self) {
        self.stop.cancel();
        if self.resigned.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Backing::Native { store, held } = &self.backing {
            let (store, held) = (store.clone(), held.clone());
            self.runtime.spawn(async move {
                let _ = store.resign(&held).await;
            });
        }
    }
}

/// Leader changes from [`Election::observe`]: each item is the leader after a change
/// (`None`: nobody leads). Repeats of an unchanged leader are dropped.
pub struct LeaderChanges {
    changes: mpsc::Receiver<Result<Option<LeaderRecord>>>,
    last: Option<Option<LeaderRecord>>,
}

impl fmt::Debug for LeaderChanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderChanges").field("last", &self.last).finish()
    }
}

impl LeaderChanges {
    /// The next change; `None` once the client is closed. An error ends the stream.
    pub async fn next(&mut self) -> Option<Result<Option<LeaderRecord>>> {
        loop {
            match self.changes.recv().await? {
                Ok(seen) if self.last.as_ref() == Some(&seen) => continue,
                Ok(seen) => {
                    self.last = Some(seen.clone());
                    return Some(Ok(seen));
                }
                Err(err) => return Some(Err(err)),
            }
        }
    }
}

/// A lease-backed election's leader record, as stored in the value `<name>:leader`.
struct StoredRecord {
    term: u64,
    value: Vec<u8>,
}

/// `term` (8 bytes, big-endian), the holder's length (1 byte) and the holder
/// (`<client uuid>:<local id>`, UTF-8), then the value's bytes.
fn encode_record(term: u64, holder: Owner, value: &[u8]) -> Vec<u8> {
    let holder = holder.to_string();
    let holder = &holder.as_bytes()[..holder.len().min(255)];
    let mut record = Vec::with_capacity(9 + holder.len() + value.len());
    record.extend_from_slice(&term.to_be_bytes());
    record.push(holder.len() as u8);
    record.extend_from_slice(holder);
    record.extend_from_slice(value);
    record
}

fn decode_record(bytes: &[u8]) -> Result<StoredRecord> {
    let malformed = || Error::backend("an election's leader record is malformed (not written by polylock?)");
    let term = u64::from_be_bytes(bytes.get(..8).ok_or_else(malformed)?.try_into().map_err(|_| malformed())?);
    let holder_len = *bytes.get(8).ok_or_else(malformed)? as usize;
    let value = bytes.get(9 + holder_len..).ok_or_else(malformed)?.to_vec();
    Ok(StoredRecord { term, value })
}

/// Write the record of `term`, unless a later term's record is there already: then `false`.
async fn write_record(
    versions: &dyn VersionStore,
    record_key: &str,
    term: u64,
    holder: Owner,
    value: &[u8],
) -> Result<bool> {
    let record = encode_record(term, holder, value);
    let mut expected = versions.get(record_key).await?;
    loop {
        if let Some(current) = &expected {
            if decode_record(&current.value).map(|stored| stored.term > term).unwrap_or(false) {
                return Ok(false);
            }
        }
        match versions.compare_and_set(record_key, expected.as_ref().map(|v| v.version), &record).await? {
            Write::Written { .. } => return Ok(true),
            Write::Conflict { current } => expected = current,
        }
    }
}

/// Remove the record of `term`, if it is still that term's.
async fn remove_record(versions: &dyn VersionStore, record_key: &str, term: u64) -> Result<()> {
    let Some(current) = versions.get(record_key).await? else { return Ok(()) };
    if decode_record(&current.value).map(|stored| stored.term == term).unwrap_or(false) {
        versions.delete(record_key, current.version).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owner::ClientId;

    #[test]
    fn records_round_trip() {
        let holder = Owner { client_id: ClientId::random(), local_id: 7 };
        let record = decode_record(&encode_record(42, holder, b"node-a")).unwrap();
        assert_eq!((record.term, record.value.as_slice()), (42, &b"node-a"[..]));
        assert!(decode_record(b"short").is_err());
    }
}
