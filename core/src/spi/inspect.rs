//! Read-only questions an operator asks about a lock whoever holds it: who holds it, with
//! which token, for how long yet, who waits; and which locks exist. A backend answers from
//! its own layout (Redisson's hash field, etcd's oldest key, Curator's lowest node,
//! ShedLock's row, SQLite's row), so holders that are not polylock are seen too. Nothing
//! here writes; breaking a hold is `HoldStore::force_unlock`.

use std::time::Duration;

use async_trait::async_trait;

use super::kind::LockKind;
use crate::error::Result;

/// What the store shows about one lock right now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockStatus {
    pub held: bool,
    /// The holder as the layout stores it (`<uuid>:<thread id>`, an etcd key with its
    /// lease, a ZooKeeper node, ShedLock's `locked_by`, a database session id).
    pub holder: Option<String>,
    /// The holder's fencing token where the layout records it.
    pub fencing_token: Option<u64>,
    /// The name's fencing counter, where it has one: no token issued so far (any holder, any
    /// family) is above it (it may count a token set aside for a handoff and never issued).
    pub token_counter: Option<u64>,
    /// `Some(Duration::MAX)` for a hold the store keeps without expiry (a session's).
    pub remaining_lease: Option<Duration>,
    /// How many contenders wait, where the backend can count them.
    pub waiters: Option<u64>,
    /// The layout the answer was read from, e.g. "Redisson RLock hash".
    pub layout: &'static str,
    /// Further facts of the layout, in display order (reentry count, lease id, ...).
    pub details: Vec<(&'static str, String)>,
}

/// One lock found by [`InspectStore::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedLock {
    /// The storage key (namespace included).
    pub key: String,
    pub kind: LockKind,
    pub held: bool,
}

/// Implemented by backends that can read their mutex layouts directly.
#[async_trait]
pub trait InspectStore: Send + Sync + 'static {
    /// The state of the mutex `key` of `kind` (a kind the backend offers: checked before).
    async fn status(&self, key: &str, kind: LockKind) -> Result<LockStatus>;

    /// The mutexes whose storage key starts with `prefix`, sorted by key. `Unsupported` where
    /// the layout cannot be enumerated.
    async fn list(&self, prefix: &str) -> Result<Vec<ListedLock>>;
}
