//! Versioned values behind `io.polylock.VersionedValue`: the core's `Value` per call (a
//! handle on a name is cheap), waited for on the caller's thread. A `Conflict` or `Fenced`
//! error reaches Java with its details (entry.rs): the current value and version, or the
//! winning token.
//!
//! A watch (`io.polylock.ValueWatch`) is the kit's `SharedValueWatch`, boxed for Java to hold
//! as a `long` and freed by its Cleaner: its waits run as tasks on the client's runtime and
//! complete a Java future, so a wait never holds the client open and `close` from any thread
//! ends it.

use std::sync::Arc;
use std::time::Duration;

use jni::objects::{JByteArray, JClass, JObject, JString, JValue};
use jni::sys::{jboolean, jlong, jobject, JNI_FALSE, JNI_TRUE};
use jni::JNIEnv;
use polylock::kit::value_watch::{SharedValueWatch, WatchStep};
use polylock::{Error, Value, VersionedValue};
use tokio_util::sync::CancellationToken;

use crate::blocking::{borrow, client, free, into_handle, unsigned, wait_for};
use crate::client::NativeClient;
use crate::complete::{Completer, Outcome};
use crate::entry::{entry, read_string, JResult, JniResultExt};
use crate::lock::{closing, runtime};

const WATCH: &str = "value watch";

/// What a watch's wait ends with besides a new version, as `io.polylock.ValueChange` reads it.
const STEP_DELETED: i64 = 0;
const STEP_NO_CHANGE: i64 = 1;
const STEP_CLOSED: i64 = 2;

fn value_for<'a>(env: &mut JNIEnv<'_>, handle: jlong, name: &JString<'_>) -> JResult<(&'a NativeClient, Value)> {
    // SAFETY: Java keeps the client handle alive for the call.
    let native = unsafe { client(handle)? };
    let name = read_string(env, name, "value name")?;
    let value = native.client.value(&name)?;
    Ok((native, value))
}

/// A Java `byte[]` argument; null is an InvalidArgument error naming `what`.
pub fn read_bytes(env: &mut JNIEnv<'_>, bytes: &JByteArray<'_>, what: &str) -> JResult<Vec<u8>> {
    if bytes.is_null() {
        return Err(Error::invalid_argument(format!("{what} must not be null")));
    }
    env.convert_byte_array(bytes).or_backend()
}

/// The value as an `io.polylock.Versioned`, or null when there is none.
#[no_mangle]
pub extern "system" fn Java_io_polylock_VersionedValue_nativeGet<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) -> jobject {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let (native, value) = value_for(env, handle, &name)?;
        match wait_for(native, value.get())? {
            Some(current) => versioned(env, &current),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

/// `current` as an `io.polylock.Versioned` (on a Java thread: the class is looked up here).
fn versioned(env: &mut JNIEnv<'_>, current: &VersionedValue) -> JResult<jobject> {
    let bytes = env.byte_array_from_slice(&current.value).or_backend()?;
    let token = current.fencing_token.map_or(-1, |token| token as jlong);
    let versioned = env
        .new_object(
            "io/polylock/Versioned",
            "([BJJ)V",
            &[JValue::Object(&JObject::from(bytes)), JValue::Long(current.version as jlong), JValue::Long(token)],
        )
        .or_backend()?;
    Ok(versioned.into_raw())
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_VersionedValue_nativeCreate<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    bytes: JByteArray<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let (native, value) = value_for(env, handle, &name)?;
        let bytes = read_bytes(env, &bytes, "value")?;
        Ok(wait_for(native, value.create(&bytes))? as jlong)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_VersionedValue_nativeCompareAndSet<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    version: jlong,
    bytes: JByteArray<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let (native, value) = value_for(env, handle, &name)?;
        let version = unsigned(version, "version")?;
        let bytes = read_bytes(env, &bytes, "value")?;
        Ok(wait_for(native, value.compare_and_set(version, &bytes))? as jlong)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_VersionedValue_nativeDelete<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    version: jlong,
) {
    entry(&mut env, (), |env| {
        let (native, value) = value_for(env, handle, &name)?;
        let version = unsigned(version, "version")?;
        wait_for(native, value.delete(version))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_VersionedValue_nativeWriteFenced<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    token: jlong,
    bytes: JByteArray<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let (native, value) = value_for(env, handle, &name)?;
        let token = unsigned(token, "fencing token")?;
        let bytes = read_bytes(env, &bytes, "value")?;
        Ok(wait_for(native, value.write_fenced(token, &bytes))? as jlong)
    })
}

/// Start watching the value `name` (one round trip: the store's change feed is set up and the
/// value read); the watch's handle, for Java to free once (`nativeFree`).
#[no_mangle]
pub extern "system" fn Java_io_polylock_ValueWatch_nativeStart<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let (native, value) = value_for(env, handle, &name)?;
        let watch = wait_for(native, value.watch())?;
        Ok(into_handle(SharedValueWatch::new(watch)))
    })
}

/// The state the watch saw last, as an `io.polylock.Versioned`, or null when there is none.
#[no_mangle]
pub extern "system" fn Java_io_polylock_ValueWatch_nativeCurrent<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    watch: jlong,
) -> jobject {
    entry(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: Java keeps the watch alive for the call (its Cleaner frees it once unreachable).
        let watch = unsafe { borrow::<SharedValueWatch>(watch, WATCH)? };
        match watch.current() {
            Some(current) => versioned(env, &current),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

/// Start one wait for the value's next state, at most `wait_ms` (-1: as long as nothing
/// changes). The future gets an `io.polylock.Versioned` (a new version), or STEP_* (a Long):
/// deleted, no change within the wait, closed; CONNECTION when the client closes. Returns a
/// call handle for `NativeBridge.cancel`/`freeCall`: a cancelled wait stops, losing nothing
/// (the watch compares versions with the state it last returned).
#[no_mangle]
pub extern "system" fn Java_io_polylock_ValueWatch_nativeChanged<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    watch: jlong,
    wait_ms: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        // SAFETY: Java keeps the watch alive for the call; the task keeps its own clone.
        let watch = unsafe { borrow::<SharedValueWatch>(watch, WATCH)? }.clone();
        let wait = match wait_ms {
            -1 => None,
            ms if ms < 0 => {
                return Err(Error::invalid_argument(format!(
                    "a watch's wait must be -1 (as long as nothing changes) or at least 0, got {ms}ms"
                )))
            }
            ms => Some(Duration::from_millis(ms as u64)),
        };
        let completer = Completer::new(env, &future)?;
        let (runtime, closing) = (runtime(handle)?, closing(handle)?);
        let cancel = Arc::new(CancellationToken::new());
        let cancelled = cancel.clone();
        runtime.spawn(async move {
            let step = tokio::select! {
                biased;
                () = cancelled.cancelled() => {
                    completer.complete(Outcome::Nothing);
                    return;
                }
                () = closing.cancelled() => {
                    Err(Error::connection("the polylock client was closed while this watch waited"))
                }
                step = watch.changed_within(wait) => step,
            };
            completer.complete(match step {
                Ok(WatchStep::Changed(Some(next))) => Outcome::Versioned(next),
                Ok(WatchStep::Changed(None)) => Outcome::Value(STEP_DELETED),
                Ok(WatchStep::NoChange) => Outcome::Value(STEP_NO_CHANGE),
                Ok(WatchStep::Closed) => Outcome::Value(STEP_CLOSED),
                Err(err) => Outcome::Failed(err),
            });
        });
        Ok(Arc::into_raw(cancel) as jlong)
    })
}

/// End the watch: a wait in progress ends as closed, as every later one does, and the store's
/// change feed is let go of. On the client's runtime; after the client closed (handle 0), on a
/// runtime of this call's own, as the feed went with the client.
#[no_mangle]
pub extern "system" fn Java_io_polylock_ValueWatch_nativeClose<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    watch: jlong,
) {
    entry(&mut env, (), |_env| {
        // SAFETY: Java keeps the watch alive for the call.
        let watch = unsafe { borrow::<SharedValueWatch>(watch, WATCH)? };
        if handle == 0 {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|err| Error::internal(format!("could not start a runtime to close a value watch: {err}")))?;
            runtime.block_on(watch.close());
            return Ok(());
        }
        // SAFETY: Java keeps the client handle alive for the call.
        let native = unsafe { client(handle)? };
        wait_for(native, watch.close());
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_ValueWatch_nativeIsClosed<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    watch: jlong,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_env| {
        // SAFETY: Java keeps the watch alive for the call.
        let watch = unsafe { borrow::<SharedValueWatch>(watch, WATCH)? };
        Ok(if watch.is_closed() { JNI_TRUE } else { JNI_FALSE })
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_ValueWatch_nativeFree<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    watch: jlong,
) {
    entry(&mut env, (), |_env| {
        // SAFETY: freed once, by the watch's Cleaner.
        unsafe { free::<SharedValueWatch>(watch) };
        Ok(())
    })
}
