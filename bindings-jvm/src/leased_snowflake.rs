//! Snowflake IDs on a worker id leased from the backend, behind
//! `io.polylock.LeasedSnowflakeIdGenerator`: the core's `LeasedSnowflake`, boxed for Java to
//! hold. Leasing, renewing, the high-water mark and stopping at the lease deadline are the
//! core's; a lost lease reaches Java as a `LOST` exception from the next call.

use jni::objects::JClass;
use jni::sys::{jint, jlong, jlongArray};
use jni::JNIEnv;
use polylock::{LeasedSnowflake, SnowflakeOptions};

use crate::blocking::{borrow, client, free, into_handle, long_array, unsigned, wait_for};
use crate::entry::entry;
use crate::snowflake::{layout_of, parts_array};

const WHAT: &str = "leased Snowflake generator";

/// Lease `worker` (-1: the lowest free id) and start keeping it; the generator's handle.
#[no_mangle]
pub extern "system" fn Java_io_polylock_LeasedSnowflakeIdGenerator_nativeStart<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    worker: jlong,
    epoch_ms: jlong,
) -> jlong {
    entry(&mut env, 0, |_env| {
        // SAFETY: Java keeps the client handle alive for the call.
        let native = unsafe { client(handle)? };
        let worker = match worker {
            -1 => None,
            worker => Some(unsigned(worker, "workerId")?),
        };
        let options = SnowflakeOptions { layout: layout_of(epoch_ms)?, ..SnowflakeOptions::default() };
        let generator = wait_for(native, native.client.snowflake(worker, options))?;
        Ok(into_handle(generator))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_LeasedSnowflakeIdGenerator_nativeNextId<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    generator: jlong,
) -> jlong {
    entry(&mut env, 0, |_env| {
        // SAFETY: Java keeps both handles alive for the call.
        let (native, generator) = unsafe { (client(handle)?, borrow::<LeasedSnowflake>(generator, WHAT)?) };
        Ok(wait_for(native, generator.next_id())? as jlong)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_LeasedSnowflakeIdGenerator_nativeNextIds<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    generator: jlong,
    count: jint,
) -> jlongArray {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let count = unsigned(jlong::from(count), "count")? as usize;
        // SAFETY: Java keeps both handles alive for the call.
        let (native, generator) = unsafe { (client(handle)?, borrow::<LeasedSnowflake>(generator, WHAT)?) };
        let ids = wait_for(native, generator.next_ids(count))?;
        long_array(env, &ids)
    })
}

/// The worker id (`which` 0) or the lease's epoch (`which` 1) held now; -1 when none is
/// held (after a loss was reported, or after close).
#[no_mangle]
pub extern "system" fn Java_io_polylock_LeasedSnowflakeIdGenerator_nativeLease<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    generator: jlong,
    which: jint,
) -> jlong {
    entry(&mut env, -1, |_env| {
        // SAFETY: Java keeps both handles alive for the call.
        let (native, generator) = unsafe { (client(handle)?, borrow::<LeasedSnowflake>(generator, WHAT)?) };
        let held = match which {
            0 => wait_for(native, generator.worker_id()),
            _ => wait_for(native, generator.epoch()),
        };
        Ok(held.map_or(-1, |value| value as jlong))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_LeasedSnowflakeIdGenerator_nativeParse<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    generator: jlong,
    id: jlong,
) -> jlongArray {
    entry(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: Java keeps the generator handle alive for the call.
        let layout = unsafe { borrow::<LeasedSnowflake>(generator, WHAT)? }.layout();
        parts_array(env, layout, id)
    })
}

/// Give the worker id back (its mark written down to the last ID issued).
#[no_mangle]
pub extern "system" fn Java_io_polylock_LeasedSnowflakeIdGenerator_nativeClose<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    generator: jlong,
) {
    entry(&mut env, (), |_env| {
        // SAFETY: Java keeps both handles alive for the call.
        let (native, generator) = unsafe { (client(handle)?, borrow::<LeasedSnowflake>(generator, WHAT)?) };
        wait_for(native, generator.close())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_LeasedSnowflakeIdGenerator_nativeFree<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    generator: jlong,
) {
    entry(&mut env, (), |_env| {
        // SAFETY: freed once, by the generator's Cleaner.
        unsafe { free::<LeasedSnowflake>(generator) };
        Ok(())
    })
}
