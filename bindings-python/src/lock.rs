//! `NativeLock`: one named lock (a mutex, or one side of a read-write lock), with the owner
//! passed in by every call. The Python layer picks the owner its users expect (the thread
//! for `polylock.Lock`, the task for `polylock.aio.Lock`); the core counts reentrancy and
//! checks ownership per owner.

use std::sync::Arc;

use polylock::kit::LockTarget;
use polylock::{AcquireOptions, ErrorKind};
use pyo3::prelude::*;

use crate::convert::{lease_from_seconds, wait_from_seconds};
use crate::errors::to_py_err;
use crate::pending::{value_outcome, Abandon, Outcome, PendingCall};
use crate::shared::ClientShared;

/// Which form of a wait a call is: the try form (`acquire`) answers a wait that ran out with
/// nothing, the waiting form (`hold`) with the core's `Timeout` error, as it comes.
#[derive(Clone, Copy)]
pub struct Form {
    pub waiting: bool,
}

impl Form {
    /// The outcome of an acquisition in this form.
    pub fn outcome<T>(
        self,
        acquired: polylock::Result<T>,
        into: impl FnOnce(T) -> Outcome,
    ) -> polylock::Result<Outcome> {
        match acquired {
            Ok(held) => Ok(into(held)),
            Err(err) if err.kind() == ErrorKind::Timeout && !self.waiting => Ok(Outcome::TimedOut),
            Err(err) => Err(err),
        }
    }
}

/// Acquire for the owner (who releases by id), in the given form.
async fn acquire(target: LockTarget, options: AcquireOptions, form: Form) -> polylock::Result<Outcome> {
    form.outcome(target.acquire(options).await, Outcome::Acquired)
}

#[pyclass(module = "polylock._polylock", frozen)]
pub struct NativeLock {
    shared: Arc<ClientShared>,
    target: LockTarget,
}

impl NativeLock {
    pub fn new(shared: Arc<ClientShared>, target: LockTarget) -> NativeLock {
        NativeLock { shared, target }
    }

    fn owned_by(&self, owner: u64) -> PyResult<LockTarget> {
        self.shared.client()?;
        Ok(self.target.owned_by(owner))
    }
}

pub fn acquire_options(wait: Option<f64>, lease: Option<f64>) -> PyResult<AcquireOptions> {
    Ok(AcquireOptions { wait: wait_from_seconds(wait)?, lease: lease_from_seconds(lease)? })
}

#[pymethods]
impl NativeLock {
    /// Wait (seconds; None = forever, 0 = try once) and hold (seconds; None = watchdog).
    /// Returns the fencing token; a wait that ran out returns None, or with `waiting` raises
    /// LockTimeoutError (the waiting form).
    #[pyo3(signature = (owner, wait=None, lease=None, waiting=false))]
    fn acquire(
        &self,
        py: Python<'_>,
        owner: u64,
        wait: Option<f64>,
        lease: Option<f64>,
        waiting: bool,
    ) -> PyResult<Option<u64>> {
        let target = self.owned_by(owner)?;
        let options = acquire_options(wait, lease)?;
        match self.shared.wait(py, acquire(target, options, Form { waiting }))? {
            // The owner releases by id, so the hold outlives the guard.
            Ok(Outcome::Acquired(guard)) => Ok(Some(guard.detach())),
            Ok(_) => Ok(None),
            Err(err) => Err(to_py_err(err)),
        }
    }

    #[pyo3(signature = (owner, wait, lease, wake, waiting=false))]
    fn start_acquire(
        &self,
        owner: u64,
        wait: Option<f64>,
        lease: Option<f64>,
        wake: Py<PyAny>,
        waiting: bool,
    ) -> PyResult<PendingCall> {
        let target = self.owned_by(owner)?;
        let options = acquire_options(wait, lease)?;
        let runtime = self.shared.runtime()?.handle();
        Ok(PendingCall::spawn(runtime, acquire(target, options, Form { waiting }), wake, Abandon::Allowed))
    }

    /// Whether anyone (any owner, any client) holds the lock in the store now.
    fn is_locked(&self, py: Python<'_>) -> PyResult<bool> {
        let target = self.target.clone();
        self.shared.client()?;
        self.shared.wait(py, async move { target.is_locked().await })?.map_err(to_py_err)
    }

    fn start_is_locked(&self, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let target = self.target.clone();
        let asking = async move { target.is_locked().await.map(value_outcome) };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), asking, wake, Abandon::Allowed))
    }

    /// Give back one hold of `owner`: NotOwnerError if it holds none, LockLostError if the
    /// hold was lost meanwhile.
    fn release(&self, py: Python<'_>, owner: u64) -> PyResult<()> {
        let target = self.owned_by(owner)?;
        self.shared.wait(py, async move { target.release().await })?.map_err(to_py_err)
    }

    fn start_release(&self, owner: u64, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let target = self.owned_by(owner)?;
        let releasing = async move { target.release().await.map(|()| Outcome::Done) };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), releasing, wake, Abandon::RunToEnd))
    }

    /// Resolve (with the reason) when `owner`'s current hold is lost; never, if it is released
    /// first. NotOwnerError if `owner` holds nothing.
    fn start_wait_lost(&self, owner: u64, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let target = self.owned_by(owner)?;
        let Some(watch) = target.lost_watch() else {
            return Err(to_py_err(polylock::Error::not_owner(format!(
                "lock '{}' is not held by this owner, so it cannot be lost",
                target.name()
            ))));
        };
        let waiting = async move { Ok(Outcome::Lost(watch.wait().await.to_string())) };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), waiting, wake, Abandon::Allowed))
    }

    // The state queries below release the GIL: they take the lock's hold, which a runtime
    // worker may hold while it logs the hold's loss, and that worker then waits for the GIL
    // to hand the record to Python (observe.rs).

    /// Whether `owner` holds the lock and it has not been lost.
    fn is_held(&self, py: Python<'_>, owner: u64) -> PyResult<bool> {
        let target = self.owned_by(owner)?;
        Ok(py.detach(|| target.is_held()))
    }

    /// How many times `owner` holds the lock (reentrancy).
    fn hold_count(&self, py: Python<'_>, owner: u64) -> PyResult<u32> {
        let target = self.owned_by(owner)?;
        Ok(py.detach(|| target.hold_count()))
    }

    /// The fencing token of `owner`'s live hold, or None.
    fn fencing_token(&self, py: Python<'_>, owner: u64) -> PyResult<Option<u64>> {
        let target = self.owned_by(owner)?;
        Ok(py.detach(|| target.fencing_token()))
    }

    /// Why `owner`'s current hold was lost, or None if it holds nothing or holds it still.
    fn lost_reason(&self, py: Python<'_>, owner: u64) -> PyResult<Option<String>> {
        let target = self.owned_by(owner)?;
        Ok(py.detach(|| target.lost_watch().and_then(|watch| watch.reason()).map(|reason| reason.to_string())))
    }

    #[getter]
    fn name(&self) -> &str {
        self.target.name()
    }

    /// `reentrant`, `fair`, `token` or `lease` for a mutex; `read` or `write` for a side of a
    /// read-write lock.
    #[getter]
    fn kind(&self) -> &'static str {
        self.target.kind_name()
    }
}
