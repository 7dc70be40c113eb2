//! `NativeLatch`: a countdown latch (Redisson's `RCountDownLatch` on Redis). Blocking calls
//! release the GIL while they wait; the asyncio wait is a `PendingCall` polled on the loop.

use std::future::Future;
use std::sync::Arc;

use polylock::{Error, ErrorKind, Latch};
use pyo3::prelude::*;
use tokio::task::AbortHandle;

use crate::convert::wait_from_seconds;
use crate::errors::{binding_error, to_py_err, IntoPyResult};
use crate::pending::{Abandon, Outcome, PendingCall};
use crate::shared::{ClientShared, NativeClient};

#[pyclass(module = "polylock._polylock", frozen)]
pub struct NativeLatch {
    shared: Arc<ClientShared>,
    latch: Latch,
}

/// Stops the waiting task when the caller's future is dropped (a cancelled task, Ctrl-C).
struct AbortOnDrop(AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl NativeLatch {
    /// `waiting(latch)` runs as a task of the client's runtime, so that giving it up (which
    /// drops the caller's future on a Python thread, outside the runtime) stops the task
    /// there, where a Redis subscription can leave its channel; `abort` needs no runtime.
    fn on_runtime<T, F>(&self, waiting: impl FnOnce(Latch) -> F) -> PyResult<impl Future<Output = polylock::Result<T>>>
    where
        T: Send + 'static,
        F: Future<Output = polylock::Result<T>> + Send + 'static,
    {
        let task = self.shared.runtime()?.spawn(waiting(self.latch.clone()));
        let abort = AbortOnDrop(task.abort_handle());
        Ok(async move {
            let _abort = abort;
            task.await.unwrap_or_else(|_| Err(Error::cancelled("the latch wait was stopped")))
        })
    }
}

#[pymethods]
impl NativeLatch {
    /// The latch `name` of `client`. UnsupportedError if its backend has no latches.
    #[staticmethod]
    fn open(client: &NativeClient, name: &str) -> PyResult<NativeLatch> {
        let latch = client.shared.client()?.latch(name).into_py_result()?;
        Ok(NativeLatch { shared: client.shared.clone(), latch })
    }

    #[getter]
    fn name(&self) -> &str {
        self.latch.name()
    }

    fn try_set_count(&self, py: Python<'_>, count: i64) -> PyResult<bool> {
        let count = u64::try_from(count).map_err(|_| {
            binding_error(ErrorKind::InvalidArgument, format!("a latch count must be at least 1, got {count}"))
        })?;
        let latch = self.latch.clone();
        self.shared.wait(py, async move { latch.try_set_count(count).await })?.map_err(to_py_err)
    }

    fn count_down(&self, py: Python<'_>) -> PyResult<()> {
        let latch = self.latch.clone();
        self.shared.wait(py, async move { latch.count_down().await })?.map_err(to_py_err)
    }

    fn count(&self, py: Python<'_>) -> PyResult<u64> {
        let latch = self.latch.clone();
        self.shared.wait(py, async move { latch.count().await })?.map_err(to_py_err)
    }

    /// True once the count is zero, False if `timeout` seconds (None: no limit) ran out first.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let timeout = wait_from_seconds(timeout)?;
        let waiting = self.on_runtime(move |latch| async move { latch.try_await_zero(timeout).await })?;
        self.shared.wait(py, waiting)?.map_err(to_py_err)
    }

    /// The waiting form: returns once the count is zero, LockTimeoutError if `timeout`
    /// seconds (None: no limit) ran out first.
    #[pyo3(signature = (timeout=None))]
    fn await_zero(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
        let timeout = wait_from_seconds(timeout)?;
        let waiting = self.on_runtime(move |latch| async move { latch.await_zero(timeout).await })?;
        self.shared.wait(py, waiting)?.map_err(to_py_err)
    }

    /// The asyncio wait: finishes with None once the count is zero, or raises
    /// LockTimeoutError when `timeout` ran out first (the core's waiting form; `wait` turns
    /// it into False).
    #[pyo3(signature = (timeout, wake))]
    fn start_wait(&self, timeout: Option<f64>, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let timeout = wait_from_seconds(timeout)?;
        let waiting = self.on_runtime(move |latch| async move { latch.await_zero(timeout).await })?;
        let waiting = async move { waiting.await.map(|()| Outcome::Done) };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), waiting, wake, Abandon::Allowed))
    }
}
