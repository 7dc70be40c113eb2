//! How a hold learns it is gone: a one-way latch set by the watchdog, the lease timer, the
//! backend's session events or client close, and read by guards and bindings. Beside it, a
//! "suspended" flag that session-based backends raise while their connection is down.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::watch;

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

/// The setting side of the latch. The first reason wins; later ones are ignored.
#[derive(Debug, Clone)]
pub struct LostNotifier(Arc<watch::Sender<Option<LostReason>>>, Arc<AtomicBool>);

/// The reading side: cheap to clone and to query, and awaitable.
#[derive(Debug, Clone)]
pub struct LostWatch(watch::Receiver<Option<LostReason>>, Arc<AtomicBool>);

pub(crate) fn lost_latch() -> (LostNotifier, LostWatch) {
    let (tx, rx) = watch::channel(None);
    let suspended = Arc::new(AtomicBool::new(false));
    (LostNotifier(Arc::new(tx), suspended.clone()), LostWatch(rx, suspended))
}

impl LostNotifier {
    pub fn mark(&self, reason: LostReason) {
        self.0.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(reason);
                true
            } else {
                false
            }
        });
    }

    pub fn is_lost(&self) -> bool {
        self.0.borrow().is_some()
    }

    pub fn reason(&self) -> Option<LostReason> {
        self.0.borrow().clone()
    }

    /// Raised by a backend while its session's connection is down and it cannot tell whether
    /// the hold is still there (Curator's SUSPENDED); lowered when the connection is back with
    /// the session intact (Curator's RECONNECTED). A session that ends marks the hold lost.
    pub fn set_suspended(&self, suspended: bool) {
        self.1.store(suspended, Ordering::SeqCst);
    }
}

impl LostWatch {
    pub fn is_lost(&self) -> bool {
        self.0.borrow().is_some()
    }

    pub fn reason(&self) -> Option<LostReason> {
        self.0.borrow().clone()
    }

    /// See [`LostNotifier::set_suspended`]; false once the hold is lost.
    pub fn is_suspended(&self) -> bool {
        self.1.load(Ordering::SeqCst) && !self.is_lost()
    }

    /// Resolves when the hold is lost. Never resolves for a hold that is released normally,
    /// so race it against your own work rather than awaiting it alone.
    pub async fn wait(&self) -> LostReason {
        let mut rx = self.0.clone();
        loop {
            if let Some(reason) = rx.borrow_and_update().clone() {
                return reason;
            }
            if rx.changed().await.is_err() {
                // Every notifier is gone without marking: the hold can no longer be lost.
                std::future::pending::<()>().await;
            }
        }
    }
}
