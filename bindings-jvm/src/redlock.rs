//! `io.polylock.Polylock.redlock(urls, name)`: the `redlock://` URL of a list of Redis
//! servers comes from the core's one builder (`polylock::kit::redlock_url`).

use jni::objects::{JClass, JObjectArray, JString};
use jni::sys::jstring;
use jni::JNIEnv;
use polylock::Error;

use crate::entry::{entry, read_string, JniResultExt};

#[no_mangle]
pub extern "system" fn Java_io_polylock_RedLockUrl_nativeRedlockUrl<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    servers: JObjectArray<'l>,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        if servers.is_null() {
            return Err(Error::invalid_argument("the list of RedLock servers must not be null"));
        }
        let count = env.get_array_length(&servers).or_backend()?;
        let mut entries = Vec::with_capacity(count as usize);
        for i in 0..count {
            let server = JString::from(env.get_object_array_element(&servers, i).or_backend()?);
            entries.push(read_string(env, &server, "a RedLock server")?);
        }
        let url = polylock::kit::redlock_url::redlock_url(&entries)?;
        Ok(env.new_string(url).or_backend()?.into_raw())
    })
}
