//! `NativeMultiLock`: several locks of one client taken as one (core's `MultiLock`: canonical
//! order, one deadline, everything given back on failure), with the owner passed in by every
//! call as for `NativeLock`. Parts are mutexes or sides of read-write locks.

use std::sync::Arc;

use polylock::{ErrorKind, MultiLock, MultiLockPart};
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

use crate::errors::{binding_error, to_py_err, IntoPyResult};
use crate::lock::{acquire_options, Form};
use crate::pending::{Abandon, Outcome, PendingCall};
use crate::shared::{ClientShared, NativeClient};

/// (name, fencing token or None) of each part, in canonical order.
type PartTokens = Vec<(String, Option<u64>)>;

#[pyclass(module = "polylock._polylock", frozen)]
pub struct NativeMultiLock {
    shared: Arc<ClientShared>,
    multi: MultiLock,
}

impl NativeMultiLock {
    fn owned_by(&self, owner: u64) -> PyResult<MultiLock> {
        self.shared.client()?;
        Ok(self.multi.clone().with_local_id(owner))
    }
}

#[pymethods]
impl NativeMultiLock {
    /// The multi-lock over `parts` of `client`: (name, side) pairs, side one of "lock" (the
    /// backend's default mutex), "read" or "write" (a side of the read-write lock `name`).
    #[staticmethod]
    fn open(client: &NativeClient, parts: Vec<(String, String)>) -> PyResult<NativeMultiLock> {
        let mut sides = Vec::with_capacity(parts.len());
        for (name, side) in parts {
            sides.push(match side.as_str() {
                "lock" => MultiLockPart::lock(name),
                "read" => MultiLockPart::read(name),
                "write" => MultiLockPart::write(name),
                other => {
                    return Err(binding_error(
                        ErrorKind::InvalidArgument,
                        format!("a multi-lock part is a 'lock', 'read' or 'write', not '{other}' (for '{name}')"),
                    ))
                }
            });
        }
        let multi = client.shared.client()?.multi_lock_of(sides).into_py_result()?;
        Ok(NativeMultiLock { shared: client.shared.clone(), multi })
    }

    /// The parts' names in the order they are taken (byte order of their storage keys).
    #[getter]
    fn names(&self) -> Vec<String> {
        self.multi.names().into_iter().map(str::to_string).collect()
    }

    /// Take every part for `owner` within one wait (seconds; None = forever, 0 = try once),
    /// each held for `lease` (None = watchdog). The fencing token of each part, as (name,
    /// token) in canonical order; a wait that ran out (nothing is held then) returns None, or
    /// with `waiting` raises LockTimeoutError.
    #[pyo3(signature = (owner, wait=None, lease=None, waiting=false))]
    fn acquire(
        &self,
        py: Python<'_>,
        owner: u64,
        wait: Option<f64>,
        lease: Option<f64>,
        waiting: bool,
    ) -> PyResult<Option<PartTokens>> {
        let multi = self.owned_by(owner)?;
        let options = acquire_options(wait, lease)?;
        // Detached inside the future: a wait given up (KeyboardInterrupt) drops the whole
        // acquisition, which gives back any part already taken.
        let acquiring = async move { multi.acquire_with(options).await.map(|guard| guard.detach()) };
        let form = Form { waiting };
        match form.outcome(self.shared.wait(py, acquiring)?, |_| Outcome::Done) {
            Ok(Outcome::TimedOut) => Ok(None),
            Ok(_) => {
                let multi = self.owned_by(owner)?;
                Ok(Some(py.detach(|| multi.fencing_tokens())))
            }
            Err(err) => Err(to_py_err(err)),
        }
    }

    /// The asyncio `acquire`: finishes with the (name, token) pairs, or None when the wait ran
    /// out (raises LockTimeoutError instead with `waiting`). The parts stay held by `owner`
    /// only once collected: a call cancelled first gives them back.
    #[pyo3(signature = (owner, wait, lease, wake, waiting=false))]
    fn start_acquire(
        &self,
        owner: u64,
        wait: Option<f64>,
        lease: Option<f64>,
        wake: Py<PyAny>,
        waiting: bool,
    ) -> PyResult<PendingCall> {
        let multi = self.owned_by(owner)?;
        let options = acquire_options(wait, lease)?;
        let form = Form { waiting };
        let acquiring = async move {
            form.outcome(multi.acquire_with(options).await, |guard| {
                // Detached when collected; dropped uncollected, the guard releases every part.
                Outcome::Value(Box::new(move |py| guard.detach().into_py_any(py)))
            })
        };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), acquiring, wake, Abandon::Allowed))
    }

    fn start_release(&self, owner: u64, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let multi = self.owned_by(owner)?;
        let releasing = async move { multi.release().await.map(|()| Outcome::Done) };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), releasing, wake, Abandon::RunToEnd))
    }

    /// Give back one hold of every part by `owner`, even if one fails (the first failure is
    /// raised: NotOwnerError, LockLostError).
    fn release(&self, py: Python<'_>, owner: u64) -> PyResult<()> {
        let multi = self.owned_by(owner)?;
        self.shared.wait(py, async move { multi.release().await })?.map_err(to_py_err)
    }

    // Without the GIL, as NativeLock's state queries (lock.rs).

    /// Whether `owner` holds every part and none was lost.
    fn is_held(&self, py: Python<'_>, owner: u64) -> PyResult<bool> {
        let multi = self.owned_by(owner)?;
        Ok(py.detach(|| multi.is_held()))
    }

    /// (name, fencing token or None) of `owner`'s current hold of each part, in canonical order.
    fn fencing_tokens(&self, py: Python<'_>, owner: u64) -> PyResult<PartTokens> {
        let multi = self.owned_by(owner)?;
        Ok(py.detach(|| multi.fencing_tokens()))
    }
}
