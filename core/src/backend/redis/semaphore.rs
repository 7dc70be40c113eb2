//! Semaphores on Redis, in Redisson's RPermitExpirableSemaphore layout (see
//! semaphore_scripts.rs), so polylock and Redisson permits of one name are counted together.
//! Each permit is a random 16-byte id with its own lease, renewed by the engine's watchdog;
//! a holder that vanishes gives its permit back when its lease ends.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::link::Link;
use super::pubsub::Subscriptions;
use super::semaphore_scripts::{self, SemaphoreKeys};
use super::{millis, script_with, FALLBACK};
use crate::backend::poll::{acquire_by_attempts, Attempt};
use crate::error::{Error, Result};
use crate::spi::{AcquireRequest, Acquired, HeldLock, HoldStore, Permits, Release, Renewal};

/// A permit's id in the store: 16 random bytes, as Redisson's are (Redisson shows them to its
/// users in hex).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PermitId(pub [u8; 16]);

impl PermitId {
    fn random() -> PermitId {
        PermitId(uuid::Uuid::new_v4().into_bytes())
    }

    fn of(held: &HeldLock<Permits>) -> Result<PermitId> {
        held.state
            .as_ref()
            .and_then(|state| state.downcast_ref::<PermitId>())
            .copied()
            .ok_or_else(|| Error::internal(format!("semaphore '{}': a permit without its id", held.key)))
    }
}

pub(super) struct RedisSemaphores {
    pub link: Arc<Link>,
    pub subscriptions: Arc<Subscriptions>,
}

impl RedisSemaphores {
    async fn attempt(
        &self,
        request: &AcquireRequest<Permits>,
        keys: &SemaphoreKeys<'_>,
        id: PermitId,
    ) -> Result<Attempt> {
        let mut invocation =
            script_with(&semaphore_scripts::ACQUIRE, &[keys.counter, &keys.timeouts(), &keys.channel(), &keys.token()]);
        invocation.arg(request.kind.0).arg(millis(request.lease)).arg(&id.0[..]).arg(self.link.publish_command());
        let (status, value): (i64, i64) = self.link.invoke(&invocation).await?;
        match status {
            -1 if value > 0 => Ok(Attempt::Acquired { token: value as u64, state: Some(Arc::new(id)) }),
            -2 => Err(request.kind.other_count(&request.key, u32::try_from(value).unwrap_or(u32::MAX))),
            ms => Ok(Attempt::Busy { holder_lease_left: u64::try_from(ms).ok().map(Duration::from_millis) }),
        }
    }
}

#[async_trait]
impl HoldStore<Permits> for RedisSemaphores {
    async fn acquire(&self, request: &AcquireRequest<Permits>) -> Result<Option<Acquired>> {
        let keys = SemaphoreKeys::new(&request.key);
        // One id for every attempt of this acquisition: an attempt whose answer was lost
        // leaves at most this one permit, which its lease gives back.
        let id = PermitId::random();
        let attempt_started = tokio::time::Instant::now();
        if let Attempt::Acquired { token, state } = self.attempt(request, &keys, id).await? {
            return Ok(Some(Acquired { token, attempt_started, state }));
        }
        if request.deadline.is_some_and(|d| tokio::time::Instant::now() >= d) || request.cancel.is_cancelled() {
            return Ok(None);
        }
        let mut subscription = self.subscriptions.listen_all(&keys.channel()).await?;
        acquire_by_attempts(request, FALLBACK, &mut subscription, || self.attempt(request, &keys, id)).await
    }

    async fn renew(&self, held: &HeldLock<Permits>, lease: Duration) -> Result<Renewal> {
        let keys = SemaphoreKeys::new(&held.key);
        let id = PermitId::of(held)?;
        let mut invocation = script_with(&semaphore_scripts::RENEW, &[keys.counter, &keys.timeouts(), &keys.channel()]);
        invocation.arg(millis(lease)).arg(&id.0[..]).arg(self.link.publish_command());
        let renewed: i64 = self.link.invoke(&invocation).await?;
        Ok(if renewed == 1 { Renewal::Renewed } else { Renewal::Gone })
    }

    async fn release(&self, held: &HeldLock<Permits>, _holds_left: u32) -> Result<Release> {
        let keys = SemaphoreKeys::new(&held.key);
        let id = PermitId::of(held)?;
        let channel = keys.channel();
        let mut invocation = script_with(&semaphore_scripts::RELEASE, &[keys.counter, &keys.timeouts(), &channel]);
        invocation.arg(&id.0[..]).arg(self.link.publish_command());
        let released: i64 = self.link.invoke(&invocation).await?;
        self.subscriptions.released_locally(&channel);
        Ok(if released == 1 { Release::Released } else { Release::Gone })
    }

    async fn is_locked(&self, key: &str, _permits: Permits) -> Result<bool> {
        let keys = SemaphoreKeys::new(key);
        let taken: i64 = self.link.invoke(&script_with(&semaphore_scripts::TAKEN, &[&keys.timeouts()])).await?;
        Ok(taken > 0)
    }
}
