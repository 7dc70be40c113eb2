//! The C ABI of polylock. No lock logic lives here: each function checks its arguments,
//! runs one core call on the client's runtime, and turns the result into a
//! [`polylock_status`] plus a thread-local message (`polylock_last_error()`).
//!
//! Ownership follows pthread recursive mutexes: the owner of a hold is the calling thread.
//! Beside that, `polylock_hold` is an acquisition that is its own owner, cancellable with a
//! `polylock_cancel` (for languages whose threads are no owners, such as Go). Leader
//! elections (`polylock_election`) and countdown latches (`polylock_latch`) wait the same way.
//! Logs reach a C callback through the kit's log bridge, metrics leave as the kit's JSON or
//! Prometheus text (`observe.rs`). The `Idempotency-Key` HTTP middleware's rules are the kit's,
//! for middlewares written over C (`http_idempotency.rs`, Go's net/http one).
//! The header `include/polylock.h` is generated from these sources by `build.rs`.

mod admin;
mod args;
mod boundary;
mod bytes;
mod cancel;
mod client;
mod details;
mod election;
mod hold;
mod http_idempotency;
mod idempotency;
mod idempotency_codec;
mod last_error;
mod latch;
mod lock;
mod multi_lock;
mod observe;
mod redlock;
mod runtime;
mod rwlock;
mod segment;
mod semaphore;
mod snowflake;
mod snowflake_lease;
mod status;
mod uuid_ulid;
mod value;
mod value_watch;
mod version;

pub use admin::{polylock_client_force_unlock, polylock_client_list_json, polylock_client_status_json};
pub use args::{POLYLOCK_LEASE_WATCHDOG, POLYLOCK_WAIT_FOREVER};
pub use bytes::{polylock_bytes, polylock_bytes_free};
pub use cancel::{polylock_cancel, polylock_cancel_fire, polylock_cancel_free, polylock_cancel_new};
pub use client::{
    polylock_client, polylock_client_close, polylock_client_free, polylock_client_metrics_json, polylock_connect,
};
pub use details::{polylock_details_kind, polylock_error_details, polylock_last_error_details};
pub use election::{
    polylock_client_election, polylock_election, polylock_election_campaign, polylock_election_free,
    polylock_election_leader, polylock_election_observe, polylock_leader, polylock_leadership,
    polylock_leadership_free, polylock_leadership_is_leader, polylock_leadership_is_lost,
    polylock_leadership_is_suspended, polylock_leadership_proclaim, polylock_leadership_resign,
    polylock_leadership_term, polylock_leadership_value, polylock_leadership_wait_lost, polylock_observer,
    polylock_observer_free, polylock_observer_next,
};
pub use hold::{
    polylock_hold, polylock_hold_fencing_token, polylock_hold_free, polylock_hold_is_lost, polylock_hold_permit_id,
    polylock_hold_reenter, polylock_hold_release, polylock_hold_wait_lost, polylock_lock_acquire_hold,
    polylock_rwlock_read_acquire_hold, polylock_rwlock_write_acquire_hold, polylock_semaphore_acquire_hold,
};
pub use http_idempotency::{
    polylock_http_decode_response, polylock_http_encode_response, polylock_http_fingerprint, polylock_http_header,
    polylock_http_key_of, polylock_http_key_problem, polylock_http_options, polylock_http_options_applies_to,
    polylock_http_options_free, polylock_http_options_header, polylock_http_options_lifetime_ms,
    polylock_http_options_new, polylock_http_refusal_response, polylock_http_replayed_header, polylock_http_response,
    polylock_http_response_free, polylock_http_stores, POLYLOCK_HTTP_REFUSAL_BAD_KEY,
    POLYLOCK_HTTP_REFUSAL_IN_PROGRESS, POLYLOCK_HTTP_REFUSAL_MISMATCH,
};
pub use idempotency::{
    polylock_begin, polylock_begin_outcome, polylock_client_idempotency, polylock_idempotency,
    polylock_idempotency_begin, polylock_idempotency_free, polylock_idempotency_run, polylock_idempotency_work,
    polylock_ticket, polylock_ticket_abandon, polylock_ticket_complete, polylock_ticket_extend, polylock_ticket_free,
    polylock_ticket_token, polylock_work_response, polylock_work_response_set,
};
pub use idempotency_codec::{
    polylock_idempotency_decode_response, polylock_idempotency_encode_response, polylock_idempotency_fingerprint,
};
pub use last_error::polylock_last_error;
pub use latch::{
    polylock_client_latch, polylock_latch, polylock_latch_await, polylock_latch_await_zero, polylock_latch_count,
    polylock_latch_count_down, polylock_latch_free, polylock_latch_try_set_count,
};
pub use lock::{
    polylock_client_lock, polylock_client_lock_kind, polylock_lock, polylock_lock_acquire, polylock_lock_free,
    polylock_lock_hold_count, polylock_lock_is_held, polylock_lock_is_locked, polylock_lock_is_lost,
    polylock_lock_release, polylock_lock_wait_lost,
};
pub use multi_lock::{
    polylock_client_multi_lock, polylock_multi_hold, polylock_multi_hold_count, polylock_multi_hold_free,
    polylock_multi_hold_is_lost, polylock_multi_hold_part, polylock_multi_hold_release, polylock_multi_lock,
    polylock_multi_lock_acquire, polylock_multi_lock_free,
};
pub use observe::{
    polylock_get_log_level, polylock_log_callback, polylock_log_level, polylock_log_record, polylock_metrics_json,
    polylock_prometheus_text, polylock_set_log_callback, polylock_set_log_level, polylock_set_metrics_enabled,
};
pub use redlock::{polylock_redlock, polylock_redlock_connect};
pub use rwlock::{
    polylock_client_rwlock, polylock_rwlock, polylock_rwlock_free, polylock_rwlock_read_acquire,
    polylock_rwlock_read_release, polylock_rwlock_write_acquire, polylock_rwlock_write_release,
};
pub use segment::{
    polylock_segment, polylock_segment_free, polylock_segment_next_id, polylock_segment_next_ids, polylock_segment_open,
};
pub use semaphore::{
    polylock_client_semaphore, polylock_semaphore, polylock_semaphore_acquire, polylock_semaphore_free,
    polylock_semaphore_release,
};
pub use snowflake::{polylock_snowflake, polylock_snowflake_free, polylock_snowflake_new, polylock_snowflake_next};
pub use snowflake_lease::{
    polylock_leased_snowflake, polylock_leased_snowflake_close, polylock_leased_snowflake_free,
    polylock_leased_snowflake_next, polylock_leased_snowflake_next_ids, polylock_leased_snowflake_worker,
    polylock_snowflake_lease,
};
pub use status::{polylock_status, polylock_status_name};
pub use uuid_ulid::{
    polylock_ulid, polylock_ulid_timestamp_ms, polylock_ulid_to_uuid, polylock_uuid7, polylock_uuid7_timestamp_ms,
    polylock_uuid_to_ulid, POLYLOCK_ULID_TEXT_SIZE, POLYLOCK_UUID_TEXT_SIZE,
};
pub use value::{
    polylock_client_value, polylock_value, polylock_value_compare_and_set, polylock_value_create,
    polylock_value_delete, polylock_value_free, polylock_value_get, polylock_value_write_fenced, polylock_versioned,
};
pub use value_watch::{
    polylock_value_watch, polylock_watch, polylock_watch_changed, polylock_watch_close, polylock_watch_current,
    polylock_watch_free, polylock_watch_is_closed, polylock_watch_outcome, polylock_watch_step,
};
pub use version::polylock_version;

/// The handles C may share between threads (the header says so of each): checked at compile
/// time, so a change that makes one of them `!Send` or `!Sync` fails the build.
const _: () = {
    const fn shared_between_threads<T: Send + Sync>() {}
    shared_between_threads::<polylock_client>();
    shared_between_threads::<polylock_lock>();
    shared_between_threads::<polylock_rwlock>();
    shared_between_threads::<polylock_semaphore>();
    shared_between_threads::<polylock_multi_lock>();
    shared_between_threads::<polylock_hold>();
    shared_between_threads::<polylock_election>();
    shared_between_threads::<polylock_latch>();
    shared_between_threads::<polylock_value>();
    shared_between_threads::<polylock_watch>();
    shared_between_threads::<polylock_segment>();
    shared_between_threads::<polylock_snowflake>();
    shared_between_threads::<polylock_leased_snowflake>();
    shared_between_threads::<polylock_idempotency>();
    shared_between_threads::<polylock_http_options>();
    shared_between_threads::<polylock_cancel>();
};
