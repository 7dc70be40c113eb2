//! UUIDv7 and ULID generators of the core, with their numbers as Python ints (the package
//! turns them into `uuid.UUID` and text).

use polylock::id::{format_ulid, parse_ulid, uuid7_timestamp_ms, UlidGenerator, Uuid7Generator};
use pyo3::prelude::*;

use crate::errors::IntoPyResult;

/// A monotonic UUIDv7 generator; threads may share it.
#[pyclass(name = "NativeUuid7Generator", module = "polylock._polylock", frozen)]
pub struct NativeUuid7Generator {
    generator: Uuid7Generator,
}

#[pymethods]
impl NativeUuid7Generator {
    #[new]
    fn new() -> Self {
        NativeUuid7Generator { generator: Uuid7Generator::new() }
    }

    fn next(&self) -> PyResult<u128> {
        self.generator.next().into_py_result()
    }

    fn batch(&self, py: Python<'_>, count: usize) -> PyResult<Vec<u128>> {
        py.detach(|| self.generator.batch(count)).into_py_result()
    }
}

/// A monotonic ULID generator; threads may share it.
#[pyclass(name = "NativeUlidGenerator", module = "polylock._polylock", frozen)]
pub struct NativeUlidGenerator {
    generator: UlidGenerator,
}

#[pymethods]
impl NativeUlidGenerator {
    #[new]
    fn new() -> Self {
        NativeUlidGenerator { generator: UlidGenerator::new() }
    }

    fn next(&self) -> PyResult<u128> {
        self.generator.next().into_py_result()
    }

    fn batch(&self, py: Python<'_>, count: usize) -> PyResult<Vec<u128>> {
        py.detach(|| self.generator.batch(count)).into_py_result()
    }
}

/// The 26-character text of a ULID's 128 bits.
#[pyfunction(name = "format_ulid")]
pub fn format_ulid_py(value: u128) -> String {
    format_ulid(value)
}

/// The 128 bits of a ULID's text.
#[pyfunction(name = "parse_ulid")]
pub fn parse_ulid_py(text: &str) -> PyResult<u128> {
    parse_ulid(text).into_py_result()
}

/// The Unix milliseconds of a UUIDv7's 128 bits.
#[pyfunction(name = "uuid7_timestamp_ms")]
pub fn uuid7_timestamp_ms_py(value: u128) -> PyResult<u64> {
    uuid7_timestamp_ms(value).into_py_result()
}
