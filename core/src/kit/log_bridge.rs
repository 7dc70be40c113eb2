//! The core's `tracing` events handed to a binding's own logging: Python's `logging`, SLF4J,
//! a Node callback, a C function pointer, Go's `slog`, Ruby's `Logger`.
//!
//! One process-wide subscriber, installed the first time a binding calls [`route`], hands
//! each event at or above the chosen level to one [`LogSink`] as a [`LogRecord`] (level,
//! module, message and the event's fields as text). Spans are not kept: every event of the
//! core names its lock, backend and operation in its own fields.
//!
//! Off costs nothing measurable: the subscriber reports its level as `tracing`'s maximum, so
//! a disabled event stops at one relaxed load in the macro (bench: `observe_cost`). The sink
//! runs on whichever thread emitted the event (a runtime worker or the caller's); an event
//! emitted while the sink runs on the same thread (a handler calling back into polylock) is
//! dropped rather than recursing, and a panicking sink loses its event, never the caller.
//! The core marks holds lost and logs only after letting go of its own locks, since a sink
//! may wait for a language's lock (Python's GIL) that a caller holds while it waits for one
//! of the core's.
//!
//! No credential reaches a sink: the core only ever logs redacted URLs (`url::redact`).

use std::cell::Cell;
use std::fmt::{self, Write as _};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, OnceLock, RwLock};

use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span;
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};

use crate::error::Error;

/// How much to log, most severe first. `None` where a level is optional means off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
    Trace = 5,
}

/// The names [`LogLevel::parse`] takes, as the bindings document them.
pub const LOG_LEVEL_NAMES: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

impl LogLevel {
    /// The lower-case name: `error`, `warn`, `info`, `debug` or `trace`.
    pub fn as_str(self) -> &'static str {
        LOG_LEVEL_NAMES[self as usize]
    }

    /// A level by name, any case (`warning` for `warn` too, as Python and Java spell it);
    /// `off` (or `none`, or an empty text) is `Ok(None)`.
    pub fn parse(text: &str) -> Result<Option<LogLevel>, Error> {
        Ok(Some(match text.trim().to_ascii_lowercase().as_str() {
            "" | "off" | "none" => return Ok(None),
            "error" => LogLevel::Error,
            "warn" | "warning" => LogLevel::Warn,
            "info" => LogLevel::Info,
            "debug" => LogLevel::Debug,
            "trace" => LogLevel::Trace,
            _ => {
                return Err(Error::invalid_argument(format!(
                    "unknown log level {text:?}: expected one of {}",
                    LOG_LEVEL_NAMES.join(", ")
                )))
            }
        }))
    }

    /// The level the environment asks for, if it asks: `POLYLOCK_LOG=<level>`, or else
    /// `polylock` (or `polylock*`, or `*`) among the comma- or space-separated names of
    /// `DEBUG`, as the `debug` package reads it, which means `debug`. `Ok(None)`: the
    /// environment says nothing; `Ok(Some(None))`: it says off.
    pub fn from_env() -> Result<Option<Option<LogLevel>>, Error> {
        if let Ok(text) = std::env::var("POLYLOCK_LOG") {
            return LogLevel::parse(&text)
                .map(Some)
                .map_err(|e| Error::invalid_argument(format!("POLYLOCK_LOG: {}", e.message())));
        }
        let asked = std::env::var("DEBUG").is_ok_and(|names| {
            names.split([',', ' ']).any(|name| matches!(name.trim(), "polylock" | "polylock*" | "polylock:*" | "*"))
        });
        Ok(asked.then_some(Some(LogLevel::Debug)))
    }

    /// The name of an optional level: `off` for `None`, else [`LogLevel::as_str`].
    pub fn name_of(level: Option<LogLevel>) -> &'static str {
        level.map_or("off", LogLevel::as_str)
    }

    fn of(level: &Level) -> LogLevel {
        match *level {
            Level::ERROR => LogLevel::Error,
            Level::WARN => LogLevel::Warn,
            Level::INFO => LogLevel::Info,
            Level::DEBUG => LogLevel::Debug,
            Level::TRACE => LogLevel::Trace,
        }
    }
}

/// One event, ready for another logging system.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRecord {
    pub level: LogLevel,
    /// The Rust module that emitted it, such as `polylock::engine::acquire`.
    pub target: String,
    /// The event's message (empty if it has none).
    pub message: String,
    /// The other fields in the order written, values as text: `op`, `name`, `backend`,
    /// `kind`, `waited_ms`, `error`...
    pub fields: Vec<(String, String)>,
}

impl LogRecord {
    /// The message followed by `key=value` for each field (values with spaces quoted), as
    /// one line for loggers that take text.
    /// Control characters are escaped (`\n`, `\u{1b}`), so no value (a lock name with a
    /// newline) can forge a line of its own.
    pub fn line(&self) -> String {
        let mut line = escape_controls(&self.message);
        for (key, value) in &self.fields {
            if !line.is_empty() {
                line.push(' ');
            }
            if value.is_empty() || value.contains([' ', '"', '=']) || value.chars().any(char::is_control) {
                let _ = write!(line, "{key}={value:?}");
            } else {
                let _ = write!(line, "{key}={value}");
            }
        }
        line
    }

    /// The dotted logger name a language's hierarchical logging files the record under, all
    /// below `polylock`: `polylock::engine::acquire` is `polylock.engine.acquire`, a client
    /// library's `h2::proto` is `polylock.deps.h2.proto` (Python's `logging`, SLF4J).
    pub fn logger_name(&self) -> String {
        let parts: Vec<&str> = self.target.split("::").filter(|part| !part.is_empty()).collect();
        match parts.first() {
            Some(_) if is_polylocks(&self.target) => parts.join("."),
            _ => ["polylock", "deps"].iter().chain(&parts).copied().collect::<Vec<_>>().join("."),
        }
    }

    /// One JSON object: `{"level", "target", "message", "fields": {...}}`, for bindings that
    /// hand the record to a callback in their language as a structured value.
    pub fn to_json(&self) -> String {
        let fields: serde_json::Map<String, serde_json::Value> =
            self.fields.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
        serde_json::json!({
            "level": self.level.as_str(),
            "target": self.target,
            "message": self.message,
            "fields": fields,
        })
        .to_string()
    }
}

/// Whether `target` is one of polylock's modules rather than a client library's.
fn is_polylocks(target: &str) -> bool {
    target == "polylock" || target.starts_with("polylock::")
}

/// Where records go. It must not block for long: it runs on the thread that logged.
pub type LogSink = Arc<dyn Fn(&LogRecord) + Send + Sync>;

/// Hand the core's events at `level` and above (`None`: none) to `sink`, from now on. The
/// first call installs polylock's subscriber as the process's global one; later calls swap
/// the sink and the level. Fails with `Unsupported` if something else installed a global
/// subscriber first (a Rust program embedding the core picks its own, as the CLI does).
///
/// It returns once no call of the previous sink is in progress (see [`unroute`]), so it
/// must not be called with something held that the previous sink waits for (a binding
/// releases its interpreter's lock first). From inside a sink it fails with
/// `InvalidArgument`: the sink's own call would never end.
pub fn route(sink: LogSink, level: Option<LogLevel>) -> Result<(), Error> {
    if IN_SINK.with(Cell::get) {
        return Err(Error::invalid_argument("the log sink cannot be replaced from inside a call of it"));
    }
    let bridge = bridge()?;
    *bridge.sink.write().unwrap_or_else(|e| e.into_inner()) = Some(sink);
    set_level(level);
    Ok(())
}

/// Change the level records are handed on at (`None`: off) without changing the sink.
pub fn set_level(level: Option<LogLevel>) {
    LEVEL.store(level.map_or(0, |l| l as u8), Relaxed);
    // Callsites cache whether they are enabled; make them ask again.
    tracing::callsite::rebuild_interest_cache();
}

/// The level records are handed on at, `None` when off (or nothing routed yet).
pub fn level() -> Option<LogLevel> {
    level_of(LEVEL.load(Relaxed))
}

/// Stop handing records on and drop the sink (a binding's interpreter shutting down, a C
/// program about to free its callback's data). When it returns, no call of the sink is in
/// progress and none will start: each call runs under a read guard of the sink, which this
/// waits for. So it must not be called with something held that a sink waits for (Python's
/// GIL). Called from inside a sink it turns records off and returns without waiting.
pub fn unroute() {
    set_level(None);
    if IN_SINK.with(Cell::get) {
        return;
    }
    if let Some(Ok(bridge)) = BRIDGE.get() {
        bridge.sink.write().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// Records a sink lost because it panicked, since the process started.
pub fn sink_panics() -> u64 {
    SINK_PANICS.load(Relaxed)
}

/// A sink that writes each record as one line to stderr, `polylock WARN polylock::engine:
/// hold lost name=... reason=...`: what `POLYLOCK_LOG` turns on where the language has no
/// logger of its own to route to (Node, C, Ruby before one is set).
pub fn stderr_sink() -> LogSink {
    Arc::new(|record: &LogRecord| {
        let line =
            format!("polylock {:5} {}: {}\n", record.level.as_str().to_ascii_uppercase(), record.target, record.line());
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
    })
}

/// Records kept for a binding that cannot be called from other threads (its runtime must
/// fetch them on its own thread): a bounded queue that drops the oldest when full and counts
/// what it dropped. Route to [`LogQueue::sink`], then [`LogQueue::drain`] from the language.
#[derive(Debug)]
pub struct LogQueue {
    records: std::sync::Mutex<std::collections::VecDeque<LogRecord>>,
    capacity: usize,
    dropped: AtomicU64,
}

impl LogQueue {
    pub fn new(capacity: usize) -> Arc<LogQueue> {
        Arc::new(LogQueue { records: Default::default(), capacity: capacity.max(1), dropped: AtomicU64::new(0) })
    }

    /// The sink that fills this queue.
    pub fn sink(self: &Arc<LogQueue>) -> LogSink {
        let queue = self.clone();
        Arc::new(move |record: &LogRecord| {
            let mut records = queue.records.lock().unwrap_or_else(|e| e.into_inner());
            if records.len() == queue.capacity {
                records.pop_front();
                queue.dropped.fetch_add(1, Relaxed);
            }
            records.push_back(record.clone());
        })
    }

    /// Take up to `max` records, oldest first.
    pub fn drain(&self, max: usize) -> Vec<LogRecord> {
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        let n = max.min(records.len());
        records.drain(..n).collect()
    }

    /// Records dropped because the queue was full, since it was made.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Relaxed)
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(0);
static SINK_PANICS: AtomicU64 = AtomicU64::new(0);
static BRIDGE: OnceLock<Result<Arc<Bridge>, ()>> = OnceLock::new();

thread_local! {
    /// Set while this thread runs the sink, so events the sink causes are dropped.
    static IN_SINK: Cell<bool> = const { Cell::new(false) };
}

fn level_of(n: u8) -> Option<LogLevel> {
    [
        None,
        Some(LogLevel::Error),
        Some(LogLevel::Warn),
        Some(LogLevel::Info),
        Some(LogLevel::Debug),
        Some(LogLevel::Trace),
    ]
    .get(usize::from(n))
    .copied()
    .flatten()
}

fn bridge() -> Result<Arc<Bridge>, Error> {
    BRIDGE
        .get_or_init(|| {
            let bridge = Arc::new(Bridge { sink: RwLock::new(None) });
            tracing::subscriber::set_global_default(Forward(bridge.clone())).map(|()| bridge).map_err(|_| ())
        })
        .clone()
        .map_err(|()| Error::unsupported("another tracing subscriber is already the process's global one"))
}

struct Bridge {
    sink: RwLock<Option<LogSink>>,
}

/// The subscriber: filters by [`LEVEL`], ignores spans, forwards events.
struct Forward(Arc<Bridge>);

impl Forward {
    /// polylock's own events at the level; the client libraries' (h2, tonic, hyper, sqlx...)
    /// only at `trace`, and then their info and above, as the CLI's `-vvv` shows them: at
    /// debug, etcd's gRPC stack alone logs some 900 records per connect.
    fn wants(metadata: &Metadata<'_>) -> bool {
        let (event, routed) = (LogLevel::of(metadata.level()) as u8, LEVEL.load(Relaxed));
        if is_polylocks(metadata.target()) {
            event <= routed
        } else {
            routed == LogLevel::Trace as u8 && event <= LogLevel::Info as u8
        }
    }
}

impl Subscriber for Forward {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        // Asked again on every set_level (rebuild_interest_cache); between changes the
        // level check in `enabled` and `max_level_hint` decide.
        Interest::sometimes()
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(match level() {
            None => LevelFilter::OFF,
            Some(LogLevel::Error) => LevelFilter::ERROR,
            Some(LogLevel::Warn) => LevelFilter::WARN,
            Some(LogLevel::Info) => LevelFilter::INFO,
            Some(LogLevel::Debug) => LevelFilter::DEBUG,
            Some(LogLevel::Trace) => LevelFilter::TRACE,
        })
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.is_event() && Self::wants(metadata)
    }

    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }

    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}

    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}

    fn event(&self, event: &Event<'_>) {
        let metadata = event.metadata();
        if !Self::wants(metadata) || IN_SINK.with(Cell::get) {
            return;
        }
        // The guard is held until the sink returns, so `unroute` can wait for calls in flight.
        let guard = self.0.sink.read().unwrap_or_else(|e| e.into_inner());
        let Some(sink) = guard.as_ref() else { return };
        let mut record = LogRecord {
            level: LogLevel::of(metadata.level()),
            target: metadata.target().to_string(),
            message: String::new(),
            fields: Vec::new(),
        };
        event.record(&mut Fields(&mut record));
        IN_SINK.with(|flag| flag.set(true));
        let outcome = catch_unwind(AssertUnwindSafe(|| sink(&record)));
        IN_SINK.with(|flag| flag.set(false));
        drop(guard);
        if outcome.is_err() {
            SINK_PANICS.fetch_add(1, Relaxed);
        }
    }

    fn enter(&self, _: &span::Id) {}

    fn exit(&self, _: &span::Id) {}
}

struct Fields<'a>(&'a mut LogRecord);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, format!("{value:?}"));
    }
}

impl Fields<'_> {
    fn put(&mut self, field: &Field, value: String) {
        if field.name() == "message" {
            self.0.message = value;
        } else {
            self.0.fields.push((field.name().to_string(), value));
        }
    }
}

/// `text` with its control characters (newline, carriage return, escape...) written as Rust
/// escapes, for text-line log formats; other characters are kept as they are.
pub fn escape_controls(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_newline_in_a_value_cannot_forge_a_line() {
        let record = LogRecord {
            level: LogLevel::Info,
            target: "polylock::engine".into(),
            message: "acquired\nWARN fake".into(),
            fields: vec![("name".into(), "a\nINFO op=release name=b".into()), ("key".into(), "x\ry\u{1b}[2J".into())],
        };
        let line = record.line();
        assert!(!line.contains(['\n', '\r', '\u{1b}']), "{line:?}");
        assert!(line.starts_with("acquired\\nWARN fake name=\"a\\nINFO op=release name=b\""), "{line}");
        assert_eq!(escape_controls("plain name"), "plain name");
    }

    #[test]
    fn levels_parse_by_name_and_off() {
        assert_eq!(LogLevel::parse("WARNING").unwrap(), Some(LogLevel::Warn));
        assert_eq!(LogLevel::parse(" debug ").unwrap(), Some(LogLevel::Debug));
        assert_eq!(LogLevel::parse("off").unwrap(), None);
        let err = LogLevel::parse("loud").unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        assert!(err.message().contains("trace"), "{}", err.message());
        for name in &LOG_LEVEL_NAMES[1..] {
            assert_eq!(LogLevel::parse(name).unwrap().unwrap().as_str(), *name);
        }
    }

    #[test]
    fn a_line_quotes_values_with_spaces() {
        let record = LogRecord {
            level: LogLevel::Warn,
            target: "polylock::engine".into(),
            message: "hold lost".into(),
            fields: vec![("name".into(), "orders:42".into()), ("error".into(), "lease ran out".into())],
        };
        assert_eq!(record.line(), r#"hold lost name=orders:42 error="lease ran out""#);
        assert_eq!(record.logger_name(), "polylock.engine");
        let dependency = LogRecord { target: "h2::proto".into(), ..record.clone() };
        assert_eq!(dependency.logger_name(), "polylock.deps.h2.proto");
        assert_eq!((LogLevel::name_of(None), LogLevel::name_of(Some(LogLevel::Warn))), ("off", "warn"));
        let json: serde_json::Value = serde_json::from_str(&record.to_json()).unwrap();
        assert_eq!(json["fields"]["error"], "lease ran out");
        assert_eq!(json["level"], "warn");
    }

    #[test]
    fn a_full_queue_drops_its_oldest_and_counts_them() {
        let queue = LogQueue::new(2);
        let sink = queue.sink();
        for message in ["a", "b", "c"] {
            sink(&LogRecord { level: LogLevel::Info, target: "t".into(), message: message.into(), fields: vec![] });
        }
        let drained: Vec<String> = queue.drain(10).into_iter().map(|r| r.message).collect();
        assert_eq!(drained, ["b", "c"]);
        assert_eq!(queue.dropped(), 1);
        assert!(queue.drain(10).is_empty());
    }

    // The one test that installs the global subscriber (unit tests share a process).
    #[test]
    fn routed_events_reach_the_sink_at_their_level_only() {
        let seen: Arc<Mutex<Vec<LogRecord>>> = Arc::default();
        let into = seen.clone();
        // Other tests of this process log too: keep this module's records only.
        let sink = move |r: &LogRecord| {
            if r.target == module_path!() || r.target == "h2::proto" {
                into.lock().unwrap().push(r.clone());
            }
        };
        route(Arc::new(sink), Some(LogLevel::Info)).unwrap();
        tracing::debug!(op = "acquire", name = "a", "not shown at info");
        tracing::warn!(target: "h2::proto", "a client library's event: only at trace");
        tracing::info!(op = "connect", backend = "mem", "connected");
        set_level(None);
        tracing::warn!("not shown when off");
        set_level(Some(LogLevel::Trace));
        tracing::debug!(target: "h2::proto", "a client library's debug: not even at trace");
        tracing::info!(target: "h2::proto", "a client library's info: shown at trace");
        set_level(Some(LogLevel::Debug));
        route(Arc::new(|_: &LogRecord| panic!("a sink that panics")), Some(LogLevel::Debug)).unwrap();
        tracing::debug!("lost to the panic, not the caller");
        assert!(sink_panics() >= 1);
        unroute();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_eq!(
            (seen[1].target.as_str(), seen[1].message.as_str()),
            ("h2::proto", "a client library's info: shown at trace")
        );
        assert_eq!(seen[0].level, LogLevel::Info);
        assert_eq!(seen[0].message, "connected");
        assert_eq!(seen[0].fields, vec![("op".into(), "connect".into()), ("backend".into(), "mem".into())]);
        assert_eq!(level(), None);
        drop(seen);
        unroute_waits_for_calls_in_flight();
    }

    /// `unroute` returns only once a call of the sink running on another thread has ended
    /// (what lets Python's atexit hook, or a C program freeing its callback's data, be sure
    /// nothing more arrives); from inside the sink, `route` is refused and `unroute` does
    /// not wait for itself.
    fn unroute_waits_for_calls_in_flight() {
        use std::sync::atomic::AtomicBool;
        use std::sync::mpsc;
        use std::time::Duration;
        let finished = Arc::new(AtomicBool::new(false));
        let (entered_tx, entered) = mpsc::channel();
        let entered_tx = Mutex::new(entered_tx);
        let done = finished.clone();
        let sink = move |r: &LogRecord| {
            if r.message != "slow" {
                return;
            }
            let refused = route(stderr_sink(), Some(LogLevel::Debug)).unwrap_err();
            assert_eq!(refused.kind(), crate::ErrorKind::InvalidArgument);
            entered_tx.lock().unwrap().send(()).unwrap();
            std::thread::sleep(Duration::from_millis(200));
            done.store(true, Relaxed);
        };
        route(Arc::new(sink), Some(LogLevel::Info)).unwrap();
        let logger = std::thread::spawn(|| tracing::info!("slow"));
        entered.recv_timeout(Duration::from_secs(10)).expect("the sink was called");
        unroute();
        assert!(finished.load(Relaxed), "unroute returned while the sink was still running");
        logger.join().unwrap();
        assert_eq!(level(), None);
        // From inside a sink: off at once, no wait for the call it is part of.
        route(
            Arc::new(|r: &LogRecord| {
                if r.message == "inside" {
                    unroute()
                }
            }),
            Some(LogLevel::Info),
        )
        .unwrap();
        tracing::info!("inside");
        assert_eq!(level(), None);
        unroute();
    }
}
