//! Lock names as users give them, and the storage key a backend uses for them.

use crate::error::{Error, Result};

/// Longest accepted lock name, in bytes. Long enough for any sensible key; short enough that
/// every backend can store it (ZooKeeper paths, SQL primary keys after hashing).
pub const MAX_NAME_LEN: usize = 512;

pub(crate) fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid_argument("a lock name must not be empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(Error::invalid_argument(format!(
            "lock name is {} bytes long; the limit is {MAX_NAME_LEN} bytes (hash long names before using them)",
            name.len()
        )));
    }
    if name.chars().any(|c| c == '\0') {
        return Err(Error::invalid_argument("a lock name must not contain NUL characters"));
    }
    Ok(())
}

/// Refuse a namespace that contains the separator `:` (issue 35). Keys are
/// `<namespace>:<name>` and names may contain `:`, so with a `:` in namespaces the namespace
/// `a` with the name `b:c` and the namespace `a:b` with the name `c` were one key: two
/// applications kept apart by namespaces shared each other's locks. A namespace is everything
/// before the first `:` of a key, so it cannot contain one.
pub(crate) fn check_namespace(namespace: &str) -> Result<()> {
    if namespace.contains(':') {
        return Err(Error::invalid_argument(format!(
            "URL option 'namespace' must not contain ':' (got '{namespace}'): keys are '<namespace>:<name>', \
             so namespace 'a:b' with name 'c' would be namespace 'a' with name 'b:c'; use another character \
             such as '.' or '-'"
        )));
    }
    validate_name(namespace)
        .map_err(|err| Error::invalid_argument(format!("URL option 'namespace': {}", err.message())))
}

/// Refuse a value name that is the key of a record other primitives keep among the same
/// versioned values (issue 35): `<election>:leader` (the leader's record of a lease-backed
/// election), `polylock:idempotency:...` (idempotency records) and
/// `polylock-snowflake-mark:<worker>` (a Snowflake worker's high-water mark). A value of such
/// a name was that record: writing it forged a leader or an idempotent response.
pub(crate) fn check_value_name(name: &str) -> Result<()> {
    let internal = INTERNAL_VALUE_PREFIXES
        .iter()
        .find(|prefix| name.starts_with(**prefix))
        .map(|prefix| format!("begins with '{prefix}'"))
        .or_else(|| name.ends_with(LEADER_RECORD_SUFFIX).then(|| format!("ends with '{LEADER_RECORD_SUFFIX}'")));
    match internal {
        Some(why) => Err(Error::invalid_argument(format!(
            "value name '{}' {why}, the form of a record polylock keeps for another primitive (an election's \
             leader, an idempotency record, a Snowflake worker's mark); use another name",
            name.escape_debug()
        ))),
        None => Ok(()),
    }
}

/// The suffix of a lease-backed election's leader record (`primitives/election.rs`).
pub(crate) const LEADER_RECORD_SUFFIX: &str = ":leader";
/// The prefixes of the records idempotency keys and Snowflake worker leases keep as values.
pub(crate) const INTERNAL_VALUE_PREFIXES: [&str; 2] = ["polylock:idempotency:", "polylock-snowflake-mark:"];

/// The key a backend stores a lock under: the name itself, or `<namespace>:<name>`.
/// With no namespace the key is exactly the name, so other clients (Redisson, redis-py,
/// etcdctl) that use the bare name see the same lock.
pub(crate) fn storage_key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}:{name}"),
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(validate_name("orders:42").is_ok());
        assert!(validate_name("").is_err());
        assert!(validate_name(&"x".repeat(MAX_NAME_LEN)).is_ok());
        assert!(validate_name(&"x".repeat(MAX_NAME_LEN + 1)).is_err());
        assert!(validate_name("a\0b").is_err());
    }

    #[test]
    fn a_namespace_has_no_separator() {
        assert!(check_namespace("orders-eu.1").is_ok());
        let err = check_namespace("a:b").unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        assert!(err.message().contains("':'"), "{err}");
    }

    #[test]
    fn value_names_of_internal_records_are_refused() {
        for name in ["orders:leader", "polylock:idempotency:a:b", "polylock-snowflake-mark:3"] {
            let err = check_value_name(name).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        }
        assert!(check_value_name("orders:leader:address").is_ok());
        assert!(check_value_name("leader").is_ok());
    }

    #[test]
    fn keys_carry_the_namespace() {
        assert_eq!(storage_key(None, "job"), "job");
        assert_eq!(storage_key(Some("orders"), "job"), "orders:job");
    }
}
