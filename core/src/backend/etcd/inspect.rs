//! Reading etcd's concurrency.Mutex layout for the operator, whoever wrote it (polylock,
//! `etcdctl lock`, Go services): every key under `<name>/` is a contender, the oldest by
//! create revision holds (its revision is the fencing token, its lease the holder's
//! session), the others wait.

use std::collections::BTreeMap;

use async_trait::async_trait;
use etcd_client::{GetOptions, SortOrder, SortTarget};

use super::mutex::{call, lease_left};
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
        let contenders =
            GetOptions::new().with_prefix().with_sort(SortTarget::Create, SortOrder::Ascend).with_keys_only();
        let answer = call("reading the lock's contenders", || {
            let (mut kv, options, prefix) = (self.client.kv_client(), contenders.clone(), prefix.clone());
            async move { kv.get(prefix, Some(options)).await }
        })
        .await?;
        let mut status = LockStatus { layout: "etcd concurrency.Mutex keys", ..LockStatus::default() };
        let Some(holder) = answer.kvs().first() else {
            status.waiters = Some(0);
            return Ok(status);
        };
        status.held = true;
        status.holder = Some(String::from_utf8_lossy(holder.key()).into_owned());
        status.fencing_token = u64::try_from(holder.create_revision()).ok();
        status.waiters = Some(answer.kvs().len() as u64 - 1);
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

    /// Keys `<name>/<lease hex>` grouped by name. Read-write locks (`<name>/read/..`,
    /// `<name>/write/..`) and semaphores (a `<name>/permits` key beside the holders) are left out.
    async fn list(&self, prefix: &str) -> Result<Vec<ListedLock>> {
        let options = GetOptions::new().with_prefix().with_keys_only();
        let answer = call("listing lock keys", || {
            let (mut kv, options, prefix) = (self.client.kv_client(), options.clone(), prefix.to_string());
            async move { kv.get(prefix, Some(options)).await }
        })
        .await?;
        let mut names: BTreeMap<String, bool> = BTreeMap::new();
        for kv in answer.kvs() {
            let Ok(key) = std::str::from_utf8(kv.key()) else { continue };
            let Some((name, last)) = key.rsplit_once('/') else { continue };
            if name.ends_with("/read") || name.ends_with("/write") || name.is_empty() {
                continue;
            }
            let mutex_key = is_lease_segment(last);
            let entry = names.entry(name.to_string()).or_insert(true);
            *entry &= mutex_key && last != "permits";
        }
        Ok(names
            .into_iter()
            .filter(|(_, is_mutex)| *is_mutex)
            .map(|(key, _)| ListedLock { key, kind: LockKind::Reentrant, held: true })
            .collect())
    }
}
