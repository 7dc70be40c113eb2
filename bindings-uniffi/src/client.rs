//! `Client`: a connection to one backend, picked by URL, with its own runtime.

use std::sync::Arc;

use polylock::kit::LockTarget;
use polylock::LockKind;

use crate::election::Election;
use crate::errors::{PolylockError, Result};
use crate::id_generators::{LeasedSnowflake, Segment};
use crate::idempotency::Idempotency;
use crate::latch::Latch;
use crate::lock::{Lock, RwLock};
use crate::multi_lock::MultiLock;
use crate::semaphore::Semaphore;
use crate::shared::{new_runtime, ClientShared};
use crate::value::Value;

#[derive(uniffi::Object)]
pub struct Client {
    shared: Arc<ClientShared>,
}

/// Connect to `url` (`nil`: `$POLYLOCK_URL`, else `sqlite://polylock.db`), by the core's URL
/// rules. Waits with the GVL released.
#[uniffi::export]
pub async fn connect(url: Option<String>) -> Result<Arc<Client>> {
    let url = url.unwrap_or_else(polylock::url::default_url);
    let runtime = new_runtime()?;
    let connected = runtime.spawn(async move { polylock::Client::connect(&url).await }).await;
    match connected {
        Ok(Ok(client)) => Ok(Arc::new(Client { shared: Arc::new(ClientShared::new(runtime, client)) })),
        failed => {
            // No client, so nothing on the runtime is worth waiting for.
            runtime.shutdown_background();
            Err(match failed {
                Ok(Err(err)) => err.into(),
                _ => polylock::Error::internal("the connect task failed").into(),
            })
        }
    }
}

#[uniffi::export]
impl Client {
    /// A handle on the mutex `name` of `kind` (`reentrant` when nil; `fair`, `token`, `lease`);
    /// holds nothing.
    pub fn lock(&self, name: String, kind: Option<String>) -> Result<Arc<Lock>> {
        let mut lock = self.shared.client().lock(&name)?;
        if let Some(kind) = kind {
            let kind: LockKind = kind.parse()?;
            lock = lock.with_kind(kind)?;
        }
        Ok(Lock::new(self.shared.clone(), LockTarget::Lock(lock)))
    }

    /// The read-write lock `name`; `Unsupported` if the backend has none.
    pub fn rw_lock(&self, name: String) -> Result<Arc<RwLock>> {
        let rw = self.shared.client().rw_lock(&name)?;
        Ok(RwLock::new(self.shared.clone(), rw))
    }

    /// The semaphore `name` of `permits` permits; `Unsupported` if the backend has none.
    pub fn semaphore(&self, name: String, permits: u32) -> Result<Arc<Semaphore>> {
        let semaphore = self.shared.client().semaphore(&name, permits)?;
        Ok(Semaphore::new(self.shared.clone(), semaphore))
    }

    /// The mutexes `names` (the backend's default kind), taken as one.
    pub fn multi_lock(&self, names: Vec<String>) -> Result<Arc<MultiLock>> {
        let locks = self.shared.client().multi_lock(&names)?;
        Ok(MultiLock::new(self.shared.clone(), locks))
    }

    /// The versioned value `name`; `Unsupported` if the backend keeps none.
    pub fn value(&self, name: String) -> Result<Arc<Value>> {
        let value = self.shared.client().value(&name)?;
        Ok(Value::new(self.shared.clone(), value))
    }

    /// The leader election `name`; `Unsupported` if the backend has none (RedLock).
    pub fn election(&self, name: String) -> Result<Arc<Election>> {
        let election = self.shared.client().election(&name)?;
        Ok(Election::new(self.shared.clone(), election))
    }

    /// The countdown latch `name`; `Unsupported` if the backend has none (RedLock).
    pub fn latch(&self, name: String) -> Result<Arc<Latch>> {
        let latch = self.shared.client().latch(&name)?;
        Ok(Latch::new(self.shared.clone(), latch))
    }

    /// Idempotency keys of `namespace` (retention and in-progress TTL in seconds; nil: the
    /// core's defaults, 24 h and 60 s).
    pub fn idempotency(
        &self,
        namespace: String,
        retention_seconds: Option<f64>,
        in_progress_ttl_seconds: Option<f64>,
    ) -> Result<Arc<Idempotency>> {
        let seconds = |value: Option<f64>, default: std::time::Duration, what: &str| match value {
            None => Ok(default),
            Some(s) => std::time::Duration::try_from_secs_f64(s).map_err(|_| {
                polylock::Error::invalid_argument(format!("{what} must be a finite number of seconds >= 0, got {s}"))
            }),
        };
        let keys = self.shared.client().idempotency_with(
            &namespace,
            seconds(retention_seconds, polylock::Idempotency::DEFAULT_RETENTION, "retention")?,
            seconds(in_progress_ttl_seconds, polylock::Idempotency::DEFAULT_IN_PROGRESS_TTL, "in_progress_ttl")?,
        )?;
        Ok(Idempotency::new(self.shared.clone(), keys))
    }

    /// Segment IDs of `tag` (`step` nil: Leaf's 1000).
    pub fn segment(&self, tag: String, step: Option<u64>) -> Result<Arc<Segment>> {
        let mut options = polylock::SegmentOptions::default();
        if let Some(step) = step {
            options.step = step;
            options.max_step = options.max_step.max(step);
        }
        let generator = self.shared.client().segments(&tag, options)?;
        Ok(Segment::new(self.shared.clone(), generator))
    }

    /// A Snowflake generator on a leased worker id (`worker_id` nil: the lowest free one).
    pub async fn snowflake(&self, worker_id: Option<u64>) -> Result<Arc<LeasedSnowflake>> {
        let client = self.shared.client().clone();
        let generator = self
            .shared
            .run("a snowflake lease".to_string(), async move {
                client.snowflake(worker_id, polylock::SnowflakeOptions::default()).await
            })
            .await?;
        Ok(LeasedSnowflake::new(self.shared.clone(), generator))
    }

    /// Stop the watchdogs, give every hold back and close the backend. In a child forked
    /// after the connect it does nothing: the holds and connections are the parent's.
    pub async fn close(&self) -> Result<(), PolylockError> {
        if self.shared.is_inherited_across_fork() {
            return Ok(());
        }
        let client = self.shared.client().clone();
        self.shared
            .run("the client's close".to_string(), async move {
                client.close().await;
                Ok(())
            })
            .await
    }

    pub fn is_closed(&self) -> bool {
        self.shared.client().is_closed()
    }

    /// The URL connected to, with any password replaced by `***`.
    pub fn url(&self) -> String {
        self.shared.client().url().to_string()
    }

    /// This client's random id (the first half of every owner it makes).
    pub fn client_id(&self) -> String {
        self.shared.client().id().to_string()
    }

    /// The status of the mutex `name` of `kind` (nil: the backend's default kind) in the kit's
    /// JSON shape (`polylock status --json`'s): held, holder, fencing token, lease, waiters.
    pub async fn status_json(&self, name: String, kind: Option<String>) -> Result<String> {
        let kind: Option<LockKind> = kind.map(|kind| kind.parse()).transpose()?;
        let client = self.shared.client().clone();
        let what = format!("the status of '{name}'");
        self.shared.run(what, async move { polylock::kit::inspect_json::status_of(&client, &name, kind).await }).await
    }

    /// The mutexes whose name starts with `prefix`, sorted, in the kit's JSON shape (`polylock
    /// list --json`'s: name, kind, held); `Unsupported` where the backend cannot list them.
    pub async fn list_json(&self, prefix: String) -> Result<String> {
        let client = self.shared.client().clone();
        let what = format!("the list of '{prefix}'");
        self.shared.run(what, async move { polylock::kit::inspect_json::list_of(&client, &prefix).await }).await
    }

    /// Remove the mutex `name` of `kind` (nil: the backend's default) whoever holds it and wake
    /// its waiters; whether there was a hold.
    pub async fn force_unlock(&self, name: String, kind: Option<String>) -> Result<bool> {
        let kind: Option<LockKind> = kind.map(|kind| kind.parse()).transpose()?;
        let client = self.shared.client().clone();
        let what = format!("the forced unlock of '{name}'");
        self.shared.run(what, async move { client.inspect().force_unlock(&name, kind).await }).await
    }

    /// This client's own counts, in the kit's JSON shape (`metrics_json` for the process's).
    pub fn metrics_json(&self) -> String {
        polylock::kit::metrics_json::to_json(&self.shared.client().metrics())
    }
}
