//! The contended workload: [`WORKERS`] workers on one lock name, each in a loop: acquire
//! (waiting as long as it takes), hold [`HOLD`], release, then [`OUTSIDE`] outside the lock.
//!
//! Every side, Rust, Python or Node, records a [`Timeline`]: for each worker, when each of
//! its holds began (acquire returned) and ended (release called), on one monotonic clock.
//! [`ContendedStats::of`] is the one place the figures come from, for every side.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::lock_side::LockSide;
use crate::measure::Throughput;
use crate::polylock_side::PolylockSide;
use crate::report::{count, line, millis, percent};
use crate::Result;

/// Workers contending for the one name, each its own owner.
pub const WORKERS: usize = 8;
/// How long each worker holds the lock once it has it.
pub const HOLD: Duration = Duration::from_millis(1);
/// How long each worker stays away between releasing and asking again.
pub const OUTSIDE: Duration = Duration::from_millis(1);

/// One hold, in nanoseconds since the run's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold {
    /// When acquire returned.
    pub acquired_ns: u64,
    /// When release was called.
    pub released_ns: u64,
}

/// What each worker of one side held, and the run's wall time: from the common start until
/// the last worker finished.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    pub per_worker: Vec<Vec<Hold>>,
    pub elapsed: Duration,
}

impl Timeline {
    /// From each worker's flat list `[acquired, released, acquired, released, ...]`, the
    /// compact form the peer scripts print.
    pub fn from_flat(per_worker: Vec<Vec<u64>>, elapsed: Duration) -> Result<Timeline> {
        let per_worker = per_worker
            .into_iter()
            .map(|flat| {
                if flat.len() % 2 != 0 {
                    return Err(format!("a worker's holds are not (acquired, released) pairs: {} numbers", flat.len()));
                }
                Ok(flat.chunks(2).map(|pair| Hold { acquired_ns: pair[0], released_ns: pair[1] }).collect())
            })
            .collect::<std::result::Result<_, _>>()?;
        Ok(Timeline { per_worker, elapsed })
    }
}

/// The figures of one side's contended run.
#[derive(Debug, Clone)]
pub struct ContendedStats {
    /// Holds per worker, wall time, and the time held summed over all holds.
    pub holds: Throughput,
    /// From one holder's release call to the next holder's acquire returning, over every
    /// hand-over in the merged timeline; `None` with fewer than two holds.
    pub handoff_p50: Option<Duration>,
    pub handoff_p99: Option<Duration>,
    /// Holds that began before an earlier hold's release was called: two holders at once.
    pub overlaps: usize,
}

impl ContendedStats {
    pub fn of(timeline: &Timeline) -> ContendedStats {
        let mut holds: Vec<Hold> = timeline.per_worker.iter().flatten().copied().collect();
        holds.sort_by_key(|hold| hold.acquired_ns);
        let mut handoffs = Vec::with_capacity(holds.len());
        let mut overlaps = 0;
        // The latest release so far: with exclusion working that is the previous hold's,
        // and an overlapping hold still counts against the one it overlapped.
        let mut released_ns = None;
        for hold in &holds {
            if let Some(released_ns) = released_ns {
                match hold.acquired_ns.checked_sub(released_ns) {
                    Some(gap) => handoffs.push(gap),
                    None => overlaps += 1,
                }
            }
            released_ns = released_ns.max(Some(hold.released_ns));
        }
        handoffs.sort_unstable();
        let held_ns = holds.iter().map(|hold| hold.released_ns.saturating_sub(hold.acquired_ns)).sum();
        ContendedStats {
            holds: Throughput {
                per_worker: timeline.per_worker.iter().map(|worker| worker.len() as u64).collect(),
                elapsed: timeline.elapsed,
                held: Duration::from_nanos(held_ns),
            },
            handoff_p50: percentile(&handoffs, 0.50),
            handoff_p99: percentile(&handoffs, 0.99),
            overlaps,
        }
    }

    /// Time held ÷ wall time: how much of the time somebody held the lock.
    pub fn utilisation(&self) -> f64 {
        self.holds.utilisation()
    }

    pub fn mean_hold(&self) -> Duration {
        let count = self.holds.ops();
        if count == 0 {
            Duration::ZERO
        } else {
            self.holds.held / count as u32
        }
    }
}

/// Print one polylock contended line (holds, utilisation, hand-over latency, overlaps), as
/// the SQL, etcd and ZooKeeper sections report the workload; overlapping holds are an error.
pub fn report(section: &str, label: &str, stats: &ContendedStats) -> Result<()> {
    let handoff = |d: Option<Duration>| d.map_or_else(|| "n/a".to_string(), millis);
    line(
        section,
        label,
        &[
            format!("polylock {} holds", count(stats.holds.ops() as f64)),
            format!("utilisation {}", percent(stats.holds.utilisation())),
            format!("hand-over p50 {} p99 {}", handoff(stats.handoff_p50), handoff(stats.handoff_p99)),
            format!("overlaps {}", stats.overlaps),
        ],
    );
    if stats.overlaps > 0 {
        return Err(format!("{section} {label}: {} holds overlapped", stats.overlaps).into());
    }
    Ok(())
}

/// The workload on a polylock client of its own at `url` (reentrant locks, fixed lease),
/// reported as one line of `section`: the etcd and ZooKeeper sections' one-client figure.
pub async fn one_polylock_client(section: &str, url: &str, name: &str, budget: Duration) -> Result<()> {
    let side = Arc::new(PolylockSide::connect(url).await?);
    let timeline = on_one_name(side.clone(), name, budget).await?;
    side.close().await;
    report(section, &format!("one client, {WORKERS} owners contend"), &ContendedStats::of(&timeline))
}

/// Nearest-rank percentile of sorted nanoseconds.
fn percentile(sorted_ns: &[u64], fraction: f64) -> Option<Duration> {
    let rank = ((fraction * sorted_ns.len() as f64).ceil() as usize).clamp(1, sorted_ns.len().max(1));
    sorted_ns.get(rank - 1).map(|&ns| Duration::from_nanos(ns))
}

/// The workload on a Rust side: [`WORKERS`] tokio tasks, each with its own handle on
/// `name` (so its own owner), until `budget` has passed.
pub async fn on_one_name<S: LockSide>(side: Arc<S>, name: &str, budget: Duration) -> Result<Timeline> {
    let mut handles = Vec::with_capacity(WORKERS);
    for _ in 0..WORKERS {
        handles.push(side.handle(name).await?);
    }
    let start = Instant::now();
    let deadline = start + budget;
    let since_start = move || start.elapsed().as_nanos() as u64;
    let workers: Vec<_> = handles
        .into_iter()
        .map(|handle| {
            let side = side.clone();
            tokio::spawn(async move {
                let mut holds = Vec::new();
                while Instant::now() < deadline {
                    let held = side.acquire(&handle).await?;
                    let acquired_ns = since_start();
                    sleep_precisely(HOLD).await?;
                    holds.push(Hold { acquired_ns, released_ns: since_start() });
                    side.release(held).await?;
                    sleep_precisely(OUTSIDE).await?;
                }
                Result::Ok(holds)
            })
        })
        .collect();
    let mut per_worker = Vec::with_capacity(WORKERS);
    for worker in workers {
        per_worker.push(worker.await.map_err(|e| format!("a contending task failed: {e}"))??);
    }
    Ok(Timeline { per_worker, elapsed: start.elapsed() })
}

/// Sleep about as long as asked, as the peers' asyncio and Node timers do (a 1 ms sleep
/// takes ~1.1 ms there). tokio's timer rounds up to its next millisecond tick, so its 1 ms
/// takes 1–2 ms and would hold the lock longer than the peers do; a nanosleep on the
/// blocking pool does not.
async fn sleep_precisely(duration: Duration) -> Result<()> {
    tokio::task::spawn_blocking(move || std::thread::sleep(duration))
        .await
        .map_err(|e| format!("a sleeping task failed: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(acquired_ns: u64, released_ns: u64) -> Hold {
        Hold { acquired_ns, released_ns }
    }

    #[test]
    fn stats_come_from_the_merged_timeline() {
        // Two workers taking turns over 100 ns: holds of 10 ns, hand-overs of 5, 5, 20 and 10 ns.
        let timeline = Timeline {
            per_worker: vec![vec![hold(0, 10), hold(30, 40)], vec![hold(15, 25), hold(60, 70), hold(80, 90)]],
            elapsed: Duration::from_nanos(100),
        };
        let stats = ContendedStats::of(&timeline);
        assert_eq!(stats.holds.per_worker, vec![2, 3]);
        assert_eq!(stats.holds.held, Duration::from_nanos(50));
        assert!((stats.utilisation() - 0.5).abs() < 1e-9);
        assert_eq!(stats.handoff_p50, Some(Duration::from_nanos(5)));
        assert_eq!(stats.handoff_p99, Some(Duration::from_nanos(20)));
        assert_eq!(stats.overlaps, 0);
        assert_eq!(stats.mean_hold(), Duration::from_nanos(10));
        let (min, max) = stats.holds.share_range();
        assert!((min - 0.4).abs() < 1e-9 && (max - 0.6).abs() < 1e-9);
    }

    #[test]
    fn overlapping_holds_are_counted_not_hidden() {
        let timeline = Timeline {
            per_worker: vec![vec![hold(0, 50)], vec![hold(10, 20)], vec![hold(30, 40)], vec![hold(60, 70)]],
            elapsed: Duration::from_nanos(100),
        };
        let stats = ContendedStats::of(&timeline);
        assert_eq!(stats.overlaps, 2);
        assert_eq!(stats.handoff_p50, Some(Duration::from_nanos(10)));
    }

    #[test]
    fn no_holds_no_percentiles() {
        let stats = ContendedStats::of(&Timeline { per_worker: vec![vec![], vec![]], elapsed: Duration::from_secs(1) });
        assert_eq!((stats.handoff_p50, stats.overlaps, stats.mean_hold()), (None, 0, Duration::ZERO));
    }

    #[test]
    fn flat_lists_become_holds() {
        let timeline = Timeline::from_flat(vec![vec![1, 2, 3, 4], vec![]], Duration::from_nanos(5)).unwrap();
        assert_eq!(timeline.per_worker, vec![vec![hold(1, 2), hold(3, 4)], vec![]]);
        assert!(Timeline::from_flat(vec![vec![1, 2, 3]], Duration::ZERO).is_err());
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let ns: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&ns, 0.50), Some(Duration::from_nanos(50)));
        assert_eq!(percentile(&ns, 0.99), Some(Duration::from_nanos(99)));
        assert_eq!(percentile(&[7], 0.99), Some(Duration::from_nanos(7)));
        assert_eq!(percentile(&[], 0.5), None);
    }
}
