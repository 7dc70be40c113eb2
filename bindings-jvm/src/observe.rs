//! Issue 23 in the JVM: the core's log records handed to SLF4J (through the static
//! `NativeBridge.log`, which picks the logger and level), and the metrics snapshots as the
//! kit's one JSON shape and Prometheus text.
//!
//! The sink runs on whichever thread logged, most often a runtime worker: it attaches that
//! thread once (as a daemon, `vm::with_env`), never lets a Java exception stay pending or
//! unwind, and drops the record when anything fails.

use std::sync::Arc;

use jni::objects::{JClass, JObject, JString};
use jni::signature::{Primitive, ReturnType};
use jni::sys::{jboolean, jstring, jvalue, JNI_FALSE, JNI_TRUE};
use jni::JNIEnv;
use polylock::kit::log_bridge::{self, LogLevel, LogRecord};
use polylock::kit::metrics_json;

use crate::client::NativeClient;
use crate::entry::{entry, read_string, JResult, JniResultExt};
use crate::vm::{bridge, with_env};

/// `level` as Java reads it: its name, `off` for none.
fn new_string(env: &mut JNIEnv<'_>, text: &str) -> JResult<jstring> {
    Ok(env.new_string(text).or_backend()?.into_raw())
}

/// Hand one record to `NativeBridge.log(level, loggerName, line, keysAndValues)`; the logger
/// name is the core's (`polylock.engine.acquire`, `polylock.deps.h2.proto`).
fn to_java(record: &LogRecord) {
    let Some(bridge) = bridge() else { return };
    let _ = with_env(|env| {
        // A Java thread inside a native call with an exception pending may not call Java:
        // the record is dropped, the caller's exception kept.
        if env.exception_check().unwrap_or(true) {
            return;
        }
        let capacity = 4 + 2 * record.fields.len() as i32;
        let sent = env.with_local_frame(capacity, |env| -> jni::errors::Result<()> {
            let target = env.new_string(record.logger_name())?;
            let line = env.new_string(record.line())?;
            let fields = env.new_object_array(2 * record.fields.len() as i32, "java/lang/String", JObject::null())?;
            for (i, (key, value)) in record.fields.iter().enumerate() {
                let key = env.new_string(key)?;
                env.set_object_array_element(&fields, 2 * i as i32, key)?;
                let value = env.new_string(value)?;
                env.set_object_array_element(&fields, 2 * i as i32 + 1, value)?;
            }
            let class = <&JClass<'_>>::from(bridge.class.as_obj());
            let args = [
                jvalue { i: record.level as i32 },
                jvalue { l: target.as_raw() },
                jvalue { l: line.as_raw() },
                jvalue { l: fields.as_raw() },
            ];
            // SAFETY: the method id was looked up on this class with exactly this signature.
            unsafe {
                env.call_static_method_unchecked(class, bridge.log, ReturnType::Primitive(Primitive::Void), &args)
            }?;
            Ok(())
        });
        // NativeBridge.log catches everything; should anything still be thrown (an error
        // building the strings), it must not stay pending on this thread: the record is lost.
        if sent.is_err() && env.exception_check().unwrap_or(false) {
            let _ = env.exception_clear();
        }
    });
}

/// The level the environment asks for (`POLYLOCK_LOG`, `DEBUG=polylock`), `null` when it says
/// nothing; InvalidArgument for a `POLYLOCK_LOG` that names no level.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_logLevelFromEnv<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| match LogLevel::from_env()? {
        None => Ok(std::ptr::null_mut()),
        Some(level) => new_string(env, LogLevel::name_of(level)),
    })
}

/// Route the core's records to SLF4J at `level` (a level name) from now on.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_logRoute<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    level: JString<'l>,
) {
    entry(&mut env, (), |env| {
        let level = LogLevel::parse(&read_string(env, &level, "level")?)?;
        log_bridge::route(Arc::new(to_java), level)
    })
}

/// Change the level records are handed on at; InvalidArgument for an unknown name.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_logSetLevel<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    level: JString<'l>,
) {
    entry(&mut env, (), |env| {
        log_bridge::set_level(LogLevel::parse(&read_string(env, &level, "level")?)?);
        Ok(())
    })
}

/// The level records are handed on at: `off`, `error`, `warn`, `info`, `debug` or `trace`.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_logLevel<'l>(mut env: JNIEnv<'l>, _class: JClass<'l>) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| new_string(env, LogLevel::name_of(log_bridge::level())))
}

/// The process's metrics (every client summed) in the kit's JSON shape.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_metricsJson<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| new_string(env, &metrics_json::process_metrics_json()))
}

/// One client's own metrics in the kit's JSON shape.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_clientMetricsJson<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jni::sys::jlong,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: Java keeps the handle alive for the call.
        let native = unsafe { NativeClient::from_handle(handle)? };
        new_string(env, &metrics_json::to_json(&native.client.metrics()))
    })
}

/// The process's metrics in Prometheus' text format 0.0.4.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_prometheusText<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| new_string(env, &polylock::metrics::prometheus_text()))
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_setMetricsEnabled<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    enabled: jboolean,
) {
    entry(&mut env, (), |_env| {
        polylock::metrics::set_enabled(enabled != JNI_FALSE);
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_metricsEnabled<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
) -> jboolean {
    entry(&mut env, JNI_FALSE, |_env| Ok(if polylock::metrics::is_enabled() { JNI_TRUE } else { JNI_FALSE }))
}
