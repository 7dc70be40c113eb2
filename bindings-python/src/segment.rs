//! `NativeSegment` (Leaf-style segment IDs of one tag) and `NativeLeasedSnowflake` (a
//! Snowflake generator on a worker id leased from the backend). Blocking calls release the
//! GIL while they wait; `polylock.aio` takes ready segment IDs at once and runs the waits in
//! the loop's executor. No ID logic here: it is all in the core.

use std::sync::Arc;
use std::time::Duration;

use polylock::id::SnowflakeLayout;
use polylock::{LeasedSnowflake, SegmentGenerator, SegmentOptions, SnowflakeOptions};
use pyo3::prelude::*;

use crate::error_details::IntoPyResultWithDetails;
use crate::errors::{binding_error, IntoPyResult};
use crate::shared::{ClientShared, NativeClient};

#[pyclass(module = "polylock._polylock", frozen)]
pub struct NativeSegment {
    shared: Arc<ClientShared>,
    generator: SegmentGenerator,
}

#[pymethods]
impl NativeSegment {
    /// The segment IDs of `tag` on `client`. UnsupportedError if its backend has no counters.
    #[staticmethod]
    #[pyo3(signature = (client, tag, step=1000, max_step=None, load_at=0.1, wait=5.0))]
    fn open(
        client: &NativeClient,
        tag: &str,
        step: u64,
        max_step: Option<u64>,
        load_at: f64,
        wait: f64,
    ) -> PyResult<NativeSegment> {
        if !(wait.is_finite() && wait >= 0.0) {
            return Err(binding_error(
                polylock::ErrorKind::InvalidArgument,
                format!("wait must be >= 0 seconds, got {wait}"),
            ));
        }
        let defaults = SegmentOptions::default();
        let options = SegmentOptions {
            step,
            max_step: max_step.unwrap_or(defaults.max_step.max(step)),
            load_at,
            wait: Duration::from_secs_f64(wait),
        };
        let generator = client.shared.client()?.segments(tag, options).into_py_result()?;
        Ok(NativeSegment { shared: client.shared.clone(), generator })
    }

    #[getter]
    fn tag(&self) -> &str {
        self.generator.tag()
    }

    #[getter]
    fn step(&self) -> u64 {
        self.generator.step()
    }

    /// Up to `count` IDs already loaded, without waiting (maybe fewer, maybe none).
    fn take_ready(&self, count: usize) -> Vec<u64> {
        self.generator.take_ready(count)
    }

    fn next_id(&self, py: Python<'_>) -> PyResult<u64> {
        if let Some(id) = self.generator.take_ready(1).pop() {
            return Ok(id);
        }
        let generator = self.generator.clone();
        self.shared.wait(py, async move { generator.next_id().await })?.with_details()
    }

    /// `count` IDs; ExhaustedError (with `retry_after`) if no range arrives in time.
    fn next_ids(&self, py: Python<'_>, count: usize) -> PyResult<Vec<u64>> {
        let mut ids = self.generator.take_ready(count);
        if ids.len() < count {
            let generator = self.generator.clone();
            let rest = count - ids.len();
            ids.extend(self.shared.wait(py, async move { generator.next_ids(rest).await })?.with_details()?);
        }
        Ok(ids)
    }
}

#[pyclass(module = "polylock._polylock", frozen)]
pub struct NativeLeasedSnowflake {
    shared: Arc<ClientShared>,
    generator: LeasedSnowflake,
}

#[pymethods]
impl NativeLeasedSnowflake {
    /// Lease `worker_id` (TimeoutError if another generator holds it), or the lowest free
    /// id when None, and start keeping it. Twitter's layout, optionally with another epoch.
    #[staticmethod]
    #[pyo3(signature = (client, worker_id=None, epoch_ms=None, max_wait=2.0))]
    fn open(
        py: Python<'_>,
        client: &NativeClient,
        worker_id: Option<u64>,
        epoch_ms: Option<u64>,
        max_wait: f64,
    ) -> PyResult<NativeLeasedSnowflake> {
        if !(max_wait.is_finite() && max_wait >= 0.0) {
            return Err(binding_error(
                polylock::ErrorKind::InvalidArgument,
                format!("max_wait must be >= 0 seconds, got {max_wait}"),
            ));
        }
        let layout = match epoch_ms {
            None => SnowflakeLayout::TWITTER,
            Some(epoch) => SnowflakeLayout::new(epoch, 41, 10, 12).into_py_result()?,
        };
        let options = SnowflakeOptions { layout, max_wait: Duration::from_secs_f64(max_wait), ..Default::default() };
        let core = client.shared.client()?.clone();
        let generator =
            client.shared.wait(py, async move { core.snowflake(worker_id, options).await })?.with_details()?;
        Ok(NativeLeasedSnowflake { shared: client.shared.clone(), generator })
    }

    /// The worker id held now (None between a lost lease and the next call).
    fn worker_id(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        let generator = self.generator.clone();
        self.shared.wait(py, async move { generator.worker_id().await })
    }

    /// The epoch of the lease held now: greater than every earlier take of that id.
    fn epoch(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        let generator = self.generator.clone();
        self.shared.wait(py, async move { generator.epoch().await })
    }

    fn next_id(&self, py: Python<'_>) -> PyResult<u64> {
        let generator = self.generator.clone();
        self.shared.wait(py, async move { generator.next_id().await })?.with_details()
    }

    fn next_ids(&self, py: Python<'_>, count: usize) -> PyResult<Vec<u64>> {
        let generator = self.generator.clone();
        self.shared.wait(py, async move { generator.next_ids(count).await })?.with_details()
    }

    /// Stop renewing, write the mark down to the last ID issued and give the id back.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let generator = self.generator.clone();
        self.shared.wait(py, async move { generator.close().await })?.with_details()
    }
}
