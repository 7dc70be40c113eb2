//! How a hold learns it is gone: a one-way latch set by the watchdog, the lease timer, the
//! backend's session events or client close, and read by guards and bindings. Beside it, a
//! "suspended" flag that session-based backends raise while their connection is down.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};

use crate::metrics::Subject;

/// Why a hold stopped being held without its owner releasing it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LostReason {
    /// An explicit lease ran out before the owner released the lock.
    LeaseExpired,
    /// Renewal found the lock record gone or owned by someone else.
    Taken,
    /// The backend could not be reached for longer than the lease.
    RenewalFailed(String),
    /// The backend session behind the hold ended (etcd lease, ZooKeeper session, SQL connection).
    SessionEnded(String),
    /// The client that held the lock was closed or dropped.
    ClientClosed,
}

impl LostReason {
    /// A stable snake-case name, for metrics labels and log fields
    /// (`polylock::metrics::LOST_REASONS`).
    pub fn label(&self) -> &'static str {
        match self {
            LostReason::LeaseExpired => "lease_expired",
            LostReason::Taken => "taken",
            LostReason::RenewalFailed(_) => "renewal_failed",
            LostReason::SessionEnded(_) => "session_ended",
            LostReason::ClientClosed => "client_closed",
        }
    }
}

impl fmt::Display for LostReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LostReason::LeaseExpired => f.write_str("its lease expired before it was released"),
            LostReason::Taken => f.write_str("the backend no longer has it for this owner (removed or taken over)"),
            LostReason::RenewalFailed(why) => write!(f, "it could not be renewed within its lease ({why})"),
            LostReason::SessionEnded(why) => write!(f, "the backend session ended ({why})"),
            LostReason::ClientClosed => f.write_str("its client was closed"),
        }
    }
}

/// What both sides share.
#[derive(Debug)]
struct Latch {
    reason: watch::Sender<Option<LostReason>>,
    suspended: AtomicBool,
    /// When an explicit lease runs out. The hold is lost from then on, and whoever looks
    /// first records it: a timer task per hold would cost a spawn and an abort per lock+unlock.
    lease_end: OnceLock<Instant>,
    /// What the hold is of, for the loss's event and count (none for latches made outside
    /// the engine).
    subject: Option<Arc<Subject>>,
}

impl Latch {
    fn mark(&self, reason: LostReason) {
        let mut first = None;
        self.reason.send_if_modified(|current| {
            if current.is_none() {
                first = Some((reason.label(), reason.to_string()));
                *current = Some(reason);
                true
            } else {
                false
            }
        });
        // The one place every loss passes, whoever found it (watchdog, lease, session, close).
        if let (Some((label, why)), Some(subject)) = (first, &self.subject) {
            subject.series.lost(label);
            if label == "client_closed" {
                tracing::debug!(op = "lost", name = %subject.name, backend = %subject.backend, kind = subject.kind,
                    reason = label, detail = %why, "hold given up as its client closed");
            } else {
                tracing::warn!(op = "lost", name = %subject.name, backend = %subject.backend, kind = subject.kind,
                    reason = label, detail = %why, "hold lost");
            }
        }
    }

    /// Record a lease that has run out, so that it wins over any later reason.
    fn settle(&self) {
        if self.lease_end.get().is_some_and(|&end| Instant::now() >= end) {
            self.mark(LostReason::LeaseExpired);
        }
    }

    fn reason(&self) -> Option<LostReason> {
        self.settle();
        self.reason.borrow().clone()
    }
}

/// The setting side of the latch. The first reason wins; later ones are ignored.
#[derive(Debug, Clone)]
pub struct LostNotifier(Arc<Latch>);

/// The reading side: cheap to clone and to query, and awaitable.
#[derive(Debug, Clone)]
pub struct LostWatch(Arc<Latch>);

pub(crate) fn lost_latch() -> (LostNotifier, LostWatch) {
    lost_latch_of(None)
}

/// A latch whose loss is logged and counted under `subject`.
pub(crate) fn lost_latch_of(subject: Option<Arc<Subject>>) -> (LostNotifier, LostWatch) {
    let latch = Arc::new(Latch {
        reason: watch::Sender::new(None),
        suspended: AtomicBool::new(false),
        lease_end: OnceLock::new(),
        subject,
    });
    (LostNotifier(latch.clone()), LostWatch(latch))
}

impl LostNotifier {
    pub fn mark(&self, reason: LostReason) {
        self.0.settle();
        self.0.mark(reason);
    }

    pub fn is_lost(&self) -> bool {
        self.0.reason().is_some()
    }

    pub fn reason(&self) -> Option<LostReason> {
        self.0.reason()
    }

    /// The hold's explicit lease ends at `end`: from then on it is lost with `LeaseExpired`
    /// unless something else was first. Set once; a later call is ignored.
    pub(crate) fn expire_at(&self, end: Instant) {
        if self.0.lease_end.set(end).is_ok() {
            // Wake any `wait` already under way so that it starts timing the lease.
            self.0.reason.send_modify(|_| ());
        }
    }

    /// Raised by a backend while its session's connection is down and it cannot tell whether
    /// the hold is still there (Curator's SUSPENDED); lowered when the connection is back with
    /// the session intact (Curator's RECONNECTED). A session that ends marks the hold lost.
    pub fn set_suspended(&self, suspended: bool) {
        self.0.suspended.store(suspended, Ordering::SeqCst);
    }

    /// What the hold is of, when the engine made the latch.
    pub(crate) fn subject(&self) -> Option<&Arc<Subject>> {
        self.0.subject.as_ref()
    }
}

impl LostWatch {
    pub fn is_lost(&self) -> bool {
        self.0.reason().is_some()
    }

    pub fn reason(&self) -> Option<LostReason> {
        self.0.reason()
    }

    /// See [`LostNotifier::set_suspended`]; false once the hold is lost.
    pub fn is_suspended(&self) -> bool {
        self.0.suspended.load(Ordering::SeqCst) && !self.is_lost()
    }

    /// Resolves when the hold is lost. Never resolves for a hold that is released normally,
    /// so race it against your own work rather than awaiting it alone. Needs a tokio runtime
    /// with its timer, which times an explicit lease.
    pub async fn wait(&self) -> LostReason {
        let mut changes = self.0.reason.subscribe();
        loop {
            changes.borrow_and_update();
            if let Some(reason) = self.0.reason() {
                return reason;
            }
            // The sender lives as long as this watch does, so `changed` cannot fail.
            match self.0.lease_end.get() {
                Some(&end) => {
                    tokio::select! {
                        _ = changes.changed() => {}
                        _ = sleep_until(end) => {}
                    }
                }
                None => {
                    let _ = changes.changed().await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_lease_that_runs_out_is_lost_without_a_timer_task() {
        let (notifier, watch) = lost_latch();
        notifier.expire_at(Instant::now() + Duration::from_millis(50));
        assert!(!watch.is_lost());
        let waiting = tokio::spawn({
            let watch = watch.clone();
            async move { watch.wait().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(watch.reason(), Some(LostReason::LeaseExpired));
        assert_eq!(waiting.await.unwrap(), LostReason::LeaseExpired);
    }

    #[tokio::test]
    async fn an_expired_lease_wins_over_a_later_reason() {
        let (notifier, watch) = lost_latch();
        notifier.expire_at(Instant::now() + Duration::from_millis(30));
        tokio::time::sleep(Duration::from_millis(60)).await;
        notifier.mark(LostReason::ClientClosed);
        assert_eq!(watch.reason(), Some(LostReason::LeaseExpired));
    }

    #[tokio::test]
    async fn the_first_reason_before_the_lease_ends_wins() {
        let (notifier, watch) = lost_latch();
        notifier.expire_at(Instant::now() + Duration::from_millis(30));
        let waiting = tokio::spawn({
            let watch = watch.clone();
            async move { watch.wait().await }
        });
        tokio::task::yield_now().await;
        notifier.mark(LostReason::Taken);
        assert_eq!(waiting.await.unwrap(), LostReason::Taken);
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert_eq!(watch.reason(), Some(LostReason::Taken));
    }
}
