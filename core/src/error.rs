//! The one error type of polylock. Every binding maps [`ErrorKind`] to its own idiom
//! (a Python exception class, a Node `code`, a Java exception code, a C status).

use std::fmt;

/// What went wrong, in the terms a caller can act on.
/// Not `non_exhaustive`: each binding matches every kind, so a new kind cannot reach one
/// unmapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The caller passed something unusable: an empty name, a zero lease, an unknown URL scheme.
    InvalidArgument,
    /// The wait for a lock ended before the lock was free.
    Timeout,
    /// The caller tried to release a lock it does not hold.
    NotOwner,
    /// The caller held the lock, but the backend no longer does (lease expired, session died,
    /// the record was removed).
    Lost,
    /// The backend could not be reached, refused the credentials, or the client is closed.
    Connection,
    /// The backend answered with something unexpected, or a local resource (such as the clock
    /// behind ID generation) failed.
    Backend,
    /// The backend does not offer this primitive or kind of lock (say, a ShedLock lease lock
    /// on Redis). Reported when the handle is made, before anything is written.
    Unsupported,
    /// The caller gave up on the call (an asyncio cancel, an `AbortSignal`, a Java interrupt)
    /// before it finished; nothing it was taking is left held.
    Cancelled,
    /// A bug inside polylock, caught at a language boundary instead of crashing the caller;
    /// the message says where.
    Internal,
    /// A compare-and-set found another version than the one expected (someone else wrote
    /// first), or a value to create already exists.
    Conflict,
    /// A fenced write carried a token lower than one the value has already accepted: the
    /// writer's lock was taken over while it was paused.
    Fenced,
    /// IDs are used up until the next range is loaded or the worker lease is renewed;
    /// retrying later can succeed.
    Exhausted,
    /// Another attempt is working on this idempotency key now; retry later.
    InProgress,
    /// The idempotency key was used before with another payload (a different fingerprint).
    Mismatch,
}

/// The one table of error kinds every binding maps from: the stable name (a Node `code` is
/// `POLYLOCK_<name>`, the CLI and Python show it) and the stable number (the C status, the
/// Java exception's code). Numbers are never reused or reordered; a new kind takes the next.
/// Each binding's own table (C enum, Java enum, Node codes, Python classes) is checked
/// against this one by a test in that binding's suite.
impl ErrorKind {
    /// Every kind, in the order of their numbers.
    pub const ALL: [ErrorKind; 14] = [
        ErrorKind::Timeout,
        ErrorKind::NotOwner,
        ErrorKind::Lost,
        ErrorKind::Connection,
        ErrorKind::InvalidArgument,
        ErrorKind::Backend,
        ErrorKind::Internal,
        ErrorKind::Unsupported,
        ErrorKind::Cancelled,
        ErrorKind::Conflict,
        ErrorKind::Fenced,
        ErrorKind::Exhausted,
        ErrorKind::InProgress,
        ErrorKind::Mismatch,
    ];

    /// A stable, upper-snake-case name, used by bindings as an error code suffix.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "INVALID_ARGUMENT",
            ErrorKind::Timeout => "TIMEOUT",
            ErrorKind::NotOwner => "NOT_OWNER",
            ErrorKind::Lost => "LOST",
            ErrorKind::Connection => "CONNECTION",
            ErrorKind::Backend => "BACKEND",
            ErrorKind::Unsupported => "UNSUPPORTED",
            ErrorKind::Cancelled => "CANCELLED",
            ErrorKind::Internal => "INTERNAL",
            ErrorKind::Conflict => "CONFLICT",
            ErrorKind::Fenced => "FENCED",
            ErrorKind::Exhausted => "EXHAUSTED",
            ErrorKind::InProgress => "IN_PROGRESS",
            ErrorKind::Mismatch => "MISMATCH",
        }
    }

    /// A stable number, never 0 (0 is success in C): the C status and the Java code.
    pub fn code(self) -> u8 {
        match self {
            ErrorKind::Timeout => 1,
            ErrorKind::NotOwner => 2,
            ErrorKind::Lost => 3,
            ErrorKind::Connection => 4,
            ErrorKind::InvalidArgument => 5,
            ErrorKind::Backend => 6,
            ErrorKind::Internal => 7,
            ErrorKind::Unsupported => 8,
            ErrorKind::Cancelled => 9,
            ErrorKind::Conflict => 10,
            ErrorKind::Fenced => 11,
            ErrorKind::Exhausted => 12,
            ErrorKind::InProgress => 13,
            ErrorKind::Mismatch => 14,
        }
    }

    /// The kind named by [`ErrorKind::as_str`].
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error with a kind and a message that says what to do about it.
///
/// Messages never contain credentials: URLs are redacted before they are formatted.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    /// Structured facts for callers that act on them (see [`ErrorDetails`]).
    details: Option<Box<ErrorDetails>>,
}

/// What an error carries beyond its kind and message, for callers that act on it rather
/// than show it: bindings turn these into attributes of their exception or error objects.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorDetails {
    /// With `Conflict`: the value as it is now, `(bytes, version)`; `None` when there is none.
    Conflict { current: Option<(Vec<u8>, u64)> },
    /// With `Fenced`: the highest fencing token the value has accepted (the one that won).
    Fenced { winning_token: u64 },
    /// With `Exhausted` and `InProgress`: how long to wait before trying again.
    RetryAfter { after: std::time::Duration },
}

/// The result type of every fallible polylock call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), source: None, details: None }
    }

    /// Attach structured details (a conflict's current value, the winning fencing token, a
    /// retry-after).
    pub fn with_details(mut self, details: ErrorDetails) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    pub fn details(&self) -> Option<&ErrorDetails> {
        self.details.as_deref()
    }

    /// Attach the lower-level cause. Its text is part of the displayed message, so it must
    /// not carry credentials either.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Timeout, message)
    }
    pub fn not_owner(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotOwner, message)
    }
    pub fn lost(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Lost, message)
    }
    pub fn connection(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Connection, message)
    }
    pub fn backend(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Backend, message)
    }
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }
    pub fn cancelled(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Cancelled, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }
    pub fn fenced(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Fenced, message)
    }
    pub fn exhausted(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Exhausted, message)
    }
    pub fn in_progress(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InProgress, message)
    }
    pub fn mismatch(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Mismatch, message)
    }
}

impl Error {
    /// The same error with every secret of at least 3 characters replaced by `***` in its
    /// text, cause chain included (folded into the message then): the last guard for a
    /// message that quotes part of a URL as a backend split it (see `url::secrets`).
    pub(crate) fn without_secrets(self, secrets: &[String]) -> Self {
        let secrets: Vec<&str> = secrets.iter().map(String::as_str).filter(|s| s.chars().count() >= 3).collect();
        let text = self.to_string();
        if !secrets.iter().any(|secret| text.contains(secret)) {
            return self;
        }
        let message = secrets.iter().fold(text, |text, secret| text.replace(secret, "***"));
        Error { kind: self.kind, message, source: None, details: self.details }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The whole cause chain on one line: what bindings show to their users.
        f.write_str(&self.message)?;
        let mut cause = self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static));
        while let Some(err) = cause {
            write!(f, ": {err}")?;
            cause = err.source();
        }
        Ok(())
    }
}

/// ID errors keep their kind: a bad argument is `InvalidArgument`; a clock that cannot be
/// trusted is `Backend` (a local resource failed); IDs used up until the next millisecond,
/// range or renewal are `Exhausted`.
impl From<polylock_id::IdError> for Error {
    fn from(err: polylock_id::IdError) -> Self {
        let kind = match err.kind() {
            polylock_id::IdErrorKind::InvalidArgument => ErrorKind::InvalidArgument,
            polylock_id::IdErrorKind::Clock => ErrorKind::Backend,
            polylock_id::IdErrorKind::Exhausted => ErrorKind::Exhausted,
            polylock_id::IdErrorKind::Randomness => ErrorKind::Internal,
        };
        Error::new(kind, err.message())
    }
}

// No `source()`: Display already prints the chain, and reporting it twice would repeat it.
impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_includes_cause_chain() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied");
        let err = Error::connection("cannot open sqlite database at /x.db").with_source(io);
        assert_eq!(err.kind(), ErrorKind::Connection);
        assert_eq!(err.to_string(), "cannot open sqlite database at /x.db: permission denied");
    }

    #[test]
    fn the_table_lists_every_kind_once_in_number_order() {
        for (i, kind) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(usize::from(kind.code()), i + 1, "{kind}");
            assert_eq!(ErrorKind::from_name(kind.as_str()), Some(*kind));
        }
    }

    #[test]
    fn kind_names_are_stable() {
        assert_eq!(ErrorKind::NotOwner.as_str(), "NOT_OWNER");
        assert_eq!(ErrorKind::InvalidArgument.to_string(), "INVALID_ARGUMENT");
    }
}
