//! Handing a lock straight to a waiter of the same client (lock cohorting).
//!
//! When an owner releases a lock that another owner of the same client is waiting for, the
//! store need not see the lock freed and taken again: the waiter rewrites the holder in one
//! backend call (`Backend::transfer`), which also issues a fresh fencing token. The lock
//! changes hands in one round trip instead of a release, a wake-up message and an acquire,
//! which is what keeps a contended lock busy rather than idle between holders.
//!
//! Waiters elsewhere (other processes, Redisson, redis-py) never see the lock free during a
//! run of local handoffs, so the run is bounded: after [`MAX_LOCAL_PASSES`] handoffs in a
//! row the lock is released to the store as usual and everyone races for it again, as in
//! Dice, Marathe and Shavit's cohort locks. Kinds that promise an order (fair locks) never
//! take part.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::backend::{AcquireRequest, Acquired, Backend, HeldLock, Release};
use crate::error::{Error, Result};
use crate::lock::LockKind;

/// How many times in a row a lock may pass between owners of one client before it is
/// released to the store, so waiters of other clients get their chance.
pub(crate) const MAX_LOCAL_PASSES: u32 = 16;

type QueueKey = (String, LockKind);

struct Waiting {
    id: u64,
    baton: oneshot::Sender<Baton>,
}

/// A client's owners that are waiting for a lock, by (key, kind), oldest first.
#[derive(Default)]
pub(crate) struct LocalWaiters {
    queues: Mutex<HashMap<QueueKey, VecDeque<Waiting>>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl LocalWaiters {
    fn queues(&self) -> std::sync::MutexGuard<'_, HashMap<QueueKey, VecDeque<Waiting>>> {
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Join the queue for (key, kind); leaving is dropping the registration.
    pub fn register(self: &Arc<Self>, key: &str, kind: LockKind) -> Registration {
        let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (baton, receiver) = oneshot::channel();
        let queue_key = (key.to_string(), kind);
        self.queues().entry(queue_key.clone()).or_default().push_back(Waiting { id, baton });
        Registration { waiters: self.clone(), key: queue_key, id, receiver }
    }

    /// Give the baton to the oldest waiter still listening. Hands it back if there is none.
    pub fn hand_over(&self, key: &str, kind: LockKind, mut baton: Baton) -> std::result::Result<(), Baton> {
        let queue_key = (key.to_string(), kind);
        let mut queues = self.queues();
        let Some(queue) = queues.get_mut(&queue_key) else { return Err(baton) };
        while let Some(waiting) = queue.pop_front() {
            match waiting.baton.send(baton) {
                Ok(()) => {
                    if queue.is_empty() {
                        queues.remove(&queue_key);
                    }
                    return Ok(());
                }
                // That waiter is finishing on its own; try the next.
                Err(returned) => baton = returned,
            }
        }
        queues.remove(&queue_key);
        Err(baton)
    }

    fn leave(&self, key: &QueueKey, id: u64) {
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
pub(crate) struct Registration {
    waiters: Arc<LocalWaiters>,
    key: QueueKey,
    id: u64,
    receiver: oneshot::Receiver<Baton>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.waiters.leave(&self.key, self.id);
        // A baton that arrived unread is dropped with the receiver, and releases (see Baton).
    }
}

/// The releasing owner's hold, on its way to a waiter. Whoever ends up with it must either
/// transfer it or release it; dropping it releases it, so a waiter that goes away at the
/// wrong moment cannot leave the lock held by an owner that has already let go.
pub(crate) struct Baton {
    from: Arc<HeldLock>,
    /// How many local handoffs in a row led to the releasing owner's hold.
    passes: u32,
    backend: Arc<dyn Backend>,
    runtime: tokio::runtime::Handle,
    /// The releasing owner waits here for what became of its hold.
    reply: Option<oneshot::Sender<Result<Release>>>,
}

impl Baton {
    pub fn new(
        from: Arc<HeldLock>,
        passes: u32,
        backend: Arc<dyn Backend>,
        runtime: tokio::runtime::Handle,
    ) -> (Baton, oneshot::Receiver<Result<Release>>) {
        let (reply, outcome) = oneshot::channel();
        (Baton { from, passes, backend, runtime, reply: Some(reply) }, outcome)
    }

    /// Nobody took the baton: the releasing owner releases in the store itself.
    pub fn into_hold(mut self) -> Arc<HeldLock> {
        self.reply = None;
        self.from.clone()
    }

    /// Make `request`'s owner the holder. `None` when the releasing owner's hold was no
    /// longer in the store (it expired or was taken), and then nothing was changed.
    async fn take_over(mut self, request: &AcquireRequest) -> Result<Option<(Acquired, u32)>> {
        let sent = Instant::now();
        let outcome = self.backend.transfer(&self.from, request.owner, request.lease).await;
        let reply = match &outcome {
            Ok(Some(_)) => Ok(Release::Released),
            Ok(None) => Ok(Release::Gone),
            Err(err) => {
                // Whether the store changed hands is unknown: free it as the releasing owner,
                // which removes nothing of anyone else's.
                let _ = self.backend.release(&self.from, 0).await;
                Err(Error::new(err.kind(), err.message().to_string()))
            }
        };
        if let Some(sender) = self.reply.take() {
            let _ = sender.send(reply);
        }
        let passes = self.passes + 1;
        outcome.map(|acquired| {
            acquired.map(|mut acquired| {
                acquired.attempt_started = sent;
                (acquired, passes)
            })
        })
    }
}

impl Drop for Baton {
    fn drop(&mut self) {
        let Some(reply) = self.reply.take() else { return };
        let (backend, from) = (self.backend.clone(), self.from.clone());
        self.runtime.spawn(async move {
            let _ = reply.send(backend.release(&from, 0).await);
        });
    }
}

/// Wait for the lock as `request` says, or for a local owner to hand it over, whichever
/// comes first. Returns the hold and how many local handoffs in a row led to it.
pub(crate) async fn acquire_or_take_over(
    backend: &Arc<dyn Backend>,
    request: &AcquireRequest,
    waiters: Option<&Arc<LocalWaiters>>,
) -> Result<Option<(Acquired, u32)>> {
    let Some(waiters) = waiters else {
        return Ok(backend.acquire(request).await?.map(|acquired| (acquired, 0)));
    };
    loop {
        let mut registration = waiters.register(&request.key, request.kind);
        let woke = {
            let acquire = backend.acquire(request);
            tokio::pin!(acquire);
            tokio::select! {
                biased;
                baton = &mut registration.receiver => Woke::Baton(baton.ok()),
                acquired = &mut acquire => Woke::Acquired(acquired),
            }
            // Our own store attempt is dropped here, before any transfer is sent: both go
            // down the same connection in order, so the attempt cannot land after it.
        };
        drop(registration);
        match woke {
            Woke::Acquired(acquired) => return Ok(acquired?.map(|acquired| (acquired, 0))),
            Woke::Baton(None) => {}
            Woke::Baton(Some(baton)) => {
                if let Ok(Some(taken)) = baton.take_over(request).await {
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

enum Woke {
    Baton(Option<Baton>),
    Acquired(Result<Option<Acquired>>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::HeldLock;
    use crate::Client;

    /// Waiters are served oldest first, one that left is skipped, and the queues empty out.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_oldest_waiter_still_there_gets_the_baton() {
        let client = Client::connect("mem://handoff-queue").await.unwrap();
        let inner = client.inner();
        let waiters = Arc::new(LocalWaiters::default());
        let baton = || {
            let acquired = Acquired { token: 7, attempt_started: Instant::now(), state: None };
            let held = HeldLock::new("k".into(), client.lock("k").unwrap().owner(), LockKind::Reentrant, acquired);
            Baton::new(Arc::new(held), 3, inner.backend.clone(), inner.runtime.clone()).0
        };
        let gone = waiters.register("k", LockKind::Reentrant);
        let mut second = waiters.register("k", LockKind::Reentrant);
        let mut third = waiters.register("k", LockKind::Reentrant);
        let other_kind = waiters.register("k", LockKind::Token);
        assert_eq!(waiters.len(), 4);
        drop(gone);
        assert!(waiters.hand_over("k", LockKind::Reentrant, baton()).is_ok());
        let got = second.receiver.try_recv().expect("the oldest waiter left gets it");
        assert_eq!(got.passes, 3);
        drop(got.into_hold());
        assert!(third.receiver.try_recv().is_err(), "one baton, one waiter");
        drop((second, third, other_kind));
        assert_eq!(waiters.len(), 0);
        let returned = waiters.hand_over("k", LockKind::Reentrant, baton()).expect_err("nobody is waiting");
        assert_eq!(returned.into_hold().token, 7);
    }
}
