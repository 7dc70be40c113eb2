//! Core errors become the exception classes of `polylock._errors`, one per `ErrorKind`.
//!
//! The classes are plain Python (so that they can also subclass `TimeoutError`,
//! `ConnectionError` and `ValueError`); this module only picks the class and the message.

use polylock::{Error, ErrorKind};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// The Python class for each kind, by name in `polylock._errors`.
fn class_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidArgument => "InvalidArgumentError",
        ErrorKind::Timeout => "LockTimeoutError",
        ErrorKind::NotOwner => "NotOwnerError",
        ErrorKind::Lost => "LockLostError",
        ErrorKind::Connection => "PolylockConnectionError",
        ErrorKind::Backend => "BackendError",
        ErrorKind::Unsupported => "UnsupportedError",
        ErrorKind::Cancelled => "PolylockCancelledError",
        ErrorKind::Internal => "InternalError",
        ErrorKind::Conflict => "ConflictError",
        ErrorKind::Fenced => "FencedError",
        ErrorKind::Exhausted => "ExhaustedError",
        ErrorKind::InProgress => "InProgressError",
        ErrorKind::Mismatch => "MismatchError",
    }
}

static ERRORS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn exception_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let module = ERRORS_MODULE.get_or_try_init(py, || py.import("polylock._errors").map(Bound::unbind))?;
    Ok(module.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// The exception to raise for a core error: the kind's class with the core's message.
pub fn to_py_err(err: Error) -> PyErr {
    let kind = err.kind();
    let message = err.to_string();
    Python::attach(|py| match exception_class(py, class_name(kind)) {
        Ok(class) => PyErr::from_value(match class.call1((message.clone(),)) {
            Ok(instance) => instance,
            Err(failed) => return failed,
        }),
        Err(import_failed) => import_failed,
    })
}

/// Shorthand for `map_err(to_py_err)`.
pub trait IntoPyResult<T> {
    fn into_py_result(self) -> PyResult<T>;
}

impl<T, E: Into<polylock::Error>> IntoPyResult<T> for Result<T, E> {
    fn into_py_result(self) -> PyResult<T> {
        self.map_err(|err| to_py_err(err.into()))
    }
}

/// An error the binding itself raises, of the given kind (say, a client used after fork()).
pub fn binding_error(kind: ErrorKind, message: impl Into<String>) -> PyErr {
    to_py_err(Error::new(kind, message))
}
