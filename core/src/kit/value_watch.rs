//! A value's watch ([`ValueWatch`]) as a binding hands it out: one handle that any thread or
//! task may wait on (one wait at a time; the others queue behind it), whose last-seen state
//! stays readable while a wait runs, that a wait bounded by a duration leaves intact, and that
//! a close from another thread ends at once. Every binding's `watch` is this, so none of them
//! solves sharing, bounding and closing a watch on its own.
//!
//! A bounded wait that runs out loses nothing: the watch compares versions with the state it
//! last returned, so a change that came while nobody waited is the next wait's answer.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::{Result, ValueWatch, VersionedValue};

/// How a wait on a [`SharedValueWatch`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchStep {
    /// The value's next state: a new version, or `None` once it is deleted.
    Changed(Option<VersionedValue>),
    /// The wait's bound ran out with no change.
    NoChange,
    /// The watch was closed (before or during the wait).
    Closed,
}

/// A [`ValueWatch`] shared by a binding's handle. Cheap to clone; clones are the same watch.
#[derive(Clone)]
pub struct SharedValueWatch {
    /// `None` once closed: the store's change feed (a Redis subscription) is let go of.
    watch: Arc<tokio::sync::Mutex<Option<ValueWatch>>>,
    last: Arc<std::sync::Mutex<Option<VersionedValue>>>,
    closed: CancellationToken,
}

impl std::fmt::Debug for SharedValueWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedValueWatch").field("current", &self.current()).field("closed", &self.is_closed()).finish()
    }
}

impl SharedValueWatch {
    pub fn new(watch: ValueWatch) -> SharedValueWatch {
        let last = Arc::new(std::sync::Mutex::new(watch.current().cloned()));
        SharedValueWatch {
            watch: Arc::new(tokio::sync::Mutex::new(Some(watch))),
            last,
            closed: CancellationToken::new(),
        }
    }

    /// The state last seen: when the watch started, or the last change a wait returned.
    pub fn current(&self) -> Option<VersionedValue> {
        self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Wait for the value's next state, at most `wait` (`None`: as long as nothing changes).
    /// A store error (the client closed: `Connection`) ends the wait with that error and
    /// leaves the watch open.
    pub fn changed_within(
        &self,
        wait: Option<Duration>,
    ) -> impl std::future::Future<Output = Result<WatchStep>> + Send + 'static {
        let (watch, last, closed) = (self.watch.clone(), self.last.clone(), self.closed.clone());
        async move {
            let waiting = async {
                let mut guard = watch.lock().await;
                let Some(watch) = guard.as_mut() else { return Ok(WatchStep::Closed) };
                let next = watch.changed().await?;
                *last.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = next.clone();
                Ok(WatchStep::Changed(next))
            };
            let bounded = async {
                match wait {
                    Some(wait) => tokio::time::timeout(wait, waiting).await.unwrap_or(Ok(WatchStep::NoChange)),
                    None => waiting.await,
                }
            };
            tokio::select! {
                biased;
                () = closed.cancelled() => Ok(WatchStep::Closed),
                step = bounded => step,
            }
        }
    }

    /// End the watch: a wait in progress ends with [`WatchStep::Closed`], as every later one
    /// does, and the store's change feed is let go of (run this inside the client's runtime).
    pub async fn close(&self) {
        self.closed.cancel();
        drop(self.watch.lock().await.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Client;

    #[tokio::test]
    async fn a_bounded_wait_runs_out_then_sees_the_change_made_while_nobody_waited() {
        let client = Client::connect("mem://kit-value-watch").await.unwrap();
        let value = client.value("v").unwrap();
        let watch = SharedValueWatch::new(value.watch().await.unwrap());
        assert_eq!(watch.current(), None);
        let step = watch.changed_within(Some(Duration::from_millis(50))).await.unwrap();
        assert_eq!(step, WatchStep::NoChange);
        value.create(b"x").await.unwrap();
        let step = watch.changed_within(Some(Duration::from_secs(10))).await.unwrap();
        let WatchStep::Changed(Some(now)) = step else { panic!("{step:?}") };
        assert_eq!((now.value.as_slice(), watch.current().map(|v| v.version)), (&b"x"[..], Some(now.version)));
        value.delete(now.version).await.unwrap();
        assert_eq!(watch.changed_within(None).await.unwrap(), WatchStep::Changed(None));
        assert_eq!(watch.current(), None);
        client.close().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn close_ends_a_wait_in_progress_and_every_later_one() {
        let client = Client::connect("mem://kit-value-watch-close").await.unwrap();
        let watch = SharedValueWatch::new(client.value("v").unwrap().watch().await.unwrap());
        let waiting = tokio::spawn(watch.changed_within(None));
        tokio::time::sleep(Duration::from_millis(50)).await;
        watch.close().await;
        assert_eq!(waiting.await.unwrap().unwrap(), WatchStep::Closed);
        assert_eq!(watch.changed_within(Some(Duration::from_secs(5))).await.unwrap(), WatchStep::Closed);
        assert!(watch.is_closed());
        client.close().await;
    }
}
