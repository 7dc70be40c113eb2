//! What a client and every lock made from it share: the core client and the tokio runtime
//! this binding created for it (DESIGN.md, "Runtime ownership").

use std::future::Future;
use std::sync::RwLock;
use std::time::Duration;

use polylock::{Error, Result};
use tokio::runtime::Runtime;

/// The watchdogs, acquire tasks and connection drivers are light; C programs often run on
/// small machines and may create several clients.
const WORKER_THREADS: usize = 2;

/// How long freeing a client may spend giving its holds back to the backend.
const CLOSE_LIMIT: Duration = Duration::from_secs(5);

/// How long freeing a client waits for the runtime's threads to finish.
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(5);

pub fn new_runtime() -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .thread_name("polylock-worker")
        .enable_all()
        .build()
        .map_err(|err| Error::backend(format!("cannot start the polylock runtime: {err}")))
}

pub struct Shared {
    pub client: polylock::Client,
    /// `None` once the client is freed. Lock handles may outlive the client (C frees in any
    /// order); their calls then fail with `CONNECTION` instead of touching a dead runtime.
    runtime: RwLock<Option<Runtime>>,
}

impl Shared {
    pub fn new(client: polylock::Client, runtime: Runtime) -> Shared {
        Shared { client, runtime: RwLock::new(Some(runtime)) }
    }

    /// Run `future` to completion on the calling (C) thread, driven by this client's runtime.
    pub fn block_on<T>(&self, future: impl Future<Output = Result<T>>) -> Result<T> {
        let runtime = self.runtime.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let runtime = runtime.as_ref().ok_or_else(|| {
            Error::connection(format!("the client for {} was freed; connect again", self.client.url()))
        })?;
        runtime.block_on(future)
    }

    /// Close the core client (stopping its watchdogs and giving its holds back), then stop
    /// the runtime and join its threads. Waits for calls in flight on other threads.
    pub fn shut_down(&self) {
        let mut slot = self.runtime.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(runtime) = slot.take() {
            runtime.block_on(async {
                let _ = tokio::time::timeout(CLOSE_LIMIT, self.client.close()).await;
            });
            runtime.shutdown_timeout(SHUTDOWN_LIMIT);
        }
    }
}
