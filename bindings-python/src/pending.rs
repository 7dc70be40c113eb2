//! The asyncio bridge. A call's core future is polled on the asyncio loop's own thread, with
//! the client's runtime entered (so timers, spawns and the Redis connection's driver run on
//! the runtime as usual): first inside `start_*`, then each time the future's waker fires.
//!
//! - A call that is ready on its first poll (an in-memory store, a reentrant acquire the
//!   engine answers locally) never leaves the loop's thread: `done()` is true at once.
//! - Otherwise the waker, on whichever runtime thread fires it, puts the call on its loop's
//!   `LoopWaker` ready list and writes one byte to a socket the loop watches
//!   (`loop.add_reader`), only if no byte is pending already, so one wake-up serves every
//!   call that finished meanwhile (64 tasks finishing together cost one loop wake-up). No
//!   runtime thread ever takes the GIL or runs Python: `LoopWaker.drain()`, on the loop's
//!   thread, polls the ready calls and hands back the asyncio futures to resolve.
//!
//! The coroutine then collects the outcome with `finish()`, so errors become exceptions in
//! the ordinary way. With a plain callable as `wake` (a loop without `add_reader`), the call
//! instead runs as a task on the runtime and calls `wake()` with the GIL when it is done.
//!
//! Cancellation: `cancel()` drops a call still running (the core futures are cancel-safe)
//! or, for releases and closes, lets it finish on the runtime; a hold that was acquired but
//! never collected is given back, so a cancelled task never keeps a lock.

use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Wake, Waker};

use polylock::kit::AnyGuard;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
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
    /// Anything else, turned into its Python object when collected (with the GIL).
    Value(IntoPython),
}

/// How a finished call's result becomes a Python object, once the GIL is held.
pub type IntoPython = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// A call's result that converts to Python as it is (a bool, a string, a list of tuples...).
pub fn value_outcome<T>(value: T) -> Outcome
where
    T: for<'py> IntoPyObject<'py> + Send + 'static,
{
    Outcome::Value(Box::new(move |py| value.into_py_any(py)))
}

type CallFuture = Pin<Box<dyn Future<Output = polylock::Result<Outcome>> + Send>>;

enum CallState {
    /// Polled on the loop's thread (loop-driven calls).
    Polling(CallFuture),
    /// Running as a task on the runtime (calls woken through a callable).
    Running,
    Finished(polylock::Result<Outcome>),
    Collected,
    Cancelled,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Abandon {
    /// Cancelling the awaiting task stops the operation.
    Allowed,
    /// The operation runs to its end even if nobody awaits it any more.
    RunToEnd,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; if something ever did, the data is still valid.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One loop's ready list and the socket that wakes the loop. Shared by the `LoopWaker` the
/// loop holds and the wakers of its calls, which run on the runtime's threads.
struct ReadyList {
    ready: Mutex<Vec<Weak<CallCore>>>,
    /// A byte is on its way to the loop and `drain()` has not run since: further wakes only
    /// add to the list.
    signalled: AtomicBool,
    sender: UnixStream,
}

impl ReadyList {
    fn push(&self, call: Weak<CallCore>) {
        lock(&self.ready).push(call);
        if !self.signalled.swap(true, Ordering::AcqRel) {
            // Non-blocking; a full socket already holds bytes that will wake the loop.
            let _ = (&self.sender).write(&[1]);
        }
    }
}

/// The waker of one loop-driven call.
struct CallWaker {
    list: Arc<ReadyList>,
    call: Weak<CallCore>,
}

impl Wake for CallWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.call.strong_count() > 0 {
            self.list.push(self.call.clone());
        }
    }
}

struct CallCore {
    state: Mutex<CallState>,
    runtime: Handle,
    abandon: Abandon,
    /// For loop-driven calls: the waker handed to every poll.
    waker: Option<Waker>,
    /// For loop-driven calls: the asyncio future `drain()` returns once the call is done.
    notify: Mutex<Option<Py<PyAny>>>,
}

impl CallCore {
    /// Poll a loop-driven call once, on the loop's thread; true once it has finished.
    fn poll_here(&self) -> bool {
        let mut state = lock(&self.state);
        let CallState::Polling(future) = &mut *state else {
            return !matches!(*state, CallState::Running);
        };
        let Some(waker) = &self.waker else { return false };
        let _runtime = self.runtime.enter();
        match future.as_mut().poll(&mut Context::from_waker(waker)) {
            Poll::Ready(result) => {
                // The spent future is dropped here, inside the runtime.
                *state = CallState::Finished(result);
                true
            }
            Poll::Pending => false,
        }
    }

    /// Stop following the call: drop it, or let a release run to its end on the runtime.
    /// Returns whether anything was stopped or given back.
    fn abandon(&self) -> bool {
        let mut state = lock(&self.state);
        let _runtime = self.runtime.enter();
        // A `let`, not the function's tail expression: a tail expression's temporaries are
        // dropped after the locals, which would drop the call outside `_runtime`, and dropping
        // a pending acquisition spawns its release.
        let previous = std::mem::replace(&mut *state, CallState::Cancelled);
        let stopped = match previous {
            CallState::Polling(future) if self.abandon == Abandon::RunToEnd => {
                self.runtime.spawn(async move {
                    let _ = future.await;
                });
                false
            }
            // Dropped inside the runtime: the core futures are cancel-safe, and a guard nobody
            // collected releases its hold in the background.
            call @ (CallState::Polling(_) | CallState::Finished(_)) => {
                drop(call);
                true
            }
            other => {
                *state = other;
                false
            }
        };
        stopped
    }
}

impl CallCore {
    /// Nobody follows the call any more: drop a call still polled or an outcome nobody
    /// collected (a release runs to its end on the runtime), leaving `Cancelled`. A call
    /// running as a task is left to finish and drop its outcome itself.
    fn let_go(&self) {
        let state = {
            let mut state = lock(&self.state);
            if !matches!(*state, CallState::Polling(_) | CallState::Finished(_)) {
                return;
            }
            std::mem::replace(&mut *state, CallState::Cancelled)
        };
        let _runtime = self.runtime.enter();
        match state {
            CallState::Polling(future) if self.abandon == Abandon::RunToEnd => {
                self.runtime.spawn(async move {
                    let _ = future.await;
                });
            }
            dropped => drop(dropped),
        }
    }
}

impl Drop for CallCore {
    fn drop(&mut self) {
        // Most often done already, without the GIL, by `PendingCall`'s drop.
        self.let_go();
    }
}

/// Wakes one asyncio loop for the calls it awaits: the loop watches `fileno()` with
/// `add_reader` and calls `drain()` when it is readable.
#[pyclass(module = "polylock._polylock", frozen)]
pub struct LoopWaker {
    list: Arc<ReadyList>,
    receiver: UnixStream,
}

#[pymethods]
impl LoopWaker {
    #[new]
    fn new() -> PyResult<LoopWaker> {
        let (sender, receiver) = UnixStream::pair()?;
        sender.set_nonblocking(true)?;
        receiver.set_nonblocking(true)?;
        let list = ReadyList { ready: Mutex::new(Vec::new()), signalled: AtomicBool::new(false), sender };
        Ok(LoopWaker { list: Arc::new(list), receiver })
    }

    /// The descriptor to watch for reading.
    fn fileno(&self) -> i32 {
        self.receiver.as_raw_fd()
    }

    /// Poll every call woken since the last drain; returns the asyncio futures of those that
    /// have finished (to be resolved by the caller).
    fn drain(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        let mut bytes = [0u8; 64];
        while matches!((&self.receiver).read(&mut bytes), Ok(n) if n > 0) {}
        // Cleared before the list is taken: a wake from now on sends a new byte.
        self.list.signalled.store(false, Ordering::Release);
        let ready = std::mem::take(&mut *lock(&self.list.ready));
        // Polled without the GIL: a poll may wait for a lock of the core that a runtime
        // worker holds while it logs, and that worker waits for the GIL (observe.rs).
        py.detach(|| {
            let mut finished = Vec::new();
            for call in ready {
                if let Some(call) = call.upgrade() {
                    if call.poll_here() {
                        finished.extend(lock(&call.notify).take());
                    }
                }
            }
            finished
        })
    }
}

/// An operation on a client's runtime on behalf of an asyncio task.
#[pyclass(module = "polylock._polylock", frozen)]
pub struct PendingCall {
    core: Arc<CallCore>,
    /// Set for calls run as runtime tasks that may be abandoned midway.
    abort: Option<AbortHandle>,
    /// For `connect`: the runtime the new client runs on, handed to it by `finish()`.
    runtime: Mutex<Option<Runtime>>,
}

impl PendingCall {
    /// Start `future` for an asyncio task. `wake` is the loop's `LoopWaker` (the call is
    /// polled here once, then on the loop's thread as it is woken), or a callable run with
    /// the GIL from the runtime when the call, run there as a task, is done.
    pub fn spawn<F>(runtime: &Handle, future: F, wake: Py<PyAny>, abandon: Abandon) -> PendingCall
    where
        F: Future<Output = polylock::Result<Outcome>> + Send + 'static,
    {
        Python::attach(|py| {
            let loop_waker = wake.bind(py).cast::<LoopWaker>().ok().map(|w| w.get().list.clone());
            match loop_waker {
                Some(list) => Self::drive_on_loop(py, runtime, Box::pin(future), list, abandon),
                None => Self::run_as_task(runtime, future, wake, abandon),
            }
        })
    }

    fn drive_on_loop(
        py: Python<'_>,
        runtime: &Handle,
        future: CallFuture,
        list: Arc<ReadyList>,
        abandon: Abandon,
    ) -> PendingCall {
        let core = Arc::new_cyclic(|call: &Weak<CallCore>| CallCore {
            state: Mutex::new(CallState::Polling(future)),
            runtime: runtime.clone(),
            abandon,
            waker: Some(Waker::from(Arc::new(CallWaker { list, call: call.clone() }))),
            notify: Mutex::new(None),
        });
        // The first poll, without the GIL as in `drain`.
        py.detach(|| core.poll_here());
        PendingCall { core, abort: None, runtime: Mutex::new(None) }
    }

    fn run_as_task<F>(runtime: &Handle, future: F, wake: Py<PyAny>, abandon: Abandon) -> PendingCall
    where
        F: Future<Output = polylock::Result<Outcome>> + Send + 'static,
    {
        let core = Arc::new(CallCore {
            state: Mutex::new(CallState::Running),
            runtime: runtime.clone(),
            abandon,
            waker: None,
            notify: Mutex::new(None),
        });
        let task_core = core.clone();
        let task = runtime.spawn(async move {
            let result = future.await;
            {
                let mut state = lock(&task_core.state);
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
        PendingCall { core, abort, runtime: Mutex::new(None) }
    }

    pub fn with_runtime(self, runtime: Runtime) -> PendingCall {
        *lock(&self.runtime) = Some(runtime);
        self
    }
}

#[pymethods]
impl PendingCall {
    /// Whether the operation has finished (its outcome may then be collected).
    fn done(&self) -> bool {
        !matches!(*lock(&self.core.state), CallState::Running | CallState::Polling(_))
    }

    /// For a call started with a `LoopWaker`: the asyncio future its `drain()` returns when
    /// the call finishes.
    fn notify(&self, future: Py<PyAny>) {
        *lock(&self.core.notify) = Some(future);
    }

    /// The outcome: the fencing token for an acquisition (None if the wait ran out), the
    /// permit's (id, fencing token) for a semaphore acquisition, the value of any other call, None
    /// for a release or close, a client for a connect. Raises the operation's error.
    fn finish(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let outcome = {
            let mut state = lock(&self.core.state);
            match std::mem::replace(&mut *state, CallState::Collected) {
                CallState::Finished(outcome) => outcome,
                other => {
                    let running = matches!(other, CallState::Running | CallState::Polling(_));
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
            Ok(Outcome::Value(into_python)) => into_python(py),
            Ok(Outcome::Connected(client)) => {
                let Some(runtime) = lock(&self.runtime).take() else {
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
    fn cancel(&self, py: Python<'_>) -> bool {
        lock(&self.core.notify).take();
        let running_as_task = matches!(*lock(&self.core.state), CallState::Running);
        if !running_as_task {
            // Without the GIL: dropping a call may wait for the core's locks, as polling does.
            return py.detach(|| self.core.abandon());
        }
        let mut state = lock(&self.core.state);
        match (&*state, &self.abort) {
            (CallState::Running, Some(abort)) => {
                abort.abort();
                *state = CallState::Cancelled;
                true
            }
            // Finished meanwhile: handled as a loop-driven call would be.
            (CallState::Finished(_), _) => {
                drop(state);
                py.detach(|| self.core.abandon())
            }
            _ => false,
        }
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        // Python frees this object with the GIL held: let go of the call without it, as
        // `cancel` does (not attachable, the interpreter is shutting down: let go as is).
        let core = &self.core;
        let mut let_go = Some(|| core.let_go());
        Python::try_attach(|py| {
            if let Some(let_go) = let_go.take() {
                py.detach(let_go);
            }
        });
        if let Some(let_go) = let_go.take() {
            let_go();
        }
        // A connect nobody collected: stop its runtime without blocking this (GIL-holding) thread.
        if let Some(runtime) = self.runtime.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner()).take() {
            runtime.shutdown_background();
        }
    }
}
