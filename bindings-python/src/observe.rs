//! The core's events handed to Python's `logging`, and its metrics as Python values: the
//! kit's `log_bridge` and `metrics_json` translated, no logic of their own. The Python half
//! (`python/polylock/_observe.py`) picks the level at import and builds the `LogRecord`s.
//!
//! The sink runs on whichever thread logged, most often one of a client's runtime workers,
//! and takes the GIL there to call Python. That is safe only because no thread of this
//! binding waits for a runtime worker, or for a lock of the core a worker may hold while it
//! logs, with the GIL held: every blocking call and every look at a hold's state releases
//! the GIL first (`ClientShared::wait`, `py.detach` in lock.rs, pending.rs, multi_lock.rs).

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use polylock::kit::log_bridge::{self, LogLevel, LogRecord};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::IntoPyResult;

/// Records go to Python only while this is set: cleared at interpreter exit, before the
/// sink is dropped, so a worker that picked up the sink just then does not call into an
/// interpreter that is finalizing.
static ROUTED: AtomicBool = AtomicBool::new(false);

/// The `logging` level of a record: ERROR, WARNING, INFO, DEBUG, and 5 for trace.
fn python_level(level: LogLevel) -> u8 {
    match level {
        LogLevel::Error => 40,
        LogLevel::Warn => 30,
        LogLevel::Info => 20,
        LogLevel::Debug => 10,
        LogLevel::Trace => 5,
    }
}

/// The level the environment asks for (`POLYLOCK_LOG`, else `DEBUG=polylock`): a level name,
/// `"off"`, or None when it says nothing. InvalidArgumentError for an unknown name.
#[pyfunction]
pub fn log_level_from_env() -> PyResult<Option<&'static str>> {
    Ok(LogLevel::from_env().into_py_result()?.map(LogLevel::name_of))
}

/// Hand the core's records at `level` and above to `emit(levelno, logger_name, target, line, message,
/// fields)`, called with the GIL on the thread that logged.
#[pyfunction]
pub fn route_logging(py: Python<'_>, emit: Py<PyAny>, level: &str) -> PyResult<()> {
    let level = LogLevel::parse(level).into_py_result()?;
    let sink = move |record: &LogRecord| {
        if !ROUTED.load(Relaxed) {
            return;
        }
        // None: the interpreter is finalizing; the record is dropped.
        Python::try_attach(|py| {
            let emitted = (|| {
                let fields = PyDict::new(py);
                for (key, value) in &record.fields {
                    fields.set_item(key, value)?;
                }
                let args = (
                    python_level(record.level),
                    record.logger_name(),
                    &record.target,
                    record.line(),
                    &record.message,
                    fields,
                );
                emit.call1(py, args).map(drop)
            })();
            if let Err(err) = emitted {
                // A failing handler is logging's to report (Handler.handleError); this is
                // the binding's own code failing, shown as Python shows such errors.
                err.write_unraisable(py, None);
            }
        });
    };
    ROUTED.store(true, Relaxed);
    // Without the GIL: route waits for calls of a previous sink, which may wait for it.
    py.detach(|| log_bridge::route(Arc::new(sink), level)).into_py_result()
}

/// Stop handing records to Python (registered with `atexit`). It returns once no record is
/// on its way to Python, so nothing is logged after it.
#[pyfunction]
pub fn unroute_logging(py: Python<'_>) {
    ROUTED.store(false, Relaxed);
    // Without the GIL: a worker inside the sink may be waiting for it.
    py.detach(log_bridge::unroute);
}

/// Change the level: a name of `LogLevel::parse` (`off`, `error`, `warn`/`warning`, `info`,
/// `debug`, `trace`, any case); InvalidArgumentError otherwise.
#[pyfunction]
pub fn set_log_level(py: Python<'_>, level: &str) -> PyResult<()> {
    let level = LogLevel::parse(level).into_py_result()?;
    py.detach(|| log_bridge::set_level(level));
    Ok(())
}

/// The level records are handed on at: `off`, `error`, `warn`, `info`, `debug` or `trace`.
#[pyfunction]
pub fn log_level() -> &'static str {
    LogLevel::name_of(log_bridge::level())
}

/// The process's metrics as JSON text (`polylock.metrics()` parses it).
#[pyfunction]
pub fn metrics_json(py: Python<'_>) -> String {
    py.detach(polylock::kit::metrics_json::process_metrics_json)
}

/// The process's metrics in Prometheus' text exposition format.
#[pyfunction]
pub fn prometheus_text(py: Python<'_>) -> String {
    py.detach(polylock::metrics::prometheus_text)
}

/// Count (true, the default) or stop counting (false) from now on.
#[pyfunction]
pub fn set_metrics_enabled(enabled: bool) {
    polylock::metrics::set_enabled(enabled);
}

#[pyfunction]
pub fn metrics_enabled() -> bool {
    polylock::metrics::is_enabled()
}
