//! Logs and metrics (issue 23): the core's `tracing` events handed to a JavaScript function or
//! to stderr, and the core's counters as the one JSON shape, all through `polylock::kit`.
//! Nothing is decided here beyond which sink is current: the level names, the filtering, the
//! records and the JSON are the kit's.
//!
//! - Off by default: nothing is routed (no subscriber is even installed) unless
//!   `POLYLOCK_LOG=<level>` or `DEBUG=polylock` asks for it when the addon loads, or the
//!   program calls `setLogLevel` / `setLogger`.
//! - Without a logger function the sink is the kit's `stderr_sink`; `POLYLOCK_LOG=debug` is
//!   `setLogLevel('debug')` at load.
//! - A logger function is called on the JavaScript thread through a threadsafe function that
//!   is unref'd (it never keeps the process alive) and bounded: the sink, which runs on
//!   whichever thread logged (often a tokio worker), only queues the record, never waits; a
//!   record that finds the queue full (the JavaScript thread busy) is dropped and counted.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use polylock::kit::log_bridge::{self, LogLevel, LogSink};

use crate::errors::IntoNapiResult;

/// How many records may wait for the JavaScript thread; more are dropped (and counted).
const LOG_QUEUE: usize = 1024;

/// One core event, as a logger function receives it.
#[napi(object, object_from_js = false)]
pub struct LogRecord {
    /// The event's level.
    #[napi(ts_type = "'error' | 'warn' | 'info' | 'debug' | 'trace'")]
    pub level: String,
    /// The Rust module that emitted it, such as `polylock::engine::acquire`.
    pub target: String,
    /// The event's message, such as `acquired` (empty if it has none).
    pub message: String,
    /// The event's other fields, in the order written, values as text: `op`, `name`,
    /// `backend`, `kind`, `wait_ms`, `token`, `outcome`, `reason`, `error`...
    #[napi(ts_type = "Record<string, string>")]
    pub fields: Fields,
}

/// A record's fields, made into a JavaScript object in the order the core wrote them.
pub struct Fields(Vec<(String, String)>);

impl ToNapiValue for Fields {
    unsafe fn to_napi_value(env: sys::napi_env, fields: Self) -> Result<sys::napi_value> {
        let mut object = Object::new(&Env::from_raw(env))?;
        for (key, value) in fields.0 {
            object.set(key, value)?;
        }
        unsafe { Object::to_napi_value(env, object) }
    }
}

impl From<&log_bridge::LogRecord> for LogRecord {
    fn from(record: &log_bridge::LogRecord) -> LogRecord {
        LogRecord {
            level: record.level.as_str().to_string(),
            target: record.target.clone(),
            message: record.message.clone(),
            fields: Fields(record.fields.clone()),
        }
    }
}

type LoggerFn = ThreadsafeFunction<LogRecord, (), LogRecord, Status, false, true, LOG_QUEUE>;

/// Whether a sink was routed (the kit's subscriber installed): before that, turning logging
/// off needs nothing at all.
static ROUTED: AtomicBool = AtomicBool::new(false);
/// Records a logger function never got: the queue was full, or its environment had gone.
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// `POLYLOCK_LOG`'s refusal, kept for `index.js` to report once as a process warning.
static ENV_WARNING: Mutex<Option<String>> = Mutex::new(None);

fn route(sink: LogSink, level: Option<LogLevel>) -> Result<()> {
    log_bridge::route(sink, level).into_napi()?;
    ROUTED.store(true, Relaxed);
    Ok(())
}

/// Read `POLYLOCK_LOG` / `DEBUG` once per process, when the addon first loads. A level turns
/// on the stderr sink; a bad value leaves logging off and is kept for `index.js`, which
/// reports it as one process warning (a misspelt variable must not stop a service).
pub fn init_from_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| match LogLevel::from_env() {
        Ok(Some(Some(level))) => {
            if let Err(err) = route(log_bridge::stderr_sink(), Some(level)) {
                *ENV_WARNING.lock().unwrap_or_else(|e| e.into_inner()) = Some(err.reason);
            }
        }
        // Not asked, or asked for off: nothing to install.
        Ok(_) => {}
        Err(err) => {
            *ENV_WARNING.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(format!("{}; logging stays off", crate::errors::to_napi(err).reason));
        }
    });
}

/// What `POLYLOCK_LOG` got wrong, once (then `null`): `index.js` emits it as a warning.
#[napi(skip_typescript)]
pub fn take_env_log_warning() -> Option<String> {
    ENV_WARNING.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// Hand polylock's log records at `level` and above to `logger`, called on the JavaScript
/// thread with one `LogRecord`. `level` defaults to the level logging is at now
/// (`POLYLOCK_LOG`, `setLogLevel`) or, when that is off, `'info'`. `setLogger(null)` stops:
/// no more records anywhere (not even stderr) until `setLogLevel` turns them on again.
/// Throws `POLYLOCK_INVALID_ARGUMENT` for an unknown level name.
///
/// The logger never keeps the process alive and never slows polylock down: records wait for
/// the JavaScript thread in a queue of 1024; past that they are dropped and counted
/// (`logRecordsDropped()`). A logger that throws loses that record (`index.js` reports it
/// once, as a process warning).
#[napi(ts_args_type = "logger: ((record: LogRecord) => void) | null, level?: LogLevelName")]
pub fn set_logger(logger: Option<Function<LogRecord, ()>>, level: Option<String>) -> Result<()> {
    let level = match level {
        Some(name) => LogLevel::parse(&name).into_napi()?,
        None => Some(log_bridge::level().unwrap_or(LogLevel::Info)),
    };
    let Some(logger) = logger else {
        if ROUTED.load(Relaxed) {
            route(log_bridge::stderr_sink(), None)?;
        }
        return Ok(());
    };
    let tsfn: LoggerFn =
        logger.build_threadsafe_function::<LogRecord>().weak::<true>().max_queue_size::<LOG_QUEUE>().build()?;
    route(
        Arc::new(move |record: &log_bridge::LogRecord| {
            // NonBlocking: a full queue refuses at once (QueueFull) instead of making this
            // thread, often a runtime worker, wait for the JavaScript thread.
            if tsfn.call(LogRecord::from(record), ThreadsafeFunctionCallMode::NonBlocking) != Status::Ok {
                DROPPED.fetch_add(1, Relaxed);
            }
        }),
        level,
    )
}

/// Change the level records are handed on at (`'off'` stops them), for the current logger
/// or, without one, for stderr. Throws `POLYLOCK_INVALID_ARGUMENT` for an unknown name.
#[napi(ts_args_type = "level: LogLevelName")]
pub fn set_log_level(level: String) -> Result<()> {
    let level = LogLevel::parse(&level).into_napi()?;
    if ROUTED.load(Relaxed) {
        log_bridge::set_level(level);
        Ok(())
    } else if level.is_some() {
        route(log_bridge::stderr_sink(), level)
    } else {
        Ok(())
    }
}

/// The level records are handed on at now: `'off'` unless something turned logging on.
#[napi(ts_return_type = "LogLevelName")]
pub fn log_level() -> &'static str {
    LogLevel::name_of(log_bridge::level())
}

/// Records a logger function did not get since the process started: the JavaScript thread
/// was too busy to take them (1024 were waiting already).
#[napi]
pub fn log_records_dropped() -> f64 {
    DROPPED.load(Relaxed) as f64
}

/// The process's metrics (every client summed by label) as the core's one JSON text;
/// `index.js` parses it into `metrics()`'s object.
#[napi(skip_typescript)]
pub fn metrics_json() -> String {
    polylock::kit::metrics_json::process_metrics_json()
}

/// The process's metrics in Prometheus' text exposition format (0.0.4), to serve on a
/// `/metrics` page.
#[napi]
pub fn prometheus_text() -> String {
    polylock::metrics::prometheus_text()
}

/// Turn the counting of operations on or off for the whole process (on by default); the
/// counts read so far stay as they are.
#[napi]
pub fn set_metrics_enabled(enabled: bool) {
    polylock::metrics::set_enabled(enabled)
}

/// Whether operations are being counted (`setMetricsEnabled`).
#[napi]
pub fn metrics_enabled() -> bool {
    polylock::metrics::is_enabled()
}
