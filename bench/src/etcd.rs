//! Section 4: polylock on etcd beside the same server's floor, measured in the same run:
//!
//! - latency: one worker, lock+unlock of one name, p50/p99 and pairs/s; the floor is a raw
//!   etcd-client put (with a lease) + delete of one key, the least any etcd lock can do;
//! - contended: the Redis and SQL sections' workload, one client whose [`WORKERS`] owners
//!   contend for one name (the threads or tasks of one service); then [`WORKERS`] clients
//!   (one etcd session each, like separate processes) on one name, each: acquire, hold
//!   [`HOLD`], release, [`OUTSIDE`] outside: utilisation, hand-overs/s and shares.
//!
//! Keys live under `polylock-bench-<pid>` and are gone when released.

use std::sync::Arc;
use std::time::{Duration, Instant};

use polylock::{AcquireOptions, Client};

use crate::redis::contended;
use crate::report::{count, line, millis, percent, ratio};
use crate::Result;

const SECTION: &str = "etcd";
pub const DEFAULT_URL: &str = "etcd://127.0.0.1:12379";
pub const WORKERS: usize = 8;
pub const HOLD: Duration = Duration::from_millis(1);
pub const OUTSIDE: Duration = Duration::from_millis(1);
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// `$POLYLOCK_TEST_ETCD_URL` (set by tests/services/services.sh env), else [`DEFAULT_URL`].
pub fn default_url() -> String {
    std::env::var("POLYLOCK_TEST_ETCD_URL").ok().filter(|url| !url.is_empty()).unwrap_or_else(|| DEFAULT_URL.into())
}

#[derive(Debug, Clone, Copy)]
pub struct EtcdBudget {
    pub latency: Duration,
    pub contended: Duration,
}

/// Latencies of one sequential loop.
struct Latencies(Vec<Duration>);

impl Latencies {
    fn measure_for(budget: Duration) -> (Instant, Latencies) {
        (Instant::now() + budget, Latencies(Vec::new()))
    }

    fn quantile(&self, q: f64) -> Duration {
        let mut sorted = self.0.clone();
        sorted.sort();
        sorted.get(((sorted.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or_default()
    }

    fn per_sec(&self) -> f64 {
        let total: Duration = self.0.iter().sum();
        if total.is_zero() {
            0.0
        } else {
            self.0.len() as f64 / total.as_secs_f64()
        }
    }
}

pub fn run(budget: EtcdBudget, url: &str) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(run_async(budget, url))
}

async fn run_async(budget: EtcdBudget, url: &str) -> Result<()> {
    let shown = polylock::url::redact(url);
    let client = match tokio::time::timeout(PROBE_TIMEOUT, Client::connect(url)).await {
        Ok(Ok(client)) => client,
        Ok(Err(err)) => return skip(&shown, &err.to_string()),
        Err(_) => return skip(&shown, "no answer in time"),
    };
    println!(
        "# {SECTION}: polylock on {shown} beside the same server's floor (etcd-client put with a lease + delete \
         of one key, one worker); latency = lock+unlock of one name, one worker, {} s each; contended = one client's {WORKERS} \
         owners, then {WORKERS} clients (one session each), on one name, each: acquire, hold {} ms, release, {} ms outside, {} s",
        budget.latency.as_secs_f64(),
        HOLD.as_millis(),
        OUTSIDE.as_millis(),
        budget.contended.as_secs_f64()
    );
    let prefix = format!("polylock-bench-{}", std::process::id());
    let floor = floor(url, &prefix, budget.latency).await?;
    let ours = lock_unlock(&client, &format!("{prefix}-latency"), budget.latency).await?;
    let (p50, p99) = (ours.quantile(0.5), ours.quantile(0.99));
    let (floor_p50, floor_p99) = (floor.quantile(0.5), floor.quantile(0.99));
    line(
        SECTION,
        "lock+unlock latency",
        &[
            format!("polylock p50 {} p99 {}", millis(p50), millis(p99)),
            format!("floor put+delete p50 {} p99 {}", millis(floor_p50), millis(floor_p99)),
            format!(
                "polylock/floor latency p50 {} p99 {} (target 1.3x or less)",
                ratio(p50.as_secs_f64() / floor_p50.as_secs_f64()),
                ratio(p99.as_secs_f64() / floor_p99.as_secs_f64())
            ),
        ],
    );
    line(
        SECTION,
        "lock+unlock pairs/s",
        &[
            format!("polylock {} pairs/s", count(ours.per_sec())),
            format!("floor {} pairs/s", count(floor.per_sec())),
            format!("polylock/floor {}", ratio(ours.per_sec() / floor.per_sec())),
        ],
    );
    client.close().await;
    contended::one_polylock_client(SECTION, url, &format!("{prefix}-one-client"), budget.contended).await?;
    contended(url, &format!("{prefix}-contended"), budget.contended).await
}

fn skip(shown: &str, why: &str) -> Result<()> {
    println!(
        "{SECTION:<10} skipped: no etcd answers at {shown} ({why}); start one with tests/services/services.sh start etcd"
    );
    Ok(())
}

/// The floor: what any etcd lock must at least do, one write and one delete of a leased key.
async fn floor(url: &str, prefix: &str, budget: Duration) -> Result<Latencies> {
    let hosts = url.trim_start_matches("etcd://").split('?').next().unwrap_or_default();
    let endpoints: Vec<String> = hosts.split(',').map(|h| format!("http://{h}")).collect();
    let mut raw = etcd_client::Client::connect(endpoints, None).await?;
    let lease = raw.lease_grant(30, None).await?.id();
    let key = format!("{prefix}-floor/{lease:x}");
    let put = etcd_client::PutOptions::new().with_lease(lease);
    let (until, mut latencies) = Latencies::measure_for(budget);
    while Instant::now() < until {
        let started = Instant::now();
        raw.put(key.as_str(), "", Some(put.clone())).await?;
        raw.delete(key.as_str(), None).await?;
        latencies.0.push(started.elapsed());
    }
    raw.lease_revoke(lease).await?;
    Ok(latencies)
}

async fn lock_unlock(client: &Client, name: &str, budget: Duration) -> Result<Latencies> {
    let lock = client.lock(name)?;
    let (until, mut latencies) = Latencies::measure_for(budget);
    while Instant::now() < until {
        let started = Instant::now();
        lock.acquire().await?.release().await?;
        latencies.0.push(started.elapsed());
    }
    Ok(latencies)
}

async fn contended(url: &str, name: &str, budget: Duration) -> Result<()> {
    let mut clients = Vec::new();
    for _ in 0..WORKERS {
        clients.push(Client::connect(url).await?);
    }
    let started = Instant::now();
    let until = started + budget;
    let held = Arc::new(std::sync::Mutex::new(Duration::ZERO));
    let mut workers = Vec::new();
    for client in &clients {
        let lock = client.lock(name)?;
        let held = held.clone();
        workers.push(tokio::spawn(async move {
            let mut holds = 0u64;
            while Instant::now() < until {
                let guard = lock.acquire_with(AcquireOptions::default().wait(Duration::from_secs(30))).await?;
                let got = Instant::now();
                tokio::time::sleep(HOLD).await;
                *held.lock().unwrap() += got.elapsed();
                guard.release().await?;
                holds += 1;
                tokio::time::sleep(OUTSIDE).await;
            }
            Ok::<u64, polylock::Error>(holds)
        }));
    }
    let mut per_worker = Vec::new();
    for worker in workers {
        per_worker.push(worker.await??);
    }
    let elapsed = started.elapsed();
    for client in &clients {
        client.close().await;
    }
    let total: u64 = per_worker.iter().sum();
    let held = *held.lock().unwrap();
    let share = |n: u64| n as f64 / total.max(1) as f64;
    let (min, max) = (per_worker.iter().copied().min().unwrap_or(0), per_worker.iter().copied().max().unwrap_or(0));
    line(
        SECTION,
        "contended, 8 clients",
        &[
            format!("utilisation {}", percent(held.as_secs_f64() / elapsed.as_secs_f64())),
            format!("{} hand-overs/s", count(total as f64 / elapsed.as_secs_f64())),
            format!("shares {}..{} (fair {})", percent(share(min)), percent(share(max)), percent(1.0 / WORKERS as f64)),
        ],
    );
    Ok(())
}
