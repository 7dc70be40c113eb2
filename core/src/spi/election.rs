//! The store interface of leader elections, for backends with an election layout of their
//! own (etcd's `concurrency.Election`, Curator's `LeaderLatch`). A candidate campaigns until
//! it leads; while it leads its term is a fencing token that grows with each new leader; it
//! keeps leading until it resigns, its lease passes or its session ends, and then it never
//! leads again under that term.
//!
//! Backends without one (mem, SQLite, Redis, SQL) need not implement it: the election
//! primitive builds their elections from a lock hold (the term is its fencing token) and a
//! versioned value (the leader's record), as `primitives/election.rs` describes.

use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::holds::{HoldState, Release, Renewal};
use super::lost::LostNotifier;
use crate::error::Result;
use crate::owner::Owner;

/// A candidate asking to lead the election `key`.
pub struct CampaignRequest {
    /// The storage key of the election (namespace applied).
    pub key: String,
    /// The candidate: one campaign of one client.
    pub owner: Owner,
    /// What the candidate proclaims as leader (etcd's proposal, Curator's latch id).
    pub value: Vec<u8>,
    /// The lease a lease-based store writes, renewed through [`ElectionStore::renew`].
    /// Session-based stores (etcd, ZooKeeper) keep leadership with their session instead.
    pub lease: Duration,
    /// `None` waits forever; a deadline in the past means "try once".
    pub deadline: Option<Instant>,
    /// Set when the caller has gone away: stop waiting, withdraw the candidacy and return
    /// `Ok(None)`.
    pub cancel: CancellationToken,
    /// The leadership's lost latch: mark it when the store learns, by an event, that the
    /// leadership is gone (session expired, key deleted, connection lost past the session).
    /// Raise `set_suspended` while the connection is down and it cannot tell (ZooKeeper's
    /// SUSPENDED).
    pub lost: LostNotifier,
}

/// A won campaign.
pub struct Elected {
    /// The term: strictly greater than the term of every earlier leader of this election
    /// (etcd: the leader key's create revision; ZooKeeper: the node's czxid; elsewhere the
    /// name's fencing counter).
    pub term: u64,
    /// When the successful attempt was sent: the lease runs from no earlier than this.
    pub attempt_started: Instant,
    /// Backend-private data kept with the leadership (a key, a node path, a session).
    pub state: HoldState,
}

/// What a store needs to renew, proclaim through or resign a leadership it granted.
pub struct HeldLeadership {
    pub key: String,
    pub owner: Owner,
    pub term: u64,
    pub state: HoldState,
}

impl HeldLeadership {
    pub fn new(key: String, owner: Owner, elected: Elected) -> Self {
        HeldLeadership { key, owner, term: elected.term, state: elected.state }
    }
}

/// The current leader of an election, as anyone can read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderRecord {
    /// The value the leader campaigned with or last proclaimed.
    pub value: Vec<u8>,
    /// The leader's term.
    pub term: u64,
}

/// Where [`ElectionStore::observe`] sends what it sees: the current leader (`None`: no
/// leader), at once and after every change.
pub type LeaderSink = mpsc::Sender<Result<Option<LeaderRecord>>>;

/// How often the default [`ElectionStore::observe`] reads the leader.
pub const OBSERVE_POLL: Duration = Duration::from_millis(200);

/// Elections on one store.
#[async_trait]
pub trait ElectionStore: Send + Sync + 'static {
    /// Campaign until the candidate leads, the deadline passes or `cancel` is set. `Ok(None)`
    /// means it does not lead and nothing of its candidacy is left in the store.
    async fn campaign(&self, request: &CampaignRequest) -> Result<Option<Elected>>;

    /// Keep leading for `lease` from now (session stores: check the leadership is still
    /// there). `Gone` once the store no longer has this leader under this term; the caller
    /// then reports `Lost` and never renews again.
    async fn renew(&self, held: &HeldLeadership, lease: Duration) -> Result<Renewal>;

    /// Replace the leader's value without an election, if this leader still leads
    /// (etcd's `Proclaim`); `Gone` otherwise, and nothing is written.
    async fn proclaim(&self, held: &HeldLeadership, value: &[u8]) -> Result<Renewal>;

    /// Stop leading (and stop being a candidate), so the next candidate leads.
    async fn resign(&self, held: &HeldLeadership) -> Result<Release>;

    /// The current leader of `key`, or `None`.
    async fn leader(&self, key: &str) -> Result<Option<LeaderRecord>>;

    /// Send the leader of `key` to `sink` now and after every change until `sink` is closed
    /// (then return `Ok`). Repeats of an unchanged leader are allowed (the caller drops
    /// them). An error it cannot recover from is returned (the caller passes it on). The
    /// default reads [`ElectionStore::leader`] every [`OBSERVE_POLL`]; stores with watches
    /// or notifications override it.
    async fn observe(&self, key: &str, sink: &LeaderSink) -> Result<()> {
        poll_leader(sink, || self.leader(key)).await
    }
}

/// Send what `read` answers to `sink` every [`OBSERVE_POLL`] until `sink` is closed; an
/// error is sent on and ends the loop.
pub async fn poll_leader<F, Fut>(sink: &LeaderSink, mut read: F) -> Result<()>
where
    F: FnMut() -> Fut + Send,
    Fut: std::future::Future<Output = Result<Option<LeaderRecord>>> + Send,
{
    loop {
        let seen = read().await;
        let failed = seen.is_err();
        tokio::select! {
            sent = sink.send(seen) => if sent.is_err() || failed { return Ok(()) },
            _ = sink.closed() => return Ok(()),
        }
        tokio::select! {
            _ = tokio::time::sleep(OBSERVE_POLL) => {}
            _ = sink.closed() => return Ok(()),
        }
    }
}
