//! Logs and metrics (issue 23): the core's events handed to a C function pointer through
//! the kit's log bridge (`polylock::kit::log_bridge`), and the metrics snapshot in the kit's
//! one JSON shape (`polylock::kit::metrics_json`) and in Prometheus' text format. Nothing is
//! decided here beyond translation: level names are the kit's, records are the kit's.

use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use polylock::kit::log_bridge::{self, LogLevel, LogRecord};
use polylock::Result;

use crate::args;
use crate::boundary::{call, quietly};
use crate::bytes::polylock_bytes;
use crate::status::polylock_status;

/// How much is logged, most severe first; each level includes the ones above it.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum polylock_log_level {
    /// Nothing (only as a level to log at; no record has it).
    POLYLOCK_LOG_OFF = 0,
    POLYLOCK_LOG_ERROR = 1,
    POLYLOCK_LOG_WARN = 2,
    POLYLOCK_LOG_INFO = 3,
    POLYLOCK_LOG_DEBUG = 4,
    POLYLOCK_LOG_TRACE = 5,
}

impl From<LogLevel> for polylock_log_level {
    fn from(level: LogLevel) -> Self {
        match level {
            LogLevel::Error => polylock_log_level::POLYLOCK_LOG_ERROR,
            LogLevel::Warn => polylock_log_level::POLYLOCK_LOG_WARN,
            LogLevel::Info => polylock_log_level::POLYLOCK_LOG_INFO,
            LogLevel::Debug => polylock_log_level::POLYLOCK_LOG_DEBUG,
            LogLevel::Trace => polylock_log_level::POLYLOCK_LOG_TRACE,
        }
    }
}

/// One log record, as `polylock_set_log_callback()`'s callback receives it. Every string is
/// NUL-terminated UTF-8, valid only during the call: copy what you keep.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct polylock_log_record {
    /// The record's level (never `POLYLOCK_LOG_OFF`).
    pub level: polylock_log_level,
    /// The Rust module that logged, such as `polylock::engine::acquire`.
    pub target: *const c_char,
    /// The event's message (may be empty).
    pub message: *const c_char,
    /// The message followed by the event's fields as `key=value` (values with spaces
    /// quoted): `acquired op=acquire name=orders:42 backend=redis kind=reentrant ...`.
    pub line: *const c_char,
    /// The whole record as one JSON object, the fields as an object of strings in the order
    /// logged: `{"level":"info","target":"...","message":"...","fields":{"name":"orders:42",...}}`.
    pub json: *const c_char,
}

/// A function that receives polylock's log records (see `polylock_set_log_callback()`).
///
/// It runs on whichever thread logged, often one of the library's own threads, possibly on
/// several at once: it must be thread-safe, must not block (queue the record and return),
/// and must not wait for anything a thread calling polylock may hold. A record it causes
/// itself (a polylock call from inside the callback) is dropped rather than delivered.
#[allow(non_camel_case_types)]
pub type polylock_log_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, record: *const polylock_log_record)>;

/// The caller's `user_data`: the caller promises the callback may use it from any thread.
struct UserData(*mut c_void);
// SAFETY: only handed back to the caller's callback, which `polylock_set_log_callback()`
// documents as called from any thread.
unsafe impl Send for UserData {}
// SAFETY: as above.
unsafe impl Sync for UserData {}

/// Set once the program chose where records go (a callback, or none): from then on the
/// environment's `POLYLOCK_LOG` is not consulted.
static CHOSEN: AtomicBool = AtomicBool::new(false);

/// A C string of `text` (an interior NUL, which C cannot carry, written as `\0`).
fn c_text(text: &str) -> CString {
    CString::new(text.replace('\0', "\\0")).unwrap_or_default()
}

/// The sink that calls `callback` with each record, in the kit's two written forms.
fn callback_sink(
    callback: unsafe extern "C" fn(*mut c_void, *const polylock_log_record),
    user_data: *mut c_void,
) -> log_bridge::LogSink {
    let user_data = UserData(user_data);
    Arc::new(move |record: &LogRecord| {
        let target = c_text(&record.target);
        let message = c_text(&record.message);
        let line = c_text(&record.line());
        let json = c_text(&record.to_json());
        let record = polylock_log_record {
            level: record.level.into(),
            target: target.as_ptr(),
            message: message.as_ptr(),
            line: line.as_ptr(),
            json: json.as_ptr(),
        };
        let user_data = &user_data;
        // SAFETY: the caller's contract of `polylock_set_log_callback()`; the strings live
        // until the end of this closure.
        unsafe { callback(user_data.0, &record) };
    })
}

/// Hand polylock's log records at `level` and above to `callback`, from now on, in place of
/// any earlier callback (and of the stderr output `POLYLOCK_LOG` turns on). NULL stops
/// handing them on: nothing is logged until a callback is set again.
///
/// Without a callback, polylock logs nothing unless the environment asks when the first
/// client is created: `POLYLOCK_LOG=<level>` (or `DEBUG=polylock`, which means `debug`)
/// writes each record as one line to stderr (a name that is no level is reported once there,
/// and logging stays off). Off by default, it costs nothing measurable.
///
/// The callback runs on whichever thread logged, usually one of the library's threads,
/// possibly several at once: it must be thread-safe and must not block (hand the record to
/// a queue and return). This call returns once no call of the previous callback is in
/// progress, and none starts after it: the previous `user_data` may be freed then. So do
/// not call it while holding something the callback waits for. From inside the callback,
/// NULL turns logging off without waiting, and a new callback is
/// `POLYLOCK_INVALID_ARGUMENT`.
///
/// @param callback   the function, or NULL to stop.
/// @param user_data  passed to every call of `callback`, untouched.
/// @param level      `"off"`, `"error"`, `"warn"` (or `"warning"`), `"info"`, `"debug"`,
///                   `"trace"`, in any case; NULL means `"warn"`. Ignored when `callback`
///                   is NULL.
/// @return `POLYLOCK_OK`; `POLYLOCK_INVALID_ARGUMENT` for an unknown level name or a new
///         callback set from inside the callback (nothing changes); `POLYLOCK_UNSUPPORTED`
///         if the process already has another `tracing` subscriber (a Rust program that
///         installed its own).
///
/// # Safety
/// `level` is NULL or NUL-terminated; `callback` is NULL or a function that may be called
/// from any thread with `user_data` until another callback replaces it.
#[no_mangle]
pub unsafe extern "C" fn polylock_set_log_callback(
    callback: polylock_log_callback,
    user_data: *mut c_void,
    level: *const c_char,
) -> polylock_status {
    call(|| {
        let Some(callback) = callback else {
            CHOSEN.store(true, Relaxed);
            log_bridge::unroute();
            return Ok(());
        };
        // SAFETY: the caller's contract.
        let level = unsafe { level_arg(level) }?;
        log_bridge::route(callback_sink(callback, user_data), level)?;
        CHOSEN.store(true, Relaxed);
        Ok(())
    })
}

/// The level named by `level` (NULL: warn).
///
/// # Safety
/// `level` is NULL or NUL-terminated.
unsafe fn level_arg(level: *const c_char) -> Result<Option<LogLevel>> {
    if level.is_null() {
        return Ok(Some(LogLevel::Warn));
    }
    // SAFETY: the caller's contract.
    LogLevel::parse(unsafe { args::text(level, "level") }?)
}

/// Change the level records are handed on at (to the callback, or to stderr), keeping
/// where they go. Takes effect at once, on every thread.
///
/// @param level  `"off"`, `"error"`, `"warn"` (or `"warning"`), `"info"`, `"debug"`,
///               `"trace"`, in any case.
/// @return `POLYLOCK_OK`, or `POLYLOCK_INVALID_ARGUMENT` for NULL or an unknown name
///         (the message lists the names; the level stays as it was).
///
/// # Safety
/// `level` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn polylock_set_log_level(level: *const c_char) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        let level = LogLevel::parse(unsafe { args::text(level, "level") }?)?;
        log_bridge::set_level(level);
        Ok(())
    })
}

/// The level records are handed on at now (`POLYLOCK_LOG_OFF` when off or nothing routed).
#[no_mangle]
pub extern "C" fn polylock_get_log_level() -> polylock_log_level {
    log_bridge::level().map_or(polylock_log_level::POLYLOCK_LOG_OFF, polylock_log_level::from)
}

/// What the first client does before it connects: unless the program chose a callback (or
/// none), `POLYLOCK_LOG` / `DEBUG=polylock` in the environment sends records to stderr. An
/// unknown level name there is reported once on stderr and leaves logging off, as in every
/// binding: a misspelt variable must not stop a service.
pub fn route_from_env_once() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        if CHOSEN.load(Relaxed) {
            return;
        }
        match LogLevel::from_env() {
            // Refused only when the process has a `tracing` subscriber of its own (a Rust
            // program embedding the library): that one decides, not the environment.
            Ok(Some(level)) => {
                let _ = log_bridge::route(log_bridge::stderr_sink(), level);
            }
            Ok(None) => {}
            Err(e) => eprintln!("polylock: {}; logging stays off", e.message()),
        }
    });
}

/// Write `text` to `out` as bytes the caller frees.
pub(crate) fn hand_out(out: &mut polylock_bytes, text: String) {
    *out = polylock_bytes::from_vec(text.into_bytes());
}

/// The process's metrics (every client so far, summed per backend and lock kind) as one
/// JSON object, the shape every polylock binding hands out:
/// `{"buckets_le_seconds": [...], "series": [{"backend", "kind", "acquires": {...},
/// "acquire_wait": {"count", "sum_seconds", "buckets"}, "hold_time", "releases", "renewals",
/// "renewal_failures", "renewal_lateness", "lost": {...}, "errors": {...}}], "backends":
/// [{"backend", "connects", "connect_failures", "reconnects", "failovers"}]}`.
///
/// @param out  receives the UTF-8 text (not NUL-terminated: `out->len` bytes); free it with
///             `polylock_bytes_free()`.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_metrics_json(out: *mut polylock_bytes) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        hand_out(unsafe { args::out(out, "out") }?, polylock::kit::metrics_json::process_metrics_json());
        Ok(())
    })
}

/// The process's metrics in Prometheus' text exposition format (0.0.4), to serve on a
/// scrape endpoint of the program's own.
///
/// @param out  receives the text (`out->len` bytes, not NUL-terminated); free it with
///             `polylock_bytes_free()`.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn polylock_prometheus_text(out: *mut polylock_bytes) -> polylock_status {
    call(|| {
        // SAFETY: the caller's contract.
        hand_out(unsafe { args::out(out, "out") }?, polylock::metrics::prometheus_text());
        Ok(())
    })
}

/// Turn the counting of operations on or off for the whole process (on by default). Off,
/// each operation costs one relaxed load; the counts so far stay readable.
#[no_mangle]
pub extern "C" fn polylock_set_metrics_enabled(enabled: bool) {
    quietly(|| polylock::metrics::set_enabled(enabled));
}
