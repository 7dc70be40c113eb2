//! Lock calls. Acquisitions, releases and store queries run as tasks on the client's
//! runtime and complete a Java `CompletableFuture`; the Java side waits on it (blocking
//! methods) or hands it out (the *Async methods). The owner is always an explicit Java
//! thread id, so the async overloads with a threadId need nothing special.

use std::sync::Arc;
use std::time::Duration;

use jni::objects::{JClass, JObject, JString};
use jni::sys::{jboolean, jint, jlong, jstring, JNI_FALSE};
use jni::JNIEnv;
use polylock::kit::LockTarget;
use polylock::{AcquireOptions, Error, ErrorKind};
use tokio_util::sync::CancellationToken;

use crate::client::NativeClient;
use crate::complete::{Completer, Outcome};
use crate::entry::{entry, read_string, JResult, JniResultExt};

/// The lock one call is about, from the (client, name, kind, thread id) Java passes.
fn lock_for(
    env: &mut JNIEnv<'_>,
    handle: jlong,
    name: &JString<'_>,
    kind: jint,
    thread_id: jlong,
) -> JResult<LockTarget> {
    // SAFETY: Java keeps the handle alive for the call (PolylockClient's read lock).
    let native = unsafe { NativeClient::from_handle(handle)? };
    let name = read_string(env, name, "lock name")?;
    native.lock(&name, kind, thread_id)
}

pub fn runtime(handle: jlong) -> JResult<tokio::runtime::Handle> {
    // SAFETY: as in `lock_for`.
    Ok(unsafe { NativeClient::from_handle(handle)? }.runtime.handle().clone())
}

pub fn closing(handle: jlong) -> JResult<CancellationToken> {
    // SAFETY: as in `lock_for`.
    Ok(unsafe { NativeClient::from_handle(handle)? }.closing.clone())
}

/// Java's milliseconds: for a wait, -1 is forever; for a lease, -1 is the watchdog
/// (Redisson's convention). Other negatives are errors.
pub fn options(wait_ms: jlong, lease_ms: jlong) -> JResult<AcquireOptions> {
    let millis = |ms: jlong, what: &str, unset: &str| match ms {
        -1 => Ok(None),
        ms if ms < 0 => Err(Error::invalid_argument(format!("{what} must be -1 ({unset}) or at least 0, got {ms}ms"))),
        ms => Ok(Some(Duration::from_millis(ms as u64))),
    };
    Ok(AcquireOptions {
        wait: millis(wait_ms, "waitTime", "wait forever")?,
        lease: millis(lease_ms, "leaseTime", "renewed by the watchdog")?,
    })
}

/// The two forms of a wait (docs/conventions.md), as Java passes them (`waiting`): the
/// waiting form's future fails with the core's TIMEOUT when the wait runs out; the try form's
/// gets null.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Form {
    Waiting,
    Try,
}

impl Form {
    pub fn from_java(waiting: jboolean) -> Form {
        if waiting == JNI_FALSE {
            Form::Try
        } else {
            Form::Waiting
        }
    }
}

/// Start acquiring in `waiting`'s form ([`Form`]); the future gets the fencing token, or null
/// (try form) or TIMEOUT (waiting form) when the wait ran out.
/// Returns a call handle for `cancel`/`freeCall`. If the Java future was cancelled by the
/// time a hold arrives, the hold is given back, so a cancelled call never keeps the lock.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // one JNI signature, mirrored in NativeBridge.java
pub extern "system" fn Java_io_polylock_NativeBridge_acquire<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    thread_id: jlong,
    wait_ms: jlong,
    lease_ms: jlong,
    waiting: jboolean,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let lock = lock_for(env, handle, &name, kind, thread_id)?;
        let options = options(wait_ms, lease_ms)?;
        let completer = Completer::new(env, &future)?;
        let giving_back = lock.clone();
        // The Java thread releases by owner, so the hold outlives the guard.
        let acquiring = async move { lock.acquire(options).await.map(|guard| Some(guard.detach())) };
        spawn_acquisition(handle, completer, Form::from_java(waiting), acquiring, move |_token| async move {
            let _ = giving_back.release().await;
        })
    })
}

/// Run an acquisition for a Java future on the client's runtime: `acquiring` answers the
/// value Java gets (a fencing token, a permit id), or nothing (Java's null). In the try
/// `form` the core's TIMEOUT is nothing too; in the waiting form it fails the future. The call stops when Java cancels it (see
/// `cancel`), holding nothing, and fails with CONNECTION when the client closes; a hold
/// granted after the Java future was cancelled is given back by `give_back`. Returns the
/// call handle for `cancel`/`freeCall`.
pub fn spawn_acquisition<V, A, G, GF>(
    handle: jlong,
    completer: Completer,
    form: Form,
    acquiring: A,
    give_back: G,
) -> JResult<jlong>
where
    V: Acquired,
    A: std::future::Future<Output = polylock::Result<Option<V>>> + Send + 'static,
    G: FnOnce(V) -> GF + Send + 'static,
    GF: std::future::Future<Output = ()> + Send + 'static,
{
    let cancel = Arc::new(CancellationToken::new());
    let cancelled = cancel.clone();
    let closing = closing(handle)?;
    runtime(handle)?.spawn(async move {
        let acquired = tokio::select! {
            biased;
            _ = cancelled.cancelled() => {
                // The Java future is already cancelled; dropping the acquisition left nothing held.
                completer.complete(Outcome::Nothing);
                return;
            }
            _ = closing.cancelled() => {
                let closed = Error::connection("the polylock client was closed while this call waited");
                completer.complete(Outcome::Failed(closed));
                return;
            }
            acquired = acquiring => acquired,
        };
        match acquired {
            Ok(Some(value)) => {
                if !completer.complete(value.outcome()) {
                    give_back(value).await;
                }
            }
            Ok(None) => {
                completer.complete(Outcome::Nothing);
            }
            Err(err) if err.kind() == ErrorKind::Timeout && form == Form::Try => {
                completer.complete(Outcome::Nothing);
            }
            Err(err) => {
                completer.complete(Outcome::Failed(err));
            }
        }
    });
    Ok(Arc::into_raw(cancel) as jlong)
}

/// What an acquisition hands Java: a number (a fencing token, a permit count), or a permit's
/// id with its fencing token (a `long[2]`).
pub trait Acquired: Copy + Send + 'static {
    fn outcome(self) -> Outcome;
}

impl Acquired for u64 {
    fn outcome(self) -> Outcome {
        Outcome::Value(self as i64)
    }
}

impl Acquired for (u64, u64) {
    fn outcome(self) -> Outcome {
        Outcome::Pair(self.0 as i64, self.1 as i64)
    }
}

/// Stop a pending acquisition (interrupt, or the Java future cancelled).
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_cancel<'l>(mut env: JNIEnv<'l>, _class: JClass<'l>, call: jlong) {
    entry(&mut env, (), |_env| {
        if call != 0 {
            // SAFETY: a call handle from `acquire` stays valid until `freeCall`; Java never
            // cancels after freeing (NativeCall's state).
            let cancel = unsafe { &*(call as *const CancellationToken) };
            cancel.cancel();
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_freeCall<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    call: jlong,
) {
    entry(&mut env, (), |_env| {
        if call != 0 {
            // SAFETY: each call handle from `acquire` is freed once, by NativeCall.
            drop(unsafe { Arc::from_raw(call as *const CancellationToken) });
        }
        Ok(())
    })
}

/// Give back one hold of `thread_id`; the future gets null, or fails with NOT_OWNER
/// (IllegalMonitorStateException) or LOST.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_release<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    thread_id: jlong,
    future: JObject<'l>,
) {
    entry(&mut env, (), |env| {
        let lock = lock_for(env, handle, &name, kind, thread_id)?;
        let completer = Completer::new(env, &future)?;
        // SAFETY: as in `lock_for`.
        let hold_ends = unsafe { NativeClient::from_handle(handle)? }.hold_ends.clone();
        runtime(handle)?.spawn(async move {
            let released = lock.release().await;
            hold_ends.released(&lock, thread_id as u64);
            completer.complete(match released {
                Ok(()) => Outcome::Nothing,
                Err(err) => Outcome::Failed(err),
            });
        });
        Ok(())
    })
}

/// The store queries of NativeBridge: QUERY_IS_LOCKED (1/0), QUERY_REMAINING (ms; -2 when
/// free, -1 when held without expiry, as Redis's PTTL) and QUERY_FORCE_UNLOCK (1/0).
const QUERY_IS_LOCKED: jint = 0;
const QUERY_REMAINING: jint = 1;
const QUERY_FORCE_UNLOCK: jint = 2;

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_query<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    query: jint,
    future: JObject<'l>,
) {
    entry(&mut env, (), |env| {
        let lock = lock_for(env, handle, &name, kind, 0)?;
        if !(QUERY_IS_LOCKED..=QUERY_FORCE_UNLOCK).contains(&query) {
            return Err(Error::invalid_argument(format!("unknown query code {query}")));
        }
        let completer = Completer::new(env, &future)?;
        runtime(handle)?.spawn(async move {
            let answer = match query {
                QUERY_IS_LOCKED => lock.is_locked().await.map(i64::from),
                QUERY_REMAINING => lock.remaining_lease().await.map(|left| match left {
                    None => -2,
                    Some(Duration::MAX) => -1,
                    Some(left) => i64::try_from(left.as_millis()).unwrap_or(i64::MAX),
                }),
                _ => lock.force_unlock().await.map(i64::from),
            };
            completer.complete(match answer {
                Ok(value) => Outcome::Value(value),
                Err(err) => Outcome::Failed(err),
            });
        });
        Ok(())
    })
}

/// How many times `thread_id` holds the lock (this client's own record; no round trip).
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_holdCount<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    thread_id: jlong,
) -> jint {
    entry(&mut env, 0, |env| {
        let lock = lock_for(env, handle, &name, kind, thread_id)?;
        Ok(jint::try_from(lock.hold_count()).unwrap_or(jint::MAX))
    })
}

/// The fencing token of `thread_id`'s live hold, or -1 if it holds none.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_token<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    thread_id: jlong,
) -> jlong {
    entry(&mut env, -1, |env| {
        let lock = lock_for(env, handle, &name, kind, thread_id)?;
        Ok(lock.fencing_token().map_or(-1, |token| token as jlong))
    })
}

/// Why `thread_id`'s current hold was lost, or null while it holds nothing or holds it still.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_lostReason<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    thread_id: jlong,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let lock = lock_for(env, handle, &name, kind, thread_id)?;
        match lock.lost_watch().and_then(|watch| watch.reason()) {
            Some(reason) => Ok(env.new_string(reason.to_string()).or_backend()?.into_raw()),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

/// Complete `future` when `thread_id`'s current hold is lost: exceptionally with a LOST error
/// whose message is the reason. Completed with null instead when the hold is given back first,
/// or when Java cancels the call (`cancel`). NOT_OWNER (thrown) if the thread holds nothing.
/// Returns a call handle for `cancel`/`freeCall`.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_watchLost<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: jint,
    thread_id: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let lock = lock_for(env, handle, &name, kind, thread_id)?;
        // SAFETY: as in `lock_for`.
        let native = unsafe { NativeClient::from_handle(handle)? };
        let Some((watch, ended)) = native.hold_ends.watch(&lock, thread_id as u64) else {
            return Err(Error::not_owner(format!(
                "{} '{}' is not held by thread {thread_id} of this client, so it cannot be lost",
                if matches!(lock, LockTarget::Lock(_)) { "lock" } else { "read-write lock" },
                lock.name()
            )));
        };
        let completer = Completer::new(env, &future)?;
        let cancel = Arc::new(CancellationToken::new());
        let cancelled = cancel.clone();
        native.runtime.spawn(async move {
            let outcome = tokio::select! {
                biased;
                reason = watch.wait() => Outcome::Failed(Error::lost(reason.to_string())),
                () = cancelled.cancelled() => Outcome::Nothing,
                () = ended.cancelled() => Outcome::Nothing,
            };
            completer.complete(outcome);
        });
        Ok(Arc::into_raw(cancel) as jlong)
    })
}
