//! What a hold is of, per primitive family: the kind of a mutex, the side of a read-write
//! lock, the size of a semaphore. The engine keys its tables and queues by these; a store
//! matches on them exhaustively, so a kind it does not know can never fall into another
//! kind's layout.

use std::fmt;
use std::hash::Hash;
use std::str::FromStr;

use crate::error::{Error, Result};

/// What every family's kind has in common, so the engine can treat the families alike.
pub trait HoldKind: Copy + Eq + Hash + fmt::Debug + fmt::Display + Send + Sync + 'static {
    /// What a hold of this kind is called in messages: "lock", "read lock", "semaphore".
    fn noun(self) -> &'static str;

    /// The kind as metrics and log fields name it: `reentrant`, `fair`, `token`, `lease`,
    /// `read`, `write`, `semaphore`.
    fn metric_label(self) -> &'static str {
        self.noun()
    }
}

/// The kinds of mutex a backend may offer. Every backend offers `Reentrant`, the default.
/// Each names a semantics, and on each backend one wire layout (see the README's tables).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LockKind {
    /// A reentrant mutex: Redisson's RLock on Redis, etcd's Mutex, Curator's
    /// InterProcessMutex, a session lock on SQL, a lease row on SQLite.
    #[default]
    Reentrant,
    /// First come, first served (Redisson's fair lock).
    Fair,
    /// The plain token lock of redis-py and node-redlock (`SET NX PX`).
    Token,
    /// ShedLock's lease table on SQL databases.
    Lease,
}

impl LockKind {
    /// Every kind, for capability listings and error messages.
    pub const ALL: [LockKind; 4] = [LockKind::Reentrant, LockKind::Fair, LockKind::Token, LockKind::Lease];

    pub fn as_str(self) -> &'static str {
        match self {
            LockKind::Reentrant => "reentrant",
            LockKind::Fair => "fair",
            LockKind::Token => "token",
            LockKind::Lease => "lease",
        }
    }
}

impl HoldKind for LockKind {
    fn noun(self) -> &'static str {
        "lock"
    }

    fn metric_label(self) -> &'static str {
        self.as_str()
    }
}

impl fmt::Display for LockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LockKind {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        LockKind::ALL.into_iter().find(|kind| kind.as_str() == text).ok_or_else(|| {
            Error::invalid_argument(format!("unknown lock kind '{text}'; use reentrant, fair, token or lease"))
        })
    }
}

/// The two sides of a read-write lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RwMode {
    /// Shared: any number of owners at once, while nobody holds the write side.
    Read,
    /// Exclusive: one owner, while nobody else holds either side.
    Write,
}

impl HoldKind for RwMode {
    fn noun(self) -> &'static str {
        match self {
            RwMode::Read => "read lock",
            RwMode::Write => "write lock",
        }
    }

    fn metric_label(self) -> &'static str {
        match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
        }
    }
}

impl fmt::Display for RwMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
        })
    }
}

/// A semaphore of this many permits. The count is part of the kind so a store can refuse an
/// acquisition that disagrees with the count the name was first used with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Permits(pub u32);

impl Permits {
    /// Whether `fixed`, the count the semaphore `name` got from its first use, is this one.
    /// Another count is the caller's mistake, refused in the same words on every backend.
    pub fn check_fixed(self, name: &str, fixed: u32) -> Result<()> {
        if fixed == self.0 {
            return Ok(());
        }
        Err(self.other_count(name, fixed))
    }

    /// The error for asking the semaphore `name`, whose first use fixed it at `fixed`
    /// permits, for this other count.
    pub fn other_count(self, name: &str, fixed: u32) -> Error {
        Error::invalid_argument(format!(
            "semaphore '{name}' has {fixed} permits (fixed when it was first used); it was asked for with {}",
            self.0
        ))
    }
}

impl HoldKind for Permits {
    fn noun(self) -> &'static str {
        "semaphore"
    }
}

impl fmt::Display for Permits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "semaphore of {} permits", self.0)
    }
}
