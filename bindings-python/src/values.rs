//! `NativeValue`: a versioned value (compare-and-set, fenced writes). Blocking calls that
//! release the GIL while they wait; `polylock.aio` runs them in the loop's executor.

use std::sync::Arc;

use polylock::Value;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error_details::IntoPyResultWithDetails;
use crate::errors::IntoPyResult;
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
}
