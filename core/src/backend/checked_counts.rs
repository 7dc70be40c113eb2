//! The semaphore counts a client has checked against the store (etcd, ZooKeeper), kept so the
//! next acquisition of the name skips the read. Keyed by names callers choose, so bounded:
//! past [`MAX_CHECKED`] names the cache starts over (a later acquisition reads the count
//! again, which only costs a round trip).

use std::collections::HashMap;

/// The most semaphore names whose checked count one client keeps.
pub(crate) const MAX_CHECKED: usize = 4096;

#[derive(Default)]
pub(crate) struct CheckedCounts(HashMap<String, u32>);

impl CheckedCounts {
    pub(crate) fn get(&self, name: &str) -> Option<&u32> {
        self.0.get(name)
    }

    pub(crate) fn insert(&mut self, name: String, count: u32) {
        if self.0.len() >= MAX_CHECKED && !self.0.contains_key(&name) {
            self.0.clear();
        }
        self.0.insert(name, count);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_past_the_bound_never_grow_the_cache() {
        let mut checked = CheckedCounts::default();
        for i in 0..MAX_CHECKED * 3 + 5 {
            checked.insert(format!("sem-{i}"), 3);
            assert!(checked.len() <= MAX_CHECKED);
        }
        checked.insert("kept".into(), 7);
        assert_eq!(checked.get("kept"), Some(&7));
        checked.insert("kept".into(), 8);
        assert_eq!(checked.get("kept"), Some(&8));
    }
}
