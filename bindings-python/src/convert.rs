//! Seconds as Python writes them (floats) to the durations the core takes.

use std::time::Duration;

use polylock::duration::lease_from_millis;
use polylock::ErrorKind;
use pyo3::PyResult;

use crate::errors::{binding_error, IntoPyResult};

/// A wait in seconds: `None` waits as long as it takes, `0` tries once.
pub fn wait_from_seconds(seconds: Option<f64>) -> PyResult<Option<Duration>> {
    let Some(seconds) = seconds else { return Ok(None) };
    Duration::try_from_secs_f64(seconds).map(Some).map_err(|_| {
        binding_error(
            ErrorKind::InvalidArgument,
            format!("timeout must be a finite number of seconds >= 0 (or None to wait forever), got {seconds}"),
        )
    })
}

/// A lease in seconds: `None` lets the watchdog renew the lock; zero and negative leases are
/// the core's to reject. Fractions of a millisecond round up, so a tiny positive lease stays
/// positive.
pub fn lease_from_seconds(seconds: Option<f64>) -> PyResult<Option<Duration>> {
    let Some(seconds) = seconds else { return Ok(None) };
    if !seconds.is_finite() {
        return Err(binding_error(
            ErrorKind::InvalidArgument,
            format!("lease must be a finite number of seconds, got {seconds}"),
        ));
    }
    // `as` saturates: a lease of 1e300 seconds becomes i64::MAX milliseconds.
    let millis = (seconds * 1000.0).ceil() as i64;
    lease_from_millis(millis).map(Some).into_py_result()
}
