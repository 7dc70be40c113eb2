//! What every JNI entry point shares: panics caught, core errors thrown as Java exceptions
//! (built by `NativeBridge.error`, the one place that maps codes to Java types), Java
//! strings read with a clear error for null.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use jni::objects::{JObject, JString, JValue};
use jni::JNIEnv;
use polylock::{Error, ErrorDetails, ErrorKind};

pub type JResult<T> = Result<T, Error>;

/// The code of an error kind, as `io.polylock.ErrorCode.fromNative` reads it: the kind's
/// number in the core's one table (ErrorCodeTest checks the Java enum against it).
pub fn code(kind: ErrorKind) -> i32 {
    i32::from(kind.code())
}

/// A failed JNI call: an error of kind Backend (a pending Java exception, if any, wins).
pub trait JniResultExt<T> {
    fn or_backend(self) -> JResult<T>;
}

impl<T> JniResultExt<T> for jni::errors::Result<T> {
    fn or_backend(self) -> JResult<T> {
        self.map_err(|err| Error::backend(format!("a JNI call in polylock's native library failed: {err}")))
    }
}

/// Run one entry point's body. A core error or a panic becomes a thrown Java exception and
/// the entry point returns `on_error`, which Java never sees because the exception is pending.
pub fn entry<'l, T>(env: &mut JNIEnv<'l>, on_error: T, body: impl FnOnce(&mut JNIEnv<'l>) -> JResult<T>) -> T {
    let error = match catch_unwind(AssertUnwindSafe(|| body(env))) {
        Ok(Ok(value)) => return value,
        Ok(Err(err)) => err,
        Err(panic) => panic_error(panic),
    };
    // A Java exception already pending (say, from a JNI call) says more than ours would.
    if !env.exception_check().unwrap_or(true) {
        throw(env, &error);
    }
    on_error
}

pub fn panic_error(panic: Box<dyn Any + Send>) -> Error {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    Error::internal(format!("internal error in polylock's native library (please report it): {what}"))
}

/// What `NativeBridge.detailedError` is told an error carries (see `ErrorDetails`).
const DETAIL_CONFLICT_NO_VALUE: i32 = 1;
const DETAIL_CONFLICT: i32 = 2;
const DETAIL_FENCED: i32 = 3;
const DETAIL_RETRY_AFTER: i32 = 4;

fn throw(env: &mut JNIEnv<'_>, error: &Error) {
    let thrown = (|| -> jni::errors::Result<()> {
        let message = env.new_string(error.to_string())?;
        let exception = match error.details() {
            None => env
                .call_static_method(
                    "io/polylock/NativeBridge",
                    "error",
                    "(ILjava/lang/String;)Ljava/lang/RuntimeException;",
                    &[JValue::Int(code(error.kind())), JValue::Object(&message)],
                )?
                .l()?,
            Some(details) => {
                let (detail, bytes, number): (i32, JObject<'_>, i64) = match details {
                    ErrorDetails::Conflict { current: None } => (DETAIL_CONFLICT_NO_VALUE, JObject::null(), 0),
                    ErrorDetails::Conflict { current: Some((value, version)) } => {
                        (DETAIL_CONFLICT, env.byte_array_from_slice(value)?.into(), *version as i64)
                    }
                    ErrorDetails::Fenced { winning_token } => (DETAIL_FENCED, JObject::null(), *winning_token as i64),
                    ErrorDetails::RetryAfter { after } => {
                        (DETAIL_RETRY_AFTER, JObject::null(), i64::try_from(after.as_millis()).unwrap_or(i64::MAX))
                    }
                    _ => (0, JObject::null(), 0),
                };
                env.call_static_method(
                    "io/polylock/NativeBridge",
                    "detailedError",
                    "(ILjava/lang/String;I[BJ)Ljava/lang/RuntimeException;",
                    &[
                        JValue::Int(code(error.kind())),
                        JValue::Object(&message),
                        JValue::Int(detail),
                        JValue::Object(&bytes),
                        JValue::Long(number),
                    ],
                )?
                .l()?
            }
        };
        env.throw(jni::objects::JThrowable::from(exception))
    })();
    if thrown.is_err() && !env.exception_check().unwrap_or(true) {
        let _ = env.throw_new("java/lang/IllegalStateException", error.to_string());
    }
}

/// A Java string argument; null is an InvalidArgument error naming `what`.
pub fn read_string(env: &mut JNIEnv<'_>, value: &JString<'_>, what: &str) -> JResult<String> {
    if value.is_null() {
        return Err(Error::invalid_argument(format!("{what} must not be null")));
    }
    Ok(env.get_string(value).or_backend()?.into())
}

pub fn require_object(value: &JObject<'_>, what: &str) -> JResult<()> {
    if value.is_null() {
        return Err(Error::invalid_argument(format!("{what} must not be null")));
    }
    Ok(())
}
