//! Countdown latch calls (`io.polylock.NativeCountDownLatch`, Redisson's `RCountDownLatch` shape):
//! translation only. The natives are the Java class's own, so this file and that class are
//! the whole of the latch in the JVM binding.

use jni::objects::{JClass, JObject, JString};
use jni::sys::{jboolean, jint, jlong};
use jni::JNIEnv;
use polylock::{Error, Latch};

use crate::client::NativeClient;
use crate::complete::{Completer, Outcome};
use crate::entry::{entry, read_string, JResult};
use crate::lock::{options, runtime, spawn_acquisition, Form};

fn latch_for(env: &mut JNIEnv<'_>, handle: jlong, name: &JString<'_>) -> JResult<Latch> {
    // SAFETY: Java keeps the handle alive for the call (PolylockClient's read lock).
    let native = unsafe { NativeClient::from_handle(handle)? };
    let name = read_string(env, name, "latch name")?;
    native.client.latch(&name)
}

/// Check that the client's backend offers latches and the name is usable (UNSUPPORTED,
/// INVALID_ARGUMENT), when Java makes the handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeCountDownLatch_nativeCheck<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) {
    entry(&mut env, (), |env| latch_for(env, handle, &name).map(drop))
}

/// The latch calls that do not wait, by `op`: the future gets their number.
const TRY_SET_COUNT: jint = 0; // 1 if set, 0 if the latch was counting down
const COUNT_DOWN: jint = 1; // null
const GET_COUNT: jint = 2; // the count

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeCountDownLatch_nativeCall<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    op: jint,
    argument: jlong,
    future: JObject<'l>,
) {
    entry(&mut env, (), |env| {
        let latch = latch_for(env, handle, &name)?;
        if !(TRY_SET_COUNT..=GET_COUNT).contains(&op) {
            return Err(Error::invalid_argument(format!("unknown latch call {op}")));
        }
        let count = match op {
            TRY_SET_COUNT => u64::try_from(argument)
                .map_err(|_| Error::invalid_argument(format!("a latch count must be at least 1, got {argument}")))?,
            _ => 0,
        };
        let completer = Completer::new(env, &future)?;
        runtime(handle)?.spawn(async move {
            let answer = match op {
                TRY_SET_COUNT => latch.try_set_count(count).await.map(|set| Some(i64::from(set))),
                COUNT_DOWN => latch.count_down().await.map(|()| None),
                _ => latch.count().await.map(|count| Some(count as i64)),
            };
            completer.complete(match answer {
                Ok(Some(value)) => Outcome::Value(value),
                Ok(None) => Outcome::Nothing,
                Err(err) => Outcome::Failed(err),
            });
        });
        Ok(())
    })
}

/// Start waiting for zero for at most `wait_ms` (-1: no bound) in `waiting`'s form
/// (`Latch::await_zero` or `Latch::try_await_zero`); the future gets 1 once the count is
/// zero, or TIMEOUT (waiting form) or null (try form) when the wait ran out. Returns a call handle for
/// `NativeBridge.cancel`/`freeCall` (an interrupted `await` cancels it).
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeCountDownLatch_nativeAwait<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    wait_ms: jlong,
    waiting: jboolean,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let latch = latch_for(env, handle, &name)?;
        let wait = options(wait_ms, -1)?.wait;
        let completer = Completer::new(env, &future)?;
        let form = Form::from_java(waiting);
        let awaiting = async move {
            match form {
                Form::Waiting => latch.await_zero(wait).await.map(|()| Some(1)),
                Form::Try => latch.try_await_zero(wait).await.map(|zero| zero.then_some(1)),
            }
        };
        // Waiting holds nothing, so there is nothing to give back.
        spawn_acquisition(handle, completer, form, awaiting, |_| async {})
    })
}
