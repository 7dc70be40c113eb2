//! Named lock handles and the acquire/release protocol every backend shares: reentrancy per
//! owner, the lease or watchdog, lost detection, and cancellation that leaves nothing held.

mod guard;
pub(crate) mod handoff;
pub(crate) mod hold;
mod landing;
mod lost;
mod name;

use std::fmt;
use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OwnedMutexGuard;
use tokio::time::Instant;

pub use guard::Guard;
pub use lost::{LostNotifier, LostReason, LostWatch};
pub use name::MAX_NAME_LEN;
pub(crate) use name::{storage_key, validate_name};

use crate::backend::{AcquireRequest, Acquired, HeldLock, Release, Renewal};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::owner::Owner;
use hold::{Hold, LeaseMode};

/// The kinds of lock a backend may offer. Every backend offers `Reentrant`, the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum LockKind {
    /// A reentrant mutex: Redisson's RLock on Redis, etcd's Mutex, Curator's
    /// InterProcessMutex, a session lock on SQL, a lease row on SQLite.
    #[default]
    Reentrant,
    /// First come, first served (Redisson's fair lock).
    Fair,
    /// The plain token lock of redis-py and node-redlock (`SET NX PX`).
    Token,
    /// ShedLock's lease table on SQL databases.
    Lease,
}

impl LockKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LockKind::Reentrant => "reentrant",
            LockKind::Fair => "fair",
            LockKind::Token => "token",
            LockKind::Lease => "lease",
        }
    }
}

impl fmt::Display for LockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LockKind {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "reentrant" => Ok(LockKind::Reentrant),
            "fair" => Ok(LockKind::Fair),
            "token" => Ok(LockKind::Token),
            "lease" => Ok(LockKind::Lease),
            other => Err(Error::invalid_argument(format!(
                "unknown lock kind '{other}'; use reentrant, fair, token or lease"
            ))),
        }
    }
}

/// How to acquire: how long to wait, and for how long to hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AcquireOptions {
    /// `None` waits until the lock is free; `Some(ZERO)` tries once.
    pub wait: Option<Duration>,
    /// `None` lets the watchdog keep the lock while the owner lives; `Some(d)` holds it for
    /// at most `d` unless released earlier. Zero is an error.
    pub lease: Option<Duration>,
}

impl AcquireOptions {
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = Some(wait);
        self
    }

    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }
}

/// A named lock as seen by one owner. Cheap to create and clone; it holds nothing until it
/// is acquired. Clones share the owner, so acquiring through two clones is reentrant.
#[derive(Clone)]
pub struct Lock {
    client: Client,
    name: Arc<str>,
    key: Arc<str>,
    kind: LockKind,
    owner: Owner,
}

impl fmt::Debug for Lock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock").field("name", &self.name).field("kind", &self.kind).field("owner", &self.owner).finish()
    }
}

impl Lock {
    pub(crate) fn new(client: Client, name: &str, key: String, owner: Owner) -> Lock {
        Lock { client, name: name.into(), key: key.into(), kind: LockKind::default(), owner }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn kind(&self) -> LockKind {
        self.kind
    }

    pub fn owner(&self) -> Owner {
        self.owner
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The same name as another kind of lock. Whether the backend offers it is checked when
    /// acquiring.
    pub fn with_kind(mut self, kind: LockKind) -> Lock {
        self.kind = kind;
        self
    }

    /// The same lock owned by `local_id` of this client: bindings pass the thread or task id
    /// here, so that ownership follows their language's rules.
    pub fn with_local_id(mut self, local_id: u64) -> Lock {
        self.owner.local_id = local_id;
        self
    }

    /// Wait as long as it takes, then hold under the watchdog.
    pub async fn acquire(&self) -> Result<Guard> {
        self.acquire_with(AcquireOptions::default()).await
    }

    /// Try once; `None` if someone else holds the lock.
    pub async fn try_acquire(&self) -> Result<Option<Guard>> {
        match self.acquire_with(AcquireOptions::default().wait(Duration::ZERO)).await {
            Ok(guard) => Ok(Some(guard)),
            Err(err) if err.kind() == crate::ErrorKind::Timeout => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Acquire with an explicit wait and lease. A wait that runs out is an error of kind
    /// `Timeout`. If this owner already holds the lock, the acquisition joins the hold
    /// (reentrancy), returns its token and keeps its lease mode.
    pub async fn acquire_with(&self, options: AcquireOptions) -> Result<Guard> {
        if options.lease == Some(Duration::ZERO) {
            return Err(Error::invalid_argument(
                "a lease must be positive; omit it to let the watchdog renew the lock",
            ));
        }
        let inner = self.client.inner();
        inner.ensure_open()?;
        if !inner.backend.supports(self.kind) {
            return Err(Error::invalid_argument(format!(
                "the {} backend does not offer {} locks",
                inner.scheme, self.kind
            )));
        }
        // The slot is tidied on every way out, including the caller dropping this future.
        let slot = hold::TidyOnDrop::new(&inner.holds, &self.key, self.owner);
        let turn = slot.turn.clone().lock_owned().await;
        if let Some(guard) = self.reenter(&slot).await? {
            return Ok(guard);
        }
        self.acquire_fresh(&slot, options, turn).await
    }

    /// Join this owner's live hold, if there is one.
    async fn reenter(&self, slot: &hold::Slot) -> Result<Option<Guard>> {
        let (held, landing) = match slot.hold().as_ref() {
            Some(hold) if !hold.is_lost() => (hold.held.clone(), hold.run.landing.clone()),
            _ => return Ok(None),
        };
        if landing.wait().await == landing::Landed::Gone {
            return Ok(None); // lost (marked so by whoever sent the transfer): take it afresh
        }
        match self.client.inner().backend.reenter(&held).await? {
            Renewal::Renewed => {
                let mut hold = slot.hold();
                match hold.as_mut() {
                    Some(hold) if !hold.is_lost() && Arc::ptr_eq(&hold.held, &held) => {
                        hold.count += 1;
                        Ok(Some(Guard::new(self.clone(), held.token, hold.watch.clone())))
                    }
                    _ => Ok(None),
                }
            }
            Renewal::Gone => {
                if let Some(hold) = slot.hold().as_ref() {
                    hold.lost.mark(LostReason::Taken);
                }
                Ok(None)
            }
        }
    }

    async fn acquire_fresh(
        &self,
        slot: &hold::Slot,
        options: AcquireOptions,
        turn: OwnedMutexGuard<()>,
    ) -> Result<Guard> {
        let inner = self.client.inner();
        // Counted from here until the hold is recorded or given back (see Client::close).
        let _in_flight = inner.acquisitions.token();
        inner.ensure_open()?;
        let mode = match options.lease {
            Some(lease) => LeaseMode::Fixed { lease },
            None => LeaseMode::Watchdog { lease: inner.watchdog_lease },
        };
        let (lost, watch) = lost::lost_latch();
        let request = AcquireRequest {
            key: self.key.to_string(),
            owner: self.owner,
            kind: self.kind,
            lease: match mode {
                LeaseMode::Fixed { lease } | LeaseMode::Watchdog { lease } => lease,
            },
            // A wait too long to represent is a wait forever.
            deadline: options.wait.and_then(|wait| Instant::now().checked_add(wait)),
            // Closing the client stops the wait; so does the caller going away (PendingAcquire).
            cancel: inner.closing.child_token(),
            lost: lost.clone(),
        };
        let (_turn, answer) = self.run_acquire(request, turn).await;
        let answer = answer?;
        if answer.is_none() && inner.is_closed() {
            return Err(inner.closed_error());
        }
        let (acquired, run) = answer.ok_or_else(|| {
            let waited = options.wait.unwrap_or_default();
            Error::timeout(format!(
                "lock '{}' is held by someone else; gave up after waiting {}ms",
                self.name,
                waited.as_millis()
            ))
        })?;
        // No await between receiving the hold and recording it, so a caller that goes away
        // now cannot leave it unrecorded.
        let attempt_started = acquired.attempt_started;
        let held = HeldLock::new(self.key.to_string(), self.owner, self.kind, acquired);
        let token = held.token;
        let backend = inner.backend.clone();
        let hold = Hold::start(backend, held, run, mode, attempt_started, lost, watch.clone());
        *slot.hold() = Some(hold);
        if inner.is_closed() {
            // `close` may have drained the table just before the hold went in. It set the
            // flag before draining, so one of the two always sees the hold and gives it back.
            let taken = slot.hold().take();
            if let Some(hold) = taken {
                // In its own task, so the store hears of it even if our caller goes away.
                let backend = inner.backend.clone();
                let _ = inner.runtime.spawn(async move { hold::surrender(backend.as_ref(), hold).await }).await;
            }
            return Err(inner.closed_error());
        }
        Ok(Guard::new(self.clone(), token, watch))
    }

    /// Run the backend's acquire in the caller's task (no spawn, no hop between threads for
    /// a caller on a foreign thread), in such a way that a caller dropping this future can
    /// never strand a hold: if it goes away before the answer, the acquisition is moved, as
    /// it stands, into a task of its own, which sees the cancellation while waiting and
    /// releases any hold it gets. The owner's turn stays taken until all of that is over, so
    /// the owner's next acquisition can never race with the cleanup of this one (in stores
    /// that name a hold by its owner alone, such as Redisson's hash, that cleanup would
    /// otherwise remove the next hold).
    async fn run_acquire(
        &self,
        request: AcquireRequest,
        turn: OwnedMutexGuard<()>,
    ) -> (OwnedMutexGuard<()>, Result<Option<(Acquired, handoff::Run)>>) {
        let inner = self.client.inner();
        let backend = inner.backend.clone();
        let waiters = inner.backend.transfers(request.kind).then(|| inner.waiters.clone());
        let hold = (request.key.clone(), request.owner, request.kind);
        let cancel = request.cancel.clone();
        let work: Acquisition =
            Box::pin(async move { handoff::acquire_or_take_over(&backend, &request, waiters.as_ref()).await });
        let mut pending = PendingAcquire {
            work: Some(work),
            hold,
            client: self.client.clone(),
            abandoned: Some((turn, inner.acquisitions.token())),
            _cancel_on_drop: cancel.drop_guard(),
        };
        let answer = pending.work.as_mut().expect("set above").as_mut().await;
        // Answered: the store work is over. The caller keeps the turn until it has recorded
        // the hold.
        pending.work = None;
        let (turn, _in_flight) = pending.abandoned.take().expect("taken only here or in drop");
        (turn, answer)
    }

    /// Give back one hold of this lock's owner. Releasing a lock the owner does not hold is
    /// an error of kind `NotOwner`; releasing one that was lost is an error of kind `Lost`.
    pub async fn release(&self) -> Result<()> {
        self.release_hold(None).await
    }

    /// Release one hold; with `token`, only if the owner's current hold is that one (a guard
    /// of a hold that was lost and replaced must not release its successor).
    pub(crate) async fn release_hold(&self, token: Option<u64>) -> Result<()> {
        let inner = self.client.inner();
        let not_owner = || {
            Error::not_owner(format!(
                "lock '{}' is not held by this owner ({}); only the owner that acquired it can release it",
                self.name, self.owner
            ))
        };
        let slot = inner.holds.existing(&self.key, self.owner).ok_or_else(not_owner)?;
        let taken = {
            let mut state = slot.hold();
            match state.as_mut() {
                Some(hold) if token.is_none_or(|t| t == hold.held.token) => {
                    hold.count -= 1;
                    let holds_left = hold.count;
                    let taken = (hold.held.clone(), hold.lost.clone(), holds_left, hold.run.clone());
                    if holds_left == 0 {
                        // The last release stops the keeper whatever the store says next.
                        drop(state.take());
                    }
                    Some(taken)
                }
                _ => None,
            }
        };
        inner.holds.tidy(&self.key, self.owner, slot);
        let (held, lost, holds_left, run) = taken.ok_or_else(not_owner)?;
        // A hold handed over optimistically is released only once its transfer has landed;
        // one that did not land was marked lost by the task that sent it.
        let landed = run.landing.wait().await;
        let lost_error =
            |reason: LostReason| Error::lost(format!("lock '{}' was lost before it was released: {reason}", self.name));
        if let Some(reason) = lost.reason() {
            if holds_left == 0 {
                // The store may still have our record (say, renewals failed on a flaky
                // network); removing it is harmless and frees the lock sooner.
                let _ = inner.backend.release(&held, 0).await;
            }
            return Err(lost_error(reason));
        }
        let handoffs = holds_left == 0 && inner.backend.transfers(held.kind);
        let released = if handoffs && !run.is_over() {
            self.hand_over_or_release(held, run).await?
        } else if handoffs {
            // The run of handoffs is over: waiters of other clients get their turn. A store
            // that serves its waiters in order gives it to the oldest of them by itself; this
            // client's owners keep their places in its queue.
            if !inner.backend.grants_in_order(held.kind) {
                let round_trip = match landed {
                    landing::Landed::Held { round_trip } => round_trip,
                    landing::Landed::Gone => Duration::ZERO,
                };
                inner.waiters.stand_aside(&self.key, held.kind, round_trip);
            }
            inner.backend.release(&held, 0).await?
        } else {
            inner.backend.release(&held, holds_left).await?
        };
        match released {
            Release::Released => Ok(()),
            Release::Gone => {
                lost.mark(LostReason::Taken);
                Err(lost_error(LostReason::Taken))
            }
        }
    }

    /// A full release: hand the hold to an owner of this client waiting for the lock, if
    /// there is one, else give it back to the store.
    async fn hand_over_or_release(&self, held: Arc<HeldLock>, run: handoff::Run) -> Result<Release> {
        let inner = self.client.inner();
        let kind = held.kind;
        let (baton, outcome) = handoff::Baton::new(held, run, inner.backend.clone(), inner.runtime.clone());
        match inner.waiters.hand_over(&self.key, kind, baton) {
            Ok(()) => outcome
                .await
                .unwrap_or_else(|_| Err(Error::backend("the waiter taking over the lock stopped before it answered"))),
            Err(baton) => inner.backend.release(&baton.into_hold(), 0).await,
        }
    }

    /// Whether another owner of this client is waiting for this lock now, so that a full
    /// release would hand it over within the client (lock/handoff.rs). A hint: the answer may
    /// be stale by the time it is used. Bindings use it to run such a release where the waiter
    /// runs.
    pub fn is_waited_for_here(&self) -> bool {
        let inner = self.client.inner();
        inner.backend.transfers(self.kind) && inner.waiters.is_waited_for(&self.key, self.kind)
    }

    /// How many times this owner holds the lock, as far as this client knows.
    pub fn hold_count(&self) -> u32 {
        self.live_hold(|hold| hold.count).unwrap_or(0)
    }

    /// Whether this owner holds the lock and it has not been lost.
    pub fn is_held(&self) -> bool {
        self.live_hold(|_| ()).is_some()
    }

    /// The fencing token of this owner's current hold.
    pub fn fencing_token(&self) -> Option<u64> {
        self.live_hold(|hold| hold.held.token)
    }

    /// The lost latch of this owner's current hold, lost or not.
    pub fn lost_watch(&self) -> Option<LostWatch> {
        let slot = self.client.inner().holds.existing(&self.key, self.owner)?;
        let hold = slot.hold();
        hold.as_ref().map(|hold| hold.watch.clone())
    }

    /// Whether anyone, of any client or language, holds this lock in the store right now
    /// (Redisson's `isLocked`).
    pub async fn is_locked(&self) -> Result<bool> {
        let inner = self.client.inner();
        inner.ensure_open()?;
        inner.backend.is_locked(&self.key, self.kind).await
    }

    /// How long the current holder's lease has left (Redisson's `remainTimeToLive`): `None`
    /// when nobody holds the lock, `Some(Duration::MAX)` for a hold kept without expiry.
    pub async fn remaining_lease(&self) -> Result<Option<Duration>> {
        let inner = self.client.inner();
        inner.ensure_open()?;
        inner.backend.remaining_lease(&self.key, self.kind).await
    }

    /// Remove the lock whoever holds it and wake its waiters (Redisson's `forceUnlock`).
    /// This client's own holds of it are marked lost at once; other clients' holders learn
    /// it at their next renewal or release. Returns whether there was a hold to remove.
    pub async fn force_unlock(&self) -> Result<bool> {
        let inner = self.client.inner();
        inner.ensure_open()?;
        // Only the holds there before the force end: a waiter of this client woken by its
        // unlock message may hold the lock afresh by the time the call returns.
        let forced = inner.holds.tokens_of(&self.key);
        let removed = inner.backend.force_unlock(&self.key, self.kind).await?;
        inner.holds.mark_lost(&self.key, &forced, LostReason::Taken);
        Ok(removed)
    }

    fn live_hold<T>(&self, read: impl FnOnce(&Hold) -> T) -> Option<T> {
        let slot = self.client.inner().holds.existing(&self.key, self.owner)?;
        let hold = slot.hold();
        hold.as_ref().filter(|hold| !hold.is_lost()).map(read)
    }
}

/// A backend acquisition (or a local handoff), boxed so that it can move into a task of its
/// own part way through.
type Acquisition = std::pin::Pin<Box<dyn Future<Output = Result<Option<(Acquired, handoff::Run)>>> + Send>>;

/// An acquisition under way in the caller's task.
struct PendingAcquire {
    /// `None` once it has answered.
    work: Option<Acquisition>,
    hold: (String, Owner, LockKind),
    client: Client,
    /// Until answered: the owner's turn and the client's count of acquisitions in flight,
    /// kept by the cleanup if the caller leaves.
    abandoned: Option<(OwnedMutexGuard<()>, tokio_util::task::task_tracker::TaskTrackerToken)>,
    /// Tells the acquisition to stop waiting when the caller goes away.
    _cancel_on_drop: tokio_util::sync::DropGuard,
}

impl Drop for PendingAcquire {
    /// The caller went away before the answer: finish the acquisition in a task of its own
    /// (it stops waiting, as the cancellation says) and give back whatever it got.
    fn drop(&mut self) {
        let (Some(work), Some((turn, in_flight))) = (self.work.take(), self.abandoned.take()) else { return };
        let (key, owner, kind) = self.hold.clone();
        let client = self.client.clone();
        client.inner().runtime.clone().spawn(async move {
            let inner = client.inner();
            if let Ok(Some((acquired, run))) = work.await {
                let held = HeldLock::new(key.clone(), owner, kind, acquired);
                let _ = handoff::give_back(inner.backend.as_ref(), &held, &run.landing).await;
            }
            drop(turn);
            drop(in_flight);
            inner.holds.tidy_key(&key, owner);
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{AcquireOptions, Client};

    /// Every way out of an acquisition (success, timeout, cancellation, release) leaves the
    /// client's hold table as it found it, so it does not grow with every name ever locked.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_hold_table_does_not_grow() {
        let client = Client::connect("mem://hold-table").await.unwrap();
        let holds = || client.inner().holds.len();
        let guard = client.lock("held").unwrap().acquire().await.unwrap();
        assert_eq!(holds(), 1);
        for i in 0..20 {
            let name = format!("name-{i}");
            client.lock(&name).unwrap().acquire().await.unwrap().release().await.unwrap();
            let waiter = client.lock("held").unwrap();
            let _ = tokio::time::timeout(Duration::from_millis(2), waiter.acquire()).await; // cancelled
            let _ = client.lock("held").unwrap().acquire_with(AcquireOptions::default().wait(Duration::ZERO)).await;
        }
        // A cancelled acquisition is tidied by its cleanup task, once its store work is over.
        let settled = tokio::time::Instant::now() + Duration::from_secs(2);
        while holds() > 1 && tokio::time::Instant::now() < settled {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(holds(), 1, "only the live hold remains");
        guard.release().await.unwrap();
        assert_eq!(holds(), 0);
    }
}
