//! The operator's calls on `io.polylock.PolylockClient` (`status`, `list`, `forceUnlock`):
//! the core's `Inspector`, translated. Status and list cross as the kit's one JSON shape
//! (`polylock::kit::inspect_json`, what `polylock status --json` / `list --json` print), which
//! Java reads into `LockStatus` / `LockEntry`. Java waits for these on its own thread.

use jni::objects::{JClass, JString};
use jni::sys::{jboolean, jlong, jstring};
use jni::JNIEnv;
use polylock::kit::inspect_json::{list_of, status_of};
use polylock::LockKind;

use crate::blocking::{client, wait_for};
use crate::entry::{entry, read_string, JResult, JniResultExt};

/// Java's kind name, or null for the backend's default kind.
fn kind_of(env: &mut JNIEnv<'_>, kind: &JString<'_>) -> JResult<Option<LockKind>> {
    if kind.is_null() {
        return Ok(None);
    }
    Ok(Some(read_string(env, kind, "kind")?.parse()?))
}

/// The status of the mutex `name` of `kind` (null: the backend's default), as the kit's JSON.
#[no_mangle]
pub extern "system" fn Java_io_polylock_PolylockClient_nativeStatusJson<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: JString<'l>,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: Java keeps the handle alive for the call (PolylockClient's read lock).
        let native = unsafe { client(handle)? };
        let name = read_string(env, &name, "lock name")?;
        let kind = kind_of(env, &kind)?;
        let json = wait_for(native, status_of(&native.client, &name, kind))?;
        Ok(env.new_string(json).or_backend()?.into_raw())
    })
}

/// The mutexes whose name starts with `prefix`, as the kit's JSON list.
#[no_mangle]
pub extern "system" fn Java_io_polylock_PolylockClient_nativeListJson<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    prefix: JString<'l>,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: as above.
        let native = unsafe { client(handle)? };
        let prefix = read_string(env, &prefix, "prefix")?;
        let json = wait_for(native, list_of(&native.client, &prefix))?;
        Ok(env.new_string(json).or_backend()?.into_raw())
    })
}

/// Break the mutex `name` of `kind` (null: the backend's default); whether it was held.
#[no_mangle]
pub extern "system" fn Java_io_polylock_PolylockClient_nativeForceUnlock<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: JString<'l>,
) -> jboolean {
    entry(&mut env, 0, |env| {
        // SAFETY: as above.
        let native = unsafe { client(handle)? };
        let name = read_string(env, &name, "lock name")?;
        let kind = kind_of(env, &kind)?;
        Ok(jboolean::from(wait_for(native, native.client.inspect().force_unlock(&name, kind))?))
    })
}
