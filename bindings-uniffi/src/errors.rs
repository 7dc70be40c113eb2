//! The core's error kinds as one uniffi error enum: Ruby gets one exception class per variant,
//! which the gem maps to `Polylock::Error` subclasses (checked against `error_kinds()`).

use polylock::{Error, ErrorDetails, ErrorKind};

/// One variant per `polylock::ErrorKind`, carrying the core's message.
#[derive(Debug, thiserror::Error, uniffi::Error)]
pub enum PolylockError {
    #[error("{message}")]
    Timeout { message: String },
    #[error("{message}")]
    NotOwner { message: String },
    #[error("{message}")]
    Lost { message: String },
    #[error("{message}")]
    Connection { message: String },
    #[error("{message}")]
    InvalidArgument { message: String },
    #[error("{message}")]
    Backend { message: String },
    #[error("{message}")]
    Internal { message: String },
    #[error("{message}")]
    Unsupported { message: String },
    #[error("{message}")]
    Cancelled { message: String },
    /// `current_value`/`current_version`: the value as it is now (both nil: there is none).
    #[error("{message}")]
    Conflict { message: String, current_value: Option<Vec<u8>>, current_version: Option<u64> },
    /// `winning_token`: the highest fencing token the value has accepted.
    #[error("{message}")]
    Fenced { message: String, winning_token: Option<u64> },
    /// `retry_after_ms`: when to try again, if known.
    #[error("{message}")]
    Exhausted { message: String, retry_after_ms: Option<u64> },
    #[error("{message}")]
    InProgress { message: String, retry_after_ms: Option<u64> },
    #[error("{message}")]
    Mismatch { message: String },
}

impl From<Error> for PolylockError {
    fn from(err: Error) -> Self {
        let message = err.to_string();
        let (mut current_value, mut current_version, mut winning_token, mut retry_after_ms) = (None, None, None, None);
        match err.details() {
            Some(ErrorDetails::Conflict { current: Some((value, version)) }) => {
                current_value = Some(value.clone());
                current_version = Some(*version);
            }
            Some(ErrorDetails::Fenced { winning_token: token }) => winning_token = Some(*token),
            Some(ErrorDetails::RetryAfter { after }) => {
                retry_after_ms = Some(u64::try_from(after.as_millis()).unwrap_or(u64::MAX))
            }
            _ => {}
        }
        match err.kind() {
            ErrorKind::Timeout => PolylockError::Timeout { message },
            ErrorKind::NotOwner => PolylockError::NotOwner { message },
            ErrorKind::Lost => PolylockError::Lost { message },
            ErrorKind::Connection => PolylockError::Connection { message },
            ErrorKind::InvalidArgument => PolylockError::InvalidArgument { message },
            ErrorKind::Backend => PolylockError::Backend { message },
            ErrorKind::Internal => PolylockError::Internal { message },
            ErrorKind::Unsupported => PolylockError::Unsupported { message },
            ErrorKind::Cancelled => PolylockError::Cancelled { message },
            ErrorKind::Conflict => PolylockError::Conflict { message, current_value, current_version },
            ErrorKind::Fenced => PolylockError::Fenced { message, winning_token },
            ErrorKind::Exhausted => PolylockError::Exhausted { message, retry_after_ms },
            ErrorKind::InProgress => PolylockError::InProgress { message, retry_after_ms },
            ErrorKind::Mismatch => PolylockError::Mismatch { message },
        }
    }
}

impl From<polylock::id::IdError> for PolylockError {
    fn from(err: polylock::id::IdError) -> Self {
        Error::from(err).into()
    }
}

pub type Result<T, E = PolylockError> = std::result::Result<T, E>;

/// One row of the core's error table.
#[derive(uniffi::Record)]
pub struct ErrorKindInfo {
    /// The stable name (`NOT_OWNER`).
    pub name: String,
    /// The stable number (the C status, the Java code).
    pub code: u8,
}

/// The core's table of error kinds, `ErrorKind::ALL`, for the gem's table test.
#[uniffi::export]
pub fn error_kinds() -> Vec<ErrorKindInfo> {
    ErrorKind::ALL.iter().map(|kind| ErrorKindInfo { name: kind.as_str().to_string(), code: kind.code() }).collect()
}

/// Fails with an error of the kind named `name` (as `error_kinds()` names it), so the gem's
/// test can check that each kind arrives as its own Ruby class. An unknown name is
/// `InvalidArgument`.
#[uniffi::export]
pub fn fail_with_kind(name: String) -> Result<()> {
    let kind = ErrorKind::from_name(&name)
        .ok_or_else(|| Error::invalid_argument(format!("there is no error kind named '{name}'")))?;
    Err(Error::new(kind, format!("an error of kind {name}, as asked")).into())
}
