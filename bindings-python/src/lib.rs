//! The native half of the Python package `polylock`: thin classes over the core that take
//! the owner explicitly. The idiomatic API (thread and task owners, `with`, asyncio) is the
//! Python code in `python/polylock/`; no lock logic lives on either side of this line.

mod client;
mod convert;
mod election;
mod error_details;
mod errors;
mod http_idempotency;
mod idempotency;
mod latch;
mod lock;
mod multi_lock;
mod observe;
mod pending;
mod segment;
mod semaphore;
mod shared;
mod snowflake;
mod uuid_ulid;
mod values;

use pyo3::prelude::*;

#[pymodule]
mod _polylock {
    #[pymodule_export]
    use crate::election::{NativeElection, NativeLeaderChanges, NativeLeadership};
    #[pymodule_export]
    use crate::http_idempotency::{
        http_decode_response, http_encode_response, http_fingerprint, http_key_of, http_key_problem,
        http_refusal_response, http_stores, NativeHttpOptions,
    };
    #[pymodule_export]
    use crate::idempotency::{NativeIdempotency, NativeTicket};
    #[pymodule_export]
    use crate::latch::NativeLatch;
    #[pymodule_export]
    use crate::lock::NativeLock;
    #[pymodule_export]
    use crate::multi_lock::NativeMultiLock;
    #[pymodule_export]
    use crate::observe::{
        log_level, log_level_from_env, metrics_enabled, metrics_json, prometheus_text, route_logging, set_log_level,
        set_metrics_enabled, unroute_logging,
    };
    #[pymodule_export]
    use crate::pending::LoopWaker;
    #[pymodule_export]
    use crate::pending::PendingCall;
    #[pymodule_export]
    use crate::segment::{NativeLeasedSnowflake, NativeSegment};
    #[pymodule_export]
    use crate::semaphore::NativeSemaphore;
    #[pymodule_export]
    use crate::shared::NativeClient;
    #[pymodule_export]
    use crate::snowflake::{parse_snowflake, NativeSnowflake};
    #[pymodule_export]
    use crate::uuid_ulid::{
        format_ulid_py, parse_ulid_py, uuid7_timestamp_ms_py, NativeUlidGenerator, NativeUuid7Generator,
    };
    #[pymodule_export]
    use crate::values::{NativeValue, NativeValueWatch};

    use pyo3::prelude::*;

    /// The calling thread's lock owner: the same for the life of the thread and never any
    /// other thread's (CPython reuses `threading.get_ident()` values once a thread exits).
    #[pyfunction]
    fn current_thread_owner() -> u64 {
        polylock::kit::owner_ids::current_thread_owner_id()
    }

    /// A fresh lock owner, never handed out before in this process (for asyncio tasks).
    #[pyfunction]
    fn next_owner_id() -> u64 {
        polylock::kit::owner_ids::next_owner_id()
    }

    /// The `redlock://` URL of a list of Redis servers (the core's rule, shared by every
    /// binding): InvalidArgumentError for an empty list or an unusable entry.
    #[pyfunction]
    fn redlock_url(servers: Vec<String>) -> PyResult<String> {
        polylock::kit::redlock_url::redlock_url(&servers).map_err(crate::errors::to_py_err)
    }

    /// The core's table of error kinds: (name, number) for each, in number order.
    #[pyfunction]
    fn error_kinds() -> Vec<(&'static str, u8)> {
        polylock::ErrorKind::ALL.iter().map(|kind| (kind.as_str(), kind.code())).collect()
    }

    #[pymodule_init]
    fn init(module: &Bound<'_, PyModule>) -> PyResult<()> {
        module.add("MAX_NAME_LEN", polylock::MAX_NAME_LEN)?;
        module.add("DEFAULT_URL", polylock::url::DEFAULT_URL)?;
        module.add("__version__", env!("CARGO_PKG_VERSION"))?;
        crate::http_idempotency::add_constants(module)?;
        Ok(())
    }
}
