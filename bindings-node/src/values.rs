//! `Value`: a named value written by compare-and-set on a version that only grows, or
//! fenced by a lock's token (the core's `Value`). Bytes are Buffers (a string is taken as
//! its UTF-8), versions and tokens BigInts. Failures carry their details as properties:
//! `current` / `currentVersion` on `POLYLOCK_CONFLICT`, `winningToken` on `POLYLOCK_FENCED`.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use polylock::VersionedValue as CoreVersioned;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::convert::u64_from_number_or_bigint;
use crate::errors::{detailed, to_napi, Detailed, IntoNapiResult};
use crate::settle;

/// Bytes from a Buffer (or any Uint8Array) or a string (its UTF-8).
pub fn bytes_of(value: Either<Buffer, String>) -> Vec<u8> {
    match value {
        Either::A(buffer) => buffer.to_vec(),
        Either::B(text) => text.into_bytes(),
    }
}

#[napi(object, object_from_js = false)]
pub struct VersionedValue {
    pub value: Buffer,
    /// Grows on every write of the name (compare it for equality only).
    pub version: BigInt,
    /// The highest fencing token the value has accepted, once written fenced; else `null`.
    #[napi(ts_type = "bigint | null")]
    pub fencing_token: Either<BigInt, Null>,
}

impl From<CoreVersioned> for VersionedValue {
    fn from(found: CoreVersioned) -> Self {
        VersionedValue {
            value: found.value.into(),
            version: BigInt::from(found.version),
            fencing_token: found.fencing_token.map_or(Either::B(Null), |token| Either::A(BigInt::from(token))),
        }
    }
}

#[napi]
pub struct Value {
    value: polylock::Value,
}

impl Value {
    pub fn new(value: polylock::Value) -> Self {
        Value { value }
    }
}

#[napi]
impl Value {
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.value.name().to_string()
    }

    /// The value, its version and its fencing token; `null` if there is none.
    #[napi(ts_return_type = "Promise<VersionedValue | null>")]
    pub fn get<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Detailed<Option<VersionedValue>>>> {
        let value = self.value.clone();
        settle::spawn(env, async move { detailed(value.get().await.map(|found| found.map(VersionedValue::from))) })
    }

    /// Create the value; its first version. Rejects with `POLYLOCK_CONFLICT` (with `current`
    /// and `currentVersion`) if it exists.
    #[napi(ts_args_type = "value: Buffer | Uint8Array | string", ts_return_type = "Promise<bigint>")]
    pub fn create<'env>(
        &self,
        env: &'env Env,
        value: Either<Buffer, String>,
    ) -> Result<PromiseRaw<'env, Detailed<BigInt>>> {
        let (handle, bytes) = (self.value.clone(), bytes_of(value));
        settle::spawn(env, async move { detailed(handle.create(&bytes).await.map(BigInt::from)) })
    }

    /// Replace the value if it is still at `version`; the new version. Rejects with
    /// `POLYLOCK_CONFLICT`, carrying `current` and `currentVersion`, if someone wrote first.
    #[napi(
        ts_args_type = "version: bigint | number, value: Buffer | Uint8Array | string",
        ts_return_type = "Promise<bigint>"
    )]
    pub fn compare_and_set<'env>(
        &self,
        env: &'env Env,
        version: Either<f64, BigInt>,
        value: Either<Buffer, String>,
    ) -> Result<PromiseRaw<'env, Detailed<BigInt>>> {
        let version = u64_from_number_or_bigint("version", version)?;
        let (handle, bytes) = (self.value.clone(), bytes_of(value));
        settle::spawn(env, async move { detailed(handle.compare_and_set(version, &bytes).await.map(BigInt::from)) })
    }

    /// Remove the value if it is still at `version`, else `POLYLOCK_CONFLICT`.
    #[napi(ts_args_type = "version: bigint | number", ts_return_type = "Promise<void>")]
    pub fn delete<'env>(&self, env: &'env Env, version: Either<f64, BigInt>) -> Result<PromiseRaw<'env, Detailed<()>>> {
        let version = u64_from_number_or_bigint("version", version)?;
        let handle = self.value.clone();
        settle::spawn(env, async move { detailed(handle.delete(version).await) })
    }

    /// Write if `token` (a guard's `fencingToken`) is at least the highest token this value
    /// has accepted; the new version. Rejects with `POLYLOCK_FENCED` (with `winningToken`)
    /// if a later lock holder has written.
    #[napi(
        ts_args_type = "token: bigint | number, value: Buffer | Uint8Array | string",
        ts_return_type = "Promise<bigint>"
    )]
    pub fn write_fenced<'env>(
        &self,
        env: &'env Env,
        token: Either<f64, BigInt>,
        value: Either<Buffer, String>,
    ) -> Result<PromiseRaw<'env, Detailed<BigInt>>> {
        let token = u64_from_number_or_bigint("token", token)?;
        let (handle, bytes) = (self.value.clone(), bytes_of(value));
        settle::spawn(env, async move { detailed(handle.write_fenced(token, &bytes).await.map(BigInt::from)) })
    }

    /// @internal The native watch behind `watch()` (index.js makes it an async iterator).
    #[napi(js_name = "watchNative", skip_typescript)]
    pub fn watch_native<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ValueChanges>> {
        let value = self.value.clone();
        settle::spawn(env, async move {
            let watch = value.watch().await.into_napi()?;
            Ok(ValueChanges { watch: Arc::new(tokio::sync::Mutex::new(Some(watch))), closed: CancellationToken::new() })
        })
    }
}

/// One step of a watched value: its new state (`null`: deleted), or `ended` once the watch
/// is closed.
#[napi(object, object_from_js = false)]
pub struct ValueChange {
    pub ended: bool,
    pub value: Option<VersionedValue>,
}

/// @internal Each new state of a value, one `next()` at a time; `close()` ends it.
#[napi]
pub struct ValueChanges {
    /// `None` once closed (or failed): the core's watch is dropped.
    watch: Arc<tokio::sync::Mutex<Option<polylock::ValueWatch>>>,
    closed: CancellationToken,
}

const WATCH_ENDED: ValueChange = ValueChange { ended: true, value: None };

#[napi]
impl ValueChanges {
    /// The next state, or `{ ended: true }` once the watch is closed. Rejects with the
    /// watch's error (`POLYLOCK_CONNECTION` once the client closed), which ends it.
    #[napi(ts_return_type = "Promise<ValueChange>")]
    pub fn next<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ValueChange>> {
        let (watch, closed) = (self.watch.clone(), self.closed.clone());
        settle::spawn(env, async move {
            let mut watch = tokio::select! {
                biased;
                () = closed.cancelled() => return Ok(WATCH_ENDED),
                watch = watch.lock() => watch,
            };
            let changed = match watch.as_mut() {
                None => return Ok(WATCH_ENDED),
                Some(stream) => tokio::select! {
                    biased;
                    () = closed.cancelled() => return Ok(WATCH_ENDED),
                    changed = stream.changed() => changed,
                },
            };
            match changed {
                Ok(state) => Ok(ValueChange { ended: false, value: state.map(VersionedValue::from) }),
                Err(err) => {
                    *watch = None;
                    Err(to_napi(err))
                }
            }
        })
    }

    /// End the watch: a pending `next()` resolves `{ ended: true }`, and so does every later one.
    #[napi]
    pub fn close(&self) {
        self.closed.cancel();
        let watch = self.watch.clone();
        // Dropped on the runtime once a pending next() has let go of it.
        napi::bindgen_prelude::spawn(async move {
            watch.lock().await.take();
        });
    }
}
