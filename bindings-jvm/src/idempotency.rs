//! Idempotency keys behind `io.polylock.Idempotency` and `io.polylock.IdempotencyTicket`:
//! the core's `Idempotency` per call (cheap), its `Ticket` boxed for Java to hold, and its
//! `run` with the Java work called back on the caller's own thread (so the work sees the
//! caller's thread, its locks and thread locals). An `InProgress` error reaches Java with its
//! retry-after (entry.rs); an exception thrown by the work is rethrown as it is.

use std::time::Duration;

use jni::objects::{GlobalRef, JByteArray, JClass, JObject, JString, JThrowable, JValue};
use jni::sys::{jboolean, jbyteArray, jint, jlong, jobject};
use jni::JNIEnv;
use polylock::kit::idempotency_codec::{
    decode_response, encode_response, fingerprint_of_bytes, fingerprint_of_json, StoredResponse,
};
use polylock::{Begin, Error, Idempotency, Ticket};

use crate::blocking::{borrow, client, free, into_handle, wait_for};
use crate::client::NativeClient;
use crate::entry::{entry, read_string, require_object, JResult, JniResultExt};
use crate::values::read_bytes;

/// The outcome codes of `Idempotency.begun` (Java's `Idempotency.Outcome` ordinals).
const ACQUIRED: jint = 0;
const REPLAY: jint = 1;
const IN_PROGRESS: jint = 2;
const MISMATCH: jint = 3;

/// Java's milliseconds for a duration option: -1 is the core's default.
fn millis_or(ms: jlong, default: Duration, what: &str) -> JResult<Duration> {
    match ms {
        -1 => Ok(default),
        ms if ms < 0 => {
            Err(Error::invalid_argument(format!("{what} must be -1 (the default) or at least 0 ms, got {ms}")))
        }
        ms => Ok(Duration::from_millis(ms as u64)),
    }
}

fn idempotency_for<'a>(
    env: &mut JNIEnv<'_>,
    handle: jlong,
    namespace: &JString<'_>,
    retention_ms: jlong,
    in_progress_ttl_ms: jlong,
) -> JResult<(&'a NativeClient, Idempotency)> {
    // SAFETY: Java keeps the client handle alive for the call.
    let native = unsafe { client(handle)? };
    let namespace = read_string(env, namespace, "idempotency namespace")?;
    let retention = millis_or(retention_ms, Idempotency::DEFAULT_RETENTION, "retention")?;
    let ttl = millis_or(in_progress_ttl_ms, Idempotency::DEFAULT_IN_PROGRESS_TTL, "inProgressTtl")?;
    let idempotency = native.client.idempotency_with(&namespace, retention, ttl)?;
    Ok((native, idempotency))
}

/// `Idempotency.Begin` of what the core's `begin` found (a ticket as a handle to free).
#[no_mangle]
#[allow(clippy::too_many_arguments)] // one JNI signature, mirrored in Idempotency.java
pub extern "system" fn Java_io_polylock_Idempotency_nativeBegin<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    namespace: JString<'l>,
    retention_ms: jlong,
    in_progress_ttl_ms: jlong,
    key: JString<'l>,
    fingerprint: JByteArray<'l>,
) -> jobject {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let (native, idempotency) = idempotency_for(env, handle, &namespace, retention_ms, in_progress_ttl_ms)?;
        let key = read_string(env, &key, "idempotency key")?;
        let fingerprint = fingerprint_of_bytes(&read_bytes(env, &fingerprint, "fingerprint")?);
        let begun = wait_for(native, idempotency.begin(&key, &fingerprint))?;
        let (outcome, ticket, token, response, retry_after_ms) = match begun {
            Begin::Acquired(ticket) => {
                let token = ticket.token() as jlong;
                (ACQUIRED, into_handle(ticket), token, None, -1)
            }
            Begin::Replay(response) => (REPLAY, 0, -1, Some(response), -1),
            Begin::InProgress { retry_after } => {
                (IN_PROGRESS, 0, -1, None, i64::try_from(retry_after.as_millis()).unwrap_or(i64::MAX))
            }
            Begin::Mismatch => (MISMATCH, 0, -1, None, -1),
        };
        let response: JObject<'_> = match response {
            Some(bytes) => env.byte_array_from_slice(&bytes).or_backend()?.into(),
            None => JObject::null(),
        };
        let begin = env.call_static_method(
            "io/polylock/Idempotency",
            "begun",
            "(IJJ[BJ)Lio/polylock/Idempotency$Begin;",
            &[
                JValue::Int(outcome),
                JValue::Long(ticket),
                JValue::Long(token),
                JValue::Object(&response),
                JValue::Long(retry_after_ms),
            ],
        );
        match begin.and_then(|value| value.l()) {
            Ok(begin) => Ok(begin.into_raw()),
            Err(err) => {
                // SAFETY: the ticket handle was not handed to Java.
                unsafe { free::<Ticket>(ticket) };
                Err(Error::backend(format!("a JNI call in polylock's native library failed: {err}")))
            }
        }
    })
}

/// What ended a `run` besides its response: the core's error, or the work's own exception.
enum RunError {
    Core(Error),
    Thrown(GlobalRef),
}

impl From<Error> for RunError {
    fn from(err: Error) -> Self {
        RunError::Core(err)
    }
}

/// Call the Java `Callable` `work` on this thread: its `byte[]` (or, with `json`, its JSON
/// `String`) as the codec stores it.
fn call_work(env: &mut JNIEnv<'_>, work: &JObject<'_>, json: bool) -> Result<Vec<u8>, RunError> {
    let called = env.call_method(work, "call", "()Ljava/lang/Object;", &[]);
    if env.exception_check().unwrap_or(false) {
        let thrown = env.exception_occurred().or_backend()?;
        env.exception_clear().or_backend()?;
        return Err(RunError::Thrown(env.new_global_ref(thrown).or_backend()?));
    }
    let result = called.and_then(|value| value.l()).or_backend()?;
    let expected = if json { "a JSON String" } else { "a byte[] (an empty one for no response)" };
    if result.is_null() {
        return Err(Error::invalid_argument(format!("the idempotent work returned null; return {expected}")).into());
    }
    let class = if json { "java/lang/String" } else { "[B" };
    if !env.is_instance_of(&result, class).or_backend()? {
        return Err(Error::invalid_argument(format!("the idempotent work must return {expected}")).into());
    }
    let response = if json {
        StoredResponse::Json(read_string(env, &JString::from(result), "the work's JSON")?)
    } else {
        StoredResponse::Bytes(env.convert_byte_array(JByteArray::from(result)).or_backend()?)
    };
    Ok(encode_response(&response))
}

/// The core's `run_stored` (the work returns the tagged form): the stored response on a
/// replay, else the work's (stored for later replays). `wait_ms` -1: an attempt under way is not waited for (`InProgress` at once).
#[no_mangle]
#[allow(clippy::too_many_arguments)] // one JNI signature, mirrored in Idempotency.java
pub extern "system" fn Java_io_polylock_Idempotency_nativeRun<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    namespace: JString<'l>,
    retention_ms: jlong,
    in_progress_ttl_ms: jlong,
    key: JString<'l>,
    fingerprint: JByteArray<'l>,
    wait_ms: jlong,
    json: jboolean,
    work: JObject<'l>,
) -> jobject {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let (native, idempotency) = idempotency_for(env, handle, &namespace, retention_ms, in_progress_ttl_ms)?;
        let key = read_string(env, &key, "idempotency key")?;
        let fingerprint = fingerprint_of_bytes(&read_bytes(env, &fingerprint, "fingerprint")?);
        require_object(&work, "work")?;
        let json = json != 0;
        let wait = match wait_ms {
            -1 => None,
            ms => Some(millis_or(ms, Duration::ZERO, "wait")?),
        };
        let ran = {
            let env = &mut *env;
            let work = &work;
            wait_for(
                native,
                idempotency.run_stored(&key, &fingerprint, wait, move || async move { call_work(env, work, json) }),
            )
        };
        match ran {
            Ok(stored) => match (decode_response(&stored)?, json) {
                (StoredResponse::Bytes(bytes), false) => Ok(env.byte_array_from_slice(&bytes).or_backend()?.into_raw()),
                (StoredResponse::Json(text), true) => Ok(env.new_string(text).or_backend()?.into_raw()),
                (StoredResponse::Json(_), false) => Err(Error::invalid_argument(
                    "this idempotency key's response was stored as JSON (by runJson, or another language's run \
                     with a structured result); read it with runJson",
                )),
                (StoredResponse::Bytes(_), true) => Err(Error::invalid_argument(
                    "this idempotency key's response was stored as bytes; read it with run, not runJson",
                )),
            },
            Err(RunError::Core(err)) => Err(err),
            Err(RunError::Thrown(thrown)) => {
                let thrown = env.new_local_ref(thrown.as_obj()).or_backend()?;
                env.throw(JThrowable::from(thrown)).or_backend()?;
                // The work's exception is pending, so entry() leaves it as it is.
                Err(Error::internal("the idempotent work threw"))
            }
        }
    })
}

/// The ticket calls, by `op`: 0 complete(`response`), 1 abandon, 2 extend.
const TICKET_COMPLETE: jint = 0;
const TICKET_ABANDON: jint = 1;
const TICKET_EXTEND: jint = 2;

#[no_mangle]
pub extern "system" fn Java_io_polylock_IdempotencyTicket_nativeCall<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    ticket: jlong,
    op: jint,
    response: JByteArray<'l>,
) {
    entry(&mut env, (), |env| {
        // SAFETY: Java keeps both handles alive for the call.
        let (native, ticket) = unsafe { (client(handle)?, borrow::<Ticket>(ticket, "idempotency ticket")?) };
        match op {
            TICKET_COMPLETE => {
                let response = read_bytes(env, &response, "response")?;
                wait_for(native, ticket.complete(&response))
            }
            TICKET_ABANDON => wait_for(native, ticket.abandon()),
            TICKET_EXTEND => wait_for(native, ticket.extend()),
            other => Err(Error::invalid_argument(format!("unknown ticket call {other}"))),
        }
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_IdempotencyTicket_nativeFree<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    ticket: jlong,
) {
    entry(&mut env, (), |_env| {
        // SAFETY: freed once, by the ticket's Cleaner.
        unsafe { free::<Ticket>(ticket) };
        Ok(())
    })
}

/// The codec's fingerprint of a structured payload given as JSON text (canonical, hashed).
#[no_mangle]
pub extern "system" fn Java_io_polylock_Idempotency_nativeFingerprintOfJson<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    json: JString<'l>,
) -> jbyteArray {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let json = read_string(env, &json, "JSON payload")?;
        let fingerprint = fingerprint_of_json(&json)?;
        Ok(env.byte_array_from_slice(&fingerprint).or_backend()?.into_raw())
    })
}
