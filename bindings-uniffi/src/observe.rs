//! Logs and metrics (issue 23): the core's `kit::log_bridge` and `kit::metrics_json`,
//! translated for the gem (ruby/lib/polylock/observe.rb).
//!
//! Records are not handed to Ruby from the thread that logged. uniffi's Ruby can call a
//! callback interface from another thread (the ffi gem hands the call to a Ruby thread and
//! blocks the caller until that thread has the GVL and returns), but a log event is emitted
//! on runtime workers while a Ruby thread may hold the GVL in a synchronous call that waits
//! for those workers (a client collected unclosed is closed from its finalizer, which waits
//! for the runtime to stop): the worker would wait for the GVL and the GVL holder for the
//! worker. So the core routes records to one process-wide `LogQueue`, which never waits for
//! Ruby, and the gem drains it on a Ruby thread of its own.

use std::sync::{Arc, OnceLock};

use polylock::kit::log_bridge::{self, LogLevel, LogQueue, LogRecord};

use crate::errors::Result;

/// Records kept between two drains; the oldest are dropped (and counted) past this.
const QUEUE_CAPACITY: usize = 10_000;

static QUEUE: OnceLock<Arc<LogQueue>> = OnceLock::new();

fn queue() -> &'static Arc<LogQueue> {
    QUEUE.get_or_init(|| LogQueue::new(QUEUE_CAPACITY))
}

fn level_name(level: Option<LogLevel>) -> String {
    LogLevel::name_of(level).to_string()
}

/// One field of a record, its value as text.
#[derive(uniffi::Record)]
pub struct LogField {
    pub key: String,
    pub value: String,
}

/// One of the core's events, as the queue kept it.
#[derive(uniffi::Record)]
pub struct LogEntry {
    /// `error`, `warn`, `info`, `debug` or `trace`.
    pub level: String,
    /// The Rust module that emitted it (`polylock::engine::acquire`).
    pub target: String,
    pub message: String,
    /// The message and `key=value` for each field, as one line.
    pub line: String,
    pub fields: Vec<LogField>,
}

impl From<LogRecord> for LogEntry {
    fn from(record: LogRecord) -> Self {
        LogEntry {
            level: record.level.as_str().to_string(),
            line: record.line(),
            target: record.target,
            message: record.message,
            fields: record.fields.into_iter().map(|(key, value)| LogField { key, value }).collect(),
        }
    }
}

/// The canonical name of the level `name` (any case; `warning` is `warn`; `none` and an
/// empty text are `off`); `InvalidArgument` for any other name.
#[uniffi::export]
pub fn log_level_name(name: String) -> Result<String> {
    Ok(level_name(LogLevel::parse(&name)?))
}

/// The level the environment asks for (`POLYLOCK_LOG`, or `polylock` in `DEBUG`): nil when
/// it says nothing, `off` when it says off; `InvalidArgument` for a bad `POLYLOCK_LOG`.
#[uniffi::export]
pub fn log_level_from_env() -> Result<Option<String>> {
    Ok(LogLevel::from_env()?.map(level_name))
}

/// Route the core's events at `level` and above to the process's queue (`log_drain` takes
/// them). `Unsupported` if another `tracing` subscriber is the process's global one.
#[uniffi::export]
pub fn log_to_queue(level: String) -> Result<()> {
    Ok(log_bridge::route(queue().sink(), LogLevel::parse(&level)?)?)
}

/// Change the level of the routed events without changing where they go.
#[uniffi::export]
pub fn log_set_level(level: String) -> Result<()> {
    log_bridge::set_level(LogLevel::parse(&level)?);
    Ok(())
}

/// The level events are routed at, `off` when none are.
#[uniffi::export]
pub fn log_level() -> String {
    level_name(log_bridge::level())
}

/// Stop routing events (records already queued stay until drained).
#[uniffi::export]
pub fn log_unroute() {
    log_bridge::unroute();
}

/// Take up to `max` queued records, oldest first.
#[uniffi::export]
pub fn log_drain(max: u32) -> Vec<LogEntry> {
    queue().drain(max as usize).into_iter().map(LogEntry::from).collect()
}

/// Records the queue dropped because it was full, since the process started.
#[uniffi::export]
pub fn log_dropped() -> u64 {
    queue().dropped()
}

/// The process's counts (every client's, by backend and kind) as the kit's JSON.
#[uniffi::export]
pub fn metrics_json() -> String {
    polylock::kit::metrics_json::process_metrics_json()
}

/// The process's counts in Prometheus' text format 0.0.4.
#[uniffi::export]
pub fn prometheus_text() -> String {
    polylock::metrics::prometheus_text()
}

/// Count operations (the default) or not, for the whole process.
#[uniffi::export]
pub fn set_metrics_enabled(enabled: bool) {
    polylock::metrics::set_enabled(enabled);
}

#[uniffi::export]
pub fn metrics_enabled() -> bool {
    polylock::metrics::is_enabled()
}

/// The `redlock://` URL of independent Redis servers (`host:port` or
/// `redis://[user:password@]host:port`), by the core's one rule; `InvalidArgument` for an
/// empty or unusable list, without a password in the message.
#[uniffi::export]
pub fn redlock_url(urls: Vec<String>) -> Result<String> {
    Ok(polylock::kit::redlock_url::redlock_url(&urls)?)
}
