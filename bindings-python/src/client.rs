//! `NativeClient`: a connection to one backend, with its own runtime. The Python classes
//! `polylock.Client` and `polylock.aio.Client` wrap it.

use polylock::kit::LockTarget;
use polylock::LockKind;
use pyo3::prelude::*;

use crate::errors::IntoPyResult;
use crate::lock::NativeLock;
use crate::pending::{value_outcome, Abandon, Outcome, PendingCall};
use crate::semaphore::NativeSemaphore;
use crate::shared::{new_runtime, ClientShared, NativeClient};

/// The URL to connect to: the caller's, else `$POLYLOCK_URL`, else the core's default.
fn url_or_default(url: Option<String>) -> String {
    url.unwrap_or_else(polylock::url::default_url)
}

fn parse_kind(kind: Option<&str>) -> PyResult<Option<LockKind>> {
    kind.map(str::parse).transpose().into_py_result()
}

/// The status as `polylock status --json` prints it (the kit's shape, naming the kind it was
/// read as).
async fn status_json(client: polylock::Client, name: String, kind: Option<LockKind>) -> polylock::Result<String> {
    polylock::kit::inspect_json::status_of(&client, &name, kind).await
}

async fn list_json(client: polylock::Client, prefix: String) -> polylock::Result<String> {
    polylock::kit::inspect_json::list_of(&client, &prefix).await
}

#[pymethods]
impl NativeClient {
    /// Connect, blocking the calling thread (not the interpreter) until connected.
    #[staticmethod]
    #[pyo3(signature = (url=None))]
    fn connect(py: Python<'_>, url: Option<String>) -> PyResult<NativeClient> {
        let url = url_or_default(url);
        let runtime = new_runtime()?;
        let connected = py.detach(|| runtime.block_on(polylock::Client::connect(&url)));
        match connected {
            Ok(client) => Ok(NativeClient::from_shared(ClientShared::new(runtime, client))),
            Err(err) => {
                // No client, so nothing on the runtime is worth waiting for.
                runtime.shutdown_background();
                Err(crate::errors::to_py_err(err))
            }
        }
    }

    /// Connect on a new runtime and call `wake()` from it when done; `finish()` returns the client.
    #[staticmethod]
    #[pyo3(signature = (url, wake))]
    fn start_connect(url: Option<String>, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let url = url_or_default(url);
        let runtime = new_runtime()?;
        let connecting = async move { polylock::Client::connect(&url).await.map(Outcome::Connected) };
        let call = PendingCall::spawn(runtime.handle(), connecting, wake, Abandon::Allowed);
        Ok(call.with_runtime(runtime))
    }

    /// A handle on the lock `name` of the given kind; holds nothing.
    fn lock(&self, name: &str, kind: &str) -> PyResult<NativeLock> {
        let kind: LockKind = kind.parse().into_py_result()?;
        let lock = self.shared.client()?.lock(name).and_then(|lock| lock.with_kind(kind)).into_py_result()?;
        Ok(NativeLock::new(self.shared.clone(), LockTarget::Lock(lock)))
    }

    /// The two sides of the read-write lock `name`: (read, write). UnsupportedError if the
    /// backend has no read-write locks.
    fn rw_lock(&self, name: &str) -> PyResult<(NativeLock, NativeLock)> {
        let rw = self.shared.client()?.rw_lock(name).into_py_result()?;
        let read = NativeLock::new(self.shared.clone(), LockTarget::Read(rw.clone()));
        Ok((read, NativeLock::new(self.shared.clone(), LockTarget::Write(rw))))
    }

    /// The semaphore `name` of `permits` permits. UnsupportedError if the backend has none.
    fn semaphore(&self, name: &str, permits: u32) -> PyResult<NativeSemaphore> {
        let semaphore = self.shared.client()?.semaphore(name, permits).into_py_result()?;
        Ok(NativeSemaphore::new(self.shared.clone(), semaphore))
    }

    /// Stop the watchdogs, give every hold back and close the backend. In a process that
    /// inherited this client across fork() it does nothing: the holds are the parent's.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.shared.is_inherited_across_fork() {
            return Ok(());
        }
        let client = self.shared.client()?.clone();
        self.shared.wait(py, async move { client.close().await })
    }

    fn start_close(&self, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let client = self.shared.client()?.clone();
        let closing = async move {
            client.close().await;
            Ok(Outcome::Done)
        };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), closing, wake, Abandon::RunToEnd))
    }

    /// The URL connected to, with any password replaced by `***`.
    #[getter]
    fn url(&self) -> &str {
        self.shared.url()
    }

    #[getter]
    fn closed(&self) -> PyResult<bool> {
        Ok(self.shared.client()?.is_closed())
    }

    /// This client's metrics as JSON text, in the shape of the process's (`observe.rs`).
    fn metrics_json(&self, py: Python<'_>) -> PyResult<String> {
        let client = self.shared.client()?;
        Ok(py.detach(|| polylock::kit::metrics_json::to_json(&client.metrics())))
    }

    /// The status of the lock `name` (of `kind`, default the backend's) as the JSON object
    /// `polylock status --json` prints (`kit::inspect_json`).
    #[pyo3(signature = (name, kind=None))]
    fn status_json(&self, py: Python<'_>, name: String, kind: Option<&str>) -> PyResult<String> {
        let asking = status_json(self.shared.client()?.clone(), name, parse_kind(kind)?);
        self.shared.wait(py, asking)?.map_err(crate::errors::to_py_err)
    }

    #[pyo3(signature = (name, kind, wake))]
    fn start_status_json(&self, name: String, kind: Option<&str>, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let asking = status_json(self.shared.client()?.clone(), name, parse_kind(kind)?);
        let asking = async move { asking.await.map(value_outcome) };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), asking, wake, Abandon::Allowed))
    }

    /// The locks whose name starts with `prefix`, as the JSON array `polylock list --json`
    /// prints. UnsupportedError where the backend cannot enumerate its locks.
    fn list_json(&self, py: Python<'_>, prefix: String) -> PyResult<String> {
        let asking = list_json(self.shared.client()?.clone(), prefix);
        self.shared.wait(py, asking)?.map_err(crate::errors::to_py_err)
    }

    fn start_list_json(&self, prefix: String, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let asking = list_json(self.shared.client()?.clone(), prefix);
        let asking = async move { asking.await.map(value_outcome) };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), asking, wake, Abandon::Allowed))
    }

    /// Break the hold of the lock `name` whoever holds it; whether there was one.
    #[pyo3(signature = (name, kind=None))]
    fn force_unlock(&self, py: Python<'_>, name: String, kind: Option<&str>) -> PyResult<bool> {
        let (client, kind) = (self.shared.client()?.clone(), parse_kind(kind)?);
        let breaking = async move { client.inspect().force_unlock(&name, kind).await };
        self.shared.wait(py, breaking)?.map_err(crate::errors::to_py_err)
    }

    #[pyo3(signature = (name, kind, wake))]
    fn start_force_unlock(&self, name: String, kind: Option<&str>, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let (client, kind) = (self.shared.client()?.clone(), parse_kind(kind)?);
        let breaking = async move { client.inspect().force_unlock(&name, kind).await.map(value_outcome) };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), breaking, wake, Abandon::RunToEnd))
    }

    #[getter]
    fn client_id(&self) -> PyResult<String> {
        Ok(self.shared.client()?.id().to_string())
    }
}
