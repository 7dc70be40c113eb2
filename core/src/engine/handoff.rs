//! Handing a lock straight to a waiter of the same client (lock cohorting).
//!
//! When an owner releases a lock that another owner of the same client is waiting for, the
//! store need not see the lock freed and taken again: the waiter rewrites the holder in one
//! backend call (`HoldStore::transfer`), which also issues a fresh fencing token. The lock
//! changes hands in one round trip instead of a release, a wake-up message and an acquire,
//! which is what keeps a contended lock busy rather than idle between holders.
//!
//! Where the backend sets each hold's token + 1 aside for the owner it may be handed to
//! (`HoldStore::reserves_next_token`), the new owner does not even wait for that round trip: it
//! starts at once with the reserved token, and the transfer lands behind it (transfer.rs).
//! That is safe because the store shows the lock held by this client throughout, and the
//! token was drawn from the store's counter before any later holder's: should the releasing
//! owner's hold turn out to be gone, the new owner is marked lost within the round trip and
//! anyone who took the lock meanwhile holds a greater token, so fencing rejects the stale one.
//!
//! Waiters elsewhere (other processes, Redisson, redis-py) never see the lock free during a
//! run of local handoffs, so the run is bounded: after [`MAX_LOCAL_PASSES`] handoffs in a
//! row the lock is released to the store as usual, as in Dice, Marathe and Shavit's cohort
//! locks, and this client's owners stand aside for a few round trips so that a waiter
//! elsewhere, woken by the unlock message, gets in before they take it straight back. Where
//! the store's own queue hands the lock to its oldest waiter (`HoldStore::grants_in_order`:
//! PostgreSQL and MySQL session locks), nobody stands aside: the waiters elsewhere are ahead
//! of ours in that queue already. Kinds that promise an order (fair locks) never take part.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::transfer_watch::{TransferWatch, Transferred};
use crate::error::{Error, Result};
use crate::owner::Owner;
use crate::spi::{AcquireRequest, Acquired, HeldLock, HoldKind, HoldStore, LostNotifier, LostReason, Release};

/// How many times in a row a lock may pass between owners of one client before it is
/// released to the store, so waiters of other clients get their chance.
pub(crate) const MAX_LOCAL_PASSES: u32 = 64;

/// How long this client's owners keep off a lock after a run of handoffs ends, in round trips
/// of the last handoff (the release, the unlock message reaching a waiter elsewhere, and that
/// waiter's attempt), and within what bounds.
const STAND_ASIDE_ROUND_TRIPS: u32 = 3;
const STAND_ASIDE_MIN: Duration = Duration::from_millis(1);
const STAND_ASIDE_MAX: Duration = Duration::from_millis(20);

/// How a hold came about through local handoffs: how many in a row led to it, and whether
/// the last one has landed in the store.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub passes: u32,
    pub transfer: TransferWatch,
}

impl Run {
    /// A hold the store granted directly.
    pub fn from_store() -> Run {
        Run { passes: 0, transfer: TransferWatch::done(Duration::ZERO) }
    }

    /// Whether the next full release ends the run instead of handing the lock on.
    pub fn is_over(&self) -> bool {
        self.passes >= MAX_LOCAL_PASSES
    }
}

type QueueKey<K> = (String, K);

/// What a waiting owner is told.
enum Signal<K: HoldKind> {
    /// The lock is yours: take it over.
    Handover(Handover<K>),
    /// The lock is about to go back to the store: keep off it until then.
    KeepOff(Instant),
}

struct Waiting<K: HoldKind> {
    id: u64,
    signal: oneshot::Sender<Signal<K>>,
}

/// A client's owners that are waiting for a lock, by (key, kind), oldest first.
pub(crate) struct LocalWaiters<K: HoldKind> {
    queues: Mutex<HashMap<QueueKey<K>, VecDeque<Waiting<K>>>>,
    /// Locks this client's owners keep off until the given instant (see `keep_off_for_others`).
    kept_off: Mutex<HashMap<QueueKey<K>, Instant>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl<K: HoldKind> Default for LocalWaiters<K> {
    fn default() -> Self {
        LocalWaiters { queues: Mutex::default(), kept_off: Mutex::default(), next_id: Default::default() }
    }
}

impl<K: HoldKind> LocalWaiters<K> {
    fn queues(&self) -> std::sync::MutexGuard<'_, HashMap<QueueKey<K>, VecDeque<Waiting<K>>>> {
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Join the queue for (key, kind); leaving is dropping the registration.
    pub fn register(self: &Arc<Self>, key: &str, kind: K) -> Registration<K> {
        let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (signal, receiver) = oneshot::channel();
        let queue_key = (key.to_string(), kind);
        self.queues().entry(queue_key.clone()).or_default().push_back(Waiting { id, signal });
        Registration { waiters: self.clone(), key: queue_key, id, receiver }
    }

    /// Give the hold to the oldest waiter still listening. Hands it back if there is none.
    pub fn hand_over(&self, key: &str, kind: K, mut handover: Handover<K>) -> std::result::Result<(), Handover<K>> {
        let queue_key = (key.to_string(), kind);
        let mut queues = self.queues();
        let Some(queue) = queues.get_mut(&queue_key) else { return Err(handover) };
        while let Some(waiting) = queue.pop_front() {
            match waiting.signal.send(Signal::Handover(handover)) {
                Ok(()) => {
                    if queue.is_empty() {
                        queues.remove(&queue_key);
                    }
                    return Ok(());
                }
                // That waiter is finishing on its own; try the next.
                Err(Signal::Handover(returned)) => handover = returned,
                Err(Signal::KeepOff(_)) => unreachable!("a handover was sent"),
            }
        }
        queues.remove(&queue_key);
        Err(handover)
    }

    /// A run of handoffs is ending: before the lock goes back to the store, keep this
    /// client's owners off it for a few store round trips, long enough for a waiter
    /// elsewhere to hear the unlock message and get its attempt in. Without this, the owner
    /// that released (or another of ours, woken by the same message) usually takes the lock
    /// straight back and the bound on handoffs would help nobody.
    ///
    /// It must be called while the lock is still held: waiters drop their store attempts on
    /// the signal, which is harmless only while those attempts cannot have succeeded.
    /// Where waiters elsewhere poll instead of hearing a message (`others_poll`, their longest
    /// pause between attempts), the stand-aside also covers one whole pause.
    pub fn keep_off_for_others(&self, key: &str, kind: K, round_trip: Duration, others_poll: Option<Duration>) {
        let keep_off = (round_trip * STAND_ASIDE_ROUND_TRIPS).clamp(STAND_ASIDE_MIN, STAND_ASIDE_MAX)
            + others_poll.unwrap_or_default();
        let until = Instant::now() + keep_off;
        let queue_key = (key.to_string(), kind);
        {
            let mut standing = self.kept_off.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            standing.retain(|_, until| *until > now);
            standing.insert(queue_key.clone(), until);
        }
        // Every waiter leaves the queue and comes back after the stand-aside.
        for waiting in self.queues().remove(&queue_key).unwrap_or_default() {
            let _ = waiting.signal.send(Signal::KeepOff(until));
        }
    }

    /// Whether an owner of this client is waiting for (key, kind) now.
    pub fn is_waited_for(&self, key: &str, kind: K) -> bool {
        self.queues().contains_key(&(key.to_string(), kind))
    }

    /// When the stand-aside on (key, kind) ends, if one is on.
    fn kept_off_until(&self, key: &QueueKey<K>) -> Option<Instant> {
        let standing = self.kept_off.lock().unwrap_or_else(|e| e.into_inner());
        standing.get(key).copied().filter(|until| *until > Instant::now())
    }

    fn leave(&self, key: &QueueKey<K>, id: u64) {
        let mut queues = self.queues();
        if let Some(queue) = queues.get_mut(key) {
            queue.retain(|waiting| waiting.id != id);
            if queue.is_empty() {
                queues.remove(key);
            }
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.queues().values().map(VecDeque::len).sum()
    }
}

/// One waiter's place in a [`LocalWaiters`] queue.
pub(crate) struct Registration<K: HoldKind> {
    waiters: Arc<LocalWaiters<K>>,
    key: QueueKey<K>,
    id: u64,
    receiver: oneshot::Receiver<Signal<K>>,
}

impl<K: HoldKind> Drop for Registration<K> {
    fn drop(&mut self) {
        self.waiters.leave(&self.key, self.id);
        // A handover that arrived unread is dropped with the receiver, and releases (see Handover).
    }
}

/// The releasing owner's hold, on its way to a waiter. Whoever ends up with it must either
/// transfer it or release it; dropping it releases it, so a waiter that goes away at the
/// wrong moment cannot leave the lock held by an owner that has already let go.
pub(crate) struct Handover<K: HoldKind> {
    from: Arc<HeldLock<K>>,
    /// The handoffs in a row that led to the releasing owner's hold.
    run: Run,
    store: Arc<dyn HoldStore<K>>,
    runtime: tokio::runtime::Handle,
    /// The releasing owner waits here for what became of its hold.
    reply: Option<oneshot::Sender<Result<Release>>>,
}

impl<K: HoldKind> Handover<K> {
    pub fn new(
        from: Arc<HeldLock<K>>,
        run: Run,
        store: Arc<dyn HoldStore<K>>,
        runtime: tokio::runtime::Handle,
    ) -> (Handover<K>, oneshot::Receiver<Result<Release>>) {
        let (reply, outcome) = oneshot::channel();
        (Handover { from, run, store, runtime, reply: Some(reply) }, outcome)
    }

    /// Nobody took the hold: the releasing owner releases in the store itself.
    pub fn into_hold(mut self) -> Arc<HeldLock<K>> {
        self.reply = None;
        self.from.clone()
    }

    /// Make `request`'s owner the holder. `None` when the releasing owner's hold was no
    /// longer in the store (it expired or was taken), and then nothing was changed.
    ///
    /// Where the backend reserves the next token, the new owner starts at once with it and
    /// the transfer lands behind it; otherwise the new owner waits for the transfer.
    async fn take_over(self, request: &AcquireRequest<K>) -> Option<(Acquired, Run)> {
        // The releasing owner's own hold must be in the store before it can move on.
        let Transferred::Held { .. } = self.run.transfer.wait().await else { return None };
        let passes = self.run.passes + 1;
        let started = Instant::now();
        if !self.store.reserves_next_token(self.from.kind) {
            let acquired = self.transfer(request.owner, request.lease, &request.lost).await.ok()??;
            let transfer = TransferWatch::done(started.elapsed());
            return Some((Acquired { attempt_started: started, ..acquired }, Run { passes, transfer }));
        }
        let token = self.from.token + 1;
        let (reporter, transfer) = TransferWatch::pending();
        let (key, owner, kind, lease) = (request.key.clone(), request.owner, request.kind, request.lease);
        let lost = request.lost.clone();
        // The hold moves as it is: its store-side state (a connection, a key) goes with it.
        let state = self.from.state.clone();
        let runtime = self.runtime.clone();
        runtime.spawn(async move {
            let store = self.store.clone();
            let landed = match self.transfer(owner, lease, &lost).await {
                Ok(Some(acquired)) if acquired.token == token => Transferred::Held { round_trip: started.elapsed() },
                Ok(Some(acquired)) => {
                    // Another token was drawn since ours was set aside, so ours may not be
                    // the newest: give the hold up rather than hold it under a stale token.
                    lost.mark(LostReason::Taken);
                    let held = HeldLock::new(key, owner, kind, acquired);
                    let _ = store.release(&held, 0).await;
                    Transferred::Gone
                }
                Ok(None) => {
                    lost.mark(LostReason::Taken);
                    Transferred::Gone
                }
                Err(err) => {
                    lost.mark(LostReason::RenewalFailed(err.to_string()));
                    Transferred::Gone
                }
            };
            reporter.report(landed);
        });
        Some((Acquired { token, attempt_started: started, state }, Run { passes, transfer }))
    }

    /// Send the transfer to `to` and tell the releasing owner how it went.
    async fn transfer(mut self, to: Owner, lease: Duration, lost: &LostNotifier) -> Result<Option<Acquired>> {
        let outcome = self.store.transfer(&self.from, to, lease, lost).await;
        let reply = match &outcome {
            Ok(Some(_)) => Ok(Release::Released),
            Ok(None) => Ok(Release::Gone),
            Err(err) => {
                // Whether the store changed hands is unknown: free it as the releasing owner,
                // which removes nothing of anyone else's.
                let _ = self.store.release(&self.from, 0).await;
                Err(Error::new(err.kind(), err.message().to_string()))
            }
        };
        if let Some(sender) = self.reply.take() {
            let _ = sender.send(reply);
        }
        outcome
    }
}

impl<K: HoldKind> Drop for Handover<K> {
    fn drop(&mut self) {
        let Some(reply) = self.reply.take() else { return };
        let (store, from, transfer) = (self.store.clone(), self.from.clone(), self.run.transfer.clone());
        self.runtime.spawn(async move {
            let _ = reply.send(give_back(store.as_ref(), &from, &transfer).await);
        });
    }
}

/// Release a hold nobody is going to use (its owner let go, or its acquirer went away), once
/// it is in the store; one whose transfer did not land is already gone.
pub(crate) async fn give_back<K: HoldKind>(
    store: &dyn HoldStore<K>,
    held: &HeldLock<K>,
    transfer: &TransferWatch,
) -> Result<Release> {
    match transfer.wait().await {
        Transferred::Held { .. } => store.release(held, 0).await,
        Transferred::Gone => Ok(Release::Gone),
    }
}

/// Wait for the lock as `request` says, or for a local owner to hand it over, whichever
/// comes first. Returns the hold and the run of local handoffs that led to it.
pub(crate) async fn acquire_or_take_over<K: HoldKind>(
    store: &Arc<dyn HoldStore<K>>,
    request: &AcquireRequest<K>,
    waiters: Option<&Arc<LocalWaiters<K>>>,
) -> Result<Option<(Acquired, Run)>> {
    let Some(waiters) = waiters else {
        return Ok(store.acquire(request).await?.map(|acquired| (acquired, Run::from_store())));
    };
    let queue_key = (request.key.clone(), request.kind);
    loop {
        let mut registration = waiters.register(&request.key, request.kind);
        // Checked after joining the queue: `keep_off_for_others` records the keep-off before it
        // signals the queue, so a waiter either sees the record here or gets the signal.
        // Once the deadline has passed, the one attempt left is made whatever.
        let deadline_passed = request.deadline.is_some_and(|deadline| Instant::now() >= deadline);
        if let Some(until) = waiters.kept_off_until(&queue_key).filter(|_| !deadline_passed) {
            drop(registration);
            keep_off(request, until).await;
            if request.cancel.is_cancelled() {
                return Ok(None);
            }
            continue;
        }
        let woke = {
            let acquire = store.acquire(request);
            tokio::pin!(acquire);
            tokio::select! {
                biased;
                signal = &mut registration.receiver => Woke::Signal(signal.ok()),
                acquired = &mut acquire => Woke::Acquired(acquired),
            }
            // Our own store attempt is dropped here, while the lock is still held by the
            // owner that signalled, and before it sends a transfer or release. Where both go
            // down one connection in order (Redis), the attempt cannot land after either;
            // where a dropped statement may still land (pooled SQL connections), the backend
            // gives back whatever it wins for an acquirer that is gone.
        };
        drop(registration);
        match woke {
            Woke::Acquired(acquired) => return Ok(acquired?.map(|acquired| (acquired, Run::from_store()))),
            Woke::Signal(None) => {}
            Woke::Signal(Some(Signal::KeepOff(until))) => keep_off(request, until).await,
            Woke::Signal(Some(Signal::Handover(handover))) => {
                if let Some(taken) = handover.take_over(request).await {
                    return Ok(Some(taken));
                }
                // The releasing owner's hold was gone: wait on as usual.
            }
        }
        if request.cancel.is_cancelled() {
            return Ok(None);
        }
    }
}

/// Wait until `until`, or `request`'s deadline if that is sooner (the attempt that follows is
/// then its last), or until it is cancelled.
async fn keep_off<K: HoldKind>(request: &AcquireRequest<K>, until: Instant) {
    let until = request.deadline.map_or(until, |deadline| deadline.min(until));
    tokio::select! {
        _ = tokio::time::sleep_until(until) => {}
        _ = request.cancel.cancelled() => {}
    }
}

enum Woke<K: HoldKind> {
    Signal(Option<Signal<K>>),
    Acquired(Result<Option<Acquired>>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spi::LockKind;
    use crate::Client;

    /// Waiters are served oldest first, one that left is skipped, and the queues empty out.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_oldest_waiter_still_there_gets_the_hold() {
        let client = Client::connect("mem://handoff-queue").await.unwrap();
        let store = client.engine().lock_store();
        let waiters = Arc::new(LocalWaiters::default());
        let handover = || {
            let acquired = Acquired { token: 7, attempt_started: Instant::now(), state: None };
            let held = HeldLock::new("k".into(), client.lock("k").unwrap().owner(), LockKind::Reentrant, acquired);
            let run = Run { passes: 3, transfer: TransferWatch::done(Duration::ZERO) };
            Handover::new(Arc::new(held), run, store.clone(), tokio::runtime::Handle::current()).0
        };
        let gone = waiters.register("k", LockKind::Reentrant);
        let mut second = waiters.register("k", LockKind::Reentrant);
        let mut third = waiters.register("k", LockKind::Reentrant);
        let other_kind = waiters.register("k", LockKind::Token);
        assert_eq!(waiters.len(), 4);
        drop(gone);
        assert!(waiters.hand_over("k", LockKind::Reentrant, handover()).is_ok());
        let Ok(Signal::Handover(got)) = second.receiver.try_recv() else { panic!("the oldest waiter left gets it") };
        assert_eq!(got.run.passes, 3);
        drop(got.into_hold());
        assert!(third.receiver.try_recv().is_err(), "one handover, one waiter");
        drop((second, third, other_kind));
        assert_eq!(waiters.len(), 0);
        let returned = waiters.hand_over("k", LockKind::Reentrant, handover()).expect_err("nobody is waiting");
        assert_eq!(returned.into_hold().token, 7);
    }
}
