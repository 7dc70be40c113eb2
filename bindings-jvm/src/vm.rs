//! The process-wide JVM handle and the Java callback that completes futures, both captured
//! once when the JVM loads the library.

use std::ffi::c_void;
use std::sync::OnceLock;

use jni::objects::{GlobalRef, JClass, JStaticMethodID};
use jni::sys::{jint, JNI_ERR, JNI_VERSION_1_8};
use jni::{JNIEnv, JavaVM};

static VM: OnceLock<JavaVM> = OnceLock::new();
static BRIDGE: OnceLock<Bridge> = OnceLock::new();

/// `io.polylock.NativeBridge` and its static `completed(CompletableFuture, int, long, String)`.
/// Held as a global reference and looked up on a Java thread, so worker threads (whose
/// `FindClass` would only see the system class loader) never have to find it themselves.
pub struct Bridge {
    pub class: GlobalRef,
    pub completed: JStaticMethodID,
}

/// Called by the JVM from `System.load`, on the thread (and class loader) of NativeBridge.
///
/// # Safety
/// `vm` is the JavaVM pointer the JVM passes to every library it loads.
#[no_mangle]
pub unsafe extern "system" fn JNI_OnLoad(vm: *mut jni::sys::JavaVM, _reserved: *mut c_void) -> jint {
    let loaded = std::panic::catch_unwind(|| {
        // SAFETY: the JVM hands us a valid pointer for the life of the process.
        let vm = unsafe { JavaVM::from_raw(vm) }.ok()?;
        let mut env = vm.get_env().ok()?;
        let bridge = load_bridge(&mut env).ok()?;
        let _ = BRIDGE.set(bridge);
        let _ = VM.set(vm);
        Some(())
    });
    match loaded {
        Ok(Some(())) => JNI_VERSION_1_8,
        _ => JNI_ERR,
    }
}

fn load_bridge(env: &mut JNIEnv<'_>) -> jni::errors::Result<Bridge> {
    let class: JClass<'_> = env.find_class("io/polylock/NativeBridge")?;
    let completed = env.get_static_method_id(
        &class,
        "completed",
        "(Ljava/util/concurrent/CompletableFuture;IJLjava/lang/String;)Z",
    )?;
    Ok(Bridge { class: env.new_global_ref(class)?, completed })
}

pub fn vm() -> Option<&'static JavaVM> {
    VM.get()
}

pub fn bridge() -> Option<&'static Bridge> {
    BRIDGE.get()
}

/// Attach the calling (runtime worker) thread to the JVM as a daemon, so it never keeps the
/// JVM alive. The jni crate detaches it when the thread exits.
pub fn attach_current_thread() {
    if let Some(vm) = vm() {
        let _ = vm.attach_current_thread_as_daemon();
    }
}
