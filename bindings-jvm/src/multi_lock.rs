//! Multi-locks behind `io.polylock.MultiLock` (Redisson's `getMultiLock(RLock...)`): the
//! core's `MultiLock` over the parts Java names (each lock's name and kind code), owned by a
//! Java thread id as single locks are. Canonical order, one deadline for the whole wait and
//! giving back every part taken when the wait fails are the core's. Acquisitions complete a
//! Java future, as single locks' do.

use jni::objects::{JClass, JIntArray, JObject, JObjectArray, JString};
use jni::sys::{jboolean, jlong, jlongArray};
use jni::JNIEnv;
use polylock::{Error, MultiLock};

use crate::blocking::{client, long_array};
use crate::complete::{Completer, Outcome};
use crate::entry::{entry, read_string, JResult, JniResultExt};
use crate::lock::{options, runtime, spawn_acquisition, Form};
use crate::target::multi_lock_part;

/// The multi-lock over `names[i]` of kind code `kinds[i]`, owned by `thread_id`.
fn multi_lock_for(
    env: &mut JNIEnv<'_>,
    handle: jlong,
    names: &JObjectArray<'_>,
    kinds: &JIntArray<'_>,
    thread_id: jlong,
) -> JResult<(MultiLock, Vec<(String, i32)>)> {
    // SAFETY: Java keeps the client handle alive for the call (PolylockClient's read lock).
    let native = unsafe { client(handle)? };
    if names.is_null() || kinds.is_null() {
        return Err(Error::invalid_argument("a multi-lock needs its locks' names and kinds"));
    }
    let count = env.get_array_length(names).or_backend()?;
    if env.get_array_length(kinds).or_backend()? != count {
        return Err(Error::invalid_argument("a multi-lock needs one kind per name"));
    }
    let mut kind_codes = vec![0; count as usize];
    env.get_int_array_region(kinds, 0, &mut kind_codes).or_backend()?;
    let mut parts = Vec::with_capacity(count as usize);
    let mut part_names = Vec::with_capacity(count as usize);
    for (i, kind) in kind_codes.into_iter().enumerate() {
        let name = JString::from(env.get_object_array_element(names, i as i32).or_backend()?);
        let name = read_string(env, &name, "lock name")?;
        parts.push(multi_lock_part(&name, kind)?);
        part_names.push((name, kind));
    }
    let multi = native.client.multi_lock_of(parts)?.with_local_id(thread_id as u64);
    Ok((multi, part_names))
}

/// Check the parts up front, so `getMultiLock` fails where it is called.
#[no_mangle]
pub extern "system" fn Java_io_polylock_MultiLock_nativeCheck<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    names: JObjectArray<'l>,
    kinds: JIntArray<'l>,
) {
    entry(&mut env, (), |env| multi_lock_for(env, handle, &names, &kinds, 0).map(drop))
}

/// Start taking every part; the future gets the number of parts, or null when the one wait
/// ran out (nothing held). Returns a call handle for `NativeBridge.cancel`/`freeCall`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // one JNI signature, mirrored in MultiLock.java
pub extern "system" fn Java_io_polylock_MultiLock_nativeAcquire<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    names: JObjectArray<'l>,
    kinds: JIntArray<'l>,
    thread_id: jlong,
    wait_ms: jlong,
    lease_ms: jlong,
    future: JObject<'l>,
) -> jlong {
    entry(&mut env, 0, |env| {
        let (multi, _) = multi_lock_for(env, handle, &names, &kinds, thread_id)?;
        let options = options(wait_ms, lease_ms)?;
        let completer = Completer::new(env, &future)?;
        let giving_back = multi.clone();
        // The Java thread releases by owner, so the holds outlive the guard.
        let acquiring = async move { multi.acquire_with(options).await.map(|guard| Some(guard.detach().len() as u64)) };
        spawn_acquisition(handle, completer, Form::Try, acquiring, move |_| async move {
            let _ = giving_back.release().await;
        })
    })
}

/// Give back one hold of every part by `thread_id`; the future gets null, or fails with the
/// first part's failure (NOT_OWNER, LOST) after every part was released.
#[no_mangle]
pub extern "system" fn Java_io_polylock_MultiLock_nativeRelease<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    names: JObjectArray<'l>,
    kinds: JIntArray<'l>,
    thread_id: jlong,
    future: JObject<'l>,
) {
    entry(&mut env, (), |env| {
        let (multi, parts) = multi_lock_for(env, handle, &names, &kinds, thread_id)?;
        // SAFETY: Java keeps the client handle alive for the call.
        let native = unsafe { client(handle)? };
        let targets =
            parts.iter().map(|(name, kind)| native.lock(name, *kind, thread_id)).collect::<JResult<Vec<_>>>()?;
        let hold_ends = native.hold_ends.clone();
        let completer = Completer::new(env, &future)?;
        runtime(handle)?.spawn(async move {
            let released = multi.release().await;
            // The parts' holds may end here: their lost waits (`RLock.onLost`) end with them.
            for target in &targets {
                hold_ends.released(target, thread_id as u64);
            }
            completer.complete(match released {
                Ok(()) => Outcome::Nothing,
                Err(err) => Outcome::Failed(err),
            });
        });
        Ok(())
    })
}

/// Whether `thread_id` holds every part (none lost); this client's own record.
#[no_mangle]
pub extern "system" fn Java_io_polylock_MultiLock_nativeIsHeld<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    names: JObjectArray<'l>,
    kinds: JIntArray<'l>,
    thread_id: jlong,
) -> jboolean {
    entry(&mut env, 0, |env| {
        let (multi, _) = multi_lock_for(env, handle, &names, &kinds, thread_id)?;
        Ok(jboolean::from(multi.is_held()))
    })
}

/// The fencing token of `thread_id`'s hold of each part, in the order Java listed them
/// (-1 for a part it does not hold).
#[no_mangle]
pub extern "system" fn Java_io_polylock_MultiLock_nativeTokens<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    names: JObjectArray<'l>,
    kinds: JIntArray<'l>,
    thread_id: jlong,
) -> jlongArray {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let (multi, parts) = multi_lock_for(env, handle, &names, &kinds, thread_id)?;
        let names: Vec<String> = parts.into_iter().map(|(name, _)| name).collect();
        let held = multi.fencing_tokens();
        let tokens: Vec<u64> = names
            .iter()
            .map(|name| held.iter().find(|(part, _)| part == name).and_then(|(_, token)| *token).unwrap_or(u64::MAX))
            .collect();
        long_array(env, &tokens)
    })
}
