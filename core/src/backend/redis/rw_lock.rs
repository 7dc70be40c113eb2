//! Read-write locks on Redis, in Redisson's RReadWriteLock layout (see rw_scripts.rs), so a
//! polylock reader and a Redisson reader of one name share, and either side's writer
//! excludes the other's readers.
//!
//! Waiters listen on `redisson_rwlock:{name}` and wake on its messages (Redisson's releases
//! and ours), with the holders' lease end and a slow backoff as fallbacks.
//!
//! Redisson's layout lets a reader in while the lock is in read mode, even with writers
//! waiting. With `rw_preference=writer` in the URL, a waiting polylock writer leaves a mark
//! that new polylock readers give way to; Redisson's readers know nothing of it, so this is
//! for names only polylock uses.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::link::Link;
use super::pubsub::Subscriptions;
use super::rw_scripts::{self, write_field, RwKeys, READ_UNLOCK_MESSAGE, WRITER_MARK_MS, WRITE_UNLOCK_MESSAGE};
use super::{millis, script_with, FALLBACK};
use crate::backend::poll::{acquire_by_attempts, Attempt};
use crate::error::{Error, Result};
use crate::spi::{AcquireRequest, Acquired, HeldLock, HoldStore, Release, Renewal, RwMode};

/// Which waiters a read-write lock favours (URL option `rw_preference`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RwPreference {
    /// Redisson's: readers join a read-mode lock even while writers wait.
    Reader,
    /// polylock only: a waiting writer keeps new polylock readers out.
    Writer,
}

impl RwPreference {
    pub fn parse(value: Option<String>) -> Result<RwPreference> {
        match value.as_deref() {
            None | Some("reader") => Ok(RwPreference::Reader),
            Some("writer") => Ok(RwPreference::Writer),
            Some(other) => Err(Error::invalid_argument(format!(
                "URL option 'rw_preference' is 'reader' (Redisson's, the default) or 'writer' \
                 (polylock-only names), not '{other}'"
            ))),
        }
    }

    fn flag(self) -> &'static str {
        match self {
            RwPreference::Reader => "0",
            RwPreference::Writer => "1",
        }
    }
}

pub(super) struct RedisRwLocks {
    pub link: Arc<Link>,
    pub subscriptions: Arc<Subscriptions>,
    pub preference: RwPreference,
}

impl RedisRwLocks {
    /// One attempt for an owner that holds this side not yet.
    async fn attempt(&self, request: &AcquireRequest<RwMode>, keys: &RwKeys<'_>, field: &str) -> Result<Attempt> {
        let lease = millis(request.lease);
        let invocation = match request.kind {
            RwMode::Read => {
                let mut inv = script_with(
                    &rw_scripts::READ_ACQUIRE,
                    &[keys.hash, &keys.token(), &keys.timeout_prefix(field), &keys.writer_mark()],
                );
                inv.arg(lease).arg(field).arg(write_field(field)).arg(self.preference.flag());
                inv
            }
            RwMode::Write => {
                let mut inv = script_with(&rw_scripts::WRITE_ACQUIRE, &[keys.hash, &keys.token(), &keys.writer_mark()]);
                inv.arg(lease).arg(write_field(field)).arg(self.preference.flag()).arg(WRITER_MARK_MS);
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

    async fn withdraw_writer_mark(&self, keys: &RwKeys<'_>, field: &str) -> Result<()> {
        let mut invocation = script_with(&rw_scripts::WITHDRAW_WRITER_MARK, &[&keys.writer_mark()]);
        invocation.arg(write_field(field));
        let withdrawn: i64 = self.link.invoke(&invocation).await?;
        if withdrawn == 1 {
            self.subscriptions.released_locally(&keys.channel()); // readers held back may go
        }
        Ok(())
    }
}

#[async_trait]
impl HoldStore<RwMode> for RedisRwLocks {
    async fn acquire(&self, request: &AcquireRequest<RwMode>) -> Result<Option<Acquired>> {
        let keys = RwKeys::new(&request.key);
        let field = request.owner.to_string();
        let attempt_started = tokio::time::Instant::now();
        if let Attempt::Acquired { token, state } = self.attempt(request, &keys, &field).await? {
            return Ok(Some(Acquired { token, attempt_started, state }));
        }
        let gave_up =
            request.deadline.is_some_and(|d| tokio::time::Instant::now() >= d) || request.cancel.is_cancelled();
        let outcome = if gave_up {
            Ok(None)
        } else {
            // Subscribed before the next attempt, so a release in between still wakes us.
            match self.subscriptions.listen_all(&keys.channel()).await {
                Ok(mut subscription) => {
                    acquire_by_attempts(request, FALLBACK, &mut subscription, || self.attempt(request, &keys, &field))
                        .await
                }
                Err(err) => Err(err),
            }
        };
        if request.kind == RwMode::Write && self.preference == RwPreference::Writer && !matches!(outcome, Ok(Some(_))) {
            // Gave up: readers need not wait for the mark to lapse. (A caller that goes away
            // mid-wait leaves it to lapse, within WRITER_MARK_MS.)
            let _ = self.withdraw_writer_mark(&keys, &field).await;
        }
        outcome
    }

    async fn renew(&self, held: &HeldLock<RwMode>, lease: Duration) -> Result<Renewal> {
        let keys = RwKeys::new(&held.key);
        let field = held.owner.to_string();
        let invocation = match held.kind {
            RwMode::Read => {
                let mut inv = script_with(&rw_scripts::READ_RENEW, &[keys.hash, &keys.timeout_prefix(&field)]);
                inv.arg(millis(lease)).arg(&field);
                inv
            }
            RwMode::Write => {
                let mut inv = script_with(&rw_scripts::WRITE_RENEW, &[keys.hash]);
                inv.arg(millis(lease)).arg(write_field(&field));
                inv
            }
        };
        let renewed: i64 = self.link.invoke(&invocation).await?;
        Ok(if renewed == 1 { Renewal::Renewed } else { Renewal::Gone })
    }

    async fn reenter(&self, held: &HeldLock<RwMode>) -> Result<Renewal> {
        let keys = RwKeys::new(&held.key);
        let field = held.owner.to_string();
        let invocation = match held.kind {
            RwMode::Read => {
                let mut inv = script_with(&rw_scripts::READ_REENTER, &[keys.hash, &keys.timeout_prefix(&field)]);
                inv.arg(&field);
                inv
            }
            RwMode::Write => {
                let mut inv = script_with(&rw_scripts::WRITE_REENTER, &[keys.hash]);
                inv.arg(write_field(&field));
                inv
            }
        };
        let still_held: i64 = self.link.invoke(&invocation).await?;
        Ok(if still_held == 1 { Renewal::Renewed } else { Renewal::Gone })
    }

    async fn release(&self, held: &HeldLock<RwMode>, holds_left: u32) -> Result<Release> {
        let keys = RwKeys::new(&held.key);
        let field = held.owner.to_string();
        let channel = keys.channel();
        let publish = self.link.publish_command();
        let invocation = match held.kind {
            RwMode::Read => {
                let mut inv = script_with(
                    &rw_scripts::READ_RELEASE,
                    &[keys.hash, &channel, &keys.timeout_prefix(&field), &keys.key_prefix()],
                );
                inv.arg(&field).arg(holds_left).arg(publish).arg(READ_UNLOCK_MESSAGE);
                inv
            }
            RwMode::Write => {
                let mut inv = script_with(&rw_scripts::WRITE_RELEASE, &[keys.hash, &channel]);
                inv.arg(write_field(&field)).arg(holds_left).arg(publish).arg(WRITE_UNLOCK_MESSAGE);
                inv
            }
        };
        let left: i64 = self.link.invoke(&invocation).await?;
        if holds_left == 0 {
            // A downgrade or a departing reader may let this client's waiters in.
            self.subscriptions.released_locally(&channel);
        }
        Ok(if left < 0 { Release::Gone } else { Release::Released })
    }

    async fn is_locked(&self, key: &str, mode: RwMode) -> Result<bool> {
        let keys = RwKeys::new(key);
        let mut invocation = script_with(&rw_scripts::IS_LOCKED, &[keys.hash]);
        invocation.arg(mode.to_string());
        let locked: i64 = self.link.invoke(&invocation).await?;
        Ok(locked == 1)
    }
}
