//! UUIDv7 and ULID behind `io.polylock.Ids`: one core generator of each per process, so every
//! Java thread's IDs are increasing. 128 bits cross as `{most, least}` significant longs, as
//! `java.util.UUID` holds them.

use jni::objects::{JClass, JString};
use jni::sys::{jlong, jlongArray, jstring};
use jni::JNIEnv;
use polylock::id::{format_ulid, parse_ulid, uuid7_timestamp_ms};
use polylock::kit::ids as process_ids;

use crate::entry::{entry, read_string, JResult, JniResultExt};

fn halves(value: u128) -> [jlong; 2] {
    [(value >> 64) as u64 as jlong, value as u64 as jlong]
}

fn joined(most: jlong, least: jlong) -> u128 {
    ((most as u64 as u128) << 64) | least as u64 as u128
}

fn long_pair(env: &mut JNIEnv<'_>, value: u128) -> JResult<jlongArray> {
    let array = env.new_long_array(2).or_backend()?;
    env.set_long_array_region(&array, 0, &halves(value)).or_backend()?;
    Ok(array.into_raw())
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_uuid7Next<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
) -> jlongArray {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let value = process_ids::uuid7()?;
        long_pair(env, value)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_uuid7TimestampMs<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    most: jlong,
    least: jlong,
) -> jlong {
    entry(&mut env, 0, |_env| Ok(uuid7_timestamp_ms(joined(most, least))? as jlong))
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_ulidNext<'l>(mut env: JNIEnv<'l>, _class: JClass<'l>) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let text = format_ulid(process_ids::ulid()?);
        Ok(env.new_string(text).or_backend()?.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_ulidParse<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    text: JString<'l>,
) -> jlongArray {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let text = read_string(env, &text, "ulid")?;
        let value = parse_ulid(&text)?;
        long_pair(env, value)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_ulidFormat<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    most: jlong,
    least: jlong,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        Ok(env.new_string(format_ulid(joined(most, least))).or_backend()?.into_raw())
    })
}
