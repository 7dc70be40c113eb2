//! Countdown latches on etcd: one key per latch, `polylock\0/latch/<key>` (apart from every
//! lock's keys, as counters.rs explains), whose value is the count in decimal. An open latch
//! has no key: the count-down that reaches zero deletes it, as Redisson's script does.
//! Every change is a transaction on the key's mod revision as read (a new count: its create
//! revision with 0), tried again from a fresh read when another writer got there first.
//!
//! A waiter reads the key and, while it is there, watches it from the revision after that
//! read: the key's DELETE is the latch opening (a new count set right after does not hide it).

use async_trait::async_trait;
use etcd_client::{Client, Compare, CompareOp, EventType, GetResponse, Txn, TxnOp, WatchOptions};
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use super::map_error;
use super::mutex::call;
use crate::error::{Error, Result};
use crate::spi::LatchStore;

/// The key latch `key` is kept under.
fn latch_key(key: &str) -> String {
    format!("polylock\0/latch/{key}")
}

pub(super) struct EtcdLatches {
    pub client: Client,
}

/// What a read found: the count and the key's mod revision (`None`: no key, open), and the
/// store's revision at the read.
struct Read {
    count: Option<(u64, i64)>,
    revision: i64,
}

impl EtcdLatches {
    async fn read(&self, key: &str) -> Result<Read> {
        let stored = latch_key(key);
        let answer: GetResponse = call("reading a latch", || {
            let (mut kv, stored) = (self.client.kv_client(), stored.clone());
            async move { kv.get(stored, None).await }
        })
        .await?;
        let revision = answer.header().map(|header| header.revision()).unwrap_or(0);
        let count = match answer.kvs().first() {
            None => None,
            Some(kv) => {
                let count = std::str::from_utf8(kv.value()).ok().and_then(|text| text.parse::<u64>().ok());
                let count = count.ok_or_else(|| {
                    Error::backend(format!("latch '{key}' holds a value that is not a count in decimal"))
                })?;
                Some((count, kv.mod_revision()))
            }
        };
        Ok(Read { count, revision })
    }

    async fn txn(&self, doing: &str, txn: Txn) -> Result<bool> {
        let answer = call(doing, || {
            let (mut kv, txn) = (self.client.kv_client(), txn.clone());
            async move { kv.txn(txn).await }
        })
        .await?;
        Ok(answer.succeeded())
    }

    /// Wait for the key's next DELETE after `seen_at` (true), or for a sign to look again
    /// (false: the watch was cancelled, by compaction or the server going away).
    async fn deleted_after(&self, stored: &str, seen_at: i64) -> Result<bool> {
        let options = WatchOptions::new().with_start_revision(seen_at + 1);
        let mut stream = call("watching a latch", || {
            let (mut watch, options) = (self.client.watch_client(), options.clone());
            async move { watch.watch(stored, Some(options)).await }
        })
        .await?;
        loop {
            let Some(answer) = stream.message().await.map_err(|e| map_error("watching a latch", e))? else {
                return Ok(false);
            };
            if answer.events().iter().any(|event| event.event_type() == EventType::Delete) {
                return Ok(true);
            }
            if answer.canceled() {
                return Ok(false);
            }
        }
    }
}

#[async_trait]
impl LatchStore for EtcdLatches {
    async fn try_set_count(&self, key: &str, count: u64) -> Result<bool> {
        let stored = latch_key(key);
        let txn = Txn::new()
            .when([Compare::create_revision(stored.as_str(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(stored.as_str(), count.to_string(), None)]);
        self.txn("setting a latch's count", txn).await
    }

    async fn count_down(&self, key: &str) -> Result<()> {
        let stored = latch_key(key);
        loop {
            let Some((count, mod_revision)) = self.read(key).await?.count else { return Ok(()) };
            let unchanged = Compare::mod_revision(stored.as_str(), CompareOp::Equal, mod_revision);
            let change = match count {
                0 | 1 => TxnOp::delete(stored.as_str(), None),
                _ => TxnOp::put(stored.as_str(), (count - 1).to_string(), None),
            };
            if self.txn("counting a latch down", Txn::new().when([unchanged]).and_then([change])).await? {
                return Ok(());
            }
            // Another writer changed the count between the read and the write: read again.
        }
    }

    async fn count(&self, key: &str) -> Result<u64> {
        Ok(self.read(key).await?.count.map_or(0, |(count, _)| count))
    }

    async fn await_zero(&self, key: &str, deadline: Option<Instant>, cancel: &CancellationToken) -> Result<bool> {
        let stored = latch_key(key);
        loop {
            let read = self.read(key).await?;
            if read.count.is_none_or(|(count, _)| count == 0) {
                return Ok(true);
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) || cancel.is_cancelled() {
                return Ok(false);
            }
            let far = Instant::now() + std::time::Duration::from_secs(86400 * 365);
            tokio::select! {
                deleted = self.deleted_after(&stored, read.revision) => if deleted? { return Ok(true) },
                _ = sleep_until(deadline.unwrap_or(far)) => return Ok(false),
                _ = cancel.cancelled() => return Ok(false),
            }
        }
    }
}
