//! How a lock's storage key (`<namespace>:<name>`, or the bare name) becomes what each SQL
//! database locks on. The mapping is fixed, so any language can compute the same lock:
//!
//! - **PostgreSQL session lock**: the advisory lock key is the first 8 bytes of
//!   SHA-256(key as UTF-8), read as a big-endian signed 64-bit integer, passed to the
//!   one-argument `pg_advisory_lock(bigint)`. For `"orders:42"` that is
//!   [`postgres_advisory_key`]`("orders:42")`.
//! - **MySQL/MariaDB session lock** (`GET_LOCK`): the key itself when it is at most 64
//!   characters and already lowercase (MySQL rejects longer names and folds case, MariaDB
//!   does not, so only lowercase names mean the same lock on both); otherwise
//!   `polylock:` followed by the first 48 lowercase hex digits of SHA-256(key), 57 characters.
//! - **Lease lock** (ShedLock's `shedlock.name`, `VARCHAR(64)`): the key itself when it is at
//!   most 64 characters, so a ShedLock job of the same name is the same lock; otherwise the
//!   same hashed form as above. Case follows the table's collation, as it does for ShedLock
//!   (MySQL's default collation treats `Job` and `job` as one row).
//! - **Fencing counters** (`polylock_fencing.name`): the name the lock is taken on, as above
//!   (the decimal advisory key is not used: the PostgreSQL session lock counts under the key).

use sha2::{Digest, Sha256};

/// ShedLock's `name VARCHAR(64)` and MySQL's `GET_LOCK` limit, in characters.
pub const MAX_SQL_NAME_CHARS: usize = 64;

/// The `pg_advisory_lock(bigint)` key of a lock.
pub fn postgres_advisory_key(key: &str) -> i64 {
    let digest = Sha256::digest(key.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

/// The `GET_LOCK` name of a lock on MySQL and MariaDB.
pub fn mysql_lock_name(key: &str) -> String {
    if key.chars().count() <= MAX_SQL_NAME_CHARS && key.to_lowercase() == key {
        key.to_string()
    } else {
        hashed_name(key)
    }
}

/// The `shedlock.name` of a lease lock.
pub fn lease_name(key: &str) -> String {
    if key.chars().count() <= MAX_SQL_NAME_CHARS {
        key.to_string()
    } else {
        hashed_name(key)
    }
}

fn hashed_name(key: &str) -> String {
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest[..24].iter().map(|b| format!("{b:02x}")).collect();
    format!("polylock:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashed_names_fit_and_are_lowercase() {
        let long = "x".repeat(65);
        let name = mysql_lock_name(&long);
        assert_eq!(name.len(), 57);
        assert!(name.starts_with("polylock:"));
        assert_eq!(name, name.to_lowercase());
        assert_eq!(lease_name(&long), name);
        assert_eq!(lease_name(&"x".repeat(64)), "x".repeat(64));
    }

    #[test]
    fn case_decides_the_mysql_form_but_not_the_lease_form() {
        assert_eq!(mysql_lock_name("orders:42"), "orders:42");
        assert_ne!(mysql_lock_name("Orders:42"), "Orders:42");
        assert_ne!(mysql_lock_name("Orders:42"), mysql_lock_name("orders:42"));
        assert_eq!(lease_name("Orders:42"), "Orders:42");
    }
}
