//! `redis://`, `rediss://`, `redis+cluster://`, `redis+sentinel://`: locks that Redisson,
//! redis-py and node-redlock see as their own.
//!
//! - `Reentrant` is Redisson's RLock, fenced by Redisson's RFencedLock counter.
//! - `Fair` is Redisson's RedissonFairLock: a FIFO queue, each waiter woken on its own channel.
//! - `Token` is redis-py's `Lock` and node-redlock: `SET NX PX` with a random value.
//! - Read-write locks are Redisson's RReadWriteLock (rw_lock.rs), semaphores its
//!   RPermitExpirableSemaphore (semaphore.rs).
//!
//! Every grant of a name, whatever the primitive, draws its fencing token from the name's one
//! counter, Redisson's `redisson_lock_token:{name}`.
//!
//! Waiters subscribe to the lock's release channel before each attempt and wake on its
//! message, on the holder's TTL, or on a slow fallback backoff, whichever comes first.

mod counters;
mod endpoint;
mod inspect;
mod latch;
mod link;
mod names;
mod pubsub;
mod push;
mod rw_lock;
mod rw_scripts;
mod scripts;
mod semaphore;
mod semaphore_plain;
mod semaphore_scripts;
mod values;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use redis::Script;

use super::poll::{acquire_by_attempts, Attempt, Backoff};
use crate::error::{Error, Result};
use crate::owner::Owner;
use crate::spi::{
    AcquireRequest, Acquired, Capabilities, ExclusiveStore, HeldLock, HoldStore, PermitStore, Release, Renewal,
    SharedStore, Store,
};
use crate::spi::{CounterStore, LockKind, LostNotifier, VersionStore};
use crate::url::ConnectUrl;
use endpoint::Endpoint;
use link::Link;
// RedLock's nodes are connected as the Redis backend connects one server.
pub(super) use link::{certificates, node_client, Credentials};
use pubsub::Subscriptions;
use rw_lock::{RedisRwLocks, RwPreference};
use scripts::{LockKeys, UNLOCK_MESSAGE};
use semaphore::RedisSemaphores;

/// Only a fallback: releases arrive by pub/sub, and a holder's expiry by its TTL. It catches
/// releases that announce nothing (a redis-py holder's delete, a key evicted by Redis).
const FALLBACK: Backoff = Backoff { min: Duration::from_millis(10), max: Duration::from_millis(250) };

/// How long a fair waiter keeps its place in the queue between attempts when it has no
/// deadline of its own: Redisson's default thread wait time.
const FAIR_THREAD_WAIT: Duration = Duration::from_secs(300);

pub(crate) struct RedisBackend {
    link: Arc<Link>,
    subscriptions: Arc<Subscriptions>,
    /// URL option `rw_preference`: Redisson's reader preference unless `writer`.
    rw_preference: RwPreference,
    /// URL option `timeout`: also how long idempotent calls are retried (engine/retry.rs).
    timeout: Duration,
}

impl RedisBackend {
    pub(crate) async fn open(url: &mut ConnectUrl) -> Result<Self> {
        let endpoint = Endpoint::parse(url)?;
        let rw_preference = RwPreference::parse(url.take_option("rw_preference"))?;
        let (push, pushes) = push::push_channel();
        // `timeout` bounds the whole connect: the connection managers retry a handshake that
        // gets no answer, which would otherwise take about three times as long.
        let (limit, shown) = (endpoint.timeout, endpoint.redacted.clone());
        let link = match tokio::time::timeout(limit, Link::connect(endpoint, push)).await {
            Ok(link) => Arc::new(link?),
            Err(_) => {
                return Err(Error::connection(format!(
                    "redis at {shown} did not answer within {}ms (URL option 'timeout'); is it a Redis server, \
                     and is it running and reachable?",
                    limit.as_millis()
                )))
            }
        };
        let subscriptions = Subscriptions::start(link.clone(), pushes);
        Ok(RedisBackend { link, subscriptions, rw_preference, timeout: limit })
    }

    /// One attempt for an owner that does not hold the lock. Both acquire scripts answer
    /// `{-1, token}` on success and `{holder's ttl, -1}` otherwise.
    async fn attempt(
        &self,
        request: &AcquireRequest,
        keys: &LockKeys<'_>,
        field: &str,
        fair_wait: Duration,
    ) -> Result<Attempt> {
        let lease = millis(request.lease);
        let invocation = match Layout::of(request.kind)? {
            Layout::FairHash => {
                let mut inv =
                    script_with(&scripts::FAIR_ACQUIRE, &[keys.lock, &keys.queue(), &keys.timeouts(), &keys.token()]);
                inv.arg(lease).arg(field).arg(millis(fair_wait)).arg(now_ms());
                inv
            }
            Layout::TokenString => {
                let mut inv = script_with(&scripts::TOKEN_ACQUIRE, &[keys.lock, &keys.token()]);
                inv.arg(field).arg(lease);
                inv
            }
            Layout::Hash => {
                let mut inv = script_with(&scripts::REENTRANT_ACQUIRE, &[keys.lock, &keys.token()]);
                inv.arg(lease).arg(field);
                inv
            }
        };
        let (ttl, token): (i64, i64) = self.link.invoke(&invocation).await?;
        Ok(if ttl == -1 && token > 0 {
            Attempt::Acquired { token: token as u64, state: None }
        } else {
            Attempt::Busy { holder_lease_left: u64::try_from(ttl).ok().map(Duration::from_millis) }
        })
    }

    async fn leave_fair_queue(&self, keys: &LockKeys<'_>, field: &str, fair_wait: Duration) -> Result<()> {
        let mut invocation = script_with(&scripts::FAIR_LEAVE_QUEUE, &[&keys.queue(), &keys.timeouts()]);
        invocation.arg(field).arg(millis(fair_wait));
        self.link.invoke::<i64>(&invocation).await.map(drop)
    }
}

fn script_with<'a>(script: &'a Script, keys: &[&str]) -> redis::ScriptInvocation<'a> {
    let mut invocation = script.prepare_invoke();
    for key in keys {
        invocation.key(*key);
    }
    invocation
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// Redisson's fair lock keeps waiter deadlines in client wall-clock milliseconds.
fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// The wire layout each kind of lock uses on Redis. Every kind is named here, so a kind
/// Redis does not offer can never fall into another kind's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Redisson's RLock: a hash of `<client uuid>:<owner>` = hold count.
    Hash,
    /// Redisson's fair lock: the hash plus a queue and per-waiter deadlines.
    FairHash,
    /// redis-py's and node-redlock's `SET NX PX` string.
    TokenString,
}

impl Layout {
    fn of(kind: LockKind) -> Result<Layout> {
        match kind {
            LockKind::Reentrant => Ok(Layout::Hash),
            LockKind::Fair => Ok(Layout::FairHash),
            LockKind::Token => Ok(Layout::TokenString),
            LockKind::Lease => Err(Error::unsupported("the redis backend does not offer lease locks")),
        }
    }
}

#[async_trait]
impl HoldStore for RedisBackend {
    async fn acquire(&self, request: &AcquireRequest) -> Result<Option<Acquired>> {
        let keys = LockKeys::new(&request.key);
        let field = request.owner.to_string();
        // A fair waiter with a deadline holds its place that long, as with Redisson's tryLock.
        let fair_wait = match request.deadline {
            Some(deadline) => {
                deadline.saturating_duration_since(tokio::time::Instant::now()).max(Duration::from_millis(1))
            }
            None => FAIR_THREAD_WAIT,
        };
        // Redisson's order: try first, and only a waiter pays for a subscription.
        let attempt_started = tokio::time::Instant::now();
        if let Attempt::Acquired { token, state } = self.attempt(request, &keys, &field, fair_wait).await? {
            return Ok(Some(Acquired { token, attempt_started, state }));
        }
        let gave_up =
            request.deadline.is_some_and(|d| tokio::time::Instant::now() >= d) || request.cancel.is_cancelled();
        let outcome = if gave_up {
            Ok(None)
        } else {
            let channel = match Layout::of(request.kind)? {
                Layout::FairHash => keys.waiter_channel(&field),
                Layout::Hash | Layout::TokenString => keys.channel(),
            };
            // Subscribed before the next attempt, so a release in between still wakes us.
            match self.subscriptions.listen(&channel).await {
                Ok(mut subscription) => {
                    acquire_by_attempts(request, FALLBACK, &mut subscription, || {
                        self.attempt(request, &keys, &field, fair_wait)
                    })
                    .await
                }
                Err(err) => Err(err),
            }
        };
        if request.kind == LockKind::Fair && !matches!(outcome, Ok(Some(_))) {
            // Gave up (deadline, cancel or error): leave the queue so those behind move up.
            let _ = self.leave_fair_queue(&keys, &field, fair_wait).await;
        }
        outcome
    }

    async fn renew(&self, held: &HeldLock, lease: Duration) -> Result<Renewal> {
        let keys = LockKeys::new(&held.key);
        let invocation = match Layout::of(held.kind)? {
            Layout::TokenString => {
                let mut inv = script_with(&scripts::TOKEN_RENEW, &[keys.lock]);
                inv.arg(held.owner.to_string()).arg(millis(lease));
                inv
            }
            Layout::Hash | Layout::FairHash => {
                let mut inv = script_with(&scripts::HASH_RENEW, &[keys.lock]);
                inv.arg(millis(lease)).arg(held.owner.to_string());
                inv
            }
        };
        let renewed: i64 = self.link.invoke(&invocation).await?;
        Ok(if renewed == 1 { Renewal::Renewed } else { Renewal::Gone })
    }

    async fn reenter(&self, held: &HeldLock) -> Result<Renewal> {
        match Layout::of(held.kind)? {
            Layout::TokenString => return Ok(Renewal::Renewed), // a plain key has no hold count
            Layout::Hash | Layout::FairHash => {}
        }
        let keys = LockKeys::new(&held.key);
        let mut invocation = script_with(&scripts::REENTRANT_REENTER, &[keys.lock]);
        invocation.arg(held.owner.to_string());
        let still_held: i64 = self.link.invoke(&invocation).await?;
        Ok(if still_held == 1 { Renewal::Renewed } else { Renewal::Gone })
    }

    async fn release(&self, held: &HeldLock, holds_left: u32) -> Result<Release> {
        let keys = LockKeys::new(&held.key);
        let channel = keys.channel();
        let field = held.owner.to_string();
        let publish = self.link.publish_command();
        let layout = Layout::of(held.kind)?;
        let released: i64 = match layout {
            Layout::TokenString if holds_left > 0 => return Ok(Release::Released),
            Layout::TokenString => {
                let mut inv = script_with(&scripts::TOKEN_RELEASE, &[keys.lock, &channel]);
                inv.arg(&field).arg(publish).arg(UNLOCK_MESSAGE);
                let released: i64 = self.link.invoke(&inv).await?;
                if released == 1 {
                    0
                } else {
                    -1
                }
            }
            Layout::FairHash => {
                let mut inv =
                    script_with(&scripts::FAIR_RELEASE, &[keys.lock, &keys.queue(), &keys.timeouts(), &channel]);
                inv.arg(&field).arg(holds_left).arg(publish).arg(UNLOCK_MESSAGE).arg(now_ms());
                self.link.invoke(&inv).await?
            }
            Layout::Hash => {
                let mut inv = script_with(&scripts::REENTRANT_RELEASE, &[keys.lock, &channel]);
                inv.arg(&field).arg(holds_left).arg(publish).arg(UNLOCK_MESSAGE);
                self.link.invoke(&inv).await?
            }
        };
        if released == 0 && layout != Layout::FairHash {
            // Fair waiters are woken in queue order by the server; others may barge.
            self.subscriptions.released_locally(&channel);
        }
        Ok(if released < 0 { Release::Gone } else { Release::Released })
    }

    async fn transfer(
        &self,
        from: &HeldLock,
        to: Owner,
        lease: Duration,
        _lost: &LostNotifier,
    ) -> Result<Option<Acquired>> {
        let keys = LockKeys::new(&from.key);
        let script = match Layout::of(from.kind)? {
            Layout::TokenString => &scripts::TOKEN_TRANSFER,
            Layout::Hash => &scripts::REENTRANT_TRANSFER,
            Layout::FairHash => return Ok(None), // never asked: fair locks do not transfer
        };
        let attempt_started = tokio::time::Instant::now();
        let mut invocation = script_with(script, &[keys.lock, &keys.token()]);
        invocation.arg(from.owner.to_string()).arg(to.to_string()).arg(millis(lease));
        let token: i64 = self.link.invoke(&invocation).await?;
        Ok(u64::try_from(token).ok().filter(|&t| t > 0).map(|token| Acquired { token, attempt_started, state: None }))
    }

    /// Fair locks serve waiters in queue order, so they never change hands locally.
    fn transfers(&self, kind: LockKind) -> bool {
        matches!(kind, LockKind::Reentrant | LockKind::Token)
    }

    /// The acquire and transfer scripts draw two tokens and issue the first.
    fn reserves_next_token(&self, kind: LockKind) -> bool {
        self.transfers(kind)
    }

    async fn is_locked(&self, key: &str, kind: LockKind) -> Result<bool> {
        Layout::of(kind)?;
        let keys = LockKeys::new(key);
        let exists: i64 = self.link.invoke(&script_with(&scripts::IS_LOCKED, &[keys.lock])).await?;
        Ok(exists == 1)
    }

    async fn remaining_lease(&self, key: &str, kind: LockKind) -> Result<Option<Duration>> {
        Layout::of(kind)?;
        let keys = LockKeys::new(key);
        let pttl: i64 = self.link.invoke(&script_with(&scripts::REMAINING_LEASE, &[keys.lock])).await?;
        Ok(match pttl {
            -2 => None,
            ms if ms < 0 => Some(Duration::MAX), // a key without expiry (a foreign client's)
            ms => Some(Duration::from_millis(ms as u64)),
        })
    }

    async fn force_unlock(&self, key: &str, kind: LockKind) -> Result<bool> {
        let keys = LockKeys::new(key);
        let publish = self.link.publish_command();
        let removed: i64 = if Layout::of(kind)? == Layout::FairHash {
            let mut inv = script_with(
                &scripts::FAIR_FORCE_UNLOCK,
                &[keys.lock, &keys.queue(), &keys.timeouts(), &keys.channel()],
            );
            inv.arg(publish).arg(UNLOCK_MESSAGE).arg(now_ms());
            self.link.invoke(&inv).await?
        } else {
            let mut inv = script_with(&scripts::FORCE_UNLOCK, &[keys.lock, &keys.channel()]);
            inv.arg(publish).arg(UNLOCK_MESSAGE);
            let removed = self.link.invoke(&inv).await?;
            if removed == 1 {
                self.subscriptions.released_locally(&keys.channel());
            }
            removed
        };
        Ok(removed == 1)
    }
}

#[async_trait]
impl Store for RedisBackend {
    fn inspect(self: Arc<Self>) -> Option<Arc<dyn crate::spi::InspectStore>> {
        Some(self)
    }

    fn retry_within(&self) -> Duration {
        self.timeout
    }

    fn check_key(&self, key: &str) -> Result<()> {
        names::check_key(key)
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            rw_locks: true,
            semaphores: true,
            counters: true,
            versioned_values: true,
            elections: true,
            ..Capabilities::locks_only("redis", &[LockKind::Reentrant, LockKind::Fair, LockKind::Token])
        }
    }

    fn locks(self: Arc<Self>) -> Arc<ExclusiveStore> {
        self
    }

    fn rw_locks(self: Arc<Self>) -> Option<Arc<SharedStore>> {
        Some(Arc::new(RedisRwLocks {
            link: self.link.clone(),
            subscriptions: self.subscriptions.clone(),
            preference: self.rw_preference,
        }))
    }

    fn semaphores(self: Arc<Self>) -> Option<Arc<PermitStore>> {
        Some(Arc::new(RedisSemaphores { link: self.link.clone(), subscriptions: self.subscriptions.clone() }))
    }

    /// Redisson's plain RSemaphore (semaphore_plain.rs), for `Client::plain_semaphore`.
    fn plain_semaphores(self: Arc<Self>) -> Option<Arc<dyn crate::spi::PlainPermitStore>> {
        Some(Arc::new(semaphore_plain::RedisPlainSemaphores {
            link: self.link.clone(),
            subscriptions: self.subscriptions.clone(),
        }))
    }

    fn latches(self: Arc<Self>) -> Option<Arc<dyn crate::spi::LatchStore>> {
        Some(Arc::new(latch::RedisLatches { link: self.link.clone(), subscriptions: self.subscriptions.clone() }))
    }

    fn counters(self: Arc<Self>) -> Option<Arc<dyn CounterStore>> {
        Some(Arc::new(counters::RedisCounters { link: self.link.clone() }))
    }

    fn versions(self: Arc<Self>) -> Option<Arc<dyn VersionStore>> {
        Some(Arc::new(values::RedisValues::new(self.link.clone(), self.subscriptions.clone())))
    }
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend").field("url", &self.link.redacted_url()).finish()
    }
}
