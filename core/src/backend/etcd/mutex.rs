//! etcd's concurrency.Mutex, step by step, so `etcdctl lock NAME` and Go services using
//! `concurrency.NewMutex(session, NAME)` exclude polylock and are excluded by it.
//!
//! - Each contender's key is `<prefix>/<session lease id in lowercase hex>`, written with the
//!   session lease by a transaction only if absent.
//! - The holder is the key with the lowest create revision under the prefix; that revision
//!   is the fencing token (revisions only grow, so tokens do too).
//! - A waiter watches only the key just below its own create revision (`waitDeletes`); when it
//!   is gone, it looks again, and once nothing older is left it checks its own key still exists.

use etcd_client::{
    Client, Compare, CompareOp, EventType, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse,
    WatchOptions,
};

use super::map_error;
use crate::error::{Error, Result};

/// What the create-if-absent transaction found.
pub(super) struct Contention {
    /// Our key's create revision.
    pub revision: i64,
    /// Whether our key was already there (left by an earlier hold of this session).
    pub existed: bool,
    /// Whether ours is the oldest key under the prefix: we hold the lock.
    pub holds: bool,
}

/// `tryAcquire`: put our key with the session lease if it is absent, and read the oldest key
/// under the prefix, in one transaction.
pub(super) async fn contend(client: &Client, prefix: &str, key: &str, lease_id: i64) -> Result<Contention> {
    let oldest = GetOptions::new().with_prefix().with_sort(SortTarget::Create, SortOrder::Ascend).with_limit(1);
    let txn = Txn::new()
        .when([Compare::create_revision(key, CompareOp::Equal, 0)])
        .and_then([
            TxnOp::put(key, "", Some(PutOptions::new().with_lease(lease_id))),
            TxnOp::get(prefix, Some(oldest.clone())),
        ])
        .or_else([TxnOp::get(key, None), TxnOp::get(prefix, Some(oldest))]);
    let answer = client.kv_client().txn(txn).await.map_err(|e| map_error("writing the lock key", e))?;
    let existed = !answer.succeeded();
    let responses = answer.op_responses();
    let range = |i: usize| match responses.get(i) {
        Some(TxnOpResponse::Get(get)) => Ok(get.kvs().first().map(|kv| kv.create_revision())),
        _ => Err(Error::backend("etcd answered the lock transaction with unexpected responses")),
    };
    let revision = if existed {
        range(0)?.ok_or_else(|| Error::backend("the lock key vanished inside its own transaction"))?
    } else {
        answer.header().map(|h| h.revision()).ok_or_else(|| Error::backend("etcd sent no revision"))?
    };
    let holds = range(1)?.is_none_or(|oldest| oldest == revision);
    Ok(Contention { revision, existed, holds })
}

/// Delete `key` only if it is still the one created at `revision`. True if it was deleted.
pub(super) async fn delete_if_revision(client: &Client, key: &str, revision: i64) -> Result<bool> {
    let txn = Txn::new()
        .when([Compare::create_revision(key, CompareOp::Equal, revision)])
        .and_then([TxnOp::delete(key, None)]);
    let answer = client.kv_client().txn(txn).await.map_err(|e| map_error("deleting the lock key", e))?;
    Ok(answer.succeeded())
}

/// The create revision of `key`, if it exists.
pub(super) async fn key_revision(client: &Client, key: &str) -> Result<Option<i64>> {
    let answer = client
        .kv_client()
        .get(key, Some(GetOptions::new().with_keys_only()))
        .await
        .map_err(|e| map_error("reading the lock key", e))?;
    Ok(answer.kvs().first().map(|kv| kv.create_revision()))
}

/// `waitDeletes`: return once no key under the prefix has a create revision at or below
/// `max_revision`, watching one key at a time: the newest of those older than ours.
pub(super) async fn wait_for_older_keys(client: &Client, prefix: &str, max_revision: i64) -> Result<()> {
    let newest_older = GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, SortOrder::Descend)
        .with_limit(1)
        .with_max_create_revision(max_revision);
    loop {
        let answer = client
            .kv_client()
            .get(prefix, Some(newest_older.clone()))
            .await
            .map_err(|e| map_error("reading the lock's waiters", e))?;
        let Some(kv) = answer.kvs().first() else { return Ok(()) };
        let at = answer.header().map(|h| h.revision()).unwrap_or(0);
        wait_for_delete(client, kv.key().to_vec(), at).await?;
    }
}

/// `waitDelete`: watch one key from the revision it was seen at until it is deleted.
async fn wait_for_delete(client: &Client, key: Vec<u8>, seen_at: i64) -> Result<()> {
    let options = WatchOptions::new().with_start_revision(seen_at);
    let mut stream =
        client.watch_client().watch(key, Some(options)).await.map_err(|e| map_error("watching the lock key", e))?;
    loop {
        let Some(answer) = stream.message().await.map_err(|e| map_error("watching the lock key", e))? else {
            return Err(Error::connection("etcd closed the watch on the lock key"));
        };
        if answer.events().iter().any(|event| event.event_type() == EventType::Delete) {
            return Ok(());
        }
        if answer.canceled() {
            return Err(Error::connection(format!("etcd cancelled the watch on the lock key: {}", answer.cancel_reason())));
        }
    }
}
