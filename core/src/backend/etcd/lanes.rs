//! The client's sessions ("lanes"), and which of them has a key under which lock name.
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
//! At most [`MAX_LANES`] sessions per client: owners beyond that wait here, in no particular
//! order, for one of them to leave the name.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::Client;
use tokio::sync::Notify;

use super::session::Session;
use crate::error::{Error, Result};

/// The most sessions one client keeps. Each is one lease and one keep-alive stream.
pub(super) const MAX_LANES: usize = 32;

pub(super) struct Lanes {
    client: Client,
    ttl_secs: i64,
    call_timeout: Duration,
    /// Lane i's session, replaced when it has ended; `None` once closed. Taken while a lane
    /// is chosen, so two owners never choose the same one.
    sessions: tokio::sync::Mutex<Option<Vec<Arc<Session>>>>,
    /// The lanes with a key (or about to have one) under each lock prefix.
    busy: std::sync::Mutex<HashMap<String, HashSet<usize>>>,
    /// Signalled whenever a lane leaves a prefix.
    freed: Notify,
}

/// One lane taken for one lock prefix; dropping it frees the lane for that prefix.
pub(super) struct Lane {
    lanes: Arc<Lanes>,
    prefix: String,
    index: usize,
    pub session: Arc<Session>,
}

impl Lanes {
    /// Start the client's first session now, so that a wrong address or password fails at
    /// connect, not at the first lock.
    pub async fn start(client: Client, ttl_secs: i64, call_timeout: Duration) -> Result<Arc<Lanes>> {
        let first = Session::start(&client, ttl_secs, call_timeout).await?;
        Ok(Arc::new(Lanes {
            client,
            ttl_secs,
            call_timeout,
            sessions: tokio::sync::Mutex::new(Some(vec![first])),
            busy: std::sync::Mutex::default(),
            freed: Notify::new(),
        }))
    }

    fn busy(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashSet<usize>>> {
        self.busy.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A lane with no key under `prefix`: a live session of this client, a new one if every
    /// session has a key there already. `None` if `give_up` fires while all [`MAX_LANES`]
    /// are taken (it is not raced against granting a session, so a try-once acquisition
    /// always gets its try).
    pub async fn take(self: &Arc<Self>, prefix: &str, give_up: impl Future<Output = ()>) -> Result<Option<Lane>> {
        tokio::pin!(give_up);
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut sessions = self.sessions.lock().await;
                let sessions = sessions.as_mut().ok_or_else(|| Error::connection("the etcd client is closed"))?;
                let free = {
                    let busy = self.busy();
                    let taken = busy.get(prefix);
                    (0..sessions.len()).find(|i| taken.is_none_or(|taken| !taken.contains(i)))
                };
                let index = match free {
                    Some(index) => Some(index),
                    None if sessions.len() < MAX_LANES => {
                        sessions.push(Session::start(&self.client, self.ttl_secs, self.call_timeout).await?);
                        Some(sessions.len() - 1)
                    }
                    None => None,
                };
                if let Some(index) = index {
                    if sessions[index].is_ended() {
                        sessions[index] = Session::start(&self.client, self.ttl_secs, self.call_timeout).await?;
                    }
                    self.busy().entry(prefix.to_string()).or_default().insert(index);
                    let session = sessions[index].clone();
                    return Ok(Some(Lane { lanes: self.clone(), prefix: prefix.to_string(), index, session }));
                }
            }
            tokio::select! {
                _ = freed => {}
                _ = &mut give_up => return Ok(None),
            }
        }
    }

    /// Every session there is now, live or not.
    pub async fn sessions(&self) -> Vec<Arc<Session>> {
        self.sessions.lock().await.clone().unwrap_or_default()
    }

    /// Refuse new lanes and hand back every session, to be closed.
    pub async fn close(&self) -> Vec<Arc<Session>> {
        let sessions = self.sessions.lock().await.take().unwrap_or_default();
        self.freed.notify_waiters();
        sessions
    }

    /// The sessions, without waiting (for Drop): `None` if they are being chosen right now.
    pub fn try_sessions(&self) -> Option<Vec<Arc<Session>>> {
        self.sessions.try_lock().ok().map(|sessions| sessions.clone().unwrap_or_default())
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        {
            let mut busy = self.lanes.busy();
            if let Some(taken) = busy.get_mut(&self.prefix) {
                taken.remove(&self.index);
                if taken.is_empty() {
                    busy.remove(&self.prefix);
                }
            }
        }
        self.lanes.freed.notify_waiters();
    }
}
