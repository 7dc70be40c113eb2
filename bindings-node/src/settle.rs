//! Every Promise the binding returns is settled through one threadsafe function per
//! JavaScript environment, made on first use and kept for the environment's life.
//!
//! A call makes a plain Promise (`napi_create_promise`) and a task for its future. The task
//! is polled on the binding's runtime by a small driver task, and settles its Promise by
//! queueing the outcome on the shared threadsafe function: Node's queue wakes the JavaScript
//! thread once for everything queued meanwhile, and each outcome settles its Promise there.
//!
//! One exception keeps a lock changing hands inside a process fast: a release that another
//! owner of the client waits for is polled first on the JavaScript thread ([`spawn_here`]),
//! and a task woken by a future polled there (the acquire the release hands the lock to) is
//! polled there too, before the call returns, and settles its Promise directly. Without it,
//! the hand-over went from the JavaScript thread to the runtime and back (utilisation of a
//! contended lock 69-85%; with it, 90-93%). Everything else stays on the runtime, off the
//! JavaScript thread, which a busy process needs for itself.
//!
//! Why not napi-rs's `spawn_future` / `async fn`: it creates a threadsafe function (a libuv
//! async handle plus an environment cleanup hook) for every Promise and tears it down after
//! one use, which capped a process near 22-28k settled Promises a second whatever the core's
//! speed (a lock+unlock pair is two).
//!
//! Liveness is what it was: the threadsafe function is ref'd while any of its Promises is
//! pending (a pending acquire keeps the process running, like a pending socket read) and
//! unref'd as soon as none is, so an idle or closed client never keeps a process alive.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::c_void;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};

use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::{sys, Env, Error, Result, Status};

/// Run `future` on the binding's runtime for a Promise that settles with its outcome.
pub fn spawn<'env, T, F>(env: &'env Env, future: F) -> Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    start(env, future, Start::OnRuntime)
}

/// Like [`spawn`], but poll `future` first here, on the JavaScript thread: for calls that
/// can wake another call's future (a release handing the lock to a waiting acquire), so the
/// woken one is polled here too (see the module comment).
pub fn spawn_here<'env, T, F>(env: &'env Env, future: F) -> Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    start(env, future, Start::Here)
}

enum Start {
    OnRuntime,
    Here,
}

fn start<'env, T, F>(env: &'env Env, future: F, first_poll: Start) -> Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    let raw_env = env.raw();
    let channel = channel_for(raw_env)?;
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    check(unsafe { sys::napi_create_promise(raw_env, &mut deferred, &mut promise) }, "create a Promise")?;
    channel.started(raw_env);
    let settler = Settler { channel: channel.clone(), deferred: Some(Deferred(deferred)) };
    // Boxed: a lock call's future is a few kilobytes (an acquire's ~3.4 KB), and tokio copies a
    // task's whole future in when it spawns it; a box moves as one pointer.
    let work: Work = Box::pin(async move {
        let result = future.await;
        Box::new(move |env| result.and_then(|value| unsafe { T::to_napi_value(env, value) })) as Outcome
    });
    let state = TaskState { work: Some(work), settler: Some(settler), running: false, scheduled: true, driver: None };
    let task = Arc::new(Task { channel, state: Mutex::new(state) });
    let finished_here = match first_poll {
        Start::Here => drain(raw_env, task.clone()) == Polled::Finished,
        Start::OnRuntime => false,
    };
    if !finished_here {
        napi::bindgen_prelude::spawn(Driver(task));
    }
    Ok(PromiseRaw::new(raw_env, promise))
}

/// A call's future, producing its outcome.
type Work = Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// A call under way: its future and its Promise's resolver. It is polled on the runtime by
/// its [`Driver`], or on the JavaScript thread when another future polled there woke it;
/// never on both at once.
struct Task {
    channel: Arc<Channel>,
    state: Mutex<TaskState>,
}

struct TaskState {
    /// `None` while being polled, and once finished.
    work: Option<Work>,
    settler: Option<Settler>,
    running: bool,
    /// Woken and not polled since.
    scheduled: bool,
    /// Wakes the task's driver on the runtime.
    driver: Option<Waker>,
}

impl TaskState {
    fn is_finished(&self) -> bool {
        self.work.is_none() && !self.running
    }
}

/// Where a poll happens.
#[derive(Clone, Copy)]
enum Side {
    JavaScript(sys::napi_env),
    Runtime,
}

thread_local! {
    /// Tasks woken on this JavaScript thread while it was polling, to poll before it returns.
    static READY: RefCell<VecDeque<Arc<Task>>> = const { RefCell::new(VecDeque::new()) };
    /// Whether this thread is polling tasks now (and will poll READY before it stops).
    static DRAINING: Cell<bool> = const { Cell::new(false) };
}

impl Task {
    fn lock(&self) -> MutexGuard<'_, TaskState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Poll once if woken; settle the Promise if the future finished.
    fn run(self: &Arc<Self>, side: Side) -> Polled {
        let mut work = {
            let mut state = self.lock();
            if state.is_finished() {
                return Polled::Finished;
            }
            if !state.scheduled || state.running {
                return Polled::Pending;
            }
            let Some(work) = state.work.take() else { return Polled::Pending };
            state.scheduled = false;
            state.running = true;
            work
        };
        let waker = Waker::from(self.clone());
        let polled = catch_unwind(AssertUnwindSafe(|| {
            let mut cx = Context::from_waker(&waker);
            match side {
                Side::JavaScript(_) => {
                    napi::bindgen_prelude::within_runtime_if_available(|| work.as_mut().poll(&mut cx))
                }
                Side::Runtime => work.as_mut().poll(&mut cx),
            }
        }));
        let mut state = self.lock();
        state.running = false;
        let outcome = match polled {
            Ok(Poll::Pending) => {
                state.work = Some(work);
                return if state.scheduled { Polled::WokenMeanwhile } else { Polled::Pending };
            }
            Ok(Poll::Ready(outcome)) => Some(outcome),
            Err(_panicked) => None, // dropping the resolver below rejects the Promise
        };
        let (settler, driver) = (state.settler.take(), state.driver.take());
        drop(state);
        drop(work);
        match (outcome, side) {
            (Some(outcome), Side::JavaScript(env)) => {
                if let Some(deferred) = settler.and_then(|mut settler| settler.deferred.take()) {
                    self.channel.settle_here(env, Completion { deferred, outcome });
                }
            }
            (Some(outcome), Side::Runtime) => {
                if let Some(deferred) = settler.and_then(|mut settler| settler.deferred.take()) {
                    self.channel.send(Completion { deferred, outcome });
                }
            }
            (None, _) => drop(settler),
        }
        // Finished here: let the driver end too.
        if let Some(driver) = driver {
            driver.wake();
        }
        Polled::Finished
    }
}

/// What a [`Task::run`] left.
#[derive(PartialEq, Eq)]
enum Polled {
    /// Waiting to be woken (or being polled elsewhere).
    Pending,
    /// Woken while it was being polled: the caller polls it again.
    WokenMeanwhile,
    Finished,
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    /// Polled next by whoever woke it: this JavaScript thread if it is polling futures now,
    /// else the driver on the runtime.
    fn wake_by_ref(self: &Arc<Self>) {
        let driver = {
            let mut state = self.lock();
            if state.is_finished() || state.scheduled {
                return;
            }
            state.scheduled = true;
            if state.running {
                return; // its poller polls it again
            }
            if DRAINING.get() && on_thread_of(&self.channel) {
                drop(state);
                READY.with(|ready| ready.borrow_mut().push_back(self.clone()));
                return;
            }
            state.driver.clone()
        };
        // No driver yet: the one being spawned polls it first thing.
        if let Some(driver) = driver {
            driver.wake();
        }
    }
}

/// A task's poller on the runtime: ends once the task has finished, wherever it finished.
struct Driver(Arc<Task>);

impl Future for Driver {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let task = &self.0;
        {
            let mut state = task.lock();
            if !state.driver.as_ref().is_some_and(|driver| driver.will_wake(cx.waker())) {
                state.driver = Some(cx.waker().clone());
            }
        }
        match task.run(Side::Runtime) {
            Polled::Finished => Poll::Ready(()),
            Polled::WokenMeanwhile => {
                cx.waker().wake_by_ref(); // again, after others had a turn
                Poll::Pending
            }
            Polled::Pending => Poll::Pending,
        }
    }
}

/// Whether this thread is the JavaScript thread `channel` belongs to.
fn on_thread_of(channel: &Arc<Channel>) -> bool {
    CHANNEL.with(|slot| slot.borrow().as_ref().is_some_and(|(_, here)| Arc::ptr_eq(here, channel)))
}

/// On the JavaScript thread: poll `first`, then every task woken meanwhile on this thread,
/// until none is left. Returns what `first`'s poll left.
fn drain(env: sys::napi_env, first: Arc<Task>) -> Polled {
    let was_draining = DRAINING.replace(true);
    let polled = first.run(Side::JavaScript(env));
    if polled == Polled::WokenMeanwhile {
        READY.with(|ready| ready.borrow_mut().push_back(first));
    }
    if !was_draining {
        while let Some(task) = READY.with(|ready| ready.borrow_mut().pop_front()) {
            if task.run(Side::JavaScript(env)) == Polled::WokenMeanwhile {
                READY.with(|ready| ready.borrow_mut().push_back(task));
            }
        }
    }
    DRAINING.set(was_draining);
    polled
}

/// Turns a finished call's result into its JavaScript value, on the JavaScript thread.
type Outcome = Box<dyn FnOnce(sys::napi_env) -> Result<sys::napi_value> + Send>;

/// A Promise's resolver. Only the JavaScript thread ever uses it; other threads just carry it.
struct Deferred(sys::napi_deferred);
unsafe impl Send for Deferred {}

/// What travels through the threadsafe function's queue: a Promise and its outcome.
struct Completion {
    deferred: Deferred,
    outcome: Outcome,
}

struct Tsfn(sys::napi_threadsafe_function);
unsafe impl Send for Tsfn {}

/// One environment's threadsafe function and the count of its pending Promises.
struct Channel {
    /// `None` once the environment finalized the threadsafe function: from then on nothing may
    /// call it. Callers hold the lock while calling, so finalizing waits for them.
    tsfn: Mutex<Option<Tsfn>>,
    /// Promises made and not yet settled. Only the JavaScript thread touches it.
    pending: AtomicUsize,
}

thread_local! {
    /// The channel of the environment running on this thread (Node runs one per thread: the
    /// main one and each worker's).
    static CHANNEL: RefCell<Option<(usize, Arc<Channel>)>> = const { RefCell::new(None) };
}

fn channel_for(env: sys::napi_env) -> Result<Arc<Channel>> {
    CHANNEL.with(|slot| {
        let mut slot = slot.borrow_mut();
        if let Some((owner, channel)) = slot.as_ref() {
            if *owner == env as usize && channel.is_open() {
                return Ok(channel.clone());
            }
        }
        let channel = Channel::open(env)?;
        *slot = Some((env as usize, channel.clone()));
        Ok(channel)
    })
}

fn check(status: sys::napi_status, what: &str) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(Error::new(Status::from(status), format!("polylock: cannot {what} (napi status {status})")))
    }
}

impl Channel {
    fn open(env: sys::napi_env) -> Result<Arc<Channel>> {
        let channel = Arc::new(Channel { tsfn: Mutex::new(None), pending: AtomicUsize::new(0) });
        const NAME: &str = "polylock";
        let mut name = ptr::null_mut();
        check(
            unsafe { sys::napi_create_string_utf8(env, NAME.as_ptr().cast(), NAME.len() as isize, &mut name) },
            "name its threadsafe function",
        )?;
        // The threadsafe function owns one reference, given back when it is finalized.
        let context = Arc::into_raw(channel.clone()) as *mut c_void;
        let mut tsfn = ptr::null_mut();
        let created = check(
            unsafe {
                sys::napi_create_threadsafe_function(
                    env,
                    ptr::null_mut(),
                    ptr::null_mut(),
                    name,
                    0, // an unbounded queue: settling never blocks a runtime thread
                    1,
                    context,
                    Some(finalize),
                    context,
                    Some(settle_on_js_thread),
                    &mut tsfn,
                )
            },
            "create its threadsafe function",
        );
        if let Err(err) = created {
            drop(unsafe { Arc::from_raw(context as *const Channel) });
            return Err(err);
        }
        // Idle until a Promise is pending.
        check(unsafe { sys::napi_unref_threadsafe_function(env, tsfn) }, "unref its threadsafe function")?;
        *channel.slot() = Some(Tsfn(tsfn));
        Ok(channel)
    }

    fn slot(&self) -> MutexGuard<'_, Option<Tsfn>> {
        // Nothing panics while holding it; a poisoned slot is still a valid one.
        self.tsfn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn is_open(&self) -> bool {
        self.slot().is_some()
    }

    /// On the JavaScript thread: a Promise was made. The first pending one refs the function.
    fn started(&self, env: sys::napi_env) {
        if self.pending.fetch_add(1, Ordering::Relaxed) == 0 {
            if let Some(tsfn) = self.slot().as_ref() {
                unsafe { sys::napi_ref_threadsafe_function(env, tsfn.0) };
            }
        }
    }

    /// On the JavaScript thread: a Promise settled. The last pending one unrefs the function.
    fn finished(&self, env: sys::napi_env) {
        if self.pending.fetch_sub(1, Ordering::Relaxed) == 1 {
            if let Some(tsfn) = self.slot().as_ref() {
                unsafe { sys::napi_unref_threadsafe_function(env, tsfn.0) };
            }
        }
    }

    /// On the JavaScript thread: settle `completion`'s Promise now. Nothing may unwind into
    /// Node: a panic while converting becomes a lost settlement, never an abort of the process.
    fn settle_here(&self, env: sys::napi_env, completion: Completion) {
        let _ = catch_unwind(AssertUnwindSafe(|| unsafe { settle(env, completion) }));
        self.finished(env);
    }

    /// From any thread: queue `completion` for the JavaScript thread.
    fn send(&self, completion: Completion) {
        let data = Box::into_raw(Box::new(completion));
        let slot = self.slot();
        let status = match slot.as_ref() {
            Some(tsfn) => unsafe {
                sys::napi_call_threadsafe_function(tsfn.0, data.cast(), sys::ThreadsafeFunctionCallMode::nonblocking)
            },
            None => sys::Status::napi_closing,
        };
        drop(slot);
        if status != sys::Status::napi_ok {
            // The environment is going away: its Promises go with it. Dropping the completion
            // drops what it carries (a guard releases itself in the background).
            drop(unsafe { Box::from_raw(data) });
        }
    }
}

/// A Promise's resolver until its future finishes. If the future never finishes (it
/// panicked, or its environment went away), dropping this rejects the Promise, so no caller
/// waits forever and the count of pending Promises stays right.
struct Settler {
    channel: Arc<Channel>,
    deferred: Option<Deferred>,
}

impl Drop for Settler {
    fn drop(&mut self) {
        if let Some(deferred) = self.deferred.take() {
            let outcome: Outcome = Box::new(|_| {
                Err(Error::from_reason("POLYLOCK_BACKEND: the operation stopped before it finished (it panicked)"))
            });
            self.channel.send(Completion { deferred, outcome });
        }
    }
}

/// The threadsafe function's callback, on the JavaScript thread: settle one Promise. Node
/// calls it for each queued completion in turn after a single wakeup. `env` is null when the
/// environment is tearing down with completions still queued: those are only dropped.
unsafe extern "C" fn settle_on_js_thread(
    env: sys::napi_env,
    _js_callback: sys::napi_value,
    context: *mut c_void,
    data: *mut c_void,
) {
    let completion = unsafe { Box::from_raw(data as *mut Completion) };
    if env.is_null() || context.is_null() {
        return;
    }
    let channel = unsafe { &*(context as *const Channel) };
    channel.settle_here(env, *completion);
}

unsafe fn settle(env: sys::napi_env, completion: Completion) {
    let mut scope = ptr::null_mut();
    if unsafe { sys::napi_open_handle_scope(env, &mut scope) } != sys::Status::napi_ok {
        return;
    }
    let Completion { deferred, outcome } = completion;
    match outcome(env) {
        Ok(value) => {
            unsafe { sys::napi_resolve_deferred(env, deferred.0, value) };
        }
        Err(err) => {
            let rejection = unsafe { ToNapiValue::to_napi_value(env, err) }.unwrap_or_else(|_| plain_error(env));
            unsafe { sys::napi_reject_deferred(env, deferred.0, rejection) };
        }
    }
    unsafe { sys::napi_close_handle_scope(env, scope) };
}

/// A last-resort rejection when the error itself could not be made.
fn plain_error(env: sys::napi_env) -> sys::napi_value {
    const MESSAGE: &str = "POLYLOCK_BACKEND: the call failed and its error could not be reported";
    let mut message = ptr::null_mut();
    let mut error = ptr::null_mut();
    unsafe {
        sys::napi_create_string_utf8(env, MESSAGE.as_ptr().cast(), MESSAGE.len() as isize, &mut message);
        sys::napi_create_error(env, ptr::null_mut(), message, &mut error);
    }
    error
}

/// Called by Node on the JavaScript thread when the environment finalizes the threadsafe
/// function: close the slot (waiting for any thread inside a call) and give back the
/// function's reference to the channel.
unsafe extern "C" fn finalize(_env: sys::napi_env, finalize_data: *mut c_void, _hint: *mut c_void) {
    if finalize_data.is_null() {
        return;
    }
    let channel = unsafe { Arc::from_raw(finalize_data as *const Channel) };
    channel.slot().take();
}
