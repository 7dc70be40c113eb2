//! `connect()` and `Client`: a connection to one backend, picked by URL.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::kit::LockTarget;
use polylock::LockKind;

use crate::election::Election;
use crate::errors::{detailed, Detailed, IntoNapiResult};
use crate::idempotency::{self, Idempotency, IdempotencyOptions};
use crate::latch::Latch;
use crate::leased_snowflake::{self, LeasedSnowflake, LeasedSnowflakeOptions};
use crate::lock::Lock;
use crate::multi_lock::{self, MultiLock, MultiLockPartOptions};
use crate::rw_lock::ReadWriteLock;
use crate::segment::{self, Segment, SegmentOptions};
use crate::semaphore::Semaphore;
use crate::settle;
use crate::values::Value;

/// Connect to the backend `url` names (`sqlite://path.db`, `redis://host:port`, `etcd://...`,
/// ...); without one, to `$POLYLOCK_URL`, else `sqlite://polylock.db`.
#[napi(ts_args_type = "url?: string | undefined | null", ts_return_type = "Promise<Client>")]
pub fn connect(env: &Env, url: Option<String>) -> Result<PromiseRaw<'_, Client>> {
    let url = url.unwrap_or_else(polylock::url::default_url);
    settle::spawn(env, async move {
        let client = polylock::Client::connect(&url).await.into_napi()?;
        Ok(Client { client })
    })
}

#[napi(object, object_to_js = false)]
pub struct LockOptions {
    /// `"reentrant"` (the default), `"fair"`, `"token"` or `"lease"`; a kind the backend
    /// does not offer is refused here, with `POLYLOCK_UNSUPPORTED`.
    #[napi(ts_type = "'reentrant' | 'fair' | 'token' | 'lease'")]
    pub kind: Option<String>,
}

#[napi(object, object_to_js = false)]
pub struct SemaphoreOptions {
    /// How many permits the semaphore has (fixed by the first use of its name).
    pub permits: u32,
}

/// @internal A lock's status as the core's one JSON text (`polylock::kit::inspect_json`),
/// with its two tokens as BigInts, which JSON.parse would round; `index.js` puts them in.
#[napi(object, object_from_js = false)]
pub struct StatusNative {
    pub json: String,
    pub fencing_token: Option<BigInt>,
    pub token_counter: Option<BigInt>,
}

/// The kind given in `options`, if any (parsed: an unknown name is `POLYLOCK_INVALID_ARGUMENT`).
fn kind_of(options: Option<LockOptions>) -> Result<Option<LockKind>> {
    options.and_then(|options| options.kind).map(|kind| kind.parse::<LockKind>().into_napi()).transpose()
}

/// A connection to one backend. Close it when done: closing stops every watchdog and gives
/// every hold back (their guards then report `isLost`).
#[napi]
pub struct Client {
    client: polylock::Client,
}

#[napi]
impl Client {
    /// A handle on the lock `name`. Cheap, and holds nothing until acquired.
    #[napi]
    pub fn lock(&self, name: String, options: Option<LockOptions>) -> Result<Lock> {
        let lock = self.client.lock(&name).into_napi()?;
        // Without a kind, the backend's default (reentrant, or RedLock's one kind: token).
        let lock = match options.and_then(|options| options.kind) {
            Some(kind) => lock.with_kind(kind.parse::<LockKind>().into_napi()?).into_napi()?,
            None => lock,
        };
        Ok(Lock::new(LockTarget::Lock(lock)))
    }

    /// A handle on the read-write lock `name` (`.read`, `.write`). Throws
    /// `POLYLOCK_UNSUPPORTED` if the backend has none.
    #[napi(ts_return_type = "RwLock")]
    pub fn rw_lock(&self, name: String) -> Result<ReadWriteLock> {
        Ok(ReadWriteLock::new(self.client.rw_lock(&name).into_napi()?))
    }

    /// A handle on the semaphore `name` of `options.permits` permits. Throws
    /// `POLYLOCK_UNSUPPORTED` if the backend has none.
    #[napi]
    pub fn semaphore(&self, name: String, options: SemaphoreOptions) -> Result<Semaphore> {
        Ok(Semaphore::new(self.client.semaphore(&name, options.permits).into_napi()?))
    }

    /// A Snowflake generator on a worker id leased from the backend: `workerId` if given
    /// (rejects with `POLYLOCK_TIMEOUT` if another generator holds it), else the lowest free
    /// one. No two generators of one store issue the same ID, whatever their clocks say.
    /// (A generator on a fixed worker id, without a backend: `new Snowflake({ workerId })`.)
    #[napi(ts_args_type = "options?: LeasedSnowflakeOptions", ts_return_type = "Promise<LeasedSnowflake>")]
    pub fn snowflake<'env>(
        &self,
        env: &'env Env,
        options: Option<LeasedSnowflakeOptions>,
    ) -> Result<PromiseRaw<'env, Detailed<LeasedSnowflake>>> {
        let (worker, options) = leased_snowflake::core_options(options)?;
        let client = self.client.clone();
        settle::spawn(env, async move { detailed(client.snowflake(worker, options).await.map(LeasedSnowflake::new)) })
    }

    /// Leaf-style segment IDs of `tag` (Leaf's `biz_tag`): never 0, never repeated by any
    /// process using this store. Throws `POLYLOCK_UNSUPPORTED` if the backend has no counters.
    #[napi]
    pub fn segment(&self, tag: String, options: Option<SegmentOptions>) -> Result<Segment> {
        segment::open(&self.client, &tag, options)
    }

    /// A handle on the versioned value `name` (compare-and-set, fenced writes). Throws
    /// `POLYLOCK_UNSUPPORTED` if the backend has no versioned values.
    #[napi]
    pub fn value(&self, name: String) -> Result<Value> {
        Ok(Value::new(self.client.value(&name).into_napi()?))
    }

    /// Idempotency keys of `namespace`: a completed key replays its response for
    /// `retentionMs` (default 24 h); an attempt that neither completes nor extends is taken
    /// over after `inProgressTtlMs` (default 60 s).
    #[napi]
    pub fn idempotency(&self, namespace: String, options: Option<IdempotencyOptions>) -> Result<Idempotency> {
        idempotency::open(&self.client, &namespace, options)
    }

    /// The locks `parts` (names of mutexes, or `{ name, side: 'read' | 'write' }` for sides
    /// of read-write locks) acquired and released as one, always in the byte order of their
    /// keys, so two multi-locks over the same names never deadlock. Holds nothing yet.
    #[napi(ts_args_type = "parts: Array<string | MultiLockPartOptions>")]
    pub fn multi_lock(&self, parts: Vec<Either<String, MultiLockPartOptions>>) -> Result<MultiLock> {
        let parts = parts.into_iter().map(multi_lock::core_part).collect::<Result<Vec<_>>>()?;
        Ok(MultiLock::new(self.client.multi_lock_of(parts).into_napi()?))
    }

    /// A handle on the leader election `name`: `campaign`, `leader`, `observe`. Throws
    /// `POLYLOCK_UNSUPPORTED` if the backend has no elections (RedLock).
    #[napi]
    pub fn election(&self, name: String) -> Result<Election> {
        Ok(Election::new(self.client.election(&name).into_napi()?))
    }

    /// A handle on the countdown latch `name` (Redisson's `RCountDownLatch` on Redis). Throws
    /// `POLYLOCK_UNSUPPORTED` if the backend has no latches (RedLock).
    #[napi]
    pub fn latch(&self, name: String) -> Result<Latch> {
        Ok(Latch::new(self.client.latch(&name).into_napi()?))
    }

    /// @internal The status behind `status()` (index.js parses it into the object).
    #[napi(js_name = "statusNative", skip_typescript)]
    pub fn status_native<'env>(
        &self,
        env: &'env Env,
        name: String,
        options: Option<LockOptions>,
    ) -> Result<PromiseRaw<'env, StatusNative>> {
        let kind = kind_of(options)?;
        let client = self.client.clone();
        settle::spawn(env, async move {
            // The kind the status is read as (the one given, else the backend's default), which
            // the JSON names as the CLI's `status --json` does.
            let inspector = client.inspect();
            let kind = inspector.kind_or_default(kind).into_napi()?;
            let status = inspector.status(&name, Some(kind)).await.into_napi()?;
            Ok(StatusNative {
                json: polylock::kit::inspect_json::status_json(&name, kind, client.capabilities().backend, &status),
                fencing_token: status.fencing_token.map(BigInt::from),
                token_counter: status.token_counter.map(BigInt::from),
            })
        })
    }

    /// @internal The list behind `list()` (index.js parses it into the array).
    #[napi(js_name = "listJson", skip_typescript)]
    pub fn list_json<'env>(&self, env: &'env Env, prefix: Option<String>) -> Result<PromiseRaw<'env, String>> {
        let client = self.client.clone();
        settle::spawn(env, async move {
            polylock::kit::inspect_json::list_of(&client, &prefix.unwrap_or_default()).await.into_napi()
        })
    }

    /// Break the hold on the mutex `name` (of `options.kind`, default the backend's) whoever
    /// holds it, and wake its waiters (Redisson's `forceUnlock`); whether there was a hold.
    /// Dangerous: the holder carries on believing it holds the lock until its next renewal or
    /// release tells it otherwise (its guard then reports `isLost`).
    #[napi(ts_args_type = "name: string, options?: LockOptions", ts_return_type = "Promise<boolean>")]
    pub fn force_unlock<'env>(
        &self,
        env: &'env Env,
        name: String,
        options: Option<LockOptions>,
    ) -> Result<PromiseRaw<'env, bool>> {
        let kind = kind_of(options)?;
        let client = self.client.clone();
        settle::spawn(env, async move { client.inspect().force_unlock(&name, kind).await.into_napi() })
    }

    /// Stop the watchdogs, give every hold back and close the backend. Calls on the client
    /// afterwards fail with `POLYLOCK_CONNECTION`. Closing twice is harmless.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let client = self.client.clone();
        settle::spawn(env, async move {
            client.close().await;
            Ok(())
        })
    }

    /// The URL connected to, with any password replaced by `***`.
    #[napi(getter)]
    pub fn url(&self) -> String {
        self.client.url().to_string()
    }

    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.client.is_closed()
    }

    /// This client's own metrics as the core's one JSON text; `index.js` parses it into
    /// `client.metrics()`'s object.
    #[napi(skip_typescript)]
    pub fn metrics_json(&self) -> String {
        polylock::kit::metrics_json::to_json(&self.client.metrics())
    }

    /// This client's random id: the first half of every owner it acquires as.
    #[napi(getter)]
    pub fn client_id(&self) -> String {
        self.client.id().to_string()
    }
}
