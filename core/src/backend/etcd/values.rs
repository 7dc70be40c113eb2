//! Versioned values on etcd: one key per value, `polylock\0/value/<key>` (apart from every
//! lock's keys, see counters.rs), holding the value's bytes. The version is the key's mod
//! revision: etcd's revisions are global and only grow, so a value deleted and created again
//! gets a greater version than any it had. Each write is one transaction comparing the mod
//! revision (a create: the create revision with 0), whose else branch reads what is there.
//!
//! The store's clock: etcd's API has no call that reads the server's time and stamps no time
//! on keys (leases count down in TTL seconds, revisions are not times), so `now_millis` is
//! left at its default, `None`, and idempotency records on etcd take this process's wall
//! clock: the processes sharing a namespace must agree on the time to well within its
//! `in_progress_ttl`.
//!
//! Watchers of a value are woken by an etcd watch on its key, created (and confirmed by the
//! server) before the watcher's first read.

use async_trait::async_trait;
use etcd_client::{Client, Compare, CompareOp, KeyValue, Txn, TxnOp, TxnOpResponse, TxnResponse, WatchStream};

use super::map_error;
use super::mutex::call;
use crate::error::{Error, Result};
use crate::spi::{ValueChanges, VersionStore, Versioned, Write};

/// The key value `key` is kept under.
fn value_key(key: &str) -> String {
    format!("polylock\0/value/{key}")
}

pub(super) struct EtcdValues {
    pub client: Client,
}

fn versioned(kv: &KeyValue) -> Versioned {
    Versioned { value: kv.value().to_vec(), version: kv.mod_revision() as u64 }
}

/// What the else branch's read found.
fn found(answer: &TxnResponse) -> Option<Versioned> {
    match answer.op_responses().first() {
        Some(TxnOpResponse::Get(get)) => get.kvs().first().map(versioned),
        _ => None,
    }
}

impl EtcdValues {
    async fn txn(&self, doing: &str, txn: Txn) -> Result<TxnResponse> {
        call(doing, || {
            let (mut kv, txn) = (self.client.kv_client(), txn.clone());
            async move { kv.txn(txn).await }
        })
        .await
    }
}

#[async_trait]
impl VersionStore for EtcdValues {
    async fn get(&self, key: &str) -> Result<Option<Versioned>> {
        let stored = value_key(key);
        let answer = call("reading a value", || {
            let (mut kv, stored) = (self.client.kv_client(), stored.clone());
            async move { kv.get(stored, None).await }
        })
        .await?;
        Ok(answer.kvs().first().map(versioned))
    }

    async fn compare_and_set(&self, key: &str, expected: Option<u64>, value: &[u8]) -> Result<Write> {
        let stored = value_key(key);
        let unchanged = match expected {
            None => Compare::create_revision(stored.as_str(), CompareOp::Equal, 0),
            // A version past any revision etcd can have matches nothing (-1 is never a revision).
            Some(version) => {
                Compare::mod_revision(stored.as_str(), CompareOp::Equal, i64::try_from(version).unwrap_or(-1))
            }
        };
        let txn = Txn::new()
            .when([unchanged])
            .and_then([TxnOp::put(stored.as_str(), value, None)])
            .or_else([TxnOp::get(stored.as_str(), None)]);
        let answer = self.txn("writing a value", txn).await?;
        if !answer.succeeded() {
            return Ok(Write::Conflict { current: found(&answer) });
        }
        // The put's mod revision is the transaction's revision.
        let version = answer
            .header()
            .map(|header| header.revision())
            .ok_or_else(|| Error::backend("etcd answered a write without its revision"))?;
        Ok(Write::Written { version: version as u64 })
    }

    async fn delete(&self, key: &str, expected: u64) -> Result<bool> {
        let Ok(expected) = i64::try_from(expected) else { return Ok(false) };
        let stored = value_key(key);
        let txn = Txn::new()
            .when([Compare::mod_revision(stored.as_str(), CompareOp::Equal, expected)])
            .and_then([TxnOp::delete(stored.as_str(), None)]);
        Ok(self.txn("deleting a value", txn).await?.succeeded())
    }

    async fn changes(&self, key: &str) -> Result<Option<Box<dyn ValueChanges>>> {
        let stored = value_key(key);
        let doing = "watching a value";
        let mut stream = call(doing, || {
            let (mut watch, stored) = (self.client.watch_client(), stored.clone());
            async move { watch.watch(stored, None).await }
        })
        .await?;
        // The server's first answer confirms the watch: writes from here on are seen.
        match stream.message().await.map_err(|e| map_error(doing, e))? {
            Some(answer) if answer.created() && !answer.canceled() => {}
            _ => return Err(Error::connection("etcd did not start the watch on a value")),
        }
        Ok(Some(Box::new(EtcdChanges { stream })))
    }
}

/// An etcd watch on one value's key.
struct EtcdChanges {
    stream: WatchStream,
}

#[async_trait]
impl ValueChanges for EtcdChanges {
    async fn changed(&mut self) -> Result<()> {
        loop {
            let answer = self.stream.message().await.map_err(|e| map_error("watching a value", e))?;
            match answer {
                Some(answer) if answer.canceled() => {
                    return Err(Error::connection("etcd cancelled the watch on a value"))
                }
                Some(answer) if answer.events().is_empty() => continue,
                Some(_) => return Ok(()),
                None => return Err(Error::connection("etcd closed the watch on a value")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::etcd::counters::tests::{client, run_prefix, server_urls};
    use crate::spi::contract::{self, Prefixed};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn values_keep_the_contract() {
        if crate::servers_off_in_tests() {
            return;
        }
        for (server, url) in server_urls() {
            let values = Prefixed::new(EtcdValues { client: client(&url).await }, run_prefix(server));
            contract::versions(&values).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn versions_are_the_keys_mod_revisions_and_bytes_round_trip() {
        if crate::servers_off_in_tests() {
            return;
        }
        let client = client(&server_urls()[0].1).await;
        let values = EtcdValues { client: client.clone() };
        let key = format!("{}bytes", run_prefix("single"));
        let bytes = [0u8, 255, 10, 13, 0, 1];
        let Write::Written { version } = values.compare_and_set(&key, None, &bytes).await.unwrap() else { panic!() };
        let stored = client.kv_client().get(value_key(&key), None).await.unwrap();
        assert_eq!(stored.kvs()[0].mod_revision() as u64, version);
        assert_eq!(values.get(&key).await.unwrap(), Some(Versioned { value: bytes.to_vec(), version }));
        let Write::Written { version: empty } = values.compare_and_set(&key, Some(version), b"").await.unwrap() else {
            panic!()
        };
        assert_eq!(values.get(&key).await.unwrap(), Some(Versioned { value: Vec::new(), version: empty }));
        assert!(matches!(values.compare_and_set(&key, Some(u64::MAX), b"x").await.unwrap(), Write::Conflict { .. }));
        assert!(!values.delete(&key, u64::MAX).await.unwrap());
    }
}
