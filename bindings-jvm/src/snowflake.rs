//! Snowflake IDs (Twitter layout, optional custom epoch) behind `io.polylock.SnowflakeIdGenerator`.
//! IDs use 63 bits, so they are always positive as a Java `long`.

use jni::objects::JClass;
use jni::sys::{jlong, jlongArray};
use jni::JNIEnv;
use polylock::id::{Snowflake, SnowflakeLayout};
use polylock::Error;

use crate::entry::{entry, JResult, JniResultExt};

/// Twitter's widths: 41 bits of milliseconds, 10 of worker, 12 of sequence.
const TIMESTAMP_BITS: u32 = 41;
const WORKER_BITS: u32 = 10;
const SEQUENCE_BITS: u32 = 12;

/// # Safety
/// `handle` came from `snowflakeNew` and was not freed (SnowflakeIdGenerator's Cleaner frees it once).
unsafe fn generator<'a>(handle: jlong) -> JResult<&'a Snowflake> {
    // SAFETY: per the contract above.
    unsafe { (handle as *const Snowflake).as_ref() }
        .ok_or_else(|| Error::invalid_argument("the ID generator is closed"))
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_snowflakeNew<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    worker: jlong,
    epoch_ms: jlong,
) -> jlong {
    entry(&mut env, 0, |_env| {
        let worker = u64::try_from(worker)
            .map_err(|_| Error::invalid_argument(format!("worker id must not be negative, got {worker}")))?;
        Ok(Box::into_raw(Box::new(Snowflake::with_layout(layout_of(epoch_ms)?, worker)?)) as jlong)
    })
}

/// Twitter's layout (`epoch_ms` -1), or its widths counted from `epoch_ms` (Unix ms).
pub fn layout_of(epoch_ms: jlong) -> JResult<SnowflakeLayout> {
    Ok(match epoch_ms {
        -1 => SnowflakeLayout::TWITTER,
        epoch if epoch < 0 => {
            return Err(Error::invalid_argument(format!("epoch must be -1 (Twitter's) or >= 0, got {epoch}")))
        }
        epoch => SnowflakeLayout::new(epoch as u64, TIMESTAMP_BITS, WORKER_BITS, SEQUENCE_BITS)?,
    })
}

/// `{timestamp ms since the Unix epoch, worker, sequence}` of `id` in `layout`.
pub fn parts_array(env: &mut JNIEnv<'_>, layout: SnowflakeLayout, id: jlong) -> JResult<jlongArray> {
    let id = u64::try_from(id).map_err(|_| Error::invalid_argument(format!("not a snowflake ID: {id}")))?;
    let parts = layout.parse(id)?;
    let array = env.new_long_array(3).or_backend()?;
    let values = [parts.timestamp_ms as jlong, parts.worker as jlong, parts.sequence as jlong];
    env.set_long_array_region(&array, 0, &values).or_backend()?;
    Ok(array.into_raw())
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_snowflakeNext<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> jlong {
    // SAFETY: the Java object keeps the handle alive while calling.
    entry(&mut env, 0, |_env| Ok(unsafe { generator(handle)? }.next_id()? as jlong))
}

/// `{timestamp ms since the Unix epoch, worker, sequence}` of an ID of this generator's layout.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_snowflakeParse<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    id: jlong,
) -> jlongArray {
    entry(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: as in snowflakeNext.
        let layout = unsafe { generator(handle)? }.layout();
        parts_array(env, layout, id)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_snowflakeFree<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) {
    entry(&mut env, (), |_env| {
        if handle != 0 {
            // SAFETY: freed once, by the generator's Cleaner.
            drop(unsafe { Box::from_raw(handle as *mut Snowflake) });
        }
        Ok(())
    })
}
