//! Waits and leases as Ruby writes them (seconds, `nil` for "not given") to the core's.

use std::time::Duration;

use polylock::duration::lease_from_millis;
use polylock::Error;

use crate::errors::Result;

/// How long to wait for a hold and how long to keep it.
#[derive(uniffi::Record, Clone, Copy, Debug, Default)]
pub struct AcquireOptions {
    /// Seconds to wait: `nil` waits as long as it takes, 0 tries once.
    #[uniffi(default = None)]
    pub wait_seconds: Option<f64>,
    /// Seconds the hold lasts unless released: `nil` lets the watchdog renew it.
    #[uniffi(default = None)]
    pub lease_seconds: Option<f64>,
}

impl AcquireOptions {
    pub fn to_core(self) -> Result<polylock::AcquireOptions> {
        Ok(polylock::AcquireOptions { wait: wait_from_seconds(self.wait_seconds)?, lease: lease(self.lease_seconds)? })
    }
}

/// A wait in seconds as Ruby passes it: `nil` waits as long as it takes, 0 tries once.
pub fn wait_from_seconds(seconds: Option<f64>) -> Result<Option<Duration>> {
    let Some(seconds) = seconds else { return Ok(None) };
    Duration::try_from_secs_f64(seconds).map(Some).map_err(|_| {
        Error::invalid_argument(format!(
            "wait must be a finite number of seconds >= 0 (or nil to wait forever), got {seconds}"
        ))
        .into()
    })
}

/// Zero and negative leases are the core's to refuse. Fractions of a millisecond round up,
/// so a tiny positive lease stays positive.
fn lease(seconds: Option<f64>) -> Result<Option<Duration>> {
    let Some(seconds) = seconds else { return Ok(None) };
    if !seconds.is_finite() {
        return Err(Error::invalid_argument(format!("lease must be a finite number of seconds, got {seconds}")).into());
    }
    // `as` saturates: a lease of 1e300 seconds becomes i64::MAX milliseconds.
    let millis = (seconds * 1000.0).ceil() as i64;
    Ok(Some(lease_from_millis(millis)?))
}
