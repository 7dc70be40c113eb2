//! A client's table of what it holds: per (key, owner), the hold count, the fencing token,
//! the lost latch, and the watchdog task that keeps a lease the owner did not fix.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::AbortHandle;
use tokio::time::{sleep_until, timeout_at, Instant};

use super::handoff::Run;
use super::transfer_watch::{TransferWatch, Transferred};
use crate::owner::Owner;
use crate::spi::{HeldLock, HoldKind, HoldStore, LostNotifier, LostReason, LostWatch, Renewal};

/// How a hold keeps its lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeaseMode {
    /// No lease was given: the watchdog renews `lease` every `lease / 3` while the owner lives.
    Watchdog { lease: Duration },
    /// An explicit lease: never renewed; the hold is lost when it runs out.
    Fixed { lease: Duration },
}

pub(crate) struct Hold<K: HoldKind> {
    pub count: u32,
    /// The local handoffs in a row that led to this hold (see handoff.rs).
    pub run: Run,
    pub held: Arc<HeldLock<K>>,
    pub lost: LostNotifier,
    pub watch: LostWatch,
    /// When it was recorded: the start of its hold time.
    pub granted: Instant,
    keeper: Keeper<K>,
}

/// What keeps a hold's lease. Most holds are released long before their first renewal is
/// due (a third of the lease), so a hold starts with no task at all: an explicit lease is
/// timed by the lost latch itself (see lost.rs), and a watchdog is started only for a hold
/// still there when the client's sweep passes ([`HoldTable::start_watchdogs`], every sixth
/// of the lease), in time for that first renewal. A task per hold would cost a spawn and an
/// abort per lock+unlock: from a C, Python or Java thread, two wake-ups of a runtime worker.
enum Keeper<K: HoldKind> {
    /// An explicit lease.
    Latch,
    /// A watchdog lease whose watchdog has not started yet.
    Due {
        store: Arc<dyn HoldStore<K>>,
        lease: Duration,
        attempt_started: Instant,
    },
    Watchdog(AbortHandle),
}

impl<K: HoldKind> Hold<K> {
    /// Start keeping a fresh hold; `attempt_started` is the earliest the lease can have begun.
    pub fn start(
        store: Arc<dyn HoldStore<K>>,
        held: HeldLock<K>,
        run: Run,
        mode: LeaseMode,
        attempt_started: Instant,
        lost: LostNotifier,
        watch: LostWatch,
    ) -> Hold<K> {
        let keeper = match mode {
            LeaseMode::Watchdog { lease } => Keeper::Due { store, lease, attempt_started },
            LeaseMode::Fixed { lease } => {
                // A lease too long to represent never ends.
                if let Some(end) = attempt_started.checked_add(lease - holder_margin(lease)) {
                    lost.expire_at(end);
                }
                Keeper::Latch
            }
        };
        Hold { count: 1, run, held: Arc::new(held), lost, watch, granted: Instant::now(), keeper }
    }

    pub fn is_lost(&self) -> bool {
        self.lost.is_lost()
    }

    /// Start the watchdog of a watchdog-lease hold, unless it has started already.
    fn start_watchdog(&mut self, runtime: &tokio::runtime::Handle) {
        self.keeper = match std::mem::replace(&mut self.keeper, Keeper::Latch) {
            Keeper::Due { store, lease, attempt_started } => {
                let (held, lost, transfer) = (self.held.clone(), self.lost.clone(), self.run.transfer.clone());
                Keeper::Watchdog(
                    runtime.spawn(watchdog(store, held, lease, attempt_started, lost, transfer)).abort_handle(),
                )
            }
            started_or_none => started_or_none,
        };
    }
}

impl<K: HoldKind> Drop for Hold<K> {
    fn drop(&mut self) {
        if let Keeper::Watchdog(task) = &self.keeper {
            task.abort();
        }
    }
}

/// How much sooner than the server a holder counts its lease as run out. The server's lease
/// starts when a grant or renewal arrives, after the holder sent it, so the holder's count
/// ends first; but a timer that fires late on a loaded machine, or a waiter polling at that
/// moment, can still let the server grant the lock to someone else before the holder hears it
/// lost it (the fault suite's partition cases: 17 ms apart on 2 idle cores). A tenth of the
/// lease, at most a second, keeps the holder first. Fixed leases end this much early too.
pub(crate) fn holder_margin(lease: Duration) -> Duration {
    (lease / 10).min(Duration::from_secs(1))
}

/// Renew every `lease / 3`. A renewal that finds the hold gone marks it lost at once; failing
/// renewals are retried until the lease, counted from the last renewal that was sent and
/// succeeded, has run out ([`holder_margin`] early), and then the hold is lost.
async fn watchdog<K: HoldKind>(
    store: Arc<dyn HoldStore<K>>,
    held: Arc<HeldLock<K>>,
    lease: Duration,
    attempt_started: Instant,
    lost: LostNotifier,
    transfer: TransferWatch,
) {
    // Renewals go out only once the hold is in the store (see transfer.rs).
    if transfer.wait().await == Transferred::Gone {
        return;
    }
    let interval = lease / 3;
    let retry = (interval / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
    let held_for = lease - holder_margin(lease);
    let mut lease_end = attempt_started + held_for;
    let mut next = attempt_started + interval;
    let subject = lost.subject().cloned();
    loop {
        sleep_until(next).await;
        let sent = Instant::now();
        // How late the renewal goes out after it was due, and how much lease is left then.
        let (lateness, margin) = (sent.saturating_duration_since(next), lease_end.saturating_duration_since(sent));
        let outcome = match timeout_at(lease_end, store.renew(&held, lease)).await {
            Ok(outcome) => outcome,
            Err(_) => {
                if let Some(s) = &subject {
                    s.series.renewal_failed();
                }
                lost.mark(LostReason::RenewalFailed("the backend did not answer in time".into()));
                return;
            }
        };
        match outcome {
            Ok(Renewal::Renewed) => {
                if let Some(s) = &subject {
                    s.series.renewal(lateness);
                    tracing::debug!(op = "renew", name = %s.name, backend = %s.backend, kind = s.kind,
                        lateness_ms = crate::metrics::millis(lateness), margin_ms = crate::metrics::millis(margin),
                        took_ms = crate::metrics::millis(sent.elapsed()), "renewed");
                }
                lease_end = sent + held_for;
                next = sent + interval;
            }
            Ok(Renewal::Gone) => {
                lost.mark(LostReason::Taken);
                return;
            }
            Err(err) => {
                if let Some(s) = &subject {
                    s.series.renewal_failed();
                    s.series.error(err.kind());
                    tracing::warn!(op = "renew", name = %s.name, backend = %s.backend, kind = s.kind,
                        lateness_ms = crate::metrics::millis(lateness), margin_ms = crate::metrics::millis(margin),
                        error_kind = err.kind().as_str(), error = %err.message(), "renewal failed");
                }
                if Instant::now() + retry >= lease_end {
                    lost.mark(LostReason::RenewalFailed(err.to_string()));
                    return;
                }
                next = Instant::now() + retry;
            }
        }
    }
}

/// One owner's place in the table. `turn` serializes that owner's acquisitions so that two
/// tasks sharing an owner cannot both take the lock fresh; an abandoned acquisition keeps the
/// turn until its store work is over (see `PendingAcquire`). `hold` is only touched briefly.
pub(crate) struct Slot<K: HoldKind> {
    pub turn: Arc<tokio::sync::Mutex<()>>,
    pub hold: Mutex<Option<Hold<K>>>,
}

impl<K: HoldKind> Default for Slot<K> {
    fn default() -> Self {
        Slot { turn: Arc::default(), hold: Mutex::new(None) }
    }
}

impl<K: HoldKind> Slot<K> {
    pub fn hold(&self) -> std::sync::MutexGuard<'_, Option<Hold<K>>> {
        self.hold.lock().unwrap_or_else(|e| e.into_inner())
    }
}

type SlotKey<K> = (String, K, Owner);

pub(crate) struct HoldTable<K: HoldKind> {
    slots: Mutex<HashMap<SlotKey<K>, Arc<Slot<K>>>>,
}

impl<K: HoldKind> Default for HoldTable<K> {
    fn default() -> Self {
        HoldTable { slots: Mutex::default() }
    }
}

impl<K: HoldKind> HoldTable<K> {
    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<SlotKey<K>, Arc<Slot<K>>>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn slot(&self, key: &str, kind: K, owner: Owner) -> Arc<Slot<K>> {
        self.slots().entry((key.to_string(), kind, owner)).or_default().clone()
    }

    pub fn existing(&self, key: &str, kind: K, owner: Owner) -> Option<Arc<Slot<K>>> {
        self.slots().get(&(key.to_string(), kind, owner)).cloned()
    }

    /// Drop the slot once nobody holds or waits on it, so the table does not grow with every
    /// name ever locked.
    pub fn tidy(&self, key: &str, kind: K, owner: Owner, slot: Arc<Slot<K>>) {
        let mut slots = self.slots();
        // The table's reference plus the caller's own, and nobody holding or awaiting the turn.
        if Arc::strong_count(&slot) == 2 && Arc::strong_count(&slot.turn) == 1 && slot.hold().is_none() {
            slots.remove(&(key.to_string(), kind, owner));
        }
    }

    /// `tidy` for a caller that no longer has the slot at hand.
    pub fn tidy_key(&self, key: &str, kind: K, owner: Owner) {
        if let Some(slot) = self.existing(key, kind, owner) {
            self.tidy(key, kind, owner, slot);
        }
    }

    /// Start the watchdog of every hold that needs one and has none yet (see [`Keeper`]).
    pub fn start_watchdogs(&self, runtime: &tokio::runtime::Handle) {
        for slot in self.slots().values() {
            if let Some(hold) = slot.hold().as_mut() {
                hold.start_watchdog(runtime);
            }
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.slots().len()
    }

    /// Mark lost this client's holds of `key` whose token is among `tokens` (those there
    /// before a forced unlock). The holds stay in the table, so their owners' releases report
    /// the loss.
    pub fn mark_lost(&self, key: &str, tokens: &[u64], reason: LostReason) {
        // Marked after each slot's lock is let go: marking logs, and a binding's log sink
        // (Python's, which needs the GIL) must never run under one of the core's locks.
        let latches: Vec<LostNotifier> = self
            .slots_of(key)
            .iter()
            .filter_map(|slot| {
                slot.hold().as_ref().filter(|hold| tokens.contains(&hold.held.token)).map(|hold| hold.lost.clone())
            })
            .collect();
        for lost in latches {
            lost.mark(reason.clone());
        }
    }

    /// The fencing tokens of this client's holds of `key`, whoever the owner.
    pub fn tokens_of(&self, key: &str) -> Vec<u64> {
        self.slots_of(key).iter().filter_map(|slot| slot.hold().as_ref().map(|hold| hold.held.token)).collect()
    }

    fn slots_of(&self, key: &str) -> Vec<Arc<Slot<K>>> {
        self.slots().iter().filter(|((slot_key, _, _), _)| slot_key == key).map(|(_, slot)| slot.clone()).collect()
    }

    /// Take every hold out of the table: for client close.
    pub fn drain(&self) -> Vec<Hold<K>> {
        let slots = std::mem::take(&mut *self.slots());
        slots.into_values().filter_map(|slot| slot.hold().take()).collect()
    }
}

/// An owner's slot, taken for one acquisition and tidied when dropped, however the
/// acquisition ends (including its caller going away).
pub(crate) struct TidyOnDrop<'a, K: HoldKind> {
    table: &'a HoldTable<K>,
    key: &'a str,
    kind: K,
    owner: Owner,
    slot: Option<Arc<Slot<K>>>,
}

impl<'a, K: HoldKind> TidyOnDrop<'a, K> {
    pub fn new(table: &'a HoldTable<K>, key: &'a str, kind: K, owner: Owner) -> Self {
        TidyOnDrop { table, key, kind, owner, slot: Some(table.slot(key, kind, owner)) }
    }
}

impl<K: HoldKind> std::ops::Deref for TidyOnDrop<'_, K> {
    type Target = Slot<K>;
    fn deref(&self) -> &Slot<K> {
        self.slot.as_deref().expect("present until drop")
    }
}

impl<K: HoldKind> Drop for TidyOnDrop<'_, K> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            self.table.tidy(self.key, self.kind, self.owner, slot);
        }
    }
}

/// How long giving back a hold that is already lost or surrendered may take: best effort, as
/// the store frees it at its lease end anyway, and a store cut off by a partition must not
/// keep the caller (`polylock run` exiting after its command) waiting for the network.
pub(crate) const GIVE_BACK_WAIT: Duration = Duration::from_secs(2);

/// Give up a hold at client close: mark it lost, then release it in the store.
pub(crate) async fn surrender<K: HoldKind>(store: &dyn HoldStore<K>, hold: Hold<K>) {
    hold.lost.mark(LostReason::ClientClosed);
    let (held, run) = (hold.held.clone(), hold.run.clone());
    drop(hold);
    // Best effort and bounded: a store that is down lets the lease run out instead.
    let _ = tokio::time::timeout(GIVE_BACK_WAIT, super::handoff::give_back(store, &held, &run.transfer)).await;
}
