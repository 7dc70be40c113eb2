//! Fencing tokens for etcd's read-write locks and semaphores: one key per name and family,
//! outside the `<name>/` prefix (so Go recipe clients never see it), written with every
//! grant. A grant's token is the revision of that write, and etcd writes one revision at a
//! time, so every grant's token is greater than every earlier one of the name and family,
//! even for readers (or permits) let in by one release together.
//!
//! ```text
//! <name>:rw-fence          written by each read-write lock grant, under the grantee's session
//! <name>:semaphore-fence   written by each permit grant, under the grantee's session
//! ```
//!
//! The key is written in the transaction that writes a contender's own key. A contender that
//! the following look finds holding, with the fence key last written by that transaction, has
//! that revision as its token: nobody was granted in between (every grant writes the key).
//! Otherwise (it waited, or someone was granted meanwhile) the grant writes the key again, on
//! condition that the contender's own key is still there, and takes that write's revision.
//! The key's value means nothing; under a session lease it leaves nothing behind, and a key
//! that went with its lease is written again at a newer revision.

use etcd_client::{Client, Compare, CompareOp, GetOptions, KeyValue, PutOptions, TxnOp};

use super::mutex::call;
use crate::error::{Error, Result};

/// Which family a fence key serves: the two never share a sequence.
#[derive(Debug, Clone, Copy)]
pub(super) enum Family {
    RwLock,
    Semaphore,
}

/// The fence key of one name and family.
pub(super) struct Fence {
    key: String,
}

impl Fence {
    pub fn of(name: &str, family: Family) -> Fence {
        let suffix = match family {
            Family::RwLock => "rw-fence",
            Family::Semaphore => "semaphore-fence",
        };
        Fence { key: format!("{name}:{suffix}") }
    }

    /// The write that goes with a contender's own key, in the same transaction.
    pub fn write(&self, lease_id: i64) -> TxnOp {
        TxnOp::put(self.key.as_str(), "", Some(PutOptions::new().with_lease(lease_id)))
    }

    /// The read that goes with a look, so the grant can tell whether it may keep its key's
    /// revision as its token.
    pub fn read(&self) -> TxnOp {
        TxnOp::get(self.key.as_str(), Some(GetOptions::new().with_keys_only()))
    }

    /// The revision the fence key was last written at, from the answer to [`Fence::read`].
    pub fn last_written(found: &[KeyValue]) -> Option<i64> {
        found.first().map(|kv| kv.mod_revision())
    }

    /// The token of a grant to the contender whose key `key` was created at `revision`:
    /// `revision` itself if the fence key was last written with it (`last_written`, seen by
    /// the look that granted), else the revision of a new write of the fence key. `None` if
    /// the contender's key is gone.
    pub async fn token(
        &self,
        client: &Client,
        key: &str,
        revision: i64,
        lease_id: i64,
        last_written: Option<i64>,
    ) -> Result<Option<u64>> {
        let revision = if last_written == Some(revision) {
            revision
        } else {
            let txn = etcd_client::Txn::new()
                .when([Compare::create_revision(key, CompareOp::Equal, revision)])
                .and_then([self.write(lease_id)]);
            let answer = call("writing the fencing key", || {
                let (mut kv, txn) = (client.kv_client(), txn.clone());
                async move { kv.txn(txn).await }
            })
            .await?;
            if !answer.succeeded() {
                return Ok(None);
            }
            answer.header().map(|h| h.revision()).ok_or_else(|| Error::backend("etcd sent no revision"))?
        };
        u64::try_from(revision).map(Some).map_err(|_| Error::backend("etcd sent a negative revision"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_keys_sit_outside_the_name_prefix_one_per_family() {
        assert_eq!(Fence::of("orders", Family::RwLock).key, "orders:rw-fence");
        assert_eq!(Fence::of("orders", Family::Semaphore).key, "orders:semaphore-fence");
        assert!(!Fence::of("orders", Family::RwLock).key.starts_with("orders/"));
    }
}
