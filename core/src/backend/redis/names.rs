//! Which names would share a Redis key with another name's internal keys (issue 35), refused
//! before anything is written. A name's own layout lives at the name itself; what belongs to
//! it beside that carries a hash tag (Redisson's `prefixName` and `suffixName`):
//! `redisson_lock_token:{x}`, `redisson_lock_queue:{x}`, `redisson_lock_timeout:{x}`,
//! `polylock_value:{x}`, `polylock_counter:{x}`, `{x}:timeout` (a semaphore's permits),
//! `{x}:polylock_writer_waiting` and `{x}:<owner>:rwlock_timeout:<n>` (a read-write lock's).
//! Every such key contains `{`, so a name without `{` never meets one; a name with `{` in one
//! of those forms is another name's key (a lock named `{x}:timeout` was the permits of the
//! semaphore `x`), and is refused.

use crate::error::{Error, Result};

/// The prefixes of the keys kept beside a name (never channels: those are not keys).
const PREFIXES: [&str; 5] =
    ["redisson_lock_token:", "redisson_lock_queue:", "redisson_lock_timeout:", "polylock_value:", "polylock_counter:"];
/// The suffixes of the keys kept beside a semaphore and a read-write lock.
const SUFFIXES: [&str; 2] = [":timeout", ":polylock_writer_waiting"];
/// What a read-write lock's per-hold lease keys have before their number.
const READ_HOLD: &str = ":rwlock_timeout:";

/// `Ok` unless the storage key `key` has the form of an internal key of another name.
pub(super) fn check_key(key: &str) -> Result<()> {
    if !key.contains('{') {
        return Ok(());
    }
    let form = PREFIXES
        .iter()
        .find(|p| key.starts_with(**p))
        .map(|p| format!("begins with '{p}'"))
        .or_else(|| SUFFIXES.iter().find(|s| key.ends_with(**s)).map(|s| format!("ends with '{s}'")))
        .or_else(|| key.contains(READ_HOLD).then(|| format!("contains '{READ_HOLD}'")));
    match form {
        None => Ok(()),
        Some(form) => Err(Error::invalid_argument(format!(
            "the name '{}' has a hash tag ('{{') and {form}: on Redis that is the key another name keeps \
             beside its lock, semaphore, read-write lock, value or counter (Redisson's layout); use another name",
            key.escape_debug()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::super::rw_scripts::RwKeys;
    use super::super::scripts::LockKeys;
    use super::super::semaphore_scripts::SemaphoreKeys;
    use super::*;

    #[test]
    fn every_internal_key_is_refused_as_a_name_and_plain_names_pass() {
        for name in ["x", "orders:42", "{user}:7", "a:timeout", "job:leader"] {
            check_key(name).unwrap();
            let lock = LockKeys::new(name);
            let semaphore = SemaphoreKeys::new(name);
            let rw = RwKeys::new(name);
            let internal = [
                lock.token(),
                lock.queue(),
                lock.timeouts(),
                semaphore.timeouts(),
                rw.writer_mark(),
                format!("{}:3", rw.timeout_prefix("u:7")),
                super::super::values::value_key(name),
                super::super::counters::counter_key(name),
            ];
            for key in internal {
                let err = check_key(&key).unwrap_err();
                assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument, "{key}");
            }
        }
    }
}
