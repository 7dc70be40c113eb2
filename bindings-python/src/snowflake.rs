//! Snowflake IDs: the core's generator, Twitter layout, optionally with another epoch.

use polylock::id::{Snowflake, SnowflakeLayout, SnowflakeParts};
use pyo3::prelude::*;

use crate::errors::IntoPyResult;

/// Twitter's widths: 41 bits of milliseconds, 10 of worker, 12 of sequence.
const TIMESTAMP_BITS: u32 = 41;
const WORKER_BITS: u32 = 10;
const SEQUENCE_BITS: u32 = 12;

fn layout(epoch_ms: Option<u64>) -> PyResult<SnowflakeLayout> {
    match epoch_ms {
        None => Ok(SnowflakeLayout::TWITTER),
        Some(epoch) => SnowflakeLayout::new(epoch, TIMESTAMP_BITS, WORKER_BITS, SEQUENCE_BITS).into_py_result(),
    }
}

fn as_tuple(parts: SnowflakeParts) -> (u64, u64, u64) {
    (parts.timestamp_ms, parts.worker, parts.sequence)
}

/// A generator for one worker id; threads may share it.
#[pyclass(name = "NativeSnowflake", module = "polylock._polylock", frozen, subclass)]
pub struct NativeSnowflake {
    generator: Snowflake,
}

#[pymethods]
impl NativeSnowflake {
    #[new]
    #[pyo3(signature = (worker_id, epoch_ms=None))]
    fn new(worker_id: u64, epoch_ms: Option<u64>) -> PyResult<Self> {
        let generator = Snowflake::with_layout(layout(epoch_ms)?, worker_id).into_py_result()?;
        Ok(NativeSnowflake { generator })
    }

    fn next_id(&self) -> PyResult<u64> {
        self.generator.next_id().into_py_result()
    }

    /// `count` IDs in one call, in increasing order (the GIL is released while they are made).
    fn next_ids(&self, py: Python<'_>, count: usize) -> PyResult<Vec<u64>> {
        py.detach(|| self.generator.next_ids(count)).into_py_result()
    }

    /// (timestamp_ms, worker, sequence) of an ID of this generator's layout.
    fn parse(&self, id: u64) -> PyResult<(u64, u64, u64)> {
        self.generator.parse(id).map(as_tuple).into_py_result()
    }

    #[getter]
    fn worker_id(&self) -> u64 {
        self.generator.worker()
    }

    #[getter]
    fn epoch_ms(&self) -> u64 {
        self.generator.layout().epoch_ms()
    }
}

/// (timestamp_ms, worker, sequence) of a Twitter-layout ID, or of a layout with `epoch_ms`.
#[pyfunction]
#[pyo3(signature = (id, epoch_ms=None))]
pub fn parse_snowflake(id: u64, epoch_ms: Option<u64>) -> PyResult<(u64, u64, u64)> {
    layout(epoch_ms)?.parse(id).map(as_tuple).into_py_result()
}
