//! `Client`: a connection to one backend, picked by URL, with its own runtime.

use std::sync::Arc;

use polylock::kit::LockTarget;
use polylock::LockKind;

use crate::errors::{PolylockError, Result};
use crate::lock::{Lock, RwLock};
use crate::semaphore::Semaphore;
use crate::shared::{new_runtime, ClientShared};

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

    /// Stop the watchdogs, give every hold back and close the backend.
    pub async fn close(&self) -> Result<(), PolylockError> {
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
}
