//! The client's pool of etcd sessions (one slot, "lane", per owner contending at once), and which
//! of them has a key under which lock name.
//!
//! etcd's Mutex names a contender's key after its session lease, so one session can queue one
//! owner per lock name: two owners of one session would write the same key and both believe
//! they hold the lock (as two Go Mutexes on one Session do). A client starts with one session;
//! when several of its owners contend for one name at once, each further owner gets a session
//! of its own, granted on first need and kept for reuse, so that every owner has its own key in
//! etcd's queue, as separate Go processes would. The queue then orders this client's owners
//! and everyone else's alike, and a release can wake the owner queued right behind it here
//! without a round trip (backend/successors.rs).
//!
//! At most [`MAX_SESSIONS`] sessions per client: owners beyond that wait here, in no particular
//! order, for one of them to leave the name. A session beyond the first that has had no key
//! for a whole session TTL is revoked, so a burst of contention does not leave leases behind.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use etcd_client::Client;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::session::Session;
use crate::error::{Error, Result};

/// The most sessions one client keeps. Each is one lease and one keep-alive stream.
pub(super) const MAX_SESSIONS: usize = 32;

pub(super) struct SessionPool {
    client: Client,
    ttl_secs: i64,
    call_timeout: Duration,
    /// PoolSlot i's session (`None`: revoked while idle, granted again on need), replaced when it
    /// has ended; `None` as a whole once closed. Locked while a lane is chosen, so two owners
    /// never choose the same one.
    sessions: tokio::sync::Mutex<Option<Vec<Option<Arc<Session>>>>>,
    occupancy: std::sync::Mutex<Occupancy>,
    /// Signalled whenever a lane leaves a prefix.
    freed: Notify,
}

/// Which lanes have a key (or are about to) under which lock prefix, and since when each
/// lane has had none at all.
#[derive(Default)]
struct Occupancy {
    by_prefix: HashMap<String, HashSet<usize>>,
    /// Per lane: the prefixes it is taken for.
    taken: Vec<usize>,
    /// Per lane: when it last left a prefix.
    left_at: Vec<Option<Instant>>,
}

impl Occupancy {
    fn is_taken(&self, prefix: &str, index: usize) -> bool {
        self.by_prefix.get(prefix).is_some_and(|lanes| lanes.contains(&index))
    }

    fn take(&mut self, prefix: &str, index: usize) {
        if self.taken.len() <= index {
            self.taken.resize(index + 1, 0);
            self.left_at.resize(index + 1, None);
        }
        self.by_prefix.entry(prefix.to_string()).or_default().insert(index);
        self.taken[index] += 1;
    }

    fn leave(&mut self, prefix: &str, index: usize) {
        if let Some(lanes) = self.by_prefix.get_mut(prefix) {
            if lanes.remove(&index) {
                self.taken[index] -= 1;
                self.left_at[index] = Some(Instant::now());
            }
            if lanes.is_empty() {
                self.by_prefix.remove(prefix);
            }
        }
    }

    /// Whether lane `index` has had no key for at least `idle`.
    fn idle_for(&self, index: usize, idle: Duration) -> bool {
        self.taken.get(index).copied().unwrap_or(0) == 0
            && self.left_at.get(index).copied().flatten().is_some_and(|left| left.elapsed() >= idle)
    }
}

/// One lane taken for one lock prefix; dropping it frees the lane for that prefix.
pub(super) struct PoolSlot {
    pool: Arc<SessionPool>,
    prefix: String,
    index: usize,
    pub session: Arc<Session>,
}

impl SessionPool {
    /// Start the client's first session now, so that a wrong address or password fails at
    /// connect, not at the first lock.
    pub async fn start(client: Client, ttl_secs: i64, call_timeout: Duration) -> Result<Arc<SessionPool>> {
        let first = Session::start(&client, ttl_secs, call_timeout).await?;
        let lanes = Arc::new(SessionPool {
            client,
            ttl_secs,
            call_timeout,
            sessions: tokio::sync::Mutex::new(Some(vec![Some(first)])),
            occupancy: std::sync::Mutex::default(),
            freed: Notify::new(),
        });
        tokio::spawn(revoke_idle_lanes(Arc::downgrade(&lanes), session_ttl(&lanes)));
        Ok(lanes)
    }

    fn occupancy(&self) -> std::sync::MutexGuard<'_, Occupancy> {
        self.occupancy.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn grant(&self) -> Result<Arc<Session>> {
        Session::start(&self.client, self.ttl_secs, self.call_timeout).await
    }

    /// A lane with no key under `prefix`: a live session of this client, a new one if every
    /// session has a key there already. `None` if `give_up` fires while all [`MAX_SESSIONS`]
    /// are taken (it is not raced against granting a session, so a try-once acquisition
    /// always gets its try).
    pub async fn take(self: &Arc<Self>, prefix: &str, give_up: impl Future<Output = ()>) -> Result<Option<PoolSlot>> {
        tokio::pin!(give_up);
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut sessions = self.sessions.lock().await;
                let sessions = sessions.as_mut().ok_or_else(|| Error::connection("the etcd client is closed"))?;
                let (free, vacant) = {
                    let occupancy = self.occupancy();
                    let free = (0..sessions.len()).find(|&i| sessions[i].is_some() && !occupancy.is_taken(prefix, i));
                    (free, sessions.iter().position(Option::is_none))
                };
                let index = match (free, vacant) {
                    (Some(index), _) => Some(index),
                    (None, Some(index)) => Some(index),
                    (None, None) if sessions.len() < MAX_SESSIONS => {
                        sessions.push(None);
                        Some(sessions.len() - 1)
                    }
                    (None, None) => None,
                };
                if let Some(index) = index {
                    let session = match &sessions[index] {
                        Some(session) if !session.is_ended() => session.clone(),
                        _ => {
                            let session = self.grant().await?;
                            sessions[index] = Some(session.clone());
                            session
                        }
                    };
                    self.occupancy().take(prefix, index);
                    return Ok(Some(PoolSlot { pool: self.clone(), prefix: prefix.to_string(), index, session }));
                }
            }
            tokio::select! {
                _ = freed => {}
                _ = &mut give_up => return Ok(None),
            }
        }
    }

    /// The first lane's session (granted again if it has ended), for keys that are unique per
    /// hold whatever their session (read-write locks), so need no lane of their own.
    pub async fn any(&self) -> Result<Arc<Session>> {
        let mut sessions = self.sessions.lock().await;
        let sessions = sessions.as_mut().ok_or_else(|| Error::connection("the etcd client is closed"))?;
        match sessions.first() {
            Some(Some(session)) if !session.is_ended() => Ok(session.clone()),
            _ => {
                let session = self.grant().await?;
                if sessions.is_empty() {
                    sessions.push(None);
                }
                sessions[0] = Some(session.clone());
                Ok(session)
            }
        }
    }

    /// Every session there is now.
    pub async fn sessions(&self) -> Vec<Arc<Session>> {
        self.sessions.lock().await.iter().flatten().flatten().cloned().collect()
    }

    /// Refuse new lanes and hand back every session, to be closed.
    pub async fn close(&self) -> Vec<Arc<Session>> {
        let sessions = self.sessions.lock().await.take().unwrap_or_default();
        self.freed.notify_waiters();
        sessions.into_iter().flatten().collect()
    }

    /// The sessions, without waiting (for Drop): empty if they are being chosen right now.
    pub fn try_sessions(&self) -> Vec<Arc<Session>> {
        match self.sessions.try_lock() {
            Ok(sessions) => sessions.iter().flatten().flatten().cloned().collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Take the sessions of lanes beyond the first that have had no key for `idle`.
    async fn take_idle(&self, idle: Duration) -> Vec<Arc<Session>> {
        let mut sessions = self.sessions.lock().await;
        let Some(sessions) = sessions.as_mut() else { return Vec::new() };
        let occupancy = self.occupancy();
        (1..sessions.len()).filter(|&i| occupancy.idle_for(i, idle)).filter_map(|i| sessions[i].take()).collect()
    }
}

fn session_ttl(lanes: &SessionPool) -> Duration {
    Duration::from_secs(lanes.ttl_secs.max(1) as u64)
}

/// Every half TTL, revoke the sessions of lanes (beyond the first) idle for a whole TTL.
async fn revoke_idle_lanes(lanes: Weak<SessionPool>, ttl: Duration) {
    loop {
        tokio::time::sleep(ttl / 2).await;
        let Some(lanes) = lanes.upgrade() else { return };
        for session in lanes.take_idle(ttl).await {
            session.close(&lanes.client, lanes.call_timeout).await;
        }
    }
}

impl Drop for PoolSlot {
    fn drop(&mut self) {
        self.pool.occupancy().leave(&self.prefix, self.index);
        self.pool.freed.notify_waiters();
    }
}
