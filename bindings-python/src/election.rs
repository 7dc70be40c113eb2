//! `NativeElection`, `NativeLeadership` and `NativeLeaderChanges`: leader elections, translated
//! from the core's `Election` (no logic here). Blocking calls release the GIL while they wait.

use std::sync::Arc;

use polylock::{Election, LeaderChanges, LeaderRecord, Leadership};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::IntoPyObjectExt;

use crate::convert::wait_from_seconds;
use crate::errors::{to_py_err, IntoPyResult};
use crate::pending::{Abandon, Outcome, PendingCall};
use crate::shared::{ClientShared, NativeClient};

/// A leader as Python sees it: (value, term).
type PyLeader = (Py<PyBytes>, u64);

fn py_leader(py: Python<'_>, leader: Option<LeaderRecord>) -> Option<PyLeader> {
    leader.map(|leader| (PyBytes::new(py, &leader.value).unbind(), leader.term))
}

#[pyclass(module = "polylock._polylock", frozen)]
pub struct NativeElection {
    shared: Arc<ClientShared>,
    election: Election,
}

#[pymethods]
impl NativeElection {
    /// The election `name` of `client`. UnsupportedError if its backend has none.
    #[staticmethod]
    fn open(client: &NativeClient, name: &str) -> PyResult<NativeElection> {
        let election = client.shared.client()?.election(name).into_py_result()?;
        Ok(NativeElection { shared: client.shared.clone(), election })
    }

    #[getter]
    fn name(&self) -> &str {
        self.election.name()
    }

    /// Campaign until leading; LockTimeoutError if `timeout` seconds (None: no limit) ran out.
    #[pyo3(signature = (value, timeout=None))]
    fn campaign(&self, py: Python<'_>, value: Vec<u8>, timeout: Option<f64>) -> PyResult<NativeLeadership> {
        let (election, timeout) = (self.election.clone(), wait_from_seconds(timeout)?);
        let leadership = self.shared.wait(py, async move { election.campaign(&value, timeout).await })?;
        Ok(NativeLeadership { shared: self.shared.clone(), leadership: leadership.map_err(to_py_err)? })
    }

    /// The try form of `campaign`: None if `timeout` seconds ran out first (no candidacy is
    /// left behind).
    #[pyo3(signature = (value, timeout=None))]
    fn try_campaign(&self, py: Python<'_>, value: Vec<u8>, timeout: Option<f64>) -> PyResult<Option<NativeLeadership>> {
        let (election, timeout) = (self.election.clone(), wait_from_seconds(timeout)?);
        let leadership = self.shared.wait(py, async move { election.try_campaign(&value, timeout).await })?;
        Ok(leadership
            .map_err(to_py_err)?
            .map(|leadership| NativeLeadership { shared: self.shared.clone(), leadership }))
    }

    /// The asyncio `campaign` (`try_form`: `try_campaign`): finishes with a NativeLeadership,
    /// None when the try form's wait ran out.
    #[pyo3(signature = (value, timeout, try_form, wake))]
    fn start_campaign(
        &self,
        value: Vec<u8>,
        timeout: Option<f64>,
        try_form: bool,
        wake: Py<PyAny>,
    ) -> PyResult<PendingCall> {
        let (election, timeout, shared) = (self.election.clone(), wait_from_seconds(timeout)?, self.shared.clone());
        let campaigning = async move {
            let leadership = match try_form {
                true => election.try_campaign(&value, timeout).await?,
                false => Some(election.campaign(&value, timeout).await?),
            };
            Ok(match leadership {
                Some(leadership) => Outcome::Value(Box::new(move |py| {
                    Ok(Py::new(py, NativeLeadership { shared, leadership })?.into_any())
                })),
                None => Outcome::TimedOut,
            })
        };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), campaigning, wake, Abandon::Allowed))
    }

    /// The current leader as (value, term), or None.
    fn leader(&self, py: Python<'_>) -> PyResult<Option<PyLeader>> {
        let election = self.election.clone();
        let leader = self.shared.wait(py, async move { election.leader().await })?.map_err(to_py_err)?;
        Ok(py_leader(py, leader))
    }

    fn start_leader(&self, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let election = self.election.clone();
        let asking = async move {
            let leader = election.leader().await?;
            Ok(Outcome::Value(Box::new(move |py| py_leader(py, leader).into_py_any(py))))
        };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), asking, wake, Abandon::Allowed))
    }

    fn observe(&self) -> PyResult<NativeLeaderChanges> {
        self.shared.runtime()?; // refused in a forked child, as every call is
        let changes = self.election.observe().map_err(to_py_err)?;
        Ok(NativeLeaderChanges { shared: self.shared.clone(), changes: Arc::new(tokio::sync::Mutex::new(changes)) })
    }
}

#[pyclass(module = "polylock._polylock", frozen)]
pub struct NativeLeadership {
    shared: Arc<ClientShared>,
    leadership: Leadership,
}

#[pymethods]
impl NativeLeadership {
    #[getter]
    fn name(&self) -> &str {
        self.leadership.name()
    }

    #[getter]
    fn term(&self) -> u64 {
        self.leadership.term()
    }

    #[getter]
    fn is_leader(&self, py: Python<'_>) -> bool {
        py.detach(|| self.leadership.is_leader())
    }

    #[getter]
    fn is_lost(&self, py: Python<'_>) -> bool {
        py.detach(|| self.leadership.is_lost())
    }

    #[getter]
    fn is_suspended(&self, py: Python<'_>) -> bool {
        py.detach(|| self.leadership.is_suspended())
    }

    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.leadership.value())
    }

    fn proclaim(&self, py: Python<'_>, value: Vec<u8>) -> PyResult<()> {
        let leadership = self.leadership.clone();
        self.shared.wait(py, async move { leadership.proclaim(&value).await })?.map_err(to_py_err)
    }

    fn start_proclaim(&self, value: Vec<u8>, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let leadership = self.leadership.clone();
        let proclaiming = async move { leadership.proclaim(&value).await.map(|()| Outcome::Done) };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), proclaiming, wake, Abandon::RunToEnd))
    }

    fn resign(&self, py: Python<'_>) -> PyResult<()> {
        let leadership = self.leadership.clone();
        self.shared.wait(py, async move { leadership.resign().await })?.map_err(to_py_err)
    }

    fn start_resign(&self, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let leadership = self.leadership.clone();
        let resigning = async move { leadership.resign().await.map(|()| Outcome::Done) };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), resigning, wake, Abandon::RunToEnd))
    }
}

#[pyclass(module = "polylock._polylock", frozen)]
pub struct NativeLeaderChanges {
    shared: Arc<ClientShared>,
    changes: Arc<tokio::sync::Mutex<LeaderChanges>>,
}

#[pymethods]
impl NativeLeaderChanges {
    /// The next change: (False, leader or None), or (True, None) once the stream ended (the
    /// client closed).
    fn next(&self, py: Python<'_>) -> PyResult<(bool, Option<PyLeader>)> {
        let changes = self.changes.clone();
        let next = self.shared.wait(py, async move { changes.lock().await.next().await })?;
        match next {
            None => Ok((true, None)),
            Some(change) => Ok((false, py_leader(py, change.map_err(to_py_err)?))),
        }
    }

    /// The asyncio `next`: finishes with what `next` returns, or raises the change's error.
    fn start_next(&self, wake: Py<PyAny>) -> PyResult<PendingCall> {
        let changes = self.changes.clone();
        let waiting = async move {
            let next = match changes.lock().await.next().await {
                None => (true, None),
                Some(change) => (false, change?),
            };
            Ok(Outcome::Value(Box::new(move |py| {
                let (ended, leader) = next;
                (ended, py_leader(py, leader)).into_py_any(py)
            })))
        };
        Ok(PendingCall::spawn(self.shared.runtime()?.handle(), waiting, wake, Abandon::Allowed))
    }
}
