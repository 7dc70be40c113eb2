//! The acquire/release protocol every primitive shares: reentrancy per owner, the lease or
//! watchdog, lost detection, local handoff, and cancellation that leaves nothing held.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OwnedMutexGuard;
use tokio::time::Instant;
use tracing::Instrument;

use super::handoff::{self, Handover, Run};
use super::hold::{self, Hold, LeaseMode};
use super::transfer_watch::Transferred;
use super::Engine;
use crate::duration::{check_lease, check_wait};
use crate::error::{Error, ErrorKind, Result};
use crate::metrics::{Outcome, Subject};
use crate::owner::Owner;
use crate::spi::{
    lost_latch_of, AcquireRequest, Acquired, HeldLock, HoldKind, HoldStore, LostReason, LostWatch, Release, Renewal,
};

/// How to acquire: how long to wait, and for how long to hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AcquireOptions {
    /// `None` waits until the hold is granted; `Some(ZERO)` tries once.
    pub wait: Option<Duration>,
    /// `None` lets the watchdog keep the hold while the owner lives; `Some(d)` holds it for
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

/// What a successful acquisition hands to the primitive: the token and the lost latch.
pub(crate) struct Granted {
    pub token: u64,
    pub lost: LostWatch,
}

/// One named hold target (a mutex of some kind, one side of a read-write lock, a semaphore)
/// as seen by one owner of one client. Cheap to clone.
pub(crate) struct Handle<K: HoldKind> {
    engine: Arc<Engine>,
    /// The name the user gave, for messages.
    name: Arc<str>,
    /// The storage key (namespace applied).
    key: Arc<str>,
    kind: K,
    owner: Owner,
    /// The name, backend and kind its events and counts carry.
    subject: Arc<Subject>,
}

impl<K: HoldKind> Clone for Handle<K> {
    fn clone(&self) -> Self {
        Handle {
            engine: self.engine.clone(),
            name: self.name.clone(),
            key: self.key.clone(),
            kind: self.kind,
            owner: self.owner,
            subject: self.subject.clone(),
        }
    }
}

impl<K: HoldKind> fmt::Debug for Handle<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("owner", &self.owner)
            .finish()
    }
}

impl<K: HoldKind> Handle<K> {
    /// The caller has checked that the backend offers the family and kind.
    pub fn new(engine: Arc<Engine>, name: &str, key: String, kind: K, owner: Owner) -> Self {
        let name: Arc<str> = name.into();
        let subject = Arc::new(Subject {
            name: name.clone(),
            backend: engine.scheme().clone(),
            kind: kind.metric_label(),
            series: engine.metrics().series(kind.metric_label()),
        });
        Handle { engine, name, key: key.into(), kind, owner, subject }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn kind(&self) -> K {
        self.kind
    }

    pub fn owner(&self) -> Owner {
        self.owner
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    pub fn with_owner(mut self, owner: Owner) -> Self {
        self.owner = owner;
        self
    }

    fn store(&self) -> Result<&Arc<dyn HoldStore<K>>> {
        self.engine
            .family::<K>()
            .store
            .as_ref()
            .ok_or_else(|| Error::unsupported(format!("this backend does not offer {}", self.kind)))
    }

    fn holds(&self) -> &hold::HoldTable<K> {
        &self.engine.family::<K>().holds
    }

    /// Acquire with an explicit wait and lease. A wait that runs out is an error of kind
    /// `Timeout`. If this owner already holds it, the acquisition joins the hold
    /// (reentrancy), returns its token and keeps its lease mode.
    pub async fn acquire(&self, options: AcquireOptions) -> Result<Granted> {
        let span = tracing::debug_span!("acquire", name = %self.name, backend = %self.subject.backend,
            kind = self.subject.kind);
        let mut watch = AcquireWatch { subject: &self.subject, started: Instant::now(), settled: false };
        let answer = self.acquire_counted(options).instrument(span).await;
        watch.settle(&answer);
        answer.map(|(granted, _)| granted)
    }

    /// `acquire`, telling whether it joined a hold this owner had (a reentry).
    async fn acquire_counted(&self, options: AcquireOptions) -> Result<(Granted, bool)> {
        // Before anything is written: a lease or wait no backend can honour is refused here.
        if let Some(lease) = options.lease {
            check_lease("a lease", lease)?;
        }
        if let Some(wait) = options.wait {
            check_wait("a wait", wait)?;
        }
        self.engine.ensure_open()?;
        self.store()?;
        // The slot is tidied on every way out, including the caller dropping this future.
        let slot = hold::TidyOnDrop::new(self.holds(), &self.key, self.kind, self.owner);
        let turn = slot.turn.clone().lock_owned().await;
        if let Some(granted) = self.reenter(&slot).await? {
            return Ok((granted, true));
        }
        Ok((self.acquire_fresh(&slot, options, turn).await?, false))
    }

    /// Join this owner's live hold, if there is one.
    async fn reenter(&self, slot: &hold::Slot<K>) -> Result<Option<Granted>> {
        let (held, transfer) = match slot.hold().as_ref() {
            Some(hold) if !hold.is_lost() => (hold.held.clone(), hold.run.transfer.clone()),
            _ => return Ok(None),
        };
        if transfer.wait().await == Transferred::Gone {
            return Ok(None); // lost (marked so by whoever sent the transfer): take it afresh
        }
        match self.store()?.reenter(&held).await? {
            Renewal::Renewed => {
                let mut hold = slot.hold();
                match hold.as_mut() {
                    Some(hold) if !hold.is_lost() && Arc::ptr_eq(&hold.held, &held) => {
                        hold.count += 1;
                        Ok(Some(Granted { token: held.token, lost: hold.watch.clone() }))
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
        slot: &hold::Slot<K>,
        options: AcquireOptions,
        turn: OwnedMutexGuard<()>,
    ) -> Result<Granted> {
        let engine = &self.engine;
        let mode = match options.lease {
            Some(lease) => LeaseMode::Fixed { lease },
            None => LeaseMode::Watchdog { lease: engine.watchdog_lease },
        };
        let (lost, watch) = lost_latch_of(Some(self.subject.clone()));
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
            cancel: engine.closing.child_token(),
            lost: lost.clone(),
        };
        let (_turn, answer) = self.run_acquire(request, turn).await;
        let answer = answer?;
        if answer.is_none() && engine.is_closed() {
            return Err(engine.closed_error());
        }
        let (acquired, run) = answer.ok_or_else(|| {
            let waited = options.wait.unwrap_or_default();
            Error::timeout(format!(
                "{} '{}' is held by someone else; gave up after waiting {}ms",
                self.kind.noun(),
                self.name,
                waited.as_millis()
            ))
        })?;
        // No await between receiving the hold and recording it, so a caller that goes away
        // now cannot leave it unrecorded.
        let attempt_started = acquired.attempt_started;
        let held = HeldLock::new(self.key.to_string(), self.owner, self.kind, acquired);
        let token = held.token;
        let store = self.store()?.clone();
        let hold = Hold::start(store.clone(), held, run, mode, attempt_started, lost, watch.clone());
        *slot.hold() = Some(hold);
        if engine.is_closed() {
            // `close` may have drained the table just before the hold went in. It set the
            // flag before draining, so one of the two always sees the hold and gives it back.
            let taken = slot.hold().take();
            if let Some(hold) = taken {
                // In its own task, so the store hears of it even if our caller goes away.
                let _ = engine.runtime.spawn(async move { hold::surrender(store.as_ref(), hold).await }).await;
            }
            return Err(engine.closed_error());
        }
        Ok(Granted { token, lost: watch })
    }

    /// Run the store's acquire in the caller's task (no spawn, no hop between threads for
    /// a caller on a foreign thread), in such a way that a caller dropping this future can
    /// never strand a hold: if it goes away before the answer, the acquisition is moved, as
    /// it stands, into a task of its own, which sees the cancellation while waiting and
    /// releases any hold it gets. The owner's turn stays taken until all of that is over, so
    /// the owner's next acquisition can never race with the cleanup of this one (in stores
    /// that name a hold by its owner alone, such as Redisson's hash, that cleanup would
    /// otherwise remove the next hold).
    async fn run_acquire(
        &self,
        request: AcquireRequest<K>,
        turn: OwnedMutexGuard<()>,
    ) -> (OwnedMutexGuard<()>, Result<Option<(Acquired, Run)>>) {
        let engine = &self.engine;
        let family = engine.family::<K>();
        let store = match self.store() {
            Ok(store) => store.clone(),
            Err(err) => return (turn, Err(err)),
        };
        let waiters = store.transfers(request.kind).then(|| family.waiters.clone());
        let hold = (request.key.clone(), request.owner, request.kind);
        let cancel = request.cancel.clone();
        let work: Acquisition =
            Box::pin(async move { handoff::acquire_or_take_over(&store, &request, waiters.as_ref()).await });
        let mut pending = PendingAcquire {
            work: Some(work),
            hold,
            handle: self.clone(),
            abandoned: Some((turn, engine.acquisitions.token())),
            _cancel_on_drop: cancel.drop_guard(),
        };
        let answer = pending.work.as_mut().expect("set above").as_mut().await;
        // Answered: the store work is over. The caller keeps the turn until it has recorded
        // the hold.
        pending.work = None;
        let (turn, _in_flight) = pending.abandoned.take().expect("taken only here or in drop");
        (turn, answer)
    }

    /// Give back one hold of this owner; with `token`, only if the owner's current hold is
    /// that one (a guard of a hold that was lost and replaced must not release its
    /// successor). Releasing what the owner does not hold is an error of kind `NotOwner`;
    /// releasing a hold that was lost is an error of kind `Lost`.
    pub async fn release(&self, token: Option<u64>) -> Result<()> {
        let store = self.store()?.clone();
        let not_owner = || {
            Error::not_owner(format!(
                "{} '{}' is not held by this owner ({}); only the owner that acquired it can release it",
                self.kind.noun(),
                self.name,
                self.owner
            ))
        };
        let holds = self.holds();
        let slot = holds.existing(&self.key, self.kind, self.owner).ok_or_else(not_owner)?;
        let taken = {
            let mut state = slot.hold();
            match state.as_mut() {
                Some(hold) if token.is_none_or(|t| t == hold.held.token) => {
                    hold.count -= 1;
                    let holds_left = hold.count;
                    let taken = (hold.held.clone(), hold.lost.clone(), holds_left, hold.run.clone(), hold.granted);
                    if holds_left == 0 {
                        // The last release stops the keeper whatever the store says next.
                        drop(state.take());
                    }
                    Some(taken)
                }
                _ => None,
            }
        };
        holds.tidy(&self.key, self.kind, self.owner, slot);
        let (held, lost, holds_left, run, granted) = taken.ok_or_else(not_owner)?;
        let released = self.release_taken(&store, held, lost, holds_left, run).await;
        self.observe_release(holds_left, granted.elapsed(), &released);
        released
    }

    /// Count and log one release of a hold this owner had (the last one, `holds_left == 0`,
    /// gives it back).
    fn observe_release(&self, holds_left: u32, held_for: Duration, released: &Result<()>) {
        if holds_left > 0 {
            return;
        }
        let subject = &self.subject;
        subject.series.release(Some(held_for));
        let held_ms = crate::metrics::millis(held_for);
        match released {
            Ok(()) => tracing::debug!(op = "release", name = %subject.name, backend = %subject.backend,
                kind = subject.kind, held_ms, outcome = "released", "released"),
            Err(err) => {
                if err.kind() != ErrorKind::Lost {
                    subject.series.error(err.kind());
                }
                tracing::warn!(op = "release", name = %subject.name, backend = %subject.backend,
                    kind = subject.kind, held_ms, outcome = if err.kind() == ErrorKind::Lost { "lost" } else { "error" },
                    error_kind = err.kind().as_str(), error = %err.message(), "release failed")
            }
        }
    }

    async fn release_taken(
        &self,
        store: &Arc<dyn HoldStore<K>>,
        held: Arc<HeldLock<K>>,
        lost: crate::spi::LostNotifier,
        holds_left: u32,
        run: Run,
    ) -> Result<()> {
        let engine = &self.engine;
        // A hold handed over optimistically is released only once its transfer has landed;
        // one that did not land was marked lost by the task that sent it.
        let landed = run.transfer.wait().await;
        let lost_error = |reason: LostReason| {
            Error::lost(format!("{} '{}' was lost before it was released: {reason}", self.kind.noun(), self.name))
        };
        if let Some(reason) = lost.reason() {
            if holds_left == 0 {
                // The store may still have our record (say, renewals failed on a flaky
                // network); removing it is harmless and frees the lock sooner.
                // Bounded: over a partition the call would hang until the network heals.
                let _ = tokio::time::timeout(super::hold::GIVE_BACK_WAIT, store.release(&held, 0)).await;
            }
            return Err(lost_error(reason));
        }
        let handoffs = holds_left == 0 && store.transfers(held.kind);
        let released = if handoffs && !run.is_over() {
            self.hand_over_or_release(store, held, run).await?
        } else if handoffs {
            // The run of handoffs is over: waiters of other clients get their turn. A store
            // that serves its waiters in order gives it to the oldest of them by itself; this
            // client's owners keep their places in its queue.
            if !store.grants_in_order(held.kind) {
                let round_trip = match landed {
                    Transferred::Held { round_trip } => round_trip,
                    Transferred::Gone => Duration::ZERO,
                };
                let poll = store.others_poll_within(held.kind);
                engine.family::<K>().waiters.keep_off_for_others(&self.key, held.kind, round_trip, poll);
            }
            store.release(&held, 0).await?
        } else {
            store.release(&held, holds_left).await?
        };
        match released {
            Release::Released => Ok(()),
            Release::Gone => {
                lost.mark(LostReason::Taken);
                Err(lost_error(LostReason::Taken))
            }
        }
    }

    /// A full release: hand the hold to an owner of this client waiting for it, if there is
    /// one, else give it back to the store.
    async fn hand_over_or_release(
        &self,
        store: &Arc<dyn HoldStore<K>>,
        held: Arc<HeldLock<K>>,
        run: Run,
    ) -> Result<Release> {
        let kind = held.kind;
        let (handover, outcome) = Handover::new(held, run, store.clone(), self.engine.runtime.clone());
        match self.engine.family::<K>().waiters.hand_over(&self.key, kind, handover) {
            Ok(()) => outcome
                .await
                .unwrap_or_else(|_| Err(Error::backend("the waiter taking over the lock stopped before it answered"))),
            Err(handover) => store.release(&handover.into_hold(), 0).await,
        }
    }

    /// Whether another owner of this client is waiting for this hold now, so that a full
    /// release would hand it over within the client. A hint: the answer may be stale by the
    /// time it is used.
    pub fn is_waited_for_here(&self) -> bool {
        let family = self.engine.family::<K>();
        family.store.as_ref().is_some_and(|store| store.transfers(self.kind))
            && family.waiters.is_waited_for(&self.key, self.kind)
    }

    /// How many times this owner holds it, as far as this client knows.
    pub fn hold_count(&self) -> u32 {
        self.live_hold(|hold| hold.count).unwrap_or(0)
    }

    /// The fencing token of this owner's current live hold.
    pub fn fencing_token(&self) -> Option<u64> {
        self.live_hold(|hold| hold.held.token)
    }

    /// The lost latch of this owner's current hold, lost or not.
    pub fn lost_watch(&self) -> Option<LostWatch> {
        let slot = self.holds().existing(&self.key, self.kind, self.owner)?;
        let hold = slot.hold();
        hold.as_ref().map(|hold| hold.watch.clone())
    }

    /// Whether this owner's current hold (live or lost) has `token`.
    pub fn current_hold_has(&self, token: u64) -> bool {
        let Some(slot) = self.holds().existing(&self.key, self.kind, self.owner) else { return false };
        let hold = slot.hold();
        hold.as_ref().is_some_and(|hold| hold.held.token == token)
    }

    /// Whether anyone, of any client, holds it in the store right now.
    pub async fn is_locked(&self) -> Result<bool> {
        self.engine.ensure_open()?;
        self.store()?.is_locked(&self.key, self.kind).await
    }

    /// How long the current holder's lease has left.
    pub async fn remaining_lease(&self) -> Result<Option<Duration>> {
        self.engine.ensure_open()?;
        self.store()?.remaining_lease(&self.key, self.kind).await
    }

    /// Remove it whoever holds it and wake its waiters. This client's own holds of it are
    /// marked lost at once; other clients' holders learn it at their next renewal or
    /// release. Returns whether there was a hold to remove.
    pub async fn force_unlock(&self) -> Result<bool> {
        self.engine.ensure_open()?;
        // Only the holds there before the force end: a waiter of this client woken by its
        // unlock message may hold it afresh by the time the call returns.
        let forced = self.holds().tokens_of(&self.key);
        let removed = self.store()?.force_unlock(&self.key, self.kind).await?;
        self.holds().mark_lost(&self.key, &forced, LostReason::Taken);
        Ok(removed)
    }

    fn live_hold<T>(&self, read: impl FnOnce(&Hold<K>) -> T) -> Option<T> {
        let slot = self.holds().existing(&self.key, self.kind, self.owner)?;
        let hold = slot.hold();
        hold.as_ref().filter(|hold| !hold.is_lost()).map(read)
    }
}

/// Counts and logs how one acquisition ended; a caller that went away before the answer
/// (the future dropped) is counted as `cancelled`.
struct AcquireWatch<'a> {
    subject: &'a Subject,
    started: Instant,
    settled: bool,
}

impl AcquireWatch<'_> {
    fn settle(&mut self, answer: &Result<(Granted, bool)>) {
        self.settled = true;
        let waited = self.started.elapsed();
        let (subject, wait_ms) = (self.subject, crate::metrics::millis(waited));
        let outcome = match answer {
            Ok((_, true)) => Outcome::Reentered,
            Ok((_, false)) => Outcome::Acquired,
            Err(err) if err.kind() == ErrorKind::Timeout => Outcome::Timeout,
            Err(err) if err.kind() == ErrorKind::Cancelled => Outcome::Cancelled,
            Err(_) => Outcome::Error,
        };
        subject.series.acquire(outcome, waited);
        match answer {
            Ok((granted, _)) => tracing::debug!(op = "acquire", name = %subject.name, backend = %subject.backend,
                kind = subject.kind, outcome = outcome.label(), wait_ms, token = granted.token, "acquired"),
            Err(err) if matches!(outcome, Outcome::Timeout | Outcome::Cancelled) => tracing::debug!(op = "acquire",
                name = %subject.name, backend = %subject.backend, kind = subject.kind, outcome = outcome.label(),
                wait_ms, "not acquired: {}", err.message()),
            Err(err) => {
                subject.series.error(err.kind());
                tracing::warn!(op = "acquire", name = %subject.name, backend = %subject.backend, kind = subject.kind,
                    outcome = outcome.label(), wait_ms, error_kind = err.kind().as_str(), error = %err.message(),
                    "acquire failed")
            }
        }
    }
}

impl Drop for AcquireWatch<'_> {
    fn drop(&mut self) {
        if !self.settled {
            let waited = self.started.elapsed();
            let subject = self.subject;
            subject.series.acquire(Outcome::Cancelled, waited);
            tracing::debug!(op = "acquire", name = %subject.name, backend = %subject.backend, kind = subject.kind,
                outcome = "cancelled", wait_ms = crate::metrics::millis(waited), "the caller went away while acquiring");
        }
    }
}

/// A store acquisition (or a local handoff), boxed so that it can move into a task of its
/// own part way through.
type Acquisition = std::pin::Pin<Box<dyn Future<Output = Result<Option<(Acquired, Run)>>> + Send>>;

/// An acquisition under way in the caller's task.
struct PendingAcquire<K: HoldKind> {
    /// `None` once it has answered.
    work: Option<Acquisition>,
    hold: (String, Owner, K),
    handle: Handle<K>,
    /// Until answered: the owner's turn and the client's count of acquisitions in flight,
    /// kept by the cleanup if the caller leaves.
    abandoned: Option<(OwnedMutexGuard<()>, tokio_util::task::task_tracker::TaskTrackerToken)>,
    /// Tells the acquisition to stop waiting when the caller goes away.
    _cancel_on_drop: tokio_util::sync::DropGuard,
}

impl<K: HoldKind> Drop for PendingAcquire<K> {
    /// The caller went away before the answer: finish the acquisition in a task of its own
    /// (it stops waiting, as the cancellation says) and give back whatever it got.
    fn drop(&mut self) {
        let (Some(work), Some((turn, in_flight))) = (self.work.take(), self.abandoned.take()) else { return };
        let (key, owner, kind) = self.hold.clone();
        let handle = self.handle.clone();
        handle.engine.runtime.clone().spawn(async move {
            if let (Ok(Some((acquired, run))), Ok(store)) = (work.await, handle.store()) {
                let held = HeldLock::new(key.clone(), owner, kind, acquired);
                let _ = handoff::give_back(store.as_ref(), &held, &run.transfer).await;
            }
            drop(turn);
            drop(in_flight);
            handle.holds().tidy_key(&key, kind, owner);
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
        let holds = || client.engine().hold_count_in_table();
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
