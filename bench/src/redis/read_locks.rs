//! Read-lock pairs per second from Rust: the figure bench/python/bench_rw_redis.py sets
//! Python's beside (issue #17: Python within 2x of Rust). Each worker, one tokio task with a
//! read-write lock handle of its own on a name of its own, takes the read side with the fixed
//! lease and releases it, in a loop (Redisson's RReadWriteLock layout: one script each way).

use std::time::{Duration, Instant};

use polylock::{AcquireOptions, Client};

use super::{Section, SECTION};
use crate::polylock_side::LEASE;
use crate::report::{line, rate};
use crate::Result;

/// The workers of the second figure, as the Python script's default `--threads`.
pub const WORKERS: usize = 8;

/// Read pairs of one worker on `name` until `budget` is spent.
async fn read_pairs(client: Client, name: String, budget: Duration) -> Result<u64> {
    let lock = client.rw_lock(&name)?;
    let options = AcquireOptions::default().lease(LEASE);
    let (started, mut pairs) = (Instant::now(), 0u64);
    while started.elapsed() < budget {
        lock.read().acquire_with(options).await?.release().await?;
        pairs += 1;
    }
    Ok(pairs)
}

/// Total read pairs/s of `workers` tasks of one client, a name each.
async fn measure(url: &str, prefix: &str, workers: usize, budget: Duration) -> Result<f64> {
    let client = Client::connect(url).await?;
    let started = Instant::now();
    let tasks: Vec<_> = (0..workers)
        .map(|i| tokio::spawn(read_pairs(client.clone(), format!("{prefix}:read-locks:{workers}:{i}"), budget)))
        .collect();
    let mut pairs = 0;
    for task in tasks {
        pairs += task.await.map_err(|e| format!("a read-lock worker failed: {e}"))??;
    }
    let per_sec = pairs as f64 / started.elapsed().as_secs_f64();
    client.close().await;
    Ok(per_sec)
}

impl Section<'_> {
    /// `read-lock pairs, a name each`: one worker, then [`WORKERS`].
    pub(super) fn read_locks(&mut self) {
        let label = "read-lock pairs, a name each";
        if self.polylock.is_none() {
            return; // said once already: this build of polylock cannot reach Redis
        }
        let budget = self.budget.uncontended;
        let mut cells = Vec::new();
        for workers in [1, WORKERS] {
            let measured = self.runtime.block_on(measure(self.target.url(), self.prefix, workers, budget));
            let Some(per_sec) = self.record(label, "polylock", measured) else { return };
            cells.push(rate(&format!("polylock {workers} worker(s), lease 30s"), per_sec, "pairs/s"));
        }
        line(SECTION, label, &cells);
    }
}
