//! Lock names as ZooKeeper paths, and the names of the nodes under them, laid out exactly as
//! Curator's InterProcessMutex lays them out:
//!
//! ```text
//! /<name>                                  the lock path (a container node)
//! /<name>/_c_<uuid>-lock-<10-digit seq>    one EPHEMERAL_SEQUENTIAL node per contender
//! ```
//!
//! A name maps to `"/" + name` (a name that already starts with `/` is taken as the path, so
//! Curator paths can be used as they are); `/` inside a name separates levels, as in Curator.
//! Names that are not valid ZooKeeper paths are refused, never rewritten.
//!
//! Since levels nest, a name's path can be a node inside another name's lock path. Two kinds
//! of names would then share nodes with another primitive, and are refused (issue 35,
//! [`recipe_level`]): a level below the first that reads as a recipe's sequential node
//! (ending in `lock-`, `lease-`, `latch-`, `__READ__` or `__WRIT__` and digits: the lock
//! `a/x-lock-0000000000` sat among the contenders of the lock `a`, first in line, and `a`
//! waited behind it), and a last level `locks` or `leases`, the two children of a semaphore's
//! path (the lock `s/locks` is the mutex every contender of the semaphore `s` takes). Any
//! other level nests safely: the recipes count only children in their own node form. The
//! first level is a child of the root (or chroot), never of a lock path, so `lock-1` (or
//! `ns:lock-1` under a namespace) is an ordinary name.

use crate::error::{Error, Result};

/// Curator's lock name for InterProcessMutex (`LockInternals` `lockName`).
pub(super) const LOCK_NAME: &str = "lock-";

/// Curator's protection prefix (`CreateBuilderImpl.PROTECTED_PREFIX`).
const PROTECTED_PREFIX: &str = "_c_";

pub(super) fn lock_path(key: &str) -> Result<String> {
    let path = if key.starts_with('/') { key.to_string() } else { format!("/{key}") };
    check_path(&path).map_err(|why| {
        Error::invalid_argument(format!(
            "lock name '{key}' cannot be used on ZooKeeper: its path '{path}' {why} \
             (the lock path is '/' + name, as with Curator's InterProcessMutex, and '/' separates levels)"
        ))
    })?;
    if let Some(why) = recipe_level(&path) {
        return Err(Error::invalid_argument(format!(
            "lock name '{key}' cannot be used on ZooKeeper: {why}, so it would share nodes with another \
             name's lock, election or semaphore; use another name"
        )));
    }
    if path == "/zookeeper" || path.starts_with("/zookeeper/") {
        return Err(Error::invalid_argument(format!(
            "lock name '{key}' falls under /zookeeper, which ZooKeeper reserves for itself"
        )));
    }
    Ok(path)
}

/// Node names the recipes create under a path, as the digits they end in follow.
const SEQUENTIAL_NODE_NAMES: [&str; 5] = [LOCK_NAME, "lease-", "latch-", "__READ__", "__WRIT__"];

/// Why a path is refused as a name's path because a level of it is a recipe's node, if it is.
fn recipe_level(path: &str) -> Option<String> {
    let levels: Vec<&str> = path[1..].split('/').collect();
    // The first level is a child of the root (or chroot), never of a lock path: `lock-1`,
    // or `ns:lock-1` under a namespace, is an ordinary name.
    for level in levels.iter().skip(1) {
        for node_name in SEQUENTIAL_NODE_NAMES {
            if let Some(at) = level.rfind(node_name) {
                let digits = &level[at + node_name.len()..];
                if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Some(format!(
                        "its level '{level}' ends in '{node_name}' and digits, as the recipes' sequential nodes do"
                    ));
                }
            }
        }
    }
    match levels.last() {
        Some(&last) if levels.len() > 1 && (last == "locks" || last == "leases") => Some(format!(
            "its last level '{last}' is one of the two children ('locks', 'leases') of a semaphore's path"
        )),
        _ => None,
    }
}

/// ZooKeeper's own rules (`PathUtils.validatePath`), as a reason when broken.
pub(super) fn check_path(path: &str) -> std::result::Result<(), String> {
    if !path.starts_with('/') || path.len() < 2 {
        return Err("must start with '/' and name a node".into());
    }
    if path.ends_with('/') {
        return Err("must not end with '/'".into());
    }
    for segment in path[1..].split('/') {
        match segment {
            "" => return Err("has an empty level ('//')".into()),
            "." | ".." => return Err(format!("has a relative level '{segment}'")),
            _ => {}
        }
    }
    if let Some(bad) = path.chars().find(|&c| is_forbidden(c)) {
        return Err(format!("contains the character U+{:04X}, which ZooKeeper does not allow", bad as u32));
    }
    Ok(())
}

/// ZooKeeper checks paths as Java strings, where a character outside the Basic Multilingual
/// Plane is a surrogate pair (U+D800..U+DFFF), which its rules refuse like private use.
fn is_forbidden(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..='\u{ffff}' | '\u{10000}'..
    )
}

/// The prefix of a contender's node: `_c_<uuid>-lock-`. The uuid is how a client that lost
/// its connection during the create finds the node it made (Curator's protection).
pub(super) fn node_prefix(uuid: &uuid::Uuid, lock_name: &str) -> String {
    format!("{PROTECTED_PREFIX}{uuid}-{lock_name}")
}

/// The sequence a contender's node sorts by, as Curator's `StandardLockInternalsDriver`:
/// what follows the last `lock-`. `None` for nodes that are not lock contenders.
pub(super) fn sequence_of(node: &str) -> Option<u64> {
    let at = node.rfind(LOCK_NAME)? + LOCK_NAME.len();
    let digits = &node[at..];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The contenders among a lock path's children, lowest sequence (the holder) first.
pub(super) fn sorted_contenders(children: Vec<String>) -> Vec<(u64, String)> {
    let mut contenders: Vec<(u64, String)> =
        children.into_iter().filter_map(|node| sequence_of(&node).map(|seq| (seq, node))).collect();
    contenders.sort();
    contenders
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_curator_paths() {
        assert_eq!(lock_path("orders:42").unwrap(), "/orders:42");
        assert_eq!(lock_path("locks/orders").unwrap(), "/locks/orders");
        assert_eq!(lock_path("/locks/orders").unwrap(), "/locks/orders");
        assert_eq!(lock_path("locks/orders/lock-x").unwrap(), "/locks/orders/lock-x");
        assert_eq!(lock_path("locks").unwrap(), "/locks");
        assert_eq!(lock_path("lock-1").unwrap(), "/lock-1");
        assert_eq!(lock_path("ns:job-lock-0000000001").unwrap(), "/ns:job-lock-0000000001");
        for bad in [
            "a//b",
            "a/",
            "a/../b",
            "./a",
            "tab\there",
            "zookeeper/quota",
            "/",
            "a/x-lock-0000000000",
            "a/_c_5b0d-__READ__0000000001/b",
            "a/lease-7",
            "s/locks",
            "/s/leases",
        ] {
            let err = lock_path(bad).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument, "{bad}");
        }
    }

    #[test]
    fn contenders_sort_by_their_sequence_as_curator_does() {
        let uuid = uuid::Uuid::nil();
        let ours = format!("{}0000000010", node_prefix(&uuid, LOCK_NAME));
        assert_eq!(sequence_of(&ours), Some(10));
        let children = vec![
            ours.clone(),
            "_c_5b0d-lock-0000000002".into(),
            "lease-0000000001".into(),
            "_c_x-lock-".into(),
            "_c_y-lock-0000000009".into(),
        ];
        let sorted = sorted_contenders(children);
        let names: Vec<&str> = sorted.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(names, ["_c_5b0d-lock-0000000002", "_c_y-lock-0000000009", ours.as_str()]);
    }
}
