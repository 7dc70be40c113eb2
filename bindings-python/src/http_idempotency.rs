//! The `Idempotency-Key` HTTP middleware's rules (`polylock::kit::http_idempotency`), as
//! functions for the Python middlewares in `python/polylock/contrib/` (ASGI, Django). Only
//! translation: which requests, the key, the fingerprint, the stored form of a response and
//! the refusals are the core's, so a record written here replays from any language's
//! middleware and back.

use std::time::Duration;

use polylock::kit::http_idempotency::{self as http, HttpResponse, Options, Refusal};
use polylock::ErrorKind;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{binding_error, IntoPyResult};

/// A response as Python sees it: (status, [(name, value), ...], body).
type PyResponse<'py> = (u16, Vec<(String, String)>, Bound<'py, PyBytes>);

fn to_py<'py>(py: Python<'py>, response: HttpResponse) -> PyResponse<'py> {
    (response.status, response.headers, PyBytes::new(py, &response.body))
}

/// The middleware's options, checked by the core.
#[pyclass(module = "polylock._polylock", frozen)]
pub struct NativeHttpOptions {
    options: Options,
}

#[pymethods]
impl NativeHttpOptions {
    /// Options from what the user gave (None: the default). `lifetime` in seconds.
    /// InvalidArgumentError naming the option for a header that is no header name, a
    /// lifetime out of range, or an empty or malformed list of methods.
    #[new]
    #[pyo3(signature = (header=None, lifetime=None, methods=None))]
    fn new(header: Option<&str>, lifetime: Option<f64>, methods: Option<Vec<String>>) -> PyResult<Self> {
        let lifetime = match lifetime {
            None => None,
            Some(seconds) => Some(Duration::try_from_secs_f64(seconds).map_err(|_| {
                binding_error(
                    ErrorKind::InvalidArgument,
                    format!("idempotency middleware option 'lifetime' must be a finite number of seconds > 0, got {seconds}"),
                )
            })?),
        };
        let options = Options::new(header, lifetime, methods.as_deref()).into_py_result()?;
        Ok(NativeHttpOptions { options })
    }

    /// The header that carries the key, as given (match it without regard to case).
    #[getter]
    fn header(&self) -> &str {
        &self.options.header
    }

    /// How long a completed key replays its response, in seconds.
    #[getter]
    fn lifetime(&self) -> f64 {
        self.options.lifetime.as_secs_f64()
    }

    /// The methods the middleware applies to, upper case.
    #[getter]
    fn methods(&self) -> Vec<String> {
        self.options.methods.clone()
    }

    /// Whether a request of `method` goes through the middleware.
    fn applies_to(&self, method: &str) -> bool {
        self.options.applies_to(method)
    }
}

/// The key a header value carries (trimmed, without the draft's quotes).
#[pyfunction]
pub fn http_key_of(header_value: &str) -> String {
    http::key_of(header_value).to_string()
}

/// None if `key` can key a request; else why not (the 400's detail).
#[pyfunction]
pub fn http_key_problem(key: &str) -> Option<String> {
    http::key_problem(key)
}

/// The default fingerprint of a request: method, path with query, body, hashed.
#[pyfunction]
pub fn http_fingerprint<'py>(py: Python<'py>, method: &str, path: &str, body: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &http::fingerprint(method, path, body))
}

/// Whether a response of `status` is stored (a 5xx is not: the attempt is abandoned).
#[pyfunction]
pub fn http_stores(status: u16) -> bool {
    http::stores(status)
}

/// The stored form of a response, without the per-connection headers.
/// InvalidArgumentError for a status outside 100..=599.
#[pyfunction]
pub fn http_encode_response<'py>(
    py: Python<'py>,
    status: u16,
    headers: Vec<(String, String)>,
    body: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let stored = http::encode_response(&HttpResponse { status, headers, body: body.to_vec() }).into_py_result()?;
    Ok(PyBytes::new(py, &stored))
}

/// A stored response read back: (status, headers, body). InvalidArgumentError if the record
/// holds something other than a middleware's response.
#[pyfunction]
pub fn http_decode_response<'py>(py: Python<'py>, stored: &[u8]) -> PyResult<PyResponse<'py>> {
    Ok(to_py(py, http::decode_response(stored).into_py_result()?))
}

/// The response for a refusal: `refusal` is "bad_key" (400), "in_progress" (409, with
/// `retry_after` seconds) or "mismatch" (422).
#[pyfunction]
#[pyo3(signature = (refusal, key, retry_after=None))]
pub fn http_refusal_response<'py>(
    py: Python<'py>,
    refusal: &str,
    key: &str,
    retry_after: Option<f64>,
) -> PyResult<PyResponse<'py>> {
    let refusal = match refusal {
        "bad_key" => Refusal::BadKey,
        "mismatch" => Refusal::Mismatch,
        "in_progress" => {
            let seconds = retry_after.unwrap_or(0.0);
            let retry_after = Duration::try_from_secs_f64(seconds).map_err(|_| {
                binding_error(ErrorKind::InvalidArgument, format!("retry_after must be seconds >= 0, got {seconds}"))
            })?;
            Refusal::InProgress { retry_after }
        }
        other => {
            return Err(binding_error(
                ErrorKind::InvalidArgument,
                format!("refusal must be 'bad_key', 'in_progress' or 'mismatch', got {other:?}"),
            ))
        }
    };
    Ok(to_py(py, http::refusal_response(refusal, key)))
}

/// The module's constants: the defaults and the replay header's name.
pub fn add_constants(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("HTTP_REPLAYED_HEADER", http::REPLAYED_HEADER)?;
    module.add("HTTP_DEFAULT_HEADER", http::DEFAULT_HEADER)?;
    module.add("HTTP_DEFAULT_LIFETIME", http::DEFAULT_LIFETIME.as_secs_f64())?;
    module.add("HTTP_DEFAULT_METHODS", http::DEFAULT_METHODS.to_vec())?;
    module.add("HTTP_MAX_KEY_LEN", http::MAX_KEY_LEN)?;
    Ok(())
}
