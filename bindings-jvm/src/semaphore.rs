//! Semaphore calls (`io.polylock.RPermitExpirableSemaphore`): a permit is its own owner,
//! named by the id its acquisition returns, so any Java thread may release it by that id.
//! Plain semaphores (`io.polylock.RSemaphore`, Redisson's unowned counter; Redis only) are
//! the `PlainSemaphore` calls below.

use jni::objects::{JClass, JObject, JString};
use jni::sys::{jboolean, jint, jlong, jobjectArray};
use jni::JNIEnv;
use polylock::{PlainSemaphore, Semaphore};

use crate::client::NativeClient;
use crate::complete::{Completer, Outcome};
use crate::entry::{entry, read_string, JResult, JniResultExt};
use crate::lock::{options, runtime, spawn_acquisition, Form};

fn semaphore_for(env: &mut JNIEnv<'_>, handle: jlong, name: &JString<'_>, permits: jint) -> JResult<Semaphore> {
    // SAFETY: Java keeps the handle alive for the call (PolylockClient's read lock).
    let native = unsafe { NativeClient::from_handle(handle)? };
    let name = read_string(env, name, "semaphore name")?;
    let permits = u32::try_from(permits).map_err(|_| {
        polylock::Error::invalid_argument(format!("a semaphore needs a positive permit count, got {permits}"))
    })?;
    native.client.semaphore(&name, permits)
}

/// Start taking a permit in `waiting`'s form; the future gets `{permit id, fencing token}` (a
/// `long[2]`), or null (try form) or TIMEOUT (waiting form) when the wait ran out.
/// Returns a call handle for `cancel`/`freeCall`, as `acquire` does; a permit that arrives
/// for a cancelled call is given back.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_semaphoreAcquire<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    permits: jint,
    wait_ms: jlong,
    lease_ms: jlong,
    waiting: jboolean,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let semaphore = semaphore_for(env, handle, &name, permits)?;
        let options = options(wait_ms, lease_ms)?;
        let completer = Completer::new(env, &future)?;
        let giving_back = semaphore.clone();
        let acquiring = async move {
            let permit = semaphore.acquire_with(options).await?;
            let id = permit.id();
            // Released by id, so the permit outlives the guard.
            let token = permit.detach();
            Ok(Some((id, token)))
        };
        spawn_acquisition(handle, completer, Form::from_java(waiting), acquiring, move |(id, _token)| async move {
            let _ = giving_back.release_permit(id).await;
        })
    })
}

/// Give back the permit `permit_id`; the future gets null, or fails with NOT_OWNER or LOST.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_semaphoreRelease<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    permits: jint,
    permit_id: jlong,
    future: JObject<'l>,
) {
    entry(&mut env, (), |env| {
        let semaphore = semaphore_for(env, handle, &name, permits)?;
        let completer = Completer::new(env, &future)?;
        runtime(handle)?.spawn(async move {
            completer.complete(match semaphore.release_permit(permit_id as u64).await {
                Ok(()) => Outcome::Nothing,
                Err(err) => Outcome::Failed(err),
            });
        });
        Ok(())
    })
}

fn plain_semaphore_for(env: &mut JNIEnv<'_>, handle: jlong, name: &JString<'_>) -> JResult<PlainSemaphore> {
    // SAFETY: Java keeps the handle alive for the call (PolylockClient's read lock).
    let native = unsafe { NativeClient::from_handle(handle)? };
    let name = read_string(env, name, "semaphore name")?;
    native.client.plain_semaphore(&name)
}

fn permit_count(permits: jint) -> JResult<u32> {
    u32::try_from(permits)
        .map_err(|_| polylock::Error::invalid_argument(format!("a permit count cannot be negative, got {permits}")))
}

/// Whether the client's backend offers plain semaphores; throws UNSUPPORTED if not.
#[no_mangle]
pub extern "system" fn Java_io_polylock_PlainSemaphore_nativeCheck<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) {
    entry(&mut env, (), |env| plain_semaphore_for(env, handle, &name).map(drop))
}

/// Start taking `permits` plain permits; the future gets the count taken, or null when the
/// wait ran out. Returns a call handle for `cancel`/`freeCall`; permits taken for a cancelled
/// call are given back.
#[no_mangle]
pub extern "system" fn Java_io_polylock_PlainSemaphore_nativeAcquire<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    permits: jint,
    wait_ms: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let semaphore = plain_semaphore_for(env, handle, &name)?;
        let permits = permit_count(permits)?;
        let wait = options(wait_ms, -1)?.wait;
        let completer = Completer::new(env, &future)?;
        let giving_back = semaphore.clone();
        let acquiring = async move { semaphore.acquire_with(permits, wait).await.map(|()| Some(u64::from(permits))) };
        spawn_acquisition(handle, completer, Form::Try, acquiring, move |_| async move {
            let _ = giving_back.release(permits).await;
        })
    })
}

/// The plain semaphore calls that do not wait, by `op`: the future gets their number.
const PLAIN_TRY_SET_PERMITS: jint = 0; // 1 if set, 0 if it had a count
const PLAIN_RELEASE: jint = 1; // null
const PLAIN_AVAILABLE: jint = 2; // the count available
const PLAIN_ADD_PERMITS: jint = 3; // null (`argument` may be negative)
const PLAIN_DRAIN: jint = 4; // the count taken

#[no_mangle]
pub extern "system" fn Java_io_polylock_PlainSemaphore_nativeCall<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    op: jint,
    argument: jint,
    future: JObject<'l>,
) {
    entry(&mut env, (), |env| {
        let semaphore = plain_semaphore_for(env, handle, &name)?;
        if !(PLAIN_TRY_SET_PERMITS..=PLAIN_DRAIN).contains(&op) {
            return Err(polylock::Error::invalid_argument(format!("unknown plain semaphore call {op}")));
        }
        let count = if op == PLAIN_TRY_SET_PERMITS || op == PLAIN_RELEASE { permit_count(argument)? } else { 0 };
        let completer = Completer::new(env, &future)?;
        runtime(handle)?.spawn(async move {
            let answer = match op {
                PLAIN_TRY_SET_PERMITS => semaphore.try_set_permits(count).await.map(|set| Some(i64::from(set))),
                PLAIN_RELEASE => semaphore.release(count).await.map(|()| None),
                PLAIN_AVAILABLE => semaphore.available_permits().await.map(Some),
                PLAIN_ADD_PERMITS => semaphore.add_permits(argument).await.map(|()| None),
                _ => semaphore.drain_permits().await.map(Some),
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

/// The core's table of error kinds, as names in number order (ErrorCodeTest reads it).
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_errorKinds<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
) -> jobjectArray {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let kinds = polylock::ErrorKind::ALL;
        let array = env.new_object_array(kinds.len() as i32, "java/lang/String", JObject::null()).or_backend()?;
        for (i, kind) in kinds.iter().enumerate() {
            let name = env.new_string(kind.as_str()).or_backend()?;
            env.set_object_array_element(&array, i as i32, name).or_backend()?;
        }
        Ok(array.into_raw())
    })
}
