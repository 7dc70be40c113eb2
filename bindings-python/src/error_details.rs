//! The structured details of a core error as attributes of the Python exception:
//! `current_value` and `current_version` on a ConflictError, `winning_token` on a
//! FencedError, `retry_after` (seconds) on an InProgressError or ExhaustedError.

use polylock::{Error, ErrorDetails};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::to_py_err;

/// The exception for `err`, its details set as attributes.
pub fn to_py_err_with_details(err: Error) -> PyErr {
    let details = err.details().cloned();
    let py_err = to_py_err(err);
    let Some(details) = details else { return py_err };
    Python::attach(|py| {
        let exception = py_err.value(py);
        let set = match details {
            ErrorDetails::Conflict { current } => {
                let (value, version) = match current {
                    Some((value, version)) => (Some(PyBytes::new(py, &value)), Some(version)),
                    None => (None, None),
                };
                exception.setattr("current_value", value).and_then(|()| exception.setattr("current_version", version))
            }
            ErrorDetails::Fenced { winning_token } => exception.setattr("winning_token", winning_token),
            ErrorDetails::RetryAfter { after } => exception.setattr("retry_after", after.as_secs_f64()),
            _ => Ok(()),
        };
        match set {
            Ok(()) => py_err,
            Err(failed) => failed,
        }
    })
}

/// Shorthand for `map_err(to_py_err_with_details)`.
pub trait IntoPyResultWithDetails<T> {
    fn with_details(self) -> PyResult<T>;
}

impl<T> IntoPyResultWithDetails<T> for polylock::Result<T> {
    fn with_details(self) -> PyResult<T> {
        self.map_err(to_py_err_with_details)
    }
}
