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
pub(crate) struct Landing(watch::Receiver<Option<Landed>>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Landed {
    /// The store names the hold's owner. `round_trip` is how long the transfer that put it
    /// there took, zero for a hold the store granted directly.
    Held { round_trip: Duration },
    /// The transfer did not land: the hold never was the owner's.
    Gone,
}

/// The sending end of an in-flight landing. Dropping it unsent counts as [`Landed::Gone`].
pub(crate) struct Lander(watch::Sender<Option<Landed>>);

impl Lander {
    pub fn land(self, landed: Landed) {
        let _ = self.0.send(Some(landed));
    }
}

impl Landing {
    /// A hold already in the store.
    pub fn landed(round_trip: Duration) -> Landing {
        Landing(watch::channel(Some(Landed::Held { round_trip })).1)
    }

    /// A hold whose transfer is on its way; the [`Lander`] reports how it went.
    pub fn in_flight() -> (Lander, Landing) {
        let (sender, receiver) = watch::channel(None);
        (Lander(sender), Landing(receiver))
    }

    /// How it went, once it has gone one way or the other; at once for a landed hold.
    pub async fn wait(&self) -> Landed {
        let mut receiver = self.0.clone();
        let landed = match receiver.wait_for(Option::is_some).await {
            Ok(landed) => landed.unwrap_or(Landed::Gone),
            Err(_) => Landed::Gone,
        };
        landed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_landing_reports_how_the_transfer_went() {
        assert_eq!(Landing::landed(Duration::ZERO).wait().await, Landed::Held { round_trip: Duration::ZERO });

        let (lander, landing) = Landing::in_flight();
        let waiting = tokio::spawn({
            let landing = landing.clone();
            async move { landing.wait().await }
        });
        let held = Landed::Held { round_trip: Duration::from_millis(1) };
        lander.land(held);
        assert_eq!(waiting.await.unwrap(), held);
        assert_eq!(landing.wait().await, held, "later waiters see it too");

        let (lander, landing) = Landing::in_flight();
        drop(lander);
        assert_eq!(landing.wait().await, Landed::Gone, "a transfer nobody reports on did not land");
    }
}
