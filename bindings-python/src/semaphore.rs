//! `NativeSemaphore`: a semaphore of N permits. A permit is its own owner, named by the id the
//! acquisition returns, so any thread or task holding the Python `Permit` may release it.

use std::sync::Arc;

use polylock::kit::AnyGuard;
use polylock::Semaphore;
use pyo3::prelude::*;

use crate::errors::to_py_err;
use crate::lock::{acquire_options, Form};
use crate::pending::{Abandon, Outcome, PendingCall};
use crate::shared::ClientShared;

#[pyclass(module = "polylock._polylock", frozen)]
pub struct NativeSemaphore {
    shared: Arc<ClientShared>,
    semaphore: Semaphore,
}

impl NativeSemaphore {
    pub fn new(shared: Arc<ClientShared>, semaphore: Semaphore) -> NativeSemaphore {
        NativeSemaphore { shared, semaphore }
    }

    fn semaphore(&self) -> PyResult<Semaphore> {
        self.shared.client()?;
        Ok(self.semaphore.clone())
    }
}

/// Take a permit, in the given form (lock.rs).
async fn take_permit(semaphore: Semaphore, options: polylock::AcquireOptions, form: Form) -> polylock::Result<Outcome> {
    form.outcome(semaphore.acquire_with(options).await, |permit| Outcome::Acquired(AnyGuard::Permit(permit)))
}

#[pymethods]
impl NativeSemaphore {
    /// Take a permit: (permit id, fencing token); a wait that ran out returns None, or with
    /// `waiting` raises LockTimeoutError.
    #[pyo3(signature = (wait=None, lease=None, waiting=false))]
    fn acquire(
        &self,
        py: Python<'_>,
        wait: Option<f64>,
        lease: Option<f64>,
        waiting: bool,
    ) -> PyResult<Option<(u64, u64)>> {
        let semaphore = self.semaphore()?;
        let options = acquire_options(wait, lease)?;
        match self.shared.wait(py, take_permit(semaphore, options, Form { waiting }))? {
            Ok(Outcome::Acquired(permit)) => {
                let id = permit.permit_id().unwrap_or_default();
                Ok(Some((id, permit.detach())))
            }
            Ok(_) => Ok(None),
            Err(err) => Err(to_py_err(err)),
        }
    }

    #[pyo3(signature = (wait, lease, wake, waiting=false))]
    fn start_acquire(
        &self,
        wait: Option<f64>,
        lease: Option<f64>,
        wake: Py<PyAny>,
        waiting: bool,
    ) -> PyResult<PendingCall> {
        let semaphore = self.semaphore()?;
        let taking = take_permit(semaphore, acquire_options(wait, lease)?, Form { waiting });
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), taking, wake, Abandon::Allowed))
    }

    /// Give back the permit `permit`: NotOwnerError unless this client holds it, LockLostError
    /// if its lease ran out first.
    fn release(&self, py: Python<'_>, permit: u64) -> PyResult<()> {
        let semaphore = self.semaphore()?;
        self.shared.wait(py, async move { semaphore.release_permit(permit).await })?.map_err(to_py_err)
    }

    fn start_release(&self, permit: u64, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let semaphore = self.semaphore()?;
        let releasing = async move { semaphore.release_permit(permit).await.map(|()| Outcome::Done) };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), releasing, wake, Abandon::RunToEnd))
    }

    #[getter]
    fn name(&self) -> &str {
        self.semaphore.name()
    }

    #[getter]
    fn permits(&self) -> u32 {
        self.semaphore.permits()
    }
}
