//! The errors of ID work. `polylock` turns them into its own `Error` with the same kind.

use std::fmt;

/// What went wrong, in the terms a caller can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdErrorKind {
    /// An unusable argument: a layout with too many bits, a worker id too wide, a foreign ID.
    InvalidArgument,
    /// The clock cannot be trusted for IDs (before the epoch, past the layout, moved back).
    Clock,
    /// Every value of a range is used and the next is not there yet: ask again later.
    Exhausted,
    /// The system gave no random bits (UUIDv7 and ULID need them).
    Randomness,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdError {
    kind: IdErrorKind,
    message: String,
}

pub type Result<T, E = IdError> = std::result::Result<T, E>;

impl IdError {
    pub fn new(kind: IdErrorKind, message: impl Into<String>) -> Self {
        IdError { kind, message: message.into() }
    }

    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(IdErrorKind::InvalidArgument, message)
    }

    pub fn clock(message: impl Into<String>) -> Self {
        Self::new(IdErrorKind::Clock, message)
    }

    pub fn exhausted(message: impl Into<String>) -> Self {
        Self::new(IdErrorKind::Exhausted, message)
    }

    pub fn kind(&self) -> IdErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for IdError {}
