//! The native half of the npm package `polylock`: napi-rs classes over the core that only
//! translate types, errors and ownership. `index.js` adds what is idiomatic in JavaScript
//! (`PolylockError`, `Symbol.asyncDispose`, `withLock`, AbortSignal glue, the `lost`
//! Promise); no lock logic lives on either side of this line.

mod cancel;
mod client;
mod convert;
mod election;
mod errors;
mod guard;
mod http_idempotency;
mod idempotency;
mod latch;
mod leased_snowflake;
mod lock;
mod multi_lock;
mod observe;
mod redlock;
mod runtime;
mod rw_lock;
mod segment;
mod semaphore;
mod settle;
mod snowflake;
mod uuid_ulid;
mod values;

pub use cancel::AcquireCancel;
pub use client::{connect, Client, LockOptions, SemaphoreOptions};
pub use election::{CampaignOptions, Election, Leader, LeaderChange, LeaderChanges, Leadership};
pub use errors::error_codes;
pub use guard::Guard;
pub use http_idempotency::{
    decode_http_response, encode_http_response, http_idempotency_fingerprint, http_idempotency_key_of,
    http_idempotency_key_problem, http_idempotency_stores, http_refusal_response, HttpIdempotencyRules, HttpResponse,
};
pub use idempotency::{decode_run_response, throw_run_error, BeginResult, Idempotency, IdempotencyOptions, Ticket};
pub use latch::Latch;
pub use leased_snowflake::{LeasedSnowflake, LeasedSnowflakeOptions, SnowflakeLayoutOptions};
pub use lock::{AcquireOptions, Lock};
pub use multi_lock::{MultiGuard, MultiLock, MultiLockPartOptions, PartToken};
pub use observe::{
    log_level, log_records_dropped, metrics_enabled, metrics_json, prometheus_text, set_log_level, set_logger,
    set_metrics_enabled, take_env_log_warning, LogRecord,
};
pub use redlock::redlock_url;
pub use rw_lock::ReadWriteLock;
pub use segment::{Segment, SegmentOptions};
pub use semaphore::Semaphore;
pub use snowflake::{parse_snowflake, Snowflake, SnowflakeOptions, SnowflakeParts};
pub use uuid_ulid::{
    ulid, ulid_batch, ulid_timestamp_ms, ulid_to_uuid, uuid7, uuid7_batch, uuid7_timestamp_ms, uuid_to_ulid,
};
pub use values::{Value, VersionedValue};

/// The longest lock name the core accepts, in bytes.
#[napi_derive::napi]
pub const MAX_NAME_LEN: u32 = polylock::MAX_NAME_LEN as u32;

/// The URL `connect()` uses when neither the caller nor `$POLYLOCK_URL` names one.
#[napi_derive::napi]
pub const DEFAULT_URL: &str = polylock::url::DEFAULT_URL;

/// polylock's version, the same in every language (the workspace's, in the root Cargo.toml).
#[napi_derive::napi]
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The addon's own allocations (futures, tasks, Redis command buffers) go to mimalloc: a lock
/// call allocates and frees a few dozen small blocks across threads, and glibc's malloc made
/// that about a sixth of the whole process's CPU per lock+unlock pair (perf, on Redis).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
