//! Waiting for one change in etcd, for the read-write lock and the semaphore: a watch that
//! starts right after the read that decided to wait, so nothing written in between is missed.

use etcd_client::{Client, EventType, WatchOptions};

use super::map_error;
use super::mutex::call;
use crate::error::{Error, Result};

/// Wait for the first event of `kind` on `key` (every key under it, with `prefix`) written
/// after revision `seen_at`.
pub(super) async fn next_event(client: &Client, key: &str, prefix: bool, seen_at: i64, kind: EventType) -> Result<()> {
    let mut options = WatchOptions::new().with_start_revision(seen_at + 1);
    if prefix {
        options = options.with_prefix();
    }
    let mut stream = call("watching the lock's keys", || {
        let (mut watch, options) = (client.watch_client(), options.clone());
        async move { watch.watch(key, Some(options)).await }
    })
    .await?;
    loop {
        let Some(answer) = stream.message().await.map_err(|e| map_error("watching the lock's keys", e))? else {
            return Err(Error::connection("etcd closed the watch on the lock's keys"));
        };
        if answer.events().iter().any(|event| event.event_type() == kind) {
            return Ok(());
        }
        if answer.canceled() {
            // Compacted past `seen_at`, or the server went away: look again.
            return Ok(());
        }
    }
}
