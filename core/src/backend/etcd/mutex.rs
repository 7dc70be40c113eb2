//! etcd's concurrency.Mutex, step by step, so `etcdctl lock NAME` and Go services using
//! `concurrency.NewMutex(session, NAME)` exclude polylock and are excluded by it.
//!
//! - Each contender's key is `<prefix>/<session lease id in lowercase hex>`, written with the
//!   session lease by a transaction only if absent.
//! - The holder is the key with the lowest create revision under the prefix; that revision
//!   is the fencing token (revisions only grow, so tokens do too).
//! - A waiter watches only the key just below its own create revision (`waitDeletes`); when it
//!   is gone, it looks again, and once nothing older is left it checks its own key still exists.

use std::future::Future;
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, EventType, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse,
    WatchOptions,
};

use super::map_error;
use crate::error::{Error, Result};

/// Run one etcd call, trying again at once (up to three more times) when it fails as
/// unavailable: etcd-client's balancer keeps handing out a dead member's connection for a
/// while, and a leader election answers "leader changed". Every call here is safe to repeat:
/// the transactions compare before they write, and a write whose answer was lost shows up
/// as our own existing key.
async fn call<T, F, Fut>(doing: &str, mut op: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
{
    let mut retries = 0u64;
    loop {
        match op().await {
            Ok(answer) => return Ok(answer),
            Err(err) if retries < 3 && is_unavailable(&err) => {
                retries += 1;
                tokio::time::sleep(Duration::from_millis(5 * retries)).await;
            }
            Err(err) => return Err(map_error(doing, err)),
        }
    }
}

fn is_unavailable(err: &etcd_client::Error) -> bool {
    match err {
        etcd_client::Error::TransportError(_) => true,
        etcd_client::Error::GRpcStatus(status) => status.code() == tonic::Code::Unavailable,
        _ => false,
    }
}

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
    let answer = call("writing the lock key", || {
        let (mut kv, txn) = (client.kv_client(), txn.clone());
        async move { kv.txn(txn).await }
    })
    .await?;
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
    let answer = call("deleting the lock key", || {
        let (mut kv, txn) = (client.kv_client(), txn.clone());
        async move { kv.txn(txn).await }
    })
    .await?;
    Ok(answer.succeeded())
}

/// The create revision of `key`, if it exists.
pub(super) async fn key_revision(client: &Client, key: &str) -> Result<Option<i64>> {
    let options = GetOptions::new().with_keys_only();
    let answer = call("reading the lock key", || {
        let (mut kv, options) = (client.kv_client(), options.clone());
        async move { kv.get(key, Some(options)).await }
    })
    .await?;
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
        let answer = call("reading the lock's waiters", || {
            let (mut kv, options) = (client.kv_client(), newest_older.clone());
            async move { kv.get(prefix, Some(options)).await }
        })
        .await?;
        let Some(kv) = answer.kvs().first() else { return Ok(()) };
        let at = answer.header().map(|h| h.revision()).unwrap_or(0);
        wait_for_delete(client, kv.key().to_vec(), at).await?;
    }
}

/// `waitDelete`: watch one key from the revision it was seen at until it is deleted.
async fn wait_for_delete(client: &Client, key: Vec<u8>, seen_at: i64) -> Result<()> {
    let options = WatchOptions::new().with_start_revision(seen_at);
    let mut stream = call("watching the lock key", || {
        let (mut watch, key, options) = (client.watch_client(), key.clone(), options.clone());
        async move { watch.watch(key, Some(options)).await }
    })
    .await?;
    loop {
        let Some(answer) = stream.message().await.map_err(|e| map_error("watching the lock key", e))? else {
            return Err(Error::connection("etcd closed the watch on the lock key"));
        };
        if answer.events().iter().any(|event| event.event_type() == EventType::Delete) {
            return Ok(());
        }
        if answer.canceled() {
            return Err(Error::connection(format!(
                "etcd cancelled the watch on the lock key: {}",
                answer.cancel_reason()
            )));
        }
    }
}

/// The holder's key: the oldest under the prefix, with its create revision and lease.
pub(super) struct Holder {
    pub key: String,
    pub revision: i64,
    /// 0 for a key written without a lease.
    pub lease: i64,
}

/// The key holding the lock under `prefix`, if any (`Mutex.IsOwner` looks the same way).
pub(super) async fn holder(client: &Client, prefix: &str) -> Result<Option<Holder>> {
    let oldest =
        GetOptions::new().with_prefix().with_sort(SortTarget::Create, SortOrder::Ascend).with_limit(1).with_keys_only();
    let answer = call("reading the lock's holder", || {
        let (mut kv, options) = (client.kv_client(), oldest.clone());
        async move { kv.get(prefix, Some(options)).await }
    })
    .await?;
    let Some(kv) = answer.kvs().first() else { return Ok(None) };
    let key = String::from_utf8_lossy(kv.key()).into_owned();
    Ok(Some(Holder { key, revision: kv.create_revision(), lease: kv.lease() }))
}

/// What is left of a lease, `None` if it has expired or been revoked.
pub(super) async fn lease_left(client: &Client, lease: i64) -> Result<Option<Duration>> {
    let answer = call("reading the holder's lease", || {
        let mut leases = client.lease_client();
        async move { leases.time_to_live(lease, None).await }
    })
    .await?;
    Ok(u64::try_from(answer.ttl()).ok().map(Duration::from_secs))
}
