//! `connect()` and `Client`: a connection to one backend, picked by URL.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::kit::LockTarget;
use polylock::LockKind;

use crate::errors::IntoNapiResult;
use crate::lock::Lock;
use crate::rw_lock::ReadWriteLock;
use crate::semaphore::Semaphore;
use crate::settle;
use crate::snowflake::{Snowflake, SnowflakeOptions};

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
        let kind = match options.and_then(|options| options.kind) {
            Some(kind) => kind.parse::<LockKind>().into_napi()?,
            None => LockKind::default(),
        };
        let lock = self.client.lock(&name).and_then(|lock| lock.with_kind(kind)).into_napi()?;
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

    /// A snowflake ID generator (Twitter layout: 41 bits of ms, 10 of worker, 12 of sequence).
    #[napi]
    pub fn snowflake(&self, options: SnowflakeOptions) -> Result<Snowflake> {
        Snowflake::from_options(options)
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

    /// This client's random id: the first half of every owner it acquires as.
    #[napi(getter)]
    pub fn client_id(&self) -> String {
        self.client.id().to_string()
    }
}
