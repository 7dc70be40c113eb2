//! Leaf-style segment IDs behind `io.polylock.SegmentIdGenerator` (Java's `RIdGenerator`):
//! the core's `SegmentGenerator`, boxed for Java to hold. IDs are waited for on the caller's
//! thread, up to the generator's wait (then `Exhausted`, with a retry-after).

use jni::objects::{JClass, JString};
use jni::sys::{jint, jlong, jlongArray};
use jni::JNIEnv;
use polylock::{SegmentGenerator, SegmentOptions};

use crate::blocking::{borrow, client, free, into_handle, long_array, unsigned, wait_for};
use crate::entry::{entry, read_string};

/// A generator of tag `name`: the core's default options when `step` is -1, else ranges of
/// exactly `step` IDs (Redisson's fixed allocation size: the adaptive step may not grow).
#[no_mangle]
pub extern "system" fn Java_io_polylock_SegmentIdGenerator_nativeNew<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    step: jlong,
) -> jlong {
    entry(&mut env, 0, |env| {
        // SAFETY: Java keeps the client handle alive for the call.
        let native = unsafe { client(handle)? };
        let name = read_string(env, &name, "ID generator name")?;
        let options = match step {
            -1 => SegmentOptions::default(),
            step => {
                let step = unsigned(step, "allocationSize")?;
                SegmentOptions { step, max_step: step, ..SegmentOptions::default() }
            }
        };
        // The generator's loader runs on the client's runtime: make it inside it.
        let generator = wait_for(native, async { native.client.segments(&name, options) })?;
        Ok(into_handle(generator))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_SegmentIdGenerator_nativeNextId<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    generator: jlong,
) -> jlong {
    entry(&mut env, 0, |_env| {
        // SAFETY: Java keeps both handles alive for the call.
        let (native, generator) = unsafe { (client(handle)?, borrow::<SegmentGenerator>(generator, "ID generator")?) };
        Ok(wait_for(native, generator.next_id())? as jlong)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_SegmentIdGenerator_nativeNextIds<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    generator: jlong,
    count: jint,
) -> jlongArray {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let count = unsigned(jlong::from(count), "count")? as usize;
        // SAFETY: Java keeps both handles alive for the call.
        let (native, generator) = unsafe { (client(handle)?, borrow::<SegmentGenerator>(generator, "ID generator")?) };
        let ids = wait_for(native, generator.next_ids(count))?;
        long_array(env, &ids)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_SegmentIdGenerator_nativeFree<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    generator: jlong,
) {
    // SAFETY: freed once, by the generator's Cleaner.
    entry(&mut env, (), |_env| {
        unsafe { free::<SegmentGenerator>(generator) };
        Ok(())
    })
}
