//! The process-wide JVM handle and the Java callbacks (completing futures, handing on log
//! records), captured once when the JVM loads the library, and each native thread's attachment
//! to the JVM, made once and kept for the thread's life.

use std::cell::Cell;
use std::ffi::c_void;
use std::ptr;
use std::sync::OnceLock;

use jni::objects::{GlobalRef, JClass, JStaticMethodID};
use jni::sys::{jint, JNI_ERR, JNI_OK, JNI_VERSION_1_8};
use jni::{JNIEnv, JavaVM};

static VM: OnceLock<JavaVM> = OnceLock::new();
static BRIDGE: OnceLock<Bridge> = OnceLock::new();

/// `io.polylock.NativeBridge`, its static `completed(CompletableFuture, int, long, String)`,
/// `completedPair(CompletableFuture, long, long)` and `completedVersioned(CompletableFuture,
/// byte[], long, long)`, and its static `log(int, String, String, String[])`. Held as a global reference and looked up on
/// a Java thread, so worker threads (whose `FindClass` would only see the system class loader)
/// never have to find it themselves.
pub struct Bridge {
    pub class: GlobalRef,
    pub completed: JStaticMethodID,
    pub completed_pair: JStaticMethodID,
    pub completed_versioned: JStaticMethodID,
    pub log: JStaticMethodID,
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
    let completed_pair =
        env.get_static_method_id(&class, "completedPair", "(Ljava/util/concurrent/CompletableFuture;JJ)Z")?;
    let completed_versioned =
        env.get_static_method_id(&class, "completedVersioned", "(Ljava/util/concurrent/CompletableFuture;[BJJ)Z")?;
    let log = env.get_static_method_id(&class, "log", "(ILjava/lang/String;Ljava/lang/String;[Ljava/lang/String;)V")?;
    Ok(Bridge { class: env.new_global_ref(class)?, completed, completed_pair, completed_versioned, log })
}

pub fn vm() -> Option<&'static JavaVM> {
    VM.get()
}

pub fn bridge() -> Option<&'static Bridge> {
    BRIDGE.get()
}

/// Attach the calling (runtime worker) thread to the JVM as a daemon, so it never keeps the
/// JVM alive: the runtime's thread-start hook, so workers are attached before their first task.
pub fn attach_current_thread() {
    let _ = with_env(|_| ());
}

/// Run `f` with the calling thread's `JNIEnv`. A thread the JVM already knows (a Java thread
/// inside a native call) uses its own; any other thread (a runtime worker, a backend library's
/// thread) is attached once as a daemon, and its env is kept in a thread-local until the thread
/// exits, when it is detached. `None`: no JVM yet, or the thread is exiting (past its detach), or
/// attaching failed.
pub fn with_env<R>(f: impl FnOnce(&mut JNIEnv<'_>) -> R) -> Option<R> {
    let vm = vm()?;
    let raw = ATTACHED
        .try_with(|attached| {
            let cached = attached.env.get();
            if !cached.is_null() {
                return Some(cached);
            }
            if let Ok(env) = vm.get_env() {
                // Attached by the JVM itself (a Java thread): not ours to keep or to detach.
                return Some(env.get_raw());
            }
            let raw = attach_as_daemon(vm)?;
            attached.env.set(raw);
            Some(raw)
        })
        // This thread is exiting and its attachment is gone: only a JVM thread can still call.
        .unwrap_or_else(|_| vm.get_env().ok().map(|env| env.get_raw()))?;
    // SAFETY: `raw` is this thread's JNIEnv, valid while the thread stays attached, which it
    // does at least until this call returns.
    let mut env = unsafe { JNIEnv::from_raw(raw) }.ok()?;
    Some(f(&mut env))
}

fn attach_as_daemon(vm: &JavaVM) -> Option<*mut jni::sys::JNIEnv> {
    let vm = vm.get_java_vm_pointer();
    let mut env: *mut c_void = ptr::null_mut();
    // SAFETY: `vm` is the live JavaVM; AttachCurrentThreadAsDaemon is part of every JNI table.
    let status = unsafe { ((**vm).AttachCurrentThreadAsDaemon?)(vm, &mut env, ptr::null_mut()) };
    (status == JNI_OK && !env.is_null()).then_some(env.cast())
}

/// This thread's attachment, made by [`with_env`]: detached when the thread exits.
struct Attached {
    env: Cell<*mut jni::sys::JNIEnv>,
}

impl Drop for Attached {
    fn drop(&mut self) {
        if self.env.replace(ptr::null_mut()).is_null() {
            return;
        }
        if let Some(vm) = vm() {
            let vm = vm.get_java_vm_pointer();
            // SAFETY: this thread attached itself (above) and runs no Java code any more.
            if let Some(detach) = unsafe { (**vm).DetachCurrentThread } {
                unsafe { detach(vm) };
            }
        }
    }
}

thread_local! {
    static ATTACHED: Attached = const { Attached { env: Cell::new(ptr::null_mut()) } };
}
