//! `NativeValue`: a versioned value (compare-and-set, fenced writes). Blocking calls that
//! release the GIL while they wait; `polylock.aio` runs them in the loop's executor, and
//! follows a watch with `PendingCall`s.

use std::future::Future;
use std::sync::Arc;

use polylock::{ErrorKind, Value, ValueWatch, VersionedValue};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::IntoPyObjectExt;

use crate::error_details::{to_py_err_with_details, IntoPyResultWithDetails};
use crate::errors::{binding_error, IntoPyResult};
use crate::pending::{Abandon, Outcome, PendingCall};
use crate::shared::{ClientShared, NativeClient};

#[pyclass(module = "polylock._polylock", frozen)]
pub struct NativeValue {
    shared: Arc<ClientShared>,
    value: Value,
}

/// (value, version, fencing token or None), as `get()` answers.
type Record<'py> = (Bound<'py, PyBytes>, u64, Option<u64>);

#[pymethods]
impl NativeValue {
    /// The value `name` of `client`. UnsupportedError if its backend has no versioned values.
    #[staticmethod]
    fn open(client: &NativeClient, name: &str) -> PyResult<NativeValue> {
        let value = client.shared.client()?.value(name).into_py_result()?;
        Ok(NativeValue { shared: client.shared.clone(), value })
    }

    #[getter]
    fn name(&self) -> &str {
        self.value.name()
    }

    /// (value, version, fencing token or None), or None if there is no value.
    fn get<'py>(&self, py: Python<'py>) -> PyResult<Option<Record<'py>>> {
        let value = self.value.clone();
        let got = self.shared.wait(py, async move { value.get().await })?.with_details()?;
        Ok(got.map(|got| (PyBytes::new(py, &got.value), got.version, got.fencing_token)))
    }

    fn create(&self, py: Python<'_>, data: &[u8]) -> PyResult<u64> {
        let (value, data) = (self.value.clone(), data.to_vec());
        self.shared.wait(py, async move { value.create(&data).await })?.with_details()
    }

    fn compare_and_set(&self, py: Python<'_>, version: u64, data: &[u8]) -> PyResult<u64> {
        let (value, data) = (self.value.clone(), data.to_vec());
        self.shared.wait(py, async move { value.compare_and_set(version, &data).await })?.with_details()
    }

    fn delete(&self, py: Python<'_>, version: u64) -> PyResult<()> {
        let value = self.value.clone();
        self.shared.wait(py, async move { value.delete(version).await })?.with_details()
    }

    fn write_fenced(&self, py: Python<'_>, token: u64, data: &[u8]) -> PyResult<u64> {
        let (value, data) = (self.value.clone(), data.to_vec());
        self.shared.wait(py, async move { value.write_fenced(token, &data).await })?.with_details()
    }

    /// Follow this value's changes from now on (armed before this returns).
    fn watch(&self, py: Python<'_>) -> PyResult<NativeValueWatch> {
        let value = self.value.clone();
        let watch = self.shared.wait(py, async move { value.watch().await })?.with_details()?;
        Ok(NativeValueWatch::new(self.shared.clone(), watch))
    }

    /// The asyncio `watch`: finishes with a NativeValueWatch.
    fn start_watch(&self, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let (value, shared) = (self.value.clone(), self.shared.clone());
        let watching = async move {
            let watch = value.watch().await?;
            Ok(Outcome::Value(Box::new(move |py| Ok(Py::new(py, NativeValueWatch::new(shared, watch))?.into_any()))))
        };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), watching, wake, Abandon::Allowed))
    }
}

/// A value's changes as `Value::watch` follows them (`polylock::ValueWatch`), shared by the
/// blocking iterator and the asyncio one.
#[pyclass(module = "polylock._polylock", frozen)]
pub struct NativeValueWatch {
    shared: Arc<ClientShared>,
    /// Always `Some` but in `drop`, which lets go of it inside the client's runtime.
    watch: Option<Arc<tokio::sync::Mutex<ValueWatch>>>,
    /// The state last seen, readable while a wait for the next one holds `watch`.
    last: Arc<std::sync::Mutex<State>>,
}

/// (value, version, fencing token or None) of a state, None for no value.
type State = Option<(Vec<u8>, u64, Option<u64>)>;

fn state(value: Option<&VersionedValue>) -> State {
    value.map(|v| (v.value.clone(), v.version, v.fencing_token))
}

fn py_state(py: Python<'_>, state: State) -> PyResult<Py<PyAny>> {
    state.map(|(value, version, token)| (PyBytes::new(py, &value), version, token)).into_py_any(py)
}

impl NativeValueWatch {
    fn new(shared: Arc<ClientShared>, watch: ValueWatch) -> NativeValueWatch {
        let last = Arc::new(std::sync::Mutex::new(state(watch.current())));
        NativeValueWatch { shared, watch: Some(Arc::new(tokio::sync::Mutex::new(watch))), last }
    }

    fn next_state(&self) -> PyResult<impl Future<Output = polylock::Result<State>> + Send + 'static> {
        self.shared.runtime()?; // refused in a forked child, as every call is
        let watch = self.watch.clone().ok_or_else(|| binding_error(ErrorKind::Internal, "this watch was let go of"))?;
        let last = self.last.clone();
        Ok(async move {
            let next = state(watch.lock().await.changed().await?.as_ref());
            *last.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = next.clone();
            Ok(next)
        })
    }
}

impl Drop for NativeValueWatch {
    fn drop(&mut self) {
        // A store's change feed (a Redis subscription) is let go of inside the runtime it was
        // opened on; in a forked child, whose runtime has no threads, it is abandoned.
        let Some(watch) = self.watch.take() else { return };
        match self.shared.runtime() {
            Ok(runtime) if !self.shared.is_inherited_across_fork() => {
                let _inside = runtime.enter();
                drop(watch);
            }
            _ => polylock::kit::fork::abandon(watch),
        }
    }
}

#[pymethods]
impl NativeValueWatch {
    /// The state last seen: when the watch started, or the last `changed` returned.
    fn current(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let current = self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
        py_state(py, current)
    }

    /// Wait for the value's next state (blocking, the GIL released): (value, version, token),
    /// or None once the value is deleted.
    fn changed(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let next = self.shared.wait(py, self.next_state()?)?.map_err(to_py_err_with_details)?;
        py_state(py, next)
    }

    /// The asyncio `changed`.
    fn start_changed(&self, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let next = self.next_state()?;
        let waiting = async move {
            let next = next.await?;
            Ok(Outcome::Value(Box::new(move |py| py_state(py, next))))
        };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), waiting, wake, Abandon::Allowed))
    }
}
