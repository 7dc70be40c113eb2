//! Leader election calls (`io.polylock.NativeLeaderElection`): translation only over the
//! core's `Election`. The natives are that Java class's own, so this file and that class are
//! the native side of `RLeaderElection`, `RLeadership` and `LeaderSubscription`.
//!
//! A won campaign is boxed (`JvmLeadership`) for Java to hold as a `long` and free once (its
//! Cleaner); an observation is boxed too (`JvmObserver`), read by one Java thread that frees it
//! when the observation ends.

use jni::objects::{JByteArray, JClass, JObject, JString, JValue};
use jni::sys::{jboolean, jint, jlong, jobject, jstring};
use jni::JNIEnv;
use polylock::{Election, Error, LeaderChanges, LeaderRecord, Leadership};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::blocking::{borrow, client, free, into_handle, wait_for};
use crate::complete::{Completer, Outcome};
use crate::entry::{entry, read_string, JResult, JniResultExt};
use crate::lock::{options, runtime, spawn_acquisition, Form};
use crate::values::read_bytes;

const LEADERSHIP: &str = "leadership";
const OBSERVER: &str = "leader subscription";

/// A won campaign, as Java holds it.
struct JvmLeadership {
    leadership: Leadership,
    /// Cancelled on resign and when Java frees it: ends the task watching for a loss.
    done: CancellationToken,
}

impl Drop for JvmLeadership {
    /// Dropping the core's leadership without a resign resigns it in the background.
    fn drop(&mut self) {
        self.done.cancel();
    }
}

/// One observation, as Java holds it.
struct JvmObserver {
    changes: Mutex<Option<LeaderChanges>>,
    runtime: tokio::runtime::Handle,
    /// Cancelled by `LeaderSubscription.close`: a waiting `nativeNext` answers "ended".
    stop: CancellationToken,
}

fn election_for(env: &mut JNIEnv<'_>, handle: jlong, name: &JString<'_>) -> JResult<Election> {
    // SAFETY: Java keeps the handle alive for the call (PolylockClient's read lock).
    let native = unsafe { client(handle)? };
    let name = read_string(env, name, "election name")?;
    native.client.election(&name)
}

/// An `io.polylock.Leader` (value null: nobody leads).
fn leader_object(env: &mut JNIEnv<'_>, leader: Option<LeaderRecord>) -> JResult<jobject> {
    let (value, term) = match leader {
        Some(leader) => (JObject::from(env.byte_array_from_slice(&leader.value).or_backend()?), leader.term),
        None => (JObject::null(), 0),
    };
    let object = env
        .new_object("io/polylock/Leader", "([BJ)V", &[JValue::Object(&value), JValue::Long(term as jlong)])
        .or_backend()?;
    Ok(object.into_raw())
}

/// Check that the client's backend offers elections and the name is usable (UNSUPPORTED,
/// INVALID_ARGUMENT), when Java makes the handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeLeaderElection_nativeCheck<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) {
    entry(&mut env, (), |env| election_for(env, handle, &name).map(drop))
}

/// Start campaigning with `value` for at most `wait_ms` (-1: no bound) in `waiting`'s form
/// (`Election::campaign` or `Election::try_campaign`); the future gets the leadership's
/// handle, or TIMEOUT (waiting form) or null (try form) when the wait ran out. Returns a call handle for
/// `NativeBridge.cancel`/`freeCall`; a leadership won after the Java future was cancelled is
/// freed, which resigns it.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeLeaderElection_nativeCampaign<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    value: JByteArray<'l>,
    wait_ms: jlong,
    waiting: jboolean,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let election = election_for(env, handle, &name)?;
        let value = read_bytes(env, &value, "value")?;
        let wait = options(wait_ms, -1)?.wait;
        let completer = Completer::new(env, &future)?;
        let form = Form::from_java(waiting);
        let campaigning = async move {
            let leadership = match form {
                Form::Waiting => Some(election.campaign(&value, wait).await?),
                Form::Try => election.try_campaign(&value, wait).await?,
            };
            Ok(leadership
                .map(|leadership| into_handle(JvmLeadership { leadership, done: CancellationToken::new() }) as u64))
        };
        spawn_acquisition(handle, completer, form, campaigning, |won| async move {
            // SAFETY: the handle was made just now and Java never saw it.
            unsafe { free::<JvmLeadership>(won as jlong) };
        })
    })
}

/// The current leader, as a `Leader` whose value is null when nobody leads.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeLeaderElection_nativeLeader<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) -> jobject {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let election = election_for(env, handle, &name)?;
        // SAFETY: as in `election_for`.
        let native = unsafe { client(handle)? };
        let leader = wait_for(native, election.leader())?;
        leader_object(env, leader)
    })
}

/// Start observing; the observation's handle, for `nativeNext`, `nativeStopObserving` and
/// `nativeFreeObserver`.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeLeaderElection_nativeObserve<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let election = election_for(env, handle, &name)?;
        let runtime = runtime(handle)?;
        let changes = {
            let _entered = runtime.enter();
            election.observe()?
        };
        Ok(into_handle(JvmObserver { changes: Mutex::new(Some(changes)), runtime, stop: CancellationToken::new() }))
    })
}

/// The next change, as a `Leader` (value null: nobody leads), or null once the observation
/// ended (stopped, or the client closed). It needs no client handle, so it never keeps the
/// client from closing. An error of the store ends the observation and is thrown.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeLeaderElection_nativeNext<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    observer: jlong,
) -> jobject {
    entry(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: the observing thread frees the handle only after its last `nativeNext`.
        let observer = unsafe { borrow::<JvmObserver>(observer, OBSERVER)? };
        let reading = async {
            let mut changes = observer.changes.lock().await;
            let Some(stream) = changes.as_mut() else { return Ok(None) };
            let next = tokio::select! {
                next = stream.next() => next,
                () = observer.stop.cancelled() => None,
            };
            match next {
                Some(Ok(leader)) => Ok(Some(leader)),
                Some(Err(err)) => {
                    *changes = None;
                    Err(err)
                }
                None => {
                    *changes = None;
                    Ok(None)
                }
            }
        };
        // Not `wait_for`: that needs the client, and this thread must not hold it.
        match tokio::task::block_in_place(|| observer.runtime.block_on(reading))? {
            Some(leader) => leader_object(env, leader),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeLeaderElection_nativeStopObserving<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    observer: jlong,
) {
    entry(&mut env, (), |_env| {
        // SAFETY: Java stops an observation only before the observing thread freed it.
        unsafe { borrow::<JvmObserver>(observer, OBSERVER)? }.stop.cancel();
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeLeaderElection_nativeFreeObserver<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    observer: jlong,
) {
    entry(&mut env, (), |_env| {
        // SAFETY: freed once, by the observing thread as it ends.
        unsafe { free::<JvmObserver>(observer) };
        Ok(())
    })
}

/// What a leadership knows of itself, by `which`: its term, or 1/0 for leading, lost and
/// suspended.
const STATE_TERM: jint = 0;
const STATE_LEADING: jint = 1;
const STATE_LOST: jint = 2;
const STATE_SUSPENDED: jint = 3;

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeLeaderElection_nativeState<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    leadership: jlong,
    which: jint,
) -> jlong {
    entry(&mut env, 0, |_env| {
        // SAFETY: Java keeps the leadership alive for the call.
        let held = &unsafe { borrow::<JvmLeadership>(leadership, LEADERSHIP)? }.leadership;
        Ok(match which {
            STATE_TERM => held.term() as jlong,
            STATE_LEADING => jlong::from(held.is_leader()),
            STATE_LOST => jlong::from(held.is_lost()),
            STATE_SUSPENDED => jlong::from(held.is_suspended()),
            _ => return Err(Error::invalid_argument(format!("unknown leadership state {which}"))),
        })
    })
}

/// The value campaigned with or last proclaimed.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeLeaderElection_nativeValue<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    leadership: jlong,
) -> jobject {
    entry(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: Java keeps the leadership alive for the call.
        let held = unsafe { borrow::<JvmLeadership>(leadership, LEADERSHIP)? };
        Ok(env.byte_array_from_slice(&held.leadership.value()).or_backend()?.into_raw())
    })
}

/// Why it was lost, or null.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeLeaderElection_nativeLostReason<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    leadership: jlong,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: Java keeps the leadership alive for the call.
        let held = unsafe { borrow::<JvmLeadership>(leadership, LEADERSHIP)? };
        match held.leadership.lost_reason() {
            Some(reason) => Ok(env.new_string(reason.to_string()).or_backend()?.into_raw()),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeLeaderElection_nativeProclaim<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    leadership: jlong,
    value: JByteArray<'l>,
) {
    entry(&mut env, (), |env| {
        let value = read_bytes(env, &value, "value")?;
        // SAFETY: Java keeps both handles alive for the call.
        let (native, held) = unsafe { (client(handle)?, borrow::<JvmLeadership>(leadership, LEADERSHIP)?) };
        wait_for(native, held.leadership.proclaim(&value))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeLeaderElection_nativeResign<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    leadership: jlong,
) {
    entry(&mut env, (), |_env| {
        // SAFETY: Java keeps both handles alive for the call.
        let (native, held) = unsafe { (client(handle)?, borrow::<JvmLeadership>(leadership, LEADERSHIP)?) };
        let resigned = wait_for(native, held.leadership.resign());
        // A leadership that was resigned is never lost afterwards: stop watching.
        held.done.cancel();
        resigned
    })
}

/// Complete `future` when the leadership is lost: exceptionally with a LOST error carrying
/// the reason. Completed with null instead once it was resigned or freed unlost.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeLeaderElection_nativeWatchLost<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    leadership: jlong,
    future: JObject<'l>,
) {
    entry(&mut env, (), |env| {
        // SAFETY: Java keeps the leadership alive for the call.
        let held = unsafe { borrow::<JvmLeadership>(leadership, LEADERSHIP)? };
        let (watch, done) = (held.leadership.lost_watch(), held.done.clone());
        let completer = Completer::new(env, &future)?;
        runtime(handle)?.spawn(async move {
            let outcome = tokio::select! {
                biased;
                reason = watch.wait() => Outcome::Failed(Error::lost(reason.to_string())),
                () = done.cancelled() => Outcome::Nothing,
            };
            completer.complete(outcome);
        });
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeLeaderElection_nativeFreeLeadership<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    leadership: jlong,
) {
    entry(&mut env, (), |_env| {
        // SAFETY: freed once, by the leadership's Cleaner.
        unsafe { free::<JvmLeadership>(leadership) };
        Ok(())
    })
}
