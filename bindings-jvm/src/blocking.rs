//! Calls Java waits for on its own thread (IDs, values, idempotency steps), and the boxed
//! native objects some of them keep between calls (a segment generator, a leased Snowflake,
//! an idempotency ticket), which Java holds as an opaque `long` and frees once.

use std::future::Future;

use jni::sys::jlong;
use polylock::Error;

use crate::client::NativeClient;
use crate::entry::JResult;

/// Run `future` on the client's runtime and wait for it on the calling thread. That thread
/// may be an ordinary Java thread, one of polylock's runtime threads (a callback of a future
/// polylock completed), or a thread already inside such a wait (Java work run by an
/// idempotency `run` calling polylock again): `block_in_place` steps out of any runtime
/// context first, and is a plain call where there is none.
pub fn wait_for<F: Future>(native: &NativeClient, future: F) -> F::Output {
    let runtime = native.runtime.handle();
    tokio::task::block_in_place(|| runtime.block_on(future))
}

/// The client behind `handle`, for a call Java waits for.
///
/// # Safety
/// As [`NativeClient::from_handle`]: Java keeps the handle alive for the call.
pub unsafe fn client<'a>(handle: jlong) -> JResult<&'a NativeClient> {
    // SAFETY: per the contract above.
    unsafe { NativeClient::from_handle(handle) }
}

/// Box `value` for Java to hold as a `long`.
pub fn into_handle<T>(value: T) -> jlong {
    Box::into_raw(Box::new(value)) as jlong
}

/// The object behind a handle from [`into_handle`]; `what` names it when the handle is 0.
///
/// # Safety
/// `handle` is 0 or came from `into_handle::<T>` and was not freed.
pub unsafe fn borrow<'a, T>(handle: jlong, what: &str) -> JResult<&'a T> {
    // SAFETY: per the contract above.
    unsafe { (handle as *const T).as_ref() }.ok_or_else(|| Error::invalid_argument(format!("this {what} is closed")))
}

/// Free a handle from [`into_handle`] (0 is ignored).
///
/// # Safety
/// `handle` came from `into_handle::<T>` and is freed once (Java's Cleaner).
pub unsafe fn free<T>(handle: jlong) {
    if handle != 0 {
        // SAFETY: per the contract above.
        drop(unsafe { Box::from_raw(handle as *mut T) });
    }
}

/// A Java `long` that must not be negative (a count, a version, a token).
pub fn unsigned(value: jlong, what: &str) -> JResult<u64> {
    u64::try_from(value).map_err(|_| Error::invalid_argument(format!("{what} must not be negative, got {value}")))
}

/// Java's `long[]` of IDs.
pub fn long_array(env: &mut jni::JNIEnv<'_>, values: &[u64]) -> JResult<jni::sys::jlongArray> {
    use crate::entry::JniResultExt;
    let len = i32::try_from(values.len()).map_err(|_| Error::invalid_argument("too many values for a Java array"))?;
    let array = env.new_long_array(len).or_backend()?;
    let longs: Vec<jlong> = values.iter().map(|&v| v as jlong).collect();
    env.set_long_array_region(&array, 0, &longs).or_backend()?;
    Ok(array.into_raw())
}
