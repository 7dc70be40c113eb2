//! What a client and every lock made from it share: the core client and the tokio runtime
//! this binding created for it (DESIGN.md, "Runtime ownership").

use std::future::Future;
use std::mem::ManuallyDrop;
use std::sync::RwLock;

use polylock::kit::fork::{self, ConnectedIn};
use polylock::kit::runtime::{close_or_abandon, Workers, CLOSE_LIMIT};
use polylock::{Error, Result};
use tokio::runtime::Runtime;

/// The kit's runtime with two workers: the calling C thread does the waiting.
pub fn new_runtime() -> Result<Runtime> {
    polylock::kit::runtime::new_runtime(Workers::Light, None)
}

pub struct Shared {
    /// ManuallyDrop: in a forked child it is abandoned, not dropped (see `Drop`). Private:
    /// `client()` hands out the client itself (a clone of the ManuallyDrop would never drop).
    client: ManuallyDrop<polylock::Client>,
    /// `None` once the client is freed. Lock handles may outlive the client (C frees in any
    /// order); their calls then fail with `CONNECTION` instead of touching a dead runtime.
    runtime: RwLock<Option<Runtime>>,
    /// In a child forked after the connect, every call fails with `CONNECTION` at once (the
    /// runtime's threads stayed in the parent: it would wait forever) and freeing abandons.
    connected_in: ConnectedIn,
}

impl Shared {
    pub fn new(client: polylock::Client, runtime: Runtime) -> Shared {
        Shared {
            client: ManuallyDrop::new(client),
            runtime: RwLock::new(Some(runtime)),
            connected_in: ConnectedIn::this_process(),
        }
    }

    pub fn client(&self) -> &polylock::Client {
        &self.client
    }

    /// Run `future` to completion on the calling (C) thread, driven by this client's runtime.
    pub fn block_on<T>(&self, future: impl Future<Output = Result<T>>) -> Result<T> {
        self.connected_in.check()?;
        let runtime = self.runtime.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let runtime = runtime.as_ref().ok_or_else(|| {
            Error::connection(format!("the client for {} was freed; connect again", self.client.url()))
        })?;
        runtime.block_on(future)
    }

    /// Close the core client and stop the runtime (the kit's close policy; in a forked
    /// child it abandons both). Waits for calls in flight on other threads.
    pub fn shut_down(&self) {
        let mut slot = self.runtime.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(runtime) = slot.take() {
            close_or_abandon(self.connected_in, runtime, self.client().clone(), CLOSE_LIMIT);
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let runtime = self.runtime.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
        if self.connected_in.is_inherited() {
            // A child's copy: the runtime's threads and the holds are the parent's.
            // SAFETY: taken once, here, and never used again.
            fork::abandon((unsafe { ManuallyDrop::take(&mut self.client) }, runtime));
            return;
        }
        // SAFETY: taken once, here, and never used again. The client goes first, then the
        // runtime it may still hand work to (when the client was never shut down).
        unsafe { ManuallyDrop::drop(&mut self.client) };
        drop(runtime);
    }
}
