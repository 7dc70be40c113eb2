//! `Election`, `Leadership` and `LeaderObserver`: leader elections, the core's `Election`
//! translated. Campaigns, queries, proclaims and resigns wait on the store, so they are async
//! exports (the GVL is released while they wait); what a leadership knows of itself is
//! answered from memory.

use std::sync::Arc;

use polylock::LeaderRecord;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::errors::Result;
use crate::lock::{LostListener, LostSubscription};
use crate::options::wait_from_seconds;
use crate::shared::ClientShared;

/// A leader as anyone can read it: the value it campaigned with or last proclaimed, and its
/// term (a fencing token greater than every earlier leader's).
#[derive(uniffi::Record)]
pub struct LeaderInfo {
    pub value: Vec<u8>,
    pub term: u64,
}

fn leader_info(record: Option<LeaderRecord>) -> Option<LeaderInfo> {
    record.map(|record| LeaderInfo { value: record.value, term: record.term })
}

/// One step of an observation: the leader after a change (`leader` nil: nobody leads), or
/// `ended` once the observer was closed or its client closed.
#[derive(uniffi::Record)]
pub struct LeaderChange {
    pub ended: bool,
    pub leader: Option<LeaderInfo>,
}

#[derive(uniffi::Object)]
pub struct Election {
    shared: Arc<ClientShared>,
    election: polylock::Election,
}

impl Election {
    pub fn new(shared: Arc<ClientShared>, election: polylock::Election) -> Arc<Election> {
        Arc::new(Election { shared, election })
    }

    fn what(&self) -> String {
        format!("election '{}'", self.election.name())
    }
}

#[uniffi::export]
impl Election {
    pub fn name(&self) -> String {
        self.election.name().to_string()
    }

    /// Campaign with `value` until leading, at most `wait_seconds` (nil: as long as it takes;
    /// 0: try once). A wait that runs out is `Timeout` and leaves no candidacy behind; a
    /// caller that gives up (Thread#kill) leaves none either.
    pub async fn campaign(&self, value: Vec<u8>, wait_seconds: Option<f64>) -> Result<Arc<Leadership>> {
        let wait = wait_from_seconds(wait_seconds)?;
        let election = self.election.clone();
        // A leadership won after the caller gave up is dropped with the task's output, and
        // the core resigns a dropped leadership.
        let leadership = self.shared.run(self.what(), async move { election.campaign(&value, wait).await }).await?;
        Ok(Arc::new(Leadership { shared: self.shared.clone(), leadership }))
    }

    /// The try form of `campaign`: the leadership, or nil when `wait_seconds` ran out (no
    /// candidacy is left behind).
    pub async fn try_campaign(&self, value: Vec<u8>, wait_seconds: Option<f64>) -> Result<Option<Arc<Leadership>>> {
        let wait = wait_from_seconds(wait_seconds)?;
        let election = self.election.clone();
        let leadership = self.shared.run(self.what(), async move { election.try_campaign(&value, wait).await }).await?;
        Ok(leadership.map(|leadership| Arc::new(Leadership { shared: self.shared.clone(), leadership })))
    }

    /// The current leader, or nil when nobody leads.
    pub async fn leader(&self) -> Result<Option<LeaderInfo>> {
        let election = self.election.clone();
        let leader = self.shared.run(self.what(), async move { election.leader().await }).await?;
        Ok(leader_info(leader))
    }

    /// The leader now and after every change, until the observer is closed.
    pub fn observe(&self) -> Result<Arc<LeaderObserver>> {
        let changes = self.election.observe()?;
        Ok(Arc::new(LeaderObserver {
            shared: self.shared.clone(),
            name: self.election.name().to_string(),
            changes: Arc::new(Mutex::new(Some(changes))),
            stop: CancellationToken::new(),
        }))
    }
}

#[derive(uniffi::Object)]
pub struct Leadership {
    shared: Arc<ClientShared>,
    leadership: polylock::Leadership,
}

impl Leadership {
    fn what(&self) -> String {
        format!("election '{}'", self.leadership.name())
    }
}

#[uniffi::export]
impl Leadership {
    pub fn name(&self) -> String {
        self.leadership.name().to_string()
    }

    pub fn term(&self) -> u64 {
        self.leadership.term()
    }

    /// The value campaigned with or last proclaimed.
    pub fn value(&self) -> Vec<u8> {
        self.leadership.value()
    }

    /// True until resigned or lost; once false, never true again.
    pub fn is_leader(&self) -> bool {
        self.leadership.is_leader()
    }

    pub fn is_lost(&self) -> bool {
        self.leadership.is_lost()
    }

    /// While the backend cannot tell whether this is still the leader (ZooKeeper SUSPENDED).
    pub fn is_suspended(&self) -> bool {
        self.leadership.is_suspended()
    }

    /// Why it was lost, or nil.
    pub fn lost_reason(&self) -> Option<String> {
        self.leadership.lost_reason().map(|reason| reason.to_string())
    }

    /// Call `listener` (with the reason) when this leadership is lost.
    pub fn on_lost(&self, listener: Box<dyn LostListener>) -> Arc<LostSubscription> {
        let watch = self.leadership.lost_watch();
        let cancel = CancellationToken::new();
        let cancelled = cancel.clone();
        self.shared.spawn(async move {
            tokio::select! {
                reason = watch.wait() => listener.lost(reason.to_string()),
                () = cancelled.cancelled() => {}
            }
        });
        LostSubscription::new(cancel)
    }

    /// Replace the leader's value without a new term: `Lost` if no longer the leader,
    /// `NotOwner` once resigned.
    pub async fn proclaim(&self, value: Vec<u8>) -> Result<()> {
        let leadership = self.leadership.clone();
        self.shared.run(self.what(), async move { leadership.proclaim(&value).await }).await
    }

    /// Stop leading, so the next candidate leads. Twice is harmless; `Lost` if it had been
    /// lost before.
    pub async fn resign(&self) -> Result<()> {
        let leadership = self.leadership.clone();
        self.shared.run(self.what(), async move { leadership.resign().await }).await
    }
}

/// The leader changes of one election, read one at a time with `next_change`.
#[derive(uniffi::Object)]
pub struct LeaderObserver {
    shared: Arc<ClientShared>,
    name: String,
    changes: Arc<Mutex<Option<polylock::LeaderChanges>>>,
    /// Cancelled by `close`: a `next_change` waiting meanwhile ends at once.
    stop: CancellationToken,
}

#[uniffi::export]
impl LeaderObserver {
    /// The next change, or `ended` once closed (by `close` or the client's close). An error
    /// of the store ends the observation.
    pub async fn next_change(&self) -> Result<LeaderChange> {
        let (changes, stop) = (self.changes.clone(), self.stop.clone());
        let reading = async move {
            let mut changes = tokio::select! {
                changes = changes.lock() => changes,
                () = stop.cancelled() => return Ok(None),
            };
            let Some(stream) = changes.as_mut() else { return Ok(None) };
            let next = tokio::select! {
                next = stream.next() => next,
                () = stop.cancelled() => None,
            };
            match next {
                Some(Ok(leader)) => Ok(Some(leader)),
                Some(Err(err)) => {
                    *changes = None;
                    Err(err)
                }
                None => {
                    *changes = None;
                    Ok(None)
                }
            }
        };
        let next = self.shared.run(format!("observing election '{}'", self.name), reading).await?;
        Ok(match next {
            Some(leader) => LeaderChange { ended: false, leader: leader_info(leader) },
            None => LeaderChange { ended: true, leader: None },
        })
    }

    /// Stop observing: a waiting `next_change` and every later one answer `ended`.
    pub fn close(&self) {
        self.stop.cancel();
        let changes = self.changes.clone();
        // The stream is dropped once no `next_change` holds it, which stops the core's watch.
        self.shared.spawn(async move {
            changes.lock().await.take();
        });
    }
}
