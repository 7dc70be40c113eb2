//! Reading etcd's concurrency.Mutex layout for the operator, whoever wrote it (polylock,
//! `etcdctl lock`, Go services): every key `<name>/<lease hex>` is a contender, the oldest by
//! create revision holds (its revision is the fencing token, its lease the holder's
//! session), the others wait. Other keys under `<name>/` (nested names, a semaphore's or a
//! read-write lock's keys) are not the lock's (mutex.rs, `is_contender`).

use std::collections::BTreeSet;

use async_trait::async_trait;
use etcd_client::{GetOptions, SortOrder, SortTarget};

use super::mutex::{call, contender_range, contender_range_start, is_contender, lease_left};
use super::EtcdBackend;
use crate::error::Result;
use crate::spi::{InspectStore, ListedLock, LockKind, LockStatus};

/// Whether `segment` is a session lease id as concurrency.Mutex writes it (lowercase hex).
fn is_lease_segment(segment: &str) -> bool {
    !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[async_trait]
impl InspectStore for EtcdBackend {
    async fn status(&self, key: &str, _kind: LockKind) -> Result<LockStatus> {
        let prefix = format!("{key}/");
        let contenders = contender_range(&prefix).with_sort(SortTarget::Create, SortOrder::Ascend).with_keys_only();
        let start = contender_range_start(&prefix);
        let answer = call("reading the lock's contenders", || {
            let (mut kv, options, start) = (self.client.kv_client(), contenders.clone(), start.clone());
            async move { kv.get(start, Some(options)).await }
        })
        .await?;
        let mut status = LockStatus { layout: "etcd concurrency.Mutex keys", ..LockStatus::default() };
        let contenders: Vec<_> = answer.kvs().iter().filter(|kv| is_contender(&prefix, kv.key())).collect();
        let Some(holder) = contenders.first() else {
            status.waiters = Some(0);
            return Ok(status);
        };
        status.held = true;
        status.holder = Some(String::from_utf8_lossy(holder.key()).into_owned());
        status.fencing_token = u64::try_from(holder.create_revision()).ok();
        status.waiters = Some(contenders.len() as u64 - 1);
        status.details.push(("create revision", holder.create_revision().to_string()));
        if holder.lease() == 0 {
            status.remaining_lease = Some(std::time::Duration::MAX);
            status.details.push(("session lease", "none: kept until deleted".into()));
        } else {
            status.details.push(("session lease", format!("{:x}", holder.lease())));
            // The session's TTL: a polylock holder with a shorter hold lease deletes its key sooner.
            status.remaining_lease = lease_left(&self.client, holder.lease()).await?;
            status.held = status.remaining_lease.is_some();
        }
        Ok(status)
    }

    /// Keys `<name>/<lease hex>` grouped by name. Read-write locks' keys (`<name>/read/<hex>-<n>`,
    /// `<name>/write/<hex>-<n>`) and semaphores' (`<name>/permits`, `<name>/permit-<hex>`) are
    /// no contender keys, so their names are listed only where a mutex of the name has keys too.
    async fn list(&self, prefix: &str) -> Result<Vec<ListedLock>> {
        let options = GetOptions::new().with_prefix().with_keys_only();
        let answer = call("listing lock keys", || {
            let (mut kv, options, prefix) = (self.client.kv_client(), options.clone(), prefix.to_string());
            async move { kv.get(prefix, Some(options)).await }
        })
        .await?;
        let mut names = BTreeSet::new();
        for kv in answer.kvs() {
            let Ok(key) = std::str::from_utf8(kv.key()) else { continue };
            let Some((name, last)) = key.rsplit_once('/') else { continue };
            if !name.is_empty() && is_lease_segment(last) {
                names.insert(name.to_string());
            }
        }
        Ok(names.into_iter().map(|key| ListedLock { key, kind: LockKind::Reentrant, held: true }).collect())
    }
}
