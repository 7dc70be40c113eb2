//! Completing a Java `CompletableFuture` from the client's runtime threads, through
//! `NativeBridge.completed`, which maps error codes to exceptions in one place.

use jni::objects::{GlobalRef, JClass, JObject};
use jni::signature::{Primitive, ReturnType};
use jni::sys::jvalue;
use jni::JNIEnv;
use polylock::{Error, VersionedValue};

use crate::entry::{code, require_object, JResult, JniResultExt};
use crate::vm::{bridge, with_env};

/// How a native call ended, as its future sees it.
pub enum Outcome {
    /// A `Long` (a token, a count, a duration in ms, a 0/1 flag).
    Value(i64),
    /// A `long[2]` (a permit's id and its fencing token), through `NativeBridge.completedPair`.
    Pair(i64, i64),
    /// An `io.polylock.Versioned` (a value watch's next state), built by
    /// `NativeBridge.completedVersioned` so that no runtime thread looks a class up.
    Versioned(VersionedValue),
    /// `null`: a wait that ran out, or a call with no value.
    Nothing,
    Failed(Error),
}

const STATUS_VALUE: i32 = 0;
const STATUS_NOTHING: i32 = 1;
const STATUS_FAILED: i32 = 2;
const NULL: jvalue = jvalue { l: std::ptr::null_mut() };

/// The Java future of one call. Completing it consumes the completer; one dropped unused
/// (a task that panicked, or was dropped with its runtime at close) fails the future, so no
/// Java caller waits forever.
pub struct Completer {
    future: Option<GlobalRef>,
}

impl Completer {
    pub fn new(env: &mut JNIEnv<'_>, future: &JObject<'_>) -> JResult<Completer> {
        require_object(future, "future")?;
        Ok(Completer { future: Some(env.new_global_ref(future).or_backend()?) })
    }

    /// True if this completed the future; false if it was completed (or cancelled) before.
    pub fn complete(mut self, outcome: Outcome) -> bool {
        match self.future.take() {
            Some(future) => deliver(&future, outcome),
            None => false,
        }
    }
}

impl Drop for Completer {
    fn drop(&mut self) {
        if let Some(future) = self.future.take() {
            let error = if std::thread::panicking() {
                Error::internal("internal error in polylock's native library: a task panicked (please report it)")
            } else {
                Error::connection("the polylock client was closed before this call finished")
            };
            deliver(&future, Outcome::Failed(error));
        }
    }
}

fn deliver(future: &GlobalRef, outcome: Outcome) -> bool {
    let Some(bridge) = bridge() else {
        return false;
    };
    // Runtime threads are attached already; this only attaches a thread that is not.
    with_env(|env| deliver_on(env, bridge, future, outcome)).unwrap_or(false)
}

fn deliver_on(env: &mut JNIEnv<'_>, bridge: &crate::vm::Bridge, future: &GlobalRef, outcome: Outcome) -> bool {
    // A local frame, so that permanently attached worker threads do not pile up local refs.
    let delivered = env.with_local_frame(4, |env| -> jni::errors::Result<bool> {
        let class = <&JClass<'_>>::from(bridge.class.as_obj());
        let this = jvalue { l: future.as_obj().as_raw() };
        // Local references made here stay valid until the frame is popped, after the call.
        // `completedPair` takes three arguments, the others four.
        let (method, args, count) = match outcome {
            Outcome::Pair(first, second) => {
                (bridge.completed_pair, [this, jvalue { j: first }, jvalue { j: second }, NULL], 3)
            }
            Outcome::Versioned(versioned) => {
                let bytes = env.byte_array_from_slice(&versioned.value)?;
                let token = versioned.fencing_token.map_or(-1, |token| token as i64);
                let version = jvalue { j: versioned.version as i64 };
                (bridge.completed_versioned, [this, jvalue { l: bytes.as_raw() }, version, jvalue { j: token }], 4)
            }
            Outcome::Value(value) => {
                (bridge.completed, [this, jvalue { i: STATUS_VALUE }, jvalue { j: value }, NULL], 4)
            }
            Outcome::Nothing => (bridge.completed, [this, jvalue { i: STATUS_NOTHING }, jvalue { j: 0 }, NULL], 4),
            Outcome::Failed(err) => {
                let message = env.new_string(err.to_string())?;
                let code = jvalue { j: i64::from(code(err.kind())) };
                (bridge.completed, [this, jvalue { i: STATUS_FAILED }, code, jvalue { l: message.as_raw() }], 4)
            }
        };
        // SAFETY: each method id was looked up on this class with the signature its arguments follow.
        let completed = unsafe {
            env.call_static_method_unchecked(class, method, ReturnType::Primitive(Primitive::Boolean), &args[..count])
        }?;
        completed.z()
    });
    match delivered {
        Ok(completed) => completed,
        Err(_) => {
            // An exception thrown by a dependent stage must not stay pending on this thread.
            if env.exception_check().unwrap_or(false) {
                let _ = env.exception_describe();
                let _ = env.exception_clear();
            }
            false
        }
    }
}
