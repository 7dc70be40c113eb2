//! The SQL backends' name grammar, checked before anything is locked (a leaf: the store and
//! every family's file use it, and it uses none of them).

use crate::error::{Error, Result};

/// The SQL backends' name grammar (issue 35): every name but two kinds, refused with
/// `InvalidArgument` before anything is locked.
/// - A name ending in `#` and digits: `<name>#<i>` is slot `i` of the semaphore `<name>`
///   (semaphore.rs `slot_key`), so the mutex `x#0` was slot 0 of the semaphore `x`.
/// - `polylock:` and 48 lowercase hex digits: the form a name too long (or, on MySQL, not
///   lowercase) for the database is hashed to (polylock-id's `sql_names`), so it would be
///   another name's lock.
pub(super) fn check_name(key: &str) -> Result<()> {
    if let Some((_, digits)) = key.rsplit_once('#') {
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::invalid_argument(format!(
                "lock name '{key}' cannot be used on PostgreSQL or MySQL: it ends in '#' and digits, the form \
                 of a semaphore's slot lock ('<name>#<slot>'), so it would share a lock with the semaphore \
                 before the '#'; use another character than '#' before the digits"
            )));
        }
    }
    if key
        .strip_prefix("polylock:")
        .is_some_and(|hex| hex.len() == 48 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    {
        return Err(Error::invalid_argument(format!(
            "lock name '{key}' cannot be used on PostgreSQL or MySQL: 'polylock:' and 48 hex digits is the \
             form long names are hashed to, so it would share a lock with another name"
        )));
    }
    Ok(())
}
