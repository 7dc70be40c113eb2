//! The asyncio bridge: a core future runs on the client's runtime, and when it is done it
//! wakes the asyncio loop that awaits it (`loop.call_soon_threadsafe`, passed in as `wake`).
//! The awaiting coroutine then collects the outcome with `finish()` on its own thread, so
//! errors become exceptions with the GIL held, in the ordinary way.
//!
//! Cancellation: `cancel()` aborts a call still running (dropping the core future, which is
//! cancel-safe), and gives back a hold that was acquired but never collected, so a
//! cancelled task never keeps a lock.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use polylock::kit::AnyGuard;
use pyo3::prelude::*;
use tokio::runtime::{Handle, Runtime};
use tokio::task::AbortHandle;

use crate::errors::to_py_err;
use crate::shared::{ClientShared, NativeClient};

/// What a finished call produced.
pub enum Outcome {
    /// An acquisition (a mutex, a side of a read-write lock, a permit); collecting it
    /// detaches the guard (the owner, or the permit's id, releases it). Dropped uncollected,
    /// it releases the hold.
    Acquired(AnyGuard),
    /// The wait for a lock ran out.
    TimedOut,
    /// A call with nothing to return (release, close).
    Done,
    /// A new client, still to be paired with the runtime it was connected on.
    Connected(polylock::Client),
    /// A hold was lost, for this reason.
    Lost(String),
}

enum CallState {
    Running,
    Finished(polylock::Result<Outcome>),
    Collected,
    Cancelled,
}

/// An operation running on a client's runtime on behalf of an asyncio task.
#[pyclass(module = "polylock._polylock", frozen)]
pub struct PendingCall {
    state: Arc<Mutex<CallState>>,
    /// Set for calls that may be abandoned midway (waiting for a lock, connecting); not for
    /// releases and closes, which always run to the end once started.
    abort: Option<AbortHandle>,
    /// For `connect`: the runtime the new client runs on, handed to it by `finish()`.
    runtime: Mutex<Option<Runtime>>,
}

fn lock_state(state: &Mutex<CallState>) -> MutexGuard<'_, CallState> {
    // Nothing panics while holding this lock; if something ever did, the state is still valid.
    state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Abandon {
    /// Cancelling the awaiting task stops the operation.
    Allowed,
    /// The operation runs to its end even if nobody awaits it any more.
    RunToEnd,
}

impl PendingCall {
    pub fn spawn<F>(runtime: &Handle, future: F, wake: Py<PyAny>, abandon: Abandon) -> PendingCall
    where
        F: Future<Output = polylock::Result<Outcome>> + Send + 'static,
    {
        let state = Arc::new(Mutex::new(CallState::Running));
        let task_state = state.clone();
        let task = runtime.spawn(async move {
            let result = future.await;
            {
                let mut state = lock_state(&task_state);
                if !matches!(*state, CallState::Running) {
                    // Cancelled while finishing: dropping an acquired guard gives the hold back.
                    return;
                }
                *state = CallState::Finished(result);
            }
            // The loop may be closed by now; then nobody is waiting and there is nothing to do.
            Python::try_attach(|py| {
                let _ = wake.call0(py);
                drop(wake);
            });
        });
        let abort = (abandon == Abandon::Allowed).then(|| task.abort_handle());
        PendingCall { state, abort, runtime: Mutex::new(None) }
    }

    pub fn with_runtime(self, runtime: Runtime) -> PendingCall {
        *self.runtime.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(runtime);
        self
    }
}

#[pymethods]
impl PendingCall {
    /// Whether the operation has finished (its outcome may then be collected).
    fn done(&self) -> bool {
        !matches!(*lock_state(&self.state), CallState::Running)
    }

    /// The outcome: the fencing token for an acquisition (None if the wait ran out), the
    /// permit's (id, fencing token) for a semaphore acquisition, None
    /// for a release or close, a client for a connect. Raises the operation's error.
    fn finish(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let outcome = {
            let mut state = lock_state(&self.state);
            match std::mem::replace(&mut *state, CallState::Collected) {
                CallState::Finished(outcome) => outcome,
                other => {
                    let running = matches!(other, CallState::Running);
                    *state = other;
                    let what = if running { "has not finished yet" } else { "was already collected or cancelled" };
                    return Err(pyo3::exceptions::PyRuntimeError::new_err(format!("this polylock call {what}")));
                }
            }
        };
        match outcome {
            Ok(Outcome::Acquired(guard)) => match guard.permit_id() {
                Some(id) => Ok((id, guard.detach()).into_pyobject(py)?.into_any().unbind()),
                None => Ok(guard.detach().into_pyobject(py)?.into_any().unbind()),
            },
            Ok(Outcome::TimedOut) | Ok(Outcome::Done) => Ok(py.None()),
            Ok(Outcome::Lost(reason)) => Ok(reason.into_pyobject(py)?.into_any().unbind()),
            Ok(Outcome::Connected(client)) => {
                let runtime = self.runtime.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
                let Some(runtime) = runtime else {
                    return Err(pyo3::exceptions::PyRuntimeError::new_err("this connect call has no runtime"));
                };
                let native = NativeClient::from_shared(ClientShared::new(runtime, client));
                Ok(Py::new(py, native)?.into_any())
            }
            Err(err) => Err(to_py_err(err)),
        }
    }

    /// Stop the operation for a task that no longer awaits it. Returns whether anything was
    /// stopped or given back.
    fn cancel(&self) -> bool {
        let mut state = lock_state(&self.state);
        match &*state {
            CallState::Running => match &self.abort {
                Some(abort) => {
                    abort.abort();
                    *state = CallState::Cancelled;
                    true
                }
                None => false,
            },
            CallState::Finished(_) => {
                // Dropped here: a guard nobody collected releases its hold in the background.
                *state = CallState::Cancelled;
                true
            }
            CallState::Collected | CallState::Cancelled => false,
        }
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        // A connect nobody collected: stop its runtime without blocking this (GIL-holding) thread.
        if let Some(runtime) = self.runtime.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner()).take() {
            runtime.shutdown_background();
        }
    }
}
