//! etcd's concurrency.Mutex, step by step, so `etcdctl lock NAME` and Go services using
//! `concurrency.NewMutex(session, NAME)` exclude polylock and are excluded by it.
//!
//! - Each contender's key is `<prefix>/<session lease id in lowercase hex>`, written with the
//!   session lease by a transaction only if absent.
//! - The holder is the contender key with the lowest create revision; that revision is the
//!   fencing token (revisions only grow, so tokens do too).
//! - Only the name's own contender keys count: `<name>/` followed by lowercase hex digits and
//!   nothing else ([`is_contender`]). Go's Mutex counts every key under the prefix, so in Go
//!   the lock `kz/sub` (keys `kz/sub/<hex>`), a semaphore's `kz/permits` or a read-write
//!   lock's `kz/read/..` block the lock `kz`; here they never do (issue 35). `etcdctl lock kz`
//!   writes `kz/<hex>`, so it and polylock still exclude each other.
//! - A waiter watches only the key just below its own create revision (`waitDeletes`); when it
//!   is gone, it looks again, and once nothing older is left it checks its own key still exists.

use std::future::Future;
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, EventType, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse,
};

use super::map_error;
use crate::error::{Error, Result};

/// Whether `key` is one of the contender keys of the lock whose prefix is `prefix`
/// (`<name>/`): the prefix, then a session lease id as concurrency.Mutex writes it (lowercase
/// hex, no further `/`).
pub(super) fn is_contender(prefix: &str, key: &[u8]) -> bool {
    key.strip_prefix(prefix.as_bytes())
        .is_some_and(|rest| !rest.is_empty() && rest.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b)))
}

/// Read options over the range that holds every contender key of `prefix` (`<prefix>0` up to
/// `<prefix>g`, to start from with [`contender_range_start`]): keys of other names and
/// primitives inside it (`<name>/abc/..`, nested names) are filtered out by [`is_contender`].
pub(super) fn contender_range(prefix: &str) -> GetOptions {
    GetOptions::new().with_range(format!("{prefix}g"))
}

/// Where [`contender_range`] starts.
pub(super) fn contender_range_start(prefix: &str) -> String {
    format!("{prefix}0")
}

/// Run one etcd call, trying again at once (up to three more times) when it fails as
/// unavailable: etcd-client's balancer keeps handing out a dead member's connection for a
/// while, and a leader election answers "leader changed". Every call here is safe to repeat:
/// the transactions compare before they write, and a write whose answer was lost shows up
/// as our own existing key.
pub(super) async fn call<T, F, Fut>(doing: &str, mut op: F) -> Result<T>
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
    /// `None` when ours is the oldest key under the prefix (we hold the lock); else the key
    /// just older than ours and the revision it was seen at, the one to wait for.
    pub predecessor: Option<Older>,
}

/// A key older than ours, as seen by a read: the one a waiter waits for.
pub(super) struct Older {
    pub key: Vec<u8>,
    /// Its create revision: a key of the same name created later is another contender.
    pub created: i64,
    /// The revision of the read that saw it.
    pub seen_at: i64,
}

/// `tryAcquire`: put our key with the session lease if it is absent, and read the oldest key
/// under the prefix and the two newest, in one transaction. Just written, ours is the newest,
/// so the second newest is the key to wait for: a waiter can start watching it without
/// another read (Go's Mutex reads it in a separate call).
pub(super) async fn contend(client: &Client, prefix: &str, key: &str, lease_id: i64) -> Result<Contention> {
    // Every key in the contenders' range, oldest first: other names' keys inside the range
    // are filtered out here, so no limit can be put on the read.
    let contenders = contender_range(prefix).with_sort(SortTarget::Create, SortOrder::Ascend).with_keys_only();
    let start = contender_range_start(prefix);
    let txn = Txn::new()
        .when([Compare::create_revision(key, CompareOp::Equal, 0)])
        .and_then([
            TxnOp::put(key, "", Some(PutOptions::new().with_lease(lease_id))),
            TxnOp::get(start.as_str(), Some(contenders.clone())),
        ])
        .or_else([TxnOp::get(key, None), TxnOp::get(start.as_str(), Some(contenders))]);
    let answer = call("writing the lock key", || {
        let (mut kv, txn) = (client.kv_client(), txn.clone());
        async move { kv.txn(txn).await }
    })
    .await?;
    let existed = !answer.succeeded();
    let at = answer.header().map(|h| h.revision()).ok_or_else(|| Error::backend("etcd sent no revision"))?;
    let responses = answer.op_responses();
    let range = |i: usize| match responses.get(i) {
        Some(TxnOpResponse::Get(get)) => Ok(get
            .kvs()
            .iter()
            .filter(move |kv| i == 0 && existed || is_contender(prefix, kv.key()))
            .map(|kv| (kv.key().to_vec(), kv.create_revision()))),
        _ => Err(Error::backend("etcd answered the lock transaction with unexpected responses")),
    };
    let revision = if existed {
        let (_, revision) =
            range(0)?.next().ok_or_else(|| Error::backend("the lock key vanished inside its own transaction"))?;
        revision
    } else {
        at
    };
    let holds = range(1)?.next().is_none_or(|(_, oldest)| oldest == revision);
    let predecessor = if holds || existed {
        None
    } else {
        let mut contenders: Vec<_> = range(1)?.collect();
        if contenders.pop().is_none_or(|(_, newest)| newest != revision) {
            return Err(Error::backend("etcd's lock transaction did not show the key just written as newest"));
        }
        let (older, created) =
            contenders.pop().ok_or_else(|| Error::backend("etcd's lock transaction showed no older key"))?;
        Some(Older { key: older, created, seen_at: at })
    };
    Ok(Contention { revision, existed, predecessor })
}

/// Where a waiter stands after a look at the lock.
pub(super) enum Standing {
    /// No key older than ours is left, and ours is still there: we hold the lock.
    Holds,
    /// Our key is gone (its lease ended, or someone deleted it): start over.
    Vanished,
    /// The newest key older than ours: wait for its delete.
    Behind(Older),
}

/// `waitDeletes` and the check after it, in one read-only transaction (one linearizable read):
/// the newest key older than ours, and our own key.
pub(super) async fn look(client: &Client, prefix: &str, key: &str, revision: i64) -> Result<Standing> {
    let older = contender_range(prefix)
        .with_sort(SortTarget::Create, SortOrder::Descend)
        .with_keys_only()
        .with_max_create_revision(revision - 1);
    let start = contender_range_start(prefix);
    let txn = Txn::new()
        .and_then([TxnOp::get(start.as_str(), Some(older)), TxnOp::get(key, Some(GetOptions::new().with_keys_only()))]);
    let answer = call("reading the lock's waiters", || {
        let (mut kv, txn) = (client.kv_client(), txn.clone());
        async move { kv.txn(txn).await }
    })
    .await?;
    let at = answer.header().map(|h| h.revision()).ok_or_else(|| Error::backend("etcd sent no revision"))?;
    let first = |i: usize| match answer.op_responses().get(i) {
        Some(TxnOpResponse::Get(get)) => Ok(get
            .kvs()
            .iter()
            .find(|kv| i == 1 || is_contender(prefix, kv.key()))
            .map(|kv| (kv.key().to_vec(), kv.create_revision()))),
        _ => Err(Error::backend("etcd answered the lock look-up with unexpected responses")),
    };
    if first(1)?.is_none_or(|(_, ours)| ours != revision) {
        return Ok(Standing::Vanished);
    }
    Ok(match first(0)? {
        Some((key, created)) => Standing::Behind(Older { key, created, seen_at: at }),
        None => Standing::Holds,
    })
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

/// `waitDelete`: wait until the key `older` names is deleted.
///
/// The watch starts from etcd's current revision, which puts it among etcd's "synced"
/// watchers: they get events as they are written. A watch from a past revision (as Go's
/// Mutex opens it, from the revision of its read) starts "unsynced" whenever anything was
/// written since, and then waits for etcd's catch-up loop, which runs every 100 ms; under
/// contention something always was, and every hand-over waited with it. Nothing is missed:
/// if anything was written between the read and the watch, one more read says whether the
/// key went meanwhile.
pub(super) async fn wait_for_delete(client: &Client, older: &Older) -> Result<()> {
    let mut stream = call("watching the lock key", || {
        let (mut watch, key) = (client.watch_client(), older.key.clone());
        async move { watch.watch(key, None).await }
    })
    .await?;
    let mut checked = false;
    loop {
        let Some(answer) = stream.message().await.map_err(|e| map_error("watching the lock key", e))? else {
            return Err(Error::connection("etcd closed the watch on the lock key"));
        };
        if answer.events().iter().any(|event| event.event_type() == EventType::Delete) {
            return Ok(());
        }
        if answer.created() && !checked {
            checked = true;
            let from = answer.header().map_or(i64::MAX, |h| h.revision());
            if from > older.seen_at && !still_there(client, older).await? {
                return Ok(());
            }
        }
        if answer.canceled() {
            return Err(Error::connection(format!(
                "etcd cancelled the watch on the lock key: {}",
                answer.cancel_reason()
            )));
        }
    }
}

/// The holder's key: the oldest contender key, with its create revision and lease.
pub(super) struct Holder {
    pub key: String,
    pub revision: i64,
    /// 0 for a key written without a lease.
    pub lease: i64,
}

/// The key holding the lock of `prefix`, if any (`Mutex.IsOwner` looks the same way, over
/// contender keys only).
pub(super) async fn holder(client: &Client, prefix: &str) -> Result<Option<Holder>> {
    let oldest = contender_range(prefix).with_sort(SortTarget::Create, SortOrder::Ascend).with_keys_only();
    let start = contender_range_start(prefix);
    let answer = call("reading the lock's holder", || {
        let (mut kv, options, start) = (client.kv_client(), oldest.clone(), start.clone());
        async move { kv.get(start, Some(options)).await }
    })
    .await?;
    let Some(kv) = answer.kvs().iter().find(|kv| is_contender(prefix, kv.key())) else { return Ok(None) };
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

/// Whether the very key `older` names (not a later one of the same name) still exists.
async fn still_there(client: &Client, older: &Older) -> Result<bool> {
    let options = GetOptions::new().with_keys_only();
    let answer = call("reading the lock key", || {
        let (mut kv, key, options) = (client.kv_client(), older.key.clone(), options.clone());
        async move { kv.get(key, Some(options)).await }
    })
    .await?;
    Ok(answer.kvs().first().is_some_and(|kv| kv.create_revision() == older.created))
}
