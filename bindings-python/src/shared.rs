//! What a client and every lock made from it share: the core client, the tokio runtime the
//! binding created for it, and the process that created them.
//!
//! Each client owns its runtime (DESIGN.md, "Runtime ownership"), so closing or dropping
//! one client never disturbs another, and a forked child can tell that the runtime it
//! inherited has no threads behind it.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::time::Duration;

use polylock::kit::fork::ConnectedIn;
use polylock::kit::runtime::{self, Workers, CLOSE_ON_DROP_LIMIT};
use pyo3::prelude::*;
use tokio::runtime::Runtime;

/// Blocking calls wake this often, without the GIL held in between, to let Ctrl-C through
/// (CPython only delivers signals to Python code, never into a native wait).
const SIGNAL_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// The kit's runtime with two workers: Python threads and asyncio loops do the waiting.
pub fn new_runtime() -> PyResult<Runtime> {
    runtime::new_runtime(Workers::Light, None).map_err(crate::errors::to_py_err)
}

pub struct ClientShared {
    // ManuallyDrop: `Drop` decides how to let go of them (closing, or forgetting after fork).
    client: ManuallyDrop<polylock::Client>,
    runtime: ManuallyDrop<Runtime>,
    connected_in: ConnectedIn,
}

impl ClientShared {
    pub fn new(runtime: Runtime, client: polylock::Client) -> ClientShared {
        ClientShared {
            client: ManuallyDrop::new(client),
            runtime: ManuallyDrop::new(runtime),
            connected_in: ConnectedIn::this_process(),
        }
    }

    /// The core client, once we know this is still the process that connected.
    pub fn client(&self) -> PyResult<&polylock::Client> {
        self.ensure_same_process()?;
        Ok(&self.client)
    }

    pub fn runtime(&self) -> PyResult<&Runtime> {
        self.ensure_same_process()?;
        Ok(&self.runtime)
    }

    pub fn url(&self) -> &str {
        self.client.url()
    }

    pub fn is_inherited_across_fork(&self) -> bool {
        self.connected_in.is_inherited()
    }

    fn ensure_same_process(&self) -> PyResult<()> {
        self.connected_in.check().map_err(crate::errors::to_py_err)
    }

    /// Run `future` on this client's runtime and wait for it with the GIL released. The wait
    /// stops early, dropping the future, if a signal handler raises (KeyboardInterrupt);
    /// every core future is cancel-safe, so that leaves nothing held.
    pub fn wait<F>(&self, py: Python<'_>, future: F) -> PyResult<F::Output>
    where
        F: Future + Send,
        F::Output: Send,
    {
        let runtime = self.runtime()?;
        let mut future = std::pin::pin!(future);
        loop {
            // The timer must be made inside the runtime, hence the async block.
            let step = py.detach(|| {
                runtime.block_on(async { tokio::time::timeout(SIGNAL_CHECK_INTERVAL, future.as_mut()).await })
            });
            match step {
                Ok(output) => return Ok(output),
                Err(_still_waiting) => py.check_signals()?,
            }
        }
    }
}

impl Drop for ClientShared {
    fn drop(&mut self) {
        // SAFETY: both fields are taken exactly once, here, and never used again.
        let (client, runtime) =
            unsafe { (ManuallyDrop::take(&mut self.client), ManuallyDrop::take(&mut self.runtime)) };
        // The kit's close policy (which also copes with being freed on one of the runtime's
        // own threads, a Python object released by an asyncio callback, and abandons both in
        // a forked child).
        let connected_in = self.connected_in;
        let mut finish = Some(move || runtime::close_or_abandon(connected_in, runtime, client, CLOSE_ON_DROP_LIMIT));
        // Without the GIL: a worker thread may be waiting for it to wake an asyncio loop.
        Python::try_attach(|py| {
            if let Some(finish) = finish.take() {
                py.detach(finish);
            }
        });
        // Not attachable (the interpreter is shutting down): nothing can wait for the GIL.
        if let Some(finish) = finish.take() {
            finish();
        }
    }
}

/// A connection to one backend, as Python holds it (its methods are in client.rs). Defined
/// here, beside what it shares with its locks, so that pending.rs can hand a connected client
/// to Python without importing the module that starts connects.
#[pyclass(module = "polylock._polylock", frozen)]
pub struct NativeClient {
    pub(crate) shared: std::sync::Arc<ClientShared>,
}

impl NativeClient {
    pub fn from_shared(shared: ClientShared) -> NativeClient {
        NativeClient { shared: std::sync::Arc::new(shared) }
    }
}
