//! For the tests only: proves the panic barrier of every JNI entry point in a release build.

use jni::objects::JObject;
use jni::JNIEnv;

use crate::client::NativeClient;
use crate::complete::Completer;
use crate::entry::entry;

/// Proves the panic barrier in a release build: `NativeBridge.selfTestPanic` panics on purpose,
/// directly (the exception is thrown to the caller) or inside a runtime task (the future fails).
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_selfTestPanic<'l>(
    mut env: JNIEnv<'l>,
    _class: jni::objects::JClass<'l>,
    handle: jni::sys::jlong,
    future: JObject<'l>,
) {
    entry(&mut env, (), |env| {
        if future.is_null() {
            panic!("self-test panic at a JNI entry point");
        }
        // SAFETY: Java keeps the handle alive for the call.
        let native = unsafe { NativeClient::from_handle(handle)? };
        let completer = Completer::new(env, &future)?;
        native.runtime.spawn(async move {
            let _owned_by_the_task = completer;
            panic!("self-test panic in a runtime task");
        });
        Ok(())
    })
}
