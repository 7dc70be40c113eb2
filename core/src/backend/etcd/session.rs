//! One session of the client (session_pool.rs says when there are several): one etcd lease, kept
//! alive in the background every third of its TTL (as etcd's concurrency.Session does),
//! revoked on close. Every lock key of the session is attached to it, so a crashed client's
//! locks go when the lease runs out. When the lease ends (revoked, expired, or keep-alives
//! failing for a whole TTL) every hold taken under it is marked lost, and the lane gets a new
//! session for later acquisitions.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::Client;
use tokio::task::AbortHandle;
use tokio::time::{sleep, timeout, Instant};
use tokio_util::sync::CancellationToken;

use super::{map_error, RETRY_MAX, RETRY_MIN};
use crate::error::ErrorKind;
use crate::error::Result;

/// A hold taken under a session, as the session sees it (backend/etcd/hold.rs has the
/// hold itself): the session's end ends it.
pub(super) trait SessionHold: Send + Sync {
    /// Whether this is the hold of `key` at create revision `revision`.
    fn is(&self, key: &str, revision: i64) -> bool;
    /// The session ended (`why`): mark the hold lost and let go of what it keeps.
    fn session_ended(&self, why: &str);
    /// The hold is over: let go of what it keeps. Idempotent.
    fn finish(&self);
}

pub(super) struct Session {
    pub lease_id: i64,
    ttl: Duration,
    /// Cancelled once the lease is gone; waiters under this session stop on it.
    pub ended: CancellationToken,
    reason: Mutex<Option<String>>,
    holds: Mutex<HashMap<u64, Arc<dyn SessionHold>>>,
    keeper: Mutex<Option<AbortHandle>>,
}

static NEXT_HOLD_ID: AtomicU64 = AtomicU64::new(1);

/// Grant a session lease within `call_timeout`. A grant refused on a connection error is tried
/// again: with several members, the client's balancer may have picked one that is down, and
/// the next call goes to another (a client given three members must connect while one of
/// them is stopped).
async fn grant_lease(
    client: &Client,
    ttl_secs: i64,
    call_timeout: Duration,
) -> Result<etcd_client::LeaseGrantResponse> {
    let deadline = Instant::now() + call_timeout;
    let mut pause = RETRY_MIN;
    loop {
        let mut lease = client.lease_client();
        let failed = match tokio::time::timeout_at(deadline, lease.grant(ttl_secs, None)).await {
            Err(_) => return Err(crate::Error::connection("etcd did not answer the session lease grant in time")),
            Ok(Ok(granted)) => return Ok(granted),
            Ok(Err(e)) => map_error("granting the session lease", e),
        };
        if failed.kind() != ErrorKind::Connection || Instant::now() + pause >= deadline {
            return Err(failed);
        }
        sleep(pause).await;
        pause = (pause * 2).min(RETRY_MAX);
    }
}

impl Session {
    /// Grant the lease and start keeping it alive.
    pub async fn start(client: &Client, ttl_secs: i64, call_timeout: Duration) -> Result<Arc<Session>> {
        let granted = grant_lease(client, ttl_secs, call_timeout).await?;
        let session = Arc::new(Session {
            lease_id: granted.id(),
            // The server may grant a longer TTL than asked (its minimum); keep to what it says.
            ttl: Duration::from_secs(granted.ttl().max(1) as u64),
            ended: CancellationToken::new(),
            reason: Mutex::new(None),
            holds: Mutex::new(HashMap::new()),
            keeper: Mutex::new(None),
        });
        let keeper = tokio::spawn(keep_alive(client.clone(), Arc::downgrade(&session), Instant::now()));
        *lock(&session.keeper) = Some(keeper.abort_handle());
        Ok(session)
    }

    pub fn is_ended(&self) -> bool {
        self.ended.is_cancelled()
    }

    pub fn end_reason(&self) -> String {
        lock(&self.reason).clone().unwrap_or_else(|| "the session lease ended".into())
    }

    /// Record a hold taken under this session, so that the session's end marks it lost.
    /// Returns its id for `forget`. A session that has already ended marks it at once.
    pub fn remember(&self, hold: Arc<dyn SessionHold>) -> u64 {
        let id = NEXT_HOLD_ID.fetch_add(1, Ordering::Relaxed);
        lock(&self.holds).insert(id, hold.clone());
        if self.is_ended() {
            self.end_holds();
        }
        id
    }

    pub fn forget(&self, id: u64) {
        lock(&self.holds).remove(&id);
    }

    /// End the hold whose key was deleted from outside (a forced unlock), if it is one of
    /// this session's. The lock layer marks it lost.
    pub fn finish_hold(&self, key: &str, revision: i64) {
        let found = lock(&self.holds).values().find(|hold| hold.is(key, revision)).cloned();
        if let Some(hold) = found {
            hold.finish();
        }
    }

    /// The lease is gone: mark every hold lost and free the lanes they kept.
    pub fn end(&self, why: String) {
        {
            let mut reason = lock(&self.reason);
            if reason.is_none() {
                *reason = Some(why);
            }
        }
        self.ended.cancel();
        if let Some(keeper) = lock(&self.keeper).take() {
            keeper.abort();
        }
        self.end_holds();
    }

    fn end_holds(&self) {
        let why = self.end_reason();
        let holds: Vec<_> = lock(&self.holds).drain().map(|(_, hold)| hold).collect();
        for hold in holds {
            hold.session_ended(&why);
        }
    }

    /// Close: stop the keep-alives and revoke the lease, which deletes every key under it.
    pub async fn close(&self, client: &Client, call_timeout: Duration) {
        self.end("the client was closed".into());
        let mut lease = client.lease_client();
        let _ = timeout(call_timeout, lease.revoke(self.lease_id)).await;
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(keeper) = lock(&self.keeper).take() {
            keeper.abort();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Refresh the lease every third of its TTL over a keep-alive stream, reopening the stream
/// when it breaks (a member died, a leader changed). The lease is known alive until the TTL
/// counted from the last keep-alive that was answered; past that, or when etcd answers that
/// the lease is gone, the session ends.
async fn keep_alive(client: Client, session: std::sync::Weak<Session>, granted_at: Instant) {
    let Some((lease_id, ttl)) = session.upgrade().map(|s| (s.lease_id, s.ttl)) else { return };
    let interval = ttl / 3;
    let retry = (interval / 4).clamp(Duration::from_millis(100), Duration::from_secs(1));
    let mut alive_until = granted_at + ttl;
    let end = |why: String| {
        if let Some(session) = session.upgrade() {
            session.end(why);
        }
    };
    loop {
        let sent = Instant::now();
        let opened = timeout(interval.max(Duration::from_secs(1)), client.lease_client().keep_alive(lease_id)).await;
        match opened {
            Ok(Ok((mut keeper, mut stream))) => {
                // Opening the stream sent one keep-alive and read its answer.
                alive_until = sent + ttl;
                loop {
                    sleep(interval).await;
                    if session.strong_count() == 0 {
                        return;
                    }
                    let sent = Instant::now();
                    if keeper.keep_alive().await.is_err() {
                        break;
                    }
                    match timeout(interval.max(Duration::from_secs(1)), stream.message()).await {
                        Ok(Ok(Some(answer))) if answer.ttl() > 0 => alive_until = sent + ttl,
                        Ok(Ok(Some(_))) => return end("etcd says the session lease expired or was revoked".into()),
                        _ => break,
                    }
                }
            }
            Ok(Err(etcd_client::Error::LeaseKeepAliveError(why))) if why.contains("not found") => {
                return end("etcd says the session lease expired or was revoked".into());
            }
            Ok(Err(_)) | Err(_) => {}
        }
        if Instant::now() + retry >= alive_until {
            return end(format!("etcd could not be reached to keep the session lease alive for {}s", ttl.as_secs()));
        }
        if session.strong_count() == 0 {
            return;
        }
        sleep(retry).await;
    }
}
