//! What a client and every lock made from it share: the core client and the tokio runtime
//! this binding created for it (DESIGN.md, "Runtime ownership").

use std::future::Future;
use std::sync::RwLock;

use polylock::kit::runtime::{close_and_stop, Workers, CLOSE_LIMIT};
use polylock::{Error, Result};
use tokio::runtime::Runtime;

/// The kit's runtime with two workers: the calling C thread does the waiting.
pub fn new_runtime() -> Result<Runtime> {
    polylock::kit::runtime::new_runtime(Workers::Light, None)
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

    /// Close the core client and stop the runtime (the kit's close policy). Waits for calls
    /// in flight on other threads.
    pub fn shut_down(&self) {
        let mut slot = self.runtime.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(runtime) = slot.take() {
            close_and_stop(runtime, &self.client, CLOSE_LIMIT);
        }
    }
}
