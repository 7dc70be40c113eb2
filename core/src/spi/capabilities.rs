//! What a backend offers, declared up front, so that asking for something it lacks fails
//! when the handle is made (`Unsupported`), before anything is written.

use super::kind::LockKind;
use crate::error::{Error, Result};

/// The primitive families, as capability errors name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Primitive {
    Lock(LockKind),
    ReadWriteLock,
    Semaphore,
    Counters,
    VersionedValues,
    Election,
}

impl std::fmt::Display for Primitive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Primitive::Lock(kind) => write!(f, "{kind} locks"),
            Primitive::ReadWriteLock => f.write_str("read-write locks"),
            Primitive::Semaphore => f.write_str("semaphores"),
            Primitive::Counters => f.write_str("counters"),
            Primitive::VersionedValues => f.write_str("versioned values"),
            Primitive::Election => f.write_str("leader elections"),
        }
    }
}

/// The most permits a semaphore may have, on every backend but the SQL ones: each permit
/// is at most a row, key or node of its own, and waiters read the holders in one request.
pub const MAX_PERMITS: u32 = 100_000;

/// The most permits a semaphore may have on PostgreSQL and MySQL/MariaDB, where a permit is a
/// slot lock and each waiter tries every slot, one statement each, about once a second.
pub const MAX_SQL_PERMITS: u32 = 1_000;

/// A bound on the holds one client keeps at once where each keeps a connection of its own
/// (SQL session locks: `max_sessions`): a multi-lock of more such parts could never be taken,
/// and is refused when it is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionBound {
    /// The most such holds at once.
    pub max: u32,
    /// The option that sets it, for the message.
    pub option: &'static str,
    /// The mutex kinds that keep a connection each; read and write sides always do.
    pub lock_kinds: &'static [LockKind],
}

/// One backend's offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The backend's name as errors show it: "redis", "sqlite", ...
    pub backend: &'static str,
    pub lock_kinds: &'static [LockKind],
    pub rw_locks: bool,
    pub semaphores: bool,
    /// Counters that hand out ranges ([`super::CounterStore`]).
    pub counters: bool,
    /// Values written by compare-and-set ([`super::VersionStore`]).
    pub versioned_values: bool,
    /// Leader elections: from a lock hold and a versioned value, or in a layout of the
    /// backend's own ([`super::ElectionStore`]).
    pub elections: bool,
}

impl Capabilities {
    /// A backend that offers mutexes of `lock_kinds` and nothing else (yet).
    pub const fn locks_only(backend: &'static str, lock_kinds: &'static [LockKind]) -> Self {
        Capabilities {
            backend,
            lock_kinds,
            rw_locks: false,
            semaphores: false,
            counters: false,
            versioned_values: false,
            elections: false,
        }
    }

    /// The most permits a semaphore may have on this backend: [`MAX_SQL_PERMITS`] on
    /// PostgreSQL and MySQL/MariaDB, [`MAX_PERMITS`] elsewhere.
    pub fn max_permits(&self) -> u32 {
        match self.backend {
            "postgres" | "mysql" => MAX_SQL_PERMITS,
            _ => MAX_PERMITS,
        }
    }

    pub fn offers(&self, primitive: Primitive) -> bool {
        match primitive {
            Primitive::Lock(kind) => self.lock_kinds.contains(&kind),
            Primitive::ReadWriteLock => self.rw_locks,
            Primitive::Semaphore => self.semaphores,
            Primitive::Counters => self.counters,
            Primitive::VersionedValues => self.versioned_values,
            Primitive::Election => self.elections,
        }
    }

    /// `Ok` if the backend offers `primitive`, else an `Unsupported` error that names both.
    pub fn check(&self, primitive: Primitive) -> Result<()> {
        if self.offers(primitive) {
            return Ok(());
        }
        let offered: Vec<&str> = self.lock_kinds.iter().map(|kind| kind.as_str()).collect();
        Err(Error::unsupported(format!(
            "the {} backend does not offer {primitive} (its lock kinds: {}{}{})",
            self.backend,
            offered.join(", "),
            if self.rw_locks { "; read-write locks" } else { "" },
            if self.semaphores { "; semaphores" } else { "" },
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn a_missing_primitive_is_unsupported_and_named() {
        let caps = Capabilities {
            backend: "redis",
            lock_kinds: &[LockKind::Reentrant],
            rw_locks: false,
            semaphores: true,
            counters: false,
            versioned_values: false,
            elections: false,
        };
        assert!(caps.check(Primitive::Lock(LockKind::Reentrant)).is_ok());
        assert!(caps.check(Primitive::Semaphore).is_ok());
        let err = caps.check(Primitive::Lock(LockKind::Lease)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        assert!(err.message().contains("redis") && err.message().contains("lease locks"), "{err}");
        let err = caps.check(Primitive::ReadWriteLock).unwrap_err();
        assert!(err.message().contains("read-write locks"), "{err}");
    }
}
