//! `NativeIdempotency` and `NativeTicket`: idempotency keys, step by step. `run` and the
//! decorator are Python (python/polylock/_values.py), so the work can be any callable,
//! sync or async.

use std::sync::Arc;
use std::time::Duration;

use polylock::kit::idempotency_codec::{self, StoredResponse};
use polylock::{Begin, Idempotency, Ticket};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error_details::IntoPyResultWithDetails;
use crate::errors::{binding_error, IntoPyResult};
use crate::shared::{ClientShared, NativeClient};

#[pyclass(module = "polylock._polylock", frozen)]
pub struct NativeIdempotency {
    shared: Arc<ClientShared>,
    idempotency: Idempotency,
}

#[pyclass(module = "polylock._polylock", frozen)]
pub struct NativeTicket {
    shared: Arc<ClientShared>,
    ticket: Arc<Ticket>,
}

fn seconds(what: &str, seconds: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(seconds).map_err(|_| {
        binding_error(
            polylock::ErrorKind::InvalidArgument,
            format!("{what} must be a finite number of seconds > 0, got {seconds}"),
        )
    })
}

#[pymethods]
impl NativeIdempotency {
    /// Idempotency keys of `namespace` on `client`'s backend.
    #[staticmethod]
    fn open(client: &NativeClient, namespace: &str, retention: f64, in_progress_ttl: f64) -> PyResult<Self> {
        let (retention, ttl) = (seconds("retention", retention)?, seconds("in_progress_ttl", in_progress_ttl)?);
        let idempotency = client.shared.client()?.idempotency_with(namespace, retention, ttl).into_py_result()?;
        Ok(NativeIdempotency { shared: client.shared.clone(), idempotency })
    }

    #[getter]
    fn namespace(&self) -> &str {
        self.idempotency.namespace()
    }

    /// The fingerprint stored for bytes (or text as UTF-8): polylock::kit::idempotency_codec.
    #[staticmethod]
    fn fingerprint_of_bytes<'py>(py: Python<'py>, payload: &[u8]) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &idempotency_codec::fingerprint_of_bytes(payload))
    }

    /// The fingerprint stored for a structured payload given as JSON text (canonical, hashed).
    #[staticmethod]
    fn fingerprint_of_json<'py>(py: Python<'py>, json: &str) -> PyResult<Bound<'py, PyBytes>> {
        let fingerprint = idempotency_codec::fingerprint_of_json(json).into_py_result()?;
        Ok(PyBytes::new(py, &fingerprint))
    }

    /// `run`'s stored form of a response: bytes as they are, or JSON text.
    #[staticmethod]
    fn encode_response<'py>(py: Python<'py>, is_json: bool, body: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        let response = if is_json {
            let text = std::str::from_utf8(body)
                .map_err(|_| binding_error(polylock::ErrorKind::InvalidArgument, "a JSON response must be UTF-8"))?;
            StoredResponse::Json(text.to_owned())
        } else {
            StoredResponse::Bytes(body.to_vec())
        };
        Ok(PyBytes::new(py, &idempotency_codec::encode_response(&response)))
    }

    /// A stored response read back: (is_json, body).
    #[staticmethod]
    fn decode_response<'py>(py: Python<'py>, stored: &[u8]) -> PyResult<(bool, Bound<'py, PyBytes>)> {
        Ok(match idempotency_codec::decode_response(stored).into_py_result()? {
            StoredResponse::Bytes(bytes) => (false, PyBytes::new(py, &bytes)),
            StoredResponse::Json(text) => (true, PyBytes::new(py, text.as_bytes())),
        })
    }

    /// ("acquired", ticket) | ("replay", bytes) | ("in_progress", retry_after seconds) |
    /// ("mismatch", None).
    fn begin(&self, py: Python<'_>, key: &str, fingerprint: &[u8]) -> PyResult<(&'static str, Py<PyAny>)> {
        let (idempotency, key, fingerprint) = (self.idempotency.clone(), key.to_string(), fingerprint.to_vec());
        let begun = self.shared.wait(py, async move { idempotency.begin(&key, &fingerprint).await })?.with_details()?;
        Ok(match begun {
            Begin::Acquired(ticket) => {
                let ticket = NativeTicket { shared: self.shared.clone(), ticket: Arc::new(ticket) };
                ("acquired", Py::new(py, ticket)?.into_any())
            }
            Begin::Replay(response) => ("replay", PyBytes::new(py, &response).into_any().unbind()),
            Begin::InProgress { retry_after } => {
                ("in_progress", retry_after.as_secs_f64().into_pyobject(py)?.into_any().unbind())
            }
            Begin::Mismatch => ("mismatch", py.None()),
        })
    }
}

#[pymethods]
impl NativeTicket {
    #[getter]
    fn token(&self) -> u64 {
        self.ticket.token()
    }

    #[getter]
    fn key(&self) -> &str {
        self.ticket.key()
    }

    fn complete(&self, py: Python<'_>, response: &[u8]) -> PyResult<()> {
        let (ticket, response) = (self.ticket.clone(), response.to_vec());
        self.shared.wait(py, async move { ticket.complete(&response).await })?.with_details()
    }

    fn abandon(&self, py: Python<'_>) -> PyResult<()> {
        let ticket = self.ticket.clone();
        self.shared.wait(py, async move { ticket.abandon().await })?.with_details()
    }

    fn extend(&self, py: Python<'_>) -> PyResult<()> {
        let ticket = self.ticket.clone();
        self.shared.wait(py, async move { ticket.extend().await })?.with_details()
    }
}
