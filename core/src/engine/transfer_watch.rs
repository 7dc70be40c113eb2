//! Whether a hold is in the store yet.
//!
//! A hold handed on locally with a reserved token (see handoff.rs) starts before the
//! transfer that names its owner has reached the store. Until that transfer lands, nothing
//! else may be sent for the hold (a renewal, a re-entry, a release, the next handoff): each
//! waits here first, so the store always sees them after the transfer. A transfer that does
//! not land makes the hold lost (the one that sent it marks it so).

use std::time::Duration;

use tokio::sync::watch;

/// Where a hold stands in the store; cheap to clone and to wait on.
#[derive(Debug, Clone)]
pub(crate) struct TransferWatch(watch::Receiver<Option<Transferred>>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transferred {
    /// The store names the hold's owner. `round_trip` is how long the transfer that put it
    /// there took, zero for a hold the store granted directly.
    Held { round_trip: Duration },
    /// The transfer did not land: the hold never was the owner's.
    Gone,
}

/// The sending end of a pending transfer. Dropping it unsent counts as [`Transferred::Gone`].
pub(crate) struct TransferReporter(watch::Sender<Option<Transferred>>);

impl TransferReporter {
    pub fn report(self, outcome: Transferred) {
        let _ = self.0.send(Some(outcome));
    }
}

impl TransferWatch {
    /// A hold already in the store.
    pub fn done(round_trip: Duration) -> TransferWatch {
        TransferWatch(watch::channel(Some(Transferred::Held { round_trip })).1)
    }

    /// A hold whose transfer is on its way; the [`TransferReporter`] reports how it went.
    pub fn pending() -> (TransferReporter, TransferWatch) {
        let (sender, receiver) = watch::channel(None);
        (TransferReporter(sender), TransferWatch(receiver))
    }

    /// How it went, once it has gone one way or the other; at once for a landed hold.
    pub async fn wait(&self) -> Transferred {
        let mut receiver = self.0.clone();
        let landed = match receiver.wait_for(Option::is_some).await {
            Ok(landed) => landed.unwrap_or(Transferred::Gone),
            Err(_) => Transferred::Gone,
        };
        landed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_landing_reports_how_the_transfer_went() {
        assert_eq!(TransferWatch::done(Duration::ZERO).wait().await, Transferred::Held { round_trip: Duration::ZERO });

        let (reporter, transfer) = TransferWatch::pending();
        let waiting = tokio::spawn({
            let transfer = transfer.clone();
            async move { transfer.wait().await }
        });
        let held = Transferred::Held { round_trip: Duration::from_millis(1) };
        reporter.report(held);
        assert_eq!(waiting.await.unwrap(), held);
        assert_eq!(transfer.wait().await, held, "later waiters see it too");

        let (reporter, transfer) = TransferWatch::pending();
        drop(reporter);
        assert_eq!(transfer.wait().await, Transferred::Gone, "a transfer nobody reports on did not land");
    }
}
