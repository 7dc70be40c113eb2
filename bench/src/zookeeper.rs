//! The ZooKeeper section: polylock's InterProcessMutex-layout lock beside the floor any
//! ZooKeeper lock pays, the same server's raw create(EPHEMERAL_SEQUENTIAL) + delete round
//! trips, measured in the same run; then 8 workers on separate sessions contending for one
//! name (1 ms inside, 1 ms outside), reported as utilisation and hand-overs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use polylock::{AcquireOptions, Client};
use zookeeper_client as zk;

use crate::measure::Throughput;
use crate::redis::contended;
use crate::report::{line, millis, percent, ratio};
use crate::Result;

const SECTION: &str = "zookeeper";
const CONTENDERS: usize = 8;
const INSIDE: Duration = Duration::from_millis(1);
const OUTSIDE: Duration = Duration::from_millis(1);
/// Operations per turn: the two sides take turns, so drift in the server hits both alike.
const TURN: usize = 50;

#[derive(Debug, Clone, Copy)]
pub struct ZkBudget {
    /// Per side, for the uncontended latency figures.
    pub uncontended: Duration,
    pub contended: Duration,
}

pub fn default_url() -> String {
    std::env::var("POLYLOCK_TEST_ZOOKEEPER_URL").unwrap_or_else(|_| "zk://127.0.0.1:12181".to_string())
}

pub fn run(budget: ZkBudget, url: &str) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let hosts = url.trim_start_matches("zk://").split(['?', '/']).next().unwrap_or_default().to_string();
        let raw = match tokio::time::timeout(Duration::from_secs(3), zk::Client::connect(&hosts)).await {
            Ok(Ok(raw)) => raw,
            _ => {
                line(SECTION, "skipped", &[format!("no ZooKeeper answers at {}", polylock::url::redact(url))]);
                return Ok(());
            }
        };
        uncontended(budget.uncontended, url, &raw).await?;
        let name = format!("polylock-bench-one-client-{}", std::process::id());
        contended::one_polylock_client(SECTION, url, &name, budget.contended).await?;
        contended(budget.contended, url).await
    })
}

/// Latency samples of one side.
#[derive(Default)]
struct Samples(Vec<Duration>);

impl Samples {
    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.0.clone();
        sorted.sort();
        sorted.get(((sorted.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or_default()
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

async fn uncontended(budget: Duration, url: &str, raw: &zk::Client) -> Result<()> {
    let pid = std::process::id();
    let floor_dir = format!("/polylock-bench-floor-{pid}");
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let sequential = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    raw.mkdir(&floor_dir, &open).await?;
    let client = Client::connect(url).await?;
    let lock = client.lock(&format!("polylock-bench-{pid}"))?;
    let options = AcquireOptions::default().lease(Duration::from_secs(30));
    let (mut ours, mut floor) = (Samples::default(), Samples::default());
    let started = Instant::now();
    // A warm-up turn each (connections, the lock path's container node).
    let mut warm = true;
    while warm || started.elapsed() < budget * 2 {
        for _ in 0..TURN {
            let at = Instant::now();
            let (_, sequence) = raw.create(&format!("{floor_dir}/n-"), b"", &sequential).await?;
            raw.delete(&format!("{floor_dir}/n-{sequence}"), None).await?;
            if !warm {
                floor.0.push(at.elapsed());
            }
        }
        for _ in 0..TURN {
            let at = Instant::now();
            lock.acquire_with(options).await?.release().await?;
            if !warm {
                ours.0.push(at.elapsed());
            }
        }
        warm = false;
    }
    raw.delete(&floor_dir, None).await?;
    client.close().await;
    for (label, p) in [("lock+unlock p50", 0.5), ("lock+unlock p99", 0.99)] {
        let (a, b) = (ours.percentile(p), floor.percentile(p));
        line(
            SECTION,
            label,
            &[
                format!("polylock {}", millis(a)),
                format!("raw create+delete {}", millis(b)),
                // A ratio of times: 1x is the floor, above it polylock takes longer.
                format!("polylock time/floor time {}", ratio(a.as_secs_f64() / b.as_secs_f64())),
            ],
        );
    }
    line(
        SECTION,
        "lock+unlock, 1 worker",
        &[
            format!("polylock {:.0} pairs/s", ours.per_sec()),
            format!("raw create+delete {:.0} pairs/s", floor.per_sec()),
            format!("polylock/floor {}", ratio(ours.per_sec() / floor.per_sec())),
        ],
    );
    Ok(())
}

async fn contended(budget: Duration, url: &str) -> Result<()> {
    let name = format!("polylock-bench-contended-{}", std::process::id());
    let mut clients = Vec::new();
    for _ in 0..CONTENDERS {
        clients.push(Client::connect(url).await?); // a session each, like separate processes
    }
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = clients
        .iter()
        .map(|client| {
            let (lock, stop) = (client.lock(&name), stop.clone());
            tokio::spawn(async move {
                let lock = lock?;
                let (mut done, mut held) = (0u64, Duration::ZERO);
                while !stop.load(Ordering::Relaxed) {
                    let guard = lock.acquire_with(AcquireOptions::default().lease(Duration::from_secs(30))).await?;
                    let inside = Instant::now();
                    tokio::time::sleep(INSIDE).await;
                    held += inside.elapsed();
                    guard.release().await?;
                    done += 1;
                    tokio::time::sleep(OUTSIDE).await;
                }
                Ok::<_, polylock::Error>((done, held))
            })
        })
        .collect();
    tokio::time::sleep(budget).await;
    stop.store(true, Ordering::Relaxed);
    let mut parts = Vec::new();
    for worker in workers {
        let (done, held) = worker.await??;
        parts.push(Throughput { per_worker: vec![done], elapsed: started.elapsed(), held });
    }
    for client in &clients {
        client.close().await;
    }
    let all = Throughput::combine(parts);
    let (low, high) = all.share_range();
    let handover = if all.ops() > 0 { all.elapsed.saturating_sub(all.held) / all.ops() as u32 } else { Duration::ZERO };
    line(
        SECTION,
        &format!("{CONTENDERS} contend, 1ms in/1ms out"),
        &[
            format!("utilisation {}", percent(all.utilisation())),
            format!("{:.0} holds/s", all.per_sec()),
            format!("mean hand-over {}", millis(handover)),
            format!("shares {}..{}", percent(low), percent(high)),
        ],
    );
    Ok(())
}
