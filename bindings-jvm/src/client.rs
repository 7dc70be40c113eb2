//! `NativeBridge.connect/close/clientId`: a core client and the runtime it runs on. Java
//! holds the pair as an opaque `long`, and guarantees no call uses it once `close` began
//! (PolylockClient's read-write lock).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use jni::objects::{JClass, JString};
use jni::sys::{jlong, jstring};
use jni::JNIEnv;
use polylock::kit::runtime::{self, Workers, CLOSE_LIMIT};
use polylock::kit::LockTarget;
use polylock::{Client, Error, LostWatch};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use crate::entry::{entry, read_string, JResult, JniResultExt};
use crate::target::lock_target;
use crate::vm::attach_current_thread;

pub struct NativeClient {
    pub runtime: Runtime,
    pub client: Client,
    /// Cancelled when close begins: pending acquisitions stop (holding nothing) and fail with
    /// CONNECTION, rather than taking the locks close is giving back.
    pub closing: CancellationToken,
    /// Ends the lost waits of holds their owners gave back (`NativeBridge.watchLost`).
    pub hold_ends: Arc<HoldEnds>,
}

/// A hold's lost latch never fires once its owner gave the hold back, so a wait for its loss
/// (`RLock.onLost()`) would last as long as the client. Java releases by owner, with no guard
/// whose release could end that wait; this ends it instead: one token per owner's hold of a
/// lock, cancelled by the release after which the owner holds it no more.
#[derive(Default)]
pub struct HoldEnds(Mutex<HashMap<(String, &'static str, u64), CancellationToken>>);

impl HoldEnds {
    fn key(target: &LockTarget, owner: u64) -> (String, &'static str, u64) {
        (target.name().to_string(), target.kind_name(), owner)
    }

    /// The lost latch of `owner`'s current hold of `target` (`target` owned by `owner`), with
    /// the token cancelled when that hold is given back; `None` if it holds nothing.
    pub fn watch(&self, target: &LockTarget, owner: u64) -> Option<(LostWatch, CancellationToken)> {
        let mut ends = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let watch = target.lost_watch()?;
        let end = ends.entry(Self::key(target, owner)).or_default();
        if end.is_cancelled() {
            *end = CancellationToken::new();
        }
        Some((watch, end.clone()))
    }

    /// After a release by `owner` (whatever its outcome): once it holds `target` no more, the
    /// waits for its hold's loss end.
    pub fn released(&self, target: &LockTarget, owner: u64) {
        let mut ends = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Most releases have no lost wait to end: they cost a look at an empty map.
        if ends.is_empty() || target.lost_watch().is_some() {
            return;
        }
        if let Some(end) = ends.remove(&Self::key(target, owner)) {
            end.cancel();
        }
    }
}

impl NativeClient {
    /// The client behind a handle from `connect`.
    ///
    /// # Safety
    /// `handle` is 0 or came from `connect` and has not been passed to `close`.
    pub unsafe fn from_handle<'a>(handle: jlong) -> JResult<&'a NativeClient> {
        // SAFETY: per the contract above, a non-zero handle points to a live NativeClient.
        unsafe { (handle as *const NativeClient).as_ref() }
            .ok_or_else(|| Error::connection("this polylock client is closed; connect again"))
    }

    /// The lock `name` of kind code `kind`, owned by `thread_id` of this client.
    pub fn lock(&self, name: &str, kind: i32, thread_id: jlong) -> JResult<LockTarget> {
        lock_target(&self.client, name, kind, thread_id as u64)
    }
}

/// The kit's runtime with a worker per core: every Java call is a future handed to it. Its
/// threads attach to the JVM once, to complete those futures.
fn new_runtime() -> JResult<Runtime> {
    runtime::new_runtime(Workers::OnePerCore, Some(attach_current_thread))
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_connect<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    url: JString<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let url = read_string(env, &url, "url")?;
        let runtime = new_runtime()?;
        let client = runtime.block_on(Client::connect(&url))?;
        Ok(Box::into_raw(Box::new(NativeClient {
            runtime,
            client,
            closing: CancellationToken::new(),
            hold_ends: Arc::default(),
        })) as jlong)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_close<'l>(mut env: JNIEnv<'l>, _class: JClass<'l>, handle: jlong) {
    entry(&mut env, (), |_env| {
        if handle == 0 {
            return Ok(());
        }
        // SAFETY: Java passes each handle from `connect` to `close` once, and no call after.
        let native = unsafe { Box::from_raw(handle as *mut NativeClient) };
        let NativeClient { runtime, client, closing, .. } = *native;
        closing.cancel();
        // Pending calls' tasks are dropped when the runtime stops, failing their futures.
        runtime::close_and_stop(runtime, &client, CLOSE_LIMIT);
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_clientId<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: Java keeps the handle alive for the call.
        let native = unsafe { NativeClient::from_handle(handle)? };
        Ok(env.new_string(native.client.id().to_string()).or_backend()?.into_raw())
    })
}

/// Check a lock name (and kind code) up front, so `getLock("")` fails where it is called.
#[no_mangle]
pub extern "system" fn Java_io_polylock_NativeBridge_checkLock<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
    kind: i32,
) {
    entry(&mut env, (), |env| {
        // SAFETY: Java keeps the handle alive for the call.
        let native = unsafe { NativeClient::from_handle(handle)? };
        let name = read_string(env, &name, "lock name")?;
        native.lock(&name, kind, 0).map(drop)
    })
}
