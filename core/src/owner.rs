//! Who holds a lock: a client (random 128-bit id, one per connected client) and a local id
//! chosen by the binding the way its users expect (thread id, task id, handle).

use std::fmt;

use uuid::Uuid;

/// The random identity of one connected client. Shown as a hyphenated UUID, which is also
/// what Redisson uses as the first half of its lock field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientId(Uuid);

impl ClientId {
    pub(crate) fn random() -> Self {
        ClientId(Uuid::new_v4())
    }

    pub fn as_u128(self) -> u128 {
        self.0.as_u128()
    }
}

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

/// The owner of a hold. Reentrancy counts per owner; only the owner may release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Owner {
    pub client_id: ClientId,
    pub local_id: u64,
}

impl fmt::Display for Owner {
    /// `<client uuid>:<local id>`, Redisson's hash field for a lock holder.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.client_id, self.local_id)
    }
}

/// Local ids for Rust lock handles and semaphore permits, which own their holds themselves:
/// from the binding kit's one counter, so they never collide with any binding's.
pub(crate) fn next_handle_local_id() -> u64 {
    crate::kit::owner_ids::next_owner_id()
}
