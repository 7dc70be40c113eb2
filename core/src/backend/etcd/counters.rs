//! Counters on etcd: one key per counter, `polylock\0/counter/<key>`, whose value is the
//! counter's end in decimal. A reservation reads the key and writes `end + count` by a
//! transaction that compares the key's mod revision with the one read (a new counter: its
//! create revision with 0); when another writer got there first, the transaction's else branch
//! reads the key again and the reservation tries once more from there. etcd answers a
//! transaction once a majority has it on disk, so a range is durable before it is handed out.
//!
//! The NUL byte after `polylock` keeps these keys apart from every lock's: a lock name cannot
//! hold NUL, and a lock's keys all start with `<name>/`. `etcdctl get --prefix polylock`
//! lists them.

use std::ops::Range;

use async_trait::async_trait;
use etcd_client::{Client, Compare, CompareOp, KeyValue, Txn, TxnOp, TxnOpResponse};

use super::mutex::call;
use crate::error::{Error, Result};
use crate::spi::CounterStore;

/// The key counter `key` is kept under.
fn counter_key(key: &str) -> String {
    format!("polylock\0/counter/{key}")
}

pub(super) struct EtcdCounters {
    pub client: Client,
}

/// A counter's end and the mod revision it was read at (`None`: no key yet).
type Seen = Option<(u64, i64)>;

fn seen(key: &str, kv: Option<&KeyValue>) -> Result<Seen> {
    let Some(kv) = kv else { return Ok(None) };
    let end = std::str::from_utf8(kv.value())
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| Error::backend(format!("etcd key for counter '{key}' does not hold a counter")))?;
    Ok(Some((end, kv.mod_revision())))
}

impl EtcdCounters {
    async fn read(&self, key: &str) -> Result<Seen> {
        let stored = counter_key(key);
        let answer = call("reading a counter", || {
            let (mut kv, stored) = (self.client.kv_client(), stored.clone());
            async move { kv.get(stored, None).await }
        })
        .await?;
        seen(key, answer.kvs().first())
    }
}

#[async_trait]
impl CounterStore for EtcdCounters {
    async fn reserve(&self, key: &str, count: u64) -> Result<Range<u64>> {
        if count == 0 {
            return Err(Error::invalid_argument("a counter range must hold at least one value"));
        }
        let stored = counter_key(key);
        let mut at = self.read(key).await?;
        loop {
            let start = at.map_or(0, |(end, _)| end);
            let end = start
                .checked_add(count)
                .ok_or_else(|| Error::invalid_argument(format!("counter '{key}' cannot grow by {count} past u64")))?;
            let unchanged = match at {
                Some((_, revision)) => Compare::mod_revision(stored.as_str(), CompareOp::Equal, revision),
                None => Compare::create_revision(stored.as_str(), CompareOp::Equal, 0),
            };
            let txn = Txn::new()
                .when([unchanged])
                .and_then([TxnOp::put(stored.as_str(), end.to_string(), None)])
                .or_else([TxnOp::get(stored.as_str(), None)]);
            let answer = call("reserving a counter range", || {
                let (mut kv, txn) = (self.client.kv_client(), txn.clone());
                async move { kv.txn(txn).await }
            })
            .await?;
            if answer.succeeded() {
                return Ok(start..end);
            }
            // Another writer moved the counter: go on from what the else branch read.
            at = match answer.op_responses().first() {
                Some(TxnOpResponse::Get(get)) => seen(key, get.kvs().first())?,
                _ => self.read(key).await?,
            };
        }
    }

    async fn current(&self, key: &str) -> Result<u64> {
        Ok(self.read(key).await?.map_or(0, |(end, _)| end))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::spi::contract::{self, Prefixed};

    pub(in crate::backend::etcd) fn server_urls() -> Vec<(&'static str, String)> {
        let env_url = |var: &str, default: &str| std::env::var(var).unwrap_or_else(|_| default.to_string());
        let mut urls = vec![
            ("single", env_url("POLYLOCK_TEST_ETCD_URL", "etcd://127.0.0.1:12379")),
            (
                "cluster",
                env_url("POLYLOCK_TEST_ETCD_CLUSTER_URL", "etcd://127.0.0.1:12479,127.0.0.1:12579,127.0.0.1:12679"),
            ),
        ];
        // The TLS server's URL carries its password; tests/services sets it.
        if let Ok(url) = std::env::var("POLYLOCK_TEST_ETCD_TLS_URL") {
            urls.push(("tls", url));
        }
        urls
    }

    pub(in crate::backend::etcd) async fn client(url: &str) -> Client {
        let backend = super::super::EtcdBackend::open(&mut crate::url::ConnectUrl::parse(url).unwrap()).await.unwrap();
        backend.client.clone()
    }

    /// A prefix of this run's own, so the contract's fixed keys start at zero on a shared server.
    pub(in crate::backend::etcd) fn run_prefix(server: &str) -> String {
        format!("test-{server}-{}-{}:", std::process::id(), fastrand::u64(..))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn counters_keep_the_contract() {
        if crate::servers_off_in_tests() {
            return;
        }
        for (server, url) in server_urls() {
            let client = client(&url).await;
            let counters = || Prefixed::new(EtcdCounters { client: client.clone() }, run_prefix(server));
            contract::counters(&counters()).await;
            contract::counters_never_overlap(Arc::new(counters())).await;
        }
    }

    /// Two clients (two connections, as two processes would have) reserving at once on one
    /// counter: together their ranges never overlap and leave no gap.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_clients_reserving_at_once_never_overlap() {
        if crate::servers_off_in_tests() {
            return;
        }
        let url = &server_urls()[0].1;
        let key = format!("{}both", run_prefix("single"));
        let mut tasks = Vec::new();
        for _ in 0..2 {
            let counters = EtcdCounters { client: client(url).await };
            let key = key.clone();
            tasks.push(tokio::spawn(async move {
                let mut ranges = Vec::new();
                for _ in 0..40 {
                    ranges.push(counters.reserve(&key, 3).await.unwrap());
                }
                ranges
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.unwrap());
        }
        all.sort_by_key(|r| r.start);
        for pair in all.windows(2) {
            assert_eq!(pair[0].end, pair[1].start, "{:?} then {:?}", pair[0], pair[1]);
        }
        assert_eq!(all.last().unwrap().end, 2 * 40 * 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_counter_refuses_to_pass_u64_and_its_key_is_apart_from_locks() {
        if crate::servers_off_in_tests() {
            return;
        }
        let client = client(&server_urls()[0].1).await;
        let counters = EtcdCounters { client: client.clone() };
        let key = format!("{}big", run_prefix("single"));
        assert_eq!(counters.reserve(&key, u64::MAX - 1).await.unwrap(), 0..u64::MAX - 1);
        let err = counters.reserve(&key, 2).await.unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        assert_eq!(counters.current(&key).await.unwrap(), u64::MAX - 1);
        let stored = client.kv_client().get(counter_key(&key), None).await.unwrap();
        assert_eq!(stored.kvs()[0].value(), (u64::MAX - 1).to_string().as_bytes());
        assert!(counter_key(&key).starts_with("polylock\0/"));
    }
}
