//! Versioned values behind `io.polylock.VersionedValue`: the core's `Value` per call (a
//! handle on a name is cheap), waited for on the caller's thread. A `Conflict` or `Fenced`
//! error reaches Java with its details (entry.rs): the current value and version, or the
//! winning token.

use jni::objects::{JByteArray, JClass, JObject, JString, JValue};
use jni::sys::{jlong, jobject};
use jni::JNIEnv;
use polylock::{Error, Value};

use crate::blocking::{client, unsigned, wait_for};
use crate::client::NativeClient;
use crate::entry::{entry, read_string, JResult, JniResultExt};

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
        let Some(current) = wait_for(native, value.get())? else { return Ok(std::ptr::null_mut()) };
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
    })
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
